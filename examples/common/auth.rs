//! The `--auth LIST` and `--sss-keytab FILE` flags the long-running
//! examples (`serve`, `xcache`) share: which security protocols the login
//! reply offers, in order.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use xroot::server::{AnyOf, Authenticator, Config, HostAuth, SssAuth, UnixAuth};

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
    /// `sss`, `ztn` (not available in this build yet).
    pub fn authenticator(&self) -> io::Result<Option<Arc<dyn Authenticator>>> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        if self.sss_keytab.is_some() && !self.auth.iter().any(|p| p == "sss") {
            return Err(invalid(
                "--sss-keytab is only used with --auth ...,sss".into(),
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
                other => {
                    return Err(invalid(format!(
                        "--auth {other}: not available in this build (ztn needs TLS)"
                    )))
                }
            });
        }
        Ok(match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(Arc::new(AnyOf(all))),
        })
    }
}
