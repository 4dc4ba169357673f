//! Share groups (KIP-932) as the door holds them in memory (D49): members, their
//! subscriptions and assignments, and each member's share session (the partitions it
//! fetches from and the Baton lease it holds on each).
//!
//! What is durable is the engine's: an acquisition is a Baton lease of the group on one
//! partition, an acknowledgement an ack under that lease. Nothing here is written to the
//! log, so a restart loses it cleanly: clients get UNKNOWN_MEMBER_ID and
//! SHARE_SESSION_NOT_FOUND and start over, and the leases they held run out.
//!
//! Must never be locked across an engine call: handlers read or change it, then talk to
//! the engine, then come back. Every collection is bounded by a named setting
//! (`--kafka-max-groups`, `--kafka-group-max-size`, `--kafka-max-share-sessions`).

use baton_core::{LeaseId, PartId};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};
use uuid::Uuid;

use crate::errors::{
    FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED, NONE, SHARE_SESSION_LIMIT_REACHED, UNKNOWN_MEMBER_ID,
};

/// A member's assignment: (topic id, partitions), sorted.
pub type Assignment = Vec<(Uuid, Vec<i32>)>;

/// A share partition as a session names it.
pub type SharePart = (Uuid, i32);

/// Bounds and timings, each a setting with Kafka's default.
#[derive(Debug, Clone, Copy)]
pub struct ShareLimits {
    pub max_groups: usize,
    pub max_members: usize,
    /// Kafka's group.share.max.share.sessions.
    pub max_sessions: usize,
    /// Kafka's group.share.session.timeout.ms: a member not heard from for this long leaves.
    pub session_timeout: Duration,
    /// Kafka's group.share.heartbeat.interval.ms.
    pub heartbeat_interval: Duration,
}

/// Default of `--kafka-max-share-sessions` (Kafka's group.share.max.share.sessions).
pub const DEFAULT_MAX_SHARE_SESSIONS: usize = 2000;

