//! Authentication: what the login reply offers and how a `kXR_auth`
//! credential is checked (PROTOCOL.md §5.2–5.3).
//!
//! Without an [`Authenticator`] the login reply is the bare 16-byte session
//! id and the client is logged in at once; a later `kXR_auth` is refused
//! with `kXR_InvalidRequest`, as the stock server without a security
//! plugin does. With one, the login reply carries the security token
//! `&P=<prot>…` built from [`Authenticator::protocols`], and every request
//! but `kXR_auth`, `kXR_ping`, `kXR_protocol` and the file-handle ones is
//! refused (and the link closed) until [`Authenticator::authenticate`]
//! accepts a credential.
//!
//! Three protocols are built in, as in the reference: [`HostAuth`] (`host`,
//! always accepted), [`UnixAuth`] (`unix`: the user and group the client
//! claims) and [`SssAuth`] (`sss`: a credential sealed with a shared key).
//! [`AnyOf`] offers several.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;

use super::identity::Identity;

/// Who is authenticating.
#[derive(Debug, Clone)]
pub struct AuthContext<'a> {
    /// The client's address.
    pub peer: SocketAddr,
    /// The user name of the `kXR_login` request.
    pub login_user: &'a str,
    /// Whether the link runs TLS (protocols that send secrets in the clear,
    /// `ztn`, refuse a plain link).
    pub tls: bool,
}

/// The result of one `kXR_auth` round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthOutcome {
    /// Authenticated: answered `kXR_ok`.
    Accepted(Identity),
    /// Another round: these parameters go back in `kXR_authmore`.
    More(Bytes),
    /// Refused: answered `kXR_error kXR_AuthFailed` with this message.
    Refused(String),
}

/// What an authenticator keeps for one connection between the rounds of
/// a multi-round protocol (`gsi`): `None` before the first round and after
/// the last.
pub type AuthState = Option<Box<dyn std::any::Any + Send + Sync>>;

/// A security layer: the protocols offered at login and the check of each
/// credential. Calls are synchronous and should be quick (they run on the
/// link's task, between requests).
pub trait Authenticator: Send + Sync + 'static {
    /// The protocols offered in the login reply, preferred first. An empty
    /// list means no authentication.
    fn protocols(&self) -> Vec<SecProtocol>;

    /// Checks one `kXR_auth`: `credtype` is the 4-character protocol id
    /// (without NUL padding), `credentials` the payload.
    fn authenticate(
        &self,
        ctx: &AuthContext<'_>,
        credtype: &str,
        credentials: &[u8],
    ) -> AuthOutcome;

    /// Whether every protocol offered refuses a link without TLS (`ztn`
    /// sends a bearer token, which the stock client sends over TLS only).
    /// A server whose authenticator says so, with TLS at `capable`,
    /// requires TLS from login on instead (see
    /// [`TlsRequirement::Login`](crate::TlsRequirement::Login)), so that a
    /// client on a plain `root://` URL switches before it logs in and can
    /// authenticate. `false` by default.
    fn requires_tls(&self) -> bool {
        false
    }

    /// [`Authenticator::authenticate`] for a protocol that needs more than
    /// one round: `state` is the connection's, kept by the server between
    /// the rounds of one login. By default, the stateless check.
    fn authenticate_round(
        &self,
        ctx: &AuthContext<'_>,
        credtype: &str,
        credentials: &[u8],
        state: &mut AuthState,
    ) -> AuthOutcome {
        let _ = state;
        self.authenticate(ctx, credtype, credentials)
    }
}

fn protocol(name: &'static str) -> SecProtocol {
    SecProtocol {
        name: Bytes::from_static(name.as_bytes()),
        params: Bytes::new(),
    }
}

pub(super) fn wrong_protocol(want: &str, got: &str) -> AuthOutcome {
    AuthOutcome::Refused(format!(
        "Authentication protocol {got:?} is not supported; use {want}."
    ))
}

/// The `host` protocol: any client that names it is accepted, under the
/// user name of its login (XrdSecProtocolhost).
#[derive(Debug, Clone, Copy, Default)]
pub struct HostAuth;

impl Authenticator for HostAuth {
    fn protocols(&self) -> Vec<SecProtocol> {
        vec![protocol("host")]
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, _: &[u8]) -> AuthOutcome {
        match credtype {
            "host" | "" => AuthOutcome::Accepted(Identity::new("host", ctx.login_user)),
            other => wrong_protocol("host", other),
        }
    }
}

