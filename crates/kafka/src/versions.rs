//! The one table of supported API keys and versions. It builds the
//! ApiVersions answer, gates every request the connection decodes, and renders
//! the table in docs/kafka.md (a unit test keeps the docs in step), so what we
//! advertise, what we accept and what we document cannot drift apart.

use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

/// (API, lowest version, highest version) that Baton answers. Every range lies
/// inside what the codec can decode (`ApiKey::valid_versions`), so a request
/// just past our maximum can still be decoded and refused politely.
///
/// Why the caps: Fetch stops at 12 and Produce at 12 because later versions
/// name topics by id only; ListOffsets stops at 6 because 7+ adds lookups by
/// max timestamp and tiered storage that we do not track; OffsetCommit,
/// OffsetFetch and InitProducerId stop before the KIP-848/KIP-939 fields;
/// AddPartitionsToTxn stops at 3 (4+ is broker to broker). Produce 12, EndTxn 5
/// and TxnOffsetCommit 5 are transactions v2 (KIP-890), which the ApiVersions
/// answer finalizes as the `transaction.version` feature (D48).
///
/// The share APIs (KIP-932): ShareFetch and ShareAcknowledge up to version 2, which adds
/// renewing an acquisition lock (KIP-1222, a lease extended) and the record-limit acquire
/// mode (KIP-1206), D71; `share.version` 1 is finalized beside them (D49).
///
/// SaslHandshake and SaslAuthenticate are listed whether or not SASL is
/// turned on, as a Kafka broker lists them on every listener; without SASL
/// they answer ILLEGAL_SASL_STATE (see `sasl`).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 6),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 2),
    (ApiKey::ShareAcknowledge, 1, 2),
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
];

/// What the table says about one API key.
pub fn range(api: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED.iter().find(|(k, _, _)| *k == api).map(|(_, lo, hi)| (*lo, *hi))
}

pub fn is_supported(api: ApiKey, version: i16) -> bool {
    range(api).is_some_and(|(lo, hi)| (lo..=hi).contains(&version))
}

/// The ApiVersions body. `error_code` is UNSUPPORTED_VERSION for the KIP-511
/// fallback (a client asking with a newer ApiVersions than we know), which is
/// answered at v0 so any client can read the table and retry.
pub fn api_versions_response(error_code: i16) -> ApiVersionsResponse {
    let keys = SUPPORTED
        .iter()
        .map(|(k, lo, hi)| ApiVersion::default().with_api_key(*k as i16).with_min_version(*lo).with_max_version(*hi))
        .collect();
    // Clients use transactions v2 (KIP-890) only when the broker finalizes this feature
    // at 2 (v3+ answers carry it; older ones drop the tagged fields).
    let name = kafka_protocol::protocol::StrBytes::from_static_str;
    let features = [(TRANSACTION_VERSION, 2), (SHARE_VERSION, 1)];
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(keys)
        .with_supported_features(
            features
                .iter()
                .map(|(f, v)| {
                    SupportedFeatureKey::default().with_name(name(f)).with_min_version(0).with_max_version(*v)
                })
                .collect(),
        )
        .with_finalized_features_epoch(1)
        .with_finalized_features(
            features
                .iter()
                .map(|(f, v)| {
                    FinalizedFeatureKey::default()
                        .with_name(name(f))
                        .with_min_version_level(*v)
                        .with_max_version_level(*v)
                })
                .collect(),
        )
}

const TRANSACTION_VERSION: &str = "transaction.version";
/// Share groups (KIP-932) are served (D49).
const SHARE_VERSION: &str = "share.version";

/// The table as Markdown, for docs/kafka.md.
pub fn render_table() -> String {
    let mut out = String::from("| API | key | versions |\n|---|---:|---|\n");
    for (k, lo, hi) in SUPPORTED {
        out.push_str(&format!("| {k:?} | {} | {lo}–{hi} |\n", *k as i16));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_is_decodable_by_the_codec() {
        for (k, lo, hi) in SUPPORTED {
            let v = k.valid_versions();
            assert!(lo <= hi, "{k:?}");
            assert!(v.min <= *lo && *hi <= v.max, "{k:?} {lo}-{hi} outside codec {v}");
        }
    }

    #[test]
    fn no_duplicates() {
        for (i, (k, _, _)) in SUPPORTED.iter().enumerate() {
            assert!(SUPPORTED[i + 1..].iter().all(|(o, _, _)| o != k), "{k:?} twice");
        }
    }

    /// docs/kafka.md carries the table rendered from SUPPORTED, verbatim.
    #[test]
    fn docs_carry_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kafka.md");
        let docs = std::fs::read_to_string(path).expect("docs/kafka.md exists");
        let table = render_table();
        assert!(docs.contains(&table), "docs/kafka.md is out of date; paste this table into it:\n{table}");
    }
}
