//! A member's snapshot body (D43): the engine's checkpoint and the partition files it names,
//! in two forms.
//!
//! - **Kept** (`BMSK`), what a member writes when Raft asks it for a snapshot: the checkpoint's
//!   bytes and the list of files it names with the length it covers, the files themselves
//!   hard-linked into a directory of their own. Cheap to make (no message byte is copied),
//!   and the links keep the files whatever retention deletes later.
//! - **Sent** (`BMSS`), what a member that needs the snapshot receives: the same, with each
//!   file's bytes (up to its length) and their CRC32C inline. Made from the kept form when
//!   first sent; installed through `baton_core::install`, file by file, in bounded memory.
//!
//! Layout, integers little-endian: magic (4), index u64, checkpoint length u64, checkpoint
//! bytes, checkpoint CRC32C u32, file count u64, then per file: name length u16, name
//! (`partitions/<id>/<base>.<kind>`), length u64, and in the sent form the bytes and their
//! CRC32C u32. The kept form also holds, after its magic, its links directory (u16 length,
//! path). Must never: read a name that is not a partition file's, trust a length it was not
//! able to read whole, or hold a file's bytes in memory.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use baton_core::install::{self, StateFiles};

const KEPT: &[u8; 4] = b"BMSK";
const SENT: &[u8; 4] = b"BMSS";
const MAX_NAME: u16 = 256;
const MAX_PATH: u16 = 4096;

/// Links the files of `state` under `links` and writes the kept form to `out`. `Ok(false)`:
/// a file the checkpoint names was gone (a newer checkpoint retired it): read it again.
pub fn write_kept(data_dir: &Path, links: &Path, state: &StateFiles, out: &mut dyn Write) -> Result<bool, String> {
    remove_dir_if_there(links)?;
    // A checkpoint may name no file at all (nothing stored yet): the directories are there
    // all the same.
    fs::create_dir_all(links.join("partitions")).map_err(|e| format!("create {}: {e}", links.display()))?;
    let mut dirs = std::collections::BTreeSet::new();
    for (rel, len) in &state.files {
        let (from, to) = (data_dir.join(rel), links.join(rel));
        let parent = to.parent().expect("a partition file has a directory");
        if dirs.insert(parent.to_path_buf()) {
            fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
        }
        match fs::hard_link(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            // Another filesystem (or no hard links): the covered bytes are copied instead.
            Err(_) => copy_prefix(&from, &to, *len)?,
        }
    }
    for d in dirs.iter().chain([links.join("partitions"), links.to_path_buf()].iter()) {
        fs::File::open(d).and_then(|f| f.sync_all()).map_err(|e| format!("sync {}: {e}", d.display()))?;
    }
    let links = links.to_str().ok_or("the links directory's name is not UTF-8")?;
    let w = |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(|e| e.to_string());
    w(out, KEPT)?;
    w(out, &(links.len() as u16).to_le_bytes())?;
    w(out, links.as_bytes())?;
    write_head(out, state.index, &state.checkpoint, state.files.len() as u64)?;
    for (rel, len) in &state.files {
        write_name(out, rel, *len)?;
    }
    Ok(true)
}

fn write_head(out: &mut dyn Write, index: u64, checkpoint: &[u8], count: u64) -> Result<(), String> {
    let w = |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(|e| e.to_string());
    w(out, &index.to_le_bytes())?;
    w(out, &(checkpoint.len() as u64).to_le_bytes())?;
    w(out, checkpoint)?;
    w(out, &crc32c::crc32c(checkpoint).to_le_bytes())?;
    w(out, &count.to_le_bytes())
}

fn write_name(out: &mut dyn Write, rel: &str, len: u64) -> Result<(), String> {
    out.write_all(&(rel.len() as u16).to_le_bytes()).map_err(|e| e.to_string())?;
    out.write_all(rel.as_bytes()).map_err(|e| e.to_string())?;
    out.write_all(&len.to_le_bytes()).map_err(|e| e.to_string())
}

