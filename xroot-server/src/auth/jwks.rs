//! The signing keys of token issuers: a JWKS (RFC 7517 key set) per issuer,
//! read from a file or fetched over HTTPS, cached with an expiry and
//! refreshed in the background.
//!
//! A remote key set is found as OpenID Connect Discovery (§4) and the WLCG
//! Common JWT Profiles (§4.1) say: `GET <issuer>/.well-known/openid-configuration`,
//! its `jwks_uri`, `GET` that — or the `jwks_uri` is given directly. Fetches
//! use ureq over rustls (*ring*), HTTPS only, each bounded by
//! [`FETCH_TIMEOUT`]. Trust: the CA certificates (PEM) of the directory
//! [`KeyStore::new`] is given — the grid convention is `X509_CERT_DIR`,
//! which [`crate::auth::token::TokenConfig::new`] reads — or, without one, the
//! Mozilla roots of `webpki-roots`.
//!
//! **Never on a link task.** `Authenticator::authenticate` is synchronous
//! and runs on the link's task, so it only ever reads the cache. The first
//! fetch happens in [`KeyStore::new`] (a blocking call made once, before
//! serving); after that one background thread refreshes each remote key
//! set when its cache expires — after `Cache-Control: max-age` seconds
//! (clamped to [`MIN_CACHE`]..=[`MAX_CACHE`]) or [`DEFAULT_CACHE`] — and
//! early, at most once per [`MIN_CACHE`], when a token names a key id the
//! cache does not have (a rotated key). A failed fetch keeps the keys
//! already cached and is retried after [`RETRY`]. Key files are read once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};

/// How long one HTTPS fetch (discovery document or key set) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a fetched key set is kept without a `Cache-Control: max-age`.
pub const DEFAULT_CACHE: Duration = Duration::from_secs(600);
/// The shortest cache time, and the least time between two fetches of one
/// issuer's keys.
pub const MIN_CACHE: Duration = Duration::from_secs(60);
/// The longest cache time, whatever `max-age` says.
pub const MAX_CACHE: Duration = Duration::from_secs(86_400);
/// How soon a failed fetch is tried again.
pub const RETRY: Duration = Duration::from_secs(30);
/// The largest discovery document or key set read, in bytes.
const MAX_BODY: u64 = 1 << 20;

/// Where an issuer's keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A JWKS file (`{"keys": [...]}`), read once.
    File(PathBuf),
    /// A JWKS URL (an `https://` `jwks_uri`), fetched and refreshed.
    Url(String),
    /// `<issuer>/.well-known/openid-configuration` → `jwks_uri`, fetched
    /// and refreshed.
    Discover,
}

/// One trusted issuer: its `iss` value and where its keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerConfig {
    /// The exact `iss` claim of its tokens (e.g. `https://cilogon.org/x`).
    pub issuer: String,
    /// Its key set.
    pub keys: KeySource,
}

impl FromStr for IssuerConfig {
    type Err = KeyError;

    /// `ISSUER` (keys by discovery), `ISSUER=https://…` (a JWKS URL) or
    /// `ISSUER=PATH` (a JWKS file) — the `--token-issuer` syntax. The split
    /// is at the first `=`.
    ///
    /// Errors: [`KeyError::Config`] for an empty issuer or key source.
    fn from_str(s: &str) -> Result<IssuerConfig, KeyError> {
        let (issuer, keys) = match s.split_once('=') {
            Some((_, "")) => return Err(KeyError::Config(format!("{s:?}: no key source"))),
            Some((i, k)) if k.starts_with("https://") || k.starts_with("http://") => {
                (i, KeySource::Url(k.to_string()))
            }
            Some((i, k)) => (i, KeySource::File(PathBuf::from(k))),
            None => (s, KeySource::Discover),
        };
        if issuer.is_empty() {
            return Err(KeyError::Config(format!("{s:?}: no issuer")));
        }
        Ok(IssuerConfig {
            issuer: issuer.to_string(),
            keys,
        })
    }
}

/// Why keys could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A configuration that makes no sense.
    #[error("token issuer configuration: {0}")]
    Config(String),
    /// A key file could not be read.
    #[error("JWKS file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A key set or discovery document is not what it should be.
    #[error("{origin}: {why}")]
    Parse {
        /// The file or URL.
        origin: String,
        /// What is wrong.
        why: String,
    },
    /// An HTTPS fetch failed (connection, TLS, status, size, timeout).
    #[error("fetching {url}: {why}")]
    Fetch {
        /// The URL.
        url: String,
        /// What failed.
        why: String,
    },
    /// The CA directory could not be read.
    #[error("CA directory {path}: {source}")]
    CaDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

