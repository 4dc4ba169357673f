//! The consumer-group coordinator (Kafka's classic rebalance protocol),
//! held in memory: members, generations, the leader, assignments, static
//! membership. Committed offsets are not here; they are durable in the engine.
//!
//! A pure state machine over an explicit clock (`now` is passed in), so the
//! tests drive it without sleeping. Blocking requests (JoinGroup while a
//! rebalance is gathering members, SyncGroup until the leader's assignment)
//! get a oneshot receiver that a later call or `tick` completes.
//!
//! A restart loses it all: clients see UNKNOWN_MEMBER_ID on their next
//! heartbeat or commit and rejoin, which is how Kafka clients recover from a
//! coordinator move anyway.

use crate::errors::*;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const MIN_SESSION: Duration = Duration::from_millis(1000);
const MAX_SESSION: Duration = Duration::from_secs(1800);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

pub struct JoinArgs {
    pub group: String,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new member first gets an id (MEMBER_ID_REQUIRED).
    pub require_known_member_id: bool,
}

#[derive(Debug, Clone, Default)]
pub struct JoinOutcome {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// (member id, instance id, metadata): only the leader gets them.
    pub members: Vec<(String, Option<String>, Bytes)>,
    pub skip_assignment: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SyncOutcome {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

pub enum Reply<T> {
    Now(T),
    Later(oneshot::Receiver<T>),
}

pub struct MemberSummary {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

pub struct GroupSummary {
    pub state: State,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberSummary>,
}

struct Member {
    instance: Option<String>,
    client_id: String,
    client_host: String,
    session: Duration,
    rebalance: Duration,
    protocol_type: String,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    join: Option<oneshot::Sender<JoinOutcome>>,
    sync: Option<oneshot::Sender<SyncOutcome>>,
    /// Session deadline: expired past this unless waiting in a join or sync.
    deadline: Instant,
    /// Join order; the longest-standing member leads when the leader leaves.
    order: u64,
}

impl Member {
    fn waiting(&self) -> bool {
        self.join.as_ref().is_some_and(|s| !s.is_closed()) || self.sync.as_ref().is_some_and(|s| !s.is_closed())
    }
    fn metadata(&self, protocol: Option<&str>) -> Bytes {
        self.protocols.iter().find(|(n, _)| Some(n.as_str()) == protocol).map(|(_, m)| m.clone()).unwrap_or_default()
    }
}

struct Group {
    state: State,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: HashMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, valid until the instant.
    pending: HashMap<String, Instant>,
    /// group.instance.id -> member id.
    statics: HashMap<String, String>,
    rebalance_deadline: Option<Instant>,
    /// The initial delay of a new group's first rebalance, and its hard limit.
    initial_until: Option<(Instant, Instant)>,
    next_order: u64,
}

impl Group {
    fn new() -> Group {
        Group {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: HashMap::new(),
            pending: HashMap::new(),
            statics: HashMap::new(),
            rebalance_deadline: None,
            initial_until: None,
            next_order: 0,
        }
    }

    fn outcome(&self, member_id: &str) -> JoinOutcome {
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            let mut v: Vec<_> = self.members.iter().collect();
            v.sort_by_key(|(_, m)| m.order);
            v.into_iter()
                .map(|(id, m)| (id.clone(), m.instance.clone(), m.metadata(self.protocol.as_deref())))
                .collect()
        } else {
            Vec::new()
        };
        JoinOutcome {
            error: NONE,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader,
            member_id: member_id.to_string(),
            members,
            skip_assignment: false,
        }
    }

    /// Protocols every member other than `except` supports, intersected with `offered`.
    fn compatible(&self, except: &str, protocol_type: &str, offered: &[(String, Bytes)]) -> bool {
        let others: Vec<&Member> = self.members.iter().filter(|(id, _)| *id != except).map(|(_, m)| m).collect();
        others.is_empty()
            || (others.iter().all(|m| m.protocol_type == protocol_type)
                && offered.iter().any(|(n, _)| others.iter().all(|m| m.protocols.iter().any(|(o, _)| o == n))))
    }

    /// Each member votes for its most preferred protocol that all support.
    fn select_protocol(&self) -> Option<String> {
        let mut ms: Vec<&Member> = self.members.values().collect();
        ms.sort_by_key(|m| m.order);
        let first = ms.first()?;
        let all: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| ms.iter().all(|m| m.protocols.iter().any(|(o, _)| o == *n)))
            .collect();
        let mut votes: Vec<(usize, &String)> = all.iter().map(|n| (0, *n)).collect();
        for m in &ms {
            if let Some((n, _)) = m.protocols.iter().find(|(n, _)| all.contains(&n)) {
                if let Some(v) = votes.iter_mut().find(|(_, c)| *c == n) {
                    v.0 += 1;
                }
            }
        }
        // Most votes; ties go to the first member's preference.
        let best = votes.iter().map(|(c, _)| *c).max()?;
        votes.iter().find(|(c, _)| *c == best).map(|(_, n)| (*n).clone())
    }

    fn prepare_rebalance(&mut self, now: Instant, initial_delay: Duration) {
        if self.state == State::CompletingRebalance {
            for m in self.members.values_mut() {
                m.assignment = Bytes::new();
                if let Some(s) = m.sync.take() {
                    let _ = s.send(SyncOutcome { error: REBALANCE_IN_PROGRESS, ..Default::default() });
                }
            }
        }
        let rt = self.members.values().map(|m| m.rebalance).max().unwrap_or_default();
        if self.state == State::Empty && !initial_delay.is_zero() {
            self.initial_until = Some((now + initial_delay.min(rt), now + rt));
        }
        self.state = State::PreparingRebalance;
        self.rebalance_deadline = Some(now + rt);
    }

    fn maybe_complete_join(&mut self, now: Instant) {
        if self.state != State::PreparingRebalance {
            return;
        }
        if let Some((until, _)) = self.initial_until {
            if now < until {
                return;
            }
            self.initial_until = None;
        }
        // A member whose JoinGroup connection closed is not coming back with
        // that request: it counts as answered and is dropped at completion.
        let all_joined = self.pending.is_empty() && self.members.values().all(|m| m.join.is_some());
        if all_joined || self.rebalance_deadline.is_some_and(|d| now >= d) {
            self.complete_join(now);
        }
    }

    fn complete_join(&mut self, now: Instant) {
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.join.as_ref().is_none_or(|s| s.is_closed()))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.remove(&id);
        }
        self.pending.clear();
        self.rebalance_deadline = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.state = State::Empty;
            self.protocol = None;
            self.leader = None;
            return;
        }
        self.protocol = self.select_protocol();
        self.protocol_type = self.members.values().next().map(|m| m.protocol_type.clone());
        if !self.leader.as_ref().is_some_and(|l| self.members.contains_key(l)) {
            self.leader = self.members.iter().min_by_key(|(_, m)| m.order).map(|(id, _)| id.clone());
        }
        self.state = State::CompletingRebalance;
        tracing::info!(generation = self.generation, members = self.members.len(), "kafka: group rebalanced");
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let out = self.outcome(&id);
            let m = self.members.get_mut(&id).expect("listed");
            m.deadline = now + m.session;
            if let Some(tx) = m.join.take() {
                let _ = tx.send(out);
            }
        }
    }

    fn remove(&mut self, id: &str) -> bool {
        let Some(m) = self.members.remove(id) else {
            return false;
        };
        if let Some(i) = m.instance {
            if self.statics.get(&i).is_some_and(|x| x == id) {
                self.statics.remove(&i);
            }
        }
        if let Some(tx) = m.join {
            let _ = tx.send(JoinOutcome { error: UNKNOWN_MEMBER_ID, member_id: id.into(), ..Default::default() });
        }
        true
    }

    fn on_removed(&mut self, now: Instant, initial_delay: Duration) {
        match self.state {
            State::Stable | State::CompletingRebalance => self.prepare_rebalance(now, initial_delay),
            State::PreparingRebalance | State::Empty => {}
        }
        self.maybe_complete_join(now);
    }

    /// FENCED_INSTANCE_ID when `instance` now belongs to another member id.
    fn fenced(&self, member_id: &str, instance: Option<&str>) -> bool {
        instance.is_some_and(|i| self.statics.get(i).is_some_and(|m| m != member_id))
    }
}

