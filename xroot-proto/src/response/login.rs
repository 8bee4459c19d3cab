//! The `kXR_login` answer (`ServerResponseBody_Login`, PROTOCOL.md §5.2):
//! the 16-byte session id, then optionally the security token that says
//! authentication is required: `&P=<prot>[,<parms>]&P=<prot2>…`
//! (XrdSecServer `add2token`; sent without a NUL).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;
use crate::wire::{strip_nul, Reader};

/// One protocol the server offers in a login security token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecProtocol {
    /// Protocol id (`unix`, `host`, `gsi`, `sss`, …).
    pub name: Bytes,
    /// Its parameters (after the first comma; empty when none).
    pub params: Bytes,
}

/// A `kXR_login` answer.
#[doc(alias = "kXR_login")]
#[doc(alias = "ServerResponseBody_Login")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginResponse {
    /// The session id (opaque), used by `kXR_bind` and `kXR_endsess`.
    pub sessid: [u8; 16],
    /// The security token, when the client must authenticate (a slice of
    /// the body; one trailing NUL is stripped).
    pub sec: Option<Bytes>,
}

const MARK: &[u8] = b"&P=";

impl LoginResponse {
    /// Reads the body. Errors: [`DecodeError::Truncated`] under 16 bytes.
    /// (A client that logs in with `capver` 0 gets no session id; this
    /// crate always sends a version.)
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_login response");
        let sessid = r.array()?;
        let sec = strip_nul(&r.rest());
        Ok(LoginResponse {
            sessid,
            sec: (!sec.is_empty()).then_some(sec),
        })
    }

    /// Appends the body: sessid, then the token if any.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.sessid);
        if let Some(sec) = &self.sec {
            buf.put_slice(sec);
        }
    }

    /// The protocols of the security token, in the server's order of
    /// preference (empty when there is no token).
    /// Errors: [`DecodeError::Malformed`] for a token that does not start
    /// with `&P=` or names an empty protocol.
    pub fn protocols(&self) -> Result<Vec<SecProtocol>, DecodeError> {
        const WHAT: &str = "kXR_login security token";
        let Some(sec) = &self.sec else {
            return Ok(Vec::new());
        };
        if !sec.starts_with(MARK) {
            return Err(DecodeError::malformed(WHAT, "does not start with &P="));
        }
        let mut starts: Vec<usize> = sec
            .windows(MARK.len())
            .enumerate()
            .filter(|(_, w)| *w == MARK)
            .map(|(i, _)| i)
            .collect();
        starts.push(sec.len());
        starts
            .windows(2)
            .map(|w| {
                let piece = sec.slice(w[0] + MARK.len()..w[1]);
                let comma = piece.iter().position(|&b| b == b',');
                let (name, params) = match comma {
                    Some(c) => (piece.slice(..c), piece.slice(c + 1..)),
                    None => (piece.clone(), Bytes::new()),
                };
                if name.is_empty() {
                    return Err(DecodeError::malformed(WHAT, "empty protocol name"));
                }
                Ok(SecProtocol { name, params })
            })
            .collect()
    }

    /// The token offering `protocols`: `&P=<name>[,<params>]` for each, as
    /// the stock server builds it; `None` for no protocols.
    pub fn token(protocols: &[SecProtocol]) -> Option<Bytes> {
        let mut b = BytesMut::new();
        for p in protocols {
            b.put_slice(MARK);
            b.put_slice(&p.name);
            if !p.params.is_empty() {
                b.put_u8(b',');
                b.put_slice(&p.params);
            }
        }
        (!b.is_empty()).then(|| b.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn sessid_only_and_token() {
        let plain = LoginResponse::decode(Bytes::from_static(&[7; 16])).unwrap();
        assert_eq!((plain.sessid, plain.sec.clone()), ([7; 16], None));
        assert!(plain.protocols().unwrap().is_empty());
        assert!(matches!(
            LoginResponse::decode(Bytes::from_static(&[7; 15])),
            Err(DecodeError::Truncated { .. })
        ));

        let mut body = vec![1u8; 16];
        body.extend_from_slice(b"&P=unix&P=gsi,v:10000,ca:/etc/grid&P=host\0");
        let l = LoginResponse::decode(Bytes::from(body)).unwrap();
        let p = l.protocols().unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!((&p[0].name[..], &p[0].params[..]), (&b"unix"[..], &b""[..]));
        assert_eq!(
            (&p[1].name[..], &p[1].params[..]),
            (&b"gsi"[..], &b"v:10000,ca:/etc/grid"[..])
        );
        assert_eq!(&p[2].name[..], b"host");
        assert_eq!(LoginResponse::token(&p), l.sec);

        for bad in [&b"unix"[..], b"&P=", b"&P=unix&P=,x"] {
            let l = LoginResponse {
                sessid: [0; 16],
                sec: Some(Bytes::copy_from_slice(bad)),
            };
            assert!(l.protocols().is_err(), "{bad:?}");
        }
    }

    fn word() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(
            any::<u8>().prop_filter("no , & NUL", |b| !b",&\0".contains(b)),
            1..10,
        )
        .prop_map(Bytes::from)
    }

    proptest! {
        #[test]
        fn roundtrip(
            sessid in any::<[u8; 16]>(),
            protos in proptest::collection::vec((word(), proptest::option::of(word())), 0..4),
        ) {
            let protos: Vec<_> = protos
                .into_iter()
                .map(|(name, params)| SecProtocol { name, params: params.unwrap_or_default() })
                .collect();
            let l = LoginResponse { sessid, sec: LoginResponse::token(&protos) };
            let body = body_of(|b| l.encode(b));
            let back = LoginResponse::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &l);
            prop_assert_eq!(back.protocols().unwrap(), protos);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }
    }
}
