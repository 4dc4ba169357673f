//! The coordinator's state machine, driven with an explicit clock.

use super::*;

const DELAY: Duration = Duration::from_millis(3000);

fn args(member: &str, instance: Option<&str>) -> JoinArgs {
    JoinArgs {
        group: "g".into(),
        member_id: member.into(),
        instance_id: instance.map(str::to_string),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"meta"))],
        require_known_member_id: true,
    }
}

fn now_or_panic<T: std::fmt::Debug>(r: Reply<T>) -> T {
    match r {
        Reply::Now(x) => x,
        Reply::Later(_) => panic!("expected an immediate answer"),
    }
}

fn later<T>(r: Reply<T>) -> oneshot::Receiver<T> {
    match r {
        Reply::Later(rx) => rx,
        Reply::Now(_) => panic!("expected to wait"),
    }
}

/// Join with the v4 two-step (MEMBER_ID_REQUIRED, then again with the id).
fn join_new(c: &Coordinator, t: Instant) -> (String, oneshot::Receiver<JoinOutcome>) {
    let first = now_or_panic(c.join(args("", None), t));
    assert_eq!(first.error, MEMBER_ID_REQUIRED);
    let rx = later(c.join(args(&first.member_id, None), t));
    (first.member_id, rx)
}

/// Three members, first generation complete and synced. Returns ids (leader first).
fn stable_three(c: &Coordinator, t0: Instant) -> Vec<String> {
    let mut joins: Vec<_> = (0..3).map(|i| join_new(c, t0 + Duration::from_millis(i * 100))).collect();
    // Still inside the initial delay: nobody answered yet.
    c.tick(t0 + Duration::from_millis(2000));
    assert!(joins.iter_mut().all(|(_, rx)| rx.try_recv().is_err()));
    c.tick(t0 + Duration::from_millis(3300));
    let outs: Vec<JoinOutcome> = joins.iter_mut().map(|(_, rx)| rx.try_recv().unwrap()).collect();
    assert!(outs.iter().all(|o| o.error == NONE && o.generation == 1));
    let leader = outs[0].leader.clone();
    assert_eq!(leader, joins[0].0, "the first to join leads");
    assert_eq!(outs[0].members.len(), 3);
    assert!(outs[1].members.is_empty() && outs[2].members.is_empty());
    let t = t0 + Duration::from_millis(3400);
    let f1 = later(c.sync("g", 1, &joins[1].0, None, None, None, vec![], t));
    let assign: Vec<(String, Bytes)> =
        joins.iter().enumerate().map(|(i, (id, _))| (id.clone(), Bytes::from(format!("a{i}")))).collect();
    let mut lrx = later(c.sync("g", 1, &leader, None, Some("consumer"), Some("range"), assign, t));
    assert_eq!(lrx.try_recv().unwrap().assignment, Bytes::from("a0"));
    let mut f1 = f1;
    assert_eq!(f1.try_recv().unwrap().assignment, Bytes::from("a1"));
    let late = now_or_panic(c.sync("g", 1, &joins[2].0, None, None, None, vec![], t));
    assert_eq!(late.assignment, Bytes::from("a2"));
    assert_eq!(c.describe("g").unwrap().state, State::Stable);
    joins.into_iter().map(|(id, _)| id).collect()
}

#[test]
fn three_members_form_a_generation() {
    let c = Coordinator::new(DELAY);
    stable_three(&c, Instant::now());
}

