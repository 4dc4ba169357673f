//! The frame codec: the byte layout of one log entry.
//!
//! Layout (all little-endian): magic u32, payload length u32, crc32c u32 over
//! (index u64 ++ payload), index u64, payload.
//!
//! Owns only the layout. Must never touch files, panic on any input, or allocate based on a
//! length read from disk (decoding borrows from the caller's bytes).

/// Chosen to contain 0xFF and 0xFE, which never occur in UTF-8, so text payloads cannot
/// produce false magic hits during torn-tail scanning.
pub(crate) const MAGIC: u32 = 0xFEA1_B7FF;
pub(crate) const MAGIC_BYTES: [u8; 4] = MAGIC.to_le_bytes();
pub(crate) const HEADER_LEN: usize = 20;
/// A length field beyond this is treated as damage, not as a reason to read or allocate more.
pub(crate) const MAX_PAYLOAD: usize = 256 << 20;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decoded<'a> {
    Frame {
        index: u64,
        payload: &'a [u8],
        /// Header plus payload: where the next frame starts.
        len: usize,
    },
    Invalid(String),
}

fn checksum(index: u64, payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&index.to_le_bytes()), payload)
}

/// Reserves a header in `buf` and returns where the frame starts; the caller appends the
/// payload and then calls [`seal`] on `buf[start..]`. Lets payloads be encoded in place.
pub(crate) fn begin(buf: &mut Vec<u8>) -> usize {
    let start = buf.len();
    buf.resize(start + HEADER_LEN, 0);
    start
}

/// Fills in the header of a frame whose payload has already been written after it.
pub(crate) fn seal(frame: &mut [u8], index: u64) -> Result<(), String> {
    let Some((header, payload)) = frame.split_at_mut_checked(HEADER_LEN) else {
        return Err(format!("frame of {} bytes has no room for a header", frame.len()));
    };
    if payload.len() > MAX_PAYLOAD {
        return Err(format!("entry of {} bytes exceeds the {MAX_PAYLOAD}-byte frame cap", payload.len()));
    }
    let len = payload.len() as u32; // fits: bounded by MAX_PAYLOAD above
    header[0..4].copy_from_slice(&MAGIC_BYTES);
    header[4..8].copy_from_slice(&len.to_le_bytes());
    header[8..12].copy_from_slice(&checksum(index, payload).to_le_bytes());
    header[12..20].copy_from_slice(&index.to_le_bytes());
    Ok(())
}

#[cfg(test)]
pub(crate) fn encode(buf: &mut Vec<u8>, index: u64, payload: &[u8]) -> Result<(), String> {
    let start = begin(buf);
    buf.extend_from_slice(payload);
    let sealed = seal(&mut buf[start..], index);
    if sealed.is_err() {
        buf.truncate(start);
    }
    sealed
}

/// Decodes the frame at the start of `bytes`, verifying magic, length cap and checksum.
pub(crate) fn decode(bytes: &[u8]) -> Decoded<'_> {
    let Some(h) = bytes.first_chunk::<HEADER_LEN>() else {
        return Decoded::Invalid(format!("truncated header ({} of {HEADER_LEN} bytes)", bytes.len()));
    };
    let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    if magic != MAGIC {
        return Decoded::Invalid(format!("bad magic {magic:#010x}"));
    }
    let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    if len > MAX_PAYLOAD {
        return Decoded::Invalid(format!("payload length {len} exceeds cap {MAX_PAYLOAD}"));
    }
    let stored_crc = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    let index = u64::from_le_bytes([h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]]);
    let Some(payload) = bytes.get(HEADER_LEN..HEADER_LEN + len) else {
        return Decoded::Invalid(format!("truncated payload ({} of {len} bytes)", bytes.len() - HEADER_LEN));
    };
    let crc = checksum(index, payload);
    if crc != stored_crc {
        return Decoded::Invalid(format!("crc mismatch (stored {stored_crc:#010x}, computed {crc:#010x})"));
    }
    Decoded::Frame { index, payload, len: HEADER_LEN + len }
}

/// The length of the frame at the start of `bytes` (header and payload) when its header is
/// intact (magic, a length within the cap) and all of it is present, valid checksum or not.
pub(crate) fn whole_len(bytes: &[u8]) -> Option<usize> {
    let len = payload_len(bytes)?;
    (HEADER_LEN + len <= bytes.len()).then_some(HEADER_LEN + len)
}

/// The payload length a frame header declares, when the header is intact (magic, a length
/// within the cap); lets a reader fetch exactly one frame without trusting a wild length.
pub(crate) fn payload_len(header: &[u8]) -> Option<usize> {
    let h = header.first_chunk::<HEADER_LEN>()?;
    if h[0..4] != MAGIC_BYTES {
        return None;
    }
    let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    (len <= MAX_PAYLOAD).then_some(len)
}

