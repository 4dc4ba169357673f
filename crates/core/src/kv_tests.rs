//! KV and timer planning: versions, expiry, preconditions that roll back, and
//! timers that fire exactly once, including across a replay.

use crate::entry::Entry;
use crate::kv::{KvOp, KvResult};
use crate::plan::Planner;
use crate::state::{State, StorageConfig};
use crate::timers::TimerOp;

const S: u64 = 1_000_000;

fn planner(dir: &std::path::Path) -> Planner {
    Planner::new(State::new(StorageConfig {
        data_dir: dir.to_path_buf(),
        segment_bytes: 1 << 20,
        provisioner: None,
        defer_writes: false,
        ..Default::default()
    }))
}

fn put(key: &str, value: &str, expect: Option<u64>, required: bool) -> KvOp {
    KvOp::Put { ns: "n".into(), key: key.into(), value: value.into(), ttl_secs: None, expect, required }
}

fn get(key: &str) -> KvOp {
    KvOp::Get { ns: "n".into(), key: key.into() }
}

fn run(p: &mut Planner, log: &mut Vec<Entry>, now: u64, ops: &[KvOp]) -> Result<Vec<KvResult>, crate::kv::KvRollback> {
    p.begin(now);
    let r = p.kv(ops).unwrap();
    log.extend(p.finish().expect("a whole plan"));
    r
}

#[test]
fn versions_grow_and_preconditions_guard_writes() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(d.path());
    let mut log = Vec::new();
    let r = run(&mut p, &mut log, S, &[put("a", "1", Some(0), true), get("a")]).unwrap();
    let KvResult::Write { applied: true, version: v1, .. } = r[0] else { panic!("{r:?}") };
    assert!(
        matches!(&r[1], KvResult::Found(Some(row)) if row.value.as_deref() == Some("1")),
        "a later op sees an earlier write"
    );
    // A stale expected version is refused; not required means the rest still applies.
    let r = run(&mut p, &mut log, 2 * S, &[put("a", "2", Some(0), false), put("b", "x", None, false)]).unwrap();
    assert!(matches!(r[0], KvResult::Write { applied: false, reason: Some("exists"), .. }), "{r:?}");
    assert!(matches!(r[1], KvResult::Write { applied: true, .. }));
    // A required one rolls every op of the request back.
    let n = log.len();
    let rb = run(&mut p, &mut log, 3 * S, &[put("c", "y", None, false), put("a", "3", Some(7), true)]).unwrap_err();
    assert_eq!(rb.index, 1);
    assert_eq!(log.len(), n, "a rolled-back request writes no entry");
    assert!(!p.state.kv["n"].contains_key("c"));
    // Versions keep growing across a delete, so an old expectation never matches again.
    run(&mut p, &mut log, 4 * S, &[KvOp::Delete { ns: "n".into(), key: "a".into(), expect: Some(v1), required: true }])
        .unwrap();
    let r = run(&mut p, &mut log, 5 * S, &[put("a", "4", None, true), put("a", "5", None, true)]).unwrap();
    let (KvResult::Write { version: a, .. }, KvResult::Write { version: b, .. }) = (&r[0], &r[1]) else { panic!() };
    assert!(*a > v1 && b > a, "versions grow across a delete and within a request: {r:?}");
}

