//! `sss` credentials: sealed by the client with a keytab key, opened by the
//! server with the same key (XrdSecProtocolsss.cc `getCredentials`,
//! `Encode`, `Decode`, `Authenticate`; layouts in XrdSecsssRR.hh; cipher
//! and checksum in XrdCryptoLite_bf32.cc).
//!
//! ```text
//! header (clear, 16 bytes):  "sss\0" | 2 pad | knSize u8 | '0' (Blowfish) | key id i64 BE
//! key name (v2 servers):     the key's name, NUL-padded to knSize (a multiple of 8)
//! Blowfish-CFB64, IV 0, over:
//!   32 random bytes | generation time i32 BE (s since 1222183880) | 3 pad | options u8
//!   items: tag u8 | length u16 BE | bytes (strings NUL-terminated, length counting the NUL)
//!   CRC-32 (IEEE) BE of everything above
//! ```

use std::net::{IpAddr, SocketAddr};
use std::time::SystemTime;

use blowfish::Blowfish;
use cfb_mode::cipher::InnerIvInit;

use super::keytab::{unix, Key, Keytab};

/// The stock protocol's epoch: generation times count seconds from here
/// (`myClock`, 2008-09-23).
pub const BASE_TIME: i64 = 1_222_183_880;
/// The header before the key name, bytes (`XrdSecsssRR_Hdr`).
pub const HEADER_LEN: usize = 16;
/// The clear data header inside the cipher text, bytes
/// (`XrdSecsssRR_DataHdr`).
pub const DATA_HEADER_LEN: usize = 40;
/// Longest item data a server accepts, bytes (`XrdSecsssRR_Data::MaxDSz`).
pub const MAX_DATA_LEN: usize = 16_344;
/// Data shorter than this is padded with a random item
/// (`XrdSecsssRR_Data::MinDSz`).
pub const MIN_DATA_LEN: usize = 128;
/// Longest key name a v2 server accepts with its NUL padding
/// (`ktEnt::NameSZ`).
const MAX_KN_SIZE: usize = 192;
/// The one cipher: Blowfish in 64-bit CFB (`etBFish32`).
pub const CIPHER_BLOWFISH: u8 = b'0';

/// Item tags (`XrdSecsssRR_Data`).
mod tag {
    pub const NAME: u8 = 0x01;
    pub const VORG: u8 = 0x02;
    pub const ROLE: u8 = 0x03;
    pub const GROUPS: u8 = 0x04;
    pub const ENDORSEMENTS: u8 = 0x05;
    pub const CREDS: u8 = 0x06;
    pub const RANDOM: u8 = 0x07;
    pub const AUTH: u8 = 0x08;
    pub const TRACE_ID: u8 = 0x09;
    pub const ATTR_KEY: u8 = 0x0a;
    pub const ATTR_VALUE: u8 = 0x0b;
    pub const CAPS: u8 = 0x0e;
    pub const HOST: u8 = 0x20;
}

/// Options byte: use the items as the identity (`UseData`).
const OPT_USE_DATA: u8 = 0x00;
/// Options byte: the client asks the server for its login id (`SndLID`).
const OPT_SEND_LOGIN_ID: u8 = 0x01;

