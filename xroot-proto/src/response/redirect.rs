//! The `kXR_redirect` body: `port:i32` then `host[?opaque[?token]]` with no
//! NUL (`ServerResponseBody_Redirect`, PROTOCOL.md §8.3, §15 item 8).
//!
//! The sign of `port` says how to read the host field: `> 0` host and port,
//! `0` the host field as it is, `−1` a full URL, `< −1` a URL (or host) plus
//! flags `!port` (`kXR_recoverWrts`, `kXR_collapseRedir`, `kXR_ecRedir`).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;
use crate::wire::Reader;

wire_newtype! {
    /// The flags a redirect carries in a port below −1, as `!port` (sent only
    /// to clients that set `kXR_redirflags` at login). PROTOCOL.md §5.1, §8.3.
    flags RedirectFlags(u32);
    RECOVER_WRTS = 0x1000 => "kXR_recoverWrts";
    COLLAPSE_REDIR = 0x2000 => "kXR_collapseRedir";
    EC_REDIR = 0x4000 => "kXR_ecRedir";
}

/// How the host field of a [`Redirect`] is to be read, from its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectMode {
    /// `port > 0`: connect to `host:port`.
    HostPort(u32),
    /// `port == 0`: the host field is used as it is, no port appended.
    HostAsIs,
    /// `port == −1`: the host field is a full URL (`root://h:p//path`, or
    /// another scheme, which the client returns as the answer).
    Url,
    /// `port < −1`: the host field is read as with [`RedirectMode::Url`], and
    /// `!port` carries flags.
    Flags(RedirectFlags),
}

/// A `kXR_redirect`: where to go, with the host field split at its first
/// and second `?`. The parts are slices of the frame; [`Redirect::target`]
/// reads them into the URL to go to.
#[doc(alias = "kXR_redirect")]
#[doc(alias = "ServerResponseBody_Redirect")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The port field, signed (see [`Redirect::mode`]).
    pub port: i32,
    /// The host (or URL) before the first `?`.
    pub host: Bytes,
    /// The opaque CGI between the first and the second `?`, to be merged
    /// into the re-sent request's path; `None` without a `?`.
    pub opaque: Option<Bytes>,
    /// The token after the second `?`, merged like the opaque part.
    pub token: Option<Bytes>,
}

impl Redirect {
    /// A redirect to `host:port` (`port > 0`) or, with port 0, to the host
    /// field as it is.
    pub fn to_host(host: impl Into<Bytes>, port: u16) -> Self {
        Redirect {
            port: port as i32,
            host: host.into(),
            opaque: None,
            token: None,
        }
    }

    /// A redirect to a full URL (`port = −1`), or, with non-empty `flags`,
    /// to a URL with flags (`port = !flags`).
    pub fn to_url(url: impl Into<Bytes>, flags: RedirectFlags) -> Self {
        Redirect {
            port: !flags.0 as i32,
            host: url.into(),
            opaque: None,
            token: None,
        }
    }

    /// Sets the opaque part (given without its `?`).
    pub fn with_opaque(mut self, opaque: impl Into<Bytes>) -> Self {
        self.opaque = Some(opaque.into());
        self
    }

    /// Sets the token part (given without its `?`).
    pub fn with_token(mut self, token: impl Into<Bytes>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How to read the host field, from the sign of the port.
    pub fn mode(&self) -> RedirectMode {
        match self.port {
            p if p > 0 => RedirectMode::HostPort(p as u32),
            0 => RedirectMode::HostAsIs,
            -1 => RedirectMode::Url,
            p => RedirectMode::Flags(RedirectFlags(!(p as u32))),
        }
    }

    /// Reads a `kXR_redirect` body.
    ///
    /// Errors: [`DecodeError::Truncated`] for a body under 4 bytes;
    /// [`DecodeError::Malformed`] for an empty host field (XrdCl rejects a
    /// redirect with `dlen <= 4`).
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_redirect body");
        let port = r.i32()?;
        let field = r.rest();
        if field.is_empty() {
            return Err(DecodeError::malformed("kXR_redirect host", "empty"));
        }
        let (host, after) = split_question(&field);
        let (opaque, token) = match after {
            None => (None, None),
            Some(rest) => {
                let (opaque, token) = split_question(&rest);
                (Some(opaque), token)
            }
        };
        Ok(Redirect {
            port,
            host,
            opaque,
            token,
        })
    }

