//! One Raft member: its log store, state machine, openraft instance and Raft listener, wired
//! from one config, started and stopped as one.
//!
//! Owns the layout of a member's directory (`wal/` the log, `raft/` its metadata,
//! `snapshots/`) and the timing settings. Must never start serving Raft before its storage
//! has recovered, and never leave the listener running after `shutdown` returns.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, Config, SnapshotPolicy};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::directory::{About, Directory};
use crate::handover::{Handover, LeadingSince};
use crate::log_store::{LogStore, LogStoreConfig};
use crate::machine::{Applier, Machine};
use crate::network::{self, Network};
use crate::{NodeId, Raft};

#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: NodeId,
    pub dir: PathBuf,
    /// Where this member listens for Raft RPCs.
    pub listen: SocketAddr,
    pub heartbeat: Duration,
    /// A follower that hears no leader for a random time in this range stands for election.
    pub election: (Duration, Duration),
    /// Build a snapshot once this many entries were applied since the last one; `None`:
    /// only when asked (a member asks after each checkpoint of its engine, D43).
    pub snapshot_every: Option<u64>,
    /// Entries kept in the log behind a snapshot, for followers a little behind.
    pub keep_behind_snapshot: u64,
    pub max_rpc_bytes: usize,
    /// How long a leader waits for a follower to take one chunk of a snapshot; the last
    /// chunk's answer waits for the install (a whole state written out, D43).
    pub install_timeout: Duration,
    pub log: LogStoreConfig,
    /// What this member tells the others about itself at `/raft/about` (its HTTP and Kafka
    /// addresses, D42).
    pub about: About,
    /// Where to dial members instead of the Raft address their membership entry gives (a
    /// different interface or a NAT in a deployment; a proxy in a fault test).
    pub routes: std::collections::BTreeMap<NodeId, String>,
    /// `false`: this member votes and replicates but never leads: no election timer, and a
    /// leader's hand-over request is refused (`--raft-stand-for-election false`).
    pub stands: bool,
    /// The engine's clock, carried on appends so that followers follow it (D72); `None`:
    /// no clock crosses (the members of a test without an engine).
    pub clock: Option<network::Timekeeper>,
}

impl NodeConfig {
    pub fn new(id: NodeId, dir: impl Into<PathBuf>, listen: SocketAddr) -> NodeConfig {
        let dir = dir.into();
        NodeConfig {
            id,
            log: LogStoreConfig::new(dir.join("wal")),
            dir,
            listen,
            heartbeat: Duration::from_millis(100),
            election: (Duration::from_millis(400), Duration::from_millis(800)),
            snapshot_every: Some(100_000),
            keep_behind_snapshot: 10_000,
            max_rpc_bytes: network::DEFAULT_MAX_RPC_BYTES,
            install_timeout: Duration::from_secs(60),
            about: About::new(),
            routes: Default::default(),
            stands: true,
            clock: None,
        }
    }

    fn raft_config(&self) -> Result<Arc<Config>, String> {
        let ms = |d: Duration| d.as_millis() as u64;
        let cfg = Config {
            cluster_name: "baton".into(),
            heartbeat_interval: ms(self.heartbeat),
            election_timeout_min: ms(self.election.0),
            election_timeout_max: ms(self.election.1),
            snapshot_policy: self.snapshot_every.map_or(SnapshotPolicy::Never, SnapshotPolicy::LogsSinceLast),
            max_in_snapshot_log_to_keep: self.keep_behind_snapshot,
            install_snapshot_timeout: ms(self.install_timeout),
            ..Default::default()
        };
        Ok(Arc::new(cfg.validate().map_err(|e| format!("raft settings: {e}"))?))
    }
}

pub struct Node<A: Applier> {
    pub id: NodeId,
    pub raft: Raft,
    pub log: LogStore,
    pub machine: Machine<A>,
    pub addr: SocketAddr,
    /// The other members' own addresses, as they last told them (D42).
    pub directory: Directory,
    routes: network::Routes,
    /// Appends held back while this member hands over (D73).
    gate: Arc<network::AppendGate>,
    /// Leases this member let go for a leader's hand-over (D73).
    released: Arc<crate::handover::Released>,
    since: LeadingSince,
    /// The leader lease a follower keeps (openraft's `election_timeout_max`).
    lease: Duration,
    server: JoinHandle<()>,
    refresh: JoinHandle<()>,
    leading: JoinHandle<()>,
}

