//! The node's metrics: request counters, group-commit batch sizes, fdatasync
//! latency, queue depth and consumer lag, then whatever the server hands in
//! through `HttpConfig::extra_metrics` (the Kafka listener's). Written once, as
//! Prometheus text (`/metrics/prometheus`, and `/metrics` for a scraper that asks
//! for text); `/metrics` otherwise answers the same samples as JSON, which is
//! what Queen serves there and its client's `admin.metrics()` reads (issue 16).

use crate::App;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use baton_core::QueryResult;
use baton_log::Histogram;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bounds hit without an error answer (process-wide, like the error counts).
pub(crate) static FETCH_CLAMPED: AtomicU64 = AtomicU64::new(0);
pub(crate) static ACK_ERROR_CUT: AtomicU64 = AtomicU64::new(0);

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    series(out, name, "", h);
}

/// One histogram's samples; `labels` is empty or `k="v",...` without braces.
fn series(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let (sep, braced) = if labels.is_empty() { ("", String::new()) } else { (",", format!("{{{labels}}}")) };
    let mut cum = 0u64;
    let counts = h.bucket_counts();
    for (b, c) in h.bounds().iter().zip(&counts) {
        cum += c;
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cum}");
    }
    cum += counts.last().copied().unwrap_or(0);
    let _ = writeln!(
        out,
        "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cum}\n{name}_sum{braced} {}\n{name}_count{braced} {}",
        h.sum(),
        h.count()
    );
}

fn counter(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
}

/// CPU time per thread name (`baton-planner`, `baton-wal`, `tokio-rt-worker`
/// summed, ...) from /proc, so the cost of each stage can be read per request
/// from two scrapes without instrumenting the hot path. Linux only; elsewhere
/// the family is simply absent.
fn thread_cpu(out: &mut String) {
    let by_name = thread_cpu_ns();
    let _ = writeln!(
        out,
        "# HELP baton_thread_cpu_seconds_total CPU time of the process's threads, by thread name.\n# TYPE baton_thread_cpu_seconds_total counter"
    );
    for (name, ns) in by_name {
        let _ = writeln!(out, "baton_thread_cpu_seconds_total{{thread=\"{}\"}} {:.6}", label(&name), ns as f64 / 1e9);
    }
}

/// CPU nanoseconds by thread name (threads of one name summed); empty off Linux.
pub(crate) fn thread_cpu_ns() -> std::collections::BTreeMap<String, u64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return by_name };
    for t in dir.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let Ok(stat) = std::fs::read_to_string(t.path().join("schedstat")) else { continue };
        let ns: u64 = stat.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
        *by_name.entry(comm.trim().to_string()).or_default() += ns;
    }
    by_name
}

fn request_times(out: &mut String, app: &App) {
    let name = "baton_http_request_duration_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} From an HTTP request routed to its answer ready, by method and route (a long poll includes its wait).\n# TYPE {name} histogram"
    );
    for (method, route, h) in app.times.snapshot() {
        series(out, name, &format!("method=\"{method}\",route=\"{}\"", label(&route)), &h);
    }
}

fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub async fn prometheus(State(app): State<App>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text(&app).await).into_response()
}

/// `/metrics`: Prometheus text to a client whose `Accept` names it (a Prometheus server
/// sends `text/plain;version=0.0.4` or `application/openmetrics-text`), JSON otherwise.
pub async fn negotiated(State(app): State<App>, headers: axum::http::HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.contains("text/plain") || accept.contains("openmetrics") {
        return prometheus(State(app)).await;
    }
    axum::Json(crate::metrics_json::from_text(&text(&app).await)).into_response()
}