/// Why a credential cannot be sealed or was refused. The `Display` text of
/// each refusal is the stock server's message for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// The header or the items do not parse: the stock text ("Credentials
    /// too small.", "Invalid keyname specified.", "Invalid id string."...).
    #[error("{0}")]
    Malformed(String),
    /// No key with this id in the keytab, or it has expired.
    #[error("Decryption key not found.")]
    UnknownKey {
        /// The key id of the header.
        id: i64,
    },
    /// The checksum does not match after decryption: the credential was
    /// sealed with another key, or damaged.
    #[error("Unable to decrypt credentials.")]
    BadChecksum,
    /// Generated too long ago (or the clocks differ): generation time plus
    /// the lifetime is not after now.
    #[error("Credentials expired (check for clock skew).")]
    Expired {
        /// When it was generated, Unix seconds.
        generated: i64,
        /// The server's time, Unix seconds.
        now: i64,
    },
    /// The key checks the host and the credential names none.
    #[error("No hostname or IP address specified.")]
    NoHost,
    /// The host item is not the client's address as the server sees it.
    #[error("IP address mismatch.")]
    HostMismatch {
        /// The credential's host item.
        sent: String,
        /// The client's address as the server sees it.
        seen: String,
    },
    /// The host item is a name (an old client) that is not the client's.
    #[error("Hostname mismatch.")]
    HostNameMismatch {
        /// The credential's host name.
        sent: String,
    },
    /// The client asked for the mutual exchange (`SndLID`: the server
    /// sends back a login id), which this implementation does not do.
    #[error("sss login id exchange is not supported.")]
    MutualUnsupported,
    /// The login token's `sss` parameters do not parse.
    #[error("invalid sss parameters {params:?}: {why}")]
    BadParams {
        /// The parameters as received.
        params: String,
        /// What is wrong.
        why: &'static str,
    },
}

fn malformed(text: &str) -> CredentialError {
    CredentialError::Malformed(text.to_string())
}

/// The `sss` parameters of a login reply's security token,
/// `<cipher>.[+[0]]<lifetime>:[<client keytab>]` (`Load_Server` builds
/// them, `Init_Client` reads them): the stock server sends `0.+13:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The cipher code, `b'0'` (Blowfish).
    pub cipher: u8,
    /// A version 2 server (`+`): the client sends the key name.
    pub v2: bool,
    /// The server asks for the client's forwarded credentials (`+0`,
    /// `-g`); ignored by this client, which has none to forward.
    pub ask_creds: bool,
    /// How long a credential stays fresh, seconds (13 by default; the
    /// stock server's `-l` option gives minutes).
    pub lifetime: u32,
    /// A keytab path the server suggests to the client (`-c`), empty when
    /// none.
    pub client_keytab: String,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            cipher: CIPHER_BLOWFISH,
            v2: true,
            ask_creds: false,
            lifetime: 13,
            client_keytab: String::new(),
        }
    }
}

impl Params {
    /// The parameter text, as the stock server writes it (`0.+13:`).
    pub fn encode(&self) -> String {
        format!(
            "{}.{}{}{}:{}",
            self.cipher as char,
            if self.v2 { "+" } else { "" },
            if self.v2 && self.ask_creds { "0" } else { "" },
            self.lifetime,
            self.client_keytab
        )
    }

    /// Reads the parameters as the stock client does. Errors:
    /// [`CredentialError::BadParams`] without a cipher, a lifetime or its
    /// colon.
    pub fn parse(params: &[u8]) -> Result<Params, CredentialError> {
        let text = String::from_utf8_lossy(params);
        let bad = |why| CredentialError::BadParams {
            params: text.to_string(),
            why,
        };
        let b = text.as_bytes();
        if b.len() < 2 || b[1] != b'.' {
            return Err(bad("encryption type missing"));
        }
        let mut rest = &text[2..];
        let (mut v2, mut ask_creds) = (false, false);
        if let Some(r) = rest.strip_prefix('+') {
            v2 = true;
            ask_creds = r.starts_with('0');
            rest = r;
        }
        let (life, keytab) = rest
            .split_once(':')
            .ok_or(bad("credential lifetime missing"))?;
        let lifetime = life
            .parse::<u32>()
            .ok()
            .filter(|&l| l > 0)
            .ok_or(bad("credential lifetime missing"))?;
        Ok(Params {
            cipher: b[0],
            v2,
            ask_creds,
            lifetime,
            client_keytab: keytab.to_string(),
        })
    }
}

