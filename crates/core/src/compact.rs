//! Log compaction of `cleanup.policy=compact` topics (issue 15, D50): the latest record
//! per key is kept, older ones with the same key are dropped from closed segments (and a
//! latest tombstone once past `delete.retention.ms`, D68); consecutive closed segments
//! that fit in one are merged (D69).
//!
//! Owns choosing what to compact (on the planner, from what it already holds: no I/O), the
//! compactor thread that reads and rewrites segment files off the planner, and handing a
//! rewritten segment back to the planner, which swaps it in ([`PartitionFiles::swap`]).
//! Must never change an offset, a batch's span or anything the log replays; never touch the
//! active segment or any offset at or past the durable last stable offset; never drop a
//! control record, a record without a key, or a record of an aborted transaction (nor let
//! one count as the latest of its key); never block the planner on I/O; never hold more
//! than `max_keys` keys in memory. Each node compacts its own files, as each Kafka replica
//! runs its own cleaner: compaction is not in the log, and members may hold different
//! generations of the same segment with the same records readable through them.
//!
//! [`PartitionFiles::swap`]: crate::store::PartitionFiles::swap

use crate::files::{file_path, Kind, Store};
use crate::index::{BatchRec, REC};
use crate::state::State;
use crate::topic_config::compacts;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Default for `--compaction-max-keys`: distinct keys one pass tracks (about 40 bytes each).
pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

/// Counters for /metrics.
#[derive(Debug, Default)]
pub struct CompactStats {
    pub passes: AtomicU64,
    pub segments_rewritten: AtomicU64,
    pub records_removed: AtomicU64,
    pub bytes_reclaimed: AtomicU64,
    /// Passes that met `--compaction-max-keys`: keys seen after that were kept, not compacted.
    pub capped_passes: AtomicU64,
    pub failures: AtomicU64,
}

/// A segment a pass reads, as the planner knew it when it offered the job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSeg {
    pub base: u64,
    pub gen: u32,
    pub len: u64,
    pub batches: u64,
    pub msgs: u64,
}

/// One pass over one partition's closed segments.
#[derive(Debug)]
pub struct Job {
    pub part: u32,
    pub dir: PathBuf,
    pub segs: Vec<JobSeg>,
    /// Spans of aborted transactions' records (`start -> end`, D48).
    pub aborted: BTreeMap<u64, u64>,
    /// A tombstone that is its key's latest goes too when its batch was written before
    /// this (the topic's `delete.retention.ms`, D68); 0 keeps every tombstone.
    pub tombstones_before: crate::model::Micros,
    /// Consecutive segments whose bytes together stay within this are merged into one
    /// (D69); 0 merges nothing.
    pub segment_bytes: u64,
}

/// What a partition offers a pass (D70): its closed segments a pass may read, and how many
/// of their bytes no pass has read yet.
#[derive(Debug)]
pub struct Cleanable {
    pub segs: Vec<JobSeg>,
    /// The offset they end at.
    pub through: u64,
    /// Bytes of the segments the last pass read (as they are now), and of the ones after.
    pub clean: u64,
    pub dirty: u64,
    /// The earliest write stamp among the dirty segments.
    pub dirty_since: crate::model::Micros,
}

impl Cleanable {
    /// Kafka's rule: a pass when the dirty bytes are more than `min_ratio` of all, or when a
    /// dirty record has waited `max_lag_before` (`max.compaction.lag.ms`) and more.
    pub fn due(&self, min_ratio: f64, max_lag_before: crate::model::Micros) -> bool {
        let total = self.clean + self.dirty;
        self.dirty > 0 && (self.dirty as f64 / total as f64 > min_ratio || self.dirty_since < max_lag_before)
    }
}

/// One or more consecutive segments rewritten as one, under the first one's base and next
/// generation, for the planner to swap in.
#[derive(Debug, Clone)]
pub struct Rewritten {
    pub part: u32,
    pub dir: PathBuf,
    pub base: u64,
    /// The segments it replaces, as the pass read them: (base, generation, batches).
    pub olds: Vec<(u64, u32, u64)>,
    pub new_gen: u32,
    pub len: u64,
    /// Records dropped and bytes freed, counted once the planner swaps it in.
    pub removed: u64,
    pub reclaimed: u64,
}

impl Rewritten {
    /// The new generation's files: deleted when the swap is refused.
    pub fn files(&self) -> Vec<PathBuf> {
        Kind::ALL.map(|k| file_path(&self.dir, self.base, self.new_gen, k)).to_vec()
    }
}

