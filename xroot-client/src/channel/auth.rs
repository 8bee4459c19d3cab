//! The client side of `kXR_auth`: which of the protocols a server offers in
//! its login reply this client answers, and the credential it sends
//! (PROTOCOL.md §5.2–5.3). The exchange itself runs in [`super::login`].

use std::net::SocketAddr;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::ztn;

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
/// [`Error::Credential`] when a `ztn` token file may not be used, or when
/// `ztn` was offered but could not be answered (no TLS, no token) and no
/// other protocol could; [`Error::AuthUnsupported`] when it speaks none of
/// the protocols offered.
pub(crate) fn credential(offered: &[SecProtocol], ctx: &AuthCtx<'_>) -> Result<Credential> {
    let names: Vec<String> = offered
        .iter()
        .map(|p| String::from_utf8_lossy(&p.name).into_owned())
        .collect();
    let mut why_not = None;
    for p in offered {
        if let Some(c) = answer(p, ctx, &mut why_not)? {
            return Ok(c);
        }
    }
    Err(match why_not {
        Some((protocol, reason)) => Error::Credential {
            endpoint: ctx.endpoint.to_string(),
            protocol,
            reason,
        },
        None => Error::AuthUnsupported {
            endpoint: ctx.endpoint.to_string(),
            offered: names,
        },
    })
}

/// Why a protocol this client speaks was passed over: `(protocol, reason)`.
type WhyNot = Option<(&'static str, String)>;

/// The credential for protocol `p`, or `None` when this client does not
/// speak it or has no credential for it (then, for a protocol it speaks,
/// `why_not` says why).
fn answer(p: &SecProtocol, ctx: &AuthCtx<'_>, why_not: &mut WhyNot) -> Result<Option<Credential>> {
    Ok(match p.name.as_ref() {
        b"unix" => Some(unix(ctx.user)),
        b"host" => Some(Credential {
            credtype: *b"host",
            credentials: Bytes::from_static(b"host\0"),
        }),
        b"ztn" => ztn(&p.params, ctx, why_not)?,
        _ => None,
    })
}

/// `ztn` (xroot_sec::ztn): over TLS only, with the configured bearer token
/// or the one discovery finds.
fn ztn(params: &[u8], ctx: &AuthCtx<'_>, why_not: &mut WhyNot) -> Result<Option<Credential>> {
    let fail = |reason: String| Error::Credential {
        endpoint: ctx.endpoint.to_string(),
        protocol: "ztn",
        reason,
    };
    if !ctx.tls {
        *why_not = Some(("ztn", "ztn needs a TLS connection (use roots://)".into()));
        return Ok(None);
    }
    let params = ztn::LoginParams::parse(params).map_err(|e| fail(e.to_string()))?;
    let token = match &ctx.cfg.bearer_token {
        Some(t) => t.clone(),
        None => match ztn::discover(params.max_token_size) {
            Ok(Some(t)) => t,
            Ok(None) => {
                *why_not = Some((
                    "ztn",
                    "no bearer token found (BEARER_TOKEN, BEARER_TOKEN_FILE, \
                     $XDG_RUNTIME_DIR/bt_u<euid>, /tmp/bt_u<euid>)"
                        .into(),
                ));
                return Ok(None);
            }
            Err(e) => return Err(fail(e.to_string())),
        },
    };
    let credentials = ztn::encode_credential(&token.token, params.max_token_size)
        .map_err(|e| fail(e.to_string()))?;
    tracing::debug!(endpoint = ctx.endpoint, source = ?token.source, "ztn: sending bearer token");
    Ok(Some(Credential {
        credtype: *b"ztn\0",
        credentials,
    }))
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
