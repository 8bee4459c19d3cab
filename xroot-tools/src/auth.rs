//! The `--auth LIST`, `--sss-keytab FILE`, `--token-issuer`,
//! `--token-audience` and `--token-leeway` flags the long-running examples (`serve`, `xcache`)
//! share: which security protocols the login reply offers, in order, and
//! what they trust.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    /// Clock skew allowed on a token's `exp`, `nbf` and `iat`, seconds:
    /// 0 by default, as the stock server's SciTokens library (a token is
    /// refused from the second after its `exp`); a site whose clocks drift
    /// sets a few seconds.
    #[arg(long, value_name = "SECS")]
    pub token_leeway: Option<u64>,
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

    /// What the token flags trust: `--token-issuer`s, `--token-audience`s
    /// and `--token-leeway` (0 without it).
    pub fn token_config(&self) -> TokenConfig {
        let mut config = TokenConfig::new(self.token_issuer.clone());
        config.audiences = self.token_audience.clone();
        config.leeway = Duration::from_secs(self.token_leeway.unwrap_or(0));
        config
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
        let token_flags = !self.token_issuer.is_empty()
            || !self.token_audience.is_empty()
            || self.token_leeway.is_some();
        if token_flags && !ztn {
            return Err(invalid(
                "--token-issuer, --token-audience and --token-leeway are only used with \
                 --auth ...,ztn"
                    .into(),
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
                    let validator = TokenValidator::new(self.token_config())
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        auth: AuthArgs,
    }

    fn parse(args: &[&str]) -> AuthArgs {
        Cli::try_parse_from(std::iter::once("tool").chain(args.iter().copied()))
            .unwrap()
            .auth
    }

    #[test]
    fn the_token_leeway_is_none_unless_given() {
        let a = parse(&["--auth", "ztn", "--token-issuer", "https://i=/k.json"]);
        assert_eq!(a.token_leeway, None);
        assert_eq!(a.token_config().leeway, Duration::ZERO);
        let a = parse(&[
            "--auth",
            "ztn",
            "--token-issuer",
            "https://i=/k.json",
            "--token-leeway",
            "30",
        ]);
        assert_eq!(a.token_config().leeway, Duration::from_secs(30));
        assert!(Cli::try_parse_from(["tool", "--token-leeway", "-1"]).is_err());
    }

    #[test]
    fn token_flags_need_ztn() {
        for flags in [
            &["--token-leeway", "5"][..],
            &["--token-audience", "a"],
            &["--auth", "unix", "--token-leeway", "0"],
        ] {
            let e = parse(flags).authenticator().err().expect("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert!(
                e.to_string().contains("only used with --auth ...,ztn"),
                "{e}"
            );
        }
        assert!(parse(&[]).authenticator().unwrap().is_none());
        let e = parse(&["--auth", "ztn"]).authenticator().err().unwrap();
        assert!(e.to_string().contains("needs --token-issuer"), "{e}");
    }
}
