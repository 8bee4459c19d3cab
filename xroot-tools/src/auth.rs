//! The `--auth LIST`, `--sss-keytab FILE`, `--token-issuer` and
//! `--token-audience` flags the long-running examples (`serve`, `xcache`)
//! share: which security protocols the login reply offers, in order, and
//! what they trust.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use xroot_server::jwks::IssuerConfig;
use xroot_server::{
    AnyOf, Authenticator, Config, HostAuth, SssAuth, TokenConfig, TokenValidator, UnixAuth, ZtnAuth,
};

/// `[--auth host,unix,sss,ztn] [--sss-keytab FILE]`
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuthArgs {
    /// Security protocols clients must authenticate with, offered in this
    /// order (a comma list of host, unix, sss, ztn). Without it, none.
    #[arg(long, value_delimiter = ',', value_parser = ["host", "unix", "sss", "ztn"])]
    pub auth: Vec<String>,
    /// The sss keytab (as `xrdsssadmin` writes it; mode 0600): required
    /// with `--auth ...sss`.
    #[arg(long, value_name = "FILE")]
    pub sss_keytab: Option<PathBuf>,
    /// A trusted token issuer for `--auth ...ztn` (repeatable):
    /// `ISSUER=JWKS_FILE`, `ISSUER=https://…/jwks` (its key set URL) or
    /// `ISSUER` alone (keys from `ISSUER/.well-known/openid-configuration`).
    /// Fetches trust the CA directory `X509_CERT_DIR`, else the Mozilla
    /// roots; keys are refreshed in the background as their cache expires.
    #[arg(long, value_name = "ISSUER=JWKS_FILE_OR_URL")]
    pub token_issuer: Vec<IssuerConfig>,
    /// An accepted token audience (repeatable); the WLCG "any" audience is
    /// accepted too. Without it, `aud` is not checked.
    #[arg(long, value_name = "AUD")]
    pub token_audience: Vec<String>,
}

impl AuthArgs {
    /// The server configuration: the defaults with
    /// [`AuthArgs::authenticator`]. Errors: its errors.
    pub fn config(&self) -> io::Result<Config> {
        Ok(Config {
            authenticator: self.authenticator()?,
            ..Config::default()
        })
    }

    /// The authenticator these flags ask for; `None` without `--auth`.
    ///
    /// Errors (`InvalidInput`): `sss` without `--sss-keytab`, a keytab that
    /// cannot be used (the message names the file), `--sss-keytab` without
    /// `sss`, `ztn` without `--token-issuer`, a JWKS file that cannot be
    /// used, `--token-*` without `ztn`. Fetching remote keys blocks here
    /// (at most 10 s per issuer); one that fails is retried in the
    /// background.
    pub fn authenticator(&self) -> io::Result<Option<Arc<dyn Authenticator>>> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        if self.sss_keytab.is_some() && !self.auth.iter().any(|p| p == "sss") {
            return Err(invalid(
                "--sss-keytab is only used with --auth ...,sss".into(),
            ));
        }
        let ztn = self.auth.iter().any(|p| p == "ztn");
        let token_flags = !self.token_issuer.is_empty() || !self.token_audience.is_empty();
        if token_flags && !ztn {
            return Err(invalid(
                "--token-issuer and --token-audience are only used with --auth ...,ztn".into(),
            ));
        }
        let mut all: Vec<Arc<dyn Authenticator>> = Vec::new();
        for p in &self.auth {
            all.push(match p.as_str() {
                "host" => Arc::new(HostAuth),
                "unix" => Arc::new(UnixAuth),
                "sss" => {
                    let path = self
                        .sss_keytab
                        .as_ref()
                        .ok_or_else(|| invalid("--auth sss needs --sss-keytab FILE".into()))?;
                    Arc::new(
                        SssAuth::load(path).map_err(|e| invalid(format!("--sss-keytab: {e}")))?,
                    )
                }
                "ztn" => {
                    if self.token_issuer.is_empty() {
                        return Err(invalid("--auth ztn needs --token-issuer".into()));
                    }
                    let mut config = TokenConfig::new(self.token_issuer.clone());
                    config.audiences = self.token_audience.clone();
                    let validator = TokenValidator::new(config)
                        .map_err(|e| invalid(format!("--token-issuer: {e}")))?;
                    Arc::new(ZtnAuth::new(validator))
                }
                other => return Err(invalid(format!("--auth {other}: unknown protocol"))),
            });
        }
        Ok(match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(Arc::new(AnyOf(all))),
        })
    }
}
