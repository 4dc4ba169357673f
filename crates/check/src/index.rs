//! The files beside a partition segment `<base>.seg`: `<base>.idx`, one 32-byte
//! little-endian record per stored batch (`base: u64, ts: u64, pos: u64, len: u32,
//! count: u32`), and `<base>.txid`, one 16-byte record per message (two u64 LE words: the
//! message's transaction-id key, the second word's top bit set when deduplicated). Checked only when they exist or
//! the checkpoint's mark says how many index records it covers ([`MarkView::batches`]).
//!
//! All of the idx/txid rules live in [`check_beside`], so a change of their format is a
//! change of this file only. Must never write; reads the idx whole (32 bytes per batch, a
//! segment's worth) and only the length of the txid file.

use baton_core::inspect::{txid_unflagged, MarkView, TXID_RECORD};
use baton_core::model::DEDUP_FLAG;
use std::path::{Path, PathBuf};

/// A batch found in the `.seg` inside its mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSeen {
    pub pos: u64,
    /// 12 + the header's batchLength.
    pub len: u64,
    pub base: u64,
    pub count: u32,
    /// The `.txid` records its messages must have (recomputed from its records), when its
    /// records could be decoded.
    /// Each record's offset and the key its `.txid` record must hold (a compacted batch
    /// has fewer records than offsets, D50).
    pub keys: Option<Vec<(u64, [u64; 2])>>,
}

pub const RECORD: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdxRecord {
    base: u64,
    // `ts` (bytes 8..16, the entry's time) is not read: nothing on disk to check it against.
    pos: u64,
    len: u32,
    count: u32,
}

fn record(b: &[u8]) -> IdxRecord {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    IdxRecord { base: u64_at(0), pos: u64_at(16), len: u32_at(24), count: u32_at(28) }
}

fn beside(seg: &Path, ext: &str) -> PathBuf {
    seg.with_extension(ext)
}

/// The names a marked segment may have beside it (not orphans).
pub fn files_beside(seg: &Path) -> [PathBuf; 3] {
    [seg.to_path_buf(), beside(seg, "idx"), beside(seg, "txid")]
}

