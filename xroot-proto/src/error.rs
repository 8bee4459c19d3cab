//! The one error type of the codecs.
//!
//! Every variant says what was being decoded and what came instead. A peer
//! that sent bytes of the wrong shape gets one of these, never a panic, and no
//! length field is trusted for an allocation before it has been checked.

/// Why bytes could not be decoded (or a value could not be encoded).
///
/// In every variant `what` names the field or structure, in the protocol's
/// words (`"kXR_readv read_list"`, `"response dlen"`, …); the other fields are
/// the expected bound and the value that came, in bytes or elements.
#[non_exhaustive]
#[allow(missing_docs)] // the fields are described above
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the structure needs. From an incremental decoder this
    /// only happens at end of stream ([`crate::frame::RequestDecoder::decode_eof`]);
    /// within a complete frame it means a body shorter than its own fields say.
    #[error("truncated {what}: expected {expected} bytes, got {got}")]
    Truncated {
        what: &'static str,
        expected: u64,
        got: u64,
    },

    /// A signed length field (dlen, rlen, wlen, bdy.dlen, …) below zero.
    #[error("negative length in {what}: {value}")]
    NegativeLength { what: &'static str, value: i64 },

    /// A length above the configured or protocol maximum, e.g. a frame `dlen`
    /// above the decoder's `max_dlen`.
    #[error("{what} of {value} bytes exceeds the maximum of {max}")]
    LengthTooLarge {
        what: &'static str,
        value: u64,
        max: u64,
    },

    /// A vector with more elements than the protocol allows (`maxRvecsz`,
    /// `maxWvecsz`, `maxClonesz`: 1024).
    #[error("{what} has {count} elements, more than the maximum of {max}")]
    TooManyElements {
        what: &'static str,
        count: u64,
        max: u64,
    },

    /// One readv element asks for more than `maxRVdsz` (2,097,136) bytes.
    #[error("readv element {index} asks for {rlen} bytes, more than the maximum of {max}")]
    ReadvElementTooLarge { index: usize, rlen: u64, max: u64 },

    /// The sum of a readv's element lengths plus their 16-byte headers is
    /// over 2 GiB.
    #[error("readv total of {total} bytes (with 16-byte element headers) exceeds {max}")]
    ReadvTotalTooLarge { total: u64, max: u64 },

    /// A length that must be a multiple of a unit is not (a read_list of
    /// 17 bytes, a write_list of 30, …).
    #[error("{what} of {len} bytes is not a multiple of {unit}")]
    Misaligned {
        what: &'static str,
        len: u64,
        unit: u64,
    },

    /// Bytes left over after a structure that must fill its frame.
    #[error("{extra} unexpected trailing bytes after {what}")]
    TrailingBytes { what: &'static str, extra: u64 },

    /// The 20-byte client handshake was not `0, 0, 0, 4, 2012`.
    #[error("bad client handshake: expected [0, 0, 0, 4, 2012], got {got:?}")]
    BadHandshake { got: [i32; 5] },

    /// The crc32c of a `kXR_status` body did not match its contents.
    #[error("kXR_status body crc32c mismatch: frame carries {expected:#010x}, computed {computed:#010x}")]
    StatusCrc { expected: u32, computed: u32 },

    /// A field holds a value the protocol does not allow here.
    #[error("invalid {what}: expected {expected}, got {got}")]
    InvalidValue {
        what: &'static str,
        expected: &'static str,
        got: i64,
    },

    /// Text that must be ASCII/UTF-8, a number or a fixed keyword was not.
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },

    /// The frame's request id or status does not fit the body type asked
    /// for (decoding a `kXR_read` frame as a `kXR_open`, say).
    #[error("{what}: expected {expected}, got {got}")]
    WrongKind {
        what: &'static str,
        expected: String,
        got: String,
    },
}

impl DecodeError {
    /// A [`DecodeError::Truncated`] for `what`.
    pub fn truncated(what: &'static str, expected: usize, got: usize) -> Self {
        DecodeError::Truncated {
            what,
            expected: expected as u64,
            got: got as u64,
        }
    }

    /// `Ok` when `got >= expected` (bytes), else a [`DecodeError::Truncated`]
    /// for `what`.
    pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), Self> {
        if got < expected {
            return Err(DecodeError::truncated(what, expected, got));
        }
        Ok(())
    }

    /// `Ok` when `count <= max`, else a [`DecodeError::TooManyElements`]
    /// for `what`.
    pub(crate) fn check_count(what: &'static str, count: usize, max: usize) -> Result<(), Self> {
        if count > max {
            return Err(DecodeError::TooManyElements {
                what,
                count: count as u64,
                max: max as u64,
            });
        }
        Ok(())
    }

    /// A [`DecodeError::Malformed`] for `what`.
    pub fn malformed(what: &'static str, detail: impl Into<String>) -> Self {
        DecodeError::Malformed {
            what,
            detail: detail.into(),
        }
    }
}
