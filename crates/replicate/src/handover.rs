//! Leadership handed to a caught-up voter (D45, D73), for a leader that is stopping, so the
//! cluster need not wait out an election timeout.
//!
//! openraft 0.9 has no `transfer_leader`. A follower refuses to vote until a leader lease
//! (`election_timeout_max`) has passed since it last heard the leader; the leader's lease on
//! its own vote runs from its election only. So once the leader has led for longer than a
//! lease, and a voter holds every entry the leader has, the leader:
//! 1. holds its appends (and waits for those in flight), so no follower renews its lease;
//! 2. tells every other voter it hands over (`POST /raft/release`): each holds its own
//!    candidacy for two leases and moves its Raft clock past the lease (`runtime`), so it
//!    grants the candidate's vote as it would after a silence;
//! 3. asks the voter to stand (`POST /raft/elect`). The leader grants that vote (the
//!    candidate's log is as long as its own) and steps down; with the released voters the
//!    candidate has a majority of any number of voters.
//!
//! Owns the choice of the voter, the requests and the receivers' checks. Must never ask a
//! voter that lacks an entry the leader has: the leader would refuse the vote, and the
//! candidate's higher term would depose it with nobody elected. The caller stops proposing
//! first. A receiver never stands or lets a lease go on the word of anyone but its current
//! leader in its current term, and never stands with a log shorter than the leader says it
//! has. A hand-over that fails lets the appends go again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bincode::Options;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::runtime::RaftInstant;
use crate::{NodeId, Raft};

/// What a leader sends the voter it hands over to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ElectRequest {
    pub leader: NodeId,
    pub term: u64,
    /// The leader's last log index: the voter must hold at least this much.
    pub last_index: Option<u64>,
}

const MAX_REQUEST_BYTES: u64 = 64;

fn codec() -> impl Options {
    bincode::options().with_limit(MAX_REQUEST_BYTES).with_fixint_encoding()
}

/// Slack over the lease for the gap between openraft dating its vote and the metrics
/// showing it: the leader waits at least this much longer than the lease.
const LEASE_SLACK: Duration = Duration::from_millis(20);

/// When this member began leading in its current term, as its metrics first showed it
/// (never earlier than openraft dated its vote, so waiting a lease from it is enough).
#[derive(Clone, Default)]
pub struct LeadingSince(Arc<Mutex<Option<(u64, Instant)>>>);

impl LeadingSince {
    pub(crate) fn follow(&self, me: NodeId, raft: Raft) -> JoinHandle<()> {
        let since = self.clone();
        tokio::spawn(async move {
            let mut metrics = raft.metrics();
            loop {
                {
                    let m = metrics.borrow_and_update();
                    let leads = m.state.is_leader() && m.current_leader == Some(me);
                    let mut s = since.0.lock();
                    match (leads, *s) {
                        (true, Some((term, _))) if term == m.current_term => {}
                        (true, _) => *s = Some((m.current_term, Instant::now())),
                        (false, _) => *s = None,
                    }
                }
                if metrics.changed().await.is_err() {
                    return;
                }
            }
        })
    }

    fn in_term(&self, term: u64) -> Option<Instant> {
        self.0.lock().filter(|(t, _)| *t == term).map(|(_, at)| at)
    }
}

/// What a leader sends every other voter before it asks one to stand (D73).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReleaseRequest {
    pub leader: NodeId,
    pub term: u64,
    /// The voter that will be asked to stand.
    pub target: NodeId,
}

/// What a leader needs to hand over: its Raft, how to reach the others, its lease.
pub struct Handover<'a> {
    pub raft: &'a Raft,
    pub me: NodeId,
    pub routes: &'a crate::network::Routes,
    pub gate: &'a crate::network::AppendGate,
    pub since: &'a LeadingSince,
    pub lease: Duration,
}

