//! Wiring only: configuration, start-up, signals and shutdown. Owns no
//! behaviour of its own; everything it starts lives in a lower crate.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

mod args;
pub use args::ServeArgs;

/// Raises the soft limit on open files to the hard one, as a server expects to: the default
/// soft limit (often 1,024) is far below what the connection caps allow (issue 12 item 11),
/// and running out of descriptors fails accepts and partition files alike. Returns the
/// soft limit now in force (`None` if it cannot be read).
fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    tracing::info!(open_files = lim.rlim_cur, "file descriptor limit");
    Some(lim.rlim_cur)
}

/// Run one node until SIGTERM or SIGINT; then finish the group commit in flight, checkpoint, return.
pub fn serve(a: ServeArgs) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&a.log))
        .with_writer(std::io::stderr)
        .init();
    #[cfg(feature = "mutants")]
    tracing::warn!(mutant = ?baton_log::mutant::picked(), "this build has deliberate bugs (feature mutants): for testing the checkers only");
    let fd_limit = raise_fd_limit();
    let mut cfg = baton_core::EngineConfig::new(a.data_dir.clone());
    cfg.checkpoint_interval = Duration::from_secs(a.checkpoint_interval_secs.max(1));
    cfg.wal_segment_bytes = a.wal_segment_mb.max(1) << 20;
    cfg.wal_preallocate = a.wal_preallocate;
    cfg.wal_recycle = a.wal_recycle_segments;
    cfg.wal_truncate_damaged_tail = a.wal_truncate_damaged_tail;
    cfg.partition_segment_bytes = a.partition_segment_mb.max(1) << 20;
    cfg.max_open_files = match fd_limit {
        Some(limit) => {
            let budget = baton_core::files::budget_for_fd_limit(a.max_open_files, limit);
            if budget < a.max_open_files {
                tracing::warn!(
                    max_open_files = a.max_open_files,
                    fd_limit = limit,
                    budget,
                    "--max-open-files lowered to fit the file descriptor limit"
                );
            }
            budget
        }
        None => a.max_open_files,
    };
    cfg.index_cache_bytes = a.index_cache_mb.max(1) << 20;
    if a.spare_partition_dirs > baton_core::provision::MAX_SPARE_DIRS {
        return Err(format!(
            "--spare-partition-dirs ({}) must be at most {}",
            a.spare_partition_dirs,
            baton_core::provision::MAX_SPARE_DIRS
        ));
    }
    cfg.spare_partition_dirs = a.spare_partition_dirs;
    cfg.compaction_max_keys = a.compaction_max_keys;
    cfg.limits = baton_core::limits::Limits {
        max_frame_bytes: a.max_frame_mb.saturating_mul(1 << 20),
        max_entry_bytes: a.max_entry_mb.saturating_mul(1 << 20),
        max_groups: a.max_groups,
        max_pop_bytes: a.max_pop_mb.saturating_mul(1 << 20),
        max_queues: a.max_queues,
        max_partitions: a.max_partitions,
        max_kv_bytes: a.max_kv_mb.saturating_mul(1 << 20),
        max_timer_bytes: a.max_timers_mb.saturating_mul(1 << 20),
        max_kafka_txn_ids: a.kafka_max_transactional_ids,
        max_aborted_txns: a.kafka_max_aborted_transactions,
        max_txn_partitions: a.kafka_max_transaction_partitions,
        max_http_txn_partitions: a.max_transaction_partitions,
        max_retry_distance: a.max_retry_distance,
        push_step: std::time::Duration::from_millis(a.push_step_ms),
    };
    cfg.limits.validate().map_err(|e| {
        format!(
            "--max-frame-mb/--max-entry-mb/--max-groups/--max-queues/--max-partitions/--max-kv-mb/--max-timers-mb/--push-step-ms: {e}"
        )
    })?;
    let request_memory = baton_core::request_memory::RequestMemory::new((a.max_request_memory_mb << 20) as usize);
    // Seven eighths: the last is kept for small requests (D87).
    if request_memory.largest() < a.kafka_max_frame_bytes.max(a.max_body_bytes) {
        return Err(format!(
            "--max-request-memory-mb ({} MiB) must hold the largest request in seven eighths of it: --kafka-max-frame-bytes ({}) and --max-body-bytes ({})",
            a.max_request_memory_mb, a.kafka_max_frame_bytes, a.max_body_bytes
        ));
    }
    if a.kafka_max_frame_bytes > cfg.limits.max_entry_bytes {
        return Err(format!(
            "--kafka-max-frame-bytes ({}) must not exceed --max-entry-mb ({} bytes): one produce is one entry",
            a.kafka_max_frame_bytes, cfg.limits.max_entry_bytes
        ));
    }
    cfg.max_queued_requests = a.max_queued_requests.max(1);
    // Before the engine starts, so a bad file changes nothing on disk.
    let sasl_users = match &a.kafka_sasl_users {
        Some(path) => {
            let users = baton_kafka::SaslUsers::load(path).map_err(|e| format!("--kafka-sasl-users {e}"))?;
            tracing::info!(path = %path.display(), users = users.len(), "Kafka listener requires SASL/PLAIN");
            Some(Arc::new(users))
        }
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let member = match (a.node_id, &a.peers) {
        (Some(id), Some(peers)) => Some(rt.block_on(start_member(&a, id, peers, cfg.clone()))?),
        _ => None,
    };
    let engine = match &member {
        Some(m) => m.engine.clone(),
        None => baton_core::Engine::start(cfg).map_err(|e| format!("start-up failed: {e}"))?,
    };
    let mut http = baton_http::HttpConfig {
        max_body_bytes: a.max_body_bytes,
        max_payload_bytes: a.max_payload_bytes,
        max_payload_depth: a.max_payload_depth,
        fetch_max_bytes: a.http_fetch_max_bytes.max(1),
        fetch_max_entries: a.http_fetch_max_entries.max(1),
        max_ack_error_bytes: a.max_ack_error_bytes,
        max_message_lookups: a.max_message_lookups as usize,
        trace_retention_secs: a.trace_retention_secs,
        ephemeral_max_queues: a.ephemeral_max_queues as usize,
        ephemeral_max_bytes: a.ephemeral_max_mb << 20,
        conn: baton_http::ConnConfig {
            idle_timeout: Duration::from_secs(a.http_idle_timeout_secs.max(1)),
            max_connections: a.http_max_connections.max(1),
            linger: Duration::from_secs(a.http_linger_secs),
            linger_bytes: a.http_linger_bytes,
        },
        request_memory: request_memory.clone(),
        request_read_timeout: Duration::from_secs(a.request_read_timeout_secs),
        default_batch: a.default_batch.max(1),
        ..Default::default()
    };
    let mut topology = None;
    let mut raft_metrics = None;
    if let Some(m) = &member {
        use baton_cluster::member::Member;
        let (node, engine) = (m.node.clone(), m.engine.clone());
        http.cluster = Some(baton_http::ClusterView(Arc::new(move || Member::view(&node, &engine))));
        let node = m.node.clone();
        http.forward = Some(baton_http::Forward {
            me: m.id,
            leader: Arc::new(move || Member::leader_addr(&node, "http")),
            connect_timeout: Duration::from_secs(1),
            answer_timeout: Duration::from_millis(
                http.max_wait_ms.max(a.raft_join_timeout_secs.saturating_mul(3000)) + a.raft_commit_timeout_ms,
            ) + Duration::from_secs(5),
        });
        let (node, log, changes) = (m.node.clone(), m.log.clone(), m.changes.clone());
        let within = Duration::from_secs(a.raft_join_timeout_secs);
        http.membership = Some(baton_http::MembershipAdmin(Arc::new(move |op| {
            let (node, log, changes) = (node.clone(), log.clone(), changes.clone());
            Box::pin(async move { change_membership(&node, &log, &changes, op, within).await })
        })));
        let node = m.node.clone();
        let (asks, creates) = (m.node.clone(), m.node.clone());
        let me = m.id;
        topology = Some((
            baton_kafka::ClusterTopology(Arc::new(move || kafka_topology(&node))),
            baton_kafka::LeaderAsk {
                producer_id: Arc::new(move || Box::pin(leader_producer_id(me, Member::leader_addr(&asks, "http")))),
                create_topic: Arc::new(move |name, partitions| {
                    Box::pin(leader_create_topic(me, Member::leader_addr(&creates, "http"), name, partitions))
                }),
            },
        ));
        let (node, engine) = (m.node.clone(), m.engine.clone());
        raft_metrics = Some(move |out: &mut String| Member::render_metrics(&node, &engine, out));
    }
    let eng = engine.clone();
    let kafka_engine = engine.clone();
    let leaving = member.as_ref().map(|m| m.leaving()).filter(|_| a.raft_handover_ms > 0);
    let handover = Duration::from_millis(a.raft_handover_ms);
    // HTTP and Kafka go on serving while the leader hands over: once another member leads,
    // what arrives here is forwarded to it.
    let stop = async move {
        shutdown_signal().await;
        if let Some(l) = leaving {
            let t0 = std::time::Instant::now();
            match l.run(handover).await {
                Ok(to) => tracing::info!(to, ms = t0.elapsed().as_millis() as u64, "leadership handed over"),
                Err(e) => tracing::info!(reason = %e, "no hand-over of leadership"),
            }
        }
    };
    rt.block_on(async move {
        let kafka = start_kafka(&a, kafka_engine, sasl_users, topology, request_memory).await?;
        let kafka_stats = kafka.as_ref().map(|(_, stats)| stats.clone());
        if kafka_stats.is_some() || raft_metrics.is_some() {
            http.extra_metrics = Some(baton_http::ExtraMetrics(Arc::new(move |out| {
                if let Some(s) = &kafka_stats {
                    s.render(out);
                }
                if let Some(r) = &raft_metrics {
                    r(out);
                }
            })));
        }
        let listener =
            tokio::net::TcpListener::bind(a.http_addr).await.map_err(|e| format!("bind {}: {e}", a.http_addr))?;
        tracing::info!(addr = %a.http_addr, data = %a.data_dir.display(), "baton serving HTTP");
        // Open long polls answer 204 at the stop signal instead of holding shutdown for their timeout.
        baton_http::serve(listener, eng, http, baton_http::Shutdown::default(), stop).await;
        let res: Result<(), String> = Ok(());
        // Stop taking Kafka connections; requests in flight finish or fail
        // with the engine, as HTTP's do.
        if let Some((k, _)) = kafka {
            k.abort();
        }
        res
    })?;
    // Answers already planned finish with the group commit in flight; then checkpoint.
    tracing::info!("shutting down: finishing the group commit in flight and checkpointing");
    match member {
        Some(m) => rt.block_on(m.shutdown()),
        None => engine.shutdown(),
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

/// A membership change asked for over HTTP, made by the cluster crate (D44), its refusal
/// as the HTTP answer.
async fn change_membership(
    node: &baton_replicate::node::Node<baton_cluster::applier::EngineApplier>,
    log: &baton_cluster::raft_log::RaftLog,
    changes: &baton_cluster::membership::Changes,
    op: baton_http::MembershipOp,
    within: Duration,
) -> baton_http::MembershipAnswer {
    use baton_cluster::membership::{self as ms, Refused};
    let r = match op {
        baton_http::MembershipOp::Add { id, raft_addr } => ms::add(node, log, changes, id, &raft_addr, within).await,
        baton_http::MembershipOp::Remove { id } => ms::remove(node, log, changes, id, within).await,
    };
    r.map_err(|e| match e {
        Refused::Bad(code, m) => (400, code, m),
        Refused::NotLeader(m) => (503, "not_leader", m),
        Refused::Conflict(code, m) => (409, code, m),
        Refused::NotFound(m) => (404, "member_not_found", m),
        Refused::Timeout(code, m) => (504, code, m),
        Refused::Unknown(m) => (503, "outcome_unknown", m),
    })
}

/// `ID=HOST:PORT,...` into ids and addresses; every id once.
fn parse_addrs(flag: &str, list: &str) -> Result<std::collections::BTreeMap<u64, String>, String> {
    let mut out = std::collections::BTreeMap::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part.split_once('=').ok_or_else(|| format!("{flag} {part}: expected ID=HOST:PORT"))?;
        let id: u64 = id.trim().parse().map_err(|_| format!("{flag} {part}: {id} is not a node id"))?;
        addr.trim().parse::<SocketAddr>().map_err(|e| format!("{flag} {part}: {addr}: {e}"))?;
        if out.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("{flag} names node {id} twice"));
        }
    }
    Ok(out)
}

