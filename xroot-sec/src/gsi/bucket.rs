//! The `XrdSutBuffer` codec: how every `gsi` message is framed
//! (`SECURITY.md "gsi"`; xrootd `src/XrdSut/XrdSutBuffer.cc`, the bucket
//! types in `XrdSutAux.hh`).
//!
//! A buffer is the protocol name with a terminating NUL, a big-endian
//! 32-bit step, then buckets, each a big-endian 32-bit type, a big-endian
//! 32-bit length and that many bytes, and a type 0 (`kXRS_none`) to end.
//! The `main` bucket holds a whole buffer of its own (encrypted once the
//! session key is agreed).
//!
//! [`SutBuffer::decode`] checks every length against what is left before
//! it copies anything, so a buffer costs at most its own size in memory;
//! anything malformed is a [`BufferError`].

use thiserror::Error;

/// Bucket types (`kXRS_*`, XrdSutAux.hh).
pub mod kind {
    /// End of the buckets.
    pub const NONE: i32 = 0;
    /// A bucket dropped when the buffer is written.
    pub const INACTIVE: i32 = 1;
    /// The crypto module(s), `ssl`.
    pub const CRYPTOMOD: i32 = 3000;
    /// The inner buffer.
    pub const MAIN: i32 = 3001;
    /// A public key (the client's, PEM).
    pub const PUK: i32 = 3004;
    /// The Diffie-Hellman public part, signed with the sender's RSA key.
    pub const CIPHER: i32 = 3005;
    /// A random challenge.
    pub const RTAG: i32 = 3006;
    /// The peer's random challenge, signed with our RSA key.
    pub const SIGNED_RTAG: i32 = 3007;
    /// A user name the client asks to be mapped to.
    pub const USER: i32 = 3008;
    /// A message.
    pub const MESSAGE: i32 = 3011;
    /// The sender's protocol version (a 32-bit integer).
    pub const VERSION: i32 = 3014;
    /// The client's options (a 32-bit integer).
    pub const CLNT_OPTS: i32 = 3019;
    /// Certificates, PEM.
    pub const X509: i32 = 3022;
    /// The hash of the CA that issued the client's chain.
    pub const ISSUER_HASH: i32 = 3023;
    /// A proxy request (delegation, not used here).
    pub const X509_REQ: i32 = 3024;
    /// The ciphers the server offers, or the one the client chose.
    pub const CIPHER_ALG: i32 = 3025;
    /// The digests the server offers, or the one the client chose.
    pub const MD_ALG: i32 = 3026;
}

/// Most buckets one buffer may hold (the stock messages have at most 8).
pub const MAX_BUCKETS: usize = 64;

/// Longest protocol name, without its NUL (`XrdSecPROTOIDSIZE` is 8).
const MAX_PROTOCOL: usize = 7;

/// Why a buffer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BufferError {
    /// No NUL-terminated protocol name of 1 to 7 bytes at the start.
    #[error("buffer has no protocol name")]
    NoProtocol,
    /// The buffer ends inside a field.
    #[error("buffer truncated in {0}")]
    Truncated(&'static str),
    /// A bucket's length is negative or runs past the end of the buffer.
    #[error("bucket {kind} announces {len} bytes, {left} left")]
    BadLength {
        /// The bucket's type.
        kind: i32,
        /// Its announced length.
        len: i32,
        /// What the buffer had left.
        left: usize,
    },
    /// More than [`MAX_BUCKETS`] buckets.
    #[error("more than {MAX_BUCKETS} buckets")]
    TooManyBuckets,
    /// A bucket that must hold a 32-bit integer does not.
    #[error("bucket {0} is not a 32-bit integer")]
    NotAnInteger(i32),
}

/// One bucket: its type and its bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Bucket {
    /// The type, one of [`kind`].
    pub kind: i32,
    /// The content.
    pub data: Vec<u8>,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bucket({}, {} bytes)", self.kind, self.data.len())
    }
}