impl Handover<'_> {
    /// Waits (at most `within`) until this member has led for longer than a lease: before
    /// that its own vote refuses a candidate. Done before the caller stops proposing, so
    /// that wait costs no writes. False if it does not lead or the time ran out.
    pub async fn lease_over(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut metrics = self.raft.metrics();
        loop {
            let term = {
                let m = metrics.borrow_and_update();
                if !(m.state.is_leader() && m.current_leader == Some(self.me)) {
                    return false;
                }
                m.current_term
            };
            let now = Instant::now();
            match self.since.in_term(term).map(|at| at + self.lease + LEASE_SLACK) {
                Some(over) if now >= over => return true,
                _ if now >= deadline => return false,
                Some(over) => tokio::time::sleep_until(over.min(deadline)).await,
                None => {
                    let _ =
                        tokio::time::timeout_at(deadline.min(now + Duration::from_millis(10)), metrics.changed()).await;
                }
            }
        }
    }

    /// Asks a caught-up voter to stand and waits until another member leads; its id.
    /// The caller has stopped proposing: the last log index must not move meanwhile.
    pub async fn run(&self, within: Duration) -> Result<NodeId, String> {
        let deadline = Instant::now() + within;
        let mut metrics = self.raft.metrics();
        // Voters that refused to stand (one that never leads, D47), tried no more.
        let mut refused = BTreeSet::new();
        loop {
            let (target, addr, req) = self.pick(&mut metrics, &refused, deadline, within).await?;
            let _held = Held::new(self.gate);
            if !self.gate.hold(deadline).await {
                return Err(format!("appends in flight were not answered within {within:?}"));
            }
            self.release_others(&req, target, deadline).await;
            match self.ask(target, &addr, &req, deadline).await {
                Ok(()) => return self.led_by_another(&mut metrics, target, deadline, within).await,
                Err((true, why)) => {
                    tracing::info!(voter = target, why = %why, "hand-over: the voter would not stand; trying another");
                    refused.insert(target);
                }
                Err((false, why)) => return Err(why),
            }
        }
    }

    /// The first caught-up voter not in `refused`, once this member's own lease is over.
    async fn pick(
        &self,
        metrics: &mut tokio::sync::watch::Receiver<openraft::RaftMetrics<NodeId, openraft::BasicNode>>,
        refused: &BTreeSet<NodeId>,
        deadline: Instant,
        within: Duration,
    ) -> Result<(NodeId, String, ElectRequest), String> {
        loop {
            let m = metrics.borrow_and_update().clone();
            if !(m.state.is_leader() && m.current_leader == Some(self.me)) {
                return Err("this member does not lead".into());
            }
            let membership = m.membership_config.membership();
            let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
            if voters.len() < 2 {
                return Err("this member is the only voter".into());
            }
            let lease_over = self.since.in_term(m.current_term).map(|at| at + self.lease + LEASE_SLACK);
            let caught_up = m.replication.as_ref().and_then(|r| {
                r.iter()
                    .filter(|(id, _)| **id != self.me && voters.contains(id) && !refused.contains(id))
                    .find(|(_, matched)| matched.map(|l| l.index) == m.last_log_index)
                    .map(|(id, _)| *id)
            });
            let now = Instant::now();
            match (caught_up, lease_over) {
                (Some(t), Some(over)) if now >= over => {
                    let Some(addr) = self.addr_of(t, membership) else {
                        return Err(format!("voter {t} has no address in the membership"));
                    };
                    return Ok((
                        t,
                        addr,
                        ElectRequest { leader: self.me, term: m.current_term, last_index: m.last_log_index },
                    ));
                }
                _ if now >= deadline => {
                    return Err(match caught_up {
                        None if !refused.is_empty() => {
                            format!("no caught-up voter would stand (refused: {refused:?}) within {within:?}")
                        }
                        None => format!("no voter caught up with entry {:?} within {within:?}", m.last_log_index),
                        Some(_) => format!("this member's own lease did not run out within {within:?}"),
                    });
                }
                (_, Some(over)) if caught_up.is_some() => tokio::time::sleep_until(over.min(deadline)).await,
                // Replication progress shows in the metrics; the lease's start may not yet.
                _ => {
                    let _ =
                        tokio::time::timeout_at(deadline.min(now + Duration::from_millis(10)), metrics.changed()).await;
                }
            }
        }
    }

    /// Where to dial voter `id`: its route, else the address its membership entry gives.
    fn addr_of(&self, id: NodeId, membership: &crate::Membership) -> Option<String> {
        self.routes.read().get(&id).cloned().or_else(|| membership.get_node(&id).map(|n| n.addr.clone()))
    }

    /// Tells every voter but `target` and this member that it hands over, all at once; a
    /// voter that cannot be told keeps its lease and may refuse the vote (the others may
    /// still make a majority).
    async fn release_others(&self, req: &ElectRequest, target: NodeId, deadline: Instant) {
        let m = self.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership();
        let body = ReleaseRequest { leader: self.me, term: req.term, target };
        let Ok(body) = codec().serialize(&body) else { return };
        let calls = membership.voter_ids().filter(|v| *v != self.me && *v != target).filter_map(|v| {
            let addr = self.addr_of(v, membership)?;
            let body = body.clone();
            Some(async move {
                match post(&addr, "/raft/release", body, deadline).await {
                    Ok(r) if r.status().is_success() => {}
                    Ok(r) => tracing::info!(voter = v, status = %r.status(), "hand-over: the voter kept its lease"),
                    Err(e) => tracing::info!(voter = v, error = %e, "hand-over: the voter could not be told"),
                }
            })
        });
        futures_util::future::join_all(calls).await;
    }

    /// Posts the elect request to `target`: `Err((true, why))` when it refused to stand
    /// (another voter may), `Err((false, why))` when it could not be asked.
    async fn ask(
        &self,
        target: NodeId,
        addr: &str,
        req: &ElectRequest,
        deadline: Instant,
    ) -> Result<(), (bool, String)> {
        let body = codec().serialize(req).map_err(|e| (false, e.to_string()))?;
        let sent = post(addr, "/raft/elect", body, deadline)
            .await
            .map_err(|e| (false, format!("asking voter {target} to stand: {e}")))?;
        if !sent.status().is_success() {
            let status = sent.status();
            let text = sent.text().await.unwrap_or_default();
            return Err((status == StatusCode::CONFLICT, format!("voter {target} would not stand: {status}: {text}")));
        }
        Ok(())
    }

    /// After `target` agreed to stand: the member that leads next, once it is not this one.
    async fn led_by_another(
        &self,
        metrics: &mut tokio::sync::watch::Receiver<openraft::RaftMetrics<NodeId, openraft::BasicNode>>,
        target: NodeId,
        deadline: Instant,
        within: Duration,
    ) -> Result<NodeId, String> {
        loop {
            let m = metrics.borrow_and_update().clone();
            match m.current_leader {
                Some(l) if l != self.me => return Ok(l),
                _ if Instant::now() >= deadline => {
                    return Err(format!("voter {target} stood but no other member led within {within:?}"));
                }
                _ => {
                    let _ = tokio::time::timeout_at(deadline, metrics.changed()).await;
                }
            }
        }
    }
}

