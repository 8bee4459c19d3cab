//! A throw-away token issuer for `ztn` tests, made and minting with the
//! `xrdtoken` tool's module ([`xroot_tools::xrdtoken`]): its ES256 (P-256)
//! key (kid `ec1`, made with ring, no `openssl`), beside an RS256 (2048-bit)
//! key (kid `rsa1`) made with the `openssl` command, their public halves in
//! one JWKS file, and tokens with the WLCG profile's claims, signed by the
//! tool's code.

use std::path::{Path, PathBuf};

use jsonwebtoken::Algorithm;
use serde_json::Value;
use xroot_tools::xrdtoken::{self, Issuer, Mint, SigningKey};

/// Issuer URL used by default.
pub const ISSUER: &str = "https://localhost/xroot-test";
/// Audience used by default.
pub const AUDIENCE: &str = "https://xroot.test";

/// An issuer: its keys (kid `ec1` and `rsa1`) and JWKS file.
pub struct TestIssuer {
    /// Holds every file; removed on drop.
    pub dir: tempfile::TempDir,
    /// The `iss` value.
    pub issuer: String,
    /// The JWKS file (public keys of both).
    pub jwks: PathBuf,
    /// The P-256 private key (PKCS#8 PEM).
    pub ec_pem: PathBuf,
    /// The EC public key (PEM).
    pub ec_pub: PathBuf,
    /// The RSA private key (PKCS#8 PEM).
    pub rsa_pem: PathBuf,
    ec: Issuer,
    rsa: SigningKey,
}

/// `openssl` with `args` (absolute paths) in the current directory.
fn openssl(args: &[&str]) {
    crate::pki::openssl(args, Path::new("."));
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    xrdtoken::now() as i64
}

impl TestIssuer {
    /// Fresh keys for `issuer`: the EC one as `xrdtoken issuer` makes it
    /// (in the temp dir), the RSA one with `openssl`; the JWKS file holds
    /// both.
    pub fn new(issuer: &str) -> TestIssuer {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ec = Issuer::create(d, issuer, "ec1").unwrap();
        let rsa_pem = d.join("rsa.pem");
        openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            rsa_pem.to_str().unwrap(),
        ]);
        let rsa = SigningKey::from_pem(Algorithm::RS256, "rsa1", &std::fs::read(&rsa_pem).unwrap())
            .unwrap();
        let issuer = TestIssuer {
            jwks: ec.jwks(),
            ec_pem: d.join(xrdtoken::PRIVATE_PEM),
            ec_pub: d.join(xrdtoken::PUBLIC_PEM),
            rsa_pem,
            ec,
            rsa,
            issuer: issuer.to_string(),
            dir,
        };
        std::fs::write(&issuer.jwks, issuer.jwks_json()).unwrap();
        issuer
    }

    /// The public key set, as JSON.
    pub fn jwks_json(&self) -> String {
        xrdtoken::jwks_json(&[&self.ec.key, &self.rsa]).unwrap()
    }

    /// The `ISSUER=JWKS_FILE` argument of `--token-issuer`.
    pub fn arg(&self) -> String {
        format!("{}={}", self.issuer, self.jwks.display())
    }

    /// WLCG-profile claims as `xrdtoken mint` makes them: this issuer,
    /// `sub` `alice`, [`AUDIENCE`], `scope`, issued now, valid for 10
    /// minutes.
    pub fn claims(&self, scope: &str) -> Value {
        let mint = Mint {
            audience: AUDIENCE.into(),
            subject: "alice".into(),
            lifetime: 600,
            ..Mint::new(scope)
        };
        mint.claims(&self.issuer, xrdtoken::now())
    }

    /// `claims` signed with ES256 (kid `ec1`).
    pub fn es256(&self, claims: &Value) -> String {
        self.ec.key.sign(claims).unwrap()
    }

    /// `claims` signed with RS256 (kid `rsa1`).
    pub fn rs256(&self, claims: &Value) -> String {
        self.rsa.sign(claims).unwrap()
    }

    /// `claims` signed with `alg` and this issuer's key of that family,
    /// naming `kid`.
    pub fn sign(&self, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let key = match alg {
            Algorithm::ES256 => self.ec.key.encoding_key(),
            _ => self.rsa.encoding_key(),
        };
        xrdtoken::sign(alg, kid, key, claims).unwrap()
    }
}

