//! A throw-away token issuer for trying `ztn` (WLCG bearer tokens) with
//! `serve` and `xcache`, or with a stock xrootd and its SciTokens plugin:
//! it makes an issuer (an ES256 key pair and the JWKS file a server trusts)
//! and mints WLCG tokens with the scopes, audience, subject and lifetime
//! asked.
//!
//! ```text
//! cargo run --example xrdtoken -- issuer --dir DIR [--issuer URL] [--kid ID]
//! cargo run --example xrdtoken -- mint --dir DIR --scope "storage.read:/ storage.modify:/x" \
//!     [--aud AUD] [--sub SUB] [--lifetime SECS] [--age SECS]
//! ```
//!
//! `issuer` writes, in DIR (created if missing; an issuer already there is
//! kept and the command fails): `private.pem` (the P-256 key, PKCS#8,
//! mode 0600), `public.pem` (its public half, SubjectPublicKeyInfo, for
//! `scitokens-verify --cred`), `jwks.json` (the public key as a JWK Set,
//! RFC 7517, with its `kid`) and `issuer.json` (the issuer URL and key
//! id, which `mint` reads). It prints the flags that make `serve` trust it:
//! `--token-issuer URL=DIR/jwks.json`.
//!
//! `mint` prints one token (a JWT, RFC 7519, signed ES256 with the key's
//! `kid` in its header) with the claims of the WLCG Common JWT Profiles
//! v1.0: `wlcg.ver` `"1.0"`, `iss`, `sub`, `aud`, `scope`, `iat`, `nbf`,
//! `exp` (seconds since the epoch) and a random `jti`. The default audience
//! is the profile's "any" audience, `https://wlcg.cern.ch/jwt/v1/any`
//! (§3.2), which our server accepts whatever its `--token-audience`; the
//! default subject the user's name (`$USER`), the default lifetime 1200 s
//! (20 minutes). `--age SECS` mints the token as issued SECS seconds ago
//! (its `iat` and `nbf` that far back, its `exp` `--lifetime` after them),
//! to try how an expired token is refused, or a server's `--token-leeway`.
//!
//! Exit codes: 0, 1 after printing `xrdtoken: ERROR` (a directory that
//! cannot be written, an issuer that exists or is missing, a key that
//! cannot be read), 2 for a usage error (clap's).
//!
//! The tests' token issuer (the test kit's `tokens`) signs with this
//! module too.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use base64ct::{Base64, Encoding};
use clap::{Parser, Subcommand};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

/// The WLCG "any" audience (WLCG Common JWT Profiles v1.0 §3.2), `mint`'s
/// default.
pub const ANY_AUDIENCE: &str = "https://wlcg.cern.ch/jwt/v1/any";

/// `issuer`'s default `--issuer`.
pub const DEFAULT_ISSUER: &str = "https://localhost/xrdtoken";

/// `issuer`'s default `--kid`.
pub const DEFAULT_KID: &str = "key1";

/// `mint`'s default `--lifetime`, seconds (20 minutes).
pub const DEFAULT_LIFETIME: u64 = 1200;

/// The private key's file in an issuer's directory (PKCS#8 PEM, 0600).
pub const PRIVATE_PEM: &str = "private.pem";
/// The public key's file (SubjectPublicKeyInfo PEM).
pub const PUBLIC_PEM: &str = "public.pem";
/// The JWK Set file a server trusts (`--token-issuer URL=DIR/jwks.json`).
pub const JWKS_JSON: &str = "jwks.json";
/// The issuer URL and key id (`{"issuer": URL, "kid": ID}`).
pub const ISSUER_JSON: &str = "issuer.json";

/// `xrdtoken issuer ...` or `xrdtoken mint ...`
#[derive(Debug, Parser)]
#[command(
    name = "xrdtoken",
    about = "A throw-away WLCG token issuer: make an ES256 key pair and JWKS, mint tokens"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make an issuer in DIR: an ES256 (P-256) key pair and the JWKS file a
    /// server trusts; prints the `serve` flag that trusts it.
    Issuer {
        /// Where the issuer's files go (created if missing).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// The issuer URL (the tokens' `iss`).
        #[arg(long, value_name = "URL", default_value = DEFAULT_ISSUER)]
        issuer: String,
        /// The key id (the JWK's `kid`, named in each token's header).
        #[arg(long, value_name = "ID", default_value = DEFAULT_KID)]
        kid: String,
    },
    /// Print a WLCG token of the issuer in DIR.
    Mint {
        /// The issuer's directory (made by `xrdtoken issuer`).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// The `scope` claim: space-separated WLCG scopes, such as
        /// "storage.read:/ storage.modify:/x".
        #[arg(long)]
        scope: String,
        /// The `aud` claim.
        #[arg(long, value_name = "AUD", default_value = ANY_AUDIENCE)]
        aud: String,
        /// The `sub` claim (the user's name at the server); `$USER` by
        /// default.
        #[arg(long, value_name = "SUB")]
        sub: Option<String>,
        /// Seconds from `iat` to `exp`.
        #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LIFETIME,
              value_parser = clap::value_parser!(u64).range(1..))]
        lifetime: u64,
        /// Mint the token as issued SECS seconds ago (to try expiry and
        /// `--token-leeway`).
        #[arg(long, value_name = "SECS", default_value_t = 0)]
        age: u64,
    },
}