/// The identity items of a credential (an `XrdSecEntity` serialized by
/// XrdSecsssEnt). Strings hold no NUL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entity {
    /// The client's address as the client sees it, `[v6 address]:port`
    /// (see [`address_item`]); item 0x20 starting with `[`.
    pub host: Option<String>,
    /// The client's host name (item 0x20 without `[`; old clients).
    pub host_name: Option<String>,
    /// User name (0x01).
    pub name: Option<String>,
    /// Virtual organisation (0x02).
    pub vorg: Option<String>,
    /// Role (0x03).
    pub role: Option<String>,
    /// Groups (0x04).
    pub groups: Option<String>,
    /// Endorsements (0x05).
    pub endorsements: Option<String>,
    /// Capabilities (0x0e).
    pub caps: Option<String>,
    /// The original authentication protocol (0x08, v2).
    pub auth: Option<String>,
    /// The trace id (0x09, v2).
    pub trace_id: Option<String>,
    /// Forwarded credentials (0x06, v2), raw bytes.
    pub creds: Option<Vec<u8>>,
    /// Attributes (0x0a key, 0x0b value pairs).
    pub attrs: Vec<(String, String)>,
}

/// How the stock client names its own address in the host item: its
/// socket's local address as `[IPv6]:port`, an IPv4 address mapped
/// (`[::ffff:127.0.0.1]:1234`; XrdNetUtils::IPFormat, XrdClSocket
/// `GetSockName`). Also how the stock server formats the client's address
/// to compare (`urIP`, `fmtAdv6`).
pub fn address_item(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(v4) => format!("[::ffff:{v4}]:{}", addr.port()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("[::ffff:{v4}]:{}", addr.port()),
            None => format!("[{v6}]:{}", addr.port()),
        },
    }
}

/// The deprecated form of a mapped IPv4 address, `[::127.0.0.1]:port`,
/// which the stock server accepts as well (`urIQ`, `old6Map4`).
fn old_address_item(addr: SocketAddr) -> String {
    let v4 = match addr.ip() {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    match v4 {
        Some(v4) => format!("[::{v4}]:{}", addr.port()),
        None => address_item(addr),
    }
}

/// Seconds since [`BASE_TIME`] at `t`, as the stock `myClock`.
fn clock(t: SystemTime) -> i32 {
    (unix(t) - BASE_TIME) as i32
}

fn bf(key: &Key) -> Blowfish {
    // OpenSSL's BF_set_key takes 1 to 72 key bytes (more are ignored);
    // the crate's KeyInit only 4 to 56, so expand the key directly
    let v = key.value();
    let mut cipher = Blowfish::bc_init_state();
    cipher.bc_expand_key(&v[..v.len().min(72)]);
    cipher
}

fn push_item(out: &mut Vec<u8>, tag: u8, bytes: &[u8], nul: bool) {
    out.push(tag);
    let len = bytes.len() + usize::from(nul);
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(bytes);
    if nul {
        out.push(0);
    }
}

fn push_str(out: &mut Vec<u8>, tag: u8, s: &Option<String>) {
    if let Some(s) = s {
        let s = s.split('\0').next().unwrap_or_default();
        push_item(out, tag, s.as_bytes(), true);
    }
}

fn random(buf: &mut [u8]) {
    // the OS generator failing is not something a caller can act on; the
    // stock code falls back to a time-seeded generator, we to zeros xor time
    if getrandom::fill(buf).is_err() {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8;
        }
    }
}

