//! Wiring only: configuration, start-up, signals and shutdown. Owns no
//! behaviour of its own; everything it starts lives in a lower crate.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address of the HTTP API.
    #[arg(long, env = "BATON_HTTP_ADDR", default_value = "127.0.0.1:6632")]
    pub http_addr: SocketAddr,
    /// Directory holding the WAL, partition segments and checkpoints.
    #[arg(long, env = "BATON_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Seconds between checkpoints; recovery replays at most this much WAL.
    #[arg(long, env = "BATON_CHECKPOINT_INTERVAL_SECS", default_value_t = 30)]
    pub checkpoint_interval_secs: u64,
    /// Size at which a WAL segment is closed and a new one started, in MiB.
    #[arg(long, env = "BATON_WAL_SEGMENT_MB", default_value_t = 64)]
    pub wal_segment_mb: u64,
    /// Size at which a partition segment file is closed, in MiB.
    #[arg(long, env = "BATON_PARTITION_SEGMENT_MB", default_value_t = 64)]
    pub partition_segment_mb: u64,
    /// Largest HTTP request body accepted; larger bodies get 413.
    #[arg(long, env = "BATON_MAX_BODY_BYTES", default_value_t = 16 << 20)]
    pub max_body_bytes: usize,
    /// Largest single message payload accepted; larger payloads get 413.
    #[arg(long, env = "BATON_MAX_PAYLOAD_BYTES", default_value_t = 1 << 20)]
    pub max_payload_bytes: usize,
    /// Messages per pop when the client does not say (Queen's autopilot).
    #[arg(long, env = "BATON_DEFAULT_BATCH", default_value_t = 100)]
    pub default_batch: u32,
    /// Log filter (tracing env-filter syntax).
    #[arg(long, env = "BATON_LOG", default_value = "info")]
    pub log: String,
}

/// Run one node until SIGTERM or SIGINT; then finish the group commit in flight, checkpoint, return.
pub fn serve(a: ServeArgs) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&a.log))
        .with_writer(std::io::stderr)
        .init();
    let mut cfg = baton_core::EngineConfig::new(a.data_dir.clone());
    cfg.checkpoint_interval = Duration::from_secs(a.checkpoint_interval_secs.max(1));
    cfg.wal_segment_bytes = a.wal_segment_mb.max(1) << 20;
    cfg.partition_segment_bytes = a.partition_segment_mb.max(1) << 20;
    let engine = baton_core::Engine::start(cfg).map_err(|e| format!("start-up failed: {e}"))?;
    let http = baton_http::HttpConfig {
        max_body_bytes: a.max_body_bytes,
        max_payload_bytes: a.max_payload_bytes,
        default_batch: a.default_batch.max(1),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let eng = engine.clone();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.http_addr)
            .await
            .map_err(|e| format!("bind {}: {e}", a.http_addr))?;
        tracing::info!(addr = %a.http_addr, data = %a.data_dir.display(), "baton serving HTTP");
        axum::serve(listener, baton_http::router(eng, http))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })?;
    // Answers already planned finish with the group commit in flight; then checkpoint.
    tracing::info!("shutting down: finishing the group commit in flight and checkpointing");
    engine.shutdown();
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(())
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