/// Checks `<base>.idx` and `<base>.txid` beside the segment `seg` against the batches
/// found inside its mark; returns (file, what) for each piece of damage, and counts the
/// files read in `files`.
///
/// Which idx records the checkpoint covers: `mark.batches` when the format records it,
/// otherwise every batch inside the marked length. Covered records must all be there and
/// each must be the batch at its `pos` (base, length, count), contiguous from the segment's
/// base at position 0. Records past them are what was written after the checkpoint
/// (recovery cuts them) and are not judged. The txid file must hold one record per message of
/// the covered records at least; a length that matches neither the covered records nor all
/// of them is damage only when the checkpoint says what it covers is not known.
pub fn check_beside(seg: &Path, mark: &MarkView, batches: &[BatchSeen], files: &mut u64) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let idx_path = beside(seg, "idx");
    let txid_path = beside(seg, "txid");
    let idx = std::fs::read(&idx_path);
    let txid_len = std::fs::metadata(&txid_path).map(|m| m.len());
    let expected = mark.batches.is_some() || idx.is_ok() || txid_len.is_ok();
    if !expected {
        return out;
    }
    if let Some(b) = mark.batches.filter(|b| *b != batches.len() as u64) {
        out.push((
            seg.to_path_buf(),
            format!(
                "holds {} whole batches inside its mark, but the checkpoint covers {b} index records",
                batches.len()
            ),
        ));
    }
    let idx = match idx {
        Ok(b) => {
            *files += 1;
            b
        }
        Err(e) => {
            out.push((idx_path, format!("missing or unreadable ({e}) beside {}", name(seg))));
            return out;
        }
    };
    let covered = mark.batches.map_or(batches.len(), |b| b as usize);
    let whole = idx.len() / RECORD;
    if idx.len() % RECORD != 0 && (mark.batches.is_none() || whole < covered) {
        out.push((idx_path.clone(), format!("{} bytes is not a whole number of {RECORD}-byte records", idx.len())));
    }
    if whole < covered {
        out.push((idx_path.clone(), format!("holds {whole} records, but the checkpoint covers {covered} batches")));
    }
    let records: Vec<IdxRecord> = idx.chunks_exact(RECORD).map(record).collect();
    let (mut pos, mut base) = (0u64, mark.base);
    for (i, r) in records.iter().take(covered).enumerate() {
        let problem = if r.pos != pos || r.base != base {
            Some(format!(
                "record {i} says base {} at byte {}, but the records before it end at base {base}, byte {pos}",
                r.base, r.pos
            ))
        } else {
            match batches.get(i) {
                Some(b) if (b.pos, b.base, b.len, b.count) != (r.pos, r.base, u64::from(r.len), r.count) => {
                    Some(format!(
                    "record {i} says base {}, {} bytes, {} messages at byte {}, but the batch there has base {}, {} \
                     bytes, {} messages",
                    r.base, r.len, r.count, r.pos, b.base, b.len, b.count
                ))
                }
                _ => None,
            }
        };
        if let Some(p) = problem {
            out.push((idx_path.clone(), p));
            // The first wrong record makes every later one wrong: one finding per file.
            break;
        }
        pos = r.pos + u64::from(r.len);
        base = r.base + u64::from(r.count);
    }
    let msgs = |n: usize| records.iter().take(n).map(|r| u64::from(r.count)).sum::<u64>();
    let need = mark.msgs.map_or(TXID_RECORD * msgs(covered), |m| TXID_RECORD * m);
    let all = TXID_RECORD * msgs(records.len());
    if mark.msgs.is_some_and(|m| m != msgs(covered)) {
        out.push((
            idx_path.clone(),
            format!(
                "the covered records hold {} messages, but the checkpoint covers {}",
                msgs(covered),
                need / TXID_RECORD
            ),
        ));
    }
    match txid_len {
        Err(e) => out.push((txid_path, format!("missing or unreadable ({e}) beside {}", name(seg)))),
        Ok(len) => {
            *files += 1;
            let what = format!(
                "{len} bytes; the covered index records hold {} messages, all of them {}",
                need / TXID_RECORD,
                all / TXID_RECORD
            );
            if len < need || (mark.batches.is_none() && len != all) || len % TXID_RECORD != 0 {
                out.push((txid_path, format!("{what} ({TXID_RECORD} bytes each)")));
            } else if let Some(why) = wrong_key(&txid_path, batches, need / TXID_RECORD, mark.base) {
                out.push((txid_path, why));
            }
        }
    }
    out
}

/// The first covered `.txid` record that is not the key of its message's transaction id.
fn wrong_key(path: &Path, batches: &[BatchSeen], covered: u64, seg_base: u64) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    for b in batches {
        let Some(keys) = &b.keys else { continue };
        for &(o, ref want) in keys {
            let j = o.checked_sub(seg_base)?;
            if j >= covered {
                return None;
            }
            let at = (j * TXID_RECORD) as usize;
            let rec = bytes.get(at..at + TXID_RECORD as usize)?;
            let w = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().expect("8 bytes"));
            // Deduplicated: the whole key, flagged; otherwise its first word and a zero.
            let got = [w(0), w(8)];
            let ok = if got[1] & DEDUP_FLAG != 0 { txid_unflagged(got) == *want } else { got == [want[0], 0] };
            if !ok {
                return Some(format!(
                    "record {j} (offset {o}) is not the key of that message's transaction id (changed or damaged)"
                ));
            }
        }
    }
    None
}

