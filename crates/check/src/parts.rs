//! The partition half of `baton check data` (crates/check/src/data.rs): every partition the
//! checkpoint names, file by file as its marks name them, the batches inside each mark, the
//! index files beside each segment (`index`), and the files no mark names (orphans).
//!
//! Must never write: segment files are opened read-only and read one batch at a time.

use crate::data::{list, Checker, Kind};
use crate::index::{self, BatchSeen};
use baton_core::inspect::{self, CheckpointView, MarkView, PartitionView};
use baton_wire::records::{BatchHeader, BATCH_HEADER_LEN};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

impl Checker {
    /// No checkpoint (and a log from entry 1): replay rebuilds every partition, so every
    /// partition directory is an orphan.
    pub(crate) fn partitions_without_checkpoint(&mut self) -> Result<(), String> {
        let parts = inspect::partitions_dir(&self.dir);
        if !parts.is_dir() {
            return Ok(());
        }
        for name in list(&parts)? {
            if !baton_core::provision::is_spare_name(&name) {
                self.add(
                    Kind::Orphan,
                    &parts.join(&name),
                    "no checkpoint names it: recovery deletes it and replays the log from entry 1",
                );
            }
        }
        Ok(())
    }

    pub(crate) fn partitions(&mut self, v: &CheckpointView) -> Result<(), String> {
        let parts_dir = inspect::partitions_dir(&self.dir);
        let named: BTreeSet<String> = v.partitions.iter().map(|p| p.id.to_string()).collect();
        for p in &v.partitions {
            self.partition(p)?;
        }
        if !parts_dir.is_dir() {
            return Ok(());
        }
        for name in list(&parts_dir)? {
            if baton_core::provision::is_spare_name(&name) || named.contains(&name) {
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
            let seg = inspect::segment_path(&dir, m.base, m.gen);
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
            let lm = p.marks.last().expect("a first means a last");
            let last = inspect::segment_path(&dir, lm.base, lm.gen);
            if first.base > p.start {
                let seg = inspect::segment_path(&dir, first.base, first.gen);
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
        let (batches, end) = self.walk_batches(&who, file, m, path, p);
        self.r.batches += batches.len() as u64;
        let findings = index::check_beside(path, m, &batches, &mut self.r.files);
        for (file, what) in findings {
            self.damage(&file, what);
        }
        Ok(Some(end))
    }

    /// Reads the batches inside the mark, one at a time (memory: one batch); returns what
    /// was found and the offset after the last batch.
    fn walk_batches(
        &mut self,
        who: &str,
        file: File,
        m: &MarkView,
        path: &Path,
        p: &PartitionView,
    ) -> (Vec<BatchSeen>, u64) {
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
                    // The keys its `.txid` records must hold; a batch whose records do not
                    // decode (a compression this build cannot read) is checked by length only.
                    let keys = baton_wire::decode_batches(&buf).ok().map(|recs| {
                        recs.iter()
                            .map(|r| (r.offset, inspect::txid_record(p.hash_key, &p.name, r.offset, r.txid.as_deref())))
                            .collect()
                    });
                    // The offsets it spans, not its records: compaction drops records and
                    // keeps the span (D50); as produced the two are equal.
                    let span = u32::try_from(h.span()).unwrap_or(u32::MAX);
                    seen.push(BatchSeen { pos, len: total as u64, base, count: span, keys });
                    next = base + u64::from(span);
                }
                Err(e) => {
                    // Its length still says where the next batch starts, and its count (not
                    // to be trusted, but the best guess) where the next offsets start: one
                    // damaged batch is one finding, not one per batch after it.
                    self.damage(path, format!("{who}: the batch at byte {pos} (offset {next}): {e}"));
                    let count =
                        u32::try_from(i32::from_be_bytes(buf[57..61].try_into().expect("4 bytes"))).unwrap_or(0);
                    seen.push(BatchSeen { pos, len: total as u64, base: next, count, keys: None });
                    next += u64::from(count);
                }
            }
            pos += total as u64;
        }
        (seen, next)
    }
}