#[test]
fn expiry_incr_and_prefix() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(d.path());
    let mut log = Vec::new();
    let ttl = KvOp::Put {
        ns: "n".into(),
        key: "t".into(),
        value: "\"v\"".into(),
        ttl_secs: Some(10),
        expect: None,
        required: false,
    };
    run(&mut p, &mut log, S, &[ttl]).unwrap();
    assert!(matches!(&run(&mut p, &mut log, 5 * S, &[get("t")]).unwrap()[0], KvResult::Found(Some(_))));
    assert!(
        matches!(&run(&mut p, &mut log, 12 * S, &[get("t")]).unwrap()[0], KvResult::Found(None)),
        "expired keys read as absent"
    );
    let incr = |d: i64| KvOp::Incr {
        ns: "n".into(),
        key: "c".into(),
        delta: d,
        min: Some(0),
        max: Some(5),
        ttl_secs: None,
        required: false,
    };
    run(&mut p, &mut log, 13 * S, &[incr(3)]).unwrap();
    let r = run(&mut p, &mut log, 14 * S, &[incr(3)]).unwrap();
    assert!(matches!(r[0], KvResult::Write { applied: false, reason: Some("out_of_range"), .. }));
    let r = run(&mut p, &mut log, 15 * S, &[incr(-1), get("c")]).unwrap();
    assert!(matches!(&r[1], KvResult::Found(Some(row)) if row.value.as_deref() == Some("2")));
    for k in ["p/1", "p/2", "p/3", "q/1"] {
        run(&mut p, &mut log, 16 * S, &[put(k, "0", None, false)]).unwrap();
    }
    let scan = |after: Option<&str>| KvOp::GetPrefix {
        ns: "n".into(),
        prefix: "p/".into(),
        after: after.map(String::from),
        limit: 2,
        keys_only: true,
    };
    let r = run(&mut p, &mut log, 17 * S, &[scan(None), scan(Some("p/2"))]).unwrap();
    match (&r[0], &r[1]) {
        (KvResult::Prefix { rows: a, next_after: na }, KvResult::Prefix { rows: b, next_after: nb }) => {
            assert_eq!(a.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["p/1", "p/2"]);
            assert_eq!(na.as_deref(), Some("p/2"));
            assert_eq!(b.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["p/3"]);
            assert!(nb.is_none());
            assert!(a[0].value.is_none(), "keysOnly leaves values out");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn timers_fire_exactly_once_and_survive_replay() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(&d.path().join("live"));
    let mut log = Vec::new();
    let sched = |k: &str, ms: u64| TimerOp::Schedule {
        queue: "q".into(),
        key: k.into(),
        payload: "{\"k\":1}".into(),
        delay_ms: ms,
        partition: None,
        txn: format!("t-{k}"),
    };
    p.begin(S);
    let r = p
        .timers(&[sched("a", 5000), sched("b", 1000), TimerOp::Cancel { queue: "q".into(), key: "zz".into() }])
        .unwrap();
    log.extend(p.finish().expect("a whole plan"));
    assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), ["scheduled", "scheduled", "absent"]);
    p.begin(S + 500_000);
    assert_eq!(p.fire_timers().unwrap(), 0);
    assert!(p.finish().expect("a whole plan").is_none());
    p.begin(3 * S);
    assert_eq!(p.fire_timers().unwrap(), 1, "b is due");
    log.extend(p.finish().expect("a whole plan"));
    p.begin(3 * S + 1);
    assert_eq!(p.fire_timers().unwrap(), 0, "a fired timer does not fire again");
    assert_eq!(p.state.partition("q", "Default").unwrap().end, 1);
    // Replaying the log rebuilds the pending timer, which then fires once, late.
    let mut r = planner(&d.path().join("replay"));
    for e in &log {
        r.state.apply(e).unwrap();
    }
    assert_eq!(serde_json::to_value(&r.state.timers).unwrap(), serde_json::to_value(&p.state.timers).unwrap());
    r.begin(100 * S);
    assert_eq!(r.fire_timers().unwrap(), 1);
    assert_eq!(r.state.partition("q", "Default").unwrap().end, 2);
    assert!(r.state.timers.is_empty());
}

/// Regression (issue 12 item 17): a ttlSeconds of u64::MAX was stored and shown as 1970; a
/// timer delayMs of u64::MAX wrapped and fired at once. Both are refused now.
#[test]
fn out_of_range_ttls_and_delays_are_refused() {
    let put = KvOp::Put {
        ns: "n".into(),
        key: "k".into(),
        value: "1".into(),
        ttl_secs: Some(u64::MAX),
        expect: None,
        required: false,
    };
    assert_eq!(crate::kv::validate(&[put]).unwrap_err().code, "invalid_ttl");
    let t = crate::timers::TimerOp::Schedule {
        queue: "q".into(),
        key: "t".into(),
        payload: "1".into(),
        delay_ms: u64::MAX,
        partition: None,
        txn: "x".into(),
    };
    assert_eq!(crate::timers::validate(&[t]).unwrap_err().code, "invalid_delay");
}

