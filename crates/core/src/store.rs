//! Per-partition segment files holding RecordBatch v2 bytes.
//!
//! Owns the files under `<data>/partitions/<part id>/`. Apply appends here
//! (page cache only); checkpoints sync; retention deletes whole segments.
//! Must never be the durable copy of anything newer than the last checkpoint:
//! the WAL is, and recovery truncates these files back to the checkpoint's
//! lengths before replaying it.

use crate::provision::Provisioner;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug)]
pub struct Segment {
    pub base: u64,
    pub file: Arc<File>,
    pub len: u64,
    /// Written since the last checkpoint sync.
    pub dirty: bool,
}

/// What a checkpoint records of one partition's files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SegmentMark {
    pub base: u64,
    pub len: u64,
}

#[derive(Debug)]
pub struct PartitionFiles {
    dir: PathBuf,
    segment_bytes: u64,
    pub segments: Vec<Segment>,
    /// A segment file was created since the last checkpoint: the directory needs an fsync.
    dir_dirty: bool,
    /// Appended to since the last background writeback was started.
    touched: bool,
}

/// Where a stored batch lives, for readers off the planner thread.
#[derive(Debug, Clone)]
pub struct ReadSpan {
    pub file: Arc<File>,
    pub pos: u64,
    pub len: u32,
}

impl ReadSpan {
    pub fn read(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut buf, self.pos)?;
        Ok(buf)
    }
}

pub(crate) fn seg_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.seg"))
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

impl PartitionFiles {
    /// A partition with no segment yet. With a provisioner its directory is made
    /// when its first segment is placed (D17), not here on the planner.
    pub fn create(dir: PathBuf, segment_bytes: u64, provisioner: Option<&Provisioner>) -> io::Result<PartitionFiles> {
        // No directory yet means none to sync: a checkpoint before the first append must not
        // name it (the first segment's placement makes it, and marks it dirty then).
        let made = provisioner.is_none();
        if made {
            fs::create_dir_all(&dir)?;
        }
        Ok(PartitionFiles { dir, segment_bytes, segments: Vec::new(), dir_dirty: made, touched: false })
    }

    /// Reopen after a crash to exactly the checkpointed marks: later bytes are
    /// rewritten by WAL replay, unknown segment files are removed.
    pub fn restore(dir: PathBuf, segment_bytes: u64, marks: &[SegmentMark]) -> io::Result<PartitionFiles> {
        fs::create_dir_all(&dir)?;
        let keep: Vec<PathBuf> = marks.iter().map(|m| seg_path(&dir, m.base)).collect();
        for ent in fs::read_dir(&dir)? {
            let p = ent?.path();
            if !keep.contains(&p) {
                fs::remove_file(&p)?;
            }
        }
        let mut segments = Vec::new();
        for m in marks {
            let path = seg_path(&dir, m.base);
            let file = open_rw(&path)?;
            let actual = file.metadata()?.len();
            if actual < m.len {
                tracing::warn!(path = %path.display(), actual, expected = m.len, "segment shorter than its checkpoint mark");
            }
            file.set_len(m.len)?;
            segments.push(Segment { base: m.base, file: Arc::new(file), len: m.len, dirty: false });
        }
        Ok(PartitionFiles { dir, segment_bytes, segments, dir_dirty: false, touched: false })
    }

    pub fn marks(&self) -> Vec<SegmentMark> {
        self.segments.iter().map(|s| SegmentMark { base: s.base, len: s.len }).collect()
    }

    /// Append a batch whose first offset is `base`; returns (segment base, position).
    /// A new segment comes from `provisioner` when it has one ready (D17).
    pub fn append(&mut self, base: u64, bytes: &[u8], provisioner: Option<&Provisioner>) -> io::Result<(u64, u64)> {
        let (seg, pos, file) = self.reserve(base, bytes.len() as u64, provisioner)?;
        if let Err(e) = file.write_all_at(bytes, pos) {
            // Give the room back: the next append must not leave a hole.
            let s = self.segments.last_mut().expect("reserve made one");
            s.len = pos;
            return Err(e);
        }
        Ok((seg, pos))
    }

    /// Room for `len` bytes of a batch whose first offset is `base`, without writing them:
    /// (segment base, position, file). The caller writes them there before any reader
    /// is given the span (D18: the appender thread, before the frame completes).
    pub fn reserve(
        &mut self,
        base: u64,
        len: u64,
        provisioner: Option<&Provisioner>,
    ) -> io::Result<(u64, u64, Arc<File>)> {
        let rotate = match self.segments.last() {
            None => true,
            Some(s) => s.len >= self.segment_bytes,
        };
        if rotate {
            let target = seg_path(&self.dir, base);
            let ready = provisioner.and_then(|p| p.take().map(|spare| (p, spare)));
            let file = match ready {
                Some((p, (spare, file))) => {
                    p.place(spare, self.dir.clone(), target);
                    file
                }
                // The directory may still be waiting for an earlier placement.
                None => {
                    fs::create_dir_all(&self.dir)?;
                    let file = open_rw(&target)?;
                    file.set_len(0)?;
                    Arc::new(file)
                }
            };
            self.segments.push(Segment { base, file, len: 0, dirty: true });
            self.dir_dirty = true;
        }
        let seg = self.segments.last_mut().expect("a segment exists after rotation");
        let pos = seg.len;
        seg.len += len;
        seg.dirty = true;
        self.touched = true;
        Ok((seg.base, pos, seg.file.clone()))
    }

