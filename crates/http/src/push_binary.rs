//! Queen's binary push body (`Queen(binary_push=True)`, issue 16 item 2): the same items as
//! a JSON push, framed without JSON around them, so the broker reads lengths instead of
//! scanning and unescaping a JSON document. Also the binary transaction body (`QTB1`), which
//! the client sends for a transaction with pushes when `push_compression` is on.
//!
//! ```text
//! push: "QPB1" | u8 flags | [u32 raw_len, when flag 1] | body
//!   flags: 1 body is one zstd frame of raw_len bytes, 2 answer counts only,
//!          4 every item carries a transaction id ("" = minted here), 8 framed groups
//!   body (no flag 8): u32 groups | per group: u16 queue | u16 partition | u32 n
//!                     | n x ([u16 txid, flag 4] | u32 len, payload)
//!   body (flag 8):    u32 groups | per group: u16 queue | u16 partition | u32 n | u32 z_len | z
//!   z: one zstd frame of n x (u32 len | u8 0 | u8[16] message id | u16 txid | payload)
//! txn:  "QTB1" | u8 flags (2: counts) | u32 len, head JSON | u32 groups | groups as flag 8
//! ```
//! Integers are little-endian; each payload is one JSON document.
//!
//! Owns the decoding only: the items then take the JSON push's one path (`build_groups`),
//! so every check on names, ids and payloads is the same. Must never read past a length it
//! was given, never allocate more than the body limit for a decompressed body (zstd is
//! decompressed into a buffer of at most that size: a bomb is refused, not inflated), and
//! never accept a trailing byte or an unknown flag.

use crate::error::ApiError;
use crate::push::PushItem;
use axum::http::StatusCode;

pub const PUSH_MAGIC: &[u8; 4] = b"QPB1";
pub const TXN_MAGIC: &[u8; 4] = b"QTB1";
const ZSTD: u8 = 1;
const COUNTS: u8 = 2;
const TXIDS: u8 = 4;
const FRAMES: u8 = 8;

fn bad(what: impl Into<String>) -> ApiError {
    ApiError::bad("bad_binary_body", what.into())
}

/// A cursor over a body that refuses to read past its end.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ApiError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len()).ok_or_else(|| {
            bad(format!("the body ends inside {what} (at byte {} of {}, {n} more wanted)", self.at, self.b.len()))
        })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, ApiError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<usize, ApiError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().expect("two bytes")) as usize)
    }
    fn u32(&mut self, what: &str) -> Result<usize, ApiError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("four bytes")) as usize)
    }
    fn text(&mut self, what: &str) -> Result<&'a str, ApiError> {
        let n = self.u16(what)?;
        std::str::from_utf8(self.take(n, what)?).map_err(|_| bad(format!("{what} is not UTF-8")))
    }
    fn done(&self) -> Result<(), ApiError> {
        if self.at != self.b.len() {
            return Err(bad(format!("{} bytes after the last group", self.b.len() - self.at)));
        }
        Ok(())
    }
}

/// A zstd context, made only for a body that has something compressed: making one costs
/// more than parsing a plain body of 100 items (it was ~3% of the server's CPU under a
/// binary push load that compressed nothing).
fn decompressor() -> Result<zstd::bulk::Decompressor<'static>, ApiError> {
    zstd::bulk::Decompressor::new()
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("zstd: {e}")))
}

/// zstd-decompress `z` into at most `room` bytes, with one context for the whole body: a
/// body of many tiny frames costs a frame's work each, not a context's setup each.
fn unzstd(d: &mut zstd::bulk::Decompressor<'static>, z: &[u8], room: usize) -> Result<Vec<u8>, ApiError> {
    d.decompress(z, room).map_err(|e| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("a zstd frame that does not decompress within {room} bytes: {e}"),
        )
    })
}

/// A payload's text; that it is one JSON document is checked where every payload is.
fn payload(bytes: &[u8], i: usize) -> Result<&str, ApiError> {
    std::str::from_utf8(bytes).map_err(|e| ApiError::bad("bad_payload", format!("items[{i}].payload: {e}")))
}

