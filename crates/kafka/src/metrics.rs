//! The Kafka listener's counters (atomics, cheap on the request path) and
//! their Prometheus text. The server hands `KafkaStats::render` to the HTTP
//! crate's /metrics, so this crate needs no HTTP and HTTP no Kafka.
//!
//! Per API: requests, answers that carried an error code, every error code
//! carried (Kafka's ErrorsPerSec) and a latency histogram from the frame
//! being read to its answer being ready. Per listener: connections (open,
//! accepted, closed by reason), produce and fetch bytes, SASL outcomes.

use crate::versions::SUPPORTED;
use baton_log::Histogram;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Seconds; Fetch long polls (up to 30 s) land in the top buckets.
const LATENCY_BOUNDS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// Why a connection ended (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed it between requests.
    Client,
    /// A read or write failed (reset, broken pipe).
    Io,
    /// A frame or request that could not be taken (bad length, unknown API,
    /// undecodable version, malformed header or body).
    BadFrame,
    /// A request other than ApiVersions/SaslHandshake/SaslAuthenticate
    /// before SASL authentication.
    Unauthenticated,
    /// SASL failed: wrong password, another mechanism, or out of order.
    SaslFailed,
    /// A request the server could not answer (an API without a handler, an
    /// answer that would not encode).
    Unanswerable,
    /// Nothing read and nothing in flight for --kafka-connections-max-idle-ms.
    Idle,
    /// Closed as accepted: --kafka-max-connections were open.
    OverLimit,
    /// A frame's bytes did not all arrive within --request-read-timeout-secs (D87).
    ReadTimeout,
}

impl CloseReason {
    const ALL: [CloseReason; 9] = [
        CloseReason::Client,
        CloseReason::Io,
        CloseReason::BadFrame,
        CloseReason::Unauthenticated,
        CloseReason::SaslFailed,
        CloseReason::Unanswerable,
        CloseReason::Idle,
        CloseReason::OverLimit,
        CloseReason::ReadTimeout,
    ];

    pub fn label(self) -> &'static str {
        match self {
            CloseReason::Client => "client",
            CloseReason::Io => "io_error",
            CloseReason::BadFrame => "bad_frame",
            CloseReason::Unauthenticated => "unauthenticated",
            CloseReason::SaslFailed => "sasl_failed",
            CloseReason::Unanswerable => "unanswerable",
            CloseReason::Idle => "idle",
            CloseReason::OverLimit => "connection_limit",
            CloseReason::ReadTimeout => "read_timeout",
        }
    }
}

/// One API's counters.
struct ApiStats {
    requests: AtomicU64,
    /// Answers carrying at least one non-zero error code, and requests that
    /// closed the connection instead of being answered.
    errors: AtomicU64,
    latency: Histogram,
}

impl ApiStats {
    fn new() -> ApiStats {
        ApiStats { requests: AtomicU64::new(0), errors: AtomicU64::new(0), latency: Histogram::new(LATENCY_BOUNDS) }
    }
}

/// Counters of the Kafka listener (rendered by whoever serves metrics).
pub struct KafkaStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Request frames cut (including ones that then failed to decode).
    pub requests: AtomicU64,
    /// Connections closed for a frame that could not be taken: bad length,
    /// unknown API key, undecodable version, malformed header or body.
    pub bad_frames: AtomicU64,
    pub unsupported_versions: AtomicU64,
    pub produce_bytes: AtomicU64,
    pub fetch_bytes: AtomicU64,
    /// Fetch answers cut to their first batch: the request memory could not hold them whole (D88).
    pub fetch_trimmed: AtomicU64,
    pub sasl_successes: AtomicU64,
    pub sasl_failures: AtomicU64,
    /// Share groups (D49): sessions and members now, records acquired and settled.
    pub share_sessions: AtomicU64,
    pub share_members: AtomicU64,
    pub share_acquired: AtomicU64,
    pub share_acks: AtomicU64,
    /// Acquisition locks renewed (KIP-1222): one per partition lease extended.
    pub share_renewals: AtomicU64,
    closed: [AtomicU64; CloseReason::ALL.len()],
    /// One per SUPPORTED entry, in its order, then one for any other API.
    apis: Box<[ApiStats]>,
    /// (API key, error code) -> how many times an answer carried it. Touched
    /// only when an answer carries an error, so a lock is cheap enough.
    codes: Mutex<BTreeMap<(i16, i16), u64>>,
}

