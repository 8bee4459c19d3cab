//! `kXR_fattr` (PROTOCOL.md §7.9, `ClientFattrRequest`).

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::{FHandle, StreamId};
use crate::limits::{MAX_FATTR_ATTRS, MAX_FATTR_NAME, MAX_FATTR_VALUE};
use crate::wire::Reader;

use super::body::RequestBody;
use super::params::{put_header, Params};

wire_newtype! {
    /// `ClientFattrRequest::subcode` (byte 8), `xfaSubCode`.
    code FattrSubcode(u8);
    DEL = 0 => "kXR_fattrDel";
    GET = 1 => "kXR_fattrGet";
    LIST = 2 => "kXR_fattrList";
    SET = 3 => "kXR_fattrSet";
}

wire_newtype! {
    /// `ClientFattrRequest::options` (byte 10).
    flags FattrOptions(u8);
    /// For set: the attribute must not exist yet.
    IS_NEW = 0x01 => "isNew";
    /// For list: return the values too.
    A_DATA = 0x10 => "aData";
}

const WHAT: &str = "kXR_fattr payload";

/// `kXR_fattr` (3020): get, set, delete or list extended attributes of a
/// path or an open file (`ClientFattrRequest`, PROTOCOL.md §7.9).
///
/// The payload is the target (`path\0`, or a single `\0` to use `fhandle`;
/// a list by handle may also have no payload), then `numattr` names, each
/// `u16 0` + `name\0`, then for set `numattr` values, each `i32 len` +
/// `value[len]`. `numattr` (byte 9) is `names.len()`. The server puts every
/// name in the `U.` namespace. An empty `path` is encoded as a single `\0`.
///
/// Decoding fails with [`DecodeError::TooManyElements`] for more than 16
/// names, [`DecodeError::LengthTooLarge`] for a name over 248 or a value over
/// 65536 bytes, [`DecodeError::NegativeLength`] for a negative value length,
/// [`DecodeError::Malformed`] for an empty or unterminated name or path,
/// [`DecodeError::InvalidValue`] for a name prefix other than 0,
/// [`DecodeError::Truncated`] for a short payload and
/// [`DecodeError::TrailingBytes`] for bytes left over (the reference's
/// `kXR_BadPayload`). `numattr` 0 for get/set/del is left to the server.
#[doc(alias = "kXR_fattr")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fattr {
    /// Bytes 4-7: the file when `path` is empty.
    pub fhandle: FHandle,
    /// Byte 8.
    pub subcode: FattrSubcode,
    /// Byte 10.
    pub options: FattrOptions,
    /// The target path (`path[?cgi]`, without its NUL), or empty for `fhandle`.
    pub path: Bytes,
    /// The attribute names (without their NUL or the `U.` prefix).
    pub names: Vec<Bytes>,
    /// For [`FattrSubcode::SET`], `values[i]` is the value of `names[i]`;
    /// empty (and not sent) for the other subcodes.
    pub values: Vec<Bytes>,
}

/// The bytes up to the next NUL, which is consumed. `empty_ok` says whether
/// a zero-length string is allowed.
fn cstr(r: &mut Reader, what: &'static str, empty_ok: bool) -> Result<Bytes, DecodeError> {
    let tail = r.rest();
    let n = tail
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| DecodeError::malformed(what, "no terminating NUL"))?;
    if n == 0 && !empty_ok {
        return Err(DecodeError::malformed(what, "empty"));
    }
    *r = Reader::new(tail.slice(n + 1..), WHAT);
    Ok(tail.slice(..n))
}

impl RequestBody for Fattr {
    const ID: RequestId = RequestId::FATTR;

    fn decode(frame: &RequestFrame) -> Result<Self, DecodeError> {
        let p = Params::of(frame, Self::ID)?;
        let subcode: FattrSubcode = p.get(8);
        let numattr = usize::from(p.get::<u8>(9));
        DecodeError::check_count("kXR_fattr numattr", numattr, MAX_FATTR_ATTRS)?;
        let mut r = Reader::new(frame.payload.clone(), WHAT);
        let path = if r.is_empty() {
            Bytes::new()
        } else {
            cstr(&mut r, "kXR_fattr path", true)?
        };
        let mut names = Vec::with_capacity(numattr);
        for _ in 0..numattr {
            let prefix = r.u16()?;
            if prefix != 0 {
                return Err(DecodeError::InvalidValue {
                    what: "kXR_fattr name prefix",
                    expected: "0",
                    got: prefix.into(),
                });
            }
            let name = cstr(&mut r, "kXR_fattr name", false)?;
            if name.len() > MAX_FATTR_NAME {
                return Err(DecodeError::LengthTooLarge {
                    what: "kXR_fattr name",
                    value: name.len() as u64,
                    max: MAX_FATTR_NAME as u64,
                });
            }
            names.push(name);
        }
        let mut values = Vec::new();
        if subcode == FattrSubcode::SET {
            values.reserve(numattr);
            for _ in 0..numattr {
                let len = r.i32()?;
                if len < 0 {
                    return Err(DecodeError::NegativeLength {
                        what: "kXR_fattr value length",
                        value: len.into(),
                    });
                }
                if len as usize > MAX_FATTR_VALUE {
                    return Err(DecodeError::LengthTooLarge {
                        what: "kXR_fattr value",
                        value: len as u64,
                        max: MAX_FATTR_VALUE as u64,
                    });
                }
                values.push(r.bytes(len as usize)?);
            }
        }
        r.finish()?;
        Ok(Fattr {
            fhandle: p.get(4),
            subcode,
            options: p.get(10),
            path,
            names,
            values,
        })
    }

    /// # Panics
    /// Also if there are more than 255 names.
    fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
        let numattr = u8::try_from(self.names.len()).expect("kXR_fattr numattr over 255");
        let p = Params::default()
            .set(4, self.fhandle)
            .set(8, self.subcode)
            .set(9, numattr)
            .set(10, self.options);
        let set = self.subcode == FattrSubcode::SET;
        let names: usize = self.names.iter().map(|n| 2 + n.len() + 1).sum();
        let values: usize = if set {
            self.values.iter().map(|v| 4 + v.len()).sum()
        } else {
            0
        };
        put_header(
            buf,
            streamid,
            Self::ID,
            p,
            self.path.len() + 1 + names + values,
        );
        buf.put_slice(&self.path);
        buf.put_u8(0);
        for n in &self.names {
            buf.put_u16(0);
            buf.put_slice(n);
            buf.put_u8(0);
        }
        if set {
            for v in &self.values {
                buf.put_i32(i32::try_from(v.len()).expect("kXR_fattr value over i32::MAX"));
                buf.put_slice(v);
            }
        }
    }
}