/// A token with `alg: none` and no signature.
pub fn unsigned(claims: &Value) -> String {
    use base64ct::{Base64UrlUnpadded, Encoding};
    let h = Base64UrlUnpadded::encode_string(br#"{"alg":"none","typ":"JWT"}"#);
    let c = Base64UrlUnpadded::encode_string(claims.to_string().as_bytes());
    format!("{h}.{c}.")
}

/// `token` with a mode-0600 file of its own in `dir`, for `BEARER_TOKEN_FILE`.
pub fn token_file(dir: &std::path::Path, name: &str, token: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// The `serve` / `xcache` flags that secure a test server: TLS required at
/// login with the PKI's host certificate, `ztn` only, tokens of `iss` for
/// [`AUDIENCE`].
pub fn secured_args(pki: &crate::pki::TestPki, iss: &TestIssuer) -> Vec<String> {
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    [
        "--tls-cert".to_string(),
        path(&pki.host_cert),
        "--tls-key".into(),
        path(&pki.host_key),
        "--tls".into(),
        "login".into(),
        "--auth".into(),
        "ztn".into(),
        "--token-issuer".into(),
        iss.arg(),
        "--token-audience".into(),
        AUDIENCE.into(),
    ]
    .into()
}

/// Sets up `cmd`'s environment as a stock client's (or a program that
/// runs one): trust `ca_dir`, present the token in the file `token`, no
/// `BEARER_TOKEN` and no proxy certificate.
pub fn token_env<'a>(
    cmd: &'a mut std::process::Command,
    ca_dir: &std::path::Path,
    token: &std::path::Path,
) -> &'a mut std::process::Command {
    cmd.env("X509_CERT_DIR", ca_dir)
        .env("BEARER_TOKEN_FILE", token)
        .env_remove("BEARER_TOKEN")
        .env_remove("X509_USER_PROXY")
}

/// A finished command's stdout and stderr, for assertion messages.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether the stock SciTokens plugin and `scitokens-verify` are
/// installed. When they are not: panics under `CI=true`, else prints
/// "skipping: ..." and returns `false`.
pub fn scitokens_available() -> bool {
    let plugin = Path::new(crate::probes::SCITOKENS_PLUGIN).exists();
    let verify = std::process::Command::new("scitokens-verify")
        .arg("-h")
        .output()
        .is_ok();
    if plugin && verify {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but xrootd-scitokens-plugins / scitokens-cpp are not installed");
    }
    eprintln!("skipping: xrootd-scitokens-plugins or scitokens-cpp not installed");
    false
}

fn run_ok(cmd: &mut std::process::Command) {
    let o = cmd.output().expect("run");
    assert!(o.status.success(), "{cmd:?}: {}", output_text(&o));
}

/// The stock xrootd on `data` over TLS (the PKI's host certificate) with
/// `ztn` only and the SciTokens plugin authorizing every request
/// (`sec.protocol ztn`, `sec.protbind * only ztn`, `ofs.authlib
/// libXrdAccSciTokens`, `ofs.authorize 1`), trusting tokens of `issuer`
/// for [`AUDIENCE`] over `/`, signed by the P-256 key whose public PEM is
/// `public_pem` (`kid`). scitokens-cpp's key cache is filled offline
/// (SECURITY.md): `scitokens-verify --cred` checks `token`, one of the
/// issuer's, and so stores the key in `data/.cache`, whose refresh times
/// are then pushed past the test. `None` when the stock xrootd is missing
/// outside CI (see [`crate::stock::StockServer::start`]).
///
/// Sets `XDG_CACHE_HOME` in this process's environment, which the server
/// inherits.
pub fn stock_ztn_server(
    data: &Path,
    pki: &crate::pki::TestPki,
    issuer: &str,
    public_pem: &Path,
    kid: &str,
    token: &str,
) -> Option<crate::stock::StockServer> {
    let plugin = crate::probes::SCITOKENS_PLUGIN;
    // run_unprivileged chowns the data dir, and so this cache, to the
    // server's user
    let cache = data.join(".cache");
    std::fs::create_dir_all(&cache).unwrap();
    run_ok(
        std::process::Command::new("scitokens-verify")
            .env("XDG_CACHE_HOME", &cache)
            .args(["--cred"])
            .arg(public_pem)
            .args(["--issuer", issuer, "--keyid", kid])
            .arg(token),
    );
    let db = cache.join("scitokens/scitokens_cpp.sqllite");
    run_ok(std::process::Command::new("sqlite3").arg(&db).arg(
        "update keycache set keys = json_set(keys, '$.expires', 4102444800, \
         '$.next_update', 4102444800)",
    ));
    let cfg = data.join("scitokens.cfg");
    std::fs::write(
        &cfg,
        format!(
            "[Global]\naudience = {AUDIENCE}\n\n[Issuer test]\nissuer = {issuer}\nbase_path = /\n"
        ),
    )
    .unwrap();
    let key = crate::pki::TestPki::stock_server_key(&pki.host_key);
    let lines = [
        format!("xrd.tls {} {}", pki.host_cert.display(), key.display()),
        format!("xrd.tlsca certdir {}", pki.ca_dir.display()),
        "xrootd.tls capable all".to_string(),
        "xrootd.seclib libXrdSec.so".to_string(),
        format!("sec.protocol ztn -tokenlib {plugin}"),
        "sec.protbind * only ztn".to_string(),
        format!("ofs.authlib {plugin} config={}", cfg.display()),
        "ofs.authorize 1".to_string(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    std::env::set_var("XDG_CACHE_HOME", &cache);
    crate::stock::StockServer::start(data, &lines)
}
