//! Reading stored records for the JSON views: times as ISO-8601 and the
//! batch cache. Values are shown by `payload::payload_json`.

use baton_core::store::ReadSpan;
use baton_wire::{Checked, StoredRecord};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};

pub fn iso_ms(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let (y, mo, d) = (t.year(), t.month() as u8, t.day());
    format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", t.hour(), t.minute(), t.second(), t.millisecond())
}

pub fn iso_us(us: u64) -> String {
    iso_ms((us / 1000) as i64)
}

/// To the microsecond: a time a client hands back (`changed_since`'s `safeTime`) must not
/// round, or the writes of its last millisecond are listed twice.
pub fn iso_micros(us: u64) -> String {
    let ms = iso_ms((us / 1000) as i64);
    format!("{}{:03}Z", &ms[..ms.len() - 1], us % 1000)
}

/// RFC 3339 → microseconds since the epoch.
pub fn parse_iso(s: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1000).ok()
}

/// Stored batches recently read. Consumers usually pop fewer messages than
/// a producer pushed at once, so the next pops of a partition read the same
/// batch again; keeping it saves the read and its copy. Shared by the
/// runtime threads (a per-thread cache thrashed once more partitions were
/// busy than it had entries). Keyed by the span's identity (partition,
/// segment, position: stored bytes there never change while the process
/// runs), so it holds no file open: partition files stay within
/// `--max-open-files` (D29).
struct BatchCache {
    map: HashMap<((u32, u64, u32), u64), Cached>,
    order: VecDeque<((u32, u64, u32), u64)>,
}

/// The span's length, the bytes (CRCs checked when read).
type Cached = (u32, Arc<Checked<Vec<u8>>>);

/// At most this many batches of at most this size: 32 MiB at worst.
const CACHE_ENTRIES: usize = 512;
const CACHE_MAX_BATCH: u32 = 64 * 1024;

static CACHE: LazyLock<Mutex<BatchCache>> =
    LazyLock::new(|| Mutex::new(BatchCache { map: HashMap::new(), order: VecDeque::new() }));

fn read_span(s: &ReadSpan) -> Result<Arc<Checked<Vec<u8>>>, String> {
    let key = (s.id, s.pos);
    if let Some((len, b)) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).map.get(&key) {
        if *len == s.len {
            return Ok(b.clone());
        }
    }
    let b = s.read().map_err(|e| format!("read stored batch: {e}"))?;
    let b = Arc::new(Checked::new(b).map_err(|e| {
        let why = format!("stored batch at byte {} of a partition segment: {e}", s.pos);
        baton_core::damage::report(&why);
        why
    })?);
    if s.len <= CACHE_MAX_BATCH {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if c.map.insert(key, (s.len, b.clone())).is_none() {
            c.order.push_back(key);
        }
        while c.order.len() > CACHE_ENTRIES {
            let old = c.order.pop_front().expect("longer than the bound");
            c.map.remove(&old);
        }
    }
    Ok(b)
}

/// Read and decode the records of the given spans; keep those `want` accepts.
pub fn read_records(spans: &[ReadSpan], want: impl Fn(u64) -> bool) -> Result<Vec<StoredRecord>, String> {
    let mut out = Vec::new();
    for s in spans {
        let bytes = read_span(s)?;
        out.extend(bytes.decode_where(&want).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip() {
        let us = 1_700_000_000_123_456;
        assert_eq!(iso_micros(us), "2023-11-14T22:13:20.123456Z");
        assert_eq!(parse_iso(&iso_micros(us)), Some(us));
    }

    #[test]
    fn iso_round_trip() {
        let s = iso_ms(1_700_000_000_123);
        assert_eq!(s, "2023-11-14T22:13:20.123Z");
        assert_eq!(parse_iso(&s), Some(1_700_000_000_123_000));
        assert_eq!(parse_iso("yesterday"), None);
    }
}