/// `ID=HOST:PORT,...` into ids and Raft addresses; every id once, this node's among them.
pub fn parse_peers(peers: &str, me: u64) -> Result<std::collections::BTreeMap<u64, String>, String> {
    let out = parse_addrs("--peers", peers)?;
    if !out.contains_key(&me) {
        return Err(format!("--peers does not name this node (--node-id {me})"));
    }
    Ok(out)
}

async fn start_member(
    a: &ServeArgs,
    id: u64,
    peers: &str,
    cfg: baton_core::EngineConfig,
) -> Result<baton_cluster::member::Member, String> {
    let peers = parse_peers(peers, id)?;
    let listen: SocketAddr = peers[&id].parse().map_err(|e| format!("--peers: {e}"))?;
    let mut node = baton_replicate::node::NodeConfig::new(id, a.data_dir.join("raft"), listen);
    node.heartbeat = Duration::from_millis(a.raft_heartbeat_ms.max(1));
    node.election = (Duration::from_millis(a.raft_election_min_ms), Duration::from_millis(a.raft_election_max_ms));
    // A member's snapshot is its engine's checkpoint, asked for after each one (D43).
    node.snapshot_every = None;
    node.keep_behind_snapshot = a.raft_keep_entries;
    if let Some(r) = &a.raft_routes {
        node.routes = parse_addrs("--raft-routes", r)?;
    }
    let (_, kafka_host, kafka_port) = kafka_addrs(a)?;
    if kafka_port == 0 {
        return Err("a cluster member's Kafka port must be fixed (--kafka-addr or --kafka-advertised-addr): the other members name it".into());
    }
    let http = a.http_advertised_addr.clone().unwrap_or_else(|| a.http_addr.to_string());
    node.about = [("http".to_string(), http), ("kafka".to_string(), format!("{kafka_host}:{kafka_port}"))].into();
    node.log.wal.segment_bytes = cfg.wal_segment_bytes;
    node.log.wal.preallocate = cfg.wal_preallocate;
    node.stands = a.raft_stand_for_election;
    baton_core::clock::follow_beyond(a.clock_follow_ms);
    node.clock = Some(baton_replicate::network::Timekeeper {
        now: baton_core::clock::now,
        heard: baton_core::clock::heard_leader,
        save: baton_core::clock::save,
    });
    tracing::info!(node = id, raft = %listen, members = peers.len(), "starting as a cluster member");
    let commit_timeout = Duration::from_millis(a.raft_commit_timeout_ms.max(1));
    let member = baton_cluster::member::Member::start(cfg, node, peers, commit_timeout)
        .await
        .map_err(|e| format!("start-up failed: {e}"))?;
    if !a.raft_stand_for_election {
        tracing::info!("this member never stands for election (--raft-stand-for-election false)");
    }
    Ok(member)
}

