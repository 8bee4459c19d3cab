//! Who a request is for: the [`Identity`] authentication established and
//! the [`Caller`] every backend call receives.

use std::net::SocketAddr;

use super::scope::Scope;

/// Who the client turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The protocol that authenticated it (`host`, `unix`, …).
    pub protocol: String,
    /// The user name.
    pub name: String,
    /// The group, when the protocol names one.
    pub group: Option<String>,
    /// What the credential allows, for protocols that carry authorization
    /// (`ztn` tokens' scopes); `None` when the credential only says who
    /// the client is, and the server's own policy decides.
    pub scopes: Option<Vec<Scope>>,
    /// The distinguished name of an X509 (`gsi`) client's end-entity
    /// certificate, `/C=CH/O=Org/CN=Name`, whatever name it was mapped to.
    pub dn: Option<String>,
}

impl Identity {
    /// An identity without scopes or group.
    pub fn new(protocol: impl Into<String>, name: impl Into<String>) -> Identity {
        Identity {
            protocol: protocol.into(),
            name: name.into(),
            group: None,
            scopes: None,
            dn: None,
        }
    }
}

/// Who a backend call is for, as the server authenticated it: every
/// [`crate::FileSystem`] call gets the caller of the session it serves, so
/// a backend can authorize or map users (the reference's `XrdSecEntity`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Who the client is. Without an [`Authenticator`](super::Authenticator) the protocol is empty
    /// and the name the user of the `kXR_login` request.
    pub identity: Identity,
    /// The client's address (its main link's).
    pub peer: SocketAddr,
}

impl Caller {
    /// A caller inside this process, not a client (a cache reading its
    /// local origin): protocol empty, the address unspecified.
    pub fn local(name: &str) -> Caller {
        Caller {
            identity: Identity::new("", name),
            peer: SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }
}
