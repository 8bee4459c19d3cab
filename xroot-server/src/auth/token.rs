//! Validation of WLCG / SciTokens bearer tokens (JWTs, RFC 7519) as the
//! `ztn` protocol's server side needs it, following the WLCG Common JWT
//! Profiles v1.0 and what the stock server's SciTokens plugin checks
//! (SECURITY.md):
//!
//! - the signature, with **RS256 or ES256 only** (`alg: none`, the HMAC
//!   family and anything else are refused before a key is looked at);
//! - `iss` is a configured issuer, and the key (by `kid`, or the issuer's
//!   only key of the right type when the token names none) is one of that
//!   issuer's ([`crate::auth::jwks`]);
//! - `exp` is present and not past, `nbf` (if present) not in the future,
//!   `iat` (if present) not in the future, each with [`TokenConfig::leeway`];
//! - when audiences are configured, `aud` (a string or a list) names one of
//!   them or the WLCG "any" audience [`WLCG_ANY_AUDIENCE`] (profile §3.2);
//!   without configured audiences `aud` is not checked.
//!
//! A valid token gives a [`ValidToken`]: the user name (the `sub` claim, or
//! [`TokenConfig::name_claim`]) and the scopes of its `scope` claim. A
//! token without a `scope` claim is valid but allows nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64ct::{Base64UrlUnpadded, Encoding};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use crate::auth::jwks::{IssuerConfig, KeyError, KeyStore};
use crate::auth::scope::Scope;

/// The audience a WLCG token uses to mean "any relying party" (WLCG
/// Common JWT Profiles §3.2), accepted wherever audiences are checked.
pub const WLCG_ANY_AUDIENCE: &str = "https://wlcg.cern.ch/jwt/v1/any";

/// What the validator trusts.
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// The trusted issuers and their keys.
    pub issuers: Vec<IssuerConfig>,
    /// Accepted audiences; empty: `aud` is not checked.
    pub audiences: Vec<String>,
    /// The claim naming the user (`sub` by default); a token without it is
    /// named `anon`, as the stock server names it.
    pub name_claim: String,
    /// Clock skew allowed on `exp`, `nbf` and `iat`: none by default, as
    /// the stock server's SciTokens library (scitokens-cpp verifies with
    /// jwt-cpp's default of no leeway): a token is refused from the second
    /// after its `exp`. A site whose clocks drift sets a few seconds here
    /// (`serve --token-leeway SECS`).
    pub leeway: Duration,
    /// CA certificates (PEM files in a directory) trusted for key fetches;
    /// `None` for the webpki (Mozilla) roots. [`TokenConfig::new`] takes it
    /// from `X509_CERT_DIR`.
    pub ca_dir: Option<PathBuf>,
}