pub struct Coordinator {
    groups: Mutex<HashMap<String, Group>>,
    initial_delay: Duration,
    limits: Limits,
}

/// How much membership untrusted clients may make: groups held at once, and
/// members per group (ids handed out with MEMBER_ID_REQUIRED count, since
/// they are held too). Past either a join gets GROUP_MAX_SIZE_REACHED.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_groups: usize,
    pub max_members: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_groups: DEFAULT_MAX_GROUPS, max_members: DEFAULT_GROUP_MAX_SIZE }
    }
}

/// Default of `--kafka-max-groups`.
pub const DEFAULT_MAX_GROUPS: usize = 10_000;
/// Default of `--kafka-group-max-size` (Kafka's group.max.size has none; a
/// bound is needed here because members cost memory).
pub const DEFAULT_GROUP_MAX_SIZE: usize = 1_000;

fn new_member_id(client_id: &str) -> String {
    format!("{client_id}-{}", uuid::Uuid::now_v7())
}

fn join_error(error: i16, member_id: &str) -> Reply<JoinOutcome> {
    Reply::Now(JoinOutcome { error, member_id: member_id.to_string(), ..Default::default() })
}

impl Coordinator {
    #[cfg(test)]
    pub fn new(initial_delay: Duration) -> Coordinator {
        Coordinator::with_limits(initial_delay, Limits::default())
    }