impl Default for KafkaStats {
    fn default() -> Self {
        KafkaStats {
            connections: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            bad_frames: AtomicU64::new(0),
            unsupported_versions: AtomicU64::new(0),
            produce_bytes: AtomicU64::new(0),
            fetch_bytes: AtomicU64::new(0),
            fetch_trimmed: AtomicU64::new(0),
            sasl_successes: AtomicU64::new(0),
            sasl_failures: AtomicU64::new(0),
            share_sessions: AtomicU64::new(0),
            share_members: AtomicU64::new(0),
            share_acquired: AtomicU64::new(0),
            share_acks: AtomicU64::new(0),
            share_renewals: AtomicU64::new(0),
            closed: Default::default(),
            apis: (0..=SUPPORTED.len()).map(|_| ApiStats::new()).collect(),
            codes: Mutex::new(BTreeMap::new()),
        }
    }
}

impl std::fmt::Debug for KafkaStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaStats")
            .field("connections", &self.connections)
            .field("requests", &self.requests)
            .field("open", &self.open())
            .finish_non_exhaustive()
    }
}

fn slot(api: ApiKey) -> usize {
    SUPPORTED.iter().position(|(k, _, _)| *k == api).unwrap_or(SUPPORTED.len())
}

impl KafkaStats {
    pub fn bump(c: &AtomicU64) -> u64 {
        c.fetch_add(1, Relaxed) + 1
    }

    /// Connections accepted and not yet closed.
    pub fn open(&self) -> u64 {
        let closed: u64 = self.closed.iter().map(|c| c.load(Relaxed)).sum();
        self.connections.load(Relaxed).saturating_sub(closed)
    }

    pub fn closed(&self, why: CloseReason) -> u64 {
        self.closed[CloseReason::ALL.iter().position(|r| *r == why).unwrap_or(0)].load(Relaxed)
    }

    pub(crate) fn close(&self, why: CloseReason) {
        if let Some(i) = CloseReason::ALL.iter().position(|r| *r == why) {
            Self::bump(&self.closed[i]);
        }
    }

    pub(crate) fn request(&self, api: ApiKey) {
        Self::bump(&self.apis[slot(api)].requests);
    }

    pub fn requests_of(&self, api: ApiKey) -> u64 {
        self.apis[slot(api)].requests.load(Relaxed)
    }

    pub fn errors_of(&self, api: ApiKey) -> u64 {
        self.apis[slot(api)].errors.load(Relaxed)
    }

    pub(crate) fn latency(&self, api: ApiKey, took: Duration) {
        self.apis[slot(api)].latency.observe(took.as_secs_f64());
    }

    /// A request that closed the connection instead of being answered.
    pub(crate) fn unanswered(&self, api: ApiKey) {
        Self::bump(&self.apis[slot(api)].errors);
    }

    /// Count the error codes an answer carries.
    pub(crate) fn answered(&self, api: ApiKey, body: &ResponseKind) {
        let mut found: Vec<i16> = Vec::new();
        error_codes(body, &mut |c| {
            if c != 0 {
                found.push(c);
            }
        });
        if found.is_empty() {
            return;
        }
        Self::bump(&self.apis[slot(api)].errors);
        let mut codes = self.codes.lock();
        for c in found {
            *codes.entry((api as i16, c)).or_insert(0) += 1;
        }
    }