fn name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_wire::records::{encode_batch, set_base_offset, NewRecord};

    fn rec(base: u64, pos: u64, len: u32, count: u32) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        b[0..8].copy_from_slice(&base.to_le_bytes());
        b[8..16].copy_from_slice(&7u64.to_le_bytes());
        b[16..24].copy_from_slice(&pos.to_le_bytes());
        b[24..28].copy_from_slice(&len.to_le_bytes());
        b[28..32].copy_from_slice(&count.to_le_bytes());
        b
    }

    /// A segment of two batches (offsets 10..12 and 12..15) and its idx and txid files.
    fn fixture(dir: &Path) -> (PathBuf, Vec<BatchSeen>, MarkView) {
        let mut seg = Vec::new();
        let mut seen = Vec::new();
        let mut idx = Vec::new();
        let mut base = 10;
        for n in [2usize, 3] {
            let recs: Vec<NewRecord> =
                (0..n).map(|_| NewRecord { key: None, value: b"v", txid: None, trace: None }).collect();
            let mut b = encode_batch(&recs, 1).unwrap();
            set_base_offset(&mut b, base);
            seen.push(BatchSeen { pos: seg.len() as u64, len: b.len() as u64, base, count: n as u32, keys: None });
            idx.extend_from_slice(&rec(base, seg.len() as u64, b.len() as u32, n as u32));
            seg.extend_from_slice(&b);
            base += n as u64;
        }
        let path = dir.join(format!("{:020}.seg", 10));
        std::fs::write(&path, &seg).unwrap();
        std::fs::write(path.with_extension("idx"), &idx).unwrap();
        std::fs::write(path.with_extension("txid"), vec![0u8; TXID_RECORD as usize * 5]).unwrap();
        let mark = MarkView { base: 10, gen: 0, len: seg.len() as u64, batches: None, msgs: None };
        (path, seen, mark)
    }

    fn check(seg: &Path, mark: &MarkView, seen: &[BatchSeen]) -> Vec<(PathBuf, String)> {
        check_beside(seg, mark, seen, &mut 0)
    }

    #[test]
    fn whole_files_pass_and_each_kind_of_damage_names_its_file() {
        let d = tempfile::tempdir().unwrap();
        let (seg, seen, mark) = fixture(d.path());
        let (idx, txid) = (seg.with_extension("idx"), seg.with_extension("txid"));
        assert!(check(&seg, &mark, &seen).is_empty(), "{:?}", check(&seg, &mark, &seen));
        let good_idx = std::fs::read(&idx).unwrap();

        // A flipped byte in the second record's count.
        let mut b = good_idx.clone();
        b[RECORD + 28] ^= 1;
        std::fs::write(&idx, &b).unwrap();
        let f = check(&seg, &mark, &seen);
        assert!(f.iter().any(|(p, w)| *p == idx && w.contains("record 1")), "{f:?}");

        // Truncated (half a record short) and deleted.
        std::fs::write(&idx, &good_idx[..good_idx.len() - 16]).unwrap();
        let f = check(&seg, &mark, &seen);
        assert!(f.iter().any(|(p, w)| *p == idx && w.contains("holds 1 records")), "{f:?}");
        std::fs::remove_file(&idx).unwrap();
        let f = check(&seg, &mark, &seen);
        assert!(f.iter().any(|(p, w)| *p == idx && w.contains("missing")), "{f:?}");
        std::fs::write(&idx, &good_idx).unwrap();

        // The txid file one message short, and deleted.
        std::fs::write(&txid, vec![0u8; TXID_RECORD as usize * 4]).unwrap();
        let f = check(&seg, &mark, &seen);
        assert!(f.iter().any(|(p, _)| *p == txid), "{f:?}");
        std::fs::remove_file(&txid).unwrap();
        let f = check(&seg, &mark, &seen);
        assert!(f.iter().any(|(p, w)| *p == txid && w.contains("missing")), "{f:?}");
    }

    #[test]
    fn the_marks_batch_count_drives_what_is_covered() {
        let d = tempfile::tempdir().unwrap();
        let (seg, seen, mut mark) = fixture(d.path());
        // The checkpoint covers one batch: the mark ends after it, a second record and more
        // txids are what was written after the checkpoint, not damage.
        mark.batches = Some(1);
        mark.len = seen[0].len;
        assert!(check(&seg, &mark, &seen[..1]).is_empty(), "{:?}", check(&seg, &mark, &seen[..1]));
        // Covering three with two on disk is damage, in the idx and in the seg.
        mark.batches = Some(3);
        let f = check(&seg, &mark, &seen[..1]);
        assert!(f.iter().any(|(p, _)| *p == seg.with_extension("idx")), "{f:?}");
        assert!(f.iter().any(|(p, _)| *p == seg), "{f:?}");
        // With no idx or txid and no count in the mark there is nothing to check.
        std::fs::remove_file(seg.with_extension("idx")).unwrap();
        std::fs::remove_file(seg.with_extension("txid")).unwrap();
        mark.batches = None;
        assert!(check(&seg, &mark, &seen).is_empty());
        // A mark that counts batches needs its idx.
        mark.batches = Some(2);
        assert!(check(&seg, &mark, &seen)
            .iter()
            .any(|(p, w)| *p == seg.with_extension("idx") && w.contains("missing")));
    }
}