struct Inner {
    slot: Mutex<Option<Job>>,
    cv: Condvar,
    busy: AtomicBool,
    stop: AtomicBool,
    max_keys: usize,
    store: Arc<Store>,
}

/// The compactor thread: one job at a time, offered by the planner only while it is idle.
pub struct Compactor {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Compactor(busy: {})", self.inner.busy.load(Relaxed))
    }
}

impl Compactor {
    pub fn start(store: Arc<Store>, max_keys: usize) -> io::Result<Compactor> {
        let inner = Arc::new(Inner {
            slot: Mutex::new(None),
            cv: Condvar::new(),
            busy: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            max_keys: max_keys.max(1),
            store,
        });
        let i = inner.clone();
        std::thread::Builder::new().name("baton-compact".into()).spawn(move || run(&i))?;
        Ok(Compactor { inner })
    }

    fn idle(&self) -> bool {
        !self.inner.busy.load(Relaxed)
    }

    fn offer(&self, job: Job) {
        self.inner.busy.store(true, Relaxed);
        *self.inner.slot.lock() = Some(job);
        self.inner.cv.notify_one();
    }
}

impl Drop for Compactor {
    /// The thread ends after the pass it is in (a member's rebuild drops the old state's).
    fn drop(&mut self) {
        self.inner.stop.store(true, Relaxed);
        let _guard = self.inner.slot.lock();
        self.inner.cv.notify_one();
    }
}

fn run(inner: &Inner) {
    loop {
        let job = {
            let mut slot = inner.slot.lock();
            loop {
                if inner.stop.load(Relaxed) {
                    return;
                }
                if let Some(j) = slot.take() {
                    break j;
                }
                inner.cv.wait(&mut slot);
            }
        };
        let stats = &inner.store.compaction;
        match compact(&job, inner.max_keys, stats) {
            Ok(done) => inner.store.waiting.compacted.lock().extend(done),
            Err(e) => {
                stats.failures.fetch_add(1, Relaxed);
                tracing::warn!(part = job.part, error = %e, "compaction pass failed; the segments stay as they are");
            }
        }
        inner.busy.store(false, Relaxed);
    }
}