/// The `unix` protocol: the credential `"unix\0user[ group]\0"` names the
/// user and optional group, taken at the client's word
/// (XrdSecProtocolunix). A credential of 4 bytes or less is treated as
/// `host`, as the reference does.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnixAuth;

impl Authenticator for UnixAuth {
    fn protocols(&self) -> Vec<SecProtocol> {
        vec![protocol("unix")]
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        if credtype != "unix" {
            return wrong_protocol("unix", credtype);
        }
        if cred.len() <= 4 {
            return HostAuth.authenticate(ctx, "host", cred);
        }
        let body = cred.strip_prefix(b"unix\0").unwrap_or(&cred[4..]);
        let body = body.split(|&b| b == 0).next().unwrap_or_default();
        let text = String::from_utf8_lossy(body);
        let mut words = text.split(' ').filter(|w| !w.is_empty());
        let Some(name) = words.next() else {
            return AuthOutcome::Refused("unix credentials name no user".into());
        };
        AuthOutcome::Accepted(Identity {
            group: words.next().map(str::to_string),
            ..Identity::new("unix", name)
        })
    }
}

/// Several protocols offered together, in order of preference; a credential
/// goes to the first one that offers its `credtype`.
#[derive(Clone, Default)]
pub struct AnyOf(pub Vec<Arc<dyn Authenticator>>);

impl std::fmt::Debug for AnyOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self
            .protocols()
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p.name).into_owned())
            .collect();
        f.debug_tuple("AnyOf").field(&names).finish()
    }
}

impl Authenticator for AnyOf {
    fn protocols(&self) -> Vec<SecProtocol> {
        self.0.iter().flat_map(|a| a.protocols()).collect()
    }

    /// When every one of them requires TLS (and there is one).
    fn requires_tls(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|a| a.requires_tls())
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        self.authenticate_round(ctx, credtype, cred, &mut None)
    }

    fn authenticate_round(
        &self,
        ctx: &AuthContext<'_>,
        credtype: &str,
        cred: &[u8],
        state: &mut AuthState,
    ) -> AuthOutcome {
        let offers = |a: &Arc<dyn Authenticator>| {
            a.protocols()
                .iter()
                .any(|p| p.name.as_ref() == credtype.as_bytes())
        };
        match self.0.iter().find(|a| offers(a)) {
            Some(a) => a.authenticate_round(ctx, credtype, cred, state),
            None => AuthOutcome::Refused(format!(
                "Authentication protocol {credtype:?} is not supported."
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> AuthContext<'static> {
        AuthContext {
            peer: "127.0.0.1:5".parse().unwrap(),
            login_user: "alice",
            tls: false,
        }
    }

    #[test]
    fn unix_credentials() {
        let got = UnixAuth.authenticate(&ctx(), "unix", b"unix\0bob wheel\0");
        assert_eq!(
            got,
            AuthOutcome::Accepted(Identity {
                group: Some("wheel".into()),
                ..Identity::new("unix", "bob")
            })
        );
        let AuthOutcome::Accepted(id) = UnixAuth.authenticate(&ctx(), "unix", b"unix\0carol\0")
        else {
            panic!()
        };
        assert_eq!((id.name.as_str(), id.group), ("carol", None));
        // 4 bytes or less: host
        let AuthOutcome::Accepted(id) = UnixAuth.authenticate(&ctx(), "unix", b"unix") else {
            panic!()
        };
        assert_eq!((id.protocol.as_str(), id.name.as_str()), ("host", "alice"));
        assert!(matches!(
            UnixAuth.authenticate(&ctx(), "unix", b"unix\0\0"),
            AuthOutcome::Refused(_)
        ));
        assert!(matches!(
            UnixAuth.authenticate(&ctx(), "gsi", b"x"),
            AuthOutcome::Refused(_)
        ));
    }

    #[test]
    fn any_of_routes_by_credtype() {
        let both = AnyOf(vec![Arc::new(UnixAuth), Arc::new(HostAuth)]);
        let names: Vec<_> = both.protocols().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["unix", "host"]);
        let AuthOutcome::Accepted(id) = both.authenticate(&ctx(), "host", b"host\0") else {
            panic!()
        };
        assert_eq!(id.protocol, "host");
        assert!(matches!(
            both.authenticate(&ctx(), "krb5", b""),
            AuthOutcome::Refused(_)
        ));
    }
}
