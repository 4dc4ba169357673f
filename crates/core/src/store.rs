//! Per-partition segment files: the record batches (`.seg`) and their index
//! (`.idx`, `.txid`; D29).
//!
//! Owns the files under `<data>/partitions/<part id>/`. Apply appends here
//! (page cache only); checkpoints sync; retention deletes whole segments.
//! Must never be the durable copy of anything newer than the last checkpoint:
//! the WAL is, and recovery cuts these files back to the checkpoint's marks
//! before replaying it. Holds no file descriptor of its own except for files
//! not yet under their name (D17): every other file is reached through the
//! node's [`Store`], which bounds how many are open.

use crate::appender::WriteTarget;
use crate::files::{file_path, FileKey, Kind, Store};
use crate::index::{decode_txid, BatchRec, SegIndex, TailBytes, REC, TXID};
use crate::model::{Micros, TxKey, DEDUP_FLAG};
use crate::provision::Provisioner;
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug)]
pub struct Segment {
    pub base: u64,
    /// 0 as written; compaction's rewrites count up (D50).
    pub gen: u32,
    pub len: u64,
    pub index: SegIndex,
    /// Written since the last checkpoint took its marks.
    pub dirty: bool,
    /// Files taken from the provisioner, reachable only by these handles until the
    /// provisioner's placements reach their ticket (D17, D29).
    pinned: Option<Pinned>,
}

/// A segment's unplaced files, counted in the store while held.
#[derive(Debug)]
struct Pinned {
    files: [Option<Arc<File>>; 3],
    ticket: u64,
    store: Arc<Store>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.store.unpinned();
    }
}

/// What a checkpoint records of one segment: the lengths recovery cuts the files back
/// to (`.seg` bytes, `.idx` records, `.txid` hashes), the time range of its batches, and
/// which generation of its files is the segment (D50). Checkpoint format 5 had no `gen`:
/// [`crate::checkpoint`] reads it through [`legacy_marks`] as generation 0.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SegmentMark {
    pub base: u64,
    pub len: u64,
    pub batches: u64,
    pub msgs: u64,
    pub first_ts: Micros,
    pub last_ts: Micros,
    pub gen: u32,
}