/// A topic's millisecond config in microseconds, or its Kafka default.
fn micros(configs: &BTreeMap<String, String>, name: &str, default_ms: u64) -> u64 {
    configs.get(name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(default_ms).saturating_mul(1000)
}

impl State {
    /// The planner's part, each second: swap in what the compactor rewrote, then offer it the
    /// next partition of a compacted topic with a closed segment no pass has read.
    pub fn compaction_tick(&mut self) {
        let done = std::mem::take(&mut *self.storage.store.waiting.compacted.lock());
        for r in done {
            let swapped = self.parts.get_mut(&r.part).and_then(|p| p.files.as_mut()).and_then(|f| f.swap(&r));
            match swapped {
                Some(old) => {
                    let st = &self.storage.store.compaction;
                    st.segments_rewritten.fetch_add(1, Relaxed);
                    st.records_removed.fetch_add(r.removed, Relaxed);
                    st.bytes_reclaimed.fetch_add(r.reclaimed, Relaxed);
                    self.graveyard.extend(old);
                    self.compaction_unsaved = true;
                }
                None => self.graveyard.extend(r.files()),
            }
        }
        let Some(c) = self.storage.compactor.clone() else { return };
        if !c.idle() {
            return;
        }
        // D68: a segment holding a record younger than `min.compaction.lag.ms` waits (and
        // the ones after it); a tombstone older than `delete.retention.ms` goes. Measured on
        // this node's clock against the batches' stamps (compaction is each node's own, not
        // in the log, I1); an idle topic's segments come of age without a new entry.
        let now = crate::engine::wall_micros();
        let queues: Vec<_> = self
            .topic_configs
            .iter()
            .filter(|(_, m)| compacts(m))
            .map(|(q, m)| {
                let settled_before = match micros(m, "min.compaction.lag.ms", 0) {
                    0 => crate::model::Micros::MAX,
                    lag => now.saturating_sub(lag),
                };
                let keep_tombstones = micros(m, "delete.retention.ms", 86_400_000);
                // D70: a pass only when enough of the partition is dirty, or a dirty record
                // has waited `max.compaction.lag.ms`.
                let ratio = m.get("min.cleanable.dirty.ratio").and_then(|r| r.parse::<f64>().ok()).unwrap_or(0.5);
                let max_lag_before = match m.get("max.compaction.lag.ms").and_then(|v| v.parse::<u64>().ok()) {
                    Some(ms) => now.saturating_sub(ms.saturating_mul(1000)),
                    None => 0,
                };
                (*q, settled_before, now.saturating_sub(keep_tombstones), ratio, max_lag_before)
            })
            .collect();
        for (q, settled_before, tombstones_before, ratio, max_lag_before) in queues {
            let Some(parts) = self.queues.get(&q).map(|q| q.parts.clone()) else { continue };
            for id in parts {
                let Some(p) = self.parts.get_mut(&id) else { continue };
                let upto = p.stable_end();
                let Some(f) = p.files.as_mut() else { continue };
                let Some(cl) = f.compaction_segments(upto, settled_before) else { continue };
                if !cl.due(ratio, max_lag_before) {
                    continue;
                }
                f.compacted_through = cl.through;
                let (part, dir) = f.job_target();
                let segment_bytes = f.segment_bytes();
                let aborted = p.txns.hidden.clone();
                c.offer(Job { part, dir, segs: cl.segs, aborted, tombstones_before, segment_bytes });
                return;
            }
        }
    }
}

/// The key a pass compares records by: 128 bits of SipHash under a key of this process, so
/// a client cannot choose two keys that collide.
struct KeyHash(siphasher::sip128::SipHasher13);

impl KeyHash {
    fn new() -> KeyHash {
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new();
        KeyHash(siphasher::sip128::SipHasher13::new_with_keys(r.hash_one(1u64), r.hash_one(2u64)))
    }

    fn of(&self, key: &[u8]) -> u128 {
        use siphasher::sip128::Hasher128;
        let mut h = self.0;
        std::hash::Hasher::write(&mut h, key);
        h.finish128().as_u128()
    }
}

/// A batch written inside a Kafka transaction (whole batches only reach here).
fn transactional(b: &[u8]) -> bool {
    b.len() > 22 && baton_wire::is_transactional(b)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// Every batch of one segment in order, with its index record.
fn each_batch(job: &Job, s: &JobSeg, mut f: impl FnMut(u64, &BatchRec, &[u8]) -> io::Result<()>) -> io::Result<()> {
    let idx = File::open(file_path(&job.dir, s.base, s.gen, Kind::Idx))?;
    let mut seg = BufReader::with_capacity(1 << 20, File::open(file_path(&job.dir, s.base, s.gen, Kind::Seg))?);
    let (mut pos, mut buf, mut recs) = (0u64, Vec::new(), vec![0u8; 4096 * REC as usize]);
    let mut i = 0;
    while i < s.batches {
        let n = (s.batches - i).min(4096);
        let chunk = &mut recs[..(n * REC) as usize];
        idx.read_exact_at(chunk, i * REC)?;
        for r in chunk.chunks_exact(REC as usize) {
            let rec = BatchRec::decode(r);
            if rec.pos != pos || rec.pos + u64::from(rec.len) > s.len {
                return Err(invalid(format!("segment {} index record {i} does not follow its file", s.base)));
            }
            buf.resize(rec.len as usize, 0);
            seg.read_exact(&mut buf)?;
            f(i, &rec, &buf)?;
            pos += u64::from(rec.len);
            i += 1;
        }
    }
    Ok(())
}

/// One pass: the latest offset of each key over the job's segments, then each segment with
/// an older record of some key rewritten without it. Returns the segments rewritten.
pub fn compact(job: &Job, max_keys: usize, stats: &CompactStats) -> io::Result<Vec<Rewritten>> {
    let hash = KeyHash::new();
    let aborted = |o: u64| job.aborted.range(..=o).next_back().is_some_and(|(_, e)| *e > o);
    // Key -> (its latest offset, whether that latest is a tombstone old enough to go).
    let mut latest: HashMap<u128, (u64, bool), foldhash::fast::RandomState> = HashMap::default();
    let mut capped = false;
    for s in &job.segs {
        each_batch(job, s, |_, rec, b| {
            // Records of an aborted transaction are no key's latest.
            let txn = transactional(b);
            let old = rec.ts < job.tombstones_before;
            baton_wire::compact::keys_of(b, |o, k, tombstone| {
                let Some(k) = k.filter(|_| !(txn && aborted(o))) else { return };
                let h = hash.of(k);
                if let Some(v) = latest.get_mut(&h) {
                    *v = (o, tombstone && old);
                } else if latest.len() < max_keys {
                    latest.insert(h, (o, tombstone && old));
                } else {
                    capped = true;
                }
            })
            .map_err(invalid)?;
            Ok(())
        })?;
    }
    stats.passes.fetch_add(1, Relaxed);
    if capped {
        stats.capped_passes.fetch_add(1, Relaxed);
    }
    let drop = |txn: bool, o: u64, k: Option<&[u8]>| {
        k.is_some_and(|k| {
            !(txn && aborted(o)) && latest.get(&hash.of(k)).is_some_and(|(l, gone)| *l > o || (*l == o && *gone))
        })
    };
    // D69: consecutive segments whose bytes (as they are now, before this pass drops
    // anything) fit in one segment are written as one, so a compacted topic does not keep
    // a segment's three files for every segment it ever closed.
    let mut out = Vec::new();
    let mut group: Vec<&JobSeg> = Vec::new();
    for s in &job.segs {
        let bytes: u64 = group.iter().map(|g| g.len).sum();
        if !group.is_empty() && bytes + s.len > job.segment_bytes {
            out.extend(rewrite(job, &group, &drop)?);
            group.clear();
        }
        group.push(s);
    }
    if !group.is_empty() {
        out.extend(rewrite(job, &group, &drop)?);
    }
    Ok(out)
}

/// Whether a record goes: (its batch is transactional, offset, key).
type Drops<'a> = dyn Fn(bool, u64, Option<&[u8]>) -> bool + 'a;

/// The consecutive segments `group` rewritten as one under the first one's base and next
/// generation, without the records `drop` names; `None` when it is one segment that drops
/// none (nothing is written then).
fn rewrite(job: &Job, group: &[&JobSeg], drop: &Drops) -> io::Result<Option<Rewritten>> {
    // (segment in the group, batch) -> offsets dropped
    let mut drops: HashMap<(usize, u64), HashSet<u64>> = HashMap::new();
    for (n, s) in group.iter().enumerate() {
        each_batch(job, s, |i, _, b| {
            let (mut d, txn) = (HashSet::new(), transactional(b));
            baton_wire::compact::keys_of(b, |o, k, _| {
                if drop(txn, o, k) {
                    d.insert(o);
                }
            })
            .map_err(invalid)?;
            if !d.is_empty() {
                drops.insert((n, i), d);
            }
            Ok(())
        })?;
    }
    if drops.is_empty() && group.len() == 1 {
        return Ok(None);
    }
    let first = group[0];
    let gen = first.gen + 1;
    let path = |k| file_path(&job.dir, first.base, gen, k);
    let mut seg = BufWriter::with_capacity(1 << 20, File::create(path(Kind::Seg))?);
    let mut idx = BufWriter::new(File::create(path(Kind::Idx))?);
    let (mut pos, mut removed, mut rec_bytes) = (0u64, 0u64, Vec::with_capacity(REC as usize));
    for (n, s) in group.iter().enumerate() {
        each_batch(job, s, |i, rec, b| {
            let bytes = match drops.get(&(n, i)) {
                Some(d) => {
                    removed += d.len() as u64;
                    baton_wire::compact::without(b, |o| !d.contains(&o)).map_err(invalid)?
                }
                None => None,
            };
            let bytes = bytes.as_deref().unwrap_or(b);
            seg.write_all(bytes)?;
            let len = u32::try_from(bytes.len()).map_err(invalid)?;
            rec_bytes.clear();
            BatchRec { pos, len, ..*rec }.encode(&mut rec_bytes);
            idx.write_all(&rec_bytes)?;
            pos += u64::from(len);
            Ok(())
        })?;
    }
    seg.into_inner().map_err(|e| e.into_error())?;
    idx.into_inner().map_err(|e| e.into_error())?;
    // The transaction-id records are by offset and do not change: one segment's file is
    // linked; merged segments' are their files one after the other (offsets run on).
    let txid = path(Kind::Txid);
    match fs::remove_file(&txid) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    if let [s] = group {
        fs::hard_link(file_path(&job.dir, s.base, s.gen, Kind::Txid), &txid)?;
    } else {
        let mut w = BufWriter::new(File::create(&txid)?);
        for s in group {
            let want = s.msgs * crate::index::TXID;
            let got = io::copy(&mut File::open(file_path(&job.dir, s.base, s.gen, Kind::Txid))?.take(want), &mut w)?;
            if got != want {
                return Err(invalid(format!("segment {} has {got} bytes of txid records, not {want}", s.base)));
            }
        }
        w.into_inner().map_err(|e| e.into_error())?;
    }
    Ok(Some(Rewritten {
        part: job.part,
        dir: job.dir.clone(),
        base: first.base,
        olds: group.iter().map(|s| (s.base, s.gen, s.batches)).collect(),
        new_gen: gen,
        len: pos,
        removed,
        reclaimed: group.iter().map(|s| s.len).sum::<u64>().saturating_sub(pos),
    }))
}

#[cfg(test)]
#[path = "compact_tests.rs"]
mod tests;
