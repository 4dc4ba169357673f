//! The outbox schema: what `baton relay init` creates (idempotent) and the
//! names derived from the table name. Must never drop or rewrite an
//! application's rows, and never stall an application writing to a live outbox:
//! what exists is left alone, functions are replaced in place, triggers are created
//! only when missing, and indexes concurrently.

use tokio_postgres::Client;

/// The names of the outbox table and its companions.
#[derive(Debug, Clone)]
pub struct Names {
    pub table: String,
}

impl Names {
    pub fn new(table: &str) -> Result<Names, String> {
        let ok = !table.is_empty()
            && table.len() <= 48
            && table.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !table.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(format!("table name {table:?}: lowercase letters, digits and _ only (at most 48)"));
        }
        Ok(Names { table: table.to_string() })
    }
    pub fn config(&self) -> String {
        format!("{}_config", self.table)
    }
    /// Kafka mode's bucket leases (D58): one row per bucket, its owner and expiry.
    pub fn leases(&self) -> String {
        format!("{}_leases", self.table)
    }
    /// Kafka mode's live relays: one row per relay id, with its expiry.
    pub fn members(&self) -> String {
        format!("{}_members", self.table)
    }
    /// The LISTEN/NOTIFY channel: the table's own name.
    pub fn channel(&self) -> &str {
        &self.table
    }
}

/// The rows that can hold their aggregate back: parked, or pending after a refusal (their
/// backoff may be running). Few by nature, and indexed by themselves (`<table>_blocking`),
/// so the relay's "nothing blocking before it" test costs a lookup in a tiny index whatever
/// the backlog and whatever the planner's statistics (tests/relay/relay.rs,
/// `a_backlog_on_stale_statistics_drains_quickly`). The query repeats this text so that
/// the planner can prove the index applies.
pub const BLOCKING_ROWS: &str = "(status = 'parked' OR (status = 'pending' AND next_attempt_at IS NOT NULL))";

/// The tables and functions for `buckets` buckets (the count is kept by the first init
/// only). Run on a live outbox none of this locks the outbox table: CREATE TABLE IF NOT
/// EXISTS of a table that is there takes no lock, the functions are replaced in place (a
/// trigger names its function by oid), and the other statements touch the relay's own tables.
fn tables_sql(n: &Names, buckets: u32) -> String {
    let t = &n.table;
    let c = n.config();
    let (l, m) = (n.leases(), n.members());
    format!(
        r#"
CREATE TABLE IF NOT EXISTS {c} (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    buckets int NOT NULL CHECK (buckets > 0)
);
INSERT INTO {c} (one, buckets) VALUES (true, {buckets}) ON CONFLICT (one) DO NOTHING;
CREATE TABLE IF NOT EXISTS {t} (
    id bigserial PRIMARY KEY,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    event_type text NOT NULL,
    payload jsonb,
    payload_bytes bytea,
    headers jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    bucket int NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'parked')),
    attempts int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error text,
    delivered_at timestamptz
);
CREATE OR REPLACE FUNCTION {t}_bucket() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE b int;
BEGIN
    SELECT buckets INTO b FROM {c};
    NEW.bucket := ((hashtext(NEW.aggregate_type || ':' || NEW.aggregate_id)::bigint % b) + b) % b;
    RETURN NEW;
END
$fn$;
CREATE OR REPLACE FUNCTION {t}_notify() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_notify('{t}', '');
    RETURN NULL;
END
$fn$;
CREATE TABLE IF NOT EXISTS {l} (
    bucket int PRIMARY KEY,
    owner text,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO {l} (bucket) SELECT g FROM generate_series(0, (SELECT buckets FROM {c}) - 1) g ON CONFLICT (bucket) DO NOTHING;
CREATE TABLE IF NOT EXISTS {m} (
    relay_id text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
"#
    )
}

/// The outbox's triggers: (name, CREATE statement). Created only when missing, since
/// CREATE TRIGGER locks the table against inserts.
fn triggers(n: &Names) -> [(String, String); 2] {
    let t = &n.table;
    [
        (
            format!("{t}_bucket"),
            format!("CREATE TRIGGER {t}_bucket BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION {t}_bucket()"),
        ),
        (
            format!("{t}_notify"),
            format!("CREATE TRIGGER {t}_notify AFTER INSERT ON {t} FOR EACH STATEMENT EXECUTE FUNCTION {t}_notify()"),
        ),
    ]
}

