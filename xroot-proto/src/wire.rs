//! Crate-internal helpers for reading and writing big-endian fields.
//!
//! [`Reader`] walks a [`Bytes`] and hands out sub-slices without copying;
//! every read checks the remaining length first and names what it was
//! reading when it runs out.

use bytes::{Buf, Bytes};

use crate::error::DecodeError;

/// A bounds-checked cursor over a frame's bytes.
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    buf: Bytes,
    what: &'static str,
}

/// `Reader::u8()`, `Reader::u16()`…: the next big-endian integer of that type.
macro_rules! read_int {
    ($($t:ident),*) => {$(
        pub(crate) fn $t(&mut self) -> Result<$t, DecodeError> {
            self.array().map($t::from_be_bytes)
        }
    )*};
}

impl Reader {
    read_int!(u8, u16, i16, u32, i32, i64, u64);

    pub(crate) fn new(buf: Bytes, what: &'static str) -> Self {
        Reader { buf, what }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn need(&self, n: usize) -> Result<(), DecodeError> {
        DecodeError::check_len(self.what, n, self.buf.len())
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.need(N)?;
        let mut out = [0u8; N];
        self.buf.copy_to_slice(&mut out);
        Ok(out)
    }

    /// The next `n` bytes as a slice of the same buffer (no copy).
    pub(crate) fn bytes(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }

    /// Everything left, as a slice of the same buffer (no copy).
    pub(crate) fn rest(&mut self) -> Bytes {
        core::mem::take(&mut self.buf)
    }

    /// Fails with [`DecodeError::TrailingBytes`] if anything is left.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes {
                what: self.what,
                extra: self.buf.len() as u64,
            })
        }
    }
}

/// Strips one trailing NUL, if present (stat text, error messages and other
/// strings the server NUL-terminates, PROTOCOL.md §15 item 7).
pub(crate) fn strip_nul(b: &Bytes) -> Bytes {
    match b.last() {
        Some(0) => b.slice(..b.len() - 1),
        _ => b.clone(),
    }
}

/// `b` as UTF-8 text, naming `what` if it is not.
pub(crate) fn utf8<'a>(b: &'a [u8], what: &'static str) -> Result<&'a str, DecodeError> {
    core::str::from_utf8(b).map_err(|e| DecodeError::malformed(what, format!("not UTF-8: {e}")))
}
