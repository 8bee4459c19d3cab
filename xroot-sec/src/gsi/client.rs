//! The client side of the `gsi` handshake, sans IO (`SECURITY.md "gsi"`;
//! xrootd `XrdSecProtocolgsi::getCredentials`, `ClientDoInit`,
//! `ClientDoCert`).
//!
//! [`ClientHandshake::first`] answers the login offer with the first
//! `kXR_auth` payload; [`ClientHandshake::next`] answers the server's
//! `kXR_authmore` (its certificate) with the second, which carries our
//! chain encrypted with the agreed key. The server then answers `kXR_ok`.

use std::sync::Arc;

use rsa::PublicKey;

use super::bucket::{kind, ServerOffer, SutBuffer};
use super::consts::{step, OPT_CREATE_PROXY, VERSION, VERSION_DH_SIGNED};
use super::creds::Credentials;
use super::crypto::{
    parse_public_blob, private_encrypt, public_decrypt, public_key_pem, random_tag, DhKey,
    DhParams, SessionCipher, CIPHER, IV_LEN,
};
use super::error::GsiError;
use super::trust::CaStore;
use super::x509::{pem_certs, Cert};

/// One connection's client handshake.
pub struct ClientHandshake {
    creds: Arc<Credentials>,
    store: Arc<CaStore>,
    host: String,
    user: Option<String>,
    rtag: Vec<u8>,
    started: bool,
}

impl std::fmt::Debug for ClientHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientHandshake({})", self.host)
    }
}

impl ClientHandshake {
    /// For a connection to `host` (the name the server's certificate must
    /// carry), with our credentials and the CAs we trust.
    pub fn new(creds: Arc<Credentials>, store: Arc<CaStore>, host: &str) -> ClientHandshake {
        ClientHandshake {
            creds,
            store,
            host: host.to_string(),
            user: None,
            rtag: Vec::new(),
            started: false,
        }
    }

    /// Asks the server to map us to `user` (the `kXRS_user` bucket) when
    /// its gridmap lists several names for our DN.
    pub fn user(mut self, user: Option<String>) -> ClientHandshake {
        self.user = user.filter(|u| !u.is_empty());
        self
    }

    /// The first `kXR_auth` payload (`kXGC_certreq`), for the login
    /// offer's parameters (`v:10600,c:ssl,ca:…`).
    ///
    /// Errors: [`GsiError::UnknownCa`] when none of the server's CAs is in
    /// our directory; [`GsiError::Protocol`] for a server that offers no
    /// `ssl` module or signs nothing.
    pub fn first(&mut self, offer: &[u8]) -> Result<Vec<u8>, GsiError> {
        let offer = ServerOffer::parse(offer);
        if offer.version.unwrap_or(VERSION) < VERSION_DH_SIGNED {
            return Err(GsiError::Protocol(format!(
                "server gsi version {} does not sign its key agreement",
                offer.version.unwrap_or(0)
            )));
        }
        if !offer.crypto.is_empty()
            && !offer
                .crypto
                .iter()
                .any(|c| c.trim_end_matches("nopad") == "ssl")
        {
            return Err(GsiError::Protocol(format!(
                "cannot find / load crypto requested modules :{}",
                offer.crypto.join("|")
            )));
        }
        if !offer
            .ca_hashes
            .iter()
            .any(|h| self.store.by_hash(h).is_some())
        {
            return Err(GsiError::UnknownCa(offer.ca_hashes.join("|")));
        }
        let top = self.creds.chain.last().expect("a chain of one at least");
        let mut buf = SutBuffer::new("gsi", step::CERTREQ);
        buf.push(kind::CRYPTOMOD, b"ssl".to_vec());
        buf.push(kind::VERSION, VERSION.to_be_bytes().to_vec());
        buf.push(
            kind::ISSUER_HASH,
            format!("{}.0", top.issuer_hash()).into_bytes(),
        );
        let opts = if self.creds.is_proxy() {
            OPT_CREATE_PROXY
        } else {
            0
        };
        buf.push(kind::CLNT_OPTS, opts.to_be_bytes().to_vec());
        self.rtag = random_tag();
        let mut main = SutBuffer::new("gsi", step::CERTREQ);
        main.push(kind::RTAG, self.rtag.clone());
        buf.push(kind::MAIN, main.encode());
        self.started = true;
        Ok(buf.encode())
    }

