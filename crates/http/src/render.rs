//! Turning stored records into Queen's JSON shapes: times as ISO-8601, values
//! as the JSON they were pushed as (or a string when a Kafka producer wrote
//! something that is not JSON).

use baton_core::store::ReadSpan;
use baton_wire::StoredRecord;
use serde_json::value::RawValue;

pub fn iso_ms(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let (y, mo, d) = (t.year(), t.month() as u8, t.day());
    format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", t.hour(), t.minute(), t.second(), t.millisecond())
}

pub fn iso_us(us: u64) -> String {
    iso_ms((us / 1000) as i64)
}

/// RFC 3339 → microseconds since the epoch.
pub fn parse_iso(s: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1000).ok()
}

/// Read and decode the records of the given spans; keep those `want` accepts.
pub fn read_records(spans: &[ReadSpan], want: impl Fn(u64) -> bool) -> Result<Vec<StoredRecord>, String> {
    let mut out = Vec::new();
    for s in spans {
        let bytes = s.read().map_err(|e| format!("read stored batch: {e}"))?;
        let recs = baton_wire::decode_batches(&bytes).map_err(|e| e.to_string())?;
        out.extend(recs.into_iter().filter(|r| want(r.offset)));
    }
    Ok(out)
}

/// The payload as JSON: stored JSON as is, other bytes as a JSON string.
pub fn payload_json(value: Option<&[u8]>) -> Box<RawValue> {
    let Some(v) = value else {
        return RawValue::from_string("null".into()).expect("null is JSON");
    };
    if let Ok(s) = std::str::from_utf8(v) {
        if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(s) {
            return raw;
        }
        return serde_json::value::to_raw_value(s).expect("a string is JSON");
    }
    serde_json::value::to_raw_value(&String::from_utf8_lossy(v)).expect("a string is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        let s = iso_ms(1_700_000_000_123);
        assert_eq!(s, "2023-11-14T22:13:20.123Z");
        assert_eq!(parse_iso(&s), Some(1_700_000_000_123_000));
        assert_eq!(parse_iso("yesterday"), None);
    }

    #[test]
    fn payloads_stay_json() {
        assert_eq!(payload_json(Some(b"{\"a\":1}")).get(), "{\"a\":1}");
        assert_eq!(payload_json(Some(b"plain text")).get(), "\"plain text\"");
        assert_eq!(payload_json(None).get(), "null");
    }
}