    pub fn span(&self, seg_base: u64, pos: u64, len: u32) -> Option<ReadSpan> {
        let i = self.segments.binary_search_by_key(&seg_base, |s| s.base).ok()?;
        Some(ReadSpan { file: self.segments[i].file.clone(), pos, len })
    }

    /// The active segment, if appended to since the last call: its writeback
    /// is started in the background so a checkpoint's fsync finds little to do.
    pub fn take_touched(&mut self) -> Option<Arc<File>> {
        if !std::mem::take(&mut self.touched) {
            return None;
        }
        self.segments.last().map(|s| s.file.clone())
    }

    /// The directory, if a file was created in it since the last call.
    pub fn take_dirty_dir(&mut self) -> Option<PathBuf> {
        std::mem::take(&mut self.dir_dirty).then(|| self.dir.clone())
    }

    /// Files to sync at a checkpoint; marks them clean.
    pub fn take_dirty(&mut self) -> Vec<Arc<File>> {
        self.segments
            .iter_mut()
            .filter(|s| s.dirty)
            .map(|s| {
                s.dirty = false;
                s.file.clone()
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
            out.push(seg_path(&self.dir, s.base));
        }
        out
    }

    /// Drop every segment; returns the directory to delete after the next checkpoint.
    pub fn retire_all(&mut self) -> PathBuf {
        self.segments.clear();
        self.dir.clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_rotate_restore_and_delete() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("p");
        let mut f = PartitionFiles::create(dir.clone(), 10, None).unwrap();
        assert_eq!(f.append(0, b"0123456789ab", None).unwrap(), (0, 0));
        assert_eq!(f.append(1, b"xyz", None).unwrap(), (1, 0));
        assert_eq!(f.append(2, b"uvw", None).unwrap(), (1, 3));
        assert_eq!(f.span(1, 3, 3).unwrap().read().unwrap(), b"uvw");
        let marks = f.marks();
        f.append(3, b"late", None).unwrap();
        let mut r = PartitionFiles::restore(dir.clone(), 10, &marks).unwrap();
        assert_eq!(r.marks(), marks);
        assert_eq!(r.segments[1].file.metadata().unwrap().len(), 6);
        assert_eq!(r.retire_below(1), vec![seg_path(&dir, 0)]);
        assert_eq!(r.segments.len(), 1);
        assert!(seg_path(&dir, 0).exists(), "retired files wait for the checkpoint");
    }

    /// D17: with a provisioner the planner makes no directory or file; segments
    /// are readable at once, and named as a restart expects once the barrier returns.
    #[test]
    fn provisioned_segments_are_readable_at_once_and_named_after_the_barrier() {
        let d = tempfile::tempdir().unwrap();
        let parts = d.path().join("partitions");
        let prov = Provisioner::start(&parts).unwrap();
        // Wait until the pool holds files (one taken and dropped to know).
        for _ in 0..500 {
            if prov.take().map(|(spare, _)| fs::remove_file(spare).unwrap()).is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let dir = parts.join("3");
        let mut f = PartitionFiles::create(dir.clone(), 10, Some(&prov)).unwrap();
        assert_eq!(f.take_dirty_dir(), None, "no directory yet, so none for a checkpoint to sync");
        assert_eq!(f.append(0, b"0123456789ab", Some(&prov)).unwrap(), (0, 0));
        assert_eq!(f.take_dirty_dir(), Some(dir.clone()), "the first segment's placement makes it");
        assert_eq!(f.append(1, b"xyz", Some(&prov)).unwrap(), (1, 0));
        assert_eq!(f.span(1, 0, 3).unwrap().read().unwrap(), b"xyz", "readable before it has its name");
        let marks = f.marks();
        prov.barrier().unwrap();
        assert_eq!(fs::read(seg_path(&dir, 0)).unwrap(), b"0123456789ab");
        assert_eq!(fs::read(seg_path(&dir, 1)).unwrap(), b"xyz");
        let r = PartitionFiles::restore(dir.clone(), 10, &marks).unwrap();
        assert_eq!(r.span(1, 0, 3).unwrap().read().unwrap(), b"xyz");
    }
}
