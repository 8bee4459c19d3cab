//! The `kXR_locate` answer (PROTOCOL.md §7.5): space-separated entries
//! `<T><A><address>`, NUL-terminated by xrootd 5.5.3. `T` is `M`/`m`
//! (manager online/pending) or `S`/`s` (server online/pending); `A` is `r`
//! (read) or `w` (read/write); the address is `host:port` or
//! `[::a.b.c.d]:port`.

use bytes::{BufMut, Bytes, BytesMut};

use super::text::{fields, forbid};
use crate::error::DecodeError;
use crate::wire::strip_nul;

/// What kind of node a location names, and whether it is online.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocateNode {
    /// `M`: a manager, online.
    ManagerOnline,
    /// `m`: a manager, pending.
    ManagerPending,
    /// `S`: a data server, online.
    ServerOnline,
    /// `s`: a data server, pending.
    ServerPending,
}

/// The access a location allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocateAccess {
    /// `r`: read only.
    Read,
    /// `w`: read and write.
    ReadWrite,
}

/// One location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateEntry {
    /// Node type and state.
    pub node: LocateNode,
    /// Access allowed.
    pub access: LocateAccess,
    /// The address (a slice of the body).
    pub address: Bytes,
}

/// A `kXR_locate` answer.
#[doc(alias = "kXR_locate")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocateResponse {
    /// The locations, in the order sent.
    pub entries: Vec<LocateEntry>,
}

impl LocateNode {
    /// The letter on the wire: `M`, `m`, `S` or `s`.
    pub fn letter(self) -> u8 {
        match self {
            LocateNode::ManagerOnline => b'M',
            LocateNode::ManagerPending => b'm',
            LocateNode::ServerOnline => b'S',
            LocateNode::ServerPending => b's',
        }
    }

    fn from_letter(c: u8) -> Option<Self> {
        [
            LocateNode::ManagerOnline,
            LocateNode::ManagerPending,
            LocateNode::ServerOnline,
            LocateNode::ServerPending,
        ]
        .into_iter()
        .find(|n| n.letter() == c)
    }
}

impl LocateAccess {
    /// The letter on the wire: `r` or `w`.
    pub fn letter(self) -> u8 {
        match self {
            LocateAccess::Read => b'r',
            LocateAccess::ReadWrite => b'w',
        }
    }

    fn from_letter(c: u8) -> Option<Self> {
        [LocateAccess::Read, LocateAccess::ReadWrite]
            .into_iter()
            .find(|a| a.letter() == c)
    }
}

impl LocateResponse {
    /// Parses the answer (one trailing NUL stripped, runs of spaces
    /// tolerated). Errors: [`DecodeError::Malformed`] for an entry shorter
    /// than 5 bytes (XrdCl's bound), an unknown type or access letter, or a
    /// NUL inside the text.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_locate entry";
        let text = strip_nul(&body);
        forbid(&text, 0, WHAT)?;
        let entries = fields(&text)
            .map(|e| {
                let bad = |why: &str| {
                    DecodeError::malformed(WHAT, format!("{why}: {:?}", String::from_utf8_lossy(e)))
                };
                if e.len() < 5 {
                    return Err(bad("too short"));
                }
                let node = LocateNode::from_letter(e[0]).ok_or_else(|| bad("unknown node type"))?;
                let access =
                    LocateAccess::from_letter(e[1]).ok_or_else(|| bad("unknown access"))?;
                Ok(LocateEntry {
                    node,
                    access,
                    address: text.slice_ref(&e[2..]),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(LocateResponse { entries })
    }

    /// Appends the entries separated by spaces, then a NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                buf.put_u8(b' ');
            }
            buf.put_u8(e.node.letter());
            buf.put_u8(e.access.letter());
            buf.put_slice(&e.address);
        }
        buf.put_u8(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{arb_word, body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn stock_answer() {
        let body = Bytes::from_static(b"Sr[::127.0.0.1]:1094 Mwmgr.example.org:1213\0");
        let l = LocateResponse::decode(body.clone()).unwrap();
        assert_eq!(l.entries.len(), 2);
        assert_eq!(
            (l.entries[0].node, l.entries[0].access),
            (LocateNode::ServerOnline, LocateAccess::Read)
        );
        assert_eq!(&l.entries[0].address[..], b"[::127.0.0.1]:1094");
        assert_eq!(l.entries[1].node, LocateNode::ManagerOnline);
        assert_eq!(l.entries[1].access, LocateAccess::ReadWrite);
        assert_eq!(body_of(|b| l.encode(b)), body);
        for bad in [&b"Xrhost:1"[..], b"Sxhost:1", b"Sr:1", b"Srhost:1\0x"] {
            assert!(
                LocateResponse::decode(Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    fn arb_entry() -> impl Strategy<Value = LocateEntry> {
        let node = prop_oneof![
            Just(LocateNode::ManagerOnline),
            Just(LocateNode::ManagerPending),
            Just(LocateNode::ServerOnline),
            Just(LocateNode::ServerPending),
        ];
        let access = prop_oneof![Just(LocateAccess::Read), Just(LocateAccess::ReadWrite)];
        (
            node,
            access,
            arb_word(30).prop_filter("3+ bytes", |a| a.len() >= 3),
        )
            .prop_map(|(node, access, address)| LocateEntry {
                node,
                access,
                address,
            })
    }

    proptest! {
        #[test]
        fn roundtrip(entries in proptest::collection::vec(arb_entry(), 0..8)) {
            let l = LocateResponse { entries };
            let body = body_of(|b| l.encode(b));
            let back = LocateResponse::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &l);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = LocateResponse::decode(Bytes::from(b));
        }
    }
}
