//! Random reads of a live log by index: what a Raft leader needs to send a lagging follower
//! the entries it lacks, while the writer goes on appending.
//!
//! Owns a cursor (which segment, which byte, which index comes next), so reads that go on
//! where the last one stopped cost what they return, not a scan from the segment's start.
//! Must never change a file, trust a frame whose checksum or index does not match, or read
//! more than the bytes it was allowed: a frame being written, a segment recycled under it
//! (D20) or a tail truncated (D37) ends the read early, and the caller asks again or gets
//! the entry elsewhere (the writer's in-memory tail).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::frame::{self, Decoded, HEADER_LEN};
use crate::segment;
use crate::WalError;

/// Where the next frame is expected, kept between reads.
#[derive(Debug, Clone)]
struct Cursor {
    path: PathBuf,
    offset: u64,
    index: u64,
}

pub struct WalReader {
    dir: PathBuf,
    cursor: Option<Cursor>,
    /// Reused between reads; a frame at most `MAX_PAYLOAD` plus its header.
    buf: Vec<u8>,
}

impl WalReader {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WalReader { dir: dir.into(), cursor: None, buf: Vec::new() }
    }

    /// Hands `f` the entries `start..end` in order, stopping at the first one that is not on
    /// disk (or not readable as written), or once the payloads handed over reach `max_bytes`
    /// (the first entry is always handed over, however big, so a read always progresses).
    /// Returns how many entries `f` got. An I/O error other than a vanished file is an error.
    pub fn read(
        &mut self,
        start: u64,
        end: u64,
        max_bytes: usize,
        mut f: impl FnMut(u64, &[u8]),
    ) -> Result<u64, WalError> {
        let mut index = start;
        let mut bytes = 0usize;
        // Each pass reads one segment; a pass that stops at a segment's end hops to the next
        // (the cursor then points at that end, so a pass that finds nothing there looks the
        // index up once afresh).
        let mut fresh = false;
        while index < end && (index == start || bytes < max_bytes) {
            let Some((mut file, mut at)) = self.open_at(index, fresh)? else { break };
            let path = self.cursor.as_ref().map(|c| c.path.clone()).expect("open_at sets the cursor");
            let from = index;
            while index < end && (index == start || bytes < max_bytes) {
                match read_frame(&mut file, at, &mut self.buf).map_err(|e| WalError::io(path.display(), e))? {
                    Some((got, len)) if got == index => {
                        let payload = &self.buf[HEADER_LEN..len];
                        f(index, payload);
                        bytes += payload.len();
                        at += len as u64;
                        index += 1;
                    }
                    _ => break,
                }
            }
            self.cursor = Some(Cursor { path, offset: at, index });
            if index == from {
                if fresh {
                    break;
                }
                fresh = true;
            } else {
                fresh = false;
            }
        }
        Ok(index - start)
    }

    /// The file and offset where entry `index` starts, from the cursor when it points there
    /// (and `fresh` is not asked), and otherwise by scanning its segment from the first frame.
    fn open_at(&mut self, index: u64, fresh: bool) -> Result<Option<(File, u64)>, WalError> {
        if let Some(c) = self.cursor.as_ref().filter(|c| c.index == index && !fresh) {
            if let Some(file) = open(&c.path)? {
                return Ok(Some((file, c.offset)));
            }
        }
        self.cursor = None;
        let segments = segment::list(&self.dir)?;
        let Some(seg) = segments.iter().rev().find(|s| s.first_index <= index) else { return Ok(None) };
        let Some(mut file) = open(&seg.path)? else { return Ok(None) };
        let mut at = 0u64;
        let mut next = seg.first_index;
        while next < index {
            match read_frame(&mut file, at, &mut self.buf).map_err(|e| WalError::io(seg.path.display(), e))? {
                Some((got, len)) if got == next => {
                    at += len as u64;
                    next += 1;
                }
                _ => return Ok(None),
            }
        }
        self.cursor = Some(Cursor { path: seg.path.clone(), offset: at, index });
        Ok(Some((file, at)))
    }
}

fn open(path: &Path) -> Result<Option<File>, WalError> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        // Deleted by a checkpoint or a truncation since it was listed: not there to read.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(WalError::io(path.display(), e)),
    }
}

/// Reads the frame at `at` into `buf` (header and payload) and returns its index and length,
/// or `None` when what is there is not a whole valid frame (zeros past the end, a frame still
/// being written, the end of the file).
fn read_frame(file: &mut File, at: u64, buf: &mut Vec<u8>) -> io::Result<Option<(u64, usize)>> {
    buf.resize(HEADER_LEN, 0);
    file.seek(SeekFrom::Start(at))?;
    if !read_full(file, &mut buf[..HEADER_LEN])? {
        return Ok(None);
    }
    let Some(len) = frame::payload_len(buf) else { return Ok(None) };
    buf.resize(HEADER_LEN + len, 0);
    if !read_full(file, &mut buf[HEADER_LEN..])? {
        return Ok(None);
    }
    Ok(match frame::decode(buf) {
        Decoded::Frame { index, len, .. } => Some((index, len)),
        Decoded::Invalid(_) => None,
    })
}

/// `false` at end of file before `out` is full.
fn read_full(file: &mut File, out: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < out.len() {
        match file.read(&mut out[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
