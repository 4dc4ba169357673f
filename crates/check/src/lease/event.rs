//! One line of a lease-queue history, as it is written in the JSONL file
//! (docs/check.md "The history format" is the contract; this is its parser).
//!
//! Owns the wire shape only: every line is one flat JSON object whose `type`
//! says what it is, and every field a line may carry is an optional field of
//! [`Raw`]. Which fields a line must have is decided by the reader in
//! `model.rs`, not here. Must never interpret a line: no defaults that carry
//! meaning, no judgment.
//!
//! Flat rather than one serde enum per line kind: an internally tagged enum
//! buffers every line into an intermediate tree before dispatching, which
//! costs about twice the parse time on the million-message histories this
//! reads. Unknown fields are ignored so recorders may add their own.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// Every field any line kind may carry.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Raw<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// Operation id: pairs an invocation with its completion.
    pub id: Option<u64>,
    /// Recorder's monotonic clock, microseconds.
    pub t: Option<u64>,
    pub process: Option<u64>,
    /// The operation (invocations only).
    #[serde(borrow)]
    pub f: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub queue: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub topic: Option<Cow<'a, str>>,
    /// A queue partition's name, or a Kafka partition's number (either spelling).
    #[serde(borrow, deserialize_with = "name")]
    pub partition: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub group: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "name")]
    pub consumer: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "name")]
    pub lease: Option<Cow<'a, str>>,
    pub lease_seconds: Option<u64>,
    pub seconds: Option<u64>,
    pub batch: Option<u64>,
    pub auto_ack: Option<bool>,
    /// push (invocation): what is pushed; pop (completion): what was delivered.
    #[serde(borrow)]
    pub messages: Option<Vec<Item<'a>>>,
    #[serde(borrow)]
    pub acks: Option<Vec<Item<'a>>>,
    #[serde(borrow)]
    pub pushes: Option<Vec<Item<'a>>>,
    /// kafka_produce (invocation) and kafka_fetch (completion).
    #[serde(borrow)]
    pub records: Option<Vec<Item<'a>>>,
    pub producer: Option<Producer>,
    /// kafka_fetch/kafka_commit (invocation), kafka_offset_fetch (completion, -1 = none).
    pub offset: Option<i64>,
    pub base_offset: Option<u64>,
    /// push (completion): one per message, `queued` or `duplicate`.
    #[serde(borrow)]
    pub statuses: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow)]
    pub error: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub fault: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub phase: Option<Cow<'a, str>>,
    /// nemesis (end): false when the fault certainly did not restart the node.
    pub restarted: Option<bool>,
    /// final_log: the first offset still stored (retention); final_waiting: the group's start.
    pub first: Option<u64>,
    pub from: Option<u64>,
    #[serde(borrow)]
    pub entries: Option<Vec<Item<'a>>>,
    pub offsets: Option<Vec<u64>>,
    pub lease_ms: Option<u64>,
    pub retry_limit: Option<u32>,
    pub dead_letters: Option<bool>,
    pub dedup_window_ms: Option<u64>,
    pub version: Option<u32>,
}

/// A message, an ack, a pushed item, a record, a log entry or a DLQ entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Item<'a> {
    #[serde(borrow)]
    pub queue: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "name")]
    pub partition: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub group: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "name")]
    pub lease: Option<Cow<'a, str>>,
    pub offset: Option<u64>,
    #[serde(borrow, deserialize_with = "name")]
    pub txid: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "name")]
    pub payload: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub status: Option<Cow<'a, str>>,
}

/// An idempotent Kafka producer's identity and the sequence of its batch's first record.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, Hash)]
pub struct Producer {
    pub id: i64,
    pub epoch: i32,
    pub seq: i32,
}

/// Names may be written as strings or numbers (a Kafka partition is `0` or `"0"`,
/// a lease id is whatever the broker printed); both mean the same string.
fn name<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or an integer")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(V)
        }
    }
    d.deserialize_option(V)
}

/// Parse one line. `Err` names what is wrong with it (the reader adds the line number).
pub fn parse(line: &str) -> Result<Raw<'_>, String> {
    serde_json::from_str(line).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_may_be_numbers_and_unknown_fields_are_ignored() {
        let r = parse(r#"{"type":"invoke","id":3,"t":9,"f":"kafka_fetch","topic":"k","partition":2,"x":[1]}"#).unwrap();
        assert_eq!(r.kind, "invoke");
        assert_eq!(r.partition.as_deref(), Some("2"));
        assert_eq!(r.id, Some(3));
        let r = parse(r#"{"type":"ok","id":3,"t":10,"lease":17,"messages":[{"offset":4,"txid":"a\"b"}]}"#).unwrap();
        assert_eq!(r.lease.as_deref(), Some("17"));
        assert_eq!(r.messages.unwrap()[0].txid.as_deref(), Some("a\"b"));
    }

    #[test]
    fn a_broken_line_is_an_error() {
        assert!(parse(r#"{"type":"invoke","id":"x"}"#).is_err());
        assert!(parse("not json").is_err());
        assert!(parse(r#"{"id":1}"#).is_ok(), "a line without a type is the reader's to refuse");
    }
}
