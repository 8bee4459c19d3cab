//! The `sss` protocol on the server (XrdSecProtocolsss): the client's
//! credential is opened with a key of the server's keytab
//! ([`xroot_sec::sss`]).

use std::path::Path;
use std::time::SystemTime;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::sss::{self, Keytab, KeytabError, Params};

use super::{wrong_protocol, AuthContext, AuthOutcome, Authenticator, Identity};

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
#[derive(Debug, Clone)]
pub struct SssAuth {
    keytab: Keytab,
    params: Params,
}

impl SssAuth {
    /// With these keys and the stock parameters (credentials fresh for 13 s).
    pub fn new(keytab: Keytab) -> SssAuth {
        SssAuth {
            keytab,
            params: Params::default(),
        }
    }

    /// Reads the keytab at `path` (see [`Keytab::load`]: it must not be
    /// readable by group or others; expired keys are dropped).
    ///
    /// Errors: [`KeytabError`] naming the file.
    pub fn load(path: &Path) -> Result<SssAuth, KeytabError> {
        Ok(SssAuth::new(Keytab::load(path, SystemTime::now())?))
    }

    /// How long a credential stays fresh after the client made it, seconds
    /// (the stock server's `-l` option gives minutes; 13 s by default).
    /// At least 1.
    pub fn lifetime(mut self, seconds: u32) -> SssAuth {
        self.params.lifetime = seconds.max(1);
        self
    }

    /// The keys it accepts.
    pub fn keytab(&self) -> &Keytab {
        &self.keytab
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
            &self.keytab,
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
}
