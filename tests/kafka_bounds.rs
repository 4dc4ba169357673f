//! Bounds of the Kafka front door against hostile requests, through the real
//! binary: a batch's record count is verified before anything is stored
//! (compressed too), and what one request may cost stays bounded.

mod common;
mod kafka_util;

use common::Server;
use kafka_protocol::records::Compression;
use kafka_util::*;

const CORRUPT_MESSAGE: i16 = 2;
const MESSAGE_TOO_LARGE: i16 = 10;
const INVALID_RECORD: i16 = 87;

/// Issue #12 item 3: a ~90-byte gzip batch claiming 5,000,000 records was
/// answered success and moved the partition end to 5,000,000.
#[test]
fn a_compressed_batch_claiming_more_records_than_it_holds_is_refused_and_not_stored() {
    let (_s, port) = Server::start_kafka(&[]);
    let mut k = Kafka::connect(port);
    k.metadata(&["claims"]);
    for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd, Compression::None] {
        let real = batch(&[b"one"], c, None);
        let lie = claim_records(&real, 5_000_000);
        let r = k.produce("claims", 0, lie, -1);
        assert_eq!(r.error_code, INVALID_RECORD, "{c:?}: {r:?}");
        let why = r.error_message.map(|m| m.to_string()).unwrap_or_default();
        assert!(why.contains("5000000 records"), "{c:?}: {why}");
        assert_eq!(k.list_offset("claims", 0, -1).offset, 0, "{c:?}: nothing stored");
    }
    // Claiming fewer than it holds is a lie too.
    let three = batch(&[b"a", b"b", b"c"], Compression::Gzip, None);
    let r = k.produce("claims", 0, claim_records(&three, 2), -1);
    assert_eq!(r.error_code, INVALID_RECORD, "{r:?}");
    // A compressed batch that does not decompress is corrupt.
    let mut junk = three.to_vec();
    let n = junk.len();
    junk[61..n].fill(0x5a);
    let r = k.produce("claims", 0, claim_records(&junk.into(), 3), -1);
    assert_eq!(r.error_code, CORRUPT_MESSAGE, "{r:?}");
    assert_eq!(k.list_offset("claims", 0, -1).offset, 0, "nothing stored");
    // The truth goes through, and is read back whole.
    let r = k.produce("claims", 0, three, -1);
    assert_eq!((r.error_code, r.base_offset), (0, 0));
    assert_eq!(k.list_offset("claims", 0, -1).offset, 3);
    let f = k.fetch("claims", 0, 0, 0);
    assert_eq!(records(f.records.as_ref().unwrap()).len(), 3);
}

/// A compressed batch may expand to at most --kafka-max-uncompressed-batch-bytes.
#[test]
fn a_compressed_batch_that_expands_past_the_bound_is_refused() {
    let (_s, port) = Server::start_kafka(&["--kafka-max-uncompressed-batch-bytes", "100000"]);
    let mut k = Kafka::connect(port);
    k.metadata(&["bomb"]);
    let zeros = vec![0u8; 200_000];
    let bomb = batch(&[&zeros], Compression::Zstd, None);
    assert!(bomb.len() < 1000, "{}", bomb.len());
    let r = k.produce("bomb", 0, bomb, -1);
    assert_eq!(r.error_code, MESSAGE_TOO_LARGE, "{r:?}");
    let why = r.error_message.map(|m| m.to_string()).unwrap_or_default();
    assert!(why.contains("100000"), "{why}");
    assert_eq!(k.list_offset("bomb", 0, -1).offset, 0, "nothing stored");
    let fits = vec![0u8; 50_000];
    assert_eq!(k.produce("bomb", 0, batch(&[&fits], Compression::Zstd, None), -1).error_code, 0);
}