/// What one issuer's cache holds.
#[derive(Debug, Default)]
struct Cached {
    keys: Option<Arc<JwkSet>>,
    /// When to fetch again (remote sources only).
    refresh_at: Option<Instant>,
    /// The last fetch attempt, to rate-limit early refreshes.
    last_attempt: Option<Instant>,
    last_error: Option<String>,
}

#[derive(Debug)]
struct Issuer {
    config: IssuerConfig,
    cached: RwLock<Cached>,
}

/// The state the refresher thread shares with the store.
#[derive(Debug, Default)]
struct Wake {
    /// Issuers whose keys lack a key id a token named.
    kicked: Vec<String>,
    stop: bool,
}

#[derive(Debug)]
struct Inner {
    issuers: HashMap<String, Issuer>,
    agent: ureq::Agent,
    wake: Mutex<Wake>,
    cond: Condvar,
}

/// The key sets of every configured issuer (see the module doc). Dropping
/// it stops the refresher thread.
#[derive(Debug)]
pub struct KeyStore {
    inner: Arc<Inner>,
}

impl Drop for KeyStore {
    fn drop(&mut self) {
        self.inner.wake.lock().unwrap().stop = true;
        self.inner.cond.notify_all();
    }
}

impl KeyStore {
    /// Reads every key file and fetches every remote key set once
    /// (**blocking**: call it before serving, or from
    /// `tokio::task::spawn_blocking`), then starts the refresher thread if
    /// any source is remote. `ca_dir`: the PEM CA certificates trusted for
    /// fetches (every file in it that parses), `None` for the webpki roots.
    ///
    /// A remote key set that cannot be fetched now is logged and retried in
    /// the background; its issuer's tokens are refused until it is had.
    ///
    /// Errors: [`KeyError::Config`] for an issuer configured twice,
    /// [`KeyError::Read`] / [`KeyError::Parse`] for a key file,
    /// [`KeyError::CaDir`] for an unreadable CA directory.
    pub fn new(issuers: Vec<IssuerConfig>, ca_dir: Option<&Path>) -> Result<KeyStore, KeyError> {
        let agent = agent(ca_dir)?;
        let mut map = HashMap::new();
        for config in issuers {
            let mut cached = Cached::default();
            if let KeySource::File(path) = &config.keys {
                cached.keys = Some(Arc::new(read_jwks_file(path)?));
            }
            let name = config.issuer.clone();
            let issuer = Issuer {
                config,
                cached: RwLock::new(cached),
            };
            if map.insert(name.clone(), issuer).is_some() {
                return Err(KeyError::Config(format!("issuer {name:?} given twice")));
            }
        }
        let inner = Arc::new(Inner {
            issuers: map,
            agent,
            wake: Mutex::default(),
            cond: Condvar::new(),
        });
        let remote: Vec<&Issuer> = inner
            .issuers
            .values()
            .filter(|i| !matches!(i.config.keys, KeySource::File(_)))
            .collect();
        for issuer in &remote {
            inner.refresh(issuer);
        }
        if !remote.is_empty() {
            let weak = Arc::downgrade(&inner);
            std::thread::Builder::new()
                .name("jwks-refresh".into())
                .spawn(move || refresher(weak))
                .map_err(|e| KeyError::Config(format!("cannot start the key refresher: {e}")))?;
        }
        Ok(KeyStore { inner })
    }

    /// Whether `issuer` is configured.
    pub fn knows(&self, issuer: &str) -> bool {
        self.inner.issuers.contains_key(issuer)
    }

    /// The configured issuers.
    pub fn issuers(&self) -> impl Iterator<Item = &str> {
        self.inner.issuers.keys().map(String::as_str)
    }

    /// The cached key set of `issuer` (never blocks on a fetch): `None`
    /// when the issuer is unknown or its keys have not been fetched yet
    /// (then the last fetch error, if any, in the second field).
    pub fn keys(&self, issuer: &str) -> (Option<Arc<JwkSet>>, Option<String>) {
        match self.inner.issuers.get(issuer) {
            Some(i) => {
                let c = i.cached.read().unwrap();
                (c.keys.clone(), c.last_error.clone())
            }
            None => (None, None),
        }
    }

    /// Asks the refresher to fetch `issuer`'s keys early (a token named a
    /// key id they lack); ignored for key files and within [`MIN_CACHE`]
    /// of the last fetch.
    pub fn request_refresh(&self, issuer: &str) {
        let Some(i) = self.inner.issuers.get(issuer) else {
            return;
        };
        if matches!(i.config.keys, KeySource::File(_)) {
            return;
        }
        self.inner
            .wake
            .lock()
            .unwrap()
            .kicked
            .push(issuer.to_string());
        self.inner.cond.notify_all();
    }
}