/// Offset (relative to `bytes`) of the first position holding a frame that fully validates
/// and whose index is at least `min_index`. Frames the log wrote after a damaged one carry
/// later indexes, so requiring `min_index` keeps a frame that merely happens to be embedded
/// inside some payload from being mistaken for log data.
pub(crate) fn find_valid_frame(bytes: &[u8], min_index: u64) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = bytes.get(from..)?.windows(MAGIC_BYTES.len()).position(|w| w == MAGIC_BYTES) {
        let at = from + rel;
        if let Decoded::Frame { index, .. } = decode(&bytes[at..]) {
            if index >= min_index {
                return Some(at);
            }
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(index: u64, payload: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&mut buf, index, payload).unwrap();
        buf
    }

    #[test]
    fn round_trip_single_and_concatenated() {
        let mut buf = Vec::new();
        let payloads: [&[u8]; 3] = [b"", b"hello", &[0xFFu8; 1000]];
        for (i, p) in payloads.iter().enumerate() {
            encode(&mut buf, 7 + i as u64, p).unwrap();
        }
        let mut off = 0;
        for (i, p) in payloads.iter().enumerate() {
            match decode(&buf[off..]) {
                Decoded::Frame { index, payload, len } => {
                    assert_eq!(index, 7 + i as u64);
                    assert_eq!(payload, *p);
                    assert_eq!(len, HEADER_LEN + p.len());
                    off += len;
                }
                other => panic!("frame {i}: {other:?}"),
            }
        }
        assert_eq!(off, buf.len());
    }

    #[test]
    fn header_layout_is_as_documented() {
        let f = frame(0x0102_0304_0506_0708, b"xyz");
        assert_eq!(&f[0..4], &MAGIC_BYTES);
        assert_eq!(&f[4..8], &3u32.to_le_bytes());
        let mut crc_input = 0x0102_0304_0506_0708u64.to_le_bytes().to_vec();
        crc_input.extend_from_slice(b"xyz");
        assert_eq!(&f[8..12], &crc32c::crc32c(&crc_input).to_le_bytes());
        assert_eq!(&f[12..20], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(&f[20..], b"xyz");
    }

    #[test]
    fn any_flipped_bit_is_detected() {
        let good = frame(42, b"some payload bytes");
        for byte in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[byte] ^= 1 << bit;
                match decode(&bad) {
                    Decoded::Invalid(_) => {}
                    // A length bit flipped towards a shorter payload still needs the crc to fail.
                    Decoded::Frame { .. } => panic!("flip at byte {byte} bit {bit} undetected"),
                }
            }
        }
    }

    #[test]
    fn crc_mismatch_is_reported_as_such() {
        let mut f = frame(1, b"abc");
        f[HEADER_LEN] ^= 0x01;
        match decode(&f) {
            Decoded::Invalid(reason) => assert!(reason.contains("crc mismatch"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_length_is_rejected_without_needing_the_bytes() {
        let mut f = frame(1, b"abc");
        f[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        match decode(&f) {
            Decoded::Invalid(reason) => assert!(reason.contains("exceeds cap"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let mut at_cap = frame(1, b"");
        at_cap[4..8].copy_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
        match decode(&at_cap) {
            Decoded::Invalid(reason) => assert!(reason.contains("truncated payload"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn seal_refuses_oversized_payload() {
        let mut buf = vec![0u8; HEADER_LEN + MAX_PAYLOAD + 1];
        assert!(seal(&mut buf, 1).is_err());
        assert!(seal(&mut [0u8; 5], 1).is_err());
    }

    #[test]
    fn truncated_inputs_are_invalid_not_panics() {
        let f = frame(3, b"payload");
        for cut in 0..f.len() {
            assert!(matches!(decode(&f[..cut]), Decoded::Invalid(_)), "cut at {cut}");
        }
        let mut wrong_magic = f.clone();
        wrong_magic[0] = 0;
        assert!(matches!(decode(&wrong_magic), Decoded::Invalid(r) if r.contains("magic")));
    }

    #[test]
    fn find_valid_frame_skips_garbage_and_old_indexes() {
        let mut bytes = vec![0xAB; 37];
        bytes.extend_from_slice(&MAGIC_BYTES); // a lone magic with garbage after it
        bytes.extend_from_slice(&[0u8; 30]);
        let old_at = bytes.len();
        bytes.extend_from_slice(&frame(3, b"old"));
        let new_at = bytes.len();
        bytes.extend_from_slice(&frame(9, b"new"));
        assert_eq!(find_valid_frame(&bytes, 5), Some(new_at));
        assert_eq!(find_valid_frame(&bytes, 1), Some(old_at));
        assert_eq!(find_valid_frame(&bytes, 10), None);
        assert_eq!(find_valid_frame(&[], 0), None);
    }
}
