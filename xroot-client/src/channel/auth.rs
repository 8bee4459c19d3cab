//! The client side of `kXR_auth`: which of the protocols a server offers in
//! its login reply this client answers, and the credential it sends
//! (PROTOCOL.md §5.2–5.3). The exchange itself runs in [`super::login`].

use std::net::SocketAddr;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;

use crate::config::Config;
use crate::error::{Error, Result};

/// What the credential of one connection may depend on.
#[allow(dead_code)] // tls, local and cfg: for the sss and ztn credentials
pub(crate) struct AuthCtx<'a> {
    /// `host:port` of the server, for errors.
    pub(crate) endpoint: &'a str,
    /// The user name of the login.
    pub(crate) user: &'a str,
    /// The connection runs TLS (`ztn` is sent only over TLS).
    pub(crate) tls: bool,
    /// Our address as the server sees it (`sss` names it).
    pub(crate) local: Option<SocketAddr>,
    /// The client's configuration (credentials, preferences).
    pub(crate) cfg: &'a Config,
}

/// One credential for `kXR_auth`: the protocol id and the payload.
pub(crate) struct Credential {
    pub(crate) credtype: [u8; 4],
    pub(crate) credentials: Bytes,
}

/// The credential for the first protocol in `offered` (the server's order
/// of preference) that this client can answer. Errors:
/// [`Error::AuthUnsupported`] when it can answer none.
pub(crate) fn credential(offered: &[SecProtocol], ctx: &AuthCtx<'_>) -> Result<Credential> {
    let names: Vec<String> = offered
        .iter()
        .map(|p| String::from_utf8_lossy(&p.name).into_owned())
        .collect();
    for p in offered {
        if let Some(c) = answer(p, ctx)? {
            return Ok(c);
        }
    }
    Err(Error::AuthUnsupported {
        endpoint: ctx.endpoint.to_string(),
        offered: names,
    })
}

/// The credential for protocol `p`, or `None` when this client does not
/// speak it (or has no credential for it).
fn answer(p: &SecProtocol, ctx: &AuthCtx<'_>) -> Result<Option<Credential>> {
    Ok(match p.name.as_ref() {
        b"unix" => Some(unix(ctx.user)),
        b"host" => Some(Credential {
            credtype: *b"host",
            credentials: Bytes::from_static(b"host\0"),
        }),
        _ => None,
    })
}

/// `unix`: `"unix\0user[ group]\0"`, the group from `$GROUP` when set.
fn unix(user: &str) -> Credential {
    let group = std::env::var("GROUP").unwrap_or_default();
    let mut cred = format!("unix\0{user}");
    if !group.is_empty() {
        cred.push(' ');
        cred.push_str(&group);
    }
    cred.push('\0');
    Credential {
        credtype: *b"unix",
        credentials: Bytes::from(cred),
    }
}
