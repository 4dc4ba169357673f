//! The node's Raft metadata, durable: the vote, the last committed log id and the last purged
//! log id, in one small file replaced whole.
//!
//! Layout of `<dir>/raft-meta`: magic `BRM1`, length u32, crc32c u32 over the body, body
//! (bincode of [`Meta`]). Written to `raft-meta.tmp`, fdatasync'd, renamed over the old one,
//! the directory fsync'd: a crash leaves the old file or the new one, never a mix.
//! Must never return from [`MetaFile::save`] before the new file is durable (the vote's rule:
//! a node that forgot its vote could vote twice in one term), and never start from a file it
//! cannot read whole: a damaged one is refused, not taken as "no vote".

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bincode::Options;

use crate::{LogId, Vote};

const MAGIC: &[u8; 4] = b"BRM1";
const NAME: &str = "raft-meta";
const TMP: &str = "raft-meta.tmp";
const MAX_BODY: u64 = 4096;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub vote: Option<Vote>,
    pub committed: Option<LogId>,
    pub purged: Option<LogId>,
    /// The first Raft index this log was ever given when it was not the one after the purge
    /// point (a log may start anywhere: openraft's contract); nothing below it exists.
    pub start: Option<u64>,
}

pub struct MetaFile {
    dir: PathBuf,
}

fn codec() -> impl Options {
    bincode::options().with_limit(MAX_BODY).with_fixint_encoding()
}

impl MetaFile {
    /// Opens (creating durably) `dir` and reads what is saved there.
    pub fn open(dir: &Path) -> io::Result<(MetaFile, Meta)> {
        create_dir_durably(dir)?;
        let f = MetaFile { dir: dir.to_path_buf() };
        let meta = match fs::read(dir.join(NAME)) {
            Ok(bytes) => decode(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}; refusing to start without knowing this node's vote", dir.join(NAME).display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Meta::default(),
            Err(e) => return Err(e),
        };
        Ok((f, meta))
    }

    /// Replaces the saved metadata with `meta`, durably, before it returns.
    pub fn save(&self, meta: &Meta) -> io::Result<()> {
        let body = codec().serialize(meta).map_err(|e| io::Error::other(e.to_string()))?;
        let mut bytes = Vec::with_capacity(12 + body.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let tmp = self.dir.join(TMP);
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_data()?;
        fs::rename(&tmp, self.dir.join(NAME))?;
        File::open(&self.dir)?.sync_all()
    }
}

fn decode(bytes: &[u8]) -> Result<Meta, String> {
    let Some((head, body)) = bytes.split_at_checked(12) else {
        return Err(format!("{} bytes is shorter than the 12-byte header", bytes.len()));
    };
    if &head[0..4] != MAGIC {
        return Err("bad magic".into());
    }
    let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
    if len != body.len() {
        return Err(format!("header says {len} bytes of body, the file has {}", body.len()));
    }
    let crc = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if crc != crc32c::crc32c(body) {
        return Err("checksum mismatch".into());
    }
    codec().deserialize(body).map_err(|e| format!("body does not decode: {e}"))
}

/// `create_dir_all`, then fsync of the parent, so the directory survives a power cut with
/// the files made in it (the lesson of D37).
pub(crate) fn create_dir_durably(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    #[test]
    fn saved_meta_reads_back_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("raft");
        let (f, m) = MetaFile::open(&d).unwrap();
        assert_eq!(m, Meta::default());
        let meta = Meta {
            vote: Some(Vote::new_committed(4, 2)),
            committed: Some(LogId::new(CommittedLeaderId::new(4, 2), 99)),
            purged: None,
            start: Some(7),
        };
        f.save(&meta).unwrap();
        assert_eq!(MetaFile::open(&d).unwrap().1, meta);
        assert!(!d.join(TMP).exists());
        let path = d.join(NAME);
        let good = fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            fs::write(&path, &bad).unwrap();
            let err = MetaFile::open(&d).err().unwrap_or_else(|| panic!("a flip at byte {at} was accepted"));
            assert!(err.to_string().contains("refusing to start"), "{err}");
        }
        fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(MetaFile::open(&d).is_err());
    }
}
