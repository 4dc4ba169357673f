//! Fetch sessions (KIP-227), in memory. A session remembers the partitions a
//! consumer fetches and what it was last told about each, so incremental
//! fetches name only what changed and answer only what changed.
//!
//! Sessions are lost on restart (and evicted when the cache is full or idle);
//! the client then gets FETCH_SESSION_ID_NOT_FOUND and starts a new one with a
//! full fetch, which is what the protocol intends.

use crate::errors::*;
use indexmap::IndexMap;
use kafka_protocol::messages::FetchRequest;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

/// Kafka's max.incremental.fetch.session.cache.slots default.
const MAX_SESSIONS: usize = 1000;
const IDLE: Duration = Duration::from_secs(120);
const FINAL_EPOCH: i32 = -1;
const INITIAL_EPOCH: i32 = 0;

pub type Key = (String, i32);

/// One partition to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub max_bytes: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No session (old versions, epoch -1, or no room): answer everything.
    Sessionless,
    /// A new session: answer everything, remember what was said.
    Full(i32),
    /// Answer only partitions whose news differs from the last answer.
    Incremental(i32),
}

impl Mode {
    pub fn session_id(self) -> i32 {
        match self {
            Mode::Sessionless => 0,
            Mode::Full(id) | Mode::Incremental(id) => id,
        }
    }
}

/// What one partition's answer said, to decide whether the next one is news.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Said {
    pub high_watermark: i64,
    pub log_start: i64,
}

struct Cached {
    offset: i64,
    max_bytes: i32,
    said: Option<Said>,
}

struct Session {
    next_epoch: i32,
    parts: IndexMap<Key, Cached>,
    used: Instant,
}

pub struct FetchSessions {
    inner: Mutex<Inner>,
}

struct Inner {
    map: HashMap<i32, Session>,
    rng: u64,
}

impl Inner {
    /// A fresh non-zero id. Seeded per process so ids from before a restart
    /// are unlikely to name a new session by accident.
    fn new_id(&mut self) -> i32 {
        loop {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let id = (self.rng as i32) & i32::MAX;
            if id != 0 && !self.map.contains_key(&id) {
                return id;
            }
        }
    }
}

fn next_epoch(e: i32) -> i32 {
    if e == i32::MAX {
        1
    } else {
        e + 1
    }
}

/// The partitions a request names, each once: a partition named again takes
/// the later offset and size in the earlier one's place (Kafka collects them
/// into one map the same way). Without this, one partition named hundreds
/// of times was read, and answered, hundreds of times.
fn wants_of(req: &FetchRequest) -> Vec<Want> {
    let mut seen: IndexMap<Key, Want> = IndexMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            let w = Want {
                topic: t.topic.to_string(),
                partition: p.partition,
                offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes,
            };
            seen.insert((w.topic.clone(), w.partition), w);
        }
    }
    seen.into_values().collect()
}

impl FetchSessions {
    pub fn new() -> FetchSessions {
        let seed = std::collections::hash_map::RandomState::new().build_hasher().finish() | 1;
        FetchSessions { inner: Mutex::new(Inner { map: HashMap::new(), rng: seed }) }
    }

    /// Decide the session for a request and the partitions to read, or the
    /// session error to answer with.
    pub fn open(&self, req: &FetchRequest, version: i16, now: Instant) -> Result<(Mode, Vec<Want>), i16> {
        if version < 7 {
            return Ok((Mode::Sessionless, wants_of(req)));
        }
        let mut inner = self.inner.lock();
        match req.session_epoch {
            FINAL_EPOCH => {
                if req.session_id != 0 {
                    inner.map.remove(&req.session_id);
                }
                Ok((Mode::Sessionless, wants_of(req)))
            }
            INITIAL_EPOCH => {
                if req.session_id != 0 {
                    inner.map.remove(&req.session_id);
                }
                let wants = wants_of(req);
                if inner.map.len() >= MAX_SESSIONS {
                    // Evict the least recently used; its owner starts over.
                    if let Some(old) = inner.map.iter().min_by_key(|(_, s)| s.used).map(|(id, _)| *id) {
                        inner.map.remove(&old);
                    }
                }
                let id = inner.new_id();
                let parts = wants
                    .iter()
                    .map(|w| {
                        (
                            (w.topic.clone(), w.partition),
                            Cached { offset: w.offset, max_bytes: w.max_bytes, said: None },
                        )
                    })
                    .collect();
                inner.map.insert(id, Session { next_epoch: 1, parts, used: now });
                Ok((Mode::Full(id), wants))
            }
            epoch if epoch > 0 => {
                let Some(s) = inner.map.get_mut(&req.session_id) else {
                    return Err(FETCH_SESSION_ID_NOT_FOUND);
                };
                if epoch != s.next_epoch {
                    return Err(INVALID_FETCH_SESSION_EPOCH);
                }
                s.next_epoch = next_epoch(epoch);
                s.used = now;
                for w in wants_of(req) {
                    let c = s.parts.entry((w.topic, w.partition)).or_insert(Cached {
                        offset: w.offset,
                        max_bytes: w.max_bytes,
                        said: None,
                    });
                    c.offset = w.offset;
                    c.max_bytes = w.max_bytes;
                }
                for f in &req.forgotten_topics_data {
                    for p in &f.partitions {
                        s.parts.shift_remove(&(f.topic.to_string(), *p));
                    }
                }
                let wants = s
                    .parts
                    .iter()
                    .map(|((t, p), c)| Want {
                        topic: t.clone(),
                        partition: *p,
                        offset: c.offset,
                        max_bytes: c.max_bytes,
                    })
                    .collect();
                Ok((Mode::Incremental(req.session_id), wants))
            }
            _ => Err(INVALID_FETCH_SESSION_EPOCH),
        }
    }