impl TokenConfig {
    /// A configuration for these issuers: no audience check, `sub` as the
    /// name, no leeway, fetches trusting `$X509_CERT_DIR` when it is set.
    pub fn new(issuers: Vec<IssuerConfig>) -> TokenConfig {
        TokenConfig {
            issuers,
            audiences: Vec::new(),
            name_claim: "sub".into(),
            leeway: Duration::ZERO,
            ca_dir: std::env::var_os("X509_CERT_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// Why a token was refused. The texts go to the client in the `kXR_auth`
/// error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts with JSON header and claims.
    #[error("token malformed: {0}")]
    Malformed(String),
    /// The header's `alg` is not RS256 or ES256 (`none`, `HS256`, …).
    #[error("token algorithm {0:?} refused (RS256 and ES256 only)")]
    Algorithm(String),
    /// `iss` is not a configured issuer.
    #[error("token issuer {0:?} is not trusted")]
    UntrustedIssuer(String),
    /// The issuer's keys have not been fetched (yet).
    #[error("no keys for token issuer {issuer:?} yet{}", why.as_deref().map(|w| format!(": {w}")).unwrap_or_default())]
    NoKeys {
        /// The issuer.
        issuer: String,
        /// The last fetch error.
        why: Option<String>,
    },
    /// No key of the issuer matches the token's `kid` (or, without one,
    /// its algorithm).
    #[error("token key {kid:?} unknown for issuer {issuer:?}")]
    UnknownKey {
        /// The issuer.
        issuer: String,
        /// The token's `kid`, if any.
        kid: Option<String>,
    },
    /// The signature does not verify (or the key does not suit `alg`).
    #[error("token signature invalid")]
    Signature,
    /// `exp` is past.
    #[error("token expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("token not yet valid")]
    NotYetValid,
    /// `iat` is in the future.
    #[error("token issued in the future")]
    IssuedInFuture,
    /// `aud` names none of the accepted audiences.
    #[error("token audience not accepted")]
    Audience,
    /// A required claim (`exp`, `iss`, or `aud` when audiences are
    /// configured) is missing.
    #[error("token claim {0:?} missing")]
    MissingClaim(String),
    /// A claim has the wrong type.
    #[error("token claim malformed: {0}")]
    Claim(String),
}

/// A token that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    /// `iss`.
    pub issuer: String,
    /// The user name: the configured name claim, else `anon`.
    pub name: String,
    /// What its `scope` claim allows (empty without one).
    pub scopes: Vec<Scope>,
    /// `exp`, seconds since the epoch.
    pub expires: u64,
}

/// Validates tokens against configured issuers (see the module doc).
/// Validation never blocks: keys come from the cache of a [`KeyStore`].
#[derive(Debug, Clone)]
pub struct TokenValidator {
    config: Arc<TokenConfig>,
    keys: Arc<KeyStore>,
}

impl TokenValidator {
    /// Loads the issuers' keys ([`KeyStore::new`]: **blocks** for the first
    /// fetches; call it before serving or from `spawn_blocking`).
    ///
    /// Errors: as [`KeyStore::new`]; [`KeyError::Config`] without issuers.
    pub fn new(config: TokenConfig) -> Result<TokenValidator, KeyError> {
        if config.issuers.is_empty() {
            return Err(KeyError::Config("no token issuer configured".into()));
        }
        let keys = KeyStore::new(config.issuers.clone(), config.ca_dir.as_deref())?;
        Ok(TokenValidator {
            config: Arc::new(config),
            keys: Arc::new(keys),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TokenConfig {
        &self.config
    }

    /// Checks `token` (see the module doc). Errors: every [`TokenError`].
    pub fn validate(&self, token: &str) -> Result<ValidToken, TokenError> {
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, _signature] = parts[..] else {
            return Err(TokenError::Malformed(
                "not three dot-separated parts".into(),
            ));
        };
        let header = json_part(header, "header")?;
        let alg = match header.get("alg").and_then(Value::as_str) {
            Some("RS256") => Algorithm::RS256,
            Some("ES256") => Algorithm::ES256,
            Some(other) => return Err(TokenError::Algorithm(other.to_string())),
            None => return Err(TokenError::Malformed("header without alg".into())),
        };
        let kid = header.get("kid").and_then(Value::as_str);
        // The issuer picks the keys; the signature is checked before any
        // other claim is believed.
        let unverified = json_part(payload, "claims")?;
        let issuer = match unverified.get("iss") {
            Some(Value::String(iss)) => iss.clone(),
            Some(_) => return Err(TokenError::Claim("iss is not a string".into())),
            None => return Err(TokenError::MissingClaim("iss".into())),
        };
        if !self.keys.knows(&issuer) {
            return Err(TokenError::UntrustedIssuer(issuer));
        }
        let (set, why) = self.keys.keys(&issuer);
        let Some(set) = set else {
            return Err(TokenError::NoKeys { issuer, why });
        };
        let Some(jwk) = pick_key(&set.keys, kid, alg) else {
            if kid.is_some() {
                self.keys.request_refresh(&issuer);
            }
            return Err(TokenError::UnknownKey {
                issuer,
                kid: kid.map(str::to_string),
            });
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|_| TokenError::UnknownKey {
            issuer: issuer.clone(),
            kid: kid.map(str::to_string),
        })?;

        let mut v = Validation::new(alg);
        v.leeway = self.config.leeway.as_secs();
        v.validate_exp = true;
        v.validate_nbf = true;
        v.set_issuer(&[&issuer]);
        if self.config.audiences.is_empty() {
            v.validate_aud = false;
            v.set_required_spec_claims(&["exp", "iss"]);
        } else {
            let mut auds = self.config.audiences.clone();
            auds.push(WLCG_ANY_AUDIENCE.into());
            v.set_audience(&auds);
            v.set_required_spec_claims(&["exp", "iss", "aud"]);
        }
        let claims = jsonwebtoken::decode::<Value>(token, &key, &v)
            .map_err(map_error)?
            .claims;

        let now = jsonwebtoken::get_current_timestamp();
        if let Some(iat) = claims.get("iat") {
            let iat = iat
                .as_f64()
                .ok_or_else(|| TokenError::Claim("iat is not a number".into()))?;
            if iat > (now + self.config.leeway.as_secs()) as f64 {
                return Err(TokenError::IssuedInFuture);
            }
        }
        let expires = claims.get("exp").and_then(Value::as_f64).unwrap_or(0.0) as u64;
        let name = match claims.get(&self.config.name_claim) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => "anon".to_string(),
        };
        let scopes = match claims.get("scope") {
            Some(Value::String(s)) => Scope::parse_claim(s),
            None => Vec::new(),
            Some(_) => return Err(TokenError::Claim("scope is not a string".into())),
        };
        Ok(ValidToken {
            issuer,
            name,
            scopes,
            expires,
        })
    }
}

/// A base64url JSON object part of a token.
fn json_part(part: &str, what: &str) -> Result<Value, TokenError> {
    let bytes = Base64UrlUnpadded::decode_vec(part.trim_end_matches('='))
        .map_err(|_| TokenError::Malformed(format!("{what} is not base64url")))?;
    match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(TokenError::Malformed(format!(
            "{what} is not a JSON object"
        ))),
    }
}

/// The key a token names, or without a `kid` the only key that suits
/// `alg`.
fn pick_key<'a>(keys: &'a [Jwk], kid: Option<&str>, alg: Algorithm) -> Option<&'a Jwk> {
    let suits = |k: &&Jwk| {
        matches!(
            (&k.algorithm, alg),
            (AlgorithmParameters::RSA(_), Algorithm::RS256)
                | (AlgorithmParameters::EllipticCurve(_), Algorithm::ES256)
        )
    };
    match kid {
        Some(kid) => keys
            .iter()
            .find(|k| k.common.key_id.as_deref() == Some(kid))
            .filter(suits),
        None => {
            let mut fit = keys.iter().filter(suits);
            match (fit.next(), fit.next()) {
                (Some(k), None) => Some(k),
                _ => None,
            }
        }
    }
}

fn map_error(e: jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.into_kind() {
        K::InvalidSignature | K::InvalidAlgorithm | K::InvalidEcdsaKey | K::InvalidRsaKey(_) => {
            TokenError::Signature
        }
        K::ExpiredSignature => TokenError::Expired,
        K::ImmatureSignature => TokenError::NotYetValid,
        K::InvalidAudience => TokenError::Audience,
        K::InvalidIssuer => TokenError::UntrustedIssuer("(mismatch)".into()),
        K::MissingRequiredClaim(c) => TokenError::MissingClaim(c),
        K::InvalidClaimFormat(c) => TokenError::Claim(c),
        other => TokenError::Malformed(format!("{other:?}")),
    }
}