    /// The second `kXR_auth` payload (`kXGC_cert`), for the server's
    /// `kXR_authmore` (`kXGS_cert`), at `now` (seconds since the epoch).
    ///
    /// Errors: the server's certificate fails our CAs or is not for the
    /// host ([`GsiError::Chain`], [`GsiError::ServerName`]), its signatures
    /// do not check, no common cipher, a step we do not take (delegation).
    pub fn next(&mut self, params: &[u8], now: i64) -> Result<Vec<u8>, GsiError> {
        if !self.started {
            return self.first(params);
        }
        let mut buf = SutBuffer::decode(params)?;
        if buf.protocol != "gsi" || buf.step != step::S_CERT {
            return Err(GsiError::Protocol(format!(
                "unexpected server step {} (proxy delegation is not supported)",
                buf.step
            )));
        }
        let cipher_list = buf
            .get_str(kind::CIPHER_ALG)
            .unwrap_or_else(|| CIPHER.to_string());
        if !cipher_list.split(':').any(|c| c == CIPHER) {
            return Err(GsiError::Protocol(format!(
                "no common cipher algorithm in {cipher_list}"
            )));
        }
        let md_list = buf.get_str(kind::MD_ALG).unwrap_or_else(|| "sha256".into());
        let md = md_list
            .split(':')
            .find(|m| ["sha1", "sha256", "md5", "sha512", "sha384", "sha224"].contains(m))
            .ok_or_else(|| GsiError::Protocol(format!("no common digest in {md_list}")))?
            .to_string();
        let pem = buf
            .get(kind::X509)
            .ok_or_else(|| GsiError::Protocol("server certificate missing".into()))?;
        let mut certs = pem_certs(pem)?;
        if certs.len() != 1 {
            return Err(GsiError::Protocol(format!(
                "server sent {} certificates (1 expected)",
                certs.len()
            )));
        }
        let server = certs.remove(0);
        self.store.verify_server(server.clone(), now)?;
        check_host(&server, &self.host)?;
        let server_key = server.public_key()?;
        let signed = buf.get(kind::CIPHER).ok_or_else(|| {
            GsiError::Protocol("server public part for session cipher missing".into())
        })?;
        let blob = public_decrypt(&server_key, signed)
            .map_err(|_| GsiError::Crypto("decrypting server DH public parameters".into()))?;
        let (params_pem, peer) = parse_public_blob(&blob)?;
        let params = DhParams::from_pem(
            params_pem.ok_or_else(|| GsiError::Crypto("server sent no DH parameters".into()))?,
        )?;
        let padded = !buf
            .get_str(kind::CRYPTOMOD)
            .unwrap_or_default()
            .ends_with("nopad");
        let dh = DhKey::generate(&params);
        let cipher = SessionCipher::new(&dh.agree(&peer, padded)?)?;
        let main = buf
            .get(kind::MAIN)
            .ok_or_else(|| GsiError::Protocol("main buffer missing".into()))?;
        let mut main = SutBuffer::decode(main)?;
        check_rtag(&main, &self.rtag, &server_key)?;
        main.remove(kind::SIGNED_RTAG);
        // our reply, built from the server's buffer as the stock does
        buf.set(kind::CIPHER_ALG, format!("{CIPHER}#{IV_LEN}").into_bytes());
        buf.remove(kind::CIPHER);
        buf.remove(kind::X509);
        buf.set(kind::MD_ALG, md.into_bytes());
        buf.push(
            kind::CIPHER,
            private_encrypt(&self.creds.key, &dh.public_blob())?,
        );
        // the key we sign with (the stock's ExportPublic of its signing key)
        let spki = {
            use rsa::pkcs8::EncodePublicKey;
            PublicKey::from(&self.creds.key)
                .to_public_key_der()
                .map_err(|e| GsiError::BadKey(e.to_string()))?
        };
        buf.set(kind::PUK, public_key_pem(spki.as_bytes()).into_bytes());
        main.push(kind::X509, self.creds.chain_pem());
        if let Some(user) = &self.user {
            main.push(kind::USER, user.as_bytes().to_vec());
        }
        if let Some(tag) = main.get(kind::RTAG).map(<[u8]>::to_vec) {
            main.retype(
                kind::RTAG,
                kind::SIGNED_RTAG,
                private_encrypt(&self.creds.key, &tag)?,
            );
        }
        self.rtag = random_tag();
        main.push(kind::RTAG, self.rtag.clone());
        main.step = step::CERT;
        buf.set(kind::MAIN, cipher.encrypt(&main.encode()));
        buf.step = step::CERT;
        Ok(buf.encode())
    }
}