/// A decoded `XrdSutBuffer`: protocol, step and buckets in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SutBuffer {
    /// The protocol name (`gsi`).
    pub protocol: String,
    /// The step (`kXGC_*` from a client, `kXGS_*` from a server).
    pub step: i32,
    /// The active buckets, in order.
    pub buckets: Vec<Bucket>,
}

fn be_i32(bytes: &[u8], at: usize, what: &'static str) -> Result<i32, BufferError> {
    bytes
        .get(at..at + 4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(BufferError::Truncated(what))
}

impl SutBuffer {
    /// An empty buffer of `protocol` at `step`.
    pub fn new(protocol: &str, step: i32) -> SutBuffer {
        SutBuffer {
            protocol: protocol.to_string(),
            step,
            buckets: Vec::new(),
        }
    }

    /// Reads a buffer. Inactive buckets (type 1) are dropped, as the stock
    /// reader does; what follows the end marker is ignored.
    ///
    /// Errors: [`BufferError`] for a missing protocol name, a length that
    /// runs past the end, a missing end marker, too many buckets.
    pub fn decode(bytes: &[u8]) -> Result<SutBuffer, BufferError> {
        let nul = bytes
            .iter()
            .take(MAX_PROTOCOL + 1)
            .position(|&b| b == 0)
            .filter(|&n| n > 0)
            .ok_or(BufferError::NoProtocol)?;
        let protocol = std::str::from_utf8(&bytes[..nul])
            .map_err(|_| BufferError::NoProtocol)?
            .to_string();
        let mut at = nul + 1;
        let step = be_i32(bytes, at, "step")?;
        at += 4;
        let mut buckets = Vec::new();
        loop {
            let kind = be_i32(bytes, at, "bucket type")?;
            at += 4;
            if kind == kind::NONE {
                break;
            }
            let len = be_i32(bytes, at, "bucket length")?;
            at += 4;
            let left = bytes.len() - at;
            if len < 0 || len as usize > left {
                return Err(BufferError::BadLength { kind, len, left });
            }
            let data = &bytes[at..at + len as usize];
            at += len as usize;
            if kind == kind::INACTIVE {
                continue;
            }
            if buckets.len() == MAX_BUCKETS {
                return Err(BufferError::TooManyBuckets);
            }
            buckets.push(Bucket {
                kind,
                data: data.to_vec(),
            });
        }
        Ok(SutBuffer {
            protocol,
            step,
            buckets,
        })
    }

    /// Writes the buffer as the stock `Serialized` does.
    pub fn encode(&self) -> Vec<u8> {
        let len =
            self.protocol.len() + 9 + self.buckets.iter().map(|b| 8 + b.data.len()).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(self.protocol.as_bytes());
        out.push(0);
        out.extend_from_slice(&self.step.to_be_bytes());
        for b in &self.buckets {
            out.extend_from_slice(&b.kind.to_be_bytes());
            out.extend_from_slice(&(b.data.len() as i32).to_be_bytes());
            out.extend_from_slice(&b.data);
        }
        out.extend_from_slice(&kind::NONE.to_be_bytes());
        out
    }

    /// The first bucket of type `kind`.
    pub fn get(&self, kind: i32) -> Option<&[u8]> {
        self.buckets
            .iter()
            .find(|b| b.kind == kind)
            .map(|b| &b.data[..])
    }

    /// The first bucket of type `kind` as text (lossy).
    pub fn get_str(&self, kind: i32) -> Option<String> {
        self.get(kind)
            .map(|d| String::from_utf8_lossy(d).into_owned())
    }

    /// The first bucket of type `kind` read as a big-endian 32-bit
    /// integer; `Ok(None)` when there is none. Errors:
    /// [`BufferError::NotAnInteger`] for another length.
    pub fn get_i32(&self, kind: i32) -> Result<Option<i32>, BufferError> {
        match self.get(kind) {
            None => Ok(None),
            Some(d) if d.len() == 4 => Ok(Some(i32::from_be_bytes([d[0], d[1], d[2], d[3]]))),
            Some(_) => Err(BufferError::NotAnInteger(kind)),
        }
    }

    /// Appends a bucket.
    pub fn push(&mut self, kind: i32, data: impl Into<Vec<u8>>) {
        self.buckets.push(Bucket {
            kind,
            data: data.into(),
        });
    }

    /// Replaces the first bucket of type `kind` in place, or appends one
    /// (`UpdateBucket`).
    pub fn set(&mut self, kind: i32, data: impl Into<Vec<u8>>) {
        match self.buckets.iter_mut().find(|b| b.kind == kind) {
            Some(b) => b.data = data.into(),
            None => self.push(kind, data),
        }
    }

    /// Drops the first bucket of type `kind` (`Deactivate`).
    pub fn remove(&mut self, kind: i32) -> Option<Vec<u8>> {
        let i = self.buckets.iter().position(|b| b.kind == kind)?;
        Some(self.buckets.remove(i).data)
    }

    /// Changes the type of the first bucket of type `from` to `to`, in
    /// place, with new content.
    pub fn retype(&mut self, from: i32, to: i32, data: Vec<u8>) -> bool {
        match self.buckets.iter_mut().find(|b| b.kind == from) {
            Some(b) => {
                b.kind = to;
                b.data = data;
                true
            }
            None => false,
        }
    }
}

/// What a server's login offer for `gsi` says (`&P=gsi,v:10600,c:ssl,
/// ca:7ec4ff5e.0|58e51cb0.0`; `XrdSecProtocolgsi::Init`): its version, its
/// crypto modules and the hashes of the CAs that issued its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerOffer {
    /// `v:`, when given.
    pub version: Option<i32>,
    /// `c:`, split at `|`.
    pub crypto: Vec<String>,
    /// `ca:`, split at `|`.
    pub ca_hashes: Vec<String>,
}