    /// Append the Prometheus text of every counter to `out`.
    pub fn render(&self, out: &mut String) {
        let c = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        };
        let _ = writeln!(
            out,
            "# HELP baton_kafka_connections_open Kafka connections open now.\n# TYPE baton_kafka_connections_open gauge\nbaton_kafka_connections_open {}",
            self.open()
        );
        c(out, "baton_kafka_connections_total", "Kafka connections accepted.", self.connections.load(Relaxed));
        let _ = writeln!(
            out,
            "# HELP baton_kafka_connections_closed_total Kafka connections closed, by reason.\n# TYPE baton_kafka_connections_closed_total counter"
        );
        for (r, n) in CloseReason::ALL.iter().zip(&self.closed) {
            let _ =
                writeln!(out, "baton_kafka_connections_closed_total{{reason=\"{}\"}} {}", r.label(), n.load(Relaxed));
        }
        c(
            out,
            "baton_kafka_bad_frames_total",
            "Kafka connections closed for a frame that could not be taken.",
            self.bad_frames.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_unsupported_versions_total",
            "Kafka requests answered UNSUPPORTED_VERSION.",
            self.unsupported_versions.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_produce_bytes_total",
            "Record-batch bytes received in Kafka Produce requests.",
            self.produce_bytes.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_fetch_bytes_total",
            "Record-batch bytes sent in Kafka Fetch answers.",
            self.fetch_bytes.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_fetch_trimmed_total",
            "Kafka Fetch answers cut to their first batch because the request memory could not hold them whole (D88).",
            self.fetch_trimmed.load(Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP baton_kafka_sasl_authentications_total Kafka SASL authentications, by result.\n# TYPE baton_kafka_sasl_authentications_total counter\nbaton_kafka_sasl_authentications_total{{result=\"success\"}} {}\nbaton_kafka_sasl_authentications_total{{result=\"failure\"}} {}",
            self.sasl_successes.load(Relaxed),
            self.sasl_failures.load(Relaxed)
        );
        let g = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        g(out, "baton_kafka_share_sessions", "Kafka share sessions open now.", self.share_sessions.load(Relaxed));
        g(out, "baton_kafka_share_members", "Kafka share group members now.", self.share_members.load(Relaxed));
        c(
            out,
            "baton_kafka_share_acquired_total",
            "Records acquired by Kafka share consumers (each under a Baton lease).",
            self.share_acquired.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_share_acknowledged_total",
            "Records Kafka share consumers settled (accept, release or reject).",
            self.share_acks.load(Relaxed),
        );
        c(
            out,
            "baton_kafka_share_renewals_total",
            "Acquisition locks Kafka share consumers renewed (each a Baton lease extended).",
            self.share_renewals.load(Relaxed),
        );
        let names: Vec<String> =
            SUPPORTED.iter().map(|(k, _, _)| format!("{k:?}")).chain(std::iter::once("other".to_string())).collect();
        let _ = writeln!(out, "# HELP baton_kafka_requests_total Kafka requests decoded, by API.\n# TYPE baton_kafka_requests_total counter");
        for (n, a) in names.iter().zip(self.apis.iter()) {
            let _ = writeln!(out, "baton_kafka_requests_total{{api=\"{n}\"}} {}", a.requests.load(Relaxed));
        }
        let _ = writeln!(out, "# HELP baton_kafka_request_errors_total Kafka answers carrying an error code (or not given), by API.\n# TYPE baton_kafka_request_errors_total counter");
        for (n, a) in names.iter().zip(self.apis.iter()) {
            let _ = writeln!(out, "baton_kafka_request_errors_total{{api=\"{n}\"}} {}", a.errors.load(Relaxed));
        }
        let _ = writeln!(out, "# HELP baton_kafka_error_codes_total Error codes carried in Kafka answers (one per topic, partition or group that carried it), by API and error.\n# TYPE baton_kafka_error_codes_total counter");
        for ((api, code), n) in self.codes.lock().iter() {
            let api = ApiKey::try_from(*api).map_or_else(|_| api.to_string(), |k| format!("{k:?}"));
            let name = match ResponseError::try_from_code(*code) {
                Some(ResponseError::Unknown(_)) | None => "Unknown".to_string(),
                Some(e) => format!("{e:?}"),
            };
            let _ =
                writeln!(out, "baton_kafka_error_codes_total{{api=\"{api}\",code=\"{code}\",error=\"{name}\"}} {n}");
        }
        let name = "baton_kafka_request_duration_seconds";
        let _ = writeln!(out, "# HELP {name} From a Kafka request read to its answer ready, by API (Fetch includes its wait).\n# TYPE {name} histogram");
        for (n, a) in names.iter().zip(self.apis.iter()) {
            let h = &a.latency;
            if h.count() == 0 {
                continue;
            }
            let counts = h.bucket_counts();
            let mut cum = 0;
            for (b, k) in h.bounds().iter().zip(&counts) {
                cum += k;
                let _ = writeln!(out, "{name}_bucket{{api=\"{n}\",le=\"{b}\"}} {cum}");
            }
            cum += counts.last().copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{api=\"{n}\",le=\"+Inf\"}} {cum}");
            let _ = writeln!(out, "{name}_sum{{api=\"{n}\"}} {}\n{name}_count{{api=\"{n}\"}} {}", h.sum(), h.count());
        }
    }
}