impl Default for ShareLimits {
    fn default() -> Self {
        ShareLimits {
            max_groups: crate::DEFAULT_MAX_GROUPS,
            max_members: crate::DEFAULT_GROUP_MAX_SIZE,
            max_sessions: DEFAULT_MAX_SHARE_SESSIONS,
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(5_000),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Member {
    pub epoch: i32,
    pub topics: Vec<String>,
    pub assignment: Assignment,
    /// Topic names of the assignment, for ShareGroupDescribe.
    pub names: HashMap<Uuid, String>,
    pub client_id: String,
    pub host: String,
    pub rack: Option<String>,
    deadline: Instant,
}

#[derive(Debug, Default)]
struct Group {
    epoch: i32,
    members: BTreeMap<String, Member>,
}

/// The lease a session holds on one partition, and what it acquired under it that is
/// not settled yet.
#[derive(Debug, Clone)]
pub struct Held {
    pub key: SharePart,
    pub part: PartId,
    pub lease: LeaseId,
    /// Acquired and neither settled nor released.
    pub open: BTreeSet<u64>,
    /// Released by the member while others stayed `open` (D85): given back, each charged a
    /// delivery, in the entry that settles the last open one or when the lease ends.
    pub released: BTreeSet<u64>,
    pub expires: Instant,
}

#[derive(Debug)]
pub struct Session {
    /// The epoch the next request must carry.
    pub next_epoch: i32,
    pub parts: BTreeSet<SharePart>,
    /// Topic names of the ids the session names (resolved when they join it).
    pub names: HashMap<Uuid, String>,
    pub held: HashMap<SharePart, Held>,
    touched: Instant,
}

/// What a heartbeat asks, once the door has resolved the subscription to partitions.
pub struct Beat<'a> {
    pub group: &'a str,
    pub member: &'a str,
    pub epoch: i32,
    pub topics: Vec<String>,
    pub assignment: Assignment,
    pub names: HashMap<Uuid, String>,
    pub client_id: &'a str,
    pub host: &'a str,
    pub rack: Option<String>,
    /// The group's `share.session.timeout.ms` (D67).
    pub session_timeout: Duration,
}

/// The answer to a heartbeat: the member's epoch and, when it changed, its assignment.
#[derive(Debug, PartialEq)]
pub enum BeatOutcome {
    Ok { epoch: i32, assignment: Option<Assignment> },
    Err(i16),
}

/// A share group as ShareGroupDescribe shows it.
pub struct GroupView {
    pub epoch: i32,
    pub members: Vec<(String, Member)>,
}

pub struct Shares {
    inner: Mutex<Inner>,
    pub limits: ShareLimits,
}

#[derive(Default)]
struct Inner {
    groups: HashMap<String, Group>,
    sessions: HashMap<(String, String), Session>,
}

/// Why a session request was refused (a top-level ShareFetch/ShareAcknowledge code).
pub type SessionError = i16;

impl Shares {
    pub fn new(limits: ShareLimits) -> Shares {
        Shares { inner: Mutex::new(Inner::default()), limits }
    }

    /// The subscription a member already has (None: not a member).
    pub fn topics_of(&self, group: &str, member: &str) -> Option<Vec<String>> {
        self.inner.lock().groups.get(group)?.members.get(member).map(|m| m.topics.clone())
    }

    /// Join, stay, or change subscription. A member's epoch starts at 1 and moves by one
    /// each time its assignment changes; a request with any other epoch than its current
    /// or the one before is fenced, as Kafka does.
    pub fn beat(&self, b: Beat<'_>, now: Instant) -> BeatOutcome {
        let mut g = self.inner.lock();
        let groups = g.groups.len();
        let known = g.groups.contains_key(b.group);
        if !known && groups >= self.limits.max_groups {
            return BeatOutcome::Err(GROUP_MAX_SIZE_REACHED);
        }
        let group = g.groups.entry(b.group.to_string()).or_default();
        let deadline = now + b.session_timeout;
        let member = match group.members.get_mut(b.member) {
            Some(m) if b.epoch == 0 => {
                // A rejoin: whatever it had, it gets its assignment again.
                m.epoch += 1;
                m.topics = b.topics;
                m.assignment = b.assignment;
                m.names = b.names;
                m.deadline = deadline;
                return BeatOutcome::Ok { epoch: m.epoch, assignment: Some(m.assignment.clone()) };
            }
            Some(m) => m,
            None if b.epoch != 0 => return BeatOutcome::Err(UNKNOWN_MEMBER_ID),
            None => {
                if group.members.len() >= self.limits.max_members {
                    if group.members.is_empty() {
                        g.groups.remove(b.group);
                    }
                    return BeatOutcome::Err(GROUP_MAX_SIZE_REACHED);
                }
                group.epoch += 1;
                let m = Member {
                    epoch: 1,
                    topics: b.topics,
                    assignment: b.assignment,
                    names: b.names,
                    client_id: b.client_id.to_string(),
                    host: b.host.to_string(),
                    rack: b.rack,
                    deadline,
                };
                let assignment = m.assignment.clone();
                group.members.insert(b.member.to_string(), m);
                return BeatOutcome::Ok { epoch: 1, assignment: Some(assignment) };
            }
        };
        if b.epoch != member.epoch && b.epoch != member.epoch - 1 {
            return BeatOutcome::Err(FENCED_MEMBER_EPOCH);
        }
        member.deadline = deadline;
        member.topics = b.topics;
        member.names = b.names;
        if member.assignment == b.assignment {
            return BeatOutcome::Ok { epoch: member.epoch, assignment: None };
        }
        member.epoch += 1;
        member.assignment = b.assignment;
        group.epoch += 1;
        BeatOutcome::Ok { epoch: member.epoch, assignment: Some(member.assignment.clone()) }
    }

    /// A member leaves: it and its session go. Returns the leases its session held, for
    /// the caller to release.
    pub fn leave(&self, group: &str, member: &str) -> (i16, Vec<Held>) {
        let mut g = self.inner.lock();
        let code = match g.groups.get_mut(group) {
            Some(gr) => match gr.members.remove(member) {
                Some(_) => {
                    gr.epoch += 1;
                    NONE
                }
                None => UNKNOWN_MEMBER_ID,
            },
            None => UNKNOWN_MEMBER_ID,
        };
        if g.groups.get(group).is_some_and(|gr| gr.members.is_empty()) {
            g.groups.remove(group);
        }
        let held = g.sessions.remove(&(group.to_string(), member.to_string())).map(|s| s.held);
        (code, held.into_iter().flat_map(|h| h.into_values()).collect())
    }

    pub fn describe(&self, group: &str) -> Option<GroupView> {
        let g = self.inner.lock();
        let gr = g.groups.get(group)?;
        Some(GroupView { epoch: gr.epoch, members: gr.members.iter().map(|(k, v)| (k.clone(), v.clone())).collect() })
    }

    /// Share groups with members now.
    pub fn list(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.lock().groups.keys().cloned().collect();
        v.sort();
        v
    }

    pub fn is_share_group(&self, group: &str) -> bool {
        self.inner.lock().groups.contains_key(group)
    }

    /// (sessions, members) now, for the gauges.
    pub fn counts(&self) -> (usize, usize) {
        let g = self.inner.lock();
        (g.sessions.len(), g.groups.values().map(|gr| gr.members.len()).sum())
    }

    /// Open a session (epoch 0), replacing one the member had: returns the leases the old
    /// one held, for the caller to release.
    pub fn open(
        &self,
        group: &str,
        member: &str,
        parts: BTreeSet<SharePart>,
        now: Instant,
    ) -> Result<Vec<Held>, SessionError> {
        let mut g = self.inner.lock();
        let key = (group.to_string(), member.to_string());
        if !g.sessions.contains_key(&key) && g.sessions.len() >= self.limits.max_sessions {
            return Err(SHARE_SESSION_LIMIT_REACHED);
        }
        let old = g
            .sessions
            .insert(key, Session { next_epoch: 1, parts, names: HashMap::new(), held: HashMap::new(), touched: now });
        Ok(old.into_iter().flat_map(|s| s.held.into_values()).collect())
    }

    /// Run `f` on the member's session if `epoch` is the one it expects, and move it on
    /// (epoch -1 closes it after `f`: its remaining leases are returned for release).
    pub fn with_session<T>(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        now: Instant,
        f: impl FnOnce(&mut Session) -> T,
    ) -> Result<(T, Vec<Held>), SessionError> {
        let mut g = self.inner.lock();
        let key = (group.to_string(), member.to_string());
        let Some(s) = g.sessions.get_mut(&key) else {
            return Err(crate::errors::SHARE_SESSION_NOT_FOUND);
        };
        if epoch != -1 && epoch != s.next_epoch {
            return Err(crate::errors::INVALID_SHARE_SESSION_EPOCH);
        }
        s.touched = now;
        let out = f(s);
        if epoch == -1 {
            let s = g.sessions.remove(&key).expect("looked up above");
            return Ok((out, s.held.into_values().collect()));
        }
        s.next_epoch = if s.next_epoch == i32::MAX { 1 } else { s.next_epoch + 1 };
        Ok((out, Vec::new()))
    }

    /// Look at the session without moving its epoch (after an engine call).
    pub fn update<T>(&self, group: &str, member: &str, f: impl FnOnce(&mut Session) -> T) -> Option<T> {
        let mut g = self.inner.lock();
        g.sessions.get_mut(&(group.to_string(), member.to_string())).map(f)
    }

    /// Members not heard from within the session timeout leave; sessions idle as long
    /// close. Returns (group, leases) of what they held, for release.
    pub fn expire(&self, now: Instant) -> Vec<(String, Held)> {
        let mut g = self.inner.lock();
        let timeout = self.limits.session_timeout;
        let mut gone = Vec::new();
        for gr in g.groups.values_mut() {
            let before = gr.members.len();
            gr.members.retain(|_, m| m.deadline > now);
            if gr.members.len() != before {
                gr.epoch += 1;
            }
        }
        g.groups.retain(|_, gr| !gr.members.is_empty());
        let keys: Vec<(String, String)> =
            g.sessions.iter().filter(|(_, s)| s.touched + timeout <= now).map(|(k, _)| k.clone()).collect();
        for k in keys {
            if let Some(s) = g.sessions.remove(&k) {
                gone.extend(s.held.into_values().map(|h| (k.0.clone(), h)));
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat<'a>(group: &'a str, member: &'a str, epoch: i32, parts: &[i32]) -> Beat<'a> {
        let t = Uuid::from_u128(7);
        Beat {
            group,
            member,
            epoch,
            topics: vec!["t".into()],
            assignment: vec![(t, parts.to_vec())],
            names: HashMap::from([(t, "t".to_string())]),
            client_id: "c",
            host: "h",
            rack: None,
            session_timeout: Duration::from_secs(45),
        }
    }

    #[test]
    fn join_stay_and_a_changed_assignment_moves_the_epoch() {
        let s = Shares::new(ShareLimits::default());
        let now = Instant::now();
        let a = vec![(Uuid::from_u128(7), vec![0, 1])];
        assert_eq!(s.beat(beat("g", "m", 0, &[0, 1]), now), BeatOutcome::Ok { epoch: 1, assignment: Some(a) });
        assert_eq!(s.beat(beat("g", "m", 1, &[0, 1]), now), BeatOutcome::Ok { epoch: 1, assignment: None });
        let b = vec![(Uuid::from_u128(7), vec![0, 1, 2])];
        assert_eq!(s.beat(beat("g", "m", 1, &[0, 1, 2]), now), BeatOutcome::Ok { epoch: 2, assignment: Some(b) });
        // The epoch before is still taken (an answer in flight); older is fenced.
        assert!(matches!(s.beat(beat("g", "m", 1, &[0, 1, 2]), now), BeatOutcome::Ok { epoch: 2, .. }));
        assert_eq!(s.beat(beat("g", "m", 7, &[0, 1, 2]), now), BeatOutcome::Err(FENCED_MEMBER_EPOCH));
        assert_eq!(s.beat(beat("g", "x", 3, &[0]), now), BeatOutcome::Err(UNKNOWN_MEMBER_ID));
    }

    #[test]
    fn members_past_the_session_timeout_leave_and_take_their_sessions_with_them() {
        let limits = ShareLimits { session_timeout: Duration::from_millis(100), ..Default::default() };
        let s = Shares::new(limits);
        let now = Instant::now();
        s.beat(Beat { session_timeout: Duration::from_millis(100), ..beat("g", "m", 0, &[0]) }, now);
        s.open("g", "m", BTreeSet::from([(Uuid::from_u128(7), 0)]), now).unwrap();
        s.update("g", "m", |x| {
            x.held.insert(
                (Uuid::from_u128(7), 0),
                Held {
                    key: (Uuid::from_u128(7), 0),
                    part: 1,
                    lease: 9,
                    open: BTreeSet::from([3]),
                    released: BTreeSet::new(),
                    expires: now,
                },
            )
        });
        assert!(s.expire(now + Duration::from_millis(50)).is_empty());
        let gone = s.expire(now + Duration::from_millis(150));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].1.lease, 9);
        assert_eq!(s.counts(), (0, 0));
        assert!(s.list().is_empty());
    }

    #[test]
    fn session_epochs_are_checked_and_bounded() {
        let limits = ShareLimits { max_sessions: 1, ..Default::default() };
        let s = Shares::new(limits);
        let now = Instant::now();
        s.open("g", "m", BTreeSet::new(), now).unwrap();
        assert_eq!(s.open("g", "other", BTreeSet::new(), now).unwrap_err(), SHARE_SESSION_LIMIT_REACHED);
        assert_eq!(s.with_session("g", "m", 2, now, |_| ()).unwrap_err(), crate::errors::INVALID_SHARE_SESSION_EPOCH);
        assert!(s.with_session("g", "m", 1, now, |_| ()).is_ok());
        assert!(s.with_session("g", "m", 2, now, |_| ()).is_ok());
        assert!(s.with_session("g", "m", -1, now, |_| ()).is_ok());
        assert_eq!(s.with_session("g", "m", 3, now, |_| ()).unwrap_err(), crate::errors::SHARE_SESSION_NOT_FOUND);
        // The slot a closed session held is free again.
        s.open("g", "other", BTreeSet::new(), now).unwrap();
    }

    #[test]
    fn the_member_bound_holds() {
        let limits = ShareLimits { max_members: 1, max_groups: 1, ..Default::default() };
        let s = Shares::new(limits);
        let now = Instant::now();
        assert!(matches!(s.beat(beat("g", "a", 0, &[0]), now), BeatOutcome::Ok { .. }));
        assert_eq!(s.beat(beat("g", "b", 0, &[0]), now), BeatOutcome::Err(GROUP_MAX_SIZE_REACHED));
        assert_eq!(s.beat(beat("h", "b", 0, &[0]), now), BeatOutcome::Err(GROUP_MAX_SIZE_REACHED));
        assert_eq!(s.leave("g", "a").0, NONE);
        assert!(matches!(s.beat(beat("h", "b", 0, &[0]), now), BeatOutcome::Ok { .. }));
    }
}
