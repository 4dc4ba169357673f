//! `baton check data DIR`: verifies a stopped node's data directory against the format in
//! docs/storage.md and reports what is damaged, without changing anything.
//!
//! Owns the walk over the directory and the judgement of each file: the checkpoint (magic,
//! CRC, decode), every WAL segment (each frame, torn tail versus damage as recovery tells
//! them apart, entries after the checkpoint decode), every partition segment the
//! checkpoint names (present, at least its marked length, every RecordBatch v2 inside the
//! mark whole, CRC-correct and contiguous: `parts`), and the index files beside them
//! (`index`).
//! Files the checkpoint does not name are orphans, not damage: recovery deletes them.
//!
//! Must never write: every file is opened read-only, nothing is created, truncated, renamed
//! or locked for writing. A directory a live server holds is refused, not read.

use baton_core::inspect::{self, CheckpointView};
use baton_log::inspect::{SegmentReport, Verdict};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeSet;
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
    /// The last log entry recovery would keep: the checkpoint's, or the log's last whole
    /// frame past it (a torn tail cut off).
    pub last_index: u64,
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

pub(crate) struct Checker {
    pub(crate) dir: PathBuf,
    pub(crate) r: Report,
}

impl Checker {
    pub(crate) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.dir).unwrap_or(p).display().to_string()
    }

    pub(crate) fn add(&mut self, kind: Kind, file: &Path, what: impl Into<String>) {
        let file = self.rel(file);
        self.r.findings.push(Finding { kind, file, what: what.into() });
    }

    pub(crate) fn damage(&mut self, file: &Path, what: impl Into<String>) {
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
        let log_end = segments.last().map_or(0, |s| s.next_index.saturating_sub(1));
        self.r.last_index = covered.max(log_end);
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
        Ok(parts.is_dir() && list(&parts)?.iter().any(|n| !baton_core::provision::is_spare_name(n)))
    }
}

/// Names in a directory, sorted (so the report is the same every time).
pub(crate) fn list(dir: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for ent in std::fs::read_dir(dir).map_err(|e| format!("list {}: {e}", dir.display()))? {
        let ent = ent.map_err(|e| format!("list {}: {e}", dir.display()))?;
        out.push(ent.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(out)
}