/// Seals `entity` with `key` as generated at `generated`: the bytes of a
/// `kXR_auth` credential of type `sss`. With `v2` (the server's parameters
/// carry `+`) the key name follows the header. Items: the host item first,
/// then name, vorg, role, groups, caps, endorsements, a random pad up to
/// 128 data bytes, auth, trace id, attributes and credentials, as
/// XrdSecsssEnt orders them.
///
/// Errors: [`CredentialError::Malformed`] when the key name is longer than
/// 183 bytes (a v2 server takes 192 with padding) or the items exceed
/// 16,344 bytes.
pub fn seal(
    key: &Key,
    entity: &Entity,
    generated: SystemTime,
    v2: bool,
) -> Result<Vec<u8>, CredentialError> {
    let name = key.name.as_bytes();
    let kn_size = if v2 { (name.len() + 8) & !7 } else { 0 };
    if kn_size > MAX_KN_SIZE {
        return Err(malformed("Key name too long for a credential."));
    }
    let mut items = Vec::new();
    push_str(&mut items, tag::HOST, &entity.host);
    push_str(&mut items, tag::HOST, &entity.host_name);
    let ident_start = items.len();
    push_str(&mut items, tag::NAME, &entity.name);
    push_str(&mut items, tag::VORG, &entity.vorg);
    push_str(&mut items, tag::ROLE, &entity.role);
    push_str(&mut items, tag::GROUPS, &entity.groups);
    push_str(&mut items, tag::CAPS, &entity.caps);
    push_str(&mut items, tag::ENDORSEMENTS, &entity.endorsements);
    let ident = items.len() - ident_start + DATA_HEADER_LEN;
    if ident < MIN_DATA_LEN {
        let mut pad = vec![0u8; MIN_DATA_LEN - ident];
        random(&mut pad);
        if pad[0] == 0 {
            pad[0] = 0xff;
        }
        push_item(&mut items, tag::RANDOM, &pad, false);
    }
    push_str(&mut items, tag::AUTH, &entity.auth);
    push_str(&mut items, tag::TRACE_ID, &entity.trace_id);
    for (k, v) in &entity.attrs {
        push_str(&mut items, tag::ATTR_KEY, &Some(k.clone()));
        push_str(&mut items, tag::ATTR_VALUE, &Some(v.clone()));
    }
    if let Some(c) = &entity.creds {
        push_item(&mut items, tag::CREDS, c, false);
    }
    if items.len() > MAX_DATA_LEN {
        return Err(malformed("Credentials too big."));
    }

    let mut out = Vec::with_capacity(HEADER_LEN + kn_size + DATA_HEADER_LEN + items.len() + 4);
    out.extend_from_slice(b"sss\0\0\0");
    out.push(kn_size as u8);
    out.push(CIPHER_BLOWFISH);
    out.extend_from_slice(&key.id.to_be_bytes());
    if v2 {
        out.extend_from_slice(name);
        out.resize(HEADER_LEN + kn_size, 0);
    }
    let data_start = out.len();
    let mut rand = [0u8; 32];
    random(&mut rand);
    out.extend_from_slice(&rand);
    out.extend_from_slice(&clock(generated).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, OPT_USE_DATA]);
    out.extend_from_slice(&items);
    let crc = crc32fast::hash(&out[data_start..]);
    out.extend_from_slice(&crc.to_be_bytes());
    cfb_mode::Encryptor::<Blowfish>::inner_iv_init(bf(key), &Default::default())
        .encrypt(&mut out[data_start..]);
    Ok(out)
}

/// A credential the server accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The items it carried.
    pub entity: Entity,
    /// The user it authenticates: the keytab key's user, or for a key of
    /// user `anybody`/`allusers` the credential's name item (`nobody`
    /// without one).
    pub user: String,
    /// The group: the key's group; for `anygroup` the credential's groups
    /// item (`nogroup` without one); `None` for `usrgroup`.
    pub group: Option<String>,
    /// The id of the key that opened it.
    pub key_id: i64,
    /// That key's name.
    pub key_name: String,
    /// When the client generated it, Unix seconds.
    pub generated: i64,
}

