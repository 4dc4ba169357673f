//! Segment files: naming (`wal-{first_index:020}.log`), listing, creation, and the durability
//! syscalls (fdatasync, F_FULLFSYNC on macOS, directory fsync).
//!
//! Must never interpret frame contents or decide policy (when to rotate, what to delete,
//! what counts as corruption): callers own those decisions.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::WalError;

const PREFIX: &str = "wal-";
const SUFFIX: &str = ".log";
const DIGITS: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentFile {
    /// Index of the first entry the segment holds (or would hold, if empty).
    pub first_index: u64,
    pub path: PathBuf,
}

pub(crate) fn file_name(first_index: u64) -> String {
    format!("{PREFIX}{first_index:0DIGITS$}{SUFFIX}")
}

/// Only the exact zero-padded form is accepted, so two names can never denote the same index.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.len() != DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Segments in `dir`, oldest first. Files that are not segments are ignored.
pub(crate) fn list(dir: &Path) -> Result<Vec<SegmentFile>, WalError> {
    let entries = fs::read_dir(dir).map_err(|e| WalError::io(format!("listing {}", dir.display()), e))?;
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| WalError::io(format!("listing {}", dir.display()), e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        match parse_name(name) {
            Some(first_index) => segments.push(SegmentFile { first_index, path: entry.path() }),
            None if name.starts_with(PREFIX) => {
                tracing::warn!(file = %entry.path().display(), "ignoring file that looks like a wal segment but is not named like one");
            }
            None => {}
        }
    }
    segments.sort_by_key(|s| s.first_index);
    Ok(segments)
}

/// Creates a new, empty segment, opened for positioned writes, and makes its directory
/// entry durable, so a crash cannot lose the file while keeping entries the writer later
/// acknowledges from it. Whole or nothing: a failure after the file was made removes it,
/// so a later start never finds an empty segment claiming the next index.
pub(crate) fn create(dir: &Path, first_index: u64) -> Result<(SegmentFile, File), WalError> {
    let path = dir.join(file_name(first_index));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| WalError::io(format!("creating {}", path.display()), e))?;
    if let Err(e) = sync_dir(dir) {
        drop(file);
        let _ = fs::remove_file(&path);
        return Err(WalError::io(format!("fsync of directory {}", dir.display()), e));
    }
    Ok((SegmentFile { first_index, path }, file))
}

/// Opened for positioned writes (the writer keeps its own write offset, so a preallocated
/// file's zero tail is overwritten in place instead of appended after).
pub(crate) fn open_write(path: &Path) -> Result<File, WalError> {
    OpenOptions::new().write(true).open(path).map_err(|e| WalError::io(format!("opening {}", path.display()), e))
}

const CHUNK: usize = 1 << 20;

/// Writes zeros over `[from, to)` and makes them durable, size included.
///
/// Why (D16): on ext4 and XFS an fdatasync of a file that grew must commit the new size
/// through the filesystem journal, a second device flush, and it queues behind every other
/// file's journalled changes (the partition files', the checkpoint's). Overwriting blocks
/// that are already allocated and written needs no journal commit, so the WAL's fdatasync is
/// one data write and one cache flush. `fallocate` would not do: its extents are "unwritten"
/// and the first write to each is a journalled conversion. Written a MiB at a time, each
/// waited for, so the zeros never sit in front of a WAL sync as one large burst. Synced with
/// fdatasync, which commits a new size but not the new modification time: for a recycled
/// segment (D20), whose size does not change, `sync_all` made a journal commit of everything
/// else pending on the filesystem, and a WAL sync waited 40–80 ms behind it.
pub(crate) fn zero_fill(file: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; CHUNK];
    let mut at = from;
    while at < to {
        let n = (to - at).min(CHUNK as u64) as usize;
        write_paced(file, at, &zeros[..n])?;
        at += n as u64;
    }
    sync_data(file)
}

