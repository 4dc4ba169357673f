//! A member's state as files, for Raft snapshots (D43): what one checkpoint names (the
//! checkpoint itself, and every partition file cut to its mark), and the install of such a
//! set in place of a member's own.
//!
//! An install is staged, then committed by a marker and rolled forward: the staged files are
//! written and synced under `<data>/install.staging`, then `<data>/INSTALL` is written
//! durably, then the partitions directory and the checkpoint are renamed into place. A crash
//! before the marker leaves the old state (the staging is thrown away at the next start); a
//! crash after it is finished by the next start ([`roll_forward`]) before recovery reads
//! anything. Must never: name or accept a file outside `partitions/<id>/<base>.<kind>`,
//! count a byte past a mark, or leave a new checkpoint over old partition files (or the
//! other way round) for recovery to find.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::files::{file_path, Kind};
use crate::inspect::{checkpoint_path, partitions_dir};

const STAGING: &str = "install.staging";
const MARKER: &str = "INSTALL";
const OLD_PARTITIONS: &str = "partitions.old";

/// What one checkpoint is, as files: the checkpoint's bytes and the index it covers, and
/// every partition file it names with the length it covers, by path relative to the data
/// directory (`partitions/<id>/<base:020>.<seg|idx|txid>`).
pub struct StateFiles {
    pub index: u64,
    pub checkpoint: Vec<u8>,
    pub files: Vec<(String, u64)>,
}

/// The checkpoint in `data_dir` as files, or `None` when there is none yet. The checkpoint is
/// renamed into place whole, so one read sees one checkpoint; the files it names exist until
/// a newer checkpoint is written (retention deletes only after that).
pub fn state_files(data_dir: &Path) -> Result<Option<StateFiles>, String> {
    let path = checkpoint_path(data_dir);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("read {}: {e}", path.display())),
    };
    let state = crate::checkpoint::decode(&bytes, &path)?;
    let mut files = Vec::new();
    let mut ids: Vec<_> = state.parts.values().map(|p| (p.id, &p.marks)).collect();
    ids.sort_by_key(|(id, _)| *id);
    for (id, marks) in ids {
        for m in marks {
            let dir = Path::new("partitions").join(id.to_string());
            for (kind, len) in [
                (Kind::Seg, m.len),
                (Kind::Idx, m.batches * crate::index::REC),
                (Kind::Txid, m.msgs * crate::index::TXID),
            ] {
                files.push((file_path(&dir, m.base, m.gen, kind).display().to_string(), len));
            }
        }
    }
    Ok(Some(StateFiles { index: state.applied_index, checkpoint: bytes, files }))
}

