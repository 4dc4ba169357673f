//! The Kafka view of a Baton cluster (D42): every member is a broker (its node id the broker
//! id), the Raft leader leads every partition and coordinates every group, and a member
//! that does not lead refuses what only the leader can serve with the error Kafka clients
//! move on from (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, NOT_CONTROLLER: each makes the
//! client refresh its metadata or look up its coordinator again).
//!
//! Owns the topology read at each request and the refusal table. Must never let a request
//! that changes or reads queue state run on a member that does not lead: such a request
//! would reach an engine that refuses it anyway, but with an error the client cannot act
//! on. A single node is a cluster of one whose member 0 always leads.

use crate::errors::{error_response, NOT_CONTROLLER, NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER};
use crate::Ctx;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use std::sync::Arc;

/// Who is where, as this member knows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// This member's broker id.
    pub me: i32,
    /// The broker that leads, if one is known.
    pub leader: Option<i32>,
    /// Every broker whose Kafka address is known: (id, host, port); this member's always.
    pub brokers: Vec<(i32, String, i32)>,
    /// Voters in the membership, whether or not their addresses are known here yet: each
    /// holds every partition (D42), so this is the replication factor a topic gets.
    pub voters: usize,
}

impl Topology {
    pub fn leads(&self) -> bool {
        self.leader == Some(self.me)
    }

    pub fn broker(&self, id: i32) -> Option<&(i32, String, i32)> {
        self.brokers.iter().find(|b| b.0 == id)
    }
}

/// What a member that does not lead asks the leader for (the server asks over the leader's
/// HTTP listener): a new idempotent-producer id for InitProducerId (librdkafka asks any
/// broker for one and keeps asking the same one), and the creation of a topic a client
/// asked this member about (librdkafka may ask only followers for a topic's metadata, and
/// only the leader creates, D42).
#[derive(Clone)]
pub struct LeaderAsk {
    pub producer_id: Arc<dyn Fn() -> Answer<i64> + Send + Sync>,
    /// Creates topic `name` with this many partitions on the leader (if it is not there).
    pub create_topic: Arc<dyn Fn(String, u32) -> Answer<()> + Send + Sync>,
}

/// The leader's answer to one ask, or why there is none.
pub type Answer<T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send>>;

impl std::fmt::Debug for LeaderAsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaderAsk")
    }
}

/// Reads the member's topology; set by the server on a cluster member.
#[derive(Clone)]
pub struct ClusterTopology(pub Arc<dyn Fn() -> Topology + Send + Sync>);

impl std::fmt::Debug for ClusterTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterTopology")
    }
}

impl Ctx {
    pub(crate) fn topology(&self) -> Topology {
        match &self.cfg.cluster {
            Some(t) => {
                let mut t = (t.0)();
                if t.broker(t.me).is_none() {
                    t.brokers.push((t.me, self.cfg.advertised_host.clone(), self.cfg.advertised_port));
                }
                t.brokers.sort();
                t
            }
            None => Topology {
                me: 0,
                leader: Some(0),
                brokers: vec![(0, self.cfg.advertised_host.clone(), self.cfg.advertised_port)],
                voters: 1,
            },
        }
    }
}

/// The whole answer a member that does not lead gives to `req`, or `None` to serve it here
/// (ApiVersions, Metadata, FindCoordinator and what this member answers about itself).
pub(crate) fn refuse_unless_leading(ctx: &Ctx, req: &RequestKind, version: i16) -> Option<ResponseKind> {
    // A single node always leads.
    ctx.cfg.cluster.as_ref()?;
    use RequestKind as Q;
    let code = match req {
        Q::Produce(_) | Q::Fetch(_) | Q::ListOffsets(_) | Q::DeleteRecords(_) => NOT_LEADER_OR_FOLLOWER,
        // Share groups live on the leader, whose leases they are (D49).
        Q::ShareFetch(_) | Q::ShareAcknowledge(_) => NOT_LEADER_OR_FOLLOWER,
        Q::ShareGroupHeartbeat(_)
        | Q::ShareGroupDescribe(_)
        | Q::DescribeShareGroupOffsets(_)
        | Q::AlterShareGroupOffsets(_)
        | Q::DeleteShareGroupOffsets(_) => NOT_COORDINATOR,
        Q::OffsetDelete(_) => NOT_COORDINATOR,
        Q::JoinGroup(_)
        | Q::SyncGroup(_)
        | Q::Heartbeat(_)
        | Q::LeaveGroup(_)
        | Q::OffsetCommit(_)
        | Q::OffsetFetch(_)
        | Q::DescribeGroups(_)
        | Q::ListGroups(_)
        | Q::DeleteGroups(_) => NOT_COORDINATOR,
        // The leader is the transaction coordinator (D48).
        Q::InitProducerId(r) if r.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) => NOT_COORDINATOR,
        Q::AddPartitionsToTxn(_)
        | Q::AddOffsetsToTxn(_)
        | Q::TxnOffsetCommit(_)
        | Q::EndTxn(_)
        | Q::DescribeTransactions(_)
        | Q::ListTransactions(_) => NOT_COORDINATOR,
        // The leader gives the id (`LeaderAsk`); without a way to ask it, refused.
        Q::InitProducerId(_) if ctx.cfg.leader_ask.is_some() => return None,
        Q::InitProducerId(_) => NOT_COORDINATOR,
        Q::CreateTopics(_)
        | Q::DeleteTopics(_)
        | Q::CreatePartitions(_)
        | Q::AlterConfigs(_)
        | Q::IncrementalAlterConfigs(_) => NOT_CONTROLLER,
        _ => return None,
    };
    if ctx.topology().leads() && ctx.engine.is_writable() {
        return None;
    }
    error_response(req, version, code)
}
