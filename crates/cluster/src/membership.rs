//! Adding, removing and replacing members of a running cluster (D44), on the leader.
//!
//! Owns the steps and their bounds: a new member joins as a learner, is caught up (a
//! snapshot and then the log, D43) and only then becomes a voter; a member leaves by one
//! membership change (openraft's joint consensus). Every membership entry is appended under
//! a [`crate::raft_log::Hold`], so no frame is numbered across one. One change at a time; a
//! second is refused, not queued. Must never leave a learner behind that did not catch up
//! in time, never take away the last voter, and never wait on the network without a bound.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use baton_replicate::node::Node;
use baton_replicate::NodeId;
use openraft::error::{ChangeMembershipError, ClientWriteError, RaftError};
use openraft::{BasicNode, ChangeMembers};
use serde_json::{json, Value};

use crate::applier::EngineApplier;
use crate::raft_log::RaftLog;

/// The most voters a membership may have: every commit waits for a majority of them, and
/// on one machine's worth of cores more than nine only adds latency.
pub const MAX_VOTERS: usize = 9;

/// Why a change was not made; the HTTP layer maps each to a status and a code.
#[derive(Debug)]
pub enum Refused {
    /// The request names something impossible (400).
    Bad(&'static str, String),
    /// This member does not lead (503 `not_leader`).
    NotLeader(String),
    /// The membership does not allow it now (409).
    Conflict(&'static str, String),
    /// No such member (404 `member_not_found`).
    NotFound(String),
    /// Not done within the bound (504); what that means for the membership is said.
    Timeout(&'static str, String),
    /// Raft failed; the outcome is unknown (503 `outcome_unknown`).
    Unknown(String),
}

/// Serializes membership changes on this member.
#[derive(Default)]
pub struct Changes(tokio::sync::Mutex<()>);

impl Changes {
    /// The right to make a change now; a second one at once is refused, not queued.
    fn one(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, Refused> {
        self.0.try_lock().map_err(|_| {
            Refused::Conflict("membership_change_in_progress", "another membership change is being made here".into())
        })
    }
}

type WriteError = RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>;

fn refused(e: WriteError) -> Refused {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => {
            Refused::NotLeader(format!("this member does not lead; the leader is {:?}", f.leader_id))
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(c)) => match c {
            ChangeMembershipError::InProgress(e) => Refused::Conflict("membership_change_in_progress", e.to_string()),
            ChangeMembershipError::EmptyMembership(e) => Refused::Conflict("last_voter", e.to_string()),
            ChangeMembershipError::LearnerNotFound(e) => Refused::Conflict("not_a_learner", e.to_string()),
        },
        RaftError::Fatal(f) => Refused::Unknown(format!("raft stopped: {f}")),
    }
}

/// The voters and learners (id -> Raft address) of the membership in effect here.
pub fn members(node: &Node<EngineApplier>) -> (BTreeMap<NodeId, String>, BTreeMap<NodeId, String>) {
    let m = node.raft.metrics().borrow().membership_config.clone();
    let voters: BTreeSet<NodeId> = m.membership().voter_ids().collect();
    let (mut v, mut l) = (BTreeMap::new(), BTreeMap::new());
    for (id, n) in m.membership().nodes() {
        if voters.contains(id) { &mut v } else { &mut l }.insert(*id, n.addr.clone());
    }
    (v, l)
}

fn shape(node: &Node<EngineApplier>, changed: bool) -> Value {
    let (voters, learners) = members(node);
    let list = |m: BTreeMap<NodeId, String>| -> Vec<Value> {
        m.into_iter().map(|(id, a)| json!({"id": id, "raftAddr": a})).collect()
    };
    json!({"changed": changed, "voters": list(voters), "learners": list(learners)})
}

fn ensure_leader(node: &Node<EngineApplier>) -> Result<(), Refused> {
    let m = node.raft.metrics().borrow().clone();
    if m.current_leader == Some(m.id) && m.state.is_leader() {
        return Ok(());
    }
    Err(Refused::NotLeader(format!(
        "membership changes are made on the leader; this member is {:?} and the leader is {:?}",
        m.state, m.current_leader
    )))
}

/// One membership entry (or a joint pair) appended and committed under a hold.
async fn change(
    node: &Node<EngineApplier>,
    log: &RaftLog,
    what: ChangeMembers<NodeId, BasicNode>,
    within: Duration,
) -> Result<(), Refused> {
    let hold = log.hold(within).await.ok_or_else(|| {
        Refused::Timeout(
            "writes_not_settled",
            format!("frames in flight were not committed within {within:?}; nothing was changed"),
        )
    })?;
    match tokio::time::timeout(within, node.raft.change_membership(what, false)).await {
        Ok(Ok(r)) => {
            hold.resume_after(r.log_id.index);
            Ok(())
        }
        Ok(Err(e)) => Err(refused(e)),
        Err(_) => Err(Refused::Unknown(format!(
            "the membership change was not committed within {within:?}: it may still take effect"
        ))),
    }
}

/// Adds member `id` at Raft address `addr` as a voter: a learner first, caught up within
/// `within`, then a voter. Asking for a voter that is already there, at that address,
/// changes nothing.
pub async fn add(
    node: &Node<EngineApplier>,
    log: &RaftLog,
    changes: &Changes,
    id: NodeId,
    addr: &str,
    within: Duration,
) -> Result<Value, Refused> {
    addr.parse::<SocketAddr>()
        .map_err(|e| Refused::Bad("bad_raft_addr", format!("raftAddr {addr:?} is not HOST:PORT: {e}")))?;
    let _one = changes.one()?;
    ensure_leader(node)?;
    let (voters, learners) = members(node);
    match voters.get(&id) {
        Some(a) if a == addr => return Ok(shape(node, false)),
        Some(a) => {
            return Err(Refused::Conflict(
                "member_exists",
                format!("member {id} is a voter at {a}; remove it before adding it at {addr}"),
            ))
        }
        None if voters.len() >= MAX_VOTERS => {
            return Err(Refused::Conflict("too_many_members", format!("a cluster has at most {MAX_VOTERS} voters")))
        }
        None => {}
    }
    if let Some((other, _)) = voters.iter().chain(&learners).find(|(i, a)| **i != id && a.as_str() == addr) {
        return Err(Refused::Conflict("raft_addr_in_use", format!("member {other} already has Raft address {addr}")));
    }
    let mut nodes = BTreeMap::new();
    nodes.insert(id, BasicNode::new(addr));
    let what = if learners.contains_key(&id) { ChangeMembers::SetNodes(nodes) } else { ChangeMembers::AddNodes(nodes) };
    change(node, log, what, within).await?;
    let target = node.raft.metrics().borrow().last_log_index.unwrap_or(0);
    if !caught_up(node, id, target, within).await {
        let undo = change(node, log, ChangeMembers::RemoveNodes([id].into()), within).await;
        return Err(Refused::Timeout(
            "member_not_caught_up",
            format!(
                "member {id} at {addr} did not catch up to entry {target} within {within:?}; {}",
                match undo {
                    Ok(()) => "it was taken out again and the membership is as it was".to_string(),
                    Err(e) => format!("taking it out again failed ({e:?}): it may remain a learner"),
                }
            ),
        ));
    }
    change(node, log, ChangeMembers::AddVoterIds([id].into()), within).await?;
    tracing::info!(member = id, raft = addr, "member added as a voter");
    Ok(shape(node, true))
}

/// Whether the leader's replication to `id` has matched entry `target` within `within`.
async fn caught_up(node: &Node<EngineApplier>, id: NodeId, target: u64, within: Duration) -> bool {
    let mut metrics = node.raft.metrics();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let matched = {
            let m = metrics.borrow_and_update();
            m.replication.as_ref().and_then(|r| r.get(&id).cloned()).flatten().map(|l| l.index)
        };
        if matched.is_some_and(|i| i >= target) {
            return true;
        }
        if tokio::time::timeout_at(deadline, metrics.changed()).await.is_err() {
            return false;
        }
    }
}

/// Removes member `id` (a voter or a learner). The last voter stays.
pub async fn remove(
    node: &Node<EngineApplier>,
    log: &RaftLog,
    changes: &Changes,
    id: NodeId,
    within: Duration,
) -> Result<Value, Refused> {
    let _one = changes.one()?;
    ensure_leader(node)?;
    let (voters, learners) = members(node);
    if voters.contains_key(&id) {
        if voters.len() == 1 {
            return Err(Refused::Conflict("last_voter", format!("member {id} is the only voter")));
        }
        change(node, log, ChangeMembers::RemoveVoters([id].into()), within).await?;
    } else if learners.contains_key(&id) {
        change(node, log, ChangeMembers::RemoveNodes([id].into()), within).await?;
    } else {
        return Err(Refused::NotFound(format!("member {id} is not in the membership")));
    }
    tracing::info!(member = id, "member removed");
    Ok(shape(node, true))
}