/// A signing key: its algorithm, its key id and the private key.
pub struct SigningKey {
    /// The JWS algorithm (`ES256` for the keys [`SigningKey::generate`]
    /// makes).
    pub alg: Algorithm,
    /// The key id: the JWK's `kid` and each token header's.
    pub kid: String,
    key: EncodingKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// An ES256 key made by [`SigningKey::generate`]: the key, and its PEM
/// files' text.
#[derive(Debug)]
pub struct Generated {
    /// The key.
    pub key: SigningKey,
    /// The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub private_pem: String,
    /// The public key, SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC
    /// KEY-----`).
    pub public_pem: String,
}

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo (RFC 5480
/// §2: the id-ecPublicKey and prime256v1 OIDs, then a BIT STRING of 66
/// bytes holding the 65-byte uncompressed point).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// `der` as PEM with the `label` (RFC 7468), 64 characters a line.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = Base64::encode_string(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

impl SigningKey {
    /// A fresh ES256 (P-256) key named `kid`, from the system's random
    /// source (ring's `EcdsaKeyPair::generate_pkcs8`).
    ///
    /// Errors: the random source fails (`io::ErrorKind::Other`).
    pub fn generate(kid: &str) -> io::Result<Generated> {
        let rng = SystemRandom::new();
        let fail = |what: &str| io::Error::other(format!("cannot make a P-256 key: {what}"));
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| fail("no random bytes"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| fail("the key made does not parse"))?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        Ok(Generated {
            key: SigningKey {
                alg: Algorithm::ES256,
                kid: kid.to_string(),
                key: EncodingKey::from_ec_der(pkcs8.as_ref()),
            },
            private_pem: pem("PRIVATE KEY", pkcs8.as_ref()),
            public_pem: pem("PUBLIC KEY", &spki),
        })
    }

    /// The private key `pem` (PKCS#8 or, for EC, SEC1) for `alg`: ES256
    /// or RS256, named `kid`.
    ///
    /// Errors (`InvalidInput`): another algorithm, or a PEM that is not
    /// a key of its family.
    pub fn from_pem(alg: Algorithm, kid: &str, pem: &[u8]) -> io::Result<SigningKey> {
        let key = match alg {
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
            Algorithm::RS256 => EncodingKey::from_rsa_pem(pem),
            other => return Err(invalid(format!("{other:?}: ES256 or RS256 only"))),
        }
        .map_err(|e| invalid(format!("not a {alg:?} private key: {e}")))?;
        Ok(SigningKey {
            alg,
            kid: kid.to_string(),
            key,
        })
    }

    /// The public key as a JWK (RFC 7517) with `kid` and `alg`.
    ///
    /// Errors (`InvalidInput`): the key's public half cannot be worked out.
    pub fn jwk(&self) -> io::Result<Jwk> {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg)
            .map_err(|e| invalid(format!("no public key: {e}")))?;
        jwk.common.key_id = Some(self.kid.clone());
        Ok(jwk)
    }

    /// `claims` signed with this key: a compact JWS whose header names
    /// `alg`, `typ` `JWT` and this key's `kid`.
    ///
    /// Errors (`InvalidInput`): the key cannot sign (a key that does not
    /// suit its algorithm).
    pub fn sign(&self, claims: &Value) -> io::Result<String> {
        sign(self.alg, Some(&self.kid), &self.key, claims)
    }

    /// The key itself, to sign with a header of one's own ([`sign`]).
    pub fn encoding_key(&self) -> &EncodingKey {
        &self.key
    }
}

/// `claims` signed with `key` under a header naming `alg`, `typ` `JWT` and
/// `kid` (none when `None`). A key of another family than `alg` fails.
///
/// Errors (`InvalidInput`): jsonwebtoken's, naming it.
pub fn sign(
    alg: Algorithm,
    kid: Option<&str>,
    key: &EncodingKey,
    claims: &Value,
) -> io::Result<String> {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    header.typ = Some("JWT".into());
    jsonwebtoken::encode(&header, claims, key).map_err(|e| invalid(format!("cannot sign: {e}")))
}

/// The JWK Set (RFC 7517 §5) of `keys`' public halves, as JSON.
///
/// Errors: those of [`SigningKey::jwk`].
pub fn jwks_json(keys: &[&SigningKey]) -> io::Result<String> {
    let keys = keys.iter().map(|k| k.jwk()).collect::<io::Result<_>>()?;
    Ok(serde_json::to_string_pretty(&JwkSet { keys }).expect("a JWK Set serializes"))
}

/// What a token says besides its issuer: the claims `mint` sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mint {
    /// The `scope` claim (space-separated scopes).
    pub scope: String,
    /// The `aud` claim.
    pub audience: String,
    /// The `sub` claim.
    pub subject: String,
    /// Seconds from `iat` to `exp`.
    pub lifetime: u64,
    /// Seconds before now the token is issued (`iat`, `nbf`).
    pub age: u64,
}

