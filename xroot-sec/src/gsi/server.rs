//! The server side of the `gsi` handshake, sans IO (`SECURITY.md "gsi"`;
//! xrootd `XrdSecProtocolgsi::Authenticate`, `ServerDoCertreq`,
//! `ServerDoCert`, `AddSerialized`, `CheckRtag`).
//!
//! [`ServerConfig`] holds what every connection shares (the host
//! certificate and key, the CA directory, the gridmap); each connection
//! runs its own [`ServerHandshake`]: [`ServerHandshake::step`] takes the
//! payload of one `kXR_auth` and gives the `kXR_authmore` payload or the
//! identity.

use std::path::Path;
use std::sync::Arc;

use rsa::traits::PublicKeyParts;
use rsa::{PrivateKey, PublicKey};

use super::bucket::{kind, ServerOffer, SutBuffer};
use super::consts::{step, TIME_SKEW, VERSION, VERSION_DH_SIGNED};
use super::creds::Credentials;
use super::crypto::{
    parse_public_blob, parse_public_key_pem, private_encrypt, public_decrypt, random_tag, DhKey,
    DhParams, SessionCipher, CIPHER,
};
use super::error::GsiError;
use super::gridmap::Gridmap;
use super::trust::CaStore;
use super::x509::Cert;

/// What the server offers and with what it proves who it is.
#[derive(Clone)]
pub struct ServerConfig {
    cert: Cert,
    cert_pem: Vec<u8>,
    key: Arc<PrivateKey>,
    store: Arc<CaStore>,
    gridmap: Option<Arc<Gridmap>>,
    require_mapping: bool,
    dh: DhParams,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("cert", &self.cert.subject)
            .field("ca_dir", &self.store.dir())
            .field("gridmap", &self.gridmap.is_some())
            .finish_non_exhaustive()
    }
}

/// Who the client proved to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GsiIdentity {
    /// The end-entity certificate's subject, one-line form.
    pub dn: String,
    /// The gridmap's name for the DN, when it has one.
    pub mapped: Option<String>,
    /// How many proxies the client's chain had.
    pub proxies: usize,
}

impl GsiIdentity {
    /// The session's user name: the gridmap's name, else the DN.
    pub fn name(&self) -> &str {
        self.mapped.as_deref().unwrap_or(&self.dn)
    }
}

/// What one step gives.
#[derive(Debug, Clone)]
pub enum ServerStep {
    /// Another round: the `kXR_authmore` payload.
    More(Vec<u8>),
    /// Authenticated.
    Done(GsiIdentity),
}

impl ServerConfig {
    /// The host certificate and key (PEM files) and the hashed CA
    /// directory. The certificate must be an end entity, valid now, whose
    /// key is `key`, issued by a CA of the directory.
    ///
    /// Errors: [`GsiError::Config`] and the others naming what is wrong.
    pub fn load(cert: &Path, key: &Path, ca_dir: &Path) -> Result<ServerConfig, GsiError> {
        let creds = Credentials::load_cert_key(cert, key)?;
        let store = CaStore::load(ca_dir)?;
        ServerConfig::new(creds, store)
    }

    /// From credentials already read.
    pub fn new(creds: Credentials, store: CaStore) -> Result<ServerConfig, GsiError> {
        let cert = creds.chain[0].clone();
        if cert.kind != super::x509::CertKind::Eec {
            return Err(GsiError::Config(format!(
                "server certificate {} is not an end-entity certificate",
                cert.subject
            )));
        }
        store
            .verify_server(cert.clone(), now())
            .map_err(|e| GsiError::Config(format!("server certificate {}: {e}", cert.subject)))?;
        let cert_pem =
            pem_rfc7468::encode_string("CERTIFICATE", pem_rfc7468::LineEnding::LF, &cert.der)
                .expect("PEM of a parsed certificate")
                .into_bytes();
        Ok(ServerConfig {
            cert,
            cert_pem,
            key: Arc::new(creds.key),
            store: Arc::new(store),
            gridmap: None,
            require_mapping: false,
            dh: DhParams::ffdhe2048(),
        })
    }

    /// Maps DNs to user names with `gridmap`; with `required`, a DN it
    /// does not name is refused (the stock's `-gmapopt:2`), else the DN
    /// is the name (`-gmapopt:1`, the stock default, maps to the DN's
    /// hash instead; we keep the DN).
    pub fn gridmap(mut self, gridmap: Gridmap, required: bool) -> ServerConfig {
        self.gridmap = Some(Arc::new(gridmap));
        self.require_mapping = required;
        self
    }

