//! Delivery: read the owned buckets' ready events in id order, push each
//! bucket's batch to Baton as ONE transaction guarded by that bucket's lease,
//! and mark rows delivered. Owns the per-aggregate blocking rules (an event
//! waits behind a parked, backing-off or not yet settled event of its
//! aggregate), the poison path and the LISTEN wake-up. Must never mark a row
//! delivered unless Baton answered that its transactionId (`outbox-<id>`) is
//! written (committed now, or `duplicate`: written before).

use crate::lease::Leases;
use crate::metrics::Metrics;
use crate::schema::{Names, BLOCKING_ROWS, SETTLED};
use crate::targets::Targets;
use crate::{Error, RunArgs};
use base64::Engine;
use baton_client::TxnOutcome;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often an unknown outcome (503, timeout) is retried within one round.
const UNKNOWN_RETRIES: u32 = 3;

pub struct Deliverer {
    pub pg: tokio_postgres::Client,
    pub baton: Arc<Targets>,
    pub names: Names,
    pub args: RunArgs,
    pub leases: Arc<Leases>,
    pub m: Arc<Metrics>,
}

/// One outbox row ready to go.
struct Event {
    id: i64,
    agg: (String, String),
    item: Value,
}

/// What one guarded push of some events came to.
enum Pushed {
    /// Written now.
    Committed,
    /// Some transactionId of it was written before: nothing of it was written now.
    Duplicate,
    /// The lease guard failed: this relay no longer owns the bucket at that token.
    Fenced,
    /// Baton refused it (4xx or a rollback other than duplicate/fencing).
    Refused(String),
    /// Unknown outcome, retries exhausted.
    Unknown(String),
}

/// A Baton queue name from an aggregate type: letters, digits, `_`, `-`, `.`; others become `_`.
pub fn queue_name(prefix: &str, aggregate_type: &str) -> String {
    let s: String = aggregate_type
        .chars()
        .take(200)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' })
        .collect();
    format!("{prefix}-{s}")
}

/// One publishing mode (Baton or Kafka), as the shared delivery loop drives it.
pub(crate) trait Rounds {
    /// The PostgreSQL connection, which the loop replaces when it closed.
    fn pg(&mut self) -> &mut tokio_postgres::Client;
    fn args(&self) -> &RunArgs;
    fn relay_id(&self) -> &str;
    /// One pass over the owned buckets; how many events it settled (delivered or failed).
    async fn round(&mut self) -> Result<usize, Error>;
}