impl Mint {
    /// A token for `scope`: the "any" audience, `sub` `$USER` (else
    /// `xrdtoken`), the default lifetime, issued now.
    pub fn new(scope: &str) -> Mint {
        Mint {
            scope: scope.to_string(),
            audience: ANY_AUDIENCE.to_string(),
            subject: std::env::var("USER")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "xrdtoken".into()),
            lifetime: DEFAULT_LIFETIME,
            age: 0,
        }
    }

    /// The WLCG profile's claims for issuer `iss` at `now` (seconds since
    /// the epoch): `wlcg.ver` `"1.0"`, `iss`, `sub`, `aud`, `scope`, `iat`
    /// and `nbf` `age` seconds before `now`, `exp` `lifetime` after them,
    /// and `jti`, 16 random bytes in hex.
    pub fn claims(&self, iss: &str, now: u64) -> Value {
        let iat = now.saturating_sub(self.age);
        let mut id = [0u8; 16];
        // a jti only tells tokens apart: the clock will do if the random
        // source fails
        if SystemRandom::new().fill(&mut id).is_err() {
            id[..8].copy_from_slice(&now.to_be_bytes());
        }
        let jti: String = id.iter().map(|b| format!("{b:02x}")).collect();
        json!({
            "wlcg.ver": "1.0",
            "iss": iss,
            "sub": self.subject,
            "aud": self.audience,
            "scope": self.scope,
            "iat": iat,
            "nbf": iat,
            "exp": iat.saturating_add(self.lifetime),
            "jti": jti,
        })
    }
}

/// Seconds since the epoch (0 for a clock before it).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An issuer kept in a directory: its URL, its key, and where its files
/// are.
#[derive(Debug)]
pub struct Issuer {
    /// The issuer URL (`iss`).
    pub issuer: String,
    /// Its signing key (ES256).
    pub key: SigningKey,
    /// The directory holding its files.
    pub dir: PathBuf,
}

