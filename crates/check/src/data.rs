//! `baton check data DIR`: verifies a stopped node's data directory against the format in
//! docs/storage.md and reports what is damaged, without changing anything.
//!
//! Owns the walk over the directory and the judgement of each file: the checkpoint (magic,
//! CRC, decode), every WAL segment (each frame, torn tail versus damage as recovery tells
//! them apart, entries after the checkpoint decode), every partition segment the
//! checkpoint names (present, at least its marked length, every RecordBatch v2 inside the
//! mark whole, CRC-correct and contiguous), and the index files beside them (`index`).
//! Files the checkpoint does not name are orphans, not damage: recovery deletes them.
//!
//! Must never write: every file is opened read-only, nothing is created, truncated, renamed
//! or locked for writing. A directory a live server holds is refused, not read.

use crate::index::{self, BatchSeen};
use baton_core::inspect::{self, CheckpointView, MarkView, PartitionView};
use baton_log::inspect::{SegmentReport, Verdict};
use baton_wire::records::{BatchHeader, BATCH_HEADER_LEN};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct DataArgs {
    /// The data directory of a stopped node (its `--data-dir`).
    pub dir: PathBuf,
    /// Print one JSON report instead of one line per finding.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Recovery would refuse, or bytes that were durable are gone or changed.
    Damage,
    /// What a crash leaves at the end of the log, cut by recovery; no answered write in it.
    Torn,
    /// A problem in a file recovery never reads, all of whose contents the checkpoint covers.
    Stale,
    /// A file the checkpoint does not name: recovery deletes it (replay rebuilds what the
    /// log holds).
    Orphan,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Damage => "damage",
            Kind::Torn => "torn",
            Kind::Stale => "stale",
            Kind::Orphan => "orphan",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// Relative to the data directory.
    pub file: String,
    pub what: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub dir: String,
    /// The last log entry the checkpoint covers; absent without a readable checkpoint.
    pub checkpoint_index: Option<u64>,
    /// Files read.
    pub files: u64,
    /// Record batches read from partition segments.
    pub batches: u64,
    /// WAL frames read.
    pub frames: u64,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn damaged(&self) -> usize {
        self.findings.iter().filter(|f| f.kind == Kind::Damage).count()
    }
}

/// The report goes to stdout; `Err` (exit status 1) when there is damage or the directory
/// could not be checked.
pub fn run(a: DataArgs) -> Result<(), String> {
    let report = check(&a.dir)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        for f in &report.findings {
            println!("{}: {}: {}", f.kind.label(), f.file, f.what);
        }
        let summary = format!(
            "{} files, {} batches, {} log frames checked{}",
            report.files,
            report.batches,
            report.frames,
            report.checkpoint_index.map(|i| format!(" (checkpoint at entry {i})")).unwrap_or_default()
        );
        if report.damaged() == 0 {
            println!("ok: {summary}");
        } else {
            println!("damaged: {} finding(s) of damage; {summary}", report.damaged());
        }
    }
    match report.damaged() {
        0 => Ok(()),
        n => Err(format!("check data: {n} finding(s) of damage in {}", a.dir.display())),
    }
}

/// Checks `dir`; `Err` only when it cannot be checked at all (missing, held by a server).
pub fn check(dir: &Path) -> Result<Report, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let _lock = inspect::lock_for_reading(dir)?;
    let mut c = Checker { dir: dir.to_path_buf(), r: Report { dir: dir.display().to_string(), ..Report::default() } };
    c.top_level()?;
    let ckpt_path = inspect::checkpoint_path(dir);
    let ckpt = match inspect::read_checkpoint(dir) {
        Ok(v) => {
            if v.is_some() {
                c.r.files += 1;
            }
            v
        }
        Err(e) => {
            c.r.files += 1;
            c.damage(&ckpt_path, e);
            None
        }
    };
    let readable = ckpt.is_some() || !ckpt_path.exists();
    c.r.checkpoint_index = ckpt.as_ref().map(|v| v.index);
    c.wal(ckpt.as_ref(), readable)?;
    if let Some(v) = &ckpt {
        c.partitions(v)?;
    } else if readable {
        c.partitions_without_checkpoint()?;
    }
    Ok(c.r)
}

struct Checker {
    dir: PathBuf,
    r: Report,
}