/// Every error code an answer carries: top level, per topic, per partition,
/// per group. Zeros included (the caller skips them).
fn error_codes(body: &ResponseKind, f: &mut dyn FnMut(i16)) {
    use ResponseKind as R;
    match body {
        R::Produce(r) => r.responses.iter().flat_map(|t| &t.partition_responses).for_each(|p| f(p.error_code)),
        R::Fetch(r) => {
            f(r.error_code);
            r.responses.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code));
        }
        R::ListOffsets(r) => r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code)),
        R::Metadata(r) => {
            f(r.error_code);
            for t in &r.topics {
                f(t.error_code);
                t.partitions.iter().for_each(|p| f(p.error_code));
            }
        }
        R::OffsetCommit(r) => r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code)),
        R::OffsetFetch(r) => {
            f(r.error_code);
            r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code));
            for g in &r.groups {
                f(g.error_code);
                g.topics.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code));
            }
        }
        R::FindCoordinator(r) => {
            f(r.error_code);
            r.coordinators.iter().for_each(|c| f(c.error_code));
        }
        R::JoinGroup(r) => f(r.error_code),
        R::Heartbeat(r) => f(r.error_code),
        R::LeaveGroup(r) => {
            f(r.error_code);
            r.members.iter().for_each(|m| f(m.error_code));
        }
        R::SyncGroup(r) => f(r.error_code),
        R::DescribeGroups(r) => r.groups.iter().for_each(|g| f(g.error_code)),
        R::ListGroups(r) => f(r.error_code),
        R::SaslHandshake(r) => f(r.error_code),
        R::ApiVersions(r) => f(r.error_code),
        R::CreateTopics(r) => r.topics.iter().for_each(|t| f(t.error_code)),
        R::DeleteTopics(r) => r.responses.iter().for_each(|t| f(t.error_code)),
        R::InitProducerId(r) => f(r.error_code),
        R::DescribeConfigs(r) => r.results.iter().for_each(|t| f(t.error_code)),
        R::SaslAuthenticate(r) => f(r.error_code),
        R::CreatePartitions(r) => r.results.iter().for_each(|t| f(t.error_code)),
        R::DeleteGroups(r) => r.results.iter().for_each(|t| f(t.error_code)),
        R::ShareGroupHeartbeat(r) => f(r.error_code),
        R::ShareGroupDescribe(r) => r.groups.iter().for_each(|g| f(g.error_code)),
        R::ShareFetch(r) => {
            f(r.error_code);
            r.responses.iter().flat_map(|t| &t.partitions).for_each(|p| {
                f(p.error_code);
                f(p.acknowledge_error_code)
            });
        }
        R::ShareAcknowledge(r) => {
            f(r.error_code);
            r.responses.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
    use kafka_protocol::messages::{HeartbeatResponse, ProduceResponse};

    #[test]
    fn error_codes_are_counted_per_api_and_code() {
        let s = KafkaStats::default();
        let ok = ResponseKind::Heartbeat(HeartbeatResponse::default());
        s.answered(ApiKey::Heartbeat, &ok);
        assert_eq!(s.errors_of(ApiKey::Heartbeat), 0);
        let parts = vec![
            PartitionProduceResponse::default().with_error_code(3),
            PartitionProduceResponse::default(),
            PartitionProduceResponse::default().with_error_code(3),
        ];
        let bad = ResponseKind::Produce(
            ProduceResponse::default()
                .with_responses(vec![TopicProduceResponse::default().with_partition_responses(parts)]),
        );
        s.answered(ApiKey::Produce, &bad);
        assert_eq!(s.errors_of(ApiKey::Produce), 1, "one answer with errors");
        let mut out = String::new();
        s.render(&mut out);
        assert!(
            out.contains(
                "baton_kafka_error_codes_total{api=\"Produce\",code=\"3\",error=\"UnknownTopicOrPartition\"} 2"
            ),
            "{out}"
        );
        assert!(out.contains("baton_kafka_request_errors_total{api=\"Produce\"} 1"));
    }

    #[test]
    fn connections_requests_and_latency_render() {
        let s = KafkaStats::default();
        KafkaStats::bump(&s.connections);
        KafkaStats::bump(&s.connections);
        s.close(CloseReason::Unauthenticated);
        assert_eq!(s.open(), 1);
        s.request(ApiKey::Fetch);
        s.latency(ApiKey::Fetch, Duration::from_millis(3));
        s.request(ApiKey::OffsetForLeaderEpoch);
        let mut out = String::new();
        s.render(&mut out);
        for want in [
            "baton_kafka_connections_open 1",
            "baton_kafka_connections_total 2",
            "baton_kafka_connections_closed_total{reason=\"unauthenticated\"} 1",
            "baton_kafka_requests_total{api=\"Fetch\"} 1",
            "baton_kafka_requests_total{api=\"other\"} 1",
            "baton_kafka_request_duration_seconds_bucket{api=\"Fetch\",le=\"0.0025\"} 0",
            "baton_kafka_request_duration_seconds_bucket{api=\"Fetch\",le=\"0.005\"} 1",
            "baton_kafka_request_duration_seconds_count{api=\"Fetch\"} 1",
        ] {
            assert!(out.contains(want), "missing {want} in\n{out}");
        }
        assert!(!out.contains("duration_seconds_count{api=\"Produce\"}"), "no histogram for APIs never seen");
        // Every line is a comment or `name{labels} value`.
        for l in out.lines().filter(|l| !l.starts_with('#')) {
            let v = l.rsplit(' ').next().unwrap();
            assert!(v.parse::<f64>().is_ok(), "bad line {l}");
        }
    }
}