/// Opens a credential as the stock server does (`Decode`, then
/// `Authenticate`): finds the key by the header's id (the key name is not
/// used for the lookup), decrypts, checks the CRC, that the generation time
/// plus `lifetime` seconds is after `now`, and, unless the key's name ends
/// in `+`, that the host item is `peer` (the client's address as this
/// server sees it) in either form the stock server accepts
/// (`[::ffff:127.0.0.1]:port` or `[::127.0.0.1]:port`).
///
/// Errors: [`CredentialError::Malformed`] (too small, too big, not `sss`,
/// another cipher, a bad key name, bad items, no identity),
/// [`CredentialError::UnknownKey`], [`CredentialError::BadChecksum`],
/// [`CredentialError::Expired`], [`CredentialError::NoHost`],
/// [`CredentialError::HostMismatch`],
/// [`CredentialError::HostNameMismatch`],
/// [`CredentialError::MutualUnsupported`].
pub fn open(
    keytab: &Keytab,
    cred: &[u8],
    peer: SocketAddr,
    lifetime: u32,
    now: SystemTime,
) -> Result<Opened, CredentialError> {
    if cred.len() < HEADER_LEN + DATA_HEADER_LEN {
        return Err(malformed("Credentials too small."));
    }
    if cred.len() > HEADER_LEN + DATA_HEADER_LEN + MAX_DATA_LEN {
        return Err(malformed("Credentials too big."));
    }
    if &cred[..4] != b"sss\0" {
        let id = String::from_utf8_lossy(&cred[..4]).replace('\0', "");
        return Err(CredentialError::Malformed(format!(
            "Authentication protocol id mismatch (sss != {id})."
        )));
    }
    if cred[7] != CIPHER_BLOWFISH {
        return Err(malformed("Crypto type not supported."));
    }
    let mut data = &cred[HEADER_LEN..];
    let kn_size = usize::from(cred[6]);
    let mut key_name = String::new();
    if kn_size > 0 {
        if kn_size > MAX_KN_SIZE
            || kn_size % 8 != 0
            || kn_size >= data.len()
            || data[kn_size - 1] != 0
        {
            return Err(malformed("Invalid keyname specified."));
        }
        key_name = cstr(&data[..kn_size]);
        data = &data[kn_size..];
    }
    if data.len() < DATA_HEADER_LEN + 4 {
        return Err(malformed("Credentials too small."));
    }
    let id = i64::from_be_bytes(cred[8..16].try_into().expect("8 bytes"));
    let now_unix = unix(now);
    // every key of this id may have sealed it (see Keytab::candidates):
    // the one whose CRC checks out opened it
    let mut tried = 0;
    let mut opened = None;
    for key in keytab.candidates(id, &key_name, now_unix) {
        tried += 1;
        let mut plain = data.to_vec();
        cfb_mode::Decryptor::<Blowfish>::inner_iv_init(bf(key), &Default::default())
            .decrypt(&mut plain);
        let (body, crc) = plain.split_at(plain.len() - 4);
        if crc32fast::hash(body).to_be_bytes() == crc {
            opened = Some((key, plain));
            break;
        }
    }
    let Some((key, plain)) = opened else {
        return Err(match tried {
            0 => CredentialError::UnknownKey { id },
            _ => CredentialError::BadChecksum,
        });
    };
    let body = &plain[..plain.len() - 4];
    let gen_time = i32::from_be_bytes(body[32..36].try_into().expect("4 bytes"));
    if i64::from(gen_time) + i64::from(lifetime) <= now_unix - BASE_TIME {
        return Err(CredentialError::Expired {
            generated: i64::from(gen_time) + BASE_TIME,
            now: now_unix,
        });
    }
    if body[39] == OPT_SEND_LOGIN_ID {
        return Err(CredentialError::MutualUnsupported);
    }
    let entity = parse_items(&body[DATA_HEADER_LEN..])?;

    if key.checks_host() {
        match (&entity.host, &entity.host_name) {
            (None, None) => return Err(CredentialError::NoHost),
            (Some(ip), _) => {
                if *ip != address_item(peer) && *ip != old_address_item(peer) {
                    return Err(CredentialError::HostMismatch {
                        sent: ip.clone(),
                        seen: address_item(peer),
                    });
                }
            }
            // no name service here: a host name must be the address itself
            (None, Some(name)) => {
                if *name != peer.ip().to_string() {
                    return Err(CredentialError::HostNameMismatch { sent: name.clone() });
                }
            }
        }
    }

    let user = if key.any_user() {
        entity.name.clone().unwrap_or_else(|| "nobody".into())
    } else {
        key.user.clone()
    };
    let group = match key.group.as_str() {
        "usrgroup" => None,
        "anygroup" => Some(entity.groups.clone().unwrap_or_else(|| "nogroup".into())),
        g => Some(g.to_string()),
    };
    Ok(Opened {
        entity,
        user,
        group,
        key_id: key.id,
        key_name: if key_name.is_empty() {
            key.name.clone()
        } else {
            key_name
        },
        generated: i64::from(gen_time) + BASE_TIME,
    })
}