/// The decompressed parts of a body, which the items borrow from.
#[derive(Default)]
pub struct Inflated {
    body: Option<Vec<u8>>,
    groups: Vec<Vec<u8>>,
}

/// What a binary body asked for besides its items.
pub struct Decoded<'a> {
    pub items: Vec<PushItem<'a>>,
    /// Answer counts instead of one result per item.
    pub counts: bool,
    /// The JSON head of a transaction body.
    pub head: Option<&'a [u8]>,
}

fn too_many_items(max_items: usize) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_many_items", format!("at most {max_items} items per push"))
}

/// First pass: check the header and decompress what is compressed, within `limit` bytes in
/// all. The second pass ([`items`]) reads the items out of the raw body and these buffers.
/// Framed groups are counted before any is decompressed: every group holds at least one
/// message and all of them at most `max_items`, so a body cannot ask for more
/// decompressions than a push has items.
pub fn inflate(raw: &[u8], limit: usize, max_items: usize) -> Result<Inflated, ApiError> {
    let mut r = Reader { b: raw, at: 4 };
    let flags = r.u8("the flags")?;
    let mut out = Inflated::default();
    let mut room = limit;
    let groups_at = if &raw[..4] == TXN_MAGIC {
        if flags & !COUNTS != 0 {
            return Err(bad(format!("unknown transaction body flags {flags:#x}")));
        }
        let head = r.u32("the head's length")?;
        r.take(head, "the head")?;
        r.at
    } else {
        if flags & !(ZSTD | COUNTS | TXIDS | FRAMES) != 0 || (flags & ZSTD != 0 && flags & FRAMES != 0) {
            return Err(bad(format!("unknown or conflicting push body flags {flags:#x}")));
        }
        if flags & ZSTD != 0 {
            let raw_len = r.u32("the raw length")?;
            if raw_len > room {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!("the body decompresses to {raw_len} bytes; the limit is {limit}"),
                ));
            }
            let body = unzstd(&mut decompressor()?, &raw[r.at..], raw_len)?;
            if body.len() != raw_len {
                return Err(bad(format!("the body decompressed to {} bytes, not {raw_len}", body.len())));
            }
            out.body = Some(body);
            return Ok(out);
        }
        if flags & FRAMES == 0 {
            return Ok(out);
        }
        r.at
    };
    let mut g = Reader { b: raw, at: groups_at };
    let n = g.u32("the group count")?;
    let mut frames = Vec::with_capacity(n.min(max_items));
    let mut messages = 0usize;
    for _ in 0..n {
        g.text("a queue name")?;
        g.text("a partition name")?;
        let m = g.u32("a message count")?;
        if m == 0 {
            return Err(bad("a group of no messages"));
        }
        messages = messages.saturating_add(m);
        if messages > max_items {
            return Err(too_many_items(max_items));
        }
        let z = g.u32("a frame length")?;
        frames.push(g.take(z, "a group's frames")?);
    }
    g.done()?;
    if !frames.is_empty() {
        let mut d = decompressor()?;
        for z in frames {
            let group = unzstd(&mut d, z, room)?;
            room -= group.len();
            out.groups.push(group);
        }
    }
    Ok(out)
}

