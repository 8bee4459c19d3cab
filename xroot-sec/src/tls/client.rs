//! The connecting side: whom to trust, the rustls [`ClientConfig`] built
//! from it, and why a handshake failed.
//!
//! **Trust** ([`TrustStore`]) comes from a grid CA directory — the
//! `X509_CERT_DIR` of the stock client, `/etc/grid-security/certificates`
//! by default ([`default_cert_dir`]) — and/or explicit PEM CA bundles. A
//! grid directory holds each CA as `<hash>.0` (a link made by `openssl
//! rehash`) beside its `.pem`, signing policies, namespaces and CRLs: every
//! file in it that parses as PEM certificates is loaded, the rest skipped,
//! and a certificate met twice (the hash link and its target) is added once.
//! CRLs are not read.
//!
//! **Host name**: the server's certificate must name the host of the URL in
//! its subjectAltName (a `DNS:` entry for a host name, an `IP:` entry for an
//! address), checked by rustls/webpki. Unlike the stock client (XrdTls),
//! which falls back to the subject CN when a certificate has no SAN and
//! skips the check for `localhost`, `127.0.0.1` and `[::1]`, a CN-only
//! certificate is **not** accepted and the check is never skipped.
//!
//! **SNI** is not sent, as the stock client sends none (XrdTlsSocket).
//!
//! **Client certificate**: none by default; [`ClientTls::with_client_cert`]
//! presents one (a grid proxy file holds the chain and the key, so it may be
//! given as both).
//!
//! Handshake failures map to [`HandshakeError`], which names the cause:
//! untrusted chain, name mismatch, expired or not yet valid, our
//! certificate refused by the server, or something else.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};

/// The grid's CA directory when `X509_CERT_DIR` is not set (what the stock
/// client, XrdCl through XrdTls, uses).
pub const DEFAULT_CERT_DIR: &str = "/etc/grid-security/certificates";

/// The CA directory the environment names: `X509_CERT_DIR` when set and not
/// empty, else [`DEFAULT_CERT_DIR`]. It may not exist.
pub fn default_cert_dir() -> PathBuf {
    match std::env::var_os("X509_CERT_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(DEFAULT_CERT_DIR),
    }
}

/// Largest file read from a CA directory or as a bundle, in bytes (a CA
/// certificate is a few KiB; a large bundle of every public CA some
/// hundreds).
const MAX_PEM_FILE: u64 = 16 << 20;

/// Why a trust store or a client configuration could not be built.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A CA directory or bundle without a single usable certificate.
    #[error("no CA certificate in {path}")]
    NoCertificates {
        /// The directory or file.
        path: PathBuf,
    },

    /// A file given as a certificate chain or key that does not parse as one.
    #[error("{path}: not a PEM {what}")]
    BadPem {
        /// The file.
        path: PathBuf,
        /// What was expected in it (`"certificate chain"`, `"private key"`).
        what: &'static str,
    },

    /// rustls refused the configuration (a key that does not match its
    /// certificate, an unsupported key type, ...).
    #[error("TLS configuration refused: {0}")]
    Rustls(#[source] rustls::Error),
}

/// The CA certificates a client trusts. Cheap to build; consumed by
/// [`ClientTls::new`].
#[derive(Clone)]
pub struct TrustStore {
    roots: RootCertStore,
    /// DER of every certificate added, to add each once.
    seen: HashSet<Vec<u8>>,
}

impl Default for TrustStore {
    fn default() -> Self {
        TrustStore::new()
    }
}

impl fmt::Debug for TrustStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustStore")
            .field("certificates", &self.len())
            .finish()
    }
}

impl TrustStore {
    /// An empty store (trusts nothing).
    pub fn new() -> TrustStore {
        TrustStore {
            roots: RootCertStore::empty(),
            seen: HashSet::new(),
        }
    }

    /// The store of one CA directory ([`TrustStore::add_ca_dir`]).
    /// Errors: as `add_ca_dir`, and [`ConfigError::NoCertificates`] when it
    /// holds no usable certificate.
    pub fn from_ca_dir(dir: impl AsRef<Path>) -> Result<TrustStore, ConfigError> {
        let mut store = TrustStore::new();
        if store.add_ca_dir(dir.as_ref())? == 0 {
            return Err(ConfigError::NoCertificates {
                path: dir.as_ref().to_path_buf(),
            });
        }
        Ok(store)
    }