/// Writes `data` at `at` a MiB at a time, each MiB on its way to the disk and waited for
/// before the next is written, so a large background write (a zero-fill, a checkpoint)
/// never sits in front of a WAL sync as one burst. The caller still syncs for durability.
pub fn write_paced(file: &File, at: u64, data: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    for (i, chunk) in data.chunks(CHUNK).enumerate() {
        let pos = at + (i * CHUNK) as u64;
        file.write_all_at(chunk, pos)?;
        wait_written(file, pos, chunk.len() as u64)?;
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn wait_written(file: &File, at: u64, len: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a valid fd owned by `file`; the range is plain integers.
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), at as libc::off64_t, len as libc::off64_t, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn wait_written(_file: &File, _at: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// True when the file holds no frame: empty, or nothing but a preallocated zero tail.
pub(crate) fn is_blank(path: &Path) -> io::Result<bool> {
    use std::io::Read;
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(true);
        }
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
    }
}

/// fdatasync. On macOS plain fsync only reaches the drive's volatile cache, so durability
/// needs F_FULLFSYNC.
#[cfg(target_os = "macos")]
pub(crate) fn sync_data(file: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: fcntl with F_FULLFSYNC takes no pointer arguments; the fd is owned by `file`,
    // which outlives the call.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_FULLFSYNC) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(not(target_os = "macos"))]
pub(crate) fn sync_data(file: &File) -> io::Result<()> {
    file.sync_data()
}

/// Makes creations, deletions and renames in `dir` durable.
#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates the log's directory (and missing parents) so that it survives a power cut: each
/// new directory's entry is durable only once the directory holding it is synced, and a
/// segment synced inside a directory whose own entry was lost is lost with it.
pub(crate) fn create_dir_durably(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d);
        at = d.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    fs::create_dir_all(dir)?;
    // Deepest first: a directory's own new entries, then its entry in its parent.
    for d in &missing {
        sync_dir(d)?;
        if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Windows cannot open directories as files; NTFS journals directory metadata itself.
#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_numerically() {
        assert_eq!(file_name(1), "wal-00000000000000000001.log");
        assert_eq!(parse_name(&file_name(1)), Some(1));
        assert_eq!(parse_name(&file_name(u64::MAX)), Some(u64::MAX));
        assert!(file_name(9) < file_name(10));
    }

    #[test]
    fn malformed_names_are_rejected() {
        for bad in [
            "wal-1.log",
            "wal-0000000000000000001x.log",
            "wal-99999999999999999999.log", // overflows u64
            "wal-00000000000000000001.log.tmp",
            "xwal-00000000000000000001.log",
            "wal-+0000000000000000001.log",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn list_orders_segments_and_ignores_other_files() {
        let dir = tempfile::tempdir().unwrap();
        for i in [30u64, 2, 100] {
            fs::write(dir.path().join(file_name(i)), b"").unwrap();
        }
        fs::write(dir.path().join("checkpoint.json"), b"{}").unwrap();
        fs::write(dir.path().join("wal-7.log"), b"").unwrap();
        let got: Vec<u64> = list(dir.path()).unwrap().iter().map(|s| s.first_index).collect();
        assert_eq!(got, vec![2, 30, 100]);
    }

    #[test]
    fn zero_fill_extends_with_zeros_and_is_blank() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("z");
        let f = OpenOptions::new().create(true).write(true).truncate(true).open(&p).unwrap();
        zero_fill(&f, 0, 3 * CHUNK as u64 + 5).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 3 * CHUNK as u64 + 5);
        assert!(is_blank(&p).unwrap());
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"x", 3 * CHUNK as u64 + 4).unwrap();
        assert!(!is_blank(&p).unwrap(), "a byte at the very end is found");
        fs::write(&p, b"").unwrap();
        assert!(is_blank(&p).unwrap(), "an empty file holds no frame");
    }

    #[test]
    fn create_refuses_to_clobber_an_existing_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (seg, _file) = create(dir.path(), 5).unwrap();
        fs::write(&seg.path, b"keep").unwrap();
        assert!(matches!(create(dir.path(), 5), Err(WalError::Io(_))));
        assert_eq!(fs::read(&seg.path).unwrap(), b"keep");
    }
}