    /// Appends the body: port, host, then `?opaque` and `?token` when set
    /// (a token without opaque part is written `??token`).
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.port);
        buf.put_slice(&self.host);
        if self.opaque.is_some() || self.token.is_some() {
            buf.put_u8(b'?');
            buf.put_slice(self.opaque.as_deref().unwrap_or_default());
        }
        if let Some(token) = &self.token {
            buf.put_u8(b'?');
            buf.put_slice(token);
        }
    }
}

/// `b` split at its first `?`: the part before and, if there is a `?`, the
/// part after it.
fn split_question(b: &Bytes) -> (Bytes, Option<Bytes>) {
    match b.iter().position(|&c| c == b'?') {
        Some(at) => (b.slice(..at), Some(b.slice(at + 1..))),
        None => (b.clone(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::StreamId;
    use crate::response::tests::{decode_one, encode_response};
    use crate::response::Response;
    use proptest::prelude::*;

    fn body(port: i32, host: &[u8]) -> Bytes {
        let mut b = port.to_be_bytes().to_vec();
        b.extend_from_slice(host);
        Bytes::from(b)
    }

    #[test]
    fn port_forms() {
        let r = Redirect::decode(body(1094, b"srv.example.org")).unwrap();
        assert_eq!(r.mode(), RedirectMode::HostPort(1094));
        assert_eq!(&r.host[..], b"srv.example.org");
        assert_eq!((r.opaque, r.token), (None, None));

        let r = Redirect::decode(body(0, b"srv:2000")).unwrap();
        assert_eq!(r.mode(), RedirectMode::HostAsIs);

        let r = Redirect::decode(body(-1, b"root://h:1094//data/f?x=1")).unwrap();
        assert_eq!(r.mode(), RedirectMode::Url);
        assert_eq!(&r.host[..], b"root://h:1094//data/f");
        assert_eq!(r.opaque.as_deref(), Some(&b"x=1"[..]));

        let port = !(0x1000u32 | 0x4000) as i32;
        let r = Redirect::decode(body(port, b"root://m:1094/")).unwrap();
        assert_eq!(
            r.mode(),
            RedirectMode::Flags(RedirectFlags::RECOVER_WRTS | RedirectFlags::EC_REDIR)
        );
        assert!(!RedirectFlags(!port as u32).contains(RedirectFlags::COLLAPSE_REDIR));
        assert_eq!(
            Redirect::to_url("u", RedirectFlags::COLLAPSE_REDIR).port,
            !0x2000u32 as i32
        );
        assert_eq!(
            Redirect::to_url("u", RedirectFlags::default()).mode(),
            RedirectMode::Url
        );
    }

    #[test]
    fn opaque_and_token() {
        let r = Redirect::decode(body(1094, b"h?tried=a&x=1?authz=tok?en")).unwrap();
        assert_eq!(&r.host[..], b"h");
        assert_eq!(r.opaque.as_deref(), Some(&b"tried=a&x=1"[..]));
        assert_eq!(r.token.as_deref(), Some(&b"authz=tok?en"[..]));
        let r = Redirect::decode(body(1094, b"h?")).unwrap();
        assert_eq!(r.opaque.as_deref(), Some(&b""[..]));
        let wire = encode_response(
            &Response::Redirect(Redirect::to_host("h", 1).with_token("t")),
            StreamId([0, 1]),
        );
        assert_eq!(&wire[12..], b"h??t");
    }

    #[test]
    fn zero_copy_and_errors() {
        let b = body(1094, b"host?o");
        let r = Redirect::decode(b.clone()).unwrap();
        assert_eq!(r.host.as_ptr(), b[4..].as_ptr());
        assert!(matches!(
            Redirect::decode(body(1094, b"")),
            Err(DecodeError::Malformed { .. })
        ));
        assert!(matches!(
            Redirect::decode(Bytes::from_static(&[0, 0, 4])),
            Err(DecodeError::Truncated { .. })
        ));
    }

    fn part() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(any::<u8>().prop_filter("no ?", |b| *b != b'?'), 0..40)
            .prop_map(Bytes::from)
    }

    proptest! {
        #[test]
        fn roundtrip(
            port in any::<i32>(),
            host in part().prop_filter("non-empty", |h| !h.is_empty()),
            opaque in proptest::option::of(part()),
            token in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        ) {
            let token = token.map(Bytes::from);
            // canonical: a token always comes with an opaque part
            let opaque = if token.is_some() { Some(opaque.unwrap_or_default()) } else { opaque };
            let r = Response::Redirect(Redirect { port, host, opaque, token });
            let wire = encode_response(&r, StreamId([9, 9]));
            let back = decode_one(wire.clone());
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(encode_response(&back, StreamId([9, 9])), wire);
        }
    }
}