#[test]
fn leaving_member_triggers_a_rebalance_of_the_rest() {
    let c = Coordinator::new(DELAY);
    let t0 = Instant::now();
    let ids = stable_three(&c, t0);
    let t = t0 + Duration::from_secs(4);
    assert_eq!(c.leave("g", &[(ids[2].clone(), None)], t), vec![NONE]);
    assert_eq!(c.heartbeat("g", 1, &ids[0], None, t), REBALANCE_IN_PROGRESS);
    assert_eq!(c.heartbeat("g", 1, &ids[2], None, t), UNKNOWN_MEMBER_ID);
    let mut a = later(c.join(args(&ids[0], None), t));
    assert!(a.try_recv().is_err(), "waits for the other member");
    let mut b = later(c.join(args(&ids[1], None), t));
    let (oa, ob) = (a.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!((oa.generation, ob.generation), (2, 2));
    assert_eq!(oa.members.len(), 2, "leader sees the two left");
    assert_eq!(c.heartbeat("g", 1, &ids[0], None, t), ILLEGAL_GENERATION);
}

#[test]
fn silent_member_expires_and_the_group_rebalances() {
    let c = Coordinator::new(DELAY);
    let t0 = Instant::now();
    let ids = stable_three(&c, t0);
    // Two keep heart-beating, the third goes quiet past its 10 s session.
    for s in 1..=12 {
        let t = t0 + Duration::from_secs(3) + Duration::from_secs(s);
        c.heartbeat("g", 1, &ids[0], None, t);
        c.heartbeat("g", 1, &ids[1], None, t);
        c.tick(t);
    }
    let t = t0 + Duration::from_secs(16);
    let d = c.describe("g").unwrap();
    assert_eq!(d.state, State::PreparingRebalance);
    assert_eq!(d.members.len(), 2);
    assert_eq!(c.heartbeat("g", 1, &ids[0], None, t), REBALANCE_IN_PROGRESS);
}

#[test]
fn member_that_never_rejoins_is_dropped_at_the_rebalance_timeout() {
    let c = Coordinator::new(DELAY);
    let t0 = Instant::now();
    let ids = stable_three(&c, t0);
    let t = t0 + Duration::from_secs(5);
    let mut a = later(c.join(args(&ids[0], None), t)); // leader rejoin: rebalance
    let mut b = later(c.join(args(&ids[1], None), t));
    // ids[2] keeps heart-beating but never rejoins.
    for s in 1..=31 {
        let tt = t + Duration::from_secs(s);
        c.heartbeat("g", 1, &ids[2], None, tt);
        c.tick(tt);
    }
    let (oa, ob) = (a.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!((oa.generation, ob.generation, oa.members.len()), (2, 2, 2));
}

#[test]
fn static_member_rejoins_without_a_rebalance_and_fences_its_old_id() {
    let c = Coordinator::new(Duration::ZERO);
    let t = Instant::now();
    let mut rx = later(c.join(args("", Some("i-1")), t));
    let first = rx.try_recv().unwrap();
    assert_eq!((first.error, first.generation), (NONE, 1));
    let old = first.member_id.clone();
    let s = later(c.sync("g", 1, &old, Some("i-1"), None, None, vec![], t)).try_recv().unwrap();
    assert_eq!(s.error, NONE);
    // A second static member joins; the group rebalances to generation 2.
    let mut rx2 = later(c.join(args("", Some("i-2")), t));
    let mut rx1 = later(c.join(args(&old, Some("i-1")), t));
    let (o1, o2) = (rx1.try_recv().unwrap(), rx2.try_recv().unwrap());
    assert_eq!((o1.generation, o2.generation), (2, 2));
    let assign = vec![(old.clone(), Bytes::from("A")), (o2.member_id.clone(), Bytes::from("B"))];
    later(c.sync("g", 2, &old, Some("i-1"), None, None, assign, t));
    // i-2 restarts: joins with no member id but its instance id.
    let back = now_or_panic(c.join(args("", Some("i-2")), t));
    assert_eq!((back.error, back.generation), (NONE, 2), "no rebalance");
    assert_ne!(back.member_id, o2.member_id);
    let s = now_or_panic(c.sync("g", 2, &back.member_id, Some("i-2"), None, None, vec![], t));
    assert_eq!(s.assignment, Bytes::from("B"), "keeps its assignment");
    assert_eq!(c.heartbeat("g", 2, &o2.member_id, Some("i-2"), t), FENCED_INSTANCE_ID);
    assert_eq!(c.heartbeat("g", 2, &old, Some("i-1"), t), NONE);
    assert_eq!(c.describe("g").unwrap().state, State::Stable);
}

#[test]
fn commit_rules_follow_kafka() {
    let c = Coordinator::new(DELAY);
    let t0 = Instant::now();
    assert_eq!(c.check_commit("solo", -1, "", None, t0), NONE, "simple consumer");
    assert_eq!(c.check_commit("solo", 3, "m", None, t0), UNKNOWN_MEMBER_ID, "unknown generation");
    let ids = stable_three(&c, t0);
    let t = t0 + Duration::from_secs(4);
    assert_eq!(c.check_commit("g", 1, &ids[1], None, t), NONE);
    assert_eq!(c.check_commit("g", 0, &ids[1], None, t), ILLEGAL_GENERATION);
    assert_eq!(c.check_commit("g", 1, "nobody", None, t), UNKNOWN_MEMBER_ID);
    assert_eq!(c.check_commit("g", -1, "", None, t), ILLEGAL_GENERATION, "active group");
    assert_eq!(c.delete("g"), Err(NON_EMPTY_GROUP));
}

#[test]
fn bad_joins_are_refused() {
    let c = Coordinator::new(DELAY);
    let t = Instant::now();
    let mut a = args("", None);
    a.session_timeout = Duration::from_millis(10);
    assert_eq!(now_or_panic(c.join(a, t)).error, INVALID_SESSION_TIMEOUT);
    let mut a = args("", None);
    a.protocols.clear();
    assert_eq!(now_or_panic(c.join(a, t)).error, INCONSISTENT_GROUP_PROTOCOL);
    assert_eq!(now_or_panic(c.join(args("made-up", None), t)).error, UNKNOWN_MEMBER_ID);
    let (id, _rx) = join_new(&c, t);
    let mut other = args("", None);
    other.protocols = vec![("roundrobin".into(), Bytes::new())];
    other.require_known_member_id = false;
    assert_eq!(now_or_panic(c.join(other, t)).error, INCONSISTENT_GROUP_PROTOCOL);
    assert_eq!(c.leave("g", &[(id, None)], t), vec![NONE]);
    c.tick(t + Duration::from_secs(60));
    assert!(c.list().is_empty(), "an empty group is forgotten");
}

#[test]
fn dropped_joiner_does_not_hold_up_the_rebalance() {
    let c = Coordinator::new(Duration::ZERO);
    let t = Instant::now();
    let (a, mut rxa) = join_new(&c, t);
    let first = rxa.try_recv().unwrap();
    assert_eq!(first.generation, 1);
    later(c.sync("g", 1, &a, None, None, None, vec![], t));
    let (b, rxb) = join_new(&c, t);
    drop(rxb); // its connection went away while waiting
    let mut rxa = later(c.join(args(&a, None), t));
    c.tick(t + Duration::from_millis(100));
    let out = rxa.try_recv().unwrap();
    assert_eq!((out.generation, out.members.len()), (2, 1));
    assert!(c.describe("g").unwrap().members.iter().all(|m| m.member_id != b));
}