    /// Adds every certificate of every file in `dir` (not recursing; links
    /// followed) that parses as PEM; files that do not (CRLs in DER, signing
    /// policies, ...) and certificates that are not usable trust anchors are
    /// skipped. Returns how many certificates were new to the store.
    /// Errors: [`ConfigError::Io`] when `dir` cannot be listed.
    pub fn add_ca_dir(&mut self, dir: impl AsRef<Path>) -> Result<usize, ConfigError> {
        let dir = dir.as_ref();
        let io_err = |source| ConfigError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io_err)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        paths.sort();
        let mut added = 0;
        for path in paths {
            // follows links; skips subdirectories and what cannot be read
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() && m.len() <= MAX_PEM_FILE => {}
                _ => continue,
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            added += self.add_pem(&bytes);
        }
        Ok(added)
    }

    /// Adds the certificates of the PEM bundle `file`; returns how many were
    /// new. Errors: [`ConfigError::Io`], [`ConfigError::NoCertificates`]
    /// when it holds none (a bundle named explicitly must contribute).
    pub fn add_ca_file(&mut self, file: impl AsRef<Path>) -> Result<usize, ConfigError> {
        let file = file.as_ref();
        let bytes = std::fs::read(file).map_err(|source| ConfigError::Io {
            path: file.to_path_buf(),
            source,
        })?;
        let before = self.len();
        let added = self.add_pem(&bytes);
        if self.len() == before && !Self::holds_certificates(&bytes) {
            return Err(ConfigError::NoCertificates {
                path: file.to_path_buf(),
            });
        }
        Ok(added)
    }

    /// Adds one DER certificate; returns whether it was new and usable as a
    /// trust anchor.
    pub fn add_der(&mut self, der: CertificateDer<'_>) -> bool {
        if self.seen.contains(der.as_ref()) {
            return false;
        }
        match self.roots.add(der.clone().into_owned()) {
            Ok(()) => {
                self.seen.insert(der.as_ref().to_vec());
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "certificate skipped: not a usable trust anchor");
                false
            }
        }
    }

    /// Adds each certificate of a PEM text; returns how many were new.
    /// Text that is not PEM adds nothing.
    pub fn add_pem(&mut self, pem: &[u8]) -> usize {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            match cert {
                Ok(der) => added += usize::from(self.add_der(der)),
                // not PEM (a DER CRL, a binary file): nothing more from it
                Err(_) => break,
            }
        }
        added
    }

    fn holds_certificates(pem: &[u8]) -> bool {
        CertificateDer::pem_slice_iter(pem).any(|c| c.is_ok())
    }

    /// Certificates in the store.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether the store trusts nothing.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }
}

/// A client's TLS configuration: a rustls [`ClientConfig`] on the *ring*
/// provider, trusting a [`TrustStore`], sending no SNI, optionally
/// presenting a client certificate. Cheap to clone (shared).
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
    trusted: usize,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("trusted", &self.trusted)
            .field(
                "client_cert",
                &self.config.client_auth_cert_resolver.has_certs(),
            )
            .finish()
    }
}

impl ClientTls {
    /// A configuration trusting `trust`, without a client certificate.
    /// Errors: [`ConfigError::Rustls`] (no protocol version the provider
    /// supports — does not happen with *ring*).
    pub fn new(trust: TrustStore) -> Result<ClientTls, ConfigError> {
        let trusted = trust.len();
        let config = builder()?
            .with_root_certificates(trust.roots)
            .with_no_client_auth();
        Ok(ClientTls::finish(config, trusted))
    }