    pub fn with_limits(initial_delay: Duration, limits: Limits) -> Coordinator {
        Coordinator { groups: Mutex::new(HashMap::new()), initial_delay, limits }
    }

    pub fn join(&self, a: JoinArgs, now: Instant) -> Reply<JoinOutcome> {
        if a.group.is_empty() {
            return join_error(INVALID_GROUP_ID, &a.member_id);
        }
        if a.session_timeout < MIN_SESSION || a.session_timeout > MAX_SESSION {
            return join_error(INVALID_SESSION_TIMEOUT, &a.member_id);
        }
        if a.protocol_type.is_empty() || a.protocols.is_empty() {
            return join_error(INCONSISTENT_GROUP_PROTOCOL, &a.member_id);
        }
        let mut groups = self.groups.lock();
        if !groups.contains_key(&a.group) && groups.len() >= self.limits.max_groups {
            tracing::warn!(group = %a.group, max = self.limits.max_groups,
                "kafka: join refused, the coordinator holds --kafka-max-groups groups");
            return join_error(GROUP_MAX_SIZE_REACHED, &a.member_id);
        }
        let g = groups.entry(a.group.clone()).or_insert_with(Group::new);
        // Only a join that adds an id can make the group too big.
        let adds = a.member_id.is_empty() && !a.instance_id.as_ref().is_some_and(|i| g.statics.contains_key(i));
        if adds && g.members.len() + g.pending.len() >= self.limits.max_members {
            tracing::warn!(group = %a.group, max = self.limits.max_members,
                "kafka: join refused, the group has --kafka-group-max-size members");
            return join_error(GROUP_MAX_SIZE_REACHED, &a.member_id);
        }
        if !g.compatible(&a.member_id, &a.protocol_type, &a.protocols) {
            return join_error(INCONSISTENT_GROUP_PROTOCOL, &a.member_id);
        }
        let fresh = |g: &mut Group, a: &JoinArgs| Member {
            instance: a.instance_id.clone(),
            client_id: a.client_id.clone(),
            client_host: a.client_host.clone(),
            session: a.session_timeout,
            rebalance: a.rebalance_timeout,
            protocol_type: a.protocol_type.clone(),
            protocols: a.protocols.clone(),
            assignment: Bytes::new(),
            join: None,
            sync: None,
            deadline: now + a.session_timeout,
            order: {
                g.next_order += 1;
                g.next_order
            },
        };
        let member_id;
        let mut unchanged = false;
        if a.member_id.is_empty() {
            let static_old = a.instance_id.as_ref().and_then(|i| g.statics.get(i).cloned());
            if let Some(old) = static_old {
                // A static member back with a new id: it takes over the old
                // member's place and assignment; the old id is fenced.
                member_id = new_member_id(&a.client_id);
                let mut m = g.members.remove(&old).expect("statics point at members");
                if let Some(tx) = m.join.take() {
                    let _ = tx.send(JoinOutcome {
                        error: FENCED_INSTANCE_ID,
                        member_id: old.clone(),
                        ..Default::default()
                    });
                }
                if let Some(tx) = m.sync.take() {
                    let _ = tx.send(SyncOutcome { error: FENCED_INSTANCE_ID, ..Default::default() });
                }
                // Kafka's test: would the group still pick the same protocol?
                // (Metadata bytes may differ: a new process owns nothing yet.)
                unchanged = a.protocols.iter().any(|(n, _)| Some(n) == g.protocol.as_ref());
                m.protocols = a.protocols.clone();
                m.session = a.session_timeout;
                m.rebalance = a.rebalance_timeout;
                m.deadline = now + a.session_timeout;
                g.members.insert(member_id.clone(), m);
                g.statics.insert(a.instance_id.clone().expect("static"), member_id.clone());
                if g.leader.as_deref() == Some(old.as_str()) {
                    g.leader = Some(member_id.clone());
                }
                if g.state == State::Stable && unchanged {
                    // Kafka: a static member rejoining a stable group with the
                    // same protocols does not rebalance; it resumes its place.
                    let mut out = g.outcome(&member_id);
                    out.skip_assignment = g.leader.as_deref() == Some(member_id.as_str());
                    return Reply::Now(out);
                }
            } else if let Some(i) = &a.instance_id {
                member_id = new_member_id(&a.client_id);
                let m = fresh(g, &a);
                g.members.insert(member_id.clone(), m);
                g.statics.insert(i.clone(), member_id.clone());
            } else if a.require_known_member_id {
                let id = new_member_id(&a.client_id);
                g.pending.insert(id.clone(), now + a.session_timeout);
                return join_error(MEMBER_ID_REQUIRED, &id);
            } else {
                member_id = new_member_id(&a.client_id);
                let m = fresh(g, &a);
                g.members.insert(member_id.clone(), m);
            }
        } else if g.pending.remove(&a.member_id).is_some() {
            member_id = a.member_id.clone();
            let m = fresh(g, &a);
            g.members.insert(member_id.clone(), m);
        } else if g.fenced(&a.member_id, a.instance_id.as_deref()) {
            return join_error(FENCED_INSTANCE_ID, &a.member_id);
        } else if let Some(m) = g.members.get_mut(&a.member_id) {
            member_id = a.member_id.clone();
            unchanged = m.protocols == a.protocols;
            m.protocols = a.protocols.clone();
            m.session = a.session_timeout;
            m.rebalance = a.rebalance_timeout;
            m.deadline = now + a.session_timeout;
        } else {
            return join_error(UNKNOWN_MEMBER_ID, &a.member_id);
        }
        let is_leader = g.leader.as_deref() == Some(member_id.as_str());
        if matches!(g.state, State::Stable | State::CompletingRebalance) && unchanged && !is_leader {
            // A follower rejoining with nothing new gets the current generation back.
            return Reply::Now(g.outcome(&member_id));
        }
        let (tx, rx) = oneshot::channel();
        g.members.get_mut(&member_id).expect("inserted above").join = Some(tx);
        match g.state {
            State::Empty | State::Stable | State::CompletingRebalance => g.prepare_rebalance(now, self.initial_delay),
            State::PreparingRebalance => {
                // Each newcomer during a new group's initial delay extends it.
                if let Some((until, limit)) = g.initial_until {
                    g.initial_until = Some(((now + self.initial_delay).min(limit).max(until), limit));
                }
            }
        }
        g.maybe_complete_join(now);
        Reply::Later(rx)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: Instant,
    ) -> Reply<SyncOutcome> {
        let err = |error| Reply::Now(SyncOutcome { error, ..Default::default() });
        let mut groups = self.groups.lock();
        let Some(g) = groups.get_mut(group) else {
            return err(UNKNOWN_MEMBER_ID);
        };
        if g.fenced(member_id, instance) {
            return err(FENCED_INSTANCE_ID);
        }
        if !g.members.contains_key(member_id) {
            return err(UNKNOWN_MEMBER_ID);
        }
        if generation != g.generation {
            return err(ILLEGAL_GENERATION);
        }
        if protocol_type.is_some_and(|t| Some(t) != g.protocol_type.as_deref())
            || protocol_name.is_some_and(|n| Some(n) != g.protocol.as_deref())
        {
            return err(INCONSISTENT_GROUP_PROTOCOL);
        }
        let done = |g: &Group, a: Bytes| SyncOutcome {
            error: NONE,
            protocol_type: g.protocol_type.clone(),
            protocol_name: g.protocol.clone(),
            assignment: a,
        };
        match g.state {
            State::Empty => err(UNKNOWN_MEMBER_ID),
            State::PreparingRebalance => err(REBALANCE_IN_PROGRESS),
            State::Stable => {
                let m = g.members.get_mut(member_id).expect("checked");
                m.deadline = now + m.session;
                let a = m.assignment.clone();
                Reply::Now(done(g, a))
            }
            State::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                let m = g.members.get_mut(member_id).expect("checked");
                m.deadline = now + m.session;
                m.sync = Some(tx);
                if g.leader.as_deref() == Some(member_id) {
                    for m in g.members.values_mut() {
                        m.assignment = Bytes::new();
                    }
                    for (id, a) in assignments {
                        if let Some(m) = g.members.get_mut(&id) {
                            m.assignment = a;
                        }
                    }
                    g.state = State::Stable;
                    let ids: Vec<String> = g.members.keys().cloned().collect();
                    for id in ids {
                        let out = done(g, g.members[&id].assignment.clone());
                        if let Some(tx) = g.members.get_mut(&id).and_then(|m| m.sync.take()) {
                            let _ = tx.send(out);
                        }
                    }
                }
                Reply::Later(rx)
            }
        }
    }

    pub fn heartbeat(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        now: Instant,
    ) -> i16 {
        let mut groups = self.groups.lock();
        let Some(g) = groups.get_mut(group) else {
            return UNKNOWN_MEMBER_ID;
        };
        if g.fenced(member_id, instance) {
            return FENCED_INSTANCE_ID;
        }
        let state = g.state;
        let gen = g.generation;
        let Some(m) = g.members.get_mut(member_id) else {
            return UNKNOWN_MEMBER_ID;
        };
        if generation != gen {
            return ILLEGAL_GENERATION;
        }
        m.deadline = now + m.session;
        match state {
            State::Empty => UNKNOWN_MEMBER_ID,
            State::PreparingRebalance => REBALANCE_IN_PROGRESS,
            State::CompletingRebalance | State::Stable => NONE,
        }
    }

    /// LeaveGroup for (member id, instance id) pairs; one code per pair.
    pub fn leave(&self, group: &str, members: &[(String, Option<String>)], now: Instant) -> Vec<i16> {
        let mut groups = self.groups.lock();
        let Some(g) = groups.get_mut(group) else {
            return vec![UNKNOWN_MEMBER_ID; members.len()];
        };
        let mut removed = false;
        let codes = members
            .iter()
            .map(|(id, inst)| {
                let id = match (id.is_empty(), inst) {
                    (true, Some(i)) => match g.statics.get(i) {
                        Some(m) => m.clone(),
                        None => return UNKNOWN_MEMBER_ID,
                    },
                    _ => id.clone(),
                };
                if g.fenced(&id, inst.as_deref()) {
                    return FENCED_INSTANCE_ID;
                }
                if g.remove(&id) {
                    removed = true;
                    NONE
                } else if g.pending.remove(&id).is_some() {
                    NONE
                } else {
                    UNKNOWN_MEMBER_ID
                }
            })
            .collect();
        if removed {
            g.on_removed(now, self.initial_delay);
        }
        codes
    }

    /// May this member commit offsets for the group now? (Kafka's rules.)
    pub fn check_commit(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        now: Instant,
    ) -> i16 {
        let mut groups = self.groups.lock();
        let Some(g) = groups.get_mut(group).filter(|g| !g.members.is_empty()) else {
            // No live members: a simple consumer or admin commit (generation -1)
            // is fine; a member of a generation we do not know must rejoin.
            return if generation < 0 { NONE } else { UNKNOWN_MEMBER_ID };
        };
        if g.fenced(member_id, instance) {
            return FENCED_INSTANCE_ID;
        }
        if generation >= 0 && !g.members.contains_key(member_id) {
            return UNKNOWN_MEMBER_ID;
        }
        if generation != g.generation {
            return ILLEGAL_GENERATION;
        }
        if g.state == State::CompletingRebalance {
            return REBALANCE_IN_PROGRESS;
        }
        if let Some(m) = g.members.get_mut(member_id) {
            m.deadline = now + m.session;
        }
        NONE
    }

    pub fn describe(&self, group: &str) -> Option<GroupSummary> {
        let groups = self.groups.lock();
        let g = groups.get(group)?;
        let mut ms: Vec<(&String, &Member)> = g.members.iter().collect();
        ms.sort_by_key(|(_, m)| m.order);
        Some(GroupSummary {
            state: g.state,
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol: if g.state == State::Stable || g.state == State::CompletingRebalance {
                g.protocol.clone().unwrap_or_default()
            } else {
                String::new()
            },
            members: ms
                .into_iter()
                .map(|(id, m)| MemberSummary {
                    member_id: id.clone(),
                    instance_id: m.instance.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata(g.protocol.as_deref()),
                    assignment: if g.state == State::Stable { m.assignment.clone() } else { Bytes::new() },
                })
                .collect(),
        })
    }

    /// (group, protocol type, state) of every group with members.
    pub fn list(&self) -> Vec<(String, String, State)> {
        let groups = self.groups.lock();
        let mut v: Vec<_> =
            groups.iter().map(|(n, g)| (n.clone(), g.protocol_type.clone().unwrap_or_default(), g.state)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Forget an empty group; NON_EMPTY_GROUP while it has members.
    pub fn delete(&self, group: &str) -> Result<(), i16> {
        let mut groups = self.groups.lock();
        match groups.get(group) {
            Some(g) if !g.members.is_empty() => Err(NON_EMPTY_GROUP),
            _ => {
                groups.remove(group);
                Ok(())
            }
        }
    }

    /// Expire silent members and pending ids, finish rebalances whose time
    /// is up, and forget groups left with nobody.
    pub fn tick(&self, now: Instant) {
        let mut groups = self.groups.lock();
        for g in groups.values_mut() {
            g.pending.retain(|_, until| *until > now);
            let expired: Vec<String> =
                g.members.iter().filter(|(_, m)| !m.waiting() && m.deadline <= now).map(|(id, _)| id.clone()).collect();
            let mut removed = false;
            for id in expired {
                tracing::info!(member = %id, "kafka: group member session expired");
                removed |= g.remove(&id);
            }
            if removed {
                g.on_removed(now, self.initial_delay);
            }
            g.maybe_complete_join(now);
        }
        groups.retain(|_, g| !(g.members.is_empty() && g.pending.is_empty() && g.state == State::Empty));
    }
}

#[cfg(test)]
#[path = "coordinator_tests.rs"]
mod tests;