    /// After reading: which partitions go in the answer. Sessionless and full
    /// answers carry all of them; an incremental one carries those with
    /// records, an error, or a watermark the client has not been told.
    /// `results` is (key, what we would say, has records, has error).
    pub fn close(&self, mode: Mode, results: &[(Key, Said, bool, bool)]) -> Vec<bool> {
        let id = match mode {
            Mode::Sessionless => return vec![true; results.len()],
            Mode::Full(id) | Mode::Incremental(id) => id,
        };
        let mut inner = self.inner.lock();
        let Some(s) = inner.map.get_mut(&id) else {
            return vec![true; results.len()];
        };
        let include = results
            .iter()
            .map(|(key, said, records, error)| {
                let Some(c) = s.parts.get_mut(key) else {
                    return true;
                };
                let news = mode == Mode::Full(id) || *records || *error || c.said != Some(*said);
                if news {
                    c.said = Some(*said);
                }
                news
            })
            .collect();
        // Fairness, as Kafka's sessions do it: partitions that returned records go to the
        // end, so the next answer's byte limit (or a cut to one batch under the memory
        // budget, D88) reaches the others first instead of the same partition every time.
        if results.iter().any(|r| r.2) {
            let served: HashSet<&Key> = results.iter().filter(|r| r.2).map(|r| &r.0).collect();
            let (mut order, last): (IndexMap<Key, Cached>, IndexMap<Key, Cached>) =
                std::mem::take(&mut s.parts).into_iter().partition(|(k, _)| !served.contains(k));
            order.extend(last);
            s.parts = order;
        }
        include
    }

