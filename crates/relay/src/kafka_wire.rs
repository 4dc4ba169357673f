//! The Kafka mode's connections to the brokers (one per address, SASL/PLAIN when asked)
//! and what it knows of them: the `--to-kafka` bootstrap list, each topic's partition
//! leaders, coordinators. Owns only finding and reaching brokers; must never send a
//! transactional request itself (kafka_out.rs owns those and their order).

use baton_client::kafka::{KafkaConn, KafkaError};
use std::collections::HashMap;
use std::time::Duration;

/// Every request on a relay's Kafka connection is bounded by this.
pub(crate) const KAFKA_TIMEOUT: Duration = Duration::from_secs(10);
const LEADER_NOT_AVAILABLE: i16 = 5;
const TOPIC_ALREADY_EXISTS: i16 = 36;
const NOT_CONTROLLER: i16 = 41;

/// The connections (one per broker address) and the topics known so far.
pub(crate) struct Wire {
    /// The `--to-kafka` brokers; metadata and coordinators are asked of `bootstrap[boot_at]`,
    /// and of the next one when it does not answer (D63, as `--to` in the Baton mode).
    pub bootstrap: Vec<String>,
    pub boot_at: usize,
    /// SASL/PLAIN for every connection, when the listener demands it.
    pub sasl: Option<baton_client::kafka::SaslPlain>,
    pub conns: HashMap<String, KafkaConn>,
    /// topic -> leader address per partition.
    pub topics: HashMap<String, Vec<String>>,
}

impl Wire {
    pub async fn conn(&mut self, addr: &str) -> Result<&mut KafkaConn, KafkaError> {
        if self.conns.get(addr).is_some_and(KafkaConn::is_broken) {
            self.conns.remove(addr);
        }
        if !self.conns.contains_key(addr) {
            let c = KafkaConn::connect_with(addr, KAFKA_TIMEOUT, self.sasl.as_ref()).await?;
            self.conns.insert(addr.to_string(), c);
        }
        self.conns.get_mut(addr).ok_or_else(|| KafkaError::Io(format!("no connection to {addr}")))
    }

    /// A connection to a bootstrap broker: the current one, else the first of the others
    /// that answers (which becomes current).
    pub async fn boot(&mut self) -> Result<&mut KafkaConn, KafkaError> {
        let n = self.bootstrap.len().max(1);
        let mut last = KafkaError::Io("no --to-kafka broker".into());
        for _ in 0..n {
            let b = self.bootstrap[self.boot_at % n].clone();
            match self.conn(&b).await {
                Ok(_) => return self.conn(&b).await,
                Err(e) => {
                    eprintln!("baton relay: kafka {b} did not answer ({e}); trying the next --to-kafka broker");
                    last = e;
                    self.boot_at = (self.boot_at + 1) % n;
                }
            }
        }
        Err(last)
    }

    pub async fn coordinator(&mut self, key: &str, key_type: i8) -> Result<String, KafkaError> {
        let (_, host, port) = self.boot().await?.find_coordinator(key, key_type).await?;
        Ok(format!("{host}:{port}"))
    }

    /// The leaders of `topic`'s partitions, creating it with `partitions` if missing.
    pub async fn topic(&mut self, topic: &str, partitions: i32) -> Result<Vec<String>, KafkaError> {
        if let Some(t) = self.topics.get(topic) {
            return Ok(t.clone());
        }
        let c = self.boot().await?;
        // The positions are kept for ever: an unmarked last transaction is settled from its
        // position record, which must not age out while its bucket sits idle.
        let keep: &[(&str, &str)] = if topic.ends_with("-relay-positions") { &[("retention.ms", "-1")] } else { &[] };
        match c.create_topic_with(topic, partitions, keep).await {
            Ok(()) => {}
            Err(e) if e.code() == Some(TOPIC_ALREADY_EXISTS) => {}
            // A broker that is not the controller (a Baton member that does not lead) sends
            // the client to the one Metadata names, as Kafka's admin clients go.
            Err(e) if e.code() == Some(NOT_CONTROLLER) => {
                let (id, brokers) = c.controller().await?;
                let ctl = brokers.iter().find(|b| b.0 == id).map(|b| format!("{}:{}", b.1, b.2));
                let Some(ctl) = ctl else { return Err(e) };
                match self.conn(&ctl).await?.create_topic_with(topic, partitions, keep).await {
                    Ok(()) => {}
                    Err(e) if e.code() == Some(TOPIC_ALREADY_EXISTS) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        let meta = self.boot().await?.metadata(topic).await?;
        if meta.error != 0 {
            return Err(KafkaError::Code { code: meta.error, message: Some(format!("metadata of {topic}")) });
        }
        let mut parts = meta.partitions.clone();
        parts.sort_by_key(|p| p.index);
        let mut leaders = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let addr = meta.brokers.iter().find(|b| b.0 == p.leader).map(|b| format!("{}:{}", b.1, b.2));
            match addr {
                Some(a) if p.index == i as i32 && p.error == 0 => leaders.push(a),
                _ => return Err(KafkaError::Code { code: LEADER_NOT_AVAILABLE, message: Some(topic.to_string()) }),
            }
        }
        if leaders.is_empty() {
            return Err(KafkaError::Code { code: LEADER_NOT_AVAILABLE, message: Some(topic.to_string()) });
        }
        self.topics.insert(topic.to_string(), leaders.clone());
        Ok(leaders)
    }
}