    /// The parameters of the login reply's `&P=gsi,` offer: version,
    /// crypto module, the hash of the CA that issued our certificate.
    pub fn offer(&self) -> String {
        ServerOffer {
            version: Some(VERSION),
            crypto: vec!["ssl".into()],
            ca_hashes: vec![format!("{}.0", self.cert.issuer_hash())],
        }
        .encode()
    }

    /// A handshake for one connection.
    pub fn handshake(&self) -> ServerHandshake {
        ServerHandshake {
            state: State::Start,
        }
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

enum State {
    Start,
    /// Our certificate and DH part went out.
    SentCert {
        rtag: Vec<u8>,
        dh: DhKey,
        padded: bool,
        min_certs: usize,
        at: i64,
    },
    Finished,
}

/// One connection's server handshake.
pub struct ServerHandshake {
    state: State,
}

impl std::fmt::Debug for ServerHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self.state {
            State::Start => "start",
            State::SentCert { .. } => "sent-cert",
            State::Finished => "finished",
        };
        write!(f, "ServerHandshake({s})")
    }
}

fn missing(what: &str) -> GsiError {
    GsiError::Protocol(format!("{what} missing"))
}

impl ServerHandshake {
    /// The client step it waits for, by the stock's name
    /// (`kXGC_certreq`, `kXGC_cert`), for messages.
    pub fn expecting(&self) -> &'static str {
        match self.state {
            State::Start => "kXGC_certreq",
            State::SentCert { .. } => "kXGC_cert",
            State::Finished => "none",
        }
    }

    /// Takes one `kXR_auth` payload at `now` (seconds since the epoch).
    ///
    /// Errors: any [`GsiError`]; the handshake is then over (a new one
    /// must start).
    pub fn step(
        &mut self,
        cfg: &ServerConfig,
        cred: &[u8],
        now: i64,
    ) -> Result<ServerStep, GsiError> {
        let state = std::mem::replace(&mut self.state, State::Finished);
        let buf = SutBuffer::decode(cred)?;
        if buf.protocol != "gsi" {
            return Err(GsiError::Protocol(format!(
                "not gsi but {:?}",
                buf.protocol
            )));
        }
        match (state, buf.step) {
            (State::Start, step::CERTREQ) => self.certreq(cfg, buf, now),
            (
                State::SentCert {
                    rtag,
                    dh,
                    padded,
                    min_certs,
                    at,
                },
                step::CERT,
            ) => {
                if now - at > TIME_SKEW {
                    return Err(GsiError::Expired);
                }
                cert(cfg, buf, &rtag, &dh, padded, min_certs, now).map(ServerStep::Done)
            }
            (_, other) => Err(GsiError::Protocol(format!("unexpected step {other}"))),
        }
    }

    /// `kXGC_certreq`: the client's versions and CA; answer with our
    /// certificate, signed DH part, ciphers and digests, and the client's
    /// random tag signed.
    fn certreq(
        &mut self,
        cfg: &ServerConfig,
        mut buf: SutBuffer,
        now: i64,
    ) -> Result<ServerStep, GsiError> {
        let version = buf.get_i32(kind::VERSION)?.unwrap_or(VERSION);
        if version < VERSION_DH_SIGNED {
            return Err(GsiError::Protocol(format!(
                "client gsi version {version} does not sign its key agreement (need {VERSION_DH_SIGNED})"
            )));
        }
        let main = buf.get(kind::MAIN).ok_or_else(|| missing("main buffer"))?;
        let mut main = SutBuffer::decode(main)?;
        let cryptomod = buf
            .get_str(kind::CRYPTOMOD)
            .ok_or_else(|| missing("crypto module specification"))?;
        let module = cryptomod
            .split('|')
            .find(|m| m.trim_end_matches("nopad") == "ssl")
            .ok_or_else(|| {
                GsiError::Protocol(format!(
                    "cannot find / load crypto requested module :{cryptomod}"
                ))
            })?;
        let padded = !module.ends_with("nopad");
        let hashes = buf
            .get_str(kind::ISSUER_HASH)
            .ok_or_else(|| missing("client issuer hash"))?;
        if !hashes.split('|').any(|h| cfg.store.by_hash(h).is_some()) {
            return Err(GsiError::UnknownCa(hashes));
        }
        let opts = buf.get_i32(kind::CLNT_OPTS)?.unwrap_or(0);
        buf.remove(kind::VERSION);
        buf.remove(kind::ISSUER_HASH);
        buf.remove(kind::CLNT_OPTS);
        // the client's challenge, signed with our key; ours added
        let theirs = main.get(kind::RTAG).map(<[u8]>::to_vec);
        if let Some(tag) = theirs {
            main.retype(
                kind::RTAG,
                kind::SIGNED_RTAG,
                private_encrypt(&cfg.key, &tag)?,
            );
        }
        let rtag = random_tag();
        main.push(kind::RTAG, rtag.clone());
        main.step = step::S_CERT;
        buf.set(kind::MAIN, main.encode());
        let dh = DhKey::generate(&cfg.dh);
        buf.push(kind::CIPHER, private_encrypt(&cfg.key, &dh.public_blob())?);
        buf.push(kind::CIPHER_ALG, CIPHER.as_bytes().to_vec());
        buf.push(kind::MD_ALG, b"sha1:md5".to_vec());
        buf.push(kind::X509, cfg.cert_pem.clone());
        buf.step = step::S_CERT;
        self.state = State::SentCert {
            rtag,
            dh,
            padded,
            min_certs: if opts & super::consts::OPT_CREATE_PROXY != 0 {
                2
            } else {
                1
            },
            at: now,
        };
        Ok(ServerStep::More(buf.encode()))
    }
}

