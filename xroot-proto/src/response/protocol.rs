//! The `kXR_protocol` answer (`ServerResponseBody_Protocol`, PROTOCOL.md §5.1):
//!
//! ```text
//! pval:u32 flags:u32                                  (kXR_ShortProtRespLen = 8)
//! ['B' rsvd bifILen:u16 bifInfo[bifILen]]             NUL-padded to a multiple of 8
//! ['S' rsvd secver secopt seclvl secvsz {reqindx reqsreq} × secvsz]
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;
use crate::wire::Reader;

wire_newtype! {
    /// The `flags` of a `kXR_protocol` answer (honoured from `pval >= 0x297`).
    flags ProtocolFlags(u32);
    IS_SERVER = 0x0000_0001 => "kXR_isServer";
    IS_MANAGER = 0x0000_0002 => "kXR_isManager";
    ATTR_CACHE = 0x0000_0080 => "kXR_attrCache";
    ATTR_META = 0x0000_0100 => "kXR_attrMeta";
    ATTR_PROXY = 0x0000_0200 => "kXR_attrProxy";
    ATTR_SUPER = 0x0000_0400 => "kXR_attrSuper";
    ATTR_VIRT_RDR = 0x0000_0800 => "kXR_attrVirtRdr";
    /// Redirect-only.
    RECOVER_WRTS = 0x0000_1000 => "kXR_recoverWrts";
    /// Redirect-only.
    COLLAPSE_REDIR = 0x0000_2000 => "kXR_collapseRedir";
    /// Redirect-only.
    EC_REDIR = 0x0000_4000 => "kXR_ecRedir";
    SUPPOSC = 0x0010_0000 => "kXR_supposc";
    /// pgread and pgwrite are supported.
    SUPPGRW = 0x0020_0000 => "kXR_suppgrw";
    SUPGPF = 0x0040_0000 => "kXR_supgpf";
    ANONGPF = 0x0080_0000 => "kXR_anongpf";
    TLS_DATA = 0x0100_0000 => "kXR_tlsData";
    TLS_GPF = 0x0200_0000 => "kXR_tlsGPF";
    TLS_LOGIN = 0x0400_0000 => "kXR_tlsLogin";
    TLS_SESS = 0x0800_0000 => "kXR_tlsSess";
    TLS_TPC = 0x1000_0000 => "kXR_tlsTPC";
    TLS_GPFA = 0x2000_0000 => "kXR_tlsGPFA";
    /// The server switches to TLS right after this answer.
    GOTO_TLS = 0x4000_0000 => "kXR_gotoTLS";
    HAVE_TLS = 0x8000_0000 => "kXR_haveTLS";
}

impl ProtocolFlags {
    /// `kXR_tlsAny`: any of the `kXR_tls*` requirement bits.
    #[doc(alias = "kXR_tlsAny")]
    pub const TLS_ANY: ProtocolFlags = ProtocolFlags(0x1f00_0000);
}

/// The 'S' record: what the server requires of request signing
/// (`ServerResponseReqs_Protocol`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityRequirements {
    /// `secver` (`kXR_secver_0` = 0).
    pub secver: u8,
    /// `secopt`: [`Self::SEC_O_DATA`], [`Self::SEC_O_FRCE`].
    pub secopt: u8,
    /// `seclvl`, meaningful when `secvec` is empty: `kXR_secNone` 0 …
    /// `kXR_secPedantic` 4.
    pub seclvl: u8,
    /// `secvec`: `(reqindx, reqsreq)` pairs, a request index and its signing
    /// requirement ([`Self::SIGN_IGNORE`], [`Self::SIGN_LIKELY`],
    /// [`Self::SIGN_NEEDED`]). At most 255 (`secvsz` is one byte).
    pub secvec: Vec<(u8, u8)>,
}

impl SecurityRequirements {
    /// `kXR_secOData`: sign requests that carry data too.
    #[doc(alias = "kXR_secOData")]
    pub const SEC_O_DATA: u8 = 0x01;
    /// `kXR_secOFrce`: signing is forced.
    #[doc(alias = "kXR_secOFrce")]
    pub const SEC_O_FRCE: u8 = 0x02;
    /// `kXR_signIgnore`.
    #[doc(alias = "kXR_signIgnore")]
    pub const SIGN_IGNORE: u8 = 0;
    /// `kXR_signLikely`.
    #[doc(alias = "kXR_signLikely")]
    pub const SIGN_LIKELY: u8 = 1;
    /// `kXR_signNeeded`.
    #[doc(alias = "kXR_signNeeded")]
    pub const SIGN_NEEDED: u8 = 2;
}

/// A `kXR_protocol` answer.
#[doc(alias = "kXR_protocol")]
#[doc(alias = "ServerResponseBody_Protocol")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolResponse {
    /// The server's protocol version (`0x520`; `0x511` from xrootd 5.5).
    pub pval: u32,
    /// What the server is and supports.
    pub flags: ProtocolFlags,
    /// The 'B' record's `host:port,host:port…` list without its NUL padding
    /// (a slice of the body), when `kXR_bifreqs` was asked and configured.
    pub bifinfo: Option<Bytes>,
    /// The 'S' record, when `kXR_secreqs` was asked and signing configured.
    pub security: Option<SecurityRequirements>,
}

impl ProtocolResponse {
    /// The 'B' record's interfaces, split at commas.
    pub fn bind_interfaces(&self) -> Vec<Bytes> {
        let Some(info) = &self.bifinfo else {
            return Vec::new();
        };
        info.split(|&b| b == b',')
            .filter(|p| !p.is_empty())
            .map(|p| info.slice_ref(p))
            .collect()
    }

