//! What a JSON value the HTTP API stores may be, and how stored bytes are
//! shown as JSON.
//!
//! Owns the one check every stored JSON value passes (push payloads, the
//! transaction's pushes, KV values, timer payloads) and the rendering of
//! stored bytes. Must never let a value in that the API could not render
//! again, and rendering must never fail or panic, whatever bytes are stored
//! (a Kafka producer writes anything).
//!
//! Why a separate check: parsing a body into `RawValue` (to store the bytes
//! as they came) only checks the syntax. `1e400`, a lone surrogate escape
//! (`"\ud800"`) or 128 levels of nesting pass it, but building a
//! `serde_json::Value` from them fails, so the views that build one (fetch,
//! message, DLQ, KV) failed on those records on every call.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The deepest nesting serde_json builds a `Value` from (its recursion
/// limit is 128 levels), hence the most `--max-payload-depth` may be.
pub const MAX_RENDER_DEPTH: u32 = 127;

/// Default of `--max-payload-depth`: far above what real payloads nest, far
/// below what breaks a parser with a recursion limit.
pub const DEFAULT_MAX_DEPTH: u32 = 64;

/// `Ok` when `text` is one JSON value that serde_json can turn into a
/// `Value`: syntax, numbers in f64 range, strings of whole code points, and
/// at most `max_depth` levels of arrays and objects. The error says which.
pub fn check(text: &str, max_depth: u32) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    Level { left: max_depth.min(MAX_RENDER_DEPTH), max: max_depth.min(MAX_RENDER_DEPTH) }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

/// Visits a value without building it; `left` is how many more levels of
/// nesting may open below this point.
#[derive(Clone, Copy)]
struct Level {
    left: u32,
    max: u32,
}

impl Level {
    fn enter<E: de::Error>(self) -> Result<Level, E> {
        match self.left.checked_sub(1) {
            Some(left) => Ok(Level { left, max: self.max }),
            None => Err(E::custom(format_args!("nested deeper than {} levels", self.max))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while a.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        // A key is a string: visiting it checks its escapes like a value's.
        while a.next_key_seed(Level { left: 0, max: self.max })?.is_some() {
            a.next_value_seed(inner)?;
        }
        Ok(())
    }
}

fn string_json(s: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(s).unwrap_or_else(|_| null())
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// Stored bytes as JSON: a JSON value that passes [`check`] as it is, any
/// other bytes (not JSON, out of range, too deep, not UTF-8) as a JSON
/// string of their text (invalid UTF-8 replaced), absent as `null`.
pub fn payload_json(value: Option<&[u8]>) -> Box<RawValue> {
    let Some(v) = value else {
        return null();
    };
    match std::str::from_utf8(v) {
        Ok(s) => text_json(s),
        Err(_) => string_json(&String::from_utf8_lossy(v)),
    }
}

/// Like [`payload_json`], for text already known to be UTF-8 (KV values).
pub fn text_json(s: &str) -> Box<RawValue> {
    if check(s, MAX_RENDER_DEPTH).is_ok() {
        if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(s) {
            return raw;
        }
    }
    string_json(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn accepts_what_a_value_can_hold() {
        for ok in ["1", "-0.5e-400", "123456789012345678901234567890", r#"{"a":[1,{"b":"\u00e9"}]}"#, "null"] {
            assert_eq!(check(ok, 64), Ok(()), "{ok}");
            assert!(serde_json::from_str::<serde_json::Value>(ok).is_ok(), "{ok}");
        }
        assert_eq!(check(&nested(127), 127), Ok(()));
        assert!(serde_json::from_str::<serde_json::Value>(&nested(127)).is_ok());
    }

    #[test]
    fn refuses_what_a_value_cannot_hold() {
        let too_deep = nested(128);
        let long_int = "9".repeat(400);
        for bad in ["1e400", "-1e400", long_int.as_str(), r#""\ud800""#, r#"{"\udc00":1}"#, too_deep.as_str()] {
            assert!(check(bad, 127).is_err(), "{bad}");
            assert!(serde_json::from_str::<serde_json::Value>(bad).is_err(), "{bad} is not a Value either");
        }
        assert!(check(&nested(65), 64).unwrap_err().contains("nested deeper than 64 levels"));
        assert_eq!(check(&nested(64), 64), Ok(()));
        assert!(check(r#"{"a":{"b":[]}}"#, 2).is_err(), "objects count as levels");
        assert!(check("1 2", 64).is_err(), "one value only");
    }

    #[test]
    fn renders_anything_without_failing() {
        assert_eq!(payload_json(Some(b"{\"a\":1}")).get(), "{\"a\":1}");
        assert_eq!(payload_json(Some(b"plain text")).get(), "\"plain text\"");
        assert_eq!(payload_json(Some(b"1e400")).get(), "\"1e400\"");
        assert_eq!(payload_json(Some(br#""\ud800""#)).get(), r#""\"\\ud800\"""#);
        assert_eq!(payload_json(Some(b"\xff")).get(), "\"\u{fffd}\"");
        assert_eq!(payload_json(None).get(), "null");
        let deep = nested(200);
        let shown = payload_json(Some(deep.as_bytes()));
        assert_eq!(serde_json::from_str::<String>(shown.get()).unwrap(), deep);
        // Whatever is rendered can be built into a Value (what json! does).
        for v in [b"1e400".as_slice(), deep.as_bytes(), br#"[1,"\udfff"]"#] {
            serde_json::to_value(payload_json(Some(v))).unwrap();
        }
    }
}