impl Issuer {
    /// Makes an issuer `issuer` with a fresh ES256 key `kid` in `dir`
    /// (created if missing): [`PRIVATE_PEM`] (mode 0600), [`PUBLIC_PEM`],
    /// [`JWKS_JSON`], [`ISSUER_JSON`].
    ///
    /// Errors: `AlreadyExists` when `dir` holds an issuer already (its
    /// private key is kept); the directory or a file cannot be written;
    /// those of [`SigningKey::generate`].
    pub fn create(dir: &Path, issuer: &str, kid: &str) -> io::Result<Issuer> {
        use std::os::unix::fs::OpenOptionsExt;
        let at = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
        std::fs::create_dir_all(dir).map_err(|e| at(&dir.display().to_string(), e))?;
        let made = SigningKey::generate(kid)?;
        let private = dir.join(PRIVATE_PEM);
        // create_new: never overwrite a key tokens were signed with
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&private)
            .and_then(|mut f| f.write_all(made.private_pem.as_bytes()))
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => io::Error::new(
                    e.kind(),
                    format!(
                        "{} exists: {} holds an issuer already",
                        private.display(),
                        dir.display()
                    ),
                ),
                _ => at(&private.display().to_string(), e),
            })?;
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| at(&path.display().to_string(), e))
        };
        write(PUBLIC_PEM, &made.public_pem)?;
        write(JWKS_JSON, &format!("{}\n", jwks_json(&[&made.key])?))?;
        let about = json!({ "issuer": issuer, "kid": kid });
        write(ISSUER_JSON, &format!("{about:#}\n"))?;
        Ok(Issuer {
            issuer: issuer.to_string(),
            key: made.key,
            dir: dir.to_path_buf(),
        })
    }

    /// The issuer [`Issuer::create`] made in `dir`.
    ///
    /// Errors: a file missing or unreadable (`NotFound` names
    /// `xrdtoken issuer`), [`ISSUER_JSON`] without `issuer` and `kid`
    /// strings, a private key that is not a P-256 one (`InvalidInput`).
    pub fn open(dir: &Path) -> io::Result<Issuer> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| {
                let hint = match e.kind() {
                    io::ErrorKind::NotFound => " (make one with `xrdtoken issuer --dir DIR`)",
                    _ => "",
                };
                io::Error::new(e.kind(), format!("{}: {e}{hint}", path.display()))
            })
        };
        let about: Value = serde_json::from_slice(&read(ISSUER_JSON)?)
            .map_err(|e| invalid(format!("{}: {e}", dir.join(ISSUER_JSON).display())))?;
        let field = |name: &str| {
            about[name].as_str().map(str::to_string).ok_or_else(|| {
                invalid(format!(
                    "{}: no {name:?} string",
                    dir.join(ISSUER_JSON).display()
                ))
            })
        };
        let (issuer, kid) = (field("issuer")?, field("kid")?);
        let key = SigningKey::from_pem(Algorithm::ES256, &kid, &read(PRIVATE_PEM)?)
            .map_err(|e| invalid(format!("{}: {e}", dir.join(PRIVATE_PEM).display())))?;
        Ok(Issuer {
            issuer,
            key,
            dir: dir.to_path_buf(),
        })
    }

    /// The token `mint` asks for, issued at `now` (seconds since the
    /// epoch) less its age.
    ///
    /// Errors: those of [`SigningKey::sign`].
    pub fn mint_at(&self, mint: &Mint, now: u64) -> io::Result<String> {
        self.key.sign(&mint.claims(&self.issuer, now))
    }

    /// [`Issuer::mint_at`] now.
    ///
    /// Errors: those of [`SigningKey::sign`].
    pub fn mint(&self, mint: &Mint) -> io::Result<String> {
        self.mint_at(mint, now())
    }

    /// Its JWK Set file.
    pub fn jwks(&self) -> PathBuf {
        self.dir.join(JWKS_JSON)
    }

    /// `ISSUER=JWKS_FILE`: the value of `serve --token-issuer` that trusts
    /// it.
    pub fn token_issuer_arg(&self) -> String {
        format!("{}={}", self.issuer, self.jwks().display())
    }
}

/// Runs `cli`, printing to `out`: `issuer` prints the `serve` flags that
/// trust the issuer it made, `mint` the token.
///
/// Errors: those of [`Issuer::create`], [`Issuer::open`] and
/// [`Issuer::mint`], and writing to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> io::Result<()> {
    match &cli.command {
        Command::Issuer { dir, issuer, kid } => {
            let made = Issuer::create(dir, issuer, kid)?;
            writeln!(
                out,
                "issuer {} (ES256 key {}) in {}",
                made.issuer,
                made.key.kid,
                dir.display()
            )?;
            writeln!(
                out,
                "serve flags: --auth ztn --token-issuer {}",
                made.token_issuer_arg()
            )?;
        }
        Command::Mint {
            dir,
            scope,
            aud,
            sub,
            lifetime,
            age,
        } => {
            let issuer = Issuer::open(dir)?;
            let mut mint = Mint::new(scope);
            mint.audience = aud.clone();
            if let Some(sub) = sub {
                mint.subject = sub.clone();
            }
            mint.lifetime = *lifetime;
            mint.age = *age;
            writeln!(out, "{}", issuer.mint(&mint)?)?;
        }
    }
    out.flush()
}