impl Checker {
    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.dir).unwrap_or(p).display().to_string()
    }

    fn add(&mut self, kind: Kind, file: &Path, what: impl Into<String>) {
        let file = self.rel(file);
        self.r.findings.push(Finding { kind, file, what: what.into() });
    }

    fn damage(&mut self, file: &Path, what: impl Into<String>) {
        self.add(Kind::Damage, file, what);
    }

    /// Names in the data directory itself that are not Baton's.
    fn top_level(&mut self) -> Result<(), String> {
        for name in list(&self.dir)? {
            match name.as_str() {
                "checkpoint.bin" | "wal" | "partitions" | "LOCK" => {}
                "checkpoint.tmp" => self.add(
                    Kind::Orphan,
                    &self.dir.join(&name),
                    "an interrupted checkpoint's temporary file: recovery never reads it, the next checkpoint overwrites it",
                ),
                _ => self.add(Kind::Orphan, &self.dir.join(&name), "not a file Baton writes: recovery ignores it"),
            }
        }
        Ok(())
    }

    /// Every WAL segment, then what the log as a whole must hold given the checkpoint.
    fn wal(&mut self, ckpt: Option<&CheckpointView>, ckpt_readable: bool) -> Result<(), String> {
        let wal_dir = inspect::wal_dir(&self.dir);
        let covered = ckpt.map_or(0, |v| v.index);
        // Without a checkpoint to say where replay starts, every frame there is is checked,
        // from the log's first (a log that starts late is the checkpoint's finding, below).
        let first = baton_log::first_index(&wal_dir).map_err(|e| format!("list {}: {e}", wal_dir.display()))?;
        let from = if ckpt.is_some() { covered + 1 } else { first.unwrap_or(1) };
        let mut bad_entries: Vec<(u64, String)> = Vec::new();
        let segments = baton_log::inspect::inspect(&wal_dir, from, |index, payload| {
            if let Err(e) = inspect::decode_entries(payload) {
                bad_entries.push((index, e));
            }
        })
        .map_err(|e| format!("read the log in {}: {e}", wal_dir.display()))?;
        for s in &segments {
            self.r.files += 1;
            self.r.frames += s.frames;
            self.segment_verdict(s, covered);
        }
        for (index, e) in bad_entries {
            let seg =
                segments.iter().rev().find(|s| s.first_index <= index).map_or(wal_dir.clone(), |s| s.path.clone());
            self.damage(&seg, format!("entry {index} is a valid frame but does not decode as log entries: {e}"));
        }
        self.wal_other_files(&wal_dir, &segments)?;
        if !ckpt_readable {
            return Ok(());
        }
        let ckpt_path = inspect::checkpoint_path(&self.dir);
        match (ckpt, first) {
            (None, Some(first)) if first > 1 => self.damage(
                &ckpt_path,
                format!(
                    "missing, but the log starts at entry {first}: entries 1..{} are in neither (recovery refuses)",
                    first - 1
                ),
            ),
            (None, None) if self.has_partition_data()? => self.damage(
                &ckpt_path,
                "missing, and there is no log: the partition files are described by neither (recovery refuses)",
            ),
            (Some(v), None) if v.index > 0 => self.damage(
                &wal_dir,
                format!(
                    "holds no log segment, but the checkpoint covers entries up to {}: a server that ran here \
                     always leaves its active segment",
                    v.index
                ),
            ),
            (Some(v), Some(_)) => {
                let last = segments.last().expect("a first means a last");
                // A torn or damaged end is reported as such already.
                if last.verdict == Verdict::Clean && last.next_index <= v.index {
                    // The entries that are gone were in the segment that would come next
                    // (deleted) or at the end of this one (cut at a frame boundary).
                    let next = wal_dir.join(format!("wal-{:020}.log", last.next_index));
                    self.damage(
                        &next,
                        format!(
                            "missing: the log ends at entry {} (the end of {}) but the checkpoint covers entries \
                             up to {}, so {} durable and gone: the segment that held them was deleted, or cut \
                             at a frame boundary",
                            last.next_index.saturating_sub(1),
                            self.rel(&last.path),
                            v.index,
                            match v.index - last.next_index {
                                0 => format!("entry {} was", v.index),
                                _ => format!("entries {}..={} were", last.next_index, v.index),
                            }
                        ),
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn segment_verdict(&mut self, s: &SegmentReport, covered: u64) {
        let kind_if_read = |k: Kind| if s.read_by_recovery { k } else { Kind::Stale };
        let not_read = if s.read_by_recovery {
            ""
        } else {
            " (recovery does not read this segment: every entry in it is covered by the checkpoint)"
        };
        match &s.verdict {
            Verdict::Clean => {}
            Verdict::Damaged { offset, reason } => {
                self.add(kind_if_read(Kind::Damage), &s.path, format!("at byte {offset}: {reason}{not_read}"))
            }
            // A crash tears only what was never durable, and a checkpoint waits for its own
            // entry to be durable: a tear at or below the checkpoint is bytes lost, not a crash.
            Verdict::Torn { offset, index, reason } if *index <= covered => self.add(
                kind_if_read(Kind::Damage),
                &s.path,
                format!(
                    "cut at byte {offset} inside entry {index} ({reason}), but the checkpoint covers entries up to \
                     {covered}, so that entry was durable: bytes were lost{not_read}"
                ),
            ),
            Verdict::Torn { offset, index, reason } => self.add(
                kind_if_read(Kind::Torn),
                &s.path,
                format!(
                    "a write cut by a crash at byte {offset} (entry {index}: {reason}); recovery cuts the {} \
                     bytes from there, none of them answered{not_read}",
                    s.bytes - offset
                ),
            ),
        }
    }

    /// Files in the WAL directory that are not segments.
    fn wal_other_files(&mut self, wal_dir: &Path, segments: &[SegmentReport]) -> Result<(), String> {
        if !wal_dir.is_dir() {
            return Ok(());
        }
        let known: BTreeSet<String> =
            segments.iter().filter_map(|s| s.path.file_name()?.to_str().map(str::to_owned)).collect();
        for name in list(wal_dir)? {
            if known.contains(&name) || name == "wal.spare" || name.starts_with("wal.recycled.") {
                continue;
            }
            self.add(Kind::Orphan, &wal_dir.join(&name), "not a log segment name: recovery ignores it");
        }
        Ok(())
    }

    fn has_partition_data(&self) -> Result<bool, String> {
        let parts = inspect::partitions_dir(&self.dir);
        Ok(parts.is_dir() && list(&parts)?.iter().any(|n| n != ".spare"))
    }

    /// No checkpoint (and a log from entry 1): replay rebuilds every partition, so every
    /// partition directory is an orphan.
    fn partitions_without_checkpoint(&mut self) -> Result<(), String> {
        let parts = inspect::partitions_dir(&self.dir);
        if !parts.is_dir() {
            return Ok(());
        }
        for name in list(&parts)? {
            if name != ".spare" {
                self.add(
                    Kind::Orphan,
                    &parts.join(&name),
                    "no checkpoint names it: recovery deletes it and replays the log from entry 1",
                );
            }
        }
        Ok(())
    }

    fn partitions(&mut self, v: &CheckpointView) -> Result<(), String> {
        let parts_dir = inspect::partitions_dir(&self.dir);
        let named: BTreeSet<String> = v.partitions.iter().map(|p| p.id.to_string()).collect();
        for p in &v.partitions {
            self.partition(p)?;
        }
        if !parts_dir.is_dir() {
            return Ok(());
        }
        for name in list(&parts_dir)? {
            if name == ".spare" || named.contains(&name) {
                continue;
            }
            self.add(
                Kind::Orphan,
                &parts_dir.join(&name),
                "a partition the checkpoint does not name (created after it, or deleted before it): recovery \
                 deletes it and replay rebuilds what the log holds",
            );
        }
        Ok(())
    }

    fn partition(&mut self, p: &PartitionView) -> Result<(), String> {
        let dir = inspect::partition_dir(&self.dir, p.id);
        let mut expect_base: Option<u64> = None;
        let mut known = BTreeSet::new();
        for m in &p.marks {
            let seg = inspect::segment_path(&dir, m.base);
            for f in index::files_beside(&seg) {
                known.insert(f.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string());
            }
            if let Some(e) = expect_base.filter(|e| *e != m.base) {
                self.damage(
                    &seg,
                    format!("starts at offset {} but the partition's previous segment ends at {e}", m.base),
                );
            }
            // Unknown after a file that could not be read: the next one is not judged by it.
            expect_base = self.segment(p, m, &seg)?;
        }
        if let (Some(first), Some(end)) = (p.marks.first(), expect_base) {
            let last = inspect::segment_path(&dir, p.marks.last().expect("a first means a last").base);
            if first.base > p.start {
                let seg = inspect::segment_path(&dir, first.base);
                self.damage(
                    &seg,
                    format!(
                        "the partition stores offsets from {} but its first segment starts at {}",
                        p.start, first.base
                    ),
                );
            }
            if end != p.end {
                self.damage(
                    &last,
                    format!("the checkpoint says the partition ends at offset {} but its files end at {end}", p.end),
                );
            }
        }
        if dir.is_dir() {
            for name in list(&dir)? {
                if !known.contains(&name) {
                    self.add(
                        Kind::Orphan,
                        &dir.join(&name),
                        "not named by the checkpoint's marks for this partition: recovery deletes it",
                    );
                }
            }
        }
        Ok(())
    }

    /// One marked segment file; the offset after its last batch when it could be read.
    fn segment(&mut self, p: &PartitionView, m: &MarkView, path: &Path) -> Result<Option<u64>, String> {
        let who = format!("partition {} ({}/{})", p.id, p.queue, p.name);
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                self.damage(
                    path,
                    format!("{who}: missing or unreadable ({e}); the checkpoint marked {} bytes of it", m.len),
                );
                return Ok(None);
            }
        };
        self.r.files += 1;
        let len = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
        if len < m.len {
            self.damage(path, format!("{who}: {len} bytes, but the checkpoint marked {} (truncated)", m.len));
            return Ok(None);
        }
        let (batches, end) = self.walk_batches(&who, file, m, path);
        self.r.batches += batches.len() as u64;
        let findings = index::check_beside(path, m, &batches, &mut self.r.files);
        for (file, what) in findings {
            self.damage(&file, what);
        }
        Ok(Some(end))
    }

    /// Reads the batches inside the mark, one at a time (memory: one batch); returns what
    /// was found and the offset after the last batch.
    fn walk_batches(&mut self, who: &str, file: File, m: &MarkView, path: &Path) -> (Vec<BatchSeen>, u64) {
        let mut rd = BufReader::with_capacity(1 << 20, file.take(m.len));
        let mut seen = Vec::new();
        let mut pos = 0u64;
        let mut next = m.base;
        let mut buf = Vec::new();
        while pos < m.len {
            let left = m.len - pos;
            if left < BATCH_HEADER_LEN as u64 {
                self.damage(path, format!("{who}: the last {left} bytes inside the mark are not a whole batch header"));
                break;
            }
            buf.resize(12, 0);
            if let Err(e) = rd.read_exact(&mut buf) {
                self.damage(path, format!("{who}: read at byte {pos}: {e}"));
                break;
            }
            let batch_len = i32::from_be_bytes(buf[8..12].try_into().expect("4 bytes"));
            let total = 12 + i64::from(batch_len);
            if batch_len < (BATCH_HEADER_LEN - 12) as i32 || total as u64 > left {
                self.damage(
                    path,
                    format!(
                        "{who}: the batch at byte {pos} says it is {total} bytes, but {left} remain inside the mark"
                    ),
                );
                break;
            }
            buf.resize(total as usize, 0);
            if let Err(e) = rd.read_exact(&mut buf[12..]) {
                self.damage(path, format!("{who}: read at byte {pos}: {e}"));
                break;
            }
            match BatchHeader::parse(&buf) {
                Ok(h) => {
                    if h.base_offset != next as i64 {
                        self.damage(
                            path,
                            format!(
                                "{who}: the batch at byte {pos} has base offset {}, expected {next}",
                                h.base_offset
                            ),
                        );
                    }
                    let base = u64::try_from(h.base_offset).unwrap_or(next);
                    seen.push(BatchSeen { pos, len: total as u64, base, count: h.record_count });
                    next = base + u64::from(h.record_count);
                }
                Err(e) => {
                    // Its length still says where the next batch starts, and its count (not
                    // to be trusted, but the best guess) where the next offsets start: one
                    // damaged batch is one finding, not one per batch after it.
                    self.damage(path, format!("{who}: the batch at byte {pos} (offset {next}): {e}"));
                    let count =
                        u32::try_from(i32::from_be_bytes(buf[57..61].try_into().expect("4 bytes"))).unwrap_or(0);
                    seen.push(BatchSeen { pos, len: total as u64, base: next, count });
                    next += u64::from(count);
                }
            }
            pos += total as u64;
        }
        (seen, next)
    }
}

/// Names in a directory, sorted (so the report is the same every time).
fn list(dir: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for ent in std::fs::read_dir(dir).map_err(|e| format!("list {}: {e}", dir.display()))? {
        let ent = ent.map_err(|e| format!("list {}: {e}", dir.display()))?;
        out.push(ent.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(out)
}