    pub fn expire(&self, now: Instant) {
        self.inner.lock().map.retain(|_, s| now.duration_since(s.used) < IDLE);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

    fn req(id: i32, epoch: i32, parts: &[(&str, i32, i64)], forget: &[(&str, i32)]) -> FetchRequest {
        let mut r = FetchRequest::default().with_session_id(id).with_session_epoch(epoch);
        for (t, p, o) in parts {
            r.topics.push(
                FetchTopic::default().with_topic(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(
                    vec![FetchPartition::default()
                        .with_partition(*p)
                        .with_fetch_offset(*o)
                        .with_partition_max_bytes(1000)],
                ),
            );
        }
        for (t, p) in forget {
            r.forgotten_topics_data.push(
                ForgottenTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                    .with_partitions(vec![*p]),
            );
        }
        r
    }

    fn key(t: &str, p: i32) -> Key {
        (t.to_string(), p)
    }

    #[test]
    fn full_then_incremental_answers_only_news() {
        let s = FetchSessions::new();
        let t = Instant::now();
        let (mode, wants) = s.open(&req(0, 0, &[("a", 0, 5), ("a", 1, 0)], &[]), 12, t).unwrap();
        let Mode::Full(id) = mode else { panic!("{mode:?}") };
        assert_eq!(wants.len(), 2);
        let said = Said { high_watermark: 10, log_start: 0 };
        assert_eq!(
            s.close(mode, &[(key("a", 0), said, true, false), (key("a", 1), said, false, false)]),
            vec![true, true]
        );
        // Incremental: only a/0's offset moved; both are read (a/0, which returned records,
        // now last), only news answered.
        let (mode, wants) = s.open(&req(id, 1, &[("a", 0, 10)], &[]), 12, t).unwrap();
        assert_eq!(mode, Mode::Incremental(id));
        assert_eq!(wants.iter().map(|w| (w.partition, w.offset)).collect::<Vec<_>>(), vec![(1, 0), (0, 10)]);
        let moved = Said { high_watermark: 11, log_start: 0 };
        assert_eq!(
            s.close(mode, &[(key("a", 1), moved, false, false), (key("a", 0), said, false, false)]),
            vec![true, false]
        );
        // Forget a/1.
        let (_, wants) = s.open(&req(id, 2, &[], &[("a", 1)]), 12, t).unwrap();
        assert_eq!(wants.len(), 1);
    }

    /// Without this, a session read its partitions in the same order every time, so one
    /// that always filled the answer's byte limit kept the others waiting.
    #[test]
    fn partitions_that_returned_records_go_to_the_end_of_the_session() {
        let s = FetchSessions::new();
        let t = Instant::now();
        let (mode, _) = s.open(&req(0, 0, &[("a", 0, 0), ("a", 1, 0), ("a", 2, 0)], &[]), 12, t).unwrap();
        let id = mode.session_id();
        let said = Said { high_watermark: 10, log_start: 0 };
        let order = |epoch| {
            let (_, wants) = s.open(&req(id, epoch, &[], &[]), 12, t).unwrap();
            wants.iter().map(|w| w.partition).collect::<Vec<_>>()
        };
        s.close(
            mode,
            &[(key("a", 0), said, true, false), (key("a", 1), said, false, false), (key("a", 2), said, false, false)],
        );
        assert_eq!(order(1), vec![1, 2, 0]);
        let mode = Mode::Incremental(id);
        s.close(
            mode,
            &[(key("a", 1), said, true, false), (key("a", 2), said, true, false), (key("a", 0), said, false, false)],
        );
        assert_eq!(order(2), vec![0, 1, 2], "both served go last, in their order");
        s.close(
            mode,
            &[(key("a", 0), said, false, false), (key("a", 1), said, false, false), (key("a", 2), said, false, false)],
        );
        assert_eq!(order(3), vec![0, 1, 2], "nothing served: the order stays");
    }

    #[test]
    fn a_partition_named_twice_is_read_once_with_its_last_offset() {
        let s = FetchSessions::new();
        let t = Instant::now();
        let parts = [("a", 0, 1), ("b", 0, 2), ("a", 0, 3), ("a", 1, 4)];
        for (id, epoch, version) in [(0, 0, 12), (0, -1, 12), (0, 0, 6)] {
            let (_, wants) = s.open(&req(id, epoch, &parts, &[]), version, t).unwrap();
            let got: Vec<_> = wants.iter().map(|w| (w.topic.as_str(), w.partition, w.offset)).collect();
            assert_eq!(got, vec![("a", 0, 3), ("b", 0, 2), ("a", 1, 4)], "epoch {epoch} v{version}");
        }
    }

    #[test]
    fn wrong_epoch_unknown_id_and_close() {
        let s = FetchSessions::new();
        let t = Instant::now();
        let (mode, _) = s.open(&req(0, 0, &[("a", 0, 0)], &[]), 12, t).unwrap();
        let id = mode.session_id();
        assert_eq!(s.open(&req(id, 5, &[], &[]), 12, t).unwrap_err(), INVALID_FETCH_SESSION_EPOCH);
        assert_eq!(s.open(&req(id ^ 1, 1, &[], &[]), 12, t).unwrap_err(), FETCH_SESSION_ID_NOT_FOUND);
        assert_eq!(s.open(&req(id, -2, &[], &[]), 12, t).unwrap_err(), INVALID_FETCH_SESSION_EPOCH);
        // Epoch -1 closes the session and fetches without one.
        let (mode, wants) = s.open(&req(id, -1, &[("a", 0, 3)], &[]), 12, t).unwrap();
        assert_eq!((mode, wants.len()), (Mode::Sessionless, 1));
        assert_eq!(s.open(&req(id, 1, &[], &[]), 12, t).unwrap_err(), FETCH_SESSION_ID_NOT_FOUND);
    }

    #[test]
    fn old_versions_and_idle_sessions() {
        let s = FetchSessions::new();
        let t = Instant::now();
        assert_eq!(s.open(&req(0, 0, &[("a", 0, 0)], &[]), 6, t).unwrap().0, Mode::Sessionless);
        s.open(&req(0, 0, &[("a", 0, 0)], &[]), 12, t).unwrap();
        assert_eq!(s.len(), 1);
        s.expire(t + IDLE + Duration::from_secs(1));
        assert_eq!(s.len(), 0);
    }
}