impl Inner {
    /// Fetches one issuer's keys and updates its cache entry.
    fn refresh(&self, issuer: &Issuer) {
        let now = Instant::now();
        let got = self.fetch(&issuer.config);
        let mut c = issuer.cached.write().unwrap();
        c.last_attempt = Some(now);
        match got {
            Ok((set, ttl)) => {
                tracing::debug!(issuer = %issuer.config.issuer, keys = set.keys.len(), ?ttl, "token keys fetched");
                c.keys = Some(Arc::new(set));
                c.refresh_at = Some(now + ttl);
                c.last_error = None;
            }
            Err(e) => {
                tracing::warn!(issuer = %issuer.config.issuer, error = %e, "token keys not fetched");
                c.refresh_at = Some(now + RETRY);
                c.last_error = Some(e.to_string());
            }
        }
    }

    /// The key set of a remote source and how long to keep it.
    fn fetch(&self, config: &IssuerConfig) -> Result<(JwkSet, Duration), KeyError> {
        let jwks_uri = match &config.keys {
            KeySource::Url(url) => url.clone(),
            KeySource::Discover => {
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    config.issuer.trim_end_matches('/')
                );
                let (body, _) = self.get(&url)?;
                let doc: serde_json::Value =
                    serde_json::from_slice(&body).map_err(|e| KeyError::Parse {
                        origin: url.clone(),
                        why: e.to_string(),
                    })?;
                doc.get("jwks_uri")
                    .and_then(|u| u.as_str())
                    .ok_or_else(|| KeyError::Parse {
                        origin: url,
                        why: "no jwks_uri".into(),
                    })?
                    .to_string()
            }
            KeySource::File(_) => unreachable!("key files are not fetched"),
        };
        let (body, ttl) = self.get(&jwks_uri)?;
        Ok((parse_jwks(&body, &jwks_uri)?, ttl))
    }

    /// One HTTPS GET: the body and its cache time.
    fn get(&self, url: &str) -> Result<(Vec<u8>, Duration), KeyError> {
        let fail = |why: String| KeyError::Fetch {
            url: url.to_string(),
            why,
        };
        let mut resp = self
            .agent
            .get(url)
            .header("Accept", "application/json")
            .call()
            .map_err(|e| fail(e.to_string()))?;
        let ttl = resp
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok())
            .map_or(DEFAULT_CACHE, cache_time);
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| fail(e.to_string()))?;
        Ok((body, ttl))
    }
}

/// The refresher thread: wakes at the earliest refresh time or when
/// kicked, fetches what is due, ends when the store is dropped.
fn refresher(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let now = Instant::now();
        let mut next = now + MAX_CACHE;
        let mut due = Vec::new();
        for issuer in inner.issuers.values() {
            if matches!(issuer.config.keys, KeySource::File(_)) {
                continue;
            }
            let at = issuer.cached.read().unwrap().refresh_at.unwrap_or(now);
            if at <= now {
                due.push(issuer);
            } else {
                next = next.min(at);
            }
        }
        {
            let mut wake = inner.wake.lock().unwrap();
            for name in wake.kicked.drain(..) {
                let Some(issuer) = inner.issuers.get(&name) else {
                    continue;
                };
                let last = issuer.cached.read().unwrap().last_attempt;
                if last.is_none_or(|t| now.duration_since(t) >= MIN_CACHE)
                    && !due.iter().any(|d| std::ptr::eq(*d, issuer))
                {
                    due.push(issuer);
                }
            }
        }
        if !due.is_empty() {
            for issuer in due {
                inner.refresh(issuer);
            }
            continue;
        }
        let wake = inner.wake.lock().unwrap();
        if wake.stop {
            return;
        }
        if wake.kicked.is_empty() {
            let wait = next.saturating_duration_since(Instant::now());
            let cond = &inner.cond;
            let wake = cond
                .wait_timeout_while(wake, wait, |w| !w.stop && w.kicked.is_empty())
                .unwrap()
                .0;
            if wake.stop {
                return;
            }
        }
    }
}