/// The sent form of a kept body (a sent one, as received, is passed on as it is): each
/// named file's covered bytes read from its link, 64 KiB at a time.
pub fn export(stored: &mut dyn Read, out: &mut dyn Write) -> Result<(), String> {
    let magic = read_array::<4>(stored)?;
    if &magic == SENT {
        out.write_all(SENT).map_err(|e| e.to_string())?;
        return io::copy(stored, out).map(|_| ()).map_err(|e| e.to_string());
    }
    if &magic != KEPT {
        return Err("not a member snapshot".into());
    }
    let links = PathBuf::from(read_string(stored, MAX_PATH)?);
    let head = read_head(stored)?;
    out.write_all(SENT).map_err(|e| e.to_string())?;
    write_head(out, head.index, &head.checkpoint, head.count)?;
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..head.count {
        let (rel, len) = read_name(stored)?;
        write_name(out, &rel, len)?;
        let path = links.join(&rel);
        let mut f = fs::File::open(&path).map_err(|e| format!("open {}: {e}", path.display()))?;
        let (mut left, mut crc) = (len, 0u32);
        while left > 0 {
            let n = (left as usize).min(buf.len());
            f.read_exact(&mut buf[..n]).map_err(|e| format!("{} is shorter than its mark: {e}", path.display()))?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            out.write_all(&buf[..n]).map_err(|e| e.to_string())?;
            left -= n as u64;
        }
        out.write_all(&crc.to_le_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The index a body of either form covers, and whether it is the sent form (the only one
/// that can be installed elsewhere); reads only its head.
pub fn index_of(input: &mut dyn Read) -> Result<(u64, bool), String> {
    let magic = read_array::<4>(input)?;
    if &magic == KEPT {
        read_string(input, MAX_PATH)?;
    } else if &magic != SENT {
        return Err("not a member snapshot".into());
    }
    Ok((u64::from_le_bytes(read_array(input)?), &magic == SENT))
}

/// Stages a sent body's state under `data_dir` for [`baton_core::Engine::install`], every
/// file checked against its CRC; answers the index it covers.
pub fn stage_sent(input: &mut dyn Read, data_dir: &Path) -> Result<u64, String> {
    if &read_array::<4>(input)? != SENT {
        return Err("only a sent member snapshot can be installed".into());
    }
    let head = read_head(input)?;
    let staging = install::begin_staging(data_dir)?;
    for _ in 0..head.count {
        let (rel, len) = read_name(input)?;
        let crc = install::stage_file(&staging, &rel, len, input)?;
        if u32::from_le_bytes(read_array(input)?) != crc {
            return Err(format!("{rel} in the snapshot does not match its checksum"));
        }
    }
    install::finish_staging(&staging, &head.checkpoint)?;
    Ok(head.index)
}

fn read_name(input: &mut dyn Read) -> Result<(String, u64), String> {
    let rel = read_string(input, MAX_NAME)?;
    install::checked_rel(&rel)?;
    Ok((rel, u64::from_le_bytes(read_array(input)?)))
}

/// What the head of either form says.
pub struct Head {
    pub index: u64,
    pub checkpoint: Vec<u8>,
    pub count: u64,
}

fn read_head(input: &mut dyn Read) -> Result<Head, String> {
    let index = u64::from_le_bytes(read_array(input)?);
    let len = u64::from_le_bytes(read_array(input)?);
    let mut checkpoint = Vec::new();
    input.take(len).read_to_end(&mut checkpoint).map_err(|e| format!("the snapshot's checkpoint: {e}"))?;
    if checkpoint.len() as u64 != len {
        return Err("the snapshot ends inside its checkpoint".into());
    }
    let crc = u32::from_le_bytes(read_array(input)?);
    if crc32c::crc32c(&checkpoint) != crc {
        return Err("the snapshot's checkpoint does not match its checksum".into());
    }
    let count = u64::from_le_bytes(read_array(input)?);
    Ok(Head { index, checkpoint, count })
}

fn read_array<const N: usize>(input: &mut dyn Read) -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    input.read_exact(&mut b).map_err(|e| format!("the snapshot ends early: {e}"))?;
    Ok(b)
}

fn read_string(input: &mut dyn Read, max: u16) -> Result<String, String> {
    let len = u16::from_le_bytes(read_array(input)?);
    if len > max {
        return Err(format!("a name of {len} bytes in the snapshot (at most {max})"));
    }
    let mut b = vec![0u8; len as usize];
    input.read_exact(&mut b).map_err(|e| format!("the snapshot ends early: {e}"))?;
    String::from_utf8(b).map_err(|_| "a name in the snapshot is not UTF-8".to_string())
}

fn copy_prefix(from: &Path, to: &Path, len: u64) -> Result<(), String> {
    let mut src = fs::File::open(from).map_err(|e| format!("open {}: {e}", from.display()))?;
    let mut dst = fs::File::create(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    let n = io::copy(&mut (&mut src).take(len), &mut dst).map_err(|e| format!("copy {}: {e}", from.display()))?;
    if n != len {
        return Err(format!("{} holds {n} bytes, not the {len} its checkpoint names", from.display()));
    }
    dst.sync_data().map_err(|e| format!("sync {}: {e}", to.display()))
}

fn remove_dir_if_there(dir: &Path) -> Result<(), String> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("remove {}: {e}", dir.display())),
    }
}