fn check_rtag(main: &SutBuffer, rtag: &[u8], key: &PublicKey) -> Result<(), GsiError> {
    let signed = main
        .get(kind::SIGNED_RTAG)
        .ok_or_else(|| GsiError::Protocol("random tag missing - protocol error".into()))?;
    let tag = public_decrypt(key, signed)
        .map_err(|_| GsiError::Crypto("error decrypting random tag with public key".into()))?;
    if tag != rtag {
        return Err(GsiError::Crypto("random tag content mismatch".into()));
    }
    Ok(())
}

/// RFC 2818 as the stock client does it: the subject alternative names
/// (DNS, with a leading `*.` wildcard, or IP) when there are any that
/// match, else the last `CN` of the subject.
fn check_host(cert: &Cert, host: &str) -> Result<(), GsiError> {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let matches = |pattern: &str| {
        let p = pattern.to_ascii_lowercase();
        match p.strip_prefix("*.") {
            Some(rest) => host.split_once('.').is_some_and(|(_, h)| h == rest),
            None => p == host,
        }
    };
    for (dns, ip) in subject_alt_names(cert) {
        if let Some(d) = dns {
            if matches(&d) {
                return Ok(());
            }
        }
        if let Some(ip) = ip {
            if ip.to_string() == host {
                return Ok(());
            }
        }
    }
    if let Some(cut) = cert.subject.rfind("/CN=") {
        let cn = &cert.subject[cut + 4..];
        let cn = cn.rsplit('/').next().unwrap_or(cn);
        if matches(cn) {
            return Ok(());
        }
    }
    Err(GsiError::ServerName(host))
}

/// The DNS names and IP addresses of a certificate's subjectAltName.
fn subject_alt_names(cert: &Cert) -> Vec<(Option<String>, Option<std::net::IpAddr>)> {
    use super::crypto::der_next;
    let Some(ext) = cert
        .cert
        .tbs_certificate()
        .extensions()
        .and_then(|e| e.iter().find(|e| e.extn_id.to_string() == "2.5.29.17"))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let Some((0x30, mut body, _)) = der_next(ext.extn_value.as_bytes()) else {
        return out;
    };
    while let Some((tag, value, rest)) = der_next(body) {
        match tag {
            0x82 => out.push((Some(String::from_utf8_lossy(value).into_owned()), None)),
            0x87 => {
                let ip = match value.len() {
                    4 => Some(std::net::IpAddr::from(<[u8; 4]>::try_from(value).unwrap())),
                    16 => Some(std::net::IpAddr::from(<[u8; 16]>::try_from(value).unwrap())),
                    _ => None,
                };
                out.push((None, ip));
            }
            _ => {}
        }
        body = rest;
    }
    out
}
