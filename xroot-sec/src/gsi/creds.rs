//! A client's credentials: a proxy file (certificate, key, the chain
//! above it) or a certificate and key, as `xrdgsiproxy` and the grid
//! tools write them; and where the stock client looks for them
//! (`X509_USER_PROXY`, `/tmp/x509up_u<uid>`, `X509_USER_CERT`,
//! `X509_USER_KEY`, `~/.globus`).

use std::path::{Path, PathBuf};

use rsa::traits::PublicKeyParts;
use rsa::{PrivateKey, PublicKey};

use super::error::GsiError;
use super::x509::{pem_blocks, Cert, CertKind};

/// A certificate chain with the private key of its last certificate.
#[derive(Clone)]
pub struct Credentials {
    /// End first (the proxy, or the user certificate), then its issuers
    /// up to but not including a CA.
    pub chain: Vec<Cert>,
    /// The private key of `chain[0]`.
    pub key: PrivateKey,
    /// Where they were read from.
    pub source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("chain", &self.chain)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn parse_key(label: &str, der: &[u8]) -> Result<PrivateKey, GsiError> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    match label {
        "RSA PRIVATE KEY" => {
            PrivateKey::from_pkcs1_der(der).map_err(|e| GsiError::BadKey(e.to_string()))
        }
        "PRIVATE KEY" => {
            PrivateKey::from_pkcs8_der(der).map_err(|e| GsiError::BadKey(e.to_string()))
        }
        "ENCRYPTED PRIVATE KEY" => Err(GsiError::BadKey(
            "the key is encrypted: make a proxy (xrdgsiproxy init) or use an unencrypted key"
                .into(),
        )),
        other => Err(GsiError::BadKey(format!("unsupported key type {other}"))),
    }
}

fn same_key(a: &PublicKey, b: &PublicKey) -> bool {
    a.n() == b.n() && a.e() == b.e()
}

impl Credentials {
    /// From PEM text holding the certificates and the key (a proxy file),
    /// or certificates only with `key_pem` separately. The chain is put in
    /// order, end first; CAs are dropped.
    ///
    /// Errors: [`GsiError::BadCertificate`] / [`GsiError::BadKey`]: no
    /// certificate, no key, a key that is not the end certificate's.
    pub fn from_pem(
        certs_pem: &[u8],
        key_pem: Option<&[u8]>,
        source: &str,
    ) -> Result<Credentials, GsiError> {
        let mut certs = Vec::new();
        let mut key = None;
        for (label, der) in pem_blocks(certs_pem)?.into_iter().chain(match key_pem {
            Some(k) => pem_blocks(k)?,
            None => Vec::new(),
        }) {
            if label == "CERTIFICATE" {
                certs.push(Cert::from_der(der)?);
            } else if label.ends_with("PRIVATE KEY") && key.is_none() {
                key = Some(parse_key(&label, &der)?);
            }
        }
        certs.retain(|c| c.kind != CertKind::Ca);
        if certs.is_empty() {
            return Err(GsiError::BadCertificate(format!(
                "{source}: no certificate"
            )));
        }
        let key = key.ok_or_else(|| GsiError::BadKey(format!("{source}: no private key")))?;
        // the end: the one nobody names as issuer
        let end = (0..certs.len())
            .find(|&i| {
                !certs
                    .iter()
                    .any(|o| o.issuer == certs[i].subject && o.subject != certs[i].subject)
            })
            .ok_or_else(|| GsiError::BadCertificate(format!("{source}: inconsistent chain")))?;
        let mut chain = vec![certs.swap_remove(end)];
        while let Some(i) = certs
            .iter()
            .position(|c| c.subject == chain.last().unwrap().issuer)
        {
            chain.push(certs.swap_remove(i));
        }
        if !same_key(&chain[0].public_key()?, &PublicKey::from(&key)) {
            return Err(GsiError::BadKey(format!(
                "{source}: the private key does not belong to {}",
                chain[0].subject
            )));
        }
        Ok(Credentials {
            chain,
            key,
            source: source.to_string(),
        })
    }

    /// Reads a proxy file.
    pub fn load_proxy(path: &Path) -> Result<Credentials, GsiError> {
        let text = std::fs::read(path)
            .map_err(|e| GsiError::Config(format!("proxy {}: {e}", path.display())))?;
        Credentials::from_pem(&text, None, &path.display().to_string())
    }

    /// Reads a certificate file and its key file.
    pub fn load_cert_key(cert: &Path, key: &Path) -> Result<Credentials, GsiError> {
        let c = std::fs::read(cert)
            .map_err(|e| GsiError::Config(format!("certificate {}: {e}", cert.display())))?;
        let k = std::fs::read(key)
            .map_err(|e| GsiError::Config(format!("key {}: {e}", key.display())))?;
        Credentials::from_pem(&c, Some(&k), &cert.display().to_string())
    }

    /// Whether `chain[0]` is a proxy.
    pub fn is_proxy(&self) -> bool {
        matches!(self.chain[0].kind, CertKind::Proxy(_))
    }

    /// Fails when a certificate of the chain is not valid at `now`
    /// (seconds since the epoch), as the stock client checks before it
    /// contacts a server.
    pub fn check_time(&self, now: i64) -> Result<(), GsiError> {
        for c in &self.chain {
            if now < c.not_before - super::trust::ALLOWED_SKEW || now > c.not_after {
                return Err(GsiError::BadCertificate(format!(
                    "{}: certificate of {} is expired or not yet valid",
                    self.source, c.subject
                )));
            }
        }
        Ok(())
    }

    /// The chain as the `x509` bucket carries it: PEM, end first.
    pub fn chain_pem(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for c in &self.chain {
            out.extend_from_slice(
                pem_rfc7468::encode_string("CERTIFICATE", pem_rfc7468::LineEnding::LF, &c.der)
                    .expect("PEM of a parsed certificate")
                    .as_bytes(),
            );
        }
        out
    }

    /// What the stock client reads, in its order: the proxy at
    /// `X509_USER_PROXY` (default `/tmp/x509up_u<uid>`) when it exists,
    /// else `X509_USER_CERT` and `X509_USER_KEY` (default
    /// `~/.globus/usercert.pem` and `userkey.pem`).
    ///
    /// Errors: the proxy's or the certificate's; [`GsiError::Config`]
    /// when neither exists.
    pub fn discover() -> Result<Credentials, GsiError> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let uid = rustix::process::getuid().as_raw();
        let proxy =
            env("X509_USER_PROXY").unwrap_or_else(|| PathBuf::from(format!("/tmp/x509up_u{uid}")));
        if proxy.exists() {
            return Credentials::load_proxy(&proxy);
        }
        let home = env("HOME").unwrap_or_default();
        let cert = env("X509_USER_CERT").unwrap_or_else(|| home.join(".globus/usercert.pem"));
        let key = env("X509_USER_KEY").unwrap_or_else(|| home.join(".globus/userkey.pem"));
        if cert.exists() && key.exists() {
            return Credentials::load_cert_key(&cert, &key);
        }
        Err(GsiError::Config(format!(
            "no X509 credentials: no proxy at {} and no certificate and key at {} and {}",
            proxy.display(),
            cert.display(),
            key.display()
        )))
    }
}

/// The CA directory the stock client trusts: `X509_CERT_DIR`, else
/// `/etc/grid-security/certificates`.
pub fn default_ca_dir() -> PathBuf {
    std::env::var_os("X509_CERT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/grid-security/certificates"))
}
