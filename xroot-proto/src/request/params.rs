//! The machinery shared by every request type: the 16-byte parameter area
//! addressed by header byte offset, the one header writer, and the macro that
//! defines a request whose payload is a single opaque byte string.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::{FHandle, RequestHeader, StreamId};

/// A value that occupies `LEN` bytes of the parameter area, big-endian for
/// integers and verbatim for opaque byte arrays (PROTOCOL.md §15 item 5).
pub(crate) trait Param: Copy {
    /// Bytes on the wire.
    const LEN: usize;
    /// Reads the value from exactly `LEN` bytes.
    fn read(b: &[u8]) -> Self;
    /// Writes the value into exactly `LEN` bytes.
    fn write(self, b: &mut [u8]);
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            const LEN: usize = core::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                <$t>::from_be_bytes(b.try_into().expect("parameter width"))
            }
            fn write(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_be_bytes());
            }
        }
    )*};
}
int_param!(u8, u16, i16, u32, i32, u64, i64);

impl<const N: usize> Param for [u8; N] {
    const LEN: usize = N;
    fn read(b: &[u8]) -> Self {
        b.try_into().expect("parameter width")
    }
    fn write(self, b: &mut [u8]) {
        b.copy_from_slice(&self);
    }
}

impl Param for FHandle {
    const LEN: usize = 4;
    fn read(b: &[u8]) -> Self {
        FHandle(Param::read(b))
    }
    fn write(self, b: &mut [u8]) {
        self.0.write(b)
    }
}

/// Header bytes 4..20 (`ClientRequestHdr::body`), read and written at the
/// header byte offsets that PROTOCOL.md §4 uses, so `p.get::<u16>(18)` is
/// "bytes 18-19". Bytes nobody sets are zero (the reserved fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Params([u8; 16]);

impl Params {
    /// The first header byte of the area.
    const START: usize = 4;

    /// The parameter area of `frame` after checking that its request id is
    /// `id`. Errors: [`DecodeError::WrongKind`] otherwise.
    pub(crate) fn of(frame: &RequestFrame, id: RequestId) -> Result<Params, DecodeError> {
        let got = frame.header.requestid;
        if got != id {
            return Err(DecodeError::WrongKind {
                what: "request",
                expected: format!("{id:?}"),
                got: format!("{got:?}"),
            });
        }
        Ok(Params(frame.header.params))
    }

    /// The area as received, unchecked (for re-encoding an unknown request).
    pub(crate) fn from_raw(raw: [u8; 16]) -> Params {
        Params(raw)
    }

    /// The field at header byte `at` (4..=19 minus its width).
    pub(crate) fn get<T: Param>(&self, at: usize) -> T {
        T::read(&self.0[at - Self::START..at - Self::START + T::LEN])
    }

    /// `self` with the field at header byte `at` set to `v`.
    pub(crate) fn set<T: Param>(mut self, at: usize, v: T) -> Params {
        v.write(&mut self.0[at - Self::START..at - Self::START + T::LEN]);
        self
    }
}

/// Appends the 24-byte header of a request whose payload is `dlen` bytes and
/// reserves room for the payload. The one place a request header is written.
///
/// # Panics
/// If `dlen` exceeds `i32::MAX`: no request can carry 2 GiB of payload.
pub(crate) fn put_header(
    buf: &mut BytesMut,
    streamid: StreamId,
    requestid: RequestId,
    params: Params,
    dlen: usize,
) {
    let header = RequestHeader {
        streamid,
        requestid,
        params: params.0,
        dlen: i32::try_from(dlen).expect("request payload over i32::MAX bytes"),
    };
    buf.reserve(RequestHeader::LEN + dlen);
    header.encode(buf);
}

/// Appends a whole request whose payload is `payload`.
pub(crate) fn put_request(
    buf: &mut BytesMut,
    streamid: StreamId,
    requestid: RequestId,
    params: Params,
    payload: &[u8],
) {
    put_header(buf, streamid, requestid, params, payload.len());
    buf.put_slice(payload);
}