/// Regression (issue 12 item 8): a prefix scan did not see the writes of earlier operations
/// of the same request, which every other read in the request sees.
#[test]
fn a_prefix_scan_sees_earlier_writes_of_the_same_request() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(d.path());
    let mut log = Vec::new();
    run(&mut p, &mut log, S, &[put("a/1", "1", None, false), put("a/2", "2", None, false)]).unwrap();
    let del = KvOp::Delete { ns: "n".into(), key: "a/1".into(), expect: None, required: false };
    let scan = KvOp::GetPrefix { ns: "n".into(), prefix: "a/".into(), after: None, limit: 10, keys_only: true };
    let out = run(&mut p, &mut log, 2 * S, &[put("a/3", "3", None, false), del, scan]).unwrap();
    let KvResult::Prefix { rows, next_after } = &out[2] else { panic!("{:?}", out[2]) };
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!((keys, next_after.clone()), (vec!["a/2", "a/3"], None));
    let page = KvOp::GetPrefix { ns: "n".into(), prefix: "a/".into(), after: None, limit: 1, keys_only: true };
    let out = run(&mut p, &mut log, 3 * S, &[put("a/0", "0", None, false), page]).unwrap();
    let KvResult::Prefix { rows, next_after } = &out[1] else { panic!("{:?}", out[1]) };
    assert_eq!((rows[0].key.as_str(), next_after.as_deref()), ("a/0", Some("a/0")));
}

/// Regression (issue 12 item 6): expired KV entries were never removed, only hidden.
#[test]
fn expired_entries_are_swept_a_budget_at_a_time() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(d.path());
    let mut log = Vec::new();
    let ops: Vec<KvOp> = (0..5)
        .map(|i| KvOp::Put {
            ns: "n".into(),
            key: format!("k{i}"),
            value: "v".into(),
            ttl_secs: (i < 4).then_some(1),
            expect: None,
            required: false,
        })
        .collect();
    run(&mut p, &mut log, S, &ops).unwrap();
    let mut cursor = None;
    p.begin(2 * S);
    assert_eq!(p.sweep_kv(&mut cursor, 3).unwrap(), 3, "k0..k2 expired, looked at 3 keys");
    assert_eq!(cursor, Some(("n".to_string(), "k2".to_string())));
    log.extend(p.finish().expect("a whole plan"));
    p.begin(2 * S + 1);
    assert_eq!(p.sweep_kv(&mut cursor, 3).unwrap(), 1, "k3 expired, k4 lives");
    assert_eq!(cursor, None, "the pass ended: the next starts over");
    log.extend(p.finish().expect("a whole plan"));
    assert_eq!(p.state.kv["n"].keys().collect::<Vec<_>>(), vec!["k4"]);
    let mut r = planner(&d.path().join("replay"));
    for e in &log {
        r.state.apply(e).unwrap();
    }
    assert_eq!(r.state.kv, p.state.kv, "the sweep replays");
}

/// A lost `expect` says why as Queen's client reads it: `version` (another version: its
/// lock client tells its own renewal from a takeover by it), `absent`, `exists`.
#[test]
fn a_lost_expect_names_its_reason() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner(d.path());
    let mut log = Vec::new();
    run(&mut p, &mut log, S, &[put("a", "1", None, false)]).unwrap();
    let check = |key: &str, expect| KvOp::Check { ns: "n".into(), key: key.into(), expect, required: false };
    let r = run(
        &mut p,
        &mut log,
        2 * S,
        &[check("a", 12345), check("zz", 7), check("a", 0), put("zz", "v", Some(3), false)],
    )
    .unwrap();
    let reasons: Vec<_> = r
        .iter()
        .map(|r| match r {
            KvResult::Write { reason, .. } => *reason,
            _ => None,
        })
        .collect();
    assert_eq!(reasons, [Some("version"), Some("absent"), Some("exists"), Some("absent")]);
}