    /// A configuration trusting `trust` and presenting the certificate chain
    /// in the PEM file `chain` (leaf first) with the private key in the PEM
    /// file `key` (PKCS#1, PKCS#8 or SEC1; a grid proxy file holds both).
    /// Errors: [`ConfigError::Io`], [`ConfigError::BadPem`] for a file
    /// without a certificate or key, [`ConfigError::Rustls`] for a key that
    /// does not fit.
    pub fn with_client_cert(
        trust: TrustStore,
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<ClientTls, ConfigError> {
        let (chain, key) = (chain.as_ref(), key.as_ref());
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| ConfigError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read(chain)?)
            .collect::<Result<_, _>>()
            .ok()
            .filter(|c: &Vec<_>| !c.is_empty())
            .ok_or_else(|| ConfigError::BadPem {
                path: chain.to_path_buf(),
                what: "certificate chain",
            })?;
        let private =
            PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|_| ConfigError::BadPem {
                path: key.to_path_buf(),
                what: "private key",
            })?;
        let trusted = trust.len();
        let config = builder()?
            .with_root_certificates(trust.roots)
            .with_client_auth_cert(certs, private)
            .map_err(ConfigError::Rustls)?;
        Ok(ClientTls::finish(config, trusted))
    }

    /// The configuration the environment gives, as the stock client builds
    /// it: trust from [`default_cert_dir`] (`X509_CERT_DIR`, else
    /// `/etc/grid-security/certificates`). `Ok(None)` when that directory
    /// does not exist or holds no certificate (the client then has no TLS).
    /// Errors: [`ConfigError::Io`] when it exists but cannot be listed.
    pub fn from_env() -> Result<Option<ClientTls>, ConfigError> {
        let dir = default_cert_dir();
        if !dir.is_dir() {
            return Ok(None);
        }
        let mut trust = TrustStore::new();
        if trust.add_ca_dir(&dir)? == 0 {
            tracing::warn!(dir = %dir.display(), "CA directory holds no certificate: no TLS");
            return Ok(None);
        }
        ClientTls::new(trust).map(Some)
    }

    fn finish(mut config: ClientConfig, trusted: usize) -> ClientTls {
        // the stock client sends no SNI (XrdTlsSocket)
        config.enable_sni = false;
        ClientTls {
            config: Arc::new(config),
            trusted,
        }
    }

    /// The rustls configuration, for `tokio_rustls::TlsConnector`.
    pub fn rustls_config(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.config)
    }

    /// How many CA certificates it trusts.
    pub fn trusted(&self) -> usize {
        self.trusted
    }
}

fn builder() -> Result<rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier>, ConfigError> {
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(ConfigError::Rustls)
}

/// The server name to verify for the host of a URL: an IP address (with or
/// without the brackets of an IPv6 URL host) or a DNS name. Errors:
/// [`HandshakeError::Other`] for a host that is neither.
pub fn server_name(host: &str) -> Result<ServerName<'static>, HandshakeError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|_| HandshakeError::Other(format!("{host:?} is not a valid server name")))
}

/// Why a TLS handshake with a server failed, as far as the client can tell.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The server's chain does not lead to a trusted CA (rustls
    /// `UnknownIssuer`, `BadSignature`): the CA is missing from the trust
    /// store, or the chain is wrong.
    #[error("untrusted certificate chain ({0})")]
    UntrustedChain(String),

    /// The server's certificate does not name the host in its
    /// subjectAltName (a CN is not looked at).
    #[error("certificate not valid for {expected}{}", presented_list(.presented))]
    NameMismatch {
        /// The host name or address checked (empty when rustls did not say).
        expected: String,
        /// The names the certificate gives (SAN entries), when known.
        presented: Vec<String>,
    },

    /// The server's certificate (or one of its chain) has expired.
    #[error("certificate expired{}", at_time(.not_after, "on"))]
    Expired {
        /// Its notAfter, seconds since the Unix epoch, when known.
        not_after: Option<u64>,
    },

    /// The server's certificate (or one of its chain) is not valid yet.
    #[error("certificate not valid yet{}", at_time(.not_before, "before"))]
    NotYetValid {
        /// Its notBefore, seconds since the Unix epoch, when known.
        not_before: Option<u64>,
    },

    /// The server refused our client certificate (or wanted one): the TLS
    /// alert it sent.
    #[error("server refused the client certificate (alert {0})")]
    BadClientCert(String),

    /// Anything else: another certificate problem, a protocol or I/O
    /// failure mid-handshake. The text says what.
    #[error("{0}")]
    Other(String),
}

fn presented_list(names: &[String]) -> String {
    match names.is_empty() {
        true => String::new(),
        false => format!(" (it names {})", names.join(", ")),
    }
}

fn at_time(t: &Option<u64>, word: &str) -> String {
    t.map(|t| format!(" ({word} {t} s since the epoch)"))
        .unwrap_or_default()
}