/// Second pass: the items, borrowing from `raw` and `inflated`.
pub fn items<'a>(raw: &'a [u8], inflated: &'a Inflated, max_items: usize) -> Result<Decoded<'a>, ApiError> {
    let txn = &raw[..4] == TXN_MAGIC;
    let flags = raw[4];
    let mut out = Decoded { items: Vec::new(), counts: flags & COUNTS != 0, head: None };
    let mut r = Reader { b: raw, at: 5 };
    if txn {
        let head = r.u32("the head's length")?;
        out.head = Some(r.take(head, "the head")?);
    } else if flags & ZSTD != 0 {
        r = Reader { b: inflated.body.as_deref().unwrap_or_default(), at: 0 };
    }
    let framed = txn || flags & FRAMES != 0;
    let groups = r.u32("the group count")?;
    let mut framed_groups = inflated.groups.iter();
    for _ in 0..groups {
        let queue = r.text("a queue name")?;
        let partition = r.text("a partition name")?;
        let n = r.u32("a message count")?;
        if out.items.len().saturating_add(n) > max_items {
            return Err(too_many_items(max_items));
        }
        if framed {
            let z = r.u32("a frame length")?;
            r.take(z, "a group's frames")?;
            let frames = framed_groups.next().ok_or_else(|| bad("a group without its frames"))?;
            let mut f = Reader { b: frames, at: 0 };
            for _ in 0..n {
                let len = f.u32("a frame's length")?;
                let mut m = Reader { b: f.take(len, "a frame")?, at: 0 };
                if m.u8("a frame's kind")? != 0 {
                    return Err(bad("a frame of an unknown kind"));
                }
                m.take(16, "a message id")?;
                let txid = m.text("a transaction id")?;
                let i = out.items.len();
                let p = payload(&m.b[m.at..], i)?;
                out.items.push(PushItem::binary(queue, partition, Some(txid), p));
            }
            f.done()?;
        } else {
            for _ in 0..n {
                let txid = if flags & TXIDS != 0 { Some(r.text("a transaction id")?) } else { None };
                let len = r.u32("a payload's length")?;
                let i = out.items.len();
                let p = payload(r.take(len, "a payload")?, i)?;
                out.items.push(PushItem::binary(queue, partition, txid, p));
            }
        }
    }
    r.done()?;
    if out.items.is_empty() && !txn {
        return Err(ApiError::bad("empty_items", "items must hold at least one item"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(out: &mut Vec<u8>, q: &str, p: &str, items: &[(&str, &str)], txids: bool) {
        for s in [q, p] {
            out.extend((s.len() as u16).to_le_bytes());
            out.extend(s.as_bytes());
        }
        out.extend((items.len() as u32).to_le_bytes());
        for (t, v) in items {
            if txids {
                out.extend((t.len() as u16).to_le_bytes());
                out.extend(t.as_bytes());
            }
            out.extend((v.len() as u32).to_le_bytes());
            out.extend(v.as_bytes());
        }
    }

    /// (queue, partition, transaction id, payload) of each item.
    type Parts = (String, String, Option<String>, String);

    fn decode(raw: &[u8]) -> Result<Vec<Parts>, ApiError> {
        let inf = inflate(raw, 1 << 20, 100)?;
        Ok(items(raw, &inf, 100)?.items.iter().map(PushItem::parts).collect())
    }

    #[test]
    fn plain_and_compressed_bodies_give_the_same_items() {
        let mut body = 2u32.to_le_bytes().to_vec();
        group(&mut body, "q", "a", &[("t1", "{\"n\":1}"), ("", "null")], true);
        group(&mut body, "q", "b", &[("t3", "[1,2]")], true);
        let mut plain = b"QPB1".to_vec();
        plain.push(TXIDS);
        plain.extend(&body);
        let mut z = b"QPB1".to_vec();
        z.push(TXIDS | ZSTD);
        z.extend((body.len() as u32).to_le_bytes());
        z.extend(zstd::bulk::compress(&body, 1).unwrap());
        let a = decode(&plain).unwrap();
        assert_eq!(a, decode(&z).unwrap());
        assert_eq!(a.len(), 3);
        assert_eq!(a[0], ("q".into(), "a".into(), Some("t1".into()), "{\"n\":1}".into()));
        assert_eq!(a[1].2.as_deref(), Some(""), "an empty id: minted by build_groups");
        assert_eq!(a[2].1, "b");
    }

    #[test]
    fn hostile_bodies_are_refused() {
        let mut ok = b"QPB1\0".to_vec();
        ok.extend(1u32.to_le_bytes());
        group(&mut ok, "q", "p", &[("", "1")], false);
        assert!(decode(&ok).is_ok());
        let code = |raw: &[u8]| decode(raw).unwrap_err().code;
        for cut in 5..ok.len() {
            assert_eq!(code(&ok[..cut]), "bad_binary_body", "cut at {cut}");
        }
        let mut trailing = ok.clone();
        trailing.push(0);
        assert_eq!(code(&trailing), "bad_binary_body");
        let mut flags = ok.clone();
        flags[4] = 0x40;
        assert_eq!(code(&flags), "bad_binary_body");
        // A count that claims more items than are there, or than allowed.
        let mut many = b"QPB1\0".to_vec();
        many.extend(1u32.to_le_bytes());
        group(&mut many, "q", "p", &[], false);
        let at = many.len() - 4;
        many[at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(code(&many), "too_many_items");
        // Not UTF-8 (whether it is one JSON document is build_groups' check, as for JSON).
        let mut nj = b"QPB1\0".to_vec();
        nj.extend(1u32.to_le_bytes());
        group(&mut nj, "q", "p", &[("", "\"\u{fffd}\"")], false);
        let at = nj.len() - 3;
        nj[at] = 0xff;
        assert_eq!(code(&nj), "bad_payload");
        // A zstd bomb: 64 MiB of zeros claimed as 1 KiB, and claimed as 64 MiB.
        let zeros = zstd::bulk::compress(&vec![0u8; 64 << 20], 3).unwrap();
        for claim in [1024u32, 64 << 20] {
            let mut bomb = b"QPB1".to_vec();
            bomb.push(ZSTD);
            bomb.extend(claim.to_le_bytes());
            bomb.extend(&zeros);
            assert_eq!(code(&bomb), "body_too_large", "claimed {claim}");
        }
    }

    #[test]
    fn framed_groups_carry_their_ids() {
        let mut frames = Vec::new();
        for (t, v) in [("id-1", "{\"a\":1}"), ("id-2", "2")] {
            frames.extend(((1 + 16 + 2 + t.len() + v.len()) as u32).to_le_bytes());
            frames.push(0);
            frames.extend([7u8; 16]);
            frames.extend((t.len() as u16).to_le_bytes());
            frames.extend(t.as_bytes());
            frames.extend(v.as_bytes());
        }
        let z = zstd::bulk::compress(&frames, 1).unwrap();
        let mut raw = b"QPB1".to_vec();
        raw.push(FRAMES | COUNTS);
        raw.extend(1u32.to_le_bytes());
        for s in ["q", "p"] {
            raw.extend((s.len() as u16).to_le_bytes());
            raw.extend(s.as_bytes());
        }
        raw.extend(2u32.to_le_bytes());
        raw.extend((z.len() as u32).to_le_bytes());
        raw.extend(&z);
        let got = decode(&raw).unwrap();
        assert_eq!(got.iter().map(|g| g.2.clone().unwrap()).collect::<Vec<_>>(), ["id-1", "id-2"]);
        assert_eq!(got[0].3, "{\"a\":1}");
        // Groups are counted before any frame is decompressed: 101 groups of one message each
        // whose frames are not even zstd are refused for their count, and a group of no
        // messages is refused outright (else a body could ask for a decompression per byte).
        let mut many = b"QPB1".to_vec();
        many.push(FRAMES);
        many.extend(101u32.to_le_bytes());
        for _ in 0..101 {
            many.extend([1, 0, b'q', 1, 0, b'p']);
            many.extend(1u32.to_le_bytes());
            many.extend(3u32.to_le_bytes());
            many.extend([0xde, 0xad, 0x00]);
        }
        assert_eq!(decode(&many).unwrap_err().code, "too_many_items");
        let mut empty = raw.clone();
        let at = raw.len() - z.len() - 8;
        empty[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode(&empty).unwrap_err().code, "bad_binary_body");
        // One message fewer than the count says.
        let at = raw.len() - z.len() - 8;
        raw[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(decode(&raw).unwrap_err().code, "bad_binary_body");
    }
}