impl ServerOffer {
    /// Reads the parameters after `&P=gsi,` (also accepted with that
    /// prefix). Unknown keys are ignored.
    pub fn parse(params: &[u8]) -> ServerOffer {
        let text = String::from_utf8_lossy(params);
        let text = text.trim_end_matches('\0');
        let text = text.strip_prefix("&P=gsi,").unwrap_or(text);
        let mut offer = ServerOffer::default();
        for item in text.split(',') {
            if let Some(v) = item.strip_prefix("v:") {
                offer.version = v.trim().parse().ok();
            } else if let Some(c) = item.strip_prefix("ca:") {
                offer.ca_hashes = c
                    .split('|')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            } else if let Some(c) = item.strip_prefix("c:") {
                offer.crypto = c
                    .split('|')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
        }
        offer
    }

    /// Writes the parameters as the stock server does (without `&P=gsi,`).
    pub fn encode(&self) -> String {
        format!(
            "v:{},c:{},ca:{}",
            self.version.unwrap_or(super::consts::VERSION),
            self.crypto.join("|"),
            self.ca_hashes.join("|")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stock client's first kXR_auth payload, from a capture
    /// (XrdSecDEBUG=3 and tcpdump, throw-away CA): nothing secret in it.
    const CERTREQ: &str = "67736900000003e800000bb80000000373736c00000bc60000000400002968\
        00000bcf0000001537656334666635652e307c35386535316362302e3000000bcb00000004000000\
        8000000bb90000001c67736900000003e800000bbe00000008437a6c6f43385361000000000000\
        0000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn reads_and_writes_the_stock_certreq_byte_for_byte() {
        let wire = hex(CERTREQ);
        let b = SutBuffer::decode(&wire).unwrap();
        assert_eq!((b.protocol.as_str(), b.step), ("gsi", 1000));
        let kinds: Vec<_> = b.buckets.iter().map(|b| b.kind).collect();
        assert_eq!(
            kinds,
            [
                kind::CRYPTOMOD,
                kind::VERSION,
                kind::ISSUER_HASH,
                kind::CLNT_OPTS,
                kind::MAIN
            ]
        );
        assert_eq!(b.get_i32(kind::VERSION).unwrap(), Some(10600));
        assert_eq!(b.get_i32(kind::CLNT_OPTS).unwrap(), Some(128));
        assert_eq!(b.get(kind::ISSUER_HASH).unwrap(), b"7ec4ff5e.0|58e51cb0.0");
        let main = SutBuffer::decode(b.get(kind::MAIN).unwrap()).unwrap();
        assert_eq!(main.get(kind::RTAG).unwrap(), b"CzloC8Sa");
        assert_eq!(b.encode(), wire);
    }

    #[test]
    fn hostile_buffers_are_typed_errors() {
        assert_eq!(SutBuffer::decode(b""), Err(BufferError::NoProtocol));
        assert_eq!(SutBuffer::decode(b"\0abc"), Err(BufferError::NoProtocol));
        assert_eq!(
            SutBuffer::decode(b"toolongname\0"),
            Err(BufferError::NoProtocol)
        );
        assert_eq!(
            SutBuffer::decode(b"gsi\0\0\0"),
            Err(BufferError::Truncated("step"))
        );
        let mut b = b"gsi\0\0\0\x03\xe8".to_vec();
        assert_eq!(
            SutBuffer::decode(&b),
            Err(BufferError::Truncated("bucket type"))
        );
        b.extend_from_slice(&3000i32.to_be_bytes());
        b.extend_from_slice(&(i32::MAX).to_be_bytes());
        assert!(matches!(
            SutBuffer::decode(&b),
            Err(BufferError::BadLength { kind: 3000, .. })
        ));
        let mut b = b"gsi\0\0\0\x03\xe8".to_vec();
        b.extend_from_slice(&3000i32.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            SutBuffer::decode(&b),
            Err(BufferError::BadLength { len: -1, .. })
        ));
        let mut many = SutBuffer::new("gsi", 1);
        for _ in 0..=MAX_BUCKETS {
            many.push(kind::RTAG, b"x".to_vec());
        }
        assert_eq!(
            SutBuffer::decode(&many.encode()),
            Err(BufferError::TooManyBuckets)
        );
        let mut b = SutBuffer::new("gsi", 1);
        b.push(kind::VERSION, b"abc".to_vec());
        assert_eq!(
            b.get_i32(kind::VERSION),
            Err(BufferError::NotAnInteger(kind::VERSION))
        );
    }

    #[test]
    fn inactive_buckets_are_dropped_and_set_replaces_in_place() {
        let mut b = SutBuffer::new("gsi", 2001);
        b.push(kind::CRYPTOMOD, b"ssl".to_vec());
        b.push(kind::INACTIVE, b"gone".to_vec());
        b.push(kind::MD_ALG, b"sha1:md5".to_vec());
        let back = SutBuffer::decode(&b.encode()).unwrap();
        assert_eq!(back.buckets.len(), 2);
        let mut back = back;
        back.set(kind::CRYPTOMOD, b"x".to_vec());
        back.set(kind::CIPHER_ALG, b"aes-128-cbc".to_vec());
        let kinds: Vec<_> = back.buckets.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [kind::CRYPTOMOD, kind::MD_ALG, kind::CIPHER_ALG]);
        assert_eq!(back.remove(kind::MD_ALG).unwrap(), b"sha1:md5");
    }

    #[test]
    fn server_offer() {
        let o = ServerOffer::parse(b"v:10600,c:ssl,ca:7ec4ff5e.0|58e51cb0.0");
        assert_eq!(o.version, Some(10600));
        assert_eq!(o.crypto, ["ssl"]);
        assert_eq!(o.ca_hashes, ["7ec4ff5e.0", "58e51cb0.0"]);
        assert_eq!(o.encode(), "v:10600,c:ssl,ca:7ec4ff5e.0|58e51cb0.0");
        assert_eq!(
            ServerOffer::parse(b"&P=gsi,v:10400,c:ssl"),
            ServerOffer {
                version: Some(10400),
                crypto: vec!["ssl".into()],
                ca_hashes: vec![]
            }
        );
    }
}