    /// Reads the body.
    ///
    /// Errors: [`DecodeError::Truncated`] for a body under 8 bytes or a
    /// record shorter than its length fields say;
    /// [`DecodeError::TrailingBytes`] for bytes that are no 'B' or 'S' record.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_protocol response");
        let pval = r.u32()?;
        let flags = ProtocolFlags(r.u32()?);
        let rest = r.rest();
        let mut r = Reader::new(rest.clone(), "kXR_protocol 'B' record");
        let bifinfo = if rest.first() == Some(&b'B') {
            let _tag_rsvd: [u8; 2] = r.array()?;
            let len = r.u16()? as usize;
            let info = r.bytes(len)?;
            let end = info.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            Some(info.slice(..end))
        } else {
            None
        };
        let rest = r.rest();
        let mut r = Reader::new(rest.clone(), "kXR_protocol 'S' record");
        let security = if rest.first() == Some(&b'S') {
            let [_tag, _rsvd, secver, secopt, seclvl, secvsz] = r.array()?;
            let pairs = r.bytes(2 * secvsz as usize)?;
            Some(SecurityRequirements {
                secver,
                secopt,
                seclvl,
                secvec: pairs.chunks_exact(2).map(|p| (p[0], p[1])).collect(),
            })
        } else {
            None
        };
        r.finish()?;
        Ok(ProtocolResponse {
            pval,
            flags,
            bifinfo,
            security,
        })
    }

    /// Appends the body: the 8-byte short form, then the records that are
    /// set; the 'B' record gets a NUL and padding to a multiple of 8 bytes,
    /// as the stock server pads it.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(self.pval);
        buf.put_u32(self.flags.0);
        if let Some(info) = &self.bifinfo {
            let record = (4 + info.len() + 1).next_multiple_of(8);
            buf.put_slice(&[b'B', 0]);
            buf.put_u16((record - 4) as u16);
            buf.put_slice(info);
            buf.put_bytes(0, record - 4 - info.len());
        }
        if let Some(s) = &self.security {
            let n = s.secvec.len().min(u8::MAX as usize);
            buf.put_slice(&[b'S', 0, s.secver, s.secopt, s.seclvl, n as u8]);
            for &(reqindx, reqsreq) in &s.secvec[..n] {
                buf.put_slice(&[reqindx, reqsreq]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn stock_short_form() {
        // xrootd 5.5.3: pval 0x511, flags isServer|supposc|suppgrw, no records
        let body = Bytes::from_static(&[0, 0, 5, 0x11, 0, 0x30, 0, 1]);
        let p = ProtocolResponse::decode(body.clone()).unwrap();
        assert_eq!(p.pval, 0x511);
        assert_eq!(
            p.flags,
            ProtocolFlags::IS_SERVER | ProtocolFlags::SUPPOSC | ProtocolFlags::SUPPGRW
        );
        assert!(p.flags.contains(ProtocolFlags::SUPPGRW));
        assert_eq!((p.bifinfo.clone(), p.security.clone()), (None, None));
        assert_eq!(body_of(|b| p.encode(b)), body);
        assert!(matches!(
            ProtocolResponse::decode(body.slice(..7)),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn records() {
        let p = ProtocolResponse {
            pval: 0x520,
            flags: ProtocolFlags::IS_SERVER,
            bifinfo: Some(Bytes::from_static(b"a:1094,b:1095")),
            security: Some(SecurityRequirements {
                secver: 0,
                secopt: SecurityRequirements::SEC_O_FRCE,
                seclvl: 2,
                secvec: vec![(3, SecurityRequirements::SIGN_NEEDED)],
            }),
        };
        let body = body_of(|b| p.encode(b));
        // 'B' record: 4 + 13 + NUL = 18, padded to 24
        assert_eq!(&body[8..12], &[b'B', 0, 0, 20]);
        assert_eq!(&body[12..32], b"a:1094,b:1095\0\0\0\0\0\0\0");
        assert_eq!(&body[32..], &[b'S', 0, 0, 2, 2, 1, 3, 2]);
        let back = ProtocolResponse::decode(body).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.bind_interfaces(), [&b"a:1094"[..], b"b:1095"]);
        assert!(matches!(
            ProtocolResponse::decode(Bytes::from_static(&[
                0, 0, 5, 0x20, 0, 0, 0, 1, b'B', 0, 0, 9, b'x'
            ])),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            ProtocolResponse::decode(Bytes::from_static(&[0, 0, 5, 0x20, 0, 0, 0, 1, b'X'])),
            Err(DecodeError::TrailingBytes { .. })
        ));
    }

    proptest! {
        #[test]
        fn roundtrip(
            pval in any::<u32>(),
            flags in any::<u32>(),
            bif in proptest::option::of(proptest::collection::vec(1u8..=255, 0..40)),
            sec in proptest::option::of((any::<[u8; 3]>(), proptest::collection::vec(any::<(u8, u8)>(), 0..20))),
        ) {
            let p = ProtocolResponse {
                pval,
                flags: ProtocolFlags(flags),
                bifinfo: bif.map(Bytes::from),
                security: sec.map(|([secver, secopt, seclvl], secvec)| SecurityRequirements { secver, secopt, seclvl, secvec }),
            };
            let body = body_of(|b| p.encode(b));
            if p.bifinfo.is_some() {
                prop_assert_eq!((body.len() - 8 - p.security.as_ref().map_or(0, |s| 6 + 2 * s.secvec.len())) % 8, 0);
            }
            let back = ProtocolResponse::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &p);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..60)) {
            let _ = ProtocolResponse::decode(Bytes::from(b));
        }
    }
}
