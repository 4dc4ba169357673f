//! Provides compression utilities for encoding records.
//!
//! This module has implementations of gzip, Snappy, as well as a noop compression format that
//! allows encoding and decoding records into a [`Record`](crate::records::Record).

use crate::protocol::buf::{ByteBuf, ByteBufMut};
use anyhow::Result;

#[cfg(feature = "gzip")]
mod gzip;
#[cfg(feature = "lz4")]
mod lz4;
mod none;
#[cfg(feature = "snappy")]
mod snappy;
#[cfg(feature = "zstd")]
mod zstd;

#[cfg(feature = "gzip")]
pub use gzip::Gzip;
#[cfg(feature = "lz4")]
pub use lz4::Lz4;
pub use none::None;
#[cfg(feature = "snappy")]
pub use snappy::Snappy;
#[cfg(feature = "zstd")]
pub use zstd::Zstd;

/// Baton patch: the most bytes one compressed batch may expand to. A batch is
/// the sender's claim; without a bound a few kilobytes of gzip or zstd could
/// ask for gigabytes (a decompression bomb).
pub const MAX_DECOMPRESSED_BYTES: u64 = 256 << 20;

/// Baton patch: read a decompressor to its end, failing past the bound.
#[allow(dead_code)]
pub(crate) fn read_bounded<R: std::io::Read>(r: R, what: &str) -> Result<bytes::BytesMut> {
    use std::io::Read as _;
    let mut out = Vec::new();
    r.take(MAX_DECOMPRESSED_BYTES + 1).read_to_end(&mut out)?;
    if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
        anyhow::bail!("{what} batch expands past {MAX_DECOMPRESSED_BYTES} bytes");
    }
    Ok(bytes::BytesMut::from(&out[..]))
}

/// A trait for record compression algorithms.
pub trait Compressor<B: ByteBufMut> {
    /// Target buffer type for compression.
    type BufMut: ByteBufMut;
    /// Compresses into provided [`ByteBufMut`], with records encoded by `F` into `R`.
    fn compress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::BufMut) -> Result<R>;
}

/// A trait for record decompression algorithms.
pub trait Decompressor<B: ByteBuf> {
    /// Target buffer type for decompression.
    type Buf: ByteBuf;
    /// Decompress records from `B` mapped using `F` into `R`.
    fn decompress<R, F>(buf: &mut B, f: F) -> Result<R>
    where
        F: FnOnce(&mut Self::Buf) -> Result<R>;
}