/// The receiving side of `/raft/elect`: stands for election if the request comes from this
/// member's leader in its current term and this member holds every entry the leader has.
pub(crate) async fn elect(raft: &Raft, stands: bool, body: Bytes) -> Response {
    let req: ElectRequest = match codec().deserialize(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("the request does not decode: {e}")).into_response(),
    };
    let m = raft.metrics().borrow().clone();
    // openraft's trigger().elect() stands whatever the runtime config says: the refusal
    // of a member that must never lead is here.
    let refusal = if !stands {
        Some("this member never stands for election (--raft-stand-for-election false)".into())
    } else if m.current_leader != Some(req.leader) || m.current_term != req.term {
        Some(format!(
            "node {} in term {} is not this member's leader (it follows {:?} in term {})",
            req.leader, req.term, m.current_leader, m.current_term
        ))
    } else if m.current_leader == Some(m.id) {
        Some("this member leads".into())
    } else if m.last_log_index < req.last_index {
        Some(format!("this member's log ends at {:?}, before the leader's {:?}", m.last_log_index, req.last_index))
    } else if !m.membership_config.membership().voter_ids().any(|v| v == m.id) {
        Some("this member does not vote".into())
    } else {
        None
    };
    if let Some(why) = refusal {
        return (StatusCode::CONFLICT, why).into_response();
    }
    match raft.trigger().elect().await {
        Ok(()) => {
            tracing::info!(from = req.leader, term = req.term, "standing for election: the leader hands over");
            (StatusCode::OK, "standing").into_response()
        }
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("raft stopped: {e}")).into_response(),
    }
}

