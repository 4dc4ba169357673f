//! What a member shows about the cluster and where it sends clients: `GET /cluster`, the
//! Raft families of `/metrics`, and the leader's client addresses (D42), all read from the
//! Raft metrics and the member directory at the moment they are asked.
//!
//! Owns those views. Must never block on the network (the directory is a copy) and never
//! name this member as somewhere else to go.

use std::collections::BTreeSet;
use std::fmt::Write;

use baton_core::Engine;
use baton_replicate::node::Node;
use baton_replicate::NodeId;

use crate::applier::EngineApplier;
use crate::member::Member;

/// Raft metrics in the shape every view here reads.
type Metrics = openraft::RaftMetrics<NodeId, openraft::BasicNode>;

impl Member {
    /// The leader's id and its address named `name` (`http`, `kafka`) while another member
    /// leads and has told its addresses; `None` while this member leads or none is known.
    pub fn leader_addr(node: &Node<EngineApplier>, name: &str) -> Option<(NodeId, String)> {
        let (me, leader) = {
            let m = node.raft.metrics();
            let m = m.borrow();
            (m.id, m.current_leader?)
        };
        if leader == me {
            return None;
        }
        node.directory.addr(leader, name).map(|a| (leader, a))
    }

    /// This member's id, the leader's, and every member's address named `name` that is known.
    pub fn addresses(node: &Node<EngineApplier>, name: &str) -> (NodeId, Option<NodeId>, Vec<(NodeId, String)>) {
        let (me, leader) = {
            let m = node.raft.metrics();
            let m = m.borrow();
            (m.id, m.current_leader)
        };
        let all = node.directory.all().into_iter().filter_map(|(id, a)| Some((id, a.get(name)?.clone()))).collect();
        (me, leader, all)
    }

    /// How many voters the membership has.
    pub fn voter_count(node: &Node<EngineApplier>) -> usize {
        node.raft.metrics().borrow().membership_config.membership().voter_ids().count()
    }

    /// What `GET /cluster` shows: the members (with the addresses they told), who leads in
    /// which term, how far the log and its application have come here, and, on the leader,
    /// how far each follower has.
    pub fn view(node: &Node<EngineApplier>, engine: &Engine) -> serde_json::Value {
        let m = node.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let members: Vec<serde_json::Value> = membership
            .nodes()
            .map(|(id, n)| {
                let about = node.directory.get(*id).unwrap_or_default();
                serde_json::json!({
                    "id": id,
                    "raftAddr": n.addr,
                    "voter": voters.contains(id),
                    "http": about.get("http"),
                    "kafka": about.get("kafka"),
                })
            })
            .collect();
        let followers: Vec<serde_json::Value> = lags(&m)
            .into_iter()
            .map(|(id, at, lag)| serde_json::json!({"id": id, "matched": at, "lag": lag}))
            .collect();
        serde_json::json!({
            "nodeId": m.id,
            "state": format!("{:?}", m.state),
            "leading": engine.is_writable(),
            "term": m.current_term,
            "leader": m.current_leader,
            "lastLogIndex": m.last_log_index,
            "lastApplied": m.last_applied.map(|l| l.index),
            "snapshotIndex": m.snapshot.map(|l| l.index),
            "purgedIndex": m.purged.map(|l| l.index),
            "millisSinceQuorumAck": m.millis_since_quorum_ack,
            "members": members,
            "followers": followers,
        })
    }

    /// The `baton_raft_*` families of `/metrics`.
    pub fn render_metrics(node: &Node<EngineApplier>, engine: &Engine, out: &mut String) {
        let m = node.raft.metrics().borrow().clone();
        let gauge = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        gauge(out, "baton_raft_term", "The Raft term this member is in.", m.current_term);
        gauge(
            out,
            "baton_raft_leader_id",
            "The member that leads, as this one knows (0: none known).",
            m.current_leader.unwrap_or(0),
        );
        gauge(
            out,
            "baton_raft_leading",
            "1 while this member's engine plans (it leads and was promoted).",
            engine.is_writable() as u64,
        );
        gauge(
            out,
            "baton_raft_last_log_index",
            "The last entry in this member's Raft log.",
            m.last_log_index.unwrap_or(0),
        );
        gauge(
            out,
            "baton_raft_last_applied_index",
            "The last entry this member applied.",
            m.last_applied.map_or(0, |l| l.index),
        );
        gauge(
            out,
            "baton_raft_snapshot_index",
            "The last entry this member's snapshot (its engine's last checkpoint) covers (D43).",
            m.snapshot.map_or(0, |l| l.index),
        );
        gauge(
            out,
            "baton_raft_purged_index",
            "The last entry purged from this member's Raft log (0: none yet).",
            m.purged.map_or(0, |l| l.index),
        );
        gauge(
            out,
            "baton_raft_voters",
            "Voters in the membership in effect.",
            m.membership_config.membership().voter_ids().count() as u64,
        );
        let _ = writeln!(
            out,
            "# HELP baton_raft_leases_let_go_total Times this member let its lease go because its leader handed over (D73).\n# TYPE baton_raft_leases_let_go_total counter\nbaton_raft_leases_let_go_total {}",
            node.leases_let_go()
        );
        let _ = writeln!(
            out,
            "# HELP baton_clock_follows_total Times this member took its leader's clock, more than --clock-follow-ms from its own (D72).\n# TYPE baton_clock_follows_total counter\nbaton_clock_follows_total {}",
            baton_core::clock::follows()
        );
        gauge(
            out,
            "baton_clock_follow_beyond_ms",
            "--clock-follow-ms: how far from its leader's clock this member's may be (0: it keeps its own).",
            baton_core::clock::follow_beyond_ms(),
        );
        if let Some(ms) = m.millis_since_quorum_ack {
            gauge(
                out,
                "baton_raft_millis_since_quorum_ack",
                "On the leader: since a majority last acknowledged it.",
                ms,
            );
        }
        let lags = lags(&m);
        if !lags.is_empty() {
            let _ = writeln!(out, "# HELP baton_raft_follower_lag_entries On the leader: entries each follower is behind its log.\n# TYPE baton_raft_follower_lag_entries gauge");
            for (id, _, lag) in lags {
                let _ = writeln!(out, "baton_raft_follower_lag_entries{{node=\"{id}\"}} {lag}");
            }
        }
    }
}

/// On the leader: (follower, last entry it matched, entries behind).
fn lags(m: &Metrics) -> Vec<(NodeId, Option<u64>, u64)> {
    let last = m.last_log_index.unwrap_or(0);
    m.replication
        .as_ref()
        .map(|r| {
            r.iter()
                .filter(|(id, _)| **id != m.id)
                .map(|(id, matched)| {
                    let at = matched.map(|l| l.index);
                    (*id, at, last.saturating_sub(at.unwrap_or(0)))
                })
                .collect()
        })
        .unwrap_or_default()
}