/// The outbox's indexes: (name, what follows `ON <table>`).
fn indexes(n: &Names) -> [(String, String); 3] {
    let t = &n.table;
    [
        (format!("{t}_undelivered"), "(bucket, id) WHERE status <> 'delivered'".into()),
        (format!("{t}_aggregate"), "(aggregate_type, aggregate_id, id) WHERE status <> 'delivered'".into()),
        (format!("{t}_blocking"), format!("(aggregate_type, aggregate_id, id) WHERE {BLOCKING_ROWS}")),
    ]
}

/// Most tries (100 ms apart) for the init lock another relay's init holds.
const INIT_LOCK_TRIES: u32 = 600;

/// Create what is missing, without stalling an application that writes to a live outbox
/// (tests/relay/relay.rs, `init_on_a_live_outbox_does_not_stall_the_application`): tables and
/// functions in one transaction; a missing trigger in it too (the only table lock, taken
/// once per install); a missing or invalid index with CREATE INDEX CONCURRENTLY after it,
/// which lets inserts run (it waits for open transactions instead). Concurrent inits
/// serialize on a session advisory lock taken by polling: a waiting statement would hold a
/// snapshot that the other session's concurrent index build must wait for.
pub async fn init(pg: &mut Client, n: &Names, buckets: u32) -> Result<(), crate::Error> {
    let mut tries = 0;
    while !pg.query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&n.table]).await?.get::<_, bool>(0) {
        tries += 1;
        if tries >= INIT_LOCK_TRIES {
            return Err(format!("another relay's init of {} held its lock for a minute", n.table).into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let r = init_locked(pg, n, buckets).await;
    let unlocked = pg.execute("SELECT pg_advisory_unlock(hashtext($1))", &[&n.table]).await;
    r?;
    unlocked?;
    Ok(())
}

async fn init_locked(pg: &mut Client, n: &Names, buckets: u32) -> Result<(), crate::Error> {
    let t = &n.table;
    let tx = pg.transaction().await?;
    tx.batch_execute(&tables_sql(n, buckets)).await?;
    for (name, create) in triggers(n) {
        let there = tx
            .query_opt(
                "SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2 AND NOT tgisinternal",
                &[t, &name],
            )
            .await?
            .is_some();
        if !there {
            tx.batch_execute(&create).await?;
        }
    }
    tx.commit().await?;
    for (name, def) in indexes(n) {
        let valid: Option<bool> = pg
            .query_opt("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", &[&name])
            .await?
            .map(|r| r.get(0));
        match valid {
            Some(true) => continue,
            // A concurrent build that failed (or was killed) leaves an invalid index behind,
            // which IF NOT EXISTS would keep for ever.
            Some(false) => pg.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}")).await?,
            None => {}
        }
        pg.batch_execute(&format!("CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {t} {def}")).await?;
    }
    Ok(())
}

/// The bucket count the table was initialized with.
pub async fn buckets(pg: &Client, n: &Names) -> Result<u32, tokio_postgres::Error> {
    let row = pg.query_one(&format!("SELECT buckets FROM {}", n.config()), &[]).await?;
    Ok(row.get::<_, i32>(0) as u32)
}

/// The snapshot-horizon predicate (see docs/relay.md, "Order and gaps"): true when
/// the transaction that wrote the row version is older than every transaction
/// still running. `xmin` is a 32-bit xid, the horizon a 64-bit xid8: compare the
/// low 32 bits modulo 2^32 (PostgreSQL's own TransactionIdPrecedes), with the
/// permanent xids (< 3: frozen, bootstrap) always older.
pub const SETTLED: &str = "(xmin::text::bigint < 3 OR \
    ((xmin::text::bigint - (pg_snapshot_xmin(pg_current_snapshot())::text::numeric % 4294967296)::bigint \
      + 4294967296) % 4294967296) >= 2147483648)";