type KafkaHandle = (tokio::task::JoinHandle<()>, std::sync::Arc<baton_kafka::KafkaStats>);

/// Bind and spawn the Kafka listener on this runtime, on the same engine.
/// Returns the accept loop's task and the listener's counters (for /metrics).
/// The Kafka listener's address, and the host and port it advertises.
fn kafka_addrs(a: &ServeArgs) -> Result<(SocketAddr, String, u16), String> {
    let addr = a.kafka_addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 9092)));
    let (host, port) = match &a.kafka_advertised_addr {
        Some(adv) => {
            let (h, p) =
                adv.rsplit_once(':').ok_or_else(|| format!("--kafka-advertised-addr {adv}: expected host:port"))?;
            let p: u16 = p.parse().map_err(|_| format!("--kafka-advertised-addr {adv}: bad port"))?;
            (h.trim_start_matches('[').trim_end_matches(']').to_string(), p)
        }
        // Port 0 means "the port the listener gets", filled in after binding.
        None => (addr.ip().to_string(), addr.port()),
    };
    Ok((addr, host, port))
}

/// What a member that does not lead asks its leader for, over the leader's HTTP listener
/// (D42): `path` posted with `body`, marked as forwarded so that a member that does not
/// lead either answers `not_leader` instead of passing it on.
async fn ask_leader(
    me: u64,
    leader: Option<(u64, String)>,
    path: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let (_, addr) = leader.ok_or("no leader is known")?;
    let c = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().map_err(|e| e.to_string())?;
    let r = c
        .post(format!("http://{addr}{path}"))
        .header("x-baton-forwarded-by", me.to_string())
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status();
    let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("the leader answered {status}: {v}"));
    }
    Ok(v)
}

