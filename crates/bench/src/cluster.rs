//! `baton bench failover`: three `serve --node-id` members of `--exe` on loopback, each with
//! its own directory and ports; the leader is SIGKILLed `--kills` times, and each time the
//! time from the SIGKILL to the first push answered 201 through a surviving member (issue
//! 14: median of at least 10 kills, at most 1.5 s) is measured.
//! With `--signal term` the leader is SIGTERMed instead and hands over (D45); measured is
//! the write unavailability: the longest time, from the signal until the old leader has
//! exited and a push was answered after that, in which no push was answered 201, while one
//! writer pushes through the surviving members back to back (issue 14: at most 150 ms).
//!
//! Between kills the killed member is started again on its directory and the next kill
//! waits until all three have applied the same log, so every kill starts from a whole,
//! caught-up cluster. Owns the members and the measurement. Must never leave a member
//! running (drop kills them) and never count an answer that came before the kill.

use crate::spawn::{free_port, Spawned};
use crate::storage::{median, Common};
use baton_client::Client;
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct FailoverArgs {
    #[command(flatten)]
    pub common: Common,
    /// Leader SIGKILLs measured.
    #[arg(long, default_value_t = 10)]
    pub kills: usize,
    /// The members' election timeout range, ms (`--raft-election-min-ms`/`-max-ms`).
    #[arg(long, default_value_t = 400)]
    pub election_min_ms: u64,
    #[arg(long, default_value_t = 800)]
    pub election_max_ms: u64,
    /// How the leader is stopped: `kill` (SIGKILL, a crash) or `term` (SIGTERM, a hand-over).
    #[arg(long, value_enum, default_value_t = Stop::Kill)]
    pub signal: Stop,
    /// Longest one failover may take before the run fails, seconds.
    #[arg(long, default_value_t = 30)]
    pub give_up_secs: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stop {
    Kill,
    Term,
}

/// The targets: median from SIGKILL to the first committed write; median write
/// unavailability during a SIGTERM hand-over.
const TARGET: Duration = Duration::from_millis(1500);
const TARGET_TERM: Duration = Duration::from_millis(150);

struct Member {
    id: u64,
    args: Vec<String>,
    data: PathBuf,
    proc: Option<Spawned>,
    client: Option<Client>,
}

impl Member {
    async fn start(&mut self, c: &Common) -> Result<(), String> {
        let mut args = self.args.clone();
        args.extend(c.server_args.iter().cloned());
        let mut s = Spawned::start_with(c.exe.as_deref(), Some(&self.data), &args)?;
        let client = Client::new(&s.url, 4).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(c.ready_timeout_secs);
        while client.get_raw("/cluster", Duration::ZERO).await.map(|(st, _)| st.as_u16()) != Ok(200) {
            s.check_alive()?;
            if Instant::now() >= deadline {
                return Err(format!("member {} did not answer /cluster; log:\n{}", self.id, s.log_tail(4000)));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.proc = Some(s);
        self.client = Some(client);
        Ok(())
    }

    async fn view(&self) -> Option<Value> {
        let (st, body) = self.client.as_ref()?.get_raw("/cluster", Duration::ZERO).await.ok()?;
        if st != 200 {
            return None;
        }
        serde_json::from_slice(&body).ok()
    }
}

pub async fn run(a: &FailoverArgs) -> Result<crate::storage::Report, String> {
    if a.kills == 0 {
        return Err("--kills must be positive".into());
    }
    let dir = tempfile::Builder::new().prefix("baton-failover-").tempdir().map_err(|e| e.to_string())?;
    let raft: Vec<u16> = (0..3).map(|_| free_port()).collect::<Result<_, _>>()?;
    let kafka: Vec<u16> = (0..3).map(|_| free_port()).collect::<Result<_, _>>()?;
    let peers = (0..3).map(|i| format!("{}=127.0.0.1:{}", i + 1, raft[i])).collect::<Vec<_>>().join(",");
    let mut members: Vec<Member> = (0..3u64)
        .map(|i| Member {
            id: i + 1,
            args: vec![
                "--node-id".into(),
                (i + 1).to_string(),
                "--peers".into(),
                peers.clone(),
                "--raft-election-min-ms".into(),
                a.election_min_ms.to_string(),
                "--raft-election-max-ms".into(),
                a.election_max_ms.to_string(),
                // A member's Kafka port is fixed: the others name it in Metadata.
                "--kafka-addr".into(),
                format!("127.0.0.1:{}", kafka[i as usize]),
            ],
            data: dir.path().join(format!("n{}", i + 1)),
            proc: None,
            client: None,
        })
        .collect();
    for m in &mut members {
        m.start(&a.common).await?;
    }
    let mut took = Vec::new();
    for k in 0..a.kills {
        let l = caught_up_leader(&members, Duration::from_secs(a.common.ready_timeout_secs)).await?;
        let give_up = Duration::from_secs(a.give_up_secs);
        let d = match a.signal {
            Stop::Kill => {
                let t0 = Instant::now();
                members[l].proc.as_mut().map(|p| p.kill9()).transpose()?;
                members[l].proc = None;
                members[l].client = None;
                first_push(&members, k, t0, give_up).await?
            }
            Stop::Term => unavailable(&mut members, l, k, give_up).await?,
        };
        if !a.common.no_progress {
            let what = match a.signal {
                Stop::Kill => "SIGKILLed, a push answered 201 after",
                Stop::Term => "SIGTERMed, no push answered for at most",
            };
            eprintln!("round {}: member {} {what} {:.0} ms", k + 1, l + 1, ms(d));
        }
        took.push(d);
        members[l].start(&a.common).await?;
    }
    let med = Duration::from_secs_f64(median(took.iter().map(|d| d.as_secs_f64()).collect()));
    let max = took.iter().max().copied().unwrap_or_default();
    let (target, what) = match a.signal {
        Stop::Kill => (TARGET, "leader SIGKILL -> first push answered 201 through a surviving member"),
        Stop::Term => (TARGET_TERM, "leader SIGTERM (hand-over) -> longest time no push was answered 201"),
    };
    let met = if med <= target { "met" } else { "missed" };
    let table = format!(
        "failover: {what}\n\
         kills {}, election {}-{} ms\n\
         median {:.0} ms (target <= {} ms: {met}), max {:.0} ms\n\
         each: {}",
        took.len(),
        a.election_min_ms,
        a.election_max_ms,
        ms(med),
        target.as_millis(),
        ms(max),
        took.iter().map(|d| format!("{:.0}", ms(*d))).collect::<Vec<_>>().join(" ")
    );
    let json = json!({
        "scenario": "failover",
        "signal": format!("{:?}", a.signal).to_lowercase(),
        "kills": took.len(),
        "election_ms": [a.election_min_ms, a.election_max_ms],
        "median_ms": ms(med),
        "max_ms": ms(max),
        "each_ms": took.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
        "target_ms": target.as_millis() as u64,
        "target": met,
    });
    Ok(crate::storage::Report { table, json, failure: None })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The member whose engine leads, once all three have applied the same last entry.
async fn caught_up_leader(members: &[Member], within: Duration) -> Result<usize, String> {
    let deadline = Instant::now() + within;
    loop {
        let mut views = Vec::new();
        for m in members {
            views.push(m.view().await);
        }
        let applied: Vec<Option<u64>> =
            views.iter().map(|v| v.as_ref().and_then(|v| v["lastApplied"].as_u64())).collect();
        let same = applied[0].is_some() && applied.iter().all(|a| *a == applied[0]);
        let leading = views.iter().position(|v| v.as_ref().is_some_and(|v| v["leading"] == true));
        if let (true, Some(l)) = (same, leading) {
            return Ok(l);
        }
        if Instant::now() >= deadline {
            return Err(format!("the members did not agree on a leader and a log within {within:?}: {views:?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Pushes one message at a time through the surviving members in turn until one is
/// answered 201; the time from `t0` to that answer.
async fn first_push(members: &[Member], kill: usize, t0: Instant, give_up: Duration) -> Result<Duration, String> {
    let alive: Vec<&Client> = members.iter().filter_map(|m| m.client.as_ref()).collect();
    let urls: Vec<_> =
        alive.iter().map(|c| c.url("/api/v1/push")).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    for attempt in 0u64.. {
        let i = attempt as usize % alive.len();
        let body = json!({"items": [{"queue": "failover", "payload": {"kill": kill, "attempt": attempt}}]});
        let sent = alive[i].post_raw(&urls[i], body.to_string().into_bytes()).await;
        if let Ok((st, _)) = sent {
            if st.as_u16() == 201 {
                return Ok(t0.elapsed());
            }
        }
        if t0.elapsed() >= give_up {
            return Err(format!("no push was answered 201 within {give_up:?} of the leader's SIGKILL"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    unreachable!("the loop returns")
}

/// SIGTERMs member `l` while one writer pushes through the others back to back; the longest
/// time from the signal on in which no push was answered 201, up to the first answer after
/// the member exited.
async fn unavailable(members: &mut [Member], l: usize, round: usize, give_up: Duration) -> Result<Duration, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let alive: Vec<Client> =
        members.iter().enumerate().filter(|(i, _)| *i != l).filter_map(|(_, m)| m.client.clone()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let writer = {
        let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
        tokio::spawn(async move {
            for attempt in 0u64.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let c = &alive[attempt as usize % alive.len()];
                let Ok(url) = c.url("/api/v1/push") else { return };
                let body = json!({"items": [{"queue": "failover", "payload": {"round": round, "attempt": attempt}}]});
                match c.post_raw(&url, body.to_string().into_bytes()).await {
                    Ok((st, _)) if st.as_u16() == 201 => answered.lock().expect("not poisoned").push(Instant::now()),
                    _ => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            }
        })
    };
    // The writer runs steadily before the signal.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut proc = members[l].proc.take().ok_or("the leader is not running")?;
    members[l].client = None;
    let t0 = Instant::now();
    let exited = tokio::task::spawn_blocking(move || proc.terminate(give_up).map_err(|e| e.to_string()))
        .await
        .map_err(|e| e.to_string())?;
    let exited_at = Instant::now();
    let mut result = exited.map(|_| ());
    while result.is_ok() && answered.lock().expect("not poisoned").last().is_none_or(|t| *t <= exited_at) {
        if t0.elapsed() >= give_up {
            result = Err(format!("no push was answered 201 within {give_up:?} of the leader's SIGTERM"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let _ = writer.await;
    result?;
    let mut points = vec![t0];
    points.extend(answered.lock().expect("not poisoned").iter().filter(|t| **t > t0));
    Ok(points.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default())
}