async fn text(app: &App) -> String {
    let mut out = String::new();
    let c = app.engine.counters();
    counter(&mut out, "baton_pushed_messages_total", "Messages accepted by push.", c.pushed.load(Relaxed));
    counter(&mut out, "baton_popped_messages_total", "Messages delivered by pop.", c.popped.load(Relaxed));
    counter(&mut out, "baton_acked_messages_total", "Acknowledgements accepted.", c.acked.load(Relaxed));
    counter(&mut out, "baton_log_entries_total", "State-machine entries written.", c.entries.load(Relaxed));
    counter(&mut out, "baton_checkpoints_total", "Checkpoints written.", c.checkpoints.load(Relaxed));
    counter(
        &mut out,
        "baton_checkpoint_failures_total",
        "Checkpoints that failed for a passing reason (out of descriptors, disk full) and were left to the next one.",
        c.checkpoint_failures.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_checkpoint_bytes_total",
        "Bytes of checkpoint files written.",
        c.checkpoint_bytes.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_checkpoint_syncfs_total",
        "Checkpoints that synced the partition files' filesystem at once (more than 512 files to sync).",
        c.checkpoint_syncfs.load(Relaxed),
    );
    let _ = writeln!(
        out,
        "# HELP baton_checkpoint_pause_seconds The planner's pause for the last checkpoint's copy of the state.\n# TYPE baton_checkpoint_pause_seconds gauge\nbaton_checkpoint_pause_seconds {:.6}",
        c.checkpoint_pause_us.load(Relaxed) as f64 / 1e6
    );
    let _ = writeln!(
        out,
        "# HELP baton_checkpoint_pause_max_seconds The planner's longest pause for a checkpoint's copy of the state since start.\n# TYPE baton_checkpoint_pause_max_seconds gauge\nbaton_checkpoint_pause_max_seconds {:.6}",
        c.checkpoint_pause_max_us.load(Relaxed) as f64 / 1e6
    );
    let f = app.engine.files();
    let _ = writeln!(
        out,
        "# HELP baton_partition_files_open Partition files open now (at most --max-open-files, beyond pinned ones).\n# TYPE baton_partition_files_open gauge\nbaton_partition_files_open {}",
        f.open_files()
    );
    let _ = writeln!(
        out,
        "# HELP baton_partition_files_budget Partition files kept open at most: --max-open-files, lowered to fit the descriptor limit.\n# TYPE baton_partition_files_budget gauge\nbaton_partition_files_budget {}",
        f.max_open()
    );
    let fs = &f.stats;
    for (name, help, v) in [
        ("baton_partition_file_opens_total", "Partition files opened.", &fs.opens),
        ("baton_partition_file_evictions_total", "Partition files closed because --max-open-files were open.", &fs.evictions),
        (
            "baton_partition_file_open_failures_total",
            "Partition files that could not be opened (after evicting half the open set on EMFILE).",
            &fs.open_failures,
        ),
        (
            "baton_partition_spare_dirs_taken_total",
            "New partitions whose directory was a spare one renamed into place (D81).",
            &fs.spare_dirs_taken,
        ),
        (
            "baton_partition_spare_dirs_missed_total",
            "New partitions that found no spare directory ready (D81): their files came from spare files or were made on the planner.",
            &fs.spare_dirs_missed,
        ),
    ] {
        counter(&mut out, name, help, v.load(Relaxed));
    }
    let cs = &f.compaction;
    for (name, help, v) in [
        ("baton_compaction_passes_total", "Compaction passes over a partition's closed segments (D50).", &cs.passes),
        (
            "baton_compaction_segments_rewritten_total",
            "Segments rewritten without older records of a key and swapped in by the planner.",
            &cs.segments_rewritten,
        ),
        (
            "baton_compaction_records_removed_total",
            "Records compaction dropped (an older record of a key it holds a newer one of).",
            &cs.records_removed,
        ),
        ("baton_compaction_bytes_reclaimed_total", "Segment bytes compaction freed.", &cs.bytes_reclaimed),
        (
            "baton_compaction_capped_passes_total",
            "Passes that met --compaction-max-keys (keys past it were kept).",
            &cs.capped_passes,
        ),
        (
            "baton_compaction_failures_total",
            "Passes that failed (I/O or a damaged batch); their segments stay as they were.",
            &cs.failures,
        ),
    ] {
        counter(&mut out, name, help, v.load(Relaxed));
    }
    counter(
        &mut out,
        "baton_index_cache_hits_total",
        "Index block lookups served from memory.",
        f.stats.block_hits.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_index_cache_misses_total",
        "Index block lookups read from a file.",
        f.stats.block_misses.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_index_txid_reads_total",
        "Transaction-id hashes read back from .txid records (acks and transactions by transactionId).",
        f.stats.txid_reads.load(Relaxed),
    );
    counter(&mut out, "baton_transactions_total", "Transactions committed.", c.txns.load(Relaxed));
    counter(&mut out, "baton_planner_commands_total", "Requests judged by the planner.", c.commands.load(Relaxed));
    counter(
        &mut out,
        "baton_planner_overloaded_total",
        "Requests answered overloaded (429) because --max-queued-requests were already waiting for the planner.",
        c.overloaded.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_frames_held_total",
        "Frames the planner held open (at most 2 ms) while a cluster leader's own copy of its last one was not yet durable (D75).",
        c.frames_held.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_holds_timed_out_total",
        "Held frames let go only because the hold reached its 2 ms bound (D75).",
        c.holds_timed_out.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_frames_written_inline_total",
        "Frames whose partition-file writes (at most 4 KiB, nothing earlier outstanding) the planner made itself instead of the appender thread (D78).",
        c.frames_written_inline.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_push_continuations_total",
        "Steps of a push planned after the requests that queued behind it, once its earlier steps took --push-step-ms of planner time (D80).",
        c.push_continuations.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_produces_deferred_total",
        "Kafka produces that would make new partition files, planned in a later pass of the planner because this pass had spent --push-step-ms on such files, or queued behind one for the same partition (D80).",
        c.produces_deferred.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_transactions_waited_total",
        "Transactions (HTTP, and a Kafka EndTxn or fencing InitProducerId) that waited for the provisioner to make spare directories for their new partitions before they were planned (D81, D82).",
        c.txns_waited.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_planner_transaction_wait_recounts_total",
        "Times a waiting transaction's new partitions were counted again: only once as many spare directories are ready as it needed, or when its wait is over (D82).",
        c.txn_wait_recounts.load(Relaxed),
    );
    thread_cpu(&mut out);
    let w = app.engine.wal_stats();
    counter(
        &mut out,
        "baton_wal_batches_total",
        "Group commits (one write and one fdatasync each).",
        w.batches.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_wal_batches_by_submitter_total",
        "Of the group commits, those written and synced by the thread that submitted them while the WAL thread was idle (D84).",
        w.batches_here.load(Relaxed),
    );
    counter(&mut out, "baton_wal_bytes_total", "Bytes written to the WAL.", w.bytes.load(Relaxed));
    counter(
        &mut out,
        "baton_wal_rotation_failures_total",
        "New WAL segments that could not be made (the batch went on in the current segment).",
        w.rotation_failures.load(Relaxed),
    );
    let _ = writeln!(
        out,
        "# HELP baton_wal_durable_index The last log entry known to be on disk (every answer is at or below it).\n# TYPE baton_wal_durable_index gauge\nbaton_wal_durable_index {}",
        w.durable_index.load(Relaxed)
    );
    histogram(&mut out, "baton_wal_batch_frames", "Frames per group commit.", &w.batch_entries);
    histogram(&mut out, "baton_wal_fdatasync_seconds", "fdatasync latency.", &w.sync_seconds);
    let failed = app.engine.failure().is_some() as u8;
    let _ = writeln!(out, "# HELP baton_storage_damaged_reads_total Reads that found stored bytes failing their checksum (never served).\n# TYPE baton_storage_damaged_reads_total counter\nbaton_storage_damaged_reads_total {}", baton_core::damage::count());
    let _ = writeln!(out, "# HELP baton_storage_failed 1 once a WAL write or sync failed.\n# TYPE baton_storage_failed gauge\nbaton_storage_failed {failed}");
    if let Ok(QueryResult::Sizes {
        queues,
        partitions,
        groups,
        kv_bytes,
        timer_bytes,
        kafka_txn_ids,
        kafka_txns_open,
        kafka_aborted_max,
    }) = app.engine.query(baton_core::Query::Sizes).await
    {
        for (name, help, v) in [
            ("baton_queues", "Queues that exist (at most --max-queues).", queues as u64),
            (
                "baton_partitions",
                "Partitions that exist, over all queues (at most --max-partitions).",
                partitions as u64,
            ),
            ("baton_consumer_groups", "Consumer groups that exist (at most --max-groups).", groups as u64),
            ("baton_kv_bytes", "Bytes of KV entries held (at most --max-kv-mb).", kv_bytes),
            ("baton_timer_bytes", "Bytes of pending timers held (at most --max-timers-mb).", timer_bytes),
            (
                "baton_kafka_transactional_ids",
                "Kafka transactional ids known (at most --kafka-max-transactional-ids).",
                kafka_txn_ids as u64,
            ),
            ("baton_kafka_transactions_open", "Kafka transactions open now.", kafka_txns_open as u64),
            (
                "baton_kafka_aborted_transactions_max",
                "Most aborted Kafka transactions one partition remembers (at most --kafka-max-aborted-transactions).",
                kafka_aborted_max as u64,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
    }
    if let Ok(qs) = app.engine.queue_views(None, None).await {
        let _ =
            writeln!(out, "# HELP baton_queue_depth Messages waiting in queue mode.\n# TYPE baton_queue_depth gauge");
        for q in &qs {
            let _ = writeln!(out, "baton_queue_depth{{queue=\"{}\"}} {}", label(&q.name), q.depth);
        }
    }
    if let Ok(QueryResult::Groups(gs)) = app.engine.query(baton_core::Query::Groups).await {
        let _ = writeln!(out, "# HELP baton_consumer_lag Messages a group has not settled, per partition.\n# TYPE baton_consumer_lag gauge");
        for g in &gs {
            let _ = writeln!(
                out,
                "baton_consumer_lag{{group=\"{}\",queue=\"{}\",partition=\"{}\"}} {}",
                label(&g.name),
                label(&g.queue),
                label(&g.partition),
                g.lag
            );
        }
    }
    let cs = &app.cfg.conn_stats;
    let _ = writeln!(out, "# HELP baton_http_connections_open HTTP connections open now.\n# TYPE baton_http_connections_open gauge\nbaton_http_connections_open {}", cs.open.load(Relaxed));
    counter(
        &mut out,
        "baton_http_connections_refused_total",
        "HTTP connections answered 503 too_many_connections (--http-max-connections).",
        cs.refused.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_http_connections_idle_closed_total",
        "HTTP connections closed after --http-idle-timeout-secs without a request.",
        cs.idle_closed.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_http_accept_errors_total",
        "Failed accepts of HTTP connections (EMFILE and the like; the listener backs off and goes on).",
        cs.accept_errors.load(Relaxed),
    );
    let mem = &app.cfg.request_memory;
    let _ = writeln!(
        out,
        "# HELP baton_request_memory_bytes Bytes of client requests (Kafka frames, HTTP bodies) being read or handled now (D87).\n# TYPE baton_request_memory_bytes gauge\nbaton_request_memory_bytes {}",
        mem.held()
    );
    let _ = writeln!(
        out,
        "# HELP baton_request_memory_limit_bytes --max-request-memory-mb in bytes.\n# TYPE baton_request_memory_limit_bytes gauge\nbaton_request_memory_limit_bytes {}",
        mem.limit()
    );
    counter(
        &mut out,
        "baton_request_memory_waits_total",
        "Requests that waited, unread, for request memory to be given back (--max-request-memory-mb).",
        mem.waits(),
    );
    if let Some(fw) = &app.forwarder {
        counter(
            &mut out,
            "baton_http_forwarded_total",
            "Requests this member passed to the leader because it does not lead (D42).",
            fw.stats.forwarded.load(Relaxed),
        );
        counter(
            &mut out,
            "baton_http_forward_unreachable_total",
            "Forwards that failed before anything reached the leader (answered 503 leader_unreachable).",
            fw.stats.connect_failed.load(Relaxed),
        );
        counter(
            &mut out,
            "baton_http_forward_unknown_total",
            "Forwards whose outcome is unknown: sent, then no answer (answered 503 outcome_unknown).",
            fw.stats.unknown.load(Relaxed),
        );
    }
    let _ = writeln!(out, "# HELP baton_http_errors_total Error answers of the HTTP API by status and code (each bound's refusal has its own code).\n# TYPE baton_http_errors_total counter");
    for ((status, code), n) in crate::error::answered() {
        let _ = writeln!(out, "baton_http_errors_total{{status=\"{status}\",code=\"{code}\"}} {n}");
    }
    counter(
        &mut out,
        "baton_http_fetch_clamped_total",
        "Fetches that asked for more bytes than an entry's share of --http-fetch-max-bytes.",
        FETCH_CLAMPED.load(Relaxed),
    );
    counter(
        &mut out,
        "baton_http_ack_error_cut_total",
        "Ack error texts cut to --max-ack-error-bytes.",
        ACK_ERROR_CUT.load(Relaxed),
    );
    let (queues, messages, bytes) = app.ephemeral.gauges();
    let _ = writeln!(
        out,
        "# HELP baton_ephemeral_queues Ephemeral queues held in memory (--ephemeral-max-queues).\n# TYPE baton_ephemeral_queues gauge\nbaton_ephemeral_queues {queues}\n# HELP baton_ephemeral_messages Messages of ephemeral queues, in memory only.\n# TYPE baton_ephemeral_messages gauge\nbaton_ephemeral_messages {messages}\n# HELP baton_ephemeral_bytes Payload bytes of ephemeral queues (--ephemeral-max-mb).\n# TYPE baton_ephemeral_bytes gauge\nbaton_ephemeral_bytes {bytes}"
    );
    request_times(&mut out, app);
    if let Some(extra) = &app.cfg.extra_metrics {
        (extra.0)(&mut out);
    }
    out
}
