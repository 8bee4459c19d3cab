//! The accepting side: a server's certificate chain and key (PEM), optional
//! client certificates checked against a grid CA directory, and a
//! configuration that can be reloaded from the same files without a
//! restart.
//!
//! The files are those the stock server takes (`xrd.tls CERT KEY`,
//! `xrd.tlsca certdir DIR`, SECURITY.md "TLS"): the certificate file
//! holds the host certificate first, then any intermediates; the key file
//! one unencrypted private key (PKCS#8, PKCS#1 or SEC1). The CA directory is
//! a hashed grid directory (`/etc/grid-security/certificates`): every PEM
//! certificate in it is trusted, other files (`.signing_policy`,
//! `.namespaces`, CRLs) are skipped.
//!
//! With a CA directory the server *asks* for a client certificate but lets
//! a client without one in; a client that presents a chain that does not
//! verify against the directory fails the handshake. A grid proxy
//! certificate (RFC 3820, issued by the user's own certificate) does not
//! verify as a WebPKI chain: give no CA directory to serve clients that
//! present proxies.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::server::{VerifierBuilderError, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why a server TLS configuration could not be built. Every variant names
/// the file (or directory) at fault.
#[derive(Debug, thiserror::Error)]
pub enum ServerTlsError {
    /// A file or directory could not be read (missing, unreadable).
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A file is not valid PEM.
    #[error("{}: bad PEM: {source}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The certificate file holds no `CERTIFICATE` block.
    #[error("{}: no certificate in it", path.display())]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// The key file holds no private key block.
    #[error("{}: no private key in it", path.display())]
    NoKey {
        /// The key file.
        path: PathBuf,
    },
    /// The private key is not the one of the certificate.
    #[error("{}: the key does not match the certificate in {}", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the certificate or key (an unsupported key type, a
    /// certificate that does not parse).
    #[error("{}: refused: {source}", path.display())]
    Refused {
        /// The certificate or key file.
        path: PathBuf,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// The CA directory holds no usable CA certificate.
    #[error("{}: no CA certificate in the directory", path.display())]
    NoCaCertificate {
        /// The CA directory.
        path: PathBuf,
    },
    /// The client certificate verifier could not be built from the CA
    /// directory.
    #[error("{}: client certificate verifier: {source}", path.display())]
    Verifier {
        /// The CA directory.
        path: PathBuf,
        /// rustls' reason.
        #[source]
        source: VerifierBuilderError,
    },
}

/// Where a server's TLS material lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTlsFiles {
    /// The certificate chain (PEM): the host certificate first.
    pub cert: PathBuf,
    /// The private key of the host certificate (PEM, unencrypted).
    pub key: PathBuf,
    /// A hashed grid CA directory: when set, client certificates are asked
    /// for (optionally) and verified against it.
    pub ca_dir: Option<PathBuf>,
}

impl ServerTlsFiles {
    /// Certificate and key, no client certificates.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> ServerTlsFiles {
        ServerTlsFiles {
            cert: cert.into(),
            key: key.into(),
            ca_dir: None,
        }
    }

    /// Also verifies client certificates against `dir`.
    pub fn with_ca_dir(mut self, dir: impl Into<PathBuf>) -> ServerTlsFiles {
        self.ca_dir = Some(dir.into());
        self
    }

    /// Reads the files and builds a rustls server configuration (ring
    /// provider, TLS 1.2 and 1.3).
    ///
    /// Errors: every [`ServerTlsError`] variant, naming the file.
    pub fn load(&self) -> Result<Arc<ServerConfig>, ServerTlsError> {
        let chain = read_certs(&self.cert)?;
        let key = read_key(&self.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|source| ServerTlsError::Refused {
                path: self.cert.clone(),
                source,
            })?;
        let builder = match &self.ca_dir {
            None => builder.with_no_client_auth(),
            Some(dir) => {
                let roots = read_ca_dir(dir)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .allow_unauthenticated()
                        .build()
                        .map_err(|source| ServerTlsError::Verifier {
                            path: dir.clone(),
                            source,
                        })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(chain, key).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => ServerTlsError::KeyMismatch {
                cert: self.cert.clone(),
                key: self.key.clone(),
            },
            source => ServerTlsError::Refused {
                path: self.cert.clone(),
                source,
            },
        })?;
        Ok(Arc::new(config))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ServerTlsError> {
    fs::read(path).map_err(|source| ServerTlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn pem_error(path: &Path) -> impl Fn(rustls_pki_types::pem::Error) -> ServerTlsError + '_ {
    move |source| ServerTlsError::Pem {
        path: path.to_path_buf(),
        source,
    }
}

/// Every certificate of a PEM file, in order.
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServerTlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error(path))?;
    if certs.is_empty() {
        return Err(ServerTlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServerTlsError> {
    let pem = read(path)?;
    match PrivateKeyDer::from_pem_slice(&pem) {
        Ok(key) => Ok(key),
        Err(rustls_pki_types::pem::Error::NoItemsFound) => Err(ServerTlsError::NoKey {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(pem_error(path)(e)),
    }
}

/// Every PEM certificate in a directory (files that are not PEM
/// certificates are skipped).
fn read_ca_dir(dir: &Path) -> Result<RootCertStore, ServerTlsError> {
    let entries = fs::read_dir(dir).map_err(|source| ServerTlsError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut roots = RootCertStore::empty();
    for entry in entries.flatten() {
        let Ok(pem) = fs::read(entry.path()) else {
            continue;
        };
        let certs = CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok);
        roots.add_parsable_certificates(certs);
    }
    if roots.is_empty() {
        return Err(ServerTlsError::NoCaCertificate {
            path: dir.to_path_buf(),
        });
    }
    Ok(roots)
}

/// A server TLS configuration that can be reloaded from its files while
/// the server runs: new handshakes use the configuration current when they
/// start; links already running TLS keep theirs.
#[derive(Debug)]
pub struct ServerTls {
    files: ServerTlsFiles,
    current: RwLock<Arc<ServerConfig>>,
}

impl ServerTls {
    /// Loads `files` (see [`ServerTlsFiles::load`]).
    ///
    /// Errors: those of [`ServerTlsFiles::load`].
    pub fn load(files: ServerTlsFiles) -> Result<ServerTls, ServerTlsError> {
        let config = files.load()?;
        Ok(ServerTls {
            files,
            current: RwLock::new(config),
        })
    }

    /// The configuration for the next handshake.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The files it loads from.
    pub fn files(&self) -> &ServerTlsFiles {
        &self.files
    }

    /// Reads the same files again and, if they make a valid configuration,
    /// uses it for the handshakes from now on.
    ///
    /// Errors: those of [`ServerTlsFiles::load`]; the configuration in use
    /// is then kept.
    pub fn reload(&self) -> Result<(), ServerTlsError> {
        let config = self.files.load()?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = config;
        Ok(())
    }
}