/// Rounds until stopped: PostgreSQL reconnected when it closed; after a round that settled
/// nothing, the next waits for a NOTIFY or `--poll-ms`, whichever comes first.
pub(crate) async fn drive(mut d: impl Rounds, wake: Arc<Notify>) -> Result<(), Error> {
    let poll = Duration::from_millis(d.args().poll_ms.max(10));
    let target = crate::pg::Pg::new(&d.args().pg)?;
    loop {
        if d.pg().is_closed() {
            match target.connect().await {
                Ok(c) => *d.pg() = c,
                Err(e) => eprintln!("baton relay {}: reconnect to postgres: {e}", d.relay_id()),
            }
        }
        let busy = match d.round().await {
            Ok(n) => n > 0,
            Err(e) => {
                eprintln!("baton relay {}: round: {e}", d.relay_id());
                false
            }
        };
        if !busy {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }
}

impl Rounds for Deliverer {
    fn pg(&mut self) -> &mut tokio_postgres::Client {
        &mut self.pg
    }
    fn args(&self) -> &RunArgs {
        &self.args
    }
    fn relay_id(&self) -> &str {
        &self.leases.relay_id
    }
    async fn round(&mut self) -> Result<usize, Error> {
        self.round_once().await
    }
}

impl Deliverer {
    /// One pass over the owned buckets; answers how many events were settled (delivered or failed).
    async fn round_once(&self) -> Result<usize, Error> {
        // Held for the whole round: no renewal changes a token under a push.
        let st = self.leases.state.read().await;
        if st.is_empty() {
            return Ok(0);
        }
        let owned: Vec<i32> = st.keys().map(|b| *b as i32).collect();
        let ready = ready(&self.pg, &self.names, &owned, self.args.batch).await?;
        let mut by_bucket: BTreeMap<i32, Vec<Event>> = BTreeMap::new();
        for (b, rows) in ready {
            for r in rows {
                let item = json!({"queue": queue_name(&self.args.queue_prefix, &r.agg.0), "partition": r.agg.1,
                    "transactionId": format!("outbox-{}", r.id), "payload": r.payload});
                by_bucket.entry(b).or_default().push(Event { id: r.id, agg: r.agg, item });
            }
        }
        if self.args.test_round_hold_ms > 0 && !by_bucket.is_empty() {
            tokio::time::sleep(Duration::from_millis(self.args.test_round_hold_ms)).await;
        }
        let held: Vec<(&Value, Vec<Event>)> =
            by_bucket.into_iter().filter_map(|(b, ev)| st.get(&(b as u32)).map(|h| (&h.guard, ev))).collect();
        // The whole round first: one Baton entry guarded by every bucket's lease and one
        // UPDATE, so a round costs one fsync on each side however many buckets it spans.
        // A fence, duplicate or refusal anywhere rolls all of it back (nothing written), and
        // the buckets go one by one below, where each of those cases is settled.
        if held.len() > 1 {
            let guards: Vec<&Value> = held.iter().map(|(g, _)| *g).collect();
            let items: Vec<&Value> = held.iter().flat_map(|(_, ev)| ev.iter().map(|e| &e.item)).collect();
            match self.push(&guards, &items).await {
                Pushed::Committed => {
                    let ids: Vec<i64> = held.iter().flat_map(|(_, ev)| ev.iter().map(|e| e.id)).collect();
                    self.mark(&ids, 0).await?;
                    self.m.rounds_whole.fetch_add(1, Ordering::Relaxed);
                    return Ok(ids.len());
                }
                Pushed::Unknown(e) => {
                    eprintln!("baton relay {}: push outcome unknown, will retry: {e}", self.leases.relay_id);
                    return Ok(0);
                }
                Pushed::Fenced | Pushed::Duplicate | Pushed::Refused(_) => {
                    self.m.rounds_split.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let mut settled = 0;
        for (guard, events) in held {
            settled += self.bucket(guard, events).await?;
        }
        Ok(settled)
    }

    /// Publish one bucket's batch as one transaction. On a duplicate or a refusal, go one
    /// event at a time until one commits (the already written prefix, the refused event),
    /// then the rest as one transaction again. An event that failed blocks the later
    /// events of its aggregate for this round.
    async fn bucket(&self, guard: &Value, events: Vec<Event>) -> Result<usize, Error> {
        let mut events: VecDeque<Event> = events.into();
        let mut failed: HashSet<(String, String)> = HashSet::new();
        let mut n = 0;
        loop {
            events.retain(|e| !failed.contains(&e.agg));
            if events.is_empty() {
                return Ok(n);
            }
            let items: Vec<&Value> = events.iter().map(|e| &e.item).collect();
            let whole = self.push(&[guard], &items).await;
            // After a duplicate: one at a time until the first commit (the written prefix is
            // gone). After a refusal: one at a time until the refused event is found.
            let until_refused = matches!(whole, Pushed::Refused(_));
            match whole {
                Pushed::Committed => {
                    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
                    self.mark(&ids, 0).await?;
                    return Ok(n + ids.len());
                }
                Pushed::Fenced => return Ok(self.fenced(n)),
                Pushed::Unknown(e) => {
                    eprintln!("baton relay {}: push outcome unknown, will retry: {e}", self.leases.relay_id);
                    return Ok(n);
                }
                Pushed::Duplicate | Pushed::Refused(_) => {}
            }
            while let Some(e) = events.pop_front() {
                if failed.contains(&e.agg) {
                    continue;
                }
                match self.push(&[guard], &[&e.item]).await {
                    Pushed::Committed => {
                        self.mark(&[e.id], 0).await?;
                        n += 1;
                        if !until_refused {
                            break;
                        }
                    }
                    Pushed::Duplicate => {
                        self.mark(&[e.id], 1).await?;
                        n += 1;
                    }
                    Pushed::Fenced => return Ok(self.fenced(n)),
                    Pushed::Unknown(_) => {
                        failed.insert(e.agg);
                    }
                    Pushed::Refused(why) => {
                        // A 4xx is answered before the guard is judged: count the refusal only
                        // while this relay still owns the bucket.
                        if !self.still_owner(guard).await {
                            return Ok(n);
                        }
                        self.fail(&e, &why).await?;
                        failed.insert(e.agg);
                        n += 1;
                        break;
                    }
                }
            }
        }
    }

    /// One bucket's push was refused by its lease guard: count it; answers `settled`.
    fn fenced(&self, settled: usize) -> usize {
        self.m.fenced.fetch_add(1, Ordering::Relaxed);
        eprintln!("baton relay {}: push refused by the lease guard (fenced)", self.leases.relay_id);
        settled
    }

    /// Push `items` as one transaction that commits only while every guard holds.
    async fn push(&self, guards: &[&Value], items: &[&Value]) -> Pushed {
        let body = json!({"operations": [{"type": "push", "items": items}], "kv": guards});
        let mut last = String::new();
        for attempt in 0..UNKNOWN_RETRIES {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
            }
            match self.baton.transaction(&body, Duration::from_secs(10)).await {
                TxnOutcome::Committed { .. } => return Pushed::Committed,
                TxnOutcome::RolledBack { reason, .. } if reason == "duplicate" => return Pushed::Duplicate,
                TxnOutcome::RolledBack { reason, .. } if reason == "kv_precondition" => return Pushed::Fenced,
                TxnOutcome::RolledBack { reason, error, .. } => return Pushed::Refused(format!("{reason}: {error}")),
                TxnOutcome::Refused { code, body } => {
                    let b: String = body.chars().take(300).collect();
                    return Pushed::Refused(format!("HTTP {code}: {b}"));
                }
                TxnOutcome::Unknown(e) => {
                    self.m.unknown.fetch_add(1, Ordering::Relaxed);
                    last = e;
                }
            }
        }
        Pushed::Unknown(last)
    }

    /// The bucket's lease is still at this guard's token (a transaction of the guard alone).
    async fn still_owner(&self, guard: &Value) -> bool {
        match self.baton.transaction(&json!({ "operations": [], "kv": [guard] }), Duration::from_secs(10)).await {
            TxnOutcome::Committed { .. } => true,
            TxnOutcome::RolledBack { reason, .. } if reason == "kv_precondition" => {
                self.m.fenced.fetch_add(1, Ordering::Relaxed);
                false
            }
            _ => false,
        }
    }

    /// Baton holds these events (`dups` of them from before): mark them delivered.
    async fn mark(&self, ids: &[i64], dups: u64) -> Result<(), Error> {
        mark_rows(&self.pg, &self.names, ids).await?;
        self.m.delivered.fetch_add(ids.len() as u64, Ordering::Relaxed);
        self.m.duplicates.fetch_add(dups, Ordering::Relaxed);
        Ok(())
    }

    /// Baton refused this event: back off, or park it after --max-attempts.
    async fn fail(&self, e: &Event, why: &str) -> Result<(), Error> {
        self.m.refused.fetch_add(1, Ordering::Relaxed);
        if fail_row(&self.pg, &self.names, &self.args, e.id, why).await? {
            self.m.parked.fetch_add(1, Ordering::Relaxed);
            eprintln!("baton relay {}: parked event {}: {why}", self.leases.relay_id, e.id);
            let note = json!({"id": e.id, "aggregateType": e.agg.0, "aggregateId": e.agg.1, "error": why,
                "queue": e.item["queue"], "eventType": e.item["payload"]["eventType"]});
            let item = json!({"queue": format!("{}-parked", self.args.queue_prefix), "partition": e.agg.1,
                "transactionId": format!("outbox-parked-{}", e.id), "payload": note});
            let _ = self
                .baton
                .transaction(&json!({"operations": [{"type": "push", "items": [item]}]}), Duration::from_secs(5))
                .await;
        }
        Ok(())
    }
}

/// One ready outbox row: its id, aggregate and the JSON both modes publish.
pub(crate) struct Ready {
    pub id: i64,
    pub agg: (String, String),
    pub payload: Value,
}

/// The owned buckets' ready events in id order (at most `batch`), by bucket: pending,
/// settled (see SETTLED), and not behind a parked, backing-off or unsettled event of
/// their aggregate. Shared by the Baton and the Kafka delivery rounds.
pub(crate) async fn ready(
    pg: &tokio_postgres::Client,
    names: &Names,
    owned: &[i32],
    batch: i64,
) -> Result<BTreeMap<i32, Vec<Ready>>, Error> {
    let t = &names.table;
    let parked = pg
        .query(
            &format!(
                "SELECT DISTINCT aggregate_type, aggregate_id FROM {t} WHERE bucket = ANY($1) AND status = 'parked'"
            ),
            &[&owned.to_vec()],
        )
        .await?;
    // The events behind a parked or backing-off one are left out by the query itself, so
    // an aggregate that waits with more events than a batch cannot fill every batch and
    // starve the others (tests/relay/relay.rs::poison_parks_only_its_aggregate).
    let mut blocked: HashSet<(String, String)> = parked.iter().map(|r| (r.get(0), r.get(1))).collect();
    let rows = pg
        .query(
            &format!(
                "SELECT id, aggregate_type, aggregate_id, event_type, payload::text, payload_bytes, headers::text, \
                     created_at::text, bucket, COALESCE(next_attempt_at > now(), false), {SETTLED} \
                     FROM {t} o WHERE bucket = ANY($1) AND status = 'pending' \
                     AND NOT EXISTS (SELECT 1 FROM {t} b WHERE b.aggregate_type = o.aggregate_type \
                       AND b.aggregate_id = o.aggregate_id AND b.id < o.id AND {BLOCKING_ROWS} \
                       AND (b.status = 'parked' OR b.next_attempt_at > now())) \
                     ORDER BY id LIMIT $2"
            ),
            &[&owned.to_vec(), &batch.max(1)],
        )
        .await?;
    let mut by_bucket: BTreeMap<i32, Vec<Ready>> = BTreeMap::new();
    for r in rows {
        let agg: (String, String) = (r.get(1), r.get(2));
        let (waiting, settled): (bool, bool) = (r.get(9), r.get(10));
        if blocked.contains(&agg) {
            continue;
        }
        if waiting || !settled {
            blocked.insert(agg);
            continue;
        }
        let id: i64 = r.get(0);
        let parse = |s: Option<String>| s.and_then(|s| serde_json::from_str::<Value>(&s).ok()).unwrap_or(Value::Null);
        let mut payload = json!({
            "id": id, "aggregateType": agg.0, "aggregateId": agg.1, "eventType": r.get::<_, String>(3),
            "createdAt": r.get::<_, String>(7), "headers": parse(r.get(6)), "payload": parse(r.get(4)),
        });
        if let Some(b) = r.get::<_, Option<Vec<u8>>>(5) {
            payload["payloadBase64"] = json!(base64::engine::general_purpose::STANDARD.encode(b));
        }
        by_bucket.entry(r.get(8)).or_default().push(Ready { id, agg, payload });
    }
    Ok(by_bucket)
}

/// Mark rows delivered (only pending ones: a parked or already delivered row stays).
pub(crate) async fn mark_rows(pg: &tokio_postgres::Client, names: &Names, ids: &[i64]) -> Result<u64, Error> {
    let sql = format!(
        "UPDATE {} SET status = 'delivered', delivered_at = now() WHERE id = ANY($1) AND status = 'pending'",
        names.table
    );
    Ok(pg.execute(&sql, &[&ids]).await?)
}

/// A refusal of one row: back off exponentially, or park after --max-attempts.
/// Answers true when the row is now parked.
pub(crate) async fn fail_row(
    pg: &tokio_postgres::Client,
    names: &Names,
    args: &RunArgs,
    id: i64,
    why: &str,
) -> Result<bool, Error> {
    let base = args.backoff_ms as f64 / 1000.0;
    let rows = pg
        .query(
            &format!(
                "UPDATE {} SET attempts = attempts + 1, last_error = $2, \
                 next_attempt_at = now() + make_interval(secs => LEAST(60, $3 * power(2, attempts))), \
                 status = CASE WHEN attempts + 1 >= $4 THEN 'parked' ELSE status END \
                 WHERE id = $1 AND status = 'pending' RETURNING status",
                names.table
            ),
            &[&id, &why, &base, &args.max_attempts],
        )
        .await?;
    Ok(rows.first().is_some_and(|r| r.get::<_, String>(0) == "parked"))
}

/// LISTEN on `channel` from a connection of its own; every notification wakes the delivery loop.
pub async fn listen(target: crate::pg::Pg, channel: &str, wake: Arc<Notify>) -> Result<(), Error> {
    let channel = channel.to_string();
    tokio::spawn(async move {
        loop {
            if let Err(e) = listen_once(&target, &channel, &wake).await {
                eprintln!("baton relay: listen: {e}; reconnecting");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    Ok(())
}

async fn listen_once(target: &crate::pg::Pg, channel: &str, wake: &Notify) -> Result<(), Error> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = target.open(Some(tx)).await?;
    client.batch_execute(&format!("LISTEN {channel}")).await?;
    // Events inserted while we were not listening: one wake-up covers them.
    wake.notify_one();
    while let Some(m) = rx.recv().await {
        match m {
            Ok(tokio_postgres::AsyncMessage::Notification(_)) => wake.notify_one(),
            Ok(_) => {}
            Err(e) => {
                return Err(e.into());
            }
        }
    }
    drop(client);
    Ok(())
}