/// The payload split at every `\n` (a trailing `\n` gives no empty last
/// item), each piece a slice of `b`: the path lists of `kXR_statx` and
/// `kXR_prepare`.
pub(crate) fn lines(b: &Bytes) -> impl Iterator<Item = Bytes> + '_ {
    let mut at = 0;
    core::iter::from_fn(move || {
        if at >= b.len() {
            return None;
        }
        let end = b[at..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| at + i);
        let line = b.slice(at..end);
        at = end + 1;
        Some(line)
    })
}

/// `b` up to (not including) its first NUL: a fixed-width, NUL-padded field
/// such as the login `username[8]` or the auth `credtype[4]`.
pub(crate) fn until_nul(b: &[u8]) -> &[u8] {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..n]
}

/// Defines a request made of parameter-area fields and, optionally, one
/// payload kept whole as [`Bytes`] (a path, CGI text, credentials, data).
///
/// ```text
/// simple_request! {
///     /// docs
///     Chmod = CHMOD "kXR_chmod" {
///         /// docs
///         mode: Mode = 18,            // type, header byte offset
///     }
///     payload /// docs
///         path => path_str;           // optional; `=> name` adds a UTF-8 accessor
///     check Self::validate;           // optional fn(&Self) -> Result<(), DecodeError>
/// }
/// ```
///
/// Without `payload` the request is sent with `dlen` 0 and a received
/// payload is ignored, as the reference server ignores it.
macro_rules! simple_request {
    (
        $(#[$meta:meta])*
        $name:ident = $id:ident $cname:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $at:literal, )*
        }
        $( payload $(#[$pmeta:meta])* $pfield:ident $(=> $acc:ident)?; )?
        $( check $check:path; )?
    ) => {
        $(#[$meta])*
        #[doc = ""]
        #[doc = concat!("Request id `", $cname, "`; see [`",
            "crate::request::RequestBody", "`] for encoding and decoding.")]
        #[doc(alias = $cname)]
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            $( $(#[$pmeta])* pub $pfield: bytes::Bytes, )?
        }

        impl $crate::request::RequestBody for $name {
            const ID: $crate::codes::RequestId = $crate::codes::RequestId::$id;

            fn decode(
                frame: &$crate::frame::RequestFrame,
            ) -> Result<Self, $crate::error::DecodeError> {
                #[allow(unused_variables)]
                let p = $crate::request::params::Params::of(frame, Self::ID)?;
                let req = $name {
                    $( $field: p.get($at), )*
                    $( $pfield: frame.payload.clone(), )?
                };
                $( $check(&req)?; )?
                Ok(req)
            }

            fn encode(&self, streamid: $crate::header::StreamId, buf: &mut bytes::BytesMut) {
                let p = $crate::request::params::Params::default()
                    $( .set($at, self.$field) )*;
                #[allow(unused_variables)]
                let payload: &[u8] = &[];
                $( let payload: &[u8] = &self.$pfield; )?
                $crate::request::params::put_request(buf, streamid, Self::ID, p, payload);
            }
        }

        $($(
            impl $name {
                #[doc = concat!("`", stringify!($pfield), "` as UTF-8 text. Errors: ",
                    "[`DecodeError::Malformed`](crate::DecodeError::Malformed) if it is not UTF-8.")]
                pub fn $acc(&self) -> Result<&str, $crate::error::DecodeError> {
                    $crate::wire::utf8(&self.$pfield, concat!($cname, " ", stringify!($pfield)))
                }
            }
        )?)?
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_use_header_offsets() {
        let p = Params::default()
            .set(4, FHandle([1, 2, 3, 4]))
            .set(8, -2i64)
            .set(16, 0x0102_0304i32);
        assert_eq!(
            p.0,
            [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4]
        );
        assert_eq!(p.get::<i64>(8), -2);
        assert_eq!(p.get::<u16>(18), 0x0304);
        assert_eq!(p.get::<FHandle>(4), FHandle([1, 2, 3, 4]));
    }

    #[test]
    fn lines_are_slices() {
        let b = Bytes::from_static(b"/a\n/b/c\n\n/d\n");
        let v: Vec<Bytes> = lines(&b).collect();
        assert_eq!(v, vec!["/a", "/b/c", "", "/d"]);
        assert_eq!(lines(&Bytes::new()).count(), 0);
        assert_eq!(until_nul(b"unix\0\0"), b"unix");
        assert_eq!(until_nul(b"abcdefgh"), b"abcdefgh");
    }
}