/// POSTs `body` to `path` on member `addr`, given until `deadline` to be answered.
async fn post(addr: &str, path: &str, body: Vec<u8>, deadline: Instant) -> Result<reqwest::Response, String> {
    let client = reqwest::Client::builder()
        .timeout(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)))
        .build()
        .map_err(|e| e.to_string())?;
    client
        .post(format!("http://{addr}{path}"))
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())
}

/// Lets the appends go again when a hand-over attempt ends, whichever way.
struct Held<'a>(&'a crate::network::AppendGate);

impl<'a> Held<'a> {
    fn new(gate: &'a crate::network::AppendGate) -> Held<'a> {
        Held(gate)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A follower's side of hand-overs (D73): when it last heard its leader, on the Raft clock;
/// the leases it let go (`baton_raft_leases_let_go_total`); until when its candidacy is held.
/// One per member, so that a release repeated before the leader was heard again moves
/// nothing and starts nothing (D74).
#[derive(Default)]
pub struct Released {
    heard: Mutex<Option<RaftInstant>>,
    count: AtomicU64,
    /// Until when this member does not stand; `Some` while a task waits to let it stand.
    candidacy: Mutex<Option<Instant>>,
}

impl Released {
    /// An append, vote or snapshot from a leader was handled: openraft dated the lease it
    /// gives no later than now.
    pub(crate) fn heard(&self) {
        *self.heard.lock() = Some(<RaftInstant as openraft::Instant>::now());
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// Moves the Raft clock just far enough that the lease given at the last thing heard is
    /// over; false when it already is (a repeated release, D74: each one moved the clock
    /// another lease and started another task).
    fn let_lease_go(&self, lease: Duration) -> bool {
        let mut heard = self.heard.lock();
        let now = <RaftInstant as openraft::Instant>::now();
        let over = heard.unwrap_or(now) + lease;
        if heard.is_some() && over <= now {
            return false;
        }
        crate::runtime::let_lease_go(over - now);
        heard.get_or_insert(now);
        self.count.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Keeps this member from standing for `held`, from now; one task at most lets it stand
    /// again, once the latest hold is over.
    fn hold_candidacy(self: &Arc<Self>, raft: &Raft, stands: bool, held: Duration) {
        raft.runtime_config().elect(false);
        if !stands {
            return;
        }
        let mut until = self.candidacy.lock();
        let waiting = until.is_some();
        *until = Some(Instant::now() + held);
        if waiting {
            return;
        }
        let (raft, me) = (raft.clone(), Arc::clone(self));
        tokio::spawn(async move {
            loop {
                let at = {
                    let mut until = me.candidacy.lock();
                    match *until {
                        Some(at) if at > Instant::now() => at,
                        _ => {
                            *until = None;
                            raft.runtime_config().elect(true);
                            return;
                        }
                    }
                };
                tokio::time::sleep_until(at).await;
            }
        });
    }
}

/// The receiving side of `/raft/release` (D73): a voter that is not the one asked to stand
/// holds its own candidacy for two leases (so its election timer, which the moved clock
/// makes due, does not race the candidate) and moves its Raft clock past its lease, so it
/// grants the candidate's vote. Only on the word of its leader in its current term, and only
/// once until that leader is heard again (D74).
pub(crate) async fn release(
    raft: &Raft,
    stands: bool,
    lease: Duration,
    released: &Arc<Released>,
    body: Bytes,
) -> Response {
    let req: ReleaseRequest = match codec().deserialize(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("the request does not decode: {e}")).into_response(),
    };
    let m = raft.metrics().borrow().clone();
    if m.current_leader != Some(req.leader) || m.current_term != req.term || m.id == req.leader {
        return (
            StatusCode::CONFLICT,
            format!(
                "node {} in term {} is not this member's leader (it follows {:?} in term {})",
                req.leader, req.term, m.current_leader, m.current_term
            ),
        )
            .into_response();
    }
    if m.id == req.target {
        return (StatusCode::OK, "this member will be asked to stand").into_response();
    }
    if !released.let_lease_go(lease + LEASE_SLACK) {
        return (StatusCode::OK, "lease already let go").into_response();
    }
    released.hold_candidacy(raft, stands, lease * 2);
    tracing::info!(from = req.leader, term = req.term, to = req.target, "the leader hands over: lease let go");
    (StatusCode::OK, "lease let go").into_response()
}
