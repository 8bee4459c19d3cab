//! A throw-away token issuer for `ztn` tests: an ES256 (P-256) and an
//! RS256 (2048-bit) key made with the `openssl` command, their public
//! halves in a JWKS file, and tokens minted with jsonwebtoken.

use std::path::{Path, PathBuf};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

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
    ec: EncodingKey,
    rsa: EncodingKey,
}

/// `openssl` with `args` (absolute paths) in the current directory.
fn openssl(args: &[&str]) {
    crate::pki::openssl(args, Path::new("."));
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

impl TestIssuer {
    /// Fresh keys for `issuer`.
    pub fn new(issuer: &str) -> TestIssuer {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (ec_pem, ec_pub, rsa_pem) = (d.join("ec.pem"), d.join("ec.pub"), d.join("rsa.pem"));
        let s = |p: &PathBuf| p.to_str().unwrap().to_string();
        openssl(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            &s(&ec_pem),
        ]);
        openssl(&["pkey", "-in", &s(&ec_pem), "-pubout", "-out", &s(&ec_pub)]);
        openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            &s(&rsa_pem),
        ]);
        let ec = EncodingKey::from_ec_pem(&std::fs::read(&ec_pem).unwrap()).unwrap();
        let rsa = EncodingKey::from_rsa_pem(&std::fs::read(&rsa_pem).unwrap()).unwrap();
        let jwks = d.join("jwks.json");
        let issuer = TestIssuer {
            jwks,
            ec_pem,
            ec_pub,
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
        let mut ec = Jwk::from_encoding_key(&self.ec, Algorithm::ES256).unwrap();
        ec.common.key_id = Some("ec1".into());
        let mut rsa = Jwk::from_encoding_key(&self.rsa, Algorithm::RS256).unwrap();
        rsa.common.key_id = Some("rsa1".into());
        serde_json::to_string(&JwkSet {
            keys: vec![ec, rsa],
        })
        .unwrap()
    }

    /// The `ISSUER=JWKS_FILE` argument of `--token-issuer`.
    pub fn arg(&self) -> String {
        format!("{}={}", self.issuer, self.jwks.display())
    }

    /// WLCG-profile claims: this issuer, `sub` `alice`, [`AUDIENCE`],
    /// `scope`, issued now, valid for 10 minutes.
    pub fn claims(&self, scope: &str) -> Value {
        let now = now();
        json!({
            "wlcg.ver": "1.0",
            "iss": self.issuer,
            "sub": "alice",
            "aud": AUDIENCE,
            "scope": scope,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "jti": format!("t{now}"),
        })
    }

    /// `claims` signed with ES256 (kid `ec1`).
    pub fn es256(&self, claims: &Value) -> String {
        self.sign(Algorithm::ES256, Some("ec1"), claims)
    }

    /// `claims` signed with RS256 (kid `rsa1`).
    pub fn rs256(&self, claims: &Value) -> String {
        self.sign(Algorithm::RS256, Some("rsa1"), claims)
    }

    /// `claims` signed with `alg` and this issuer's key of that family,
    /// naming `kid`.
    pub fn sign(&self, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let mut h = Header::new(alg);
        h.kid = kid.map(str::to_string);
        h.typ = Some("JWT".into());
        let key = match alg {
            Algorithm::ES256 => &self.ec,
            _ => &self.rsa,
        };
        jsonwebtoken::encode(&h, claims, key).unwrap()
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
