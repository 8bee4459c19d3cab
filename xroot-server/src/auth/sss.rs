//! The `sss` protocol on the server (XrdSecProtocolsss): the client's
//! credential is opened with a key of the server's keytab
//! ([`xroot_sec::sss`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::sss::{self, Keytab, KeytabError, Params};

use super::authenticate::{wrong_protocol, AuthContext, AuthOutcome, Authenticator};
use super::identity::Identity;

/// The `sss` protocol: offers `&P=sss,0.+<lifetime>:` at login, as the
/// stock server does (Blowfish, a version 2 server, 13 s by default), and
/// accepts a credential that a key of its keytab opens, that is fresh and
/// that names the client's address (unless the key's name ends in `+`).
///
/// The identity is `sss` with the key's user and group; for user
/// `anybody` (or `allusers`) the name the credential carries (`nobody`
/// without one), for group `anygroup` the group it carries, none for
/// `usrgroup`. A refusal carries the stock server's message ("Decryption
/// key not found.", "Unable to decrypt credentials.", "Credentials expired
/// (check for clock skew).", "IP address mismatch."...).
///
/// A keytab read from a file is read again when it has changed, checked at
/// most once per refresh interval (an hour by default, as the stock
/// server's `-r 60`); a new version that cannot be used is logged and the
/// keys in use are kept.
#[derive(Debug, Clone)]
pub struct SssAuth {
    keytab: Arc<Mutex<Loaded>>,
    params: Params,
    refresh: Duration,
}

/// The keys in use and where they came from.
#[derive(Debug)]
struct Loaded {
    keytab: Arc<Keytab>,
    /// The file, its modification time when read, and when it was checked.
    source: Option<(PathBuf, Option<SystemTime>, Instant)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl SssAuth {
    /// With these keys and the stock parameters (credentials fresh for 13 s).
    pub fn new(keytab: Keytab) -> SssAuth {
        SssAuth {
            keytab: Arc::new(Mutex::new(Loaded {
                keytab: Arc::new(keytab),
                source: None,
            })),
            params: Params::default(),
            refresh: Duration::from_secs(3600),
        }
    }

    /// Reads the keytab at `path` (see [`Keytab::load`]: it must not be
    /// readable by group or others; expired keys are dropped).
    ///
    /// Errors: [`KeytabError`] naming the file.
    pub fn load(path: &Path) -> Result<SssAuth, KeytabError> {
        let mtime = modified(path);
        let auth = SssAuth::new(Keytab::load(path, SystemTime::now())?);
        auth.keytab.lock().unwrap().source = Some((path.to_path_buf(), mtime, Instant::now()));
        Ok(auth)
    }

    /// How often a keytab read from a file is checked for changes (an
    /// hour by default; the stock server's `-r` gives minutes, at least 10).
    pub fn refresh(mut self, every: Duration) -> SssAuth {
        self.refresh = every;
        self
    }

    /// How long a credential stays fresh after the client made it, seconds
    /// (the stock server's `-l` option gives minutes; 13 s by default).
    /// At least 1.
    pub fn lifetime(mut self, seconds: u32) -> SssAuth {
        self.params.lifetime = seconds.max(1);
        self
    }

    /// The keys it accepts now (the keytab read again first if its file
    /// changed and the refresh interval has passed).
    pub fn keytab(&self) -> Arc<Keytab> {
        let mut loaded = self.keytab.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((path, mtime, checked)) = &mut loaded.source {
            if checked.elapsed() >= self.refresh {
                *checked = Instant::now();
                let now = modified(path);
                if now != *mtime {
                    match Keytab::load(path, SystemTime::now()) {
                        Ok(kt) => {
                            *mtime = now;
                            tracing::info!(path = %path.display(), keys = kt.keys().len(), "sss keytab read again");
                            loaded.keytab = Arc::new(kt);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "sss keytab changed but cannot be used; keeping the keys in use")
                        }
                    }
                }
            }
        }
        loaded.keytab.clone()
    }
}

impl Authenticator for SssAuth {
    fn protocols(&self) -> Vec<SecProtocol> {
        vec![SecProtocol {
            name: Bytes::from_static(b"sss"),
            params: Bytes::from(self.params.encode()),
        }]
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        if credtype != "sss" {
            return wrong_protocol("sss", credtype);
        }
        match sss::open(
            &self.keytab(),
            cred,
            ctx.peer,
            self.params.lifetime,
            SystemTime::now(),
        ) {
            Ok(opened) => AuthOutcome::Accepted(Identity {
                group: opened.group,
                ..Identity::new("sss", opened.user)
            }),
            Err(e) => {
                tracing::info!(peer = %ctx.peer, error = ?e, "sss credential refused");
                AuthOutcome::Refused(e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xroot_sec::sss::{address_item, seal, Entity, Key};

    fn ctx() -> AuthContext<'static> {
        AuthContext {
            peer: "127.0.0.1:4000".parse().unwrap(),
            login_user: "alice",
            tls: false,
        }
    }

    #[test]
    fn offers_the_stock_parameters_and_opens_credentials() {
        let key = Key::new(42, "k", "anybody", "users", b"0123456789abcdef");
        let auth = SssAuth::new(Keytab::from_keys(vec![key.clone()]));
        let p = &auth.protocols()[0];
        assert_eq!((&p.name[..], &p.params[..]), (&b"sss"[..], &b"0.+13:"[..]));
        assert_eq!(
            &auth.clone().lifetime(60).protocols()[0].params[..],
            b"0.+60:"
        );
        let entity = Entity {
            host: Some(address_item(ctx().peer)),
            name: Some("carol".into()),
            ..Entity::default()
        };
        let cred = seal(&key, &entity, SystemTime::now(), true).unwrap();
        assert_eq!(
            auth.authenticate(&ctx(), "sss", &cred),
            AuthOutcome::Accepted(Identity {
                group: Some("users".into()),
                ..Identity::new("sss", "carol")
            })
        );
        let other = Key::new(42, "k", "anybody", "users", b"not the same key");
        let cred = seal(&other, &entity, SystemTime::now(), true).unwrap();
        assert_eq!(
            auth.authenticate(&ctx(), "sss", &cred),
            AuthOutcome::Refused("Unable to decrypt credentials.".into())
        );
        assert!(matches!(
            auth.authenticate(&ctx(), "unix", b"unix\0bob\0"),
            AuthOutcome::Refused(_)
        ));
    }

    #[test]
    fn reads_a_changed_keytab_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt");
        let write = |text: &str| {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        };
        write("0 n:a N:1 k:01020304");
        let auth = SssAuth::load(&path).unwrap().refresh(Duration::ZERO);
        assert_eq!(auth.keytab().keys()[0].id, 1);
        // a new version with another mtime
        write("0 n:b N:2 k:01020304");
        let later = SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(auth.keytab().keys()[0].id, 2);
        // one that cannot be used: the keys stay
        write("garbage");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later + Duration::from_secs(5))
            .unwrap();
        assert_eq!(auth.keytab().keys()[0].id, 2);
        // not checked before the interval passes
        write("0 n:c N:3 k:01020304");
        let hourly = SssAuth::load(&path).unwrap();
        write("0 n:d N:4 k:01020304");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later + Duration::from_secs(10))
            .unwrap();
        assert_eq!(hourly.keytab().keys()[0].id, 3);
    }
}