/// The bytes up to the first NUL, as text.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The items after the data header (`Authenticate`'s loop).
fn parse_items(mut b: &[u8]) -> Result<Entity, CredentialError> {
    let mut e = Entity::default();
    let mut counted = 0;
    let mut attr_key: Option<String> = None;
    let mut bad_attr = false;
    while let Some((&t, rest)) = b.split_first() {
        if rest.len() < 2 {
            return Err(malformed("Invalid id string."));
        }
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let Some(bytes) = rest[2..].get(..len) else {
            return Err(malformed("Invalid id string."));
        };
        b = &rest[2 + len..];
        if bytes.first() == Some(&0) {
            return Err(malformed("Invalid id string."));
        }
        counted += 1;
        let text = || (!bytes.is_empty()).then(|| cstr(bytes));
        match t {
            tag::NAME => e.name = text(),
            tag::VORG => e.vorg = text(),
            tag::ROLE => e.role = text(),
            tag::GROUPS => e.groups = text(),
            tag::ENDORSEMENTS => e.endorsements = text(),
            tag::CAPS => e.caps = text(),
            tag::CREDS => e.creds = (!bytes.is_empty()).then(|| bytes.to_vec()),
            tag::AUTH => e.auth = text(),
            tag::TRACE_ID => e.trace_id = text(),
            tag::HOST => match text() {
                Some(h) if h.starts_with('[') => e.host = Some(h),
                other => e.host_name = other,
            },
            tag::RANDOM => counted -= 1,
            tag::ATTR_KEY => {
                bad_attr |= attr_key.is_some();
                attr_key = text();
            }
            tag::ATTR_VALUE => match attr_key.take() {
                Some(k) => e.attrs.push((k, text().unwrap_or_default())),
                None => bad_attr = true,
            },
            _ => {}
        }
    }
    if counted == 0 {
        return Err(malformed("No identification specified."));
    }
    if bad_attr {
        return Err(malformed("Invalid attribute specification."));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(name: &str, user: &str, group: &str) -> Key {
        Key::new(
            7714337257385099265,
            name,
            user,
            group,
            &[
                0x8e, 0xe2, 0x4a, 0xea, 0x3e, 0xeb, 0xb6, 0x97, 1, 2, 3, 4, 5, 6, 7, 8,
            ],
        )
    }

    fn client() -> SocketAddr {
        "127.0.0.1:40000".parse().unwrap()
    }

    fn entity() -> Entity {
        Entity {
            host: Some(address_item(client())),
            name: Some("alice".into()),
            groups: Some("users".into()),
            ..Entity::default()
        }
    }

    #[test]
    fn params_as_the_stock_server_sends_them() {
        assert_eq!(Params::default().encode(), "0.+13:");
        let p = Params::parse(b"0.+13:").unwrap();
        assert_eq!(p, Params::default());
        let p = Params::parse(b"0.+0780:/etc/kt").unwrap();
        assert!(p.v2 && p.ask_creds);
        assert_eq!((p.lifetime, p.client_keytab.as_str()), (780, "/etc/kt"));
        let p = Params::parse(b"0.13:").unwrap();
        assert!(!p.v2);
        for bad in [&b""[..], b"0", b"0+13:", b"0.+13", b"0.+x:", b"0.+0:"] {
            assert!(Params::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn address_items() {
        assert_eq!(address_item(client()), "[::ffff:127.0.0.1]:40000");
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5".parse().unwrap();
        assert_eq!(address_item(mapped), "[::ffff:127.0.0.1]:5");
        assert_eq!(old_address_item(mapped), "[::127.0.0.1]:5");
        let v6: SocketAddr = "[::1]:5".parse().unwrap();
        assert_eq!(address_item(v6), "[::1]:5");
    }

    #[test]
    fn round_trip() {
        let kt = Keytab::from_keys(vec![key("k", "anybody", "anygroup")]);
        let now = SystemTime::now();
        for v2 in [true, false] {
            let cred = seal(&kt.keys()[0], &entity(), now, v2).unwrap();
            assert_eq!(&cred[..4], b"sss\0");
            assert_eq!(cred[6], if v2 { 8 } else { 0 });
            let got = open(&kt, &cred, client(), 13, now).unwrap();
            assert_eq!(got.entity, entity());
            assert_eq!(
                (got.user.as_str(), got.group.as_deref()),
                ("alice", Some("users"))
            );
            assert_eq!(got.key_name, "k");
            // the old form of the mapped address is accepted too
            let old = Entity {
                host: Some("[::127.0.0.1]:40000".into()),
                ..entity()
            };
            let cred = seal(&kt.keys()[0], &old, now, v2).unwrap();
            assert!(open(&kt, &cred, client(), 13, now).is_ok());
        }
    }

    /// Two keytabs made by `xrdsssadmin` in the same second share their
    /// key id; concatenated, every key authenticates its clients (the
    /// stock 5.5.3 keeps only the last: the first key's clients are
    /// refused), whether the client names its key (v2) or not.
    #[test]
    fn every_key_sharing_an_id_authenticates() {
        let second = Key::new(
            7714337257385099265,
            "k2",
            "bob",
            "usrgroup",
            &[9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8],
        );
        let kt = Keytab::from_keys(vec![key("k1", "alice", "usrgroup"), second]);
        let now = SystemTime::now();
        for v2 in [true, false] {
            for (k, user) in kt.keys().iter().zip(["alice", "bob"]) {
                let cred = seal(k, &entity(), now, v2).unwrap();
                let got = open(&kt, &cred, client(), 13, now).unwrap();
                assert_eq!(got.user, user, "v2={v2}");
            }
        }
        // a key of that id the keytab lacks still fails its checksum
        let stranger = Key::new(7714337257385099265, "k3", "eve", "usrgroup", &[3; 16]);
        let cred = seal(&stranger, &entity(), now, true).unwrap();
        assert!(matches!(
            open(&kt, &cred, client(), 13, now),
            Err(CredentialError::BadChecksum)
        ));
    }

    #[test]
    fn identity_from_the_keytab() {
        let kt = Keytab::from_keys(vec![key("k", "bob", "usrgroup")]);
        let now = SystemTime::now();
        let cred = seal(&kt.keys()[0], &entity(), now, true).unwrap();
        let got = open(&kt, &cred, client(), 13, now).unwrap();
        assert_eq!((got.user.as_str(), got.group), ("bob", None));
        let kt = Keytab::from_keys(vec![key("k", "anybody", "anygroup")]);
        let bare = Entity {
            host: entity().host,
            vorg: Some("v".into()),
            ..Entity::default()
        };
        let cred = seal(&kt.keys()[0], &bare, now, true).unwrap();
        let got = open(&kt, &cred, client(), 13, now).unwrap();
        assert_eq!(
            (got.user.as_str(), got.group.as_deref()),
            ("nobody", Some("nogroup"))
        );
    }

    #[test]
    fn refusals() {
        let kt = Keytab::from_keys(vec![key("k", "anybody", "g")]);
        let now = SystemTime::now();
        let k = &kt.keys()[0];
        // another key with the same id
        let other = Key::new(k.id, "k", "anybody", "g", b"another secret");
        let cred = seal(&other, &entity(), now, true).unwrap();
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(CredentialError::BadChecksum)
        );
        // unknown id
        let stranger = Key::new(5, "k", "anybody", "g", k.value());
        let cred = seal(&stranger, &entity(), now, true).unwrap();
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(CredentialError::UnknownKey { id: 5 })
        );
        // stale: generated lifetime seconds ago
        let old = now - Duration::from_secs(13);
        let cred = seal(k, &entity(), old, true).unwrap();
        let err = open(&kt, &cred, client(), 13, now).unwrap_err();
        assert!(matches!(err, CredentialError::Expired { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "Credentials expired (check for clock skew)."
        );
        let cred = seal(k, &entity(), now - Duration::from_secs(12), true).unwrap();
        assert!(open(&kt, &cred, client(), 13, now).is_ok());
        // another address, another port
        let cred = seal(k, &entity(), now, true).unwrap();
        let elsewhere: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert!(matches!(
            open(&kt, &cred, elsewhere, 13, now),
            Err(CredentialError::HostMismatch { .. })
        ));
        // no host
        let nohost = Entity {
            host: None,
            ..entity()
        };
        let cred = seal(k, &nohost, now, true).unwrap();
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(CredentialError::NoHost)
        );
        // a '+' key skips the host check
        let plus = Keytab::from_keys(vec![key("k+", "anybody", "g")]);
        let cred = seal(&plus.keys()[0], &nohost, now, true).unwrap();
        assert!(open(&plus, &cred, elsewhere, 13, now).is_ok());
        // damaged header, truncation, garbage
        let mut cred = seal(k, &entity(), now, true).unwrap();
        cred[7] = b'1';
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(malformed("Crypto type not supported."))
        );
        cred[7] = b'0';
        cred[6] = 7;
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(malformed("Invalid keyname specified."))
        );
        assert_eq!(
            open(&kt, &cred[..20], client(), 13, now),
            Err(malformed("Credentials too small."))
        );
        let mut cred = seal(k, &entity(), now, true).unwrap();
        let last = cred.len() - 10;
        cred[last] ^= 1;
        assert_eq!(
            open(&kt, &cred, client(), 13, now),
            Err(CredentialError::BadChecksum)
        );
        for n in 0..200 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            assert!(open(&kt, &junk, client(), 13, now).is_err());
        }
    }

    /// Every cut and every flipped byte of a sealed credential is refused
    /// with an error, never a panic.
    #[test]
    fn damage_is_an_error() {
        let kt = Keytab::from_keys(vec![key("k", "anybody", "g")]);
        let now = SystemTime::now();
        let cred = seal(&kt.keys()[0], &entity(), now, true).unwrap();
        for cut in 0..cred.len() {
            assert!(open(&kt, &cred[..cut], client(), 13, now).is_err());
        }
        for i in 0..cred.len() {
            let mut c = cred.clone();
            c[i] ^= 0x40;
            let _ = open(&kt, &c, client(), 13, now);
        }
    }

    #[test]
    fn items_that_do_not_parse() {
        assert_eq!(
            parse_items(&[]),
            Err(malformed("No identification specified."))
        );
        assert_eq!(
            parse_items(&[tag::RANDOM, 0, 1, 9]),
            Err(malformed("No identification specified."))
        );
        assert_eq!(
            parse_items(&[tag::NAME, 0, 5, b'a']),
            Err(malformed("Invalid id string."))
        );
        assert_eq!(
            parse_items(&[tag::NAME, 0, 1, 0]),
            Err(malformed("Invalid id string."))
        );
        assert_eq!(
            parse_items(&[tag::ATTR_VALUE, 0, 2, b'v', 0]),
            Err(malformed("Invalid attribute specification."))
        );
        let e = parse_items(&[tag::NAME, 0, 2, b'a', 0, 0x7f, 0, 0]).unwrap();
        assert_eq!(e.name.as_deref(), Some("a"));
    }
}