thread_local! {
    static LEGACY_MARKS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` (a checkpoint decode) reading marks in format 5's layout, without `gen`.
pub fn legacy_marks<T>(f: impl FnOnce() -> T) -> T {
    LEGACY_MARKS.with(|l| l.set(true));
    let out = f();
    LEGACY_MARKS.with(|l| l.set(false));
    out
}

impl<'de> Deserialize<'de> for SegmentMark {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct V5 {
            base: u64,
            len: u64,
            batches: u64,
            msgs: u64,
            first_ts: Micros,
            last_ts: Micros,
        }
        // Format 6 is format 5's fields and then `gen`: in bincode a struct is its fields in
        // order, so the pair (V5, u32) reads it.
        let (V5 { base, len, batches, msgs, first_ts, last_ts }, gen) =
            if LEGACY_MARKS.with(|l| l.get()) { (V5::deserialize(d)?, 0) } else { <(V5, u32)>::deserialize(d)? };
        Ok(SegmentMark { base, len, batches, msgs, first_ts, last_ts, gen })
    }
}

/// One segment's index tail for another thread to write (D31): by path through the store,
/// or by handle while the files are not under their names yet (D17).
#[derive(Debug, Clone)]
pub struct TailWrite {
    part: u32,
    base: u64,
    gen: u32,
    dir: PathBuf,
    /// `.idx` and `.txid` handles of a pinned segment.
    pinned: [Option<Arc<File>>; 2],
    bytes: TailBytes,
}

impl TailWrite {
    /// Write both records and tell the planner the files hold them. A file that is gone
    /// (its segment retired and deleted since) fails with `NotFound`.
    pub fn write(&self, store: &Store) -> io::Result<()> {
        let b = &self.bytes;
        for (n, kind, at, bytes) in [(0, Kind::Idx, b.idx_at, &b.idx), (1, Kind::Txid, b.txid_at, &b.txid)] {
            if bytes.is_empty() {
                continue;
            }
            let key = FileKey { part: self.part, base: self.base, gen: self.gen, kind };
            // Opened for this write only when closed: a thread writing thousands of cold
            // partitions' records must not fill the open set (nor reopen a retired file).
            let f = match self.pinned[n].clone().or_else(|| store.peek(key)) {
                Some(f) => f,
                None => {
                    Arc::new(fs::OpenOptions::new().write(true).open(file_path(&self.dir, self.base, self.gen, kind))?)
                }
            };
            f.write_all_at(bytes, at)?;
        }
        store.waiting.confirmed.lock().push((self.part, self.base, self.gen, b.batches, b.msgs));
        Ok(())
    }

    /// The segment's `.idx` path (what a graveyard entry covers when it was retired).
    pub fn path(&self) -> PathBuf {
        file_path(&self.dir, self.base, self.gen, Kind::Idx)
    }
}

/// A stored batch found by offset: its segment (by position) and record.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    pub seg: usize,
    pub i: u64,
    pub rec: BatchRec,
}

#[derive(Debug)]
pub struct PartitionFiles {
    part: u32,
    /// Shared with every pending write to this partition (D79): cloned per batch.
    dir: Arc<std::path::Path>,
    segment_bytes: u64,
    store: Arc<Store>,
    pub segments: Vec<Segment>,
    /// A segment file was created since the last checkpoint: the directory needs an fsync.
    dir_dirty: bool,
    /// Appended to since the last background writeback was started.
    touched: bool,
    /// Listed in the store's [`crate::files::Waiting`] lists (each at most once).
    in_sweep: bool,
    in_checkpoint: bool,
    /// The offset the last compaction pass offered read up to (D50; 0 after a start).
    pub compacted_through: u64,
    /// The active segment also closes once an entry stamped this long after its first
    /// batch appends to it (`segment.ms`, or `max.compaction.lag.ms` on a compacted topic,
    /// D70); `Micros::MAX` never.
    roll_age: Micros,
}

/// What a checkpoint takes from one partition ([`PartitionFiles::checkpoint`]).
#[derive(Debug)]
pub struct CheckpointPart {
    pub tails: Vec<TailWrite>,
    pub marks: Vec<SegmentMark>,
    pub files: Vec<PathBuf>,
    pub dir: Option<PathBuf>,
}

/// Where a stored batch lives, for readers off the planner thread.
#[derive(Debug, Clone)]
pub struct ReadSpan {
    pub file: Arc<File>,
    pub pos: u64,
    pub len: u32,
    /// (partition, segment base, generation): with `pos`, names these bytes for the life of
    /// the process (partition ids are never reused, stored bytes never change, and a
    /// compacted segment is another generation, D50), so a cache can key by it without
    /// holding the file open.
    pub id: (u32, u64, u32),
}

impl ReadSpan {
    pub fn read(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut buf, self.pos)?;
        Ok(buf)
    }
}

#[cfg(test)]
fn seg_path(dir: &Path, base: u64) -> PathBuf {
    file_path(dir, base, 0, Kind::Seg)
}

fn kind_no(k: Kind) -> usize {
    match k {
        Kind::Seg => 0,
        Kind::Idx => 1,
        Kind::Txid => 2,
    }
}

impl PartitionFiles {
    /// A partition with no segment yet; its directory is made with its first segment.
    pub fn create(part: u32, dir: PathBuf, segment_bytes: u64, store: Arc<Store>) -> PartitionFiles {
        PartitionFiles {
            part,
            dir: dir.into(),
            segment_bytes,
            store,
            segments: Vec::new(),
            dir_dirty: false,
            touched: false,
            in_sweep: false,
            in_checkpoint: false,
            compacted_through: 0,
            roll_age: Micros::MAX,
        }
    }

    /// Reopen after a crash to exactly the checkpointed marks: later bytes are rewritten
    /// by WAL replay, unknown files are removed. Keeps no file open.
    pub fn restore(
        part: u32,
        dir: PathBuf,
        segment_bytes: u64,
        store: Arc<Store>,
        marks: &[SegmentMark],
    ) -> io::Result<PartitionFiles> {
        fs::create_dir_all(&dir)?;
        let keep: Vec<PathBuf> =
            marks.iter().flat_map(|m| Kind::ALL.map(|k| file_path(&dir, m.base, m.gen, k))).collect();
        for ent in fs::read_dir(&dir)? {
            let p = ent?.path();
            if !keep.contains(&p) {
                fs::remove_file(&p)?;
            }
        }
        let mut segments = Vec::new();
        for m in marks {
            for (kind, want) in [(Kind::Seg, m.len), (Kind::Idx, m.batches * REC), (Kind::Txid, m.msgs * TXID)] {
                let path = file_path(&dir, m.base, m.gen, kind);
                let actual = fs::metadata(&path).map(|md| md.len()).unwrap_or(0);
                if actual != want {
                    if actual < want {
                        tracing::warn!(path = %path.display(), actual, expected = want, "file shorter than its checkpoint mark");
                    }
                    let f = fs::OpenOptions::new().write(true).create(true).truncate(false).open(&path)?;
                    f.set_len(want)?;
                }
            }
            segments.push(Segment {
                base: m.base,
                gen: m.gen,
                len: m.len,
                index: SegIndex::restored(m.batches, m.msgs, m.first_ts, m.last_ts),
                dirty: false,
                pinned: None,
            });
        }
        Ok(PartitionFiles { segments, ..Self::create(part, dir, segment_bytes, store) })
    }

    pub fn marks(&self) -> Vec<SegmentMark> {
        self.segments
            .iter()
            .map(|s| SegmentMark {
                base: s.base,
                len: s.len,
                batches: s.index.batches,
                msgs: s.index.msgs,
                first_ts: s.index.first_ts,
                last_ts: s.index.last_ts,
                gen: s.gen,
            })
            .collect()
    }

    fn key(&self, s: &Segment, kind: Kind) -> FileKey {
        FileKey { part: self.part, base: s.base, gen: s.gen, kind }
    }

    /// The open file `kind` of segment `i`: its pinned handle, or through the store.
    fn file(&self, i: usize, kind: Kind) -> io::Result<Arc<File>> {
        self.target(i, kind).open()
    }

    /// Where a write to file `kind` of segment `i` goes, without opening it (D79).
    fn target(&self, i: usize, kind: Kind) -> WriteTarget {
        let s = &self.segments[i];
        match s.pinned.as_ref().and_then(|p| p.files[kind_no(kind)].clone()) {
            Some(f) => WriteTarget::Open(f),
            None => WriteTarget::Stored { store: self.store.clone(), key: self.key(s, kind), dir: self.dir.clone() },
        }
    }

    /// Append a batch whose first offset is `base`; returns (segment base, position).
    pub fn append(
        &mut self,
        base: u64,
        ts: Micros,
        txids: &[TxKey],
        bytes: &[u8],
        provisioner: Option<&Provisioner>,
    ) -> io::Result<(u64, u64)> {
        let (seg, pos, file) = self.reserve(base, ts, txids, bytes.len() as u64, provisioner)?;
        if let Err(e) = file.write_all_at(bytes, pos) {
            // Give the room back: the next append must not leave a hole.
            let s = self.segments.last_mut().expect("reserve made one");
            s.len = pos;
            s.index.pop(txids.len());
            return Err(e);
        }
        Ok((seg, pos))
    }

    /// Room for `len` bytes of a batch whose first offset is `base`, indexed at once,
    /// without writing its bytes: (segment base, position, where they go). The caller
    /// writes them there before any reader is given the span (D18: the appender thread,
    /// before the frame completes). Opens nothing (D79): a frame that reserves in 100,000
    /// partitions must not hold 100,000 descriptors until its bytes are written.
    pub fn reserve(
        &mut self,
        base: u64,
        ts: Micros,
        txids: &[TxKey],
        len: u64,
        provisioner: Option<&Provisioner>,
    ) -> io::Result<(u64, u64, WriteTarget)> {
        if self.rolls(ts) {
            self.rotate(base, provisioner)?;
        }
        let i = self.segments.len() - 1;
        let file = self.target(i, Kind::Seg);
        if self.segments[i].index.tail_full() {
            // A failed flush keeps the tail (and is tried again by the next append or checkpoint).
            if let Err(e) = self.flush_segment(i) {
                tracing::warn!(part = self.part, error = %e, "could not write a partition index block; kept in memory");
            }
        }
        let seg = &mut self.segments[i];
        let pos = seg.len;
        seg.len += len;
        seg.index.push(BatchRec { base, ts, pos, len: len as u32, count: txids.len() as u32 }, txids);
        seg.dirty = true;
        let seg_base = seg.base;
        self.touched = true;
        self.note_sweep();
        self.note_checkpoint();
        Ok((seg_base, pos, file))
    }

    /// List this partition for the next writeback sweep (once).
    fn note_sweep(&mut self) {
        if !self.in_sweep {
            self.in_sweep = true;
            self.store.waiting.sweep.lock().push(self.part);
        }
    }

    /// List this partition for the next checkpoint (once).
    fn note_checkpoint(&mut self) {
        if !self.in_checkpoint {
            self.in_checkpoint = true;
            self.store.waiting.checkpoint.lock().push(self.part);
        }
    }

    /// The writeback sweep's visit (each second, only partitions listed for it): let go of
    /// placed files; the active segment to start writeback of if appended to; the index
    /// records written since the last sweep, for the writeback thread to write (a second
    /// after their appends, so a checkpoint finds few left, D31). Stays listed while it
    /// still holds files not yet placed.
    pub fn sweep(&mut self, provisioner: Option<&Provisioner>) -> (Option<Arc<File>>, Vec<TailWrite>) {
        self.in_sweep = false;
        self.release_pins(provisioner);
        let f = self.take_touched();
        let tails = self.tail_writes(false);
        if self.segments.iter().any(|s| s.pinned.is_some()) {
            self.note_sweep();
        }
        (f, tails)
    }

    /// A checkpoint's visit (only partitions listed for it): the marks, the index records
    /// the files must hold before the marks are true, the files to sync, and the directory
    /// if a file was made in it. No I/O here: the checkpoint's thread writes the records.
    /// `by_name`: the checkpoint syncs files one by one and needs their paths; otherwise it
    /// syncs their whole filesystem, and making three paths per partition was most of the
    /// planner's cost of a visit at 100,000 partitions.
    pub fn checkpoint(&mut self, provisioner: Option<&Provisioner>, by_name: bool) -> CheckpointPart {
        self.in_checkpoint = false;
        self.release_pins(provisioner);
        if self.segments.iter().any(|s| s.pinned.is_some()) {
            self.note_sweep();
        }
        let (files, dir) = if by_name {
            (self.take_dirty(), self.take_dirty_dir())
        } else {
            self.segments.iter_mut().for_each(|s| s.dirty = false);
            self.dir_dirty = false;
            (Vec::new(), None)
        };
        CheckpointPart { tails: self.tail_writes(true), marks: self.marks(), files, dir }
    }

    /// Every segment's index records not yet in its files (`all`), or not yet handed out.
    fn tail_writes(&mut self, all: bool) -> Vec<TailWrite> {
        let mut out = Vec::new();
        for s in &mut self.segments {
            if let Some(bytes) = s.index.encode_tail(all) {
                let pinned = s.pinned.as_ref().map_or([None, None], |p| {
                    [p.files[kind_no(Kind::Idx)].clone(), p.files[kind_no(Kind::Txid)].clone()]
                });
                out.push(TailWrite {
                    part: self.part,
                    base: s.base,
                    gen: s.gen,
                    dir: self.dir.to_path_buf(),
                    pinned,
                    bytes,
                });
            }
        }
        out
    }

    /// The files of segment `base` hold its index up to these counts (a [`TailWrite`] was
    /// written). A segment retired or rewritten since is simply gone.
    pub fn confirm(&mut self, base: u64, gen: u32, batches: u64, msgs: u64) {
        let key = FileKey { part: self.part, base, gen, kind: Kind::Seg };
        if let Some(s) = self.segments.iter_mut().find(|s| s.base == base && s.gen == gen) {
            s.index.confirm(&self.store, key, batches, msgs);
        }
    }

    /// Open a new segment at `base`: a new partition's directory is a spare one renamed into
    /// place when the provisioner has one (D81); otherwise spare files when it has them (no
    /// system call here), else files made here. Nothing changes unless all three files exist.
    fn rotate(&mut self, base: u64, provisioner: Option<&Provisioner>) -> io::Result<()> {
        let renamed = base == 0 && self.segments.is_empty() && self.take_spare_dir(provisioner);
        let mut pins: [Option<Arc<File>>; 3] = [None, None, None];
        let mut spares = Vec::new();
        // Spares only while few segments hold unplaced files: beyond that, files made here
        // (under their name at once, so within the open set's budget).
        let pin = !renamed && provisioner.is_some() && self.store.try_pin();
        if let Some(p) = provisioner.filter(|_| pin) {
            for k in Kind::ALL {
                match p.take() {
                    Some((spare, f)) => {
                        pins[kind_no(k)] = Some(f);
                        spares.push((k, spare));
                    }
                    None => break,
                }
            }
        }
        let mut made = Vec::new();
        for k in Kind::ALL {
            if pins[kind_no(k)].is_some() {
                continue;
            }
            // The directory may still be waiting for an earlier placement. A renamed spare's
            // files exist, empty: only opened.
            let res = if renamed { Ok(()) } else { fs::create_dir_all(&self.dir) }.and_then(|_| {
                let path = file_path(&self.dir, base, 0, k);
                let f = self.store.get(FileKey { part: self.part, base, gen: 0, kind: k }, &path, true)?;
                if !renamed {
                    f.set_len(0)?;
                }
                Ok(f)
            });
            match res {
                Ok(f) => made.push(f),
                Err(e) => {
                    // The spares taken go back to being files nobody names; the next
                    // rotation takes fresh ones.
                    for (_, spare) in spares {
                        let _ = fs::remove_file(spare);
                    }
                    if pin {
                        self.store.unpinned();
                    }
                    return Err(e);
                }
            }
        }
        drop(made);
        let mut ticket = 0;
        if let Some(p) = provisioner {
            for (k, spare) in spares {
                ticket = p.place(spare, self.dir.to_path_buf(), file_path(&self.dir, base, 0, k));
            }
        }
        let pinned = if pins.iter().any(Option::is_some) {
            Some(Pinned { files: pins, ticket, store: self.store.clone() })
        } else {
            if pin {
                self.store.unpinned();
            }
            None
        };
        let has_pins = pinned.is_some();
        self.segments.push(Segment { base, gen: 0, len: 0, index: SegIndex::default(), dirty: true, pinned });
        self.dir_dirty = true;
        self.note_checkpoint();
        if has_pins {
            self.note_sweep();
        }
        Ok(())
    }

    /// Make sure an append of a batch at `base` will find its files: open the active
    /// segment, or open the next one now if the append would rotate. Called by the planner
    /// before it emits the append, so that running out of descriptors refuses one push
    /// instead of failing an apply (which latches the node). A segment opened here and not
    /// used stays empty; replay opens the same one with the next append.
    pub fn prepare(&mut self, base: u64, ts: Micros, provisioner: Option<&Provisioner>) -> io::Result<()> {
        if self.rolls(ts) {
            self.rotate(base, provisioner)?;
        }
        self.file(self.segments.len() - 1, Kind::Seg).map(|_| ())
    }

    /// Let go of handles whose files are now under their names: the store reopens them by path.
    pub fn release_pins(&mut self, provisioner: Option<&Provisioner>) {
        let placed = provisioner.map_or(u64::MAX, |p| p.placed());
        for s in &mut self.segments {
            if s.pinned.as_ref().is_some_and(|p| p.ticket <= placed) {
                s.pinned = None;
            }
        }
    }

    fn flush_segment(&mut self, i: usize) -> io::Result<()> {
        if !self.segments[i].index.has_tail() {
            return Ok(());
        }
        let idx = self.file(i, Kind::Idx)?;
        let txid = self.file(i, Kind::Txid)?;
        let key = self.key(&self.segments[i], Kind::Seg);
        let store = self.store.clone();
        self.segments[i].index.flush(&store, key, &idx, &txid)
    }

    /// Write every index tail to its files (a checkpoint's marks must be in them).
    pub fn flush_index(&mut self) -> io::Result<()> {
        for i in 0..self.segments.len() {
            self.flush_segment(i)?;
        }
        Ok(())
    }

    /// The batch holding `offset`, if a segment holds it.
    pub fn find(&self, offset: u64) -> io::Result<Option<Found>> {
        let n = self.segments.partition_point(|s| s.base <= offset);
        if n == 0 {
            return Ok(None);
        }
        let seg = n - 1;
        let s = &self.segments[seg];
        let (mut lo, mut hi) = (0, s.index.batches);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.rec(seg, mid)?.end() <= offset {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == s.index.batches {
            return Ok(None);
        }
        let rec = self.rec(seg, lo)?;
        Ok((rec.base <= offset).then_some(Found { seg, i: lo, rec }))
    }

    /// The batch after `f`, in this or the next segment.
    pub fn next(&self, f: &Found) -> io::Result<Option<Found>> {
        let (mut seg, mut i) = (f.seg, f.i + 1);
        while seg < self.segments.len() {
            if i < self.segments[seg].index.batches {
                return Ok(Some(Found { seg, i, rec: self.rec(seg, i)? }));
            }
            seg += 1;
            i = 0;
        }
        Ok(None)
    }

    pub fn rec(&self, seg: usize, i: u64) -> io::Result<BatchRec> {
        let s = &self.segments[seg];
        s.index.rec(i, &self.store, self.key(s, Kind::Seg), || self.file(seg, Kind::Idx))
    }

    /// The transaction-id hash of `offset`.
    pub fn txid_at(&self, offset: u64) -> io::Result<Option<u64>> {
        let n = self.segments.partition_point(|s| s.base <= offset);
        let Some(seg) = n.checked_sub(1) else { return Ok(None) };
        let s = &self.segments[seg];
        let j = offset - s.base;
        if j >= s.index.msgs {
            return Ok(None);
        }
        self.store.stats.txid_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        s.index.txid(j, &self.store, self.key(s, Kind::Seg), || self.file(seg, Kind::Txid)).map(|k| Some(k[0]))
    }

    /// The first batch written at or after `ts`.
    pub fn first_at_or_after(&self, ts: Micros) -> io::Result<Option<BatchRec>> {
        let seg = self.segments.partition_point(|s| s.index.batches == 0 || s.index.last_ts < ts);
        let Some(s) = self.segments.get(seg) else { return Ok(None) };
        let (mut lo, mut hi) = (0, s.index.batches);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.rec(seg, mid)?.ts < ts {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == s.index.batches {
            return Ok(None);
        }
        self.rec(seg, lo).map(Some)
    }

    /// The deduplicated keys of batches written after `after`, oldest first, with the
    /// time of their batch: what rebuilds the dedup window at recovery (D29), read from
    /// the segments whose time range reaches past `after` only.
    pub fn dedup_after(&self, after: Micros) -> io::Result<Vec<(Micros, TxKey)>> {
        let mut out = Vec::new();
        for seg in 0..self.segments.len() {
            let s = &self.segments[seg];
            if s.index.batches == 0 || s.index.last_ts <= after {
                continue;
            }
            let key = self.key(s, Kind::Seg);
            for i in 0..s.index.batches {
                let rec = self.rec(seg, i)?;
                if rec.ts <= after {
                    continue;
                }
                for o in rec.base..rec.end() {
                    let k = s.index.txid(o - s.base, &self.store, key, || self.file(seg, Kind::Txid))?;
                    if k[1] & DEDUP_FLAG != 0 {
                        out.push((rec.ts, [k[0], k[1] & !DEDUP_FLAG]));
                    }
                }
            }
        }
        Ok(out)
    }

    pub fn span(&self, seg: usize, rec: &BatchRec) -> io::Result<ReadSpan> {
        let s = &self.segments[seg];
        let id = (self.part, s.base, s.gen);
        Ok(ReadSpan { file: self.file(seg, Kind::Seg)?, pos: rec.pos, len: rec.len, id })
    }

    /// The active segment, if appended to since the last call: its writeback
    /// is started in the background so a checkpoint's fsync finds little to do.
    /// Only a file open now: the sweep over every touched partition must not open (and
    /// hold at once) more files than the budget; the checkpoint syncs the others.
    pub fn take_touched(&mut self) -> Option<Arc<File>> {
        if !std::mem::take(&mut self.touched) {
            return None;
        }
        let s = self.segments.last()?;
        if let Some(f) = s.pinned.as_ref().and_then(|p| p.files[kind_no(Kind::Seg)].clone()) {
            return Some(f);
        }
        self.store.peek(self.key(s, Kind::Seg))
    }

    /// The directory, if a file was created in it since the last call.
    pub fn take_dirty_dir(&mut self) -> Option<PathBuf> {
        std::mem::take(&mut self.dir_dirty).then(|| self.dir.to_path_buf())
    }

    /// Paths of the files to sync at a checkpoint; marks them clean. The checkpoint opens
    /// them by path after the provisioner's barrier (every one is under its name then).
    pub fn take_dirty(&mut self) -> Vec<PathBuf> {
        let dir = &self.dir;
        self.segments
            .iter_mut()
            .filter(|s| s.dirty)
            .flat_map(|s| {
                s.dirty = false;
                Kind::ALL.map(|k| file_path(dir, s.base, s.gen, k))
            })
            .collect()
    }

    /// Drop segments that hold only offsets below `start` (never the active
    /// one). Their files are returned, not deleted: the change is not durable
    /// yet, and the last checkpoint may still name them. The checkpoint that
    /// no longer names them deletes them.
    pub fn retire_below(&mut self, start: u64) -> Vec<PathBuf> {
        let mut out = Vec::new();
        while self.segments.len() > 1 && self.segments[1].base <= start {
            let s = self.segments.remove(0);
            self.store.forget(self.part, s.base, s.gen);
            out.extend(Kind::ALL.map(|k| file_path(&self.dir, s.base, s.gen, k)));
        }
        if !out.is_empty() {
            self.note_checkpoint();
        }
        out
    }

    /// Drop every segment; returns the directory to delete after the next checkpoint.
    pub fn retire_all(&mut self) -> PathBuf {
        for s in std::mem::take(&mut self.segments) {
            self.store.forget(self.part, s.base, s.gen);
        }
        self.note_checkpoint();
        self.dir.to_path_buf()
    }
}

/// Start writeback of a file's dirty pages without waiting for it or for the
/// journal (Linux `sync_file_range`). Durability still comes from the
/// checkpoint's fsync; this only spreads the I/O so that fsync does not land
/// as one burst in front of the WAL's fdatasync.
pub fn start_writeback(f: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open fd; offset 0 and length 0 mean the whole file.
        unsafe {
            libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

#[path = "store_compact.rs"]
mod compact;
#[path = "store_roll.rs"]
mod roll;

#[path = "store_scan.rs"]
mod scan;
pub use scan::TxidScan;

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
