//! The TLS flags `serve` and `xcache` share, and the certificate reload on
//! SIGHUP.
//!
//! `--tls-cert FILE --tls-key FILE [--tls capable|login|session|data|all]
//! [--tls-ca-dir DIR]`: the certificate chain and key (PEM); the level
//! (default `capable`: offered to clients that ask, `roots://`); a hashed
//! grid CA directory to verify client certificates against (asked for,
//! not required; without it none are asked for — `X509_CERT_DIR` is not
//! read, so that grid users presenting proxies are not refused).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use tokio::signal::unix::{signal, SignalKind};
use xroot_server::{ServerHandle, ServerTls, ServerTlsFiles, TlsConfig, TlsRequirement};

/// `--tls-cert FILE --tls-key FILE [--tls LEVEL] [--tls-ca-dir DIR]`
#[derive(Debug, Args)]
pub struct TlsArgs {
    /// Certificate chain (PEM) for TLS; SIGHUP reloads it and the key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// What must run TLS: capable (offered only), login, session, data
    /// (substreams and session), all. Needs --tls-cert.
    #[arg(long, value_name = "LEVEL", requires = "tls_cert", value_parser = level)]
    pub tls: Option<TlsRequirement>,
    /// Hashed CA directory to verify client certificates against. Needs
    /// --tls-cert.
    #[arg(long, value_name = "DIR", requires = "tls_cert")]
    pub tls_ca_dir: Option<PathBuf>,
}

fn level(s: &str) -> Result<TlsRequirement, String> {
    TlsRequirement::parse(s)
        .ok_or_else(|| format!("{s:?}: one of capable, login, session, data, all"))
}

impl TlsArgs {
    /// The server's TLS, if a certificate is given.
    ///
    /// Errors: `InvalidInput` naming the file that failed and why.
    pub fn config(&self) -> io::Result<Option<TlsConfig>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let mut files = ServerTlsFiles::new(cert, key);
        files.ca_dir = self.tls_ca_dir.clone();
        let server = ServerTls::load(files)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let requirement = self.tls.unwrap_or_default();
        Ok(Some(TlsConfig {
            server: Arc::new(server),
            requirement,
        }))
    }
}

/// Reloads the TLS certificate and key on every SIGHUP; a failed reload is
/// logged and the certificate in use kept; `tool` (`"serve"`, `"xcache"`)
/// names the target of the log lines.
///
/// Errors: the SIGHUP handler cannot be installed.
pub fn reload_on_sighup(tool: &'static str, handle: ServerHandle) -> io::Result<()> {
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            match handle.reload_tls() {
                Ok(true) => crate::tool_event!(tool, "tls", info, "TLS certificate reloaded"),
                Ok(false) => crate::tool_event!(tool, "tls", info, "SIGHUP: no TLS to reload"),
                Err(e) => crate::tool_event!(
                    tool,
                    "tls",
                    warn,
                    "TLS reload failed, keeping the old certificate: {e}"
                ),
            }
        }
    });
    Ok(())
}