/// A new Kafka producer id, from the leader (the answer to InitProducerId on a follower).
async fn leader_producer_id(me: u64, leader: Option<(u64, String)>) -> Result<i64, String> {
    let v = ask_leader(me, leader, "/api/v1/kafka/producer-id", serde_json::json!({})).await?;
    v["producerId"].as_i64().ok_or_else(|| format!("the leader answered {v}"))
}

/// The leader creates Kafka topic `name` (a follower was asked about it).
async fn leader_create_topic(
    me: u64,
    leader: Option<(u64, String)>,
    name: String,
    partitions: u32,
) -> Result<(), String> {
    let path = format!("/api/v1/kafka/topics/{name}");
    ask_leader(me, leader, &path, serde_json::json!({"partitions": partitions})).await.map(|_| ())
}

/// The Kafka view of the cluster (D42): members are brokers by node id, at the Kafka
/// addresses they told.
fn kafka_topology(node: &baton_replicate::node::Node<baton_cluster::applier::EngineApplier>) -> baton_kafka::Topology {
    let (me, leader, all) = baton_cluster::member::Member::addresses(node, "kafka");
    let brokers = all
        .into_iter()
        .filter_map(|(id, addr)| {
            let (h, p) = addr.rsplit_once(':')?;
            Some((
                i32::try_from(id).ok()?,
                h.trim_start_matches('[').trim_end_matches(']').to_string(),
                p.parse().ok()?,
            ))
        })
        .collect();
    let id = |n: u64| i32::try_from(n).unwrap_or(-1);
    let voters = baton_cluster::member::Member::voter_count(node);
    baton_kafka::Topology { me: id(me), leader: leader.map(id), brokers, voters }
}

