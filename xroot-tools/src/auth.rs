//! The `--auth LIST`, `--sss-keytab FILE`, `--token-issuer`,
//! `--token-audience`, `--token-leeway` and `--gsi-*` flags the long-running
//! examples (`serve`, `xcache`) share: which security protocols the login
//! reply offers, in order, and what they trust.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use xroot_server::jwks::IssuerConfig;
use xroot_server::{
    AnyOf, Authenticator, Config, GsiAuth, HostAuth, SssAuth, TokenConfig, TokenValidator,
    UnixAuth, ZtnAuth,
};

/// `[--auth host,unix,sss,ztn,gsi] [--sss-keytab FILE] [--token-issuer
/// ...] [--token-audience AUD] [--gsi-cert FILE --gsi-key FILE
/// --gsi-ca-dir DIR [--gsi-gridmap FILE [--gsi-gridmap-required]]]`
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuthArgs {
    /// Security protocols clients must authenticate with, offered in this
    /// order (a comma list of host, unix, sss, ztn, gsi). Without it, none.
    #[arg(long, value_delimiter = ',', value_parser = ["host", "unix", "sss", "ztn", "gsi"])]
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
    /// The host certificate (PEM) `--auth ...gsi` presents to clients,
    /// whose CN or subjectAltName is the name they connect to (the stock
    /// server's `-cert`).
    #[arg(long, value_name = "FILE")]
    pub gsi_cert: Option<PathBuf>,
    /// The host certificate's key (PEM, unencrypted; the stock server's
    /// `-key`).
    #[arg(long, value_name = "FILE")]
    pub gsi_key: Option<PathBuf>,
    /// The hashed CA directory clients' certificates and proxies must
    /// chain to (`HASH.0` certificates, `HASH.r0` CRLs, as
    /// /etc/grid-security/certificates; the stock server's `-certdir`).
    #[arg(long, value_name = "DIR")]
    pub gsi_ca_dir: Option<PathBuf>,
    /// A grid-mapfile (`"DN" name` lines): a client whose DN it names is
    /// that user; another is known by its DN (the stock server's
    /// `-gridmap`, `-gmapopt:1`).
    #[arg(long, value_name = "FILE")]
    pub gsi_gridmap: Option<PathBuf>,
    /// Refuse a client whose DN the grid-mapfile does not name (the stock
    /// server's `-gmapopt:2`).
    #[arg(long, requires = "gsi_gridmap")]
    pub gsi_gridmap_required: bool,
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
    /// used, `--token-*` without `ztn`, `gsi` without `--gsi-cert`,
    /// `--gsi-key` and `--gsi-ca-dir`, gsi files that cannot be used
    /// (the message names the file and what is wrong: a certificate not
    /// valid now or not issued by a CA of the directory, a key that is not
    /// the certificate's...), `--gsi-*` without `gsi`. Fetching remote
    /// keys blocks here (at most 10 s per issuer); one that fails is
    /// retried in the background.
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
        let gsi_flags = self.gsi_cert.is_some()
            || self.gsi_key.is_some()
            || self.gsi_ca_dir.is_some()
            || self.gsi_gridmap.is_some();
        if gsi_flags && !self.auth.iter().any(|p| p == "gsi") {
            return Err(invalid(
                "--gsi-cert, --gsi-key, --gsi-ca-dir and --gsi-gridmap are only used with --auth ...,gsi"
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
                "gsi" => Arc::new(self.gsi()?),
                other => return Err(invalid(format!("--auth {other}: unknown protocol"))),
            });
        }
        Ok(match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(Arc::new(AnyOf(all))),
        })
    }

    /// `gsi` as the `--gsi-*` flags configure it.
    fn gsi(&self) -> io::Result<GsiAuth> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let (Some(cert), Some(key), Some(ca_dir)) =
            (&self.gsi_cert, &self.gsi_key, &self.gsi_ca_dir)
        else {
            return Err(invalid(
                "--auth gsi needs --gsi-cert FILE, --gsi-key FILE and --gsi-ca-dir DIR".into(),
            ));
        };
        GsiAuth::load(
            cert,
            key,
            ca_dir,
            self.gsi_gridmap.as_deref(),
            self.gsi_gridmap_required,
        )
        .map_err(|e| invalid(format!("--auth gsi: {e}")))
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

    fn parse(args: &[&str]) -> Result<AuthArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|c| c.auth)
    }

    fn refusal(args: &[&str]) -> String {
        match parse(args).unwrap().authenticator() {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{args:?} accepted"),
        }
    }

    #[test]
    fn gsi_is_one_of_the_protocols_in_the_order_given() {
        let a = parse(&["--auth", "sss,gsi", "--auth", "unix"]).unwrap();
        assert_eq!(a.auth, ["sss", "gsi", "unix"]);
        let a = parse(&[
            "--auth",
            "gsi",
            "--gsi-cert",
            "/c.pem",
            "--gsi-key",
            "/k.pem",
            "--gsi-ca-dir",
            "/cas",
            "--gsi-gridmap",
            "/g",
            "--gsi-gridmap-required",
        ])
        .unwrap();
        assert_eq!(a.gsi_cert.as_deref(), Some(std::path::Path::new("/c.pem")));
        assert_eq!(a.gsi_ca_dir.as_deref(), Some(std::path::Path::new("/cas")));
        assert!(a.gsi_gridmap_required);
        assert!(parse(&["--auth", "krb5"]).is_err());
        // --gsi-gridmap-required needs a gridmap
        assert!(parse(&["--auth", "gsi", "--gsi-gridmap-required"]).is_err());
    }

    #[test]
    fn gsi_needs_its_files_and_they_need_gsi() {
        let needs = "--auth gsi needs --gsi-cert FILE, --gsi-key FILE and --gsi-ca-dir DIR";
        assert_eq!(refusal(&["--auth", "gsi"]), needs);
        assert_eq!(
            refusal(&["--auth", "unix,gsi", "--gsi-cert", "/c", "--gsi-key", "/k"]),
            needs
        );
        let only = refusal(&["--auth", "unix", "--gsi-ca-dir", "/cas"]);
        assert!(only.contains("only used with --auth ...,gsi"), "{only}");
        // files that are not there are named
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("hostcert.pem");
        let e = refusal(&[
            "--auth",
            "gsi",
            "--gsi-cert",
            cert.to_str().unwrap(),
            "--gsi-key",
            "/k",
            "--gsi-ca-dir",
            "/cas",
        ]);
        assert!(
            e.starts_with("--auth gsi: ") && e.contains("hostcert.pem"),
            "{e}"
        );
    }

    /// The flags, which must parse.
    fn args(args: &[&str]) -> AuthArgs {
        parse(args).unwrap()
    }

    #[test]
    fn the_token_leeway_is_none_unless_given() {
        let a = args(&["--auth", "ztn", "--token-issuer", "https://i=/k.json"]);
        assert_eq!(a.token_leeway, None);
        assert_eq!(a.token_config().leeway, Duration::ZERO);
        let a = args(&[
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
            let e = args(flags).authenticator().err().expect("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert!(
                e.to_string().contains("only used with --auth ...,ztn"),
                "{e}"
            );
        }
        assert!(args(&[]).authenticator().unwrap().is_none());
        let e = args(&["--auth", "ztn"]).authenticator().err().unwrap();
        assert!(e.to_string().contains("needs --token-issuer"), "{e}");
    }
}