/// `kXGC_cert`: the client's DH part (signed), its public key, its chain
/// (encrypted in the main buffer with the agreed key) and our challenge
/// signed with its key.
fn cert(
    cfg: &ServerConfig,
    buf: SutBuffer,
    rtag: &[u8],
    dh: &DhKey,
    padded: bool,
    min_certs: usize,
    now: i64,
) -> Result<GsiIdentity, GsiError> {
    let main = buf.get(kind::MAIN).ok_or_else(|| missing("main buffer"))?;
    let mut iv_len = 0;
    if let Some(cip) = buf.get_str(kind::CIPHER_ALG) {
        let (name, iv) = match cip.split_once('#') {
            Some((n, iv)) => (n.to_string(), iv.parse::<usize>().unwrap_or(0)),
            None => (cip.clone(), 0),
        };
        if name != CIPHER {
            return Err(GsiError::Protocol(format!(
                "unsupported cipher chosen by the client: {name}"
            )));
        }
        iv_len = iv;
    }
    if let Some(md) = buf.get_str(kind::MD_ALG) {
        if !["sha1", "md5"].contains(&md.as_str()) {
            return Err(GsiError::Protocol(format!(
                "unsupported MD chosen by the client: {md}"
            )));
        }
    }
    let puk = buf
        .get(kind::PUK)
        .ok_or_else(|| missing("bucket with client public key"))?;
    let client_key = parse_public_key_pem(puk)?;
    let signed = buf
        .get(kind::CIPHER)
        .ok_or_else(|| missing("bucket with client DH parameters"))?;
    let blob = public_decrypt(&client_key, signed)
        .map_err(|_| GsiError::Crypto("decrypting client DH public parameters".into()))?;
    let (_, peer) = parse_public_blob(&blob)?;
    let secret = dh.agree(&peer, padded)?;
    let cipher = SessionCipher::new(&secret)?;
    let inner = cipher.decrypt(main, iv_len)?;
    let inner = SutBuffer::decode(&inner)?;
    // our challenge, signed with the client's key
    let signed_tag = inner
        .get(kind::SIGNED_RTAG)
        .ok_or_else(|| GsiError::Protocol("random tag missing - protocol error".into()))?;
    let tag = public_decrypt(&client_key, signed_tag)
        .map_err(|_| GsiError::Crypto("error decrypting random tag with public key".into()))?;
    if tag != rtag {
        return Err(GsiError::Crypto("random tag content mismatch".into()));
    }
    let pem = inner
        .get(kind::X509)
        .ok_or_else(|| missing("client certificate"))?;
    let certs = super::x509::pem_certs(pem)?;
    let verified = cfg.store.verify(certs, now, min_certs)?;
    let end_key = verified.end.public_key()?;
    if !same(&end_key, &client_key) {
        return Err(GsiError::KeyMismatch);
    }
    let mapped = cfg
        .gridmap
        .as_ref()
        .and_then(|g| g.lookup(&verified.dn))
        .map(str::to_string);
    if mapped.is_none() && cfg.require_mapping {
        return Err(GsiError::NotMapped(verified.dn));
    }
    Ok(GsiIdentity {
        dn: verified.dn,
        mapped,
        proxies: verified.proxies,
    })
}

fn same(a: &PublicKey, b: &PublicKey) -> bool {
    a.n() == b.n() && a.e() == b.e()
}