impl HandshakeError {
    /// The cause of a rustls error.
    pub fn from_rustls(e: &rustls::Error) -> HandshakeError {
        use CertificateError as C;
        match e {
            rustls::Error::InvalidCertificate(c) => match c {
                C::UnknownIssuer | C::BadSignature => HandshakeError::UntrustedChain(c_text(c)),
                C::NotValidForName => HandshakeError::NameMismatch {
                    expected: String::new(),
                    presented: Vec::new(),
                },
                C::NotValidForNameContext {
                    expected,
                    presented,
                } => HandshakeError::NameMismatch {
                    expected: expected.to_str().into_owned(),
                    presented: presented.clone(),
                },
                C::Expired => HandshakeError::Expired { not_after: None },
                C::ExpiredContext { not_after, .. } => HandshakeError::Expired {
                    not_after: Some(not_after.as_secs()),
                },
                C::NotValidYet => HandshakeError::NotYetValid { not_before: None },
                C::NotValidYetContext { not_before, .. } => HandshakeError::NotYetValid {
                    not_before: Some(not_before.as_secs()),
                },
                other => HandshakeError::Other(format!("invalid certificate: {}", c_text(other))),
            },
            rustls::Error::AlertReceived(a) if client_cert_alert(*a) => {
                HandshakeError::BadClientCert(format!("{a:?}"))
            }
            other => HandshakeError::Other(other.to_string()),
        }
    }

    /// The cause of a failed handshake as tokio-rustls reports it: an
    /// [`io::Error`] that carries the rustls error, or a plain I/O failure.
    pub fn from_io(e: &io::Error) -> HandshakeError {
        match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(r) => HandshakeError::from_rustls(r),
            None => HandshakeError::Other(format!("I/O error during the handshake: {e}")),
        }
    }
}

fn c_text(c: &CertificateError) -> String {
    rustls::Error::InvalidCertificate(c.clone())
        .to_string()
        .trim_start_matches("invalid peer certificate: ")
        .to_string()
}

/// Alerts a server sends about the client's certificate (RFC 8446 §6.2).
fn client_cert_alert(a: AlertDescription) -> bool {
    matches!(
        a,
        AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired
            | AlertDescription::AccessDenied
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::UnixTime;
    use std::time::Duration;

    #[test]
    fn empty_or_missing_sources_are_typed_errors() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            TrustStore::from_ca_dir(d.path()),
            Err(ConfigError::NoCertificates { .. })
        ));
        assert!(matches!(
            TrustStore::from_ca_dir(d.path().join("nope")),
            Err(ConfigError::Io { .. })
        ));
        let junk = d.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        assert!(matches!(
            TrustStore::new().add_ca_file(&junk),
            Err(ConfigError::NoCertificates { .. })
        ));
        assert!(matches!(
            ClientTls::with_client_cert(TrustStore::new(), &junk, &junk),
            Err(ConfigError::BadPem {
                what: "certificate chain",
                ..
            })
        ));
    }

    #[test]
    fn server_names_from_url_hosts() {
        assert!(matches!(
            server_name("localhost").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name("127.0.0.1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("[::1]").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("bad host"),
            Err(HandshakeError::Other(_))
        ));
    }

    #[test]
    fn rustls_errors_map_to_their_cause() {
        use rustls::Error as E;
        let cert = |c| HandshakeError::from_rustls(&E::InvalidCertificate(c));
        assert!(matches!(
            cert(CertificateError::UnknownIssuer),
            HandshakeError::UntrustedChain(_)
        ));
        let mismatch = cert(CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("h.example").unwrap(),
            presented: vec!["DNS:other.example".into()],
        });
        assert_eq!(
            mismatch,
            HandshakeError::NameMismatch {
                expected: "h.example".into(),
                presented: vec!["DNS:other.example".into()],
            }
        );
        assert!(mismatch.to_string().contains("h.example"), "{mismatch}");
        assert!(mismatch.to_string().contains("other.example"), "{mismatch}");
        let t = UnixTime::since_unix_epoch(Duration::from_secs(946_771_200));
        assert_eq!(
            cert(CertificateError::ExpiredContext {
                time: UnixTime::now(),
                not_after: t,
            }),
            HandshakeError::Expired {
                not_after: Some(946_771_200)
            }
        );
        assert_eq!(
            cert(CertificateError::NotValidYet),
            HandshakeError::NotYetValid { not_before: None }
        );
        assert!(matches!(
            HandshakeError::from_rustls(&E::AlertReceived(AlertDescription::CertificateRequired)),
            HandshakeError::BadClientCert(_)
        ));
        assert!(matches!(
            HandshakeError::from_rustls(&E::AlertReceived(AlertDescription::HandshakeFailure)),
            HandshakeError::Other(_)
        ));
        // through tokio-rustls' io::Error
        let io = io::Error::new(
            io::ErrorKind::InvalidData,
            E::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        assert!(matches!(
            HandshakeError::from_io(&io),
            HandshakeError::UntrustedChain(_)
        ));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(matches!(
            HandshakeError::from_io(&reset),
            HandshakeError::Other(_)
        ));
    }
}