/// `rel` as a path under the data directory, if it is a partition file's name exactly
/// (`partitions/<digits>/<20 digits>.<seg|idx|txid>`); anything else is refused, so a
/// snapshot can never write outside the partitions.
pub fn checked_rel(rel: &str) -> Result<PathBuf, String> {
    let bad = || format!("{rel:?} is not a partition file's name");
    let mut parts = rel.split('/');
    let (Some("partitions"), Some(id), Some(file), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    let (base, ext) = file.split_once('.').ok_or_else(bad)?;
    // A compacted segment's files carry their generation: `<base>.g<gen>.<ext>` (D50).
    let ext = match ext.split_once('.') {
        Some((g, rest)) if g.len() > 1 && g.len() <= 11 && g.starts_with('g') && digits(&g[1..]) => rest,
        Some(_) => return Err(bad()),
        None => ext,
    };
    if !digits(id) || base.len() != 20 || !digits(base) || !matches!(ext, "seg" | "idx" | "txid") {
        return Err(bad());
    }
    Ok(PathBuf::from(rel))
}

/// A fresh, empty staging directory under `data_dir` (what an earlier, uncommitted install
/// left there goes).
pub fn begin_staging(data_dir: &Path) -> Result<PathBuf, String> {
    let dir = data_dir.join(STAGING);
    if data_dir.join(MARKER).exists() {
        return Err("an install is committed but not rolled forward; restart the member".into());
    }
    remove_dir_if_there(&dir)?;
    fs::create_dir_all(dir.join("partitions")).map_err(|e| format!("create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Copies exactly `len` bytes of `input` to the staged file `rel`, synced; answers their
/// CRC32C for the caller to check against the sender's.
pub fn stage_file(staging: &Path, rel: &str, len: u64, input: &mut dyn Read) -> Result<u32, String> {
    let path = staging.join(checked_rel(rel)?);
    let parent = path.parent().expect("a partition file has a directory");
    fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut left = len;
    let mut crc = 0u32;
    let mut buf = vec![0u8; 1 << 16];
    while left > 0 {
        let n = (left as usize).min(buf.len());
        input.read_exact(&mut buf[..n]).map_err(|e| format!("{rel}: the snapshot ends early: {e}"))?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        f.write_all(&buf[..n]).map_err(|e| format!("write {}: {e}", path.display()))?;
        left -= n as u64;
    }
    f.sync_data().map_err(|e| format!("sync {}: {e}", path.display()))?;
    Ok(crc)
}

/// Writes the staged checkpoint and syncs every staged directory: after this the staging is
/// whole on disk, ready to be committed.
pub fn finish_staging(staging: &Path, checkpoint: &[u8]) -> Result<(), String> {
    crate::checkpoint::decode(checkpoint, &staging.join("checkpoint.bin"))
        .map_err(|e| format!("the snapshot's checkpoint: {e}"))?;
    let path = checkpoint_path(staging);
    let mut f = File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    f.write_all(checkpoint).and_then(|_| f.sync_data()).map_err(|e| format!("write {}: {e}", path.display()))?;
    let parts = partitions_dir(staging);
    for e in fs::read_dir(&parts).map_err(|e| format!("read {}: {e}", parts.display()))? {
        let d = e.map_err(|e| e.to_string())?.path();
        sync_dir(&d)?;
    }
    sync_dir(&parts)?;
    sync_dir(staging)
}

/// Commits the staging under `data_dir` (the marker, durably) and moves it into place.
/// Called by the planner with the state's files quiet.
pub(crate) fn commit_staged(data_dir: &Path) -> Result<(), String> {
    if !data_dir.join(STAGING).join("checkpoint.bin").exists() {
        return Err("nothing staged to install".into());
    }
    let marker = data_dir.join(MARKER);
    File::create(&marker).and_then(|f| f.sync_all()).map_err(|e| format!("create {}: {e}", marker.display()))?;
    sync_dir(data_dir)?;
    crate::failpoint::hit("install.committed");
    roll_forward(data_dir)
}

/// Finishes a committed install (the marker is there), or throws away an uncommitted
/// staging; every step may be redone after a crash. Runs at every start before recovery.
pub(crate) fn roll_forward(data_dir: &Path) -> Result<(), String> {
    let staging = data_dir.join(STAGING);
    let old = data_dir.join(OLD_PARTITIONS);
    if !data_dir.join(MARKER).exists() {
        remove_dir_if_there(&staging)?;
        return remove_dir_if_there(&old);
    }
    let staged_parts = partitions_dir(&staging);
    if staged_parts.exists() {
        let live = partitions_dir(data_dir);
        if live.exists() {
            remove_dir_if_there(&old)?;
            rename(&live, &old)?;
        }
        rename(&staged_parts, &live)?;
        sync_dir(data_dir)?;
    }
    let staged_ckpt = checkpoint_path(&staging);
    if staged_ckpt.exists() {
        rename(&staged_ckpt, &checkpoint_path(data_dir))?;
        sync_dir(data_dir)?;
    }
    remove_dir_if_there(&old)?;
    remove_dir_if_there(&staging)?;
    fs::remove_file(data_dir.join(MARKER)).map_err(|e| format!("remove the install marker: {e}"))?;
    sync_dir(data_dir)?;
    tracing::info!(dir = %data_dir.display(), "installed a snapshot's state");
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<(), String> {
    fs::rename(from, to).map_err(|e| format!("rename {} to {}: {e}", from.display(), to.display()))
}

fn remove_dir_if_there(dir: &Path) -> Result<(), String> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("remove {}: {e}", dir.display())),
    }
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("sync {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_partition_file_names_are_accepted() {
        for ok in [
            "partitions/0/00000000000000000000.seg",
            "partitions/17/00000000000000000100.txid",
            "partitions/17/00000000000000000100.g3.idx",
        ] {
            assert!(checked_rel(ok).is_ok(), "{ok}");
        }
        for bad in [
            "checkpoint.bin",
            "partitions/../../etc/passwd",
            "partitions/1/../00000000000000000000.seg",
            "/partitions/1/00000000000000000000.seg",
            "partitions/1/00000000000000000000.seg/x",
            "partitions/x/00000000000000000000.seg",
            "partitions/1/0.seg",
            "partitions/1/00000000000000000000.g.seg",
            "partitions/1/00000000000000000000.gx.seg",
            "partitions/1/00000000000000000000.g1.g2.seg",
            "partitions/1/00000000000000000000.g1.log",
            "partitions/1/00000000000000000000.exe",
            "partitions//00000000000000000000.seg",
        ] {
            assert!(checked_rel(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_staging_without_its_marker_is_thrown_away_and_one_with_it_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        fs::create_dir_all(data.join("partitions/1")).unwrap();
        fs::write(data.join("partitions/1/old"), b"old").unwrap();
        fs::write(data.join("checkpoint.bin"), b"old checkpoint").unwrap();

        let staging = begin_staging(data).unwrap();
        stage_file(&staging, "partitions/2/00000000000000000000.seg", 3, &mut &b"new"[..]).unwrap();
        fs::write(staging.join("checkpoint.bin"), b"new checkpoint").unwrap();
        // A crash before the marker: the next start keeps the old state.
        roll_forward(data).unwrap();
        assert!(!staging.exists());
        assert_eq!(fs::read(data.join("checkpoint.bin")).unwrap(), b"old checkpoint");
        assert!(data.join("partitions/1/old").exists());

        // Staged again and committed; a crash after the partitions moved, before the
        // checkpoint did: the next start finishes it.
        let staging = begin_staging(data).unwrap();
        stage_file(&staging, "partitions/2/00000000000000000000.seg", 3, &mut &b"new"[..]).unwrap();
        fs::write(staging.join("checkpoint.bin"), b"new checkpoint").unwrap();
        File::create(data.join(MARKER)).unwrap();
        rename(&data.join("partitions"), &data.join(OLD_PARTITIONS)).unwrap();
        rename(&staging.join("partitions"), &data.join("partitions")).unwrap();
        roll_forward(data).unwrap();
        assert_eq!(fs::read(data.join("checkpoint.bin")).unwrap(), b"new checkpoint");
        assert_eq!(fs::read(data.join("partitions/2/00000000000000000000.seg")).unwrap(), b"new");
        assert!(!data.join("partitions/1").exists());
        assert!(!data.join(MARKER).exists() && !data.join(OLD_PARTITIONS).exists() && !staging.exists());
        // Nothing left to do: a second run changes nothing.
        roll_forward(data).unwrap();
        assert_eq!(fs::read(data.join("checkpoint.bin")).unwrap(), b"new checkpoint");
    }

    #[test]
    fn a_short_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let staging = begin_staging(dir.path()).unwrap();
        let e = stage_file(&staging, "partitions/2/00000000000000000000.seg", 10, &mut &b"abc"[..]).unwrap_err();
        assert!(e.contains("ends early"), "{e}");
    }
}