/// The `xrdtoken` example's `main`: exits 0, 1 after printing
/// `xrdtoken: ERROR`, or 2 for a usage error.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match run(&cli, &mut io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xrdtoken: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    fn decode(token: &str, jwks: &str, aud: &str) -> jsonwebtoken::errors::Result<Value> {
        let set: JwkSet = serde_json::from_str(jwks).unwrap();
        let header = jsonwebtoken::decode_header(token)?;
        let jwk = set
            .find(header.kid.as_deref().unwrap())
            .expect("kid in the set");
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&[aud]);
        v.leeway = 0;
        jsonwebtoken::decode::<Value>(token, &DecodingKey::from_jwk(jwk)?, &v).map(|d| d.claims)
    }

    #[test]
    fn an_issuer_s_tokens_verify_with_its_jwks() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("iss");
        let made = Issuer::create(&at, "https://t.example/iss", "k7").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(at.join(PRIVATE_PEM))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let public = std::fs::read_to_string(at.join(PUBLIC_PEM)).unwrap();
        assert!(
            public.starts_with("-----BEGIN PUBLIC KEY-----\n"),
            "{public}"
        );
        // the public PEM is the key the JWKS holds
        assert!(jsonwebtoken::DecodingKey::from_ec_pem(public.as_bytes()).is_ok());

        let issuer = Issuer::open(&at).unwrap();
        assert_eq!(
            (issuer.issuer.as_str(), issuer.key.kid.as_str()),
            ("https://t.example/iss", "k7")
        );
        assert_eq!(made.token_issuer_arg(), issuer.token_issuer_arg());
        let mut mint = Mint::new("storage.read:/ storage.modify:/x");
        mint.audience = "https://aud.example".into();
        mint.subject = "carol".into();
        mint.lifetime = 300;
        let token = issuer.mint_at(&mint, now()).unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(
            (header.alg, header.kid.as_deref()),
            (Algorithm::ES256, Some("k7"))
        );
        let jwks = std::fs::read_to_string(at.join(JWKS_JSON)).unwrap();
        let claims = decode(&token, &jwks, "https://aud.example").unwrap();
        assert_eq!(claims["wlcg.ver"], "1.0");
        assert_eq!(claims["iss"], "https://t.example/iss");
        assert_eq!(claims["sub"], "carol");
        assert_eq!(claims["scope"], "storage.read:/ storage.modify:/x");
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert_eq!((exp - iat, claims["nbf"].as_u64().unwrap()), (300, iat));
        assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
        // another issuer's key does not verify it
        let other =
            Issuer::create(&dir.path().join("other"), "https://t.example/iss", "k7").unwrap();
        let other_jwks = std::fs::read_to_string(other.jwks()).unwrap();
        assert!(decode(&token, &other_jwks, "https://aud.example").is_err());
    }

    #[test]
    fn an_aged_token_is_past_its_lifetime() {
        let mint = Mint {
            lifetime: 600,
            age: 610,
            ..Mint::new("storage.read:/")
        };
        let c = mint.claims("https://i", 10_000);
        assert_eq!(
            (c["iat"].as_u64(), c["exp"].as_u64()),
            (Some(9_390), Some(9_990))
        );
        assert_eq!(c["aud"], ANY_AUDIENCE);
        // two tokens minted alike differ in their jti
        assert_ne!(
            mint.claims("https://i", 1)["jti"],
            mint.claims("https://i", 1)["jti"]
        );
    }

    #[test]
    fn an_issuer_is_not_overwritten_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        Issuer::create(dir.path(), DEFAULT_ISSUER, DEFAULT_KID).unwrap();
        let key = std::fs::read(dir.path().join(PRIVATE_PEM)).unwrap();
        let e = Issuer::create(dir.path(), DEFAULT_ISSUER, DEFAULT_KID).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(e.to_string().contains("holds an issuer already"), "{e}");
        assert_eq!(std::fs::read(dir.path().join(PRIVATE_PEM)).unwrap(), key);
        let empty = tempfile::tempdir().unwrap();
        let e = Issuer::open(empty.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("xrdtoken issuer"), "{e}");
    }

    #[test]
    fn flags_and_their_defaults() {
        let cli = Cli::try_parse_from(["xrdtoken", "issuer", "--dir", "/d"]).unwrap();
        let Command::Issuer { issuer, kid, .. } = cli.command else {
            panic!("not issuer")
        };
        assert_eq!(
            (issuer.as_str(), kid.as_str()),
            (DEFAULT_ISSUER, DEFAULT_KID)
        );
        let cli = Cli::try_parse_from([
            "xrdtoken",
            "mint",
            "--dir",
            "/d",
            "--scope",
            "storage.read:/",
        ])
        .unwrap();
        let Command::Mint {
            aud,
            sub,
            lifetime,
            age,
            ..
        } = cli.command
        else {
            panic!("not mint")
        };
        assert_eq!(
            (aud.as_str(), sub, lifetime, age),
            (ANY_AUDIENCE, None, 1200, 0)
        );
        // a scope is required, a lifetime is positive
        assert!(Cli::try_parse_from(["xrdtoken", "mint", "--dir", "/d"]).is_err());
        assert!(Cli::try_parse_from([
            "xrdtoken",
            "mint",
            "--dir",
            "/d",
            "--scope",
            "s",
            "--lifetime",
            "0"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["xrdtoken"]).is_err());
    }
}