impl<A: Applier> Node<A> {
    /// Recovers the member's storage from its directory, then starts Raft and its listener.
    pub async fn start(cfg: NodeConfig, applier: A) -> Result<Node<A>, String> {
        let raft_cfg = cfg.raft_config()?;
        let log = LogStore::open(cfg.log.clone(), &cfg.dir.join("raft")).map_err(|e| format!("raft log: {e}"))?;
        let machine = Machine::open(&cfg.dir.join("snapshots"), applier).map_err(|e| format!("snapshots: {e}"))?;
        machine.apply_only_durable(log.clone());
        let listener =
            TcpListener::bind(cfg.listen).await.map_err(|e| format!("raft listener on {}: {e}", cfg.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let routes = network::Routes::new(parking_lot::RwLock::new(cfg.routes.clone()));
        let gate = Arc::new(network::AppendGate::default());
        let net = Network::new(cfg.max_rpc_bytes, Arc::clone(&routes), cfg.clock, Arc::clone(&gate));
        let raft =
            Raft::new(cfg.id, raft_cfg, net, log.clone(), machine.clone()).await.map_err(|e| format!("raft: {e}"))?;
        if !cfg.stands {
            raft.runtime_config().elect(false);
        }
        let released = Arc::new(crate::handover::Released::default());
        let app = network::router(
            raft.clone(),
            cfg.max_rpc_bytes,
            cfg.about.clone(),
            cfg.stands,
            cfg.clock,
            cfg.election.1,
            Arc::clone(&released),
        );
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "raft listener stopped");
            }
        });
        let directory = Directory::default();
        directory.set(cfg.id, cfg.about.clone());
        let refresh = directory.refresh(cfg.id, raft.clone(), Arc::clone(&routes));
        let since = LeadingSince::default();
        let leading = since.follow(cfg.id, raft.clone());
        let lease = cfg.election.1;
        Ok(Node {
            id: cfg.id,
            raft,
            log,
            machine,
            addr,
            directory,
            routes,
            gate,
            released,
            since,
            lease,
            server,
            refresh,
            leading,
        })
    }

    /// Dials member `target` at `addr` from now on, whatever its membership entry says.
    pub fn route(&self, target: NodeId, addr: impl Into<String>) {
        self.routes.write().insert(target, addr.into());
    }

    /// Makes this member the first of a new cluster of `members` (id -> Raft address). Only
    /// ever on one member, once: the others learn the membership from it.
    pub async fn initialize(&self, members: &BTreeMap<NodeId, String>) -> Result<(), String> {
        let nodes: BTreeMap<NodeId, BasicNode> = members.iter().map(|(id, a)| (*id, BasicNode::new(a))).collect();
        self.raft.initialize(nodes).await.map_err(|e| e.to_string())
    }

    /// How many times this member let its lease go for its leader's hand-over (D73).
    pub fn leases_let_go(&self) -> u64 {
        self.released.count()
    }

    /// The voters of the membership in effect.
    pub fn voters(&self) -> BTreeSet<NodeId> {
        self.raft.metrics().borrow().membership_config.membership().voter_ids().collect()
    }

    /// Hands leadership to a caught-up voter (D45, D73) and waits until another member leads;
    /// its id. The caller stops proposing first.
    pub async fn hand_over(&self, within: Duration) -> Result<NodeId, String> {
        self.handover().run(within).await
    }

    /// Waits (at most `within`) until this leader's lease on its own vote has run out, which
    /// a hand-over needs; false if it does not lead or the time ran out.
    pub async fn own_lease_over(&self, within: Duration) -> bool {
        self.handover().lease_over(within).await
    }

    fn handover(&self) -> Handover<'_> {
        Handover {
            raft: &self.raft,
            me: self.id,
            routes: &self.routes,
            gate: &self.gate,
            since: &self.since,
            lease: self.lease,
        }
    }

    /// Stops Raft, then the listener, then the log (what was appended is finished first).
    pub async fn shutdown(self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "raft did not stop cleanly");
        }
        self.refresh.abort();
        self.leading.abort();
        self.server.abort();
        let _ = self.server.await;
        self.log.shutdown();
    }
}