/// The cache time a `Cache-Control` value gives: `max-age` clamped to
/// [`MIN_CACHE`]..=[`MAX_CACHE`], [`MIN_CACHE`] for `no-cache`/`no-store`,
/// else [`DEFAULT_CACHE`].
pub fn cache_time(cache_control: &str) -> Duration {
    let mut ttl = DEFAULT_CACHE;
    for directive in cache_control.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-cache" || lower == "no-store" {
            return MIN_CACHE;
        }
        if let Some(secs) = lower.strip_prefix("max-age=") {
            if let Ok(secs) = secs.trim_matches('"').parse::<u64>() {
                ttl = Duration::from_secs(secs);
            }
        }
    }
    ttl.clamp(MIN_CACHE, MAX_CACHE)
}

/// A JWKS file's key set. Errors: [`KeyError::Read`], [`KeyError::Parse`].
pub fn read_jwks_file(path: &Path) -> Result<JwkSet, KeyError> {
    let body = std::fs::read(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_jwks(&body, &path.display().to_string())
}

/// A key set from JSON, with only its RSA and EC keys (the types RS256
/// and ES256 use); keys that do not parse are dropped one by one rather
/// than failing the whole set.
fn parse_jwks(body: &[u8], origin: &str) -> Result<JwkSet, KeyError> {
    let parse = |why: String| KeyError::Parse {
        origin: origin.to_string(),
        why,
    };
    let doc: serde_json::Value = serde_json::from_slice(body).map_err(|e| parse(e.to_string()))?;
    let Some(keys) = doc.get("keys").and_then(|k| k.as_array()) else {
        return Err(parse("not a key set: no \"keys\" array".into()));
    };
    let keys: Vec<_> = keys
        .iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|k| {
            matches!(
                k.algorithm,
                AlgorithmParameters::RSA(_) | AlgorithmParameters::EllipticCurve(_)
            )
        })
        .collect();
    if keys.is_empty() {
        return Err(parse("no usable key".into()));
    }
    Ok(JwkSet { keys })
}

/// The HTTPS agent: rustls with *ring*, HTTPS only, bounded in time.
fn agent(ca_dir: Option<&Path>) -> Result<ureq::Agent, KeyError> {
    use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
    let roots = match ca_dir {
        None => RootCerts::WebPki,
        Some(dir) => RootCerts::new_with_certs(&ca_certs(dir)?),
    };
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(roots)
        .build();
    Ok(ureq::Agent::config_builder()
        .https_only(true)
        .timeout_global(Some(FETCH_TIMEOUT))
        .max_redirects(3)
        .tls_config(tls)
        .build()
        .new_agent())
}

/// Every certificate of every PEM file in `dir` (the hash links of a grid
/// CA directory included: duplicates are harmless).
fn ca_certs(dir: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, KeyError> {
    let err = |source| KeyError::CaDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut certs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let path = entry.map_err(err)?.path();
        let Ok(pem) = std::fs::read(&path) else {
            continue;
        };
        for item in ureq::tls::parse_pem(&pem).flatten() {
            if let ureq::tls::PemItem::Certificate(c) = item {
                certs.push(c);
            }
        }
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuer_syntax() {
        let i: IssuerConfig = "https://iss.example/a=/etc/jwks.json".parse().unwrap();
        assert_eq!(i.issuer, "https://iss.example/a");
        assert_eq!(i.keys, KeySource::File("/etc/jwks.json".into()));
        let i: IssuerConfig = "https://iss=https://iss/keys".parse().unwrap();
        assert_eq!(i.keys, KeySource::Url("https://iss/keys".into()));
        let i: IssuerConfig = "https://iss".parse().unwrap();
        assert_eq!(i.keys, KeySource::Discover);
        assert!("=x".parse::<IssuerConfig>().is_err());
        assert!("x=".parse::<IssuerConfig>().is_err());
    }

    #[test]
    fn cache_control() {
        assert_eq!(
            cache_time("public, max-age=3600"),
            Duration::from_secs(3600)
        );
        assert_eq!(cache_time("max-age=5"), MIN_CACHE);
        assert_eq!(cache_time("max-age=99999999"), MAX_CACHE);
        assert_eq!(cache_time("no-store"), MIN_CACHE);
        assert_eq!(cache_time("public"), DEFAULT_CACHE);
    }

    #[test]
    fn bad_key_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("k.json");
        std::fs::write(&f, "{\"keys\": [{\"kty\": \"weird\"}]}").unwrap();
        assert!(matches!(read_jwks_file(&f), Err(KeyError::Parse { .. })));
        std::fs::write(&f, "[]").unwrap();
        assert!(matches!(read_jwks_file(&f), Err(KeyError::Parse { .. })));
        assert!(matches!(
            read_jwks_file(&dir.path().join("none")),
            Err(KeyError::Read { .. })
        ));
    }
}