async fn start_kafka(
    a: &ServeArgs,
    engine: baton_core::Engine,
    sasl_users: Option<Arc<baton_kafka::SaslUsers>>,
    cluster: Option<(baton_kafka::ClusterTopology, baton_kafka::LeaderAsk)>,
    request_memory: Arc<baton_core::request_memory::RequestMemory>,
) -> Result<Option<KafkaHandle>, String> {
    let explicit = a.kafka_addr.is_some();
    if a.kafka_max_uncompressed_batch_bytes > baton_kafka::MAX_UNCOMPRESSED_BATCH_BYTES {
        return Err(format!(
            "--kafka-max-uncompressed-batch-bytes {} is past {}, the most a stored batch may be read back at",
            a.kafka_max_uncompressed_batch_bytes,
            baton_kafka::MAX_UNCOMPRESSED_BATCH_BYTES
        ));
    }
    let (addr, host, port) = kafka_addrs(a)?;
    let cfg = baton_kafka::KafkaConfig {
        advertised_host: host,
        advertised_port: port as i32,
        auto_create: a.kafka_auto_create,
        default_partitions: a.kafka_default_partitions.max(1),
        max_frame_bytes: a.kafka_max_frame_bytes,
        max_message_bytes: a.kafka_max_message_bytes,
        max_uncompressed_batch_bytes: a.kafka_max_uncompressed_batch_bytes,
        fetch_max_bytes: a.kafka_fetch_max_bytes.max(1),
        producer_id_expiration: Duration::from_millis(a.kafka_producer_id_expiration_ms),
        connections_max_idle: Duration::from_millis(a.kafka_connections_max_idle_ms.max(1)),
        max_connections: a.kafka_max_connections,
        group_limits: baton_kafka::GroupLimits { max_groups: a.kafka_max_groups, max_members: a.kafka_group_max_size },
        // Leases are whole seconds: the lock is rounded up to one.
        share_record_lock: Duration::from_secs(a.kafka_share_record_lock_ms.div_ceil(1000).max(1)),
        share_limits: baton_kafka::ShareLimits {
            max_groups: a.kafka_max_groups,
            max_members: a.kafka_group_max_size,
            max_sessions: a.kafka_max_share_sessions,
            ..Default::default()
        },
        initial_rebalance_delay: Duration::from_millis(a.kafka_initial_rebalance_delay_ms),
        sasl_users,
        leader_ask: cluster.as_ref().map(|c| c.1.clone()),
        cluster: cluster.map(|c| c.0),
        request_memory,
        request_read_timeout: Duration::from_secs(a.request_read_timeout_secs),
        ..Default::default()
    };
    let server = match baton_kafka::KafkaServer::bind(addr, engine, cfg).await {
        Ok(s) => s,
        Err(e) if !explicit => {
            tracing::warn!(%addr, error = %e, "Kafka listener not started (default address busy); pass --kafka-addr");
            return Ok(None);
        }
        Err(e) => return Err(format!("bind Kafka listener {addr}: {e}")),
    };
    let bound = server.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(addr = %bound, advertised = %server.advertised(), "baton serving Kafka");
    let stats = server.stats();
    Ok(Some((tokio::spawn(server.run()), stats)))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
