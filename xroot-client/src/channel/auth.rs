//! The client side of `kXR_auth`: which of the protocols a server offers in
//! its login reply this client answers, and the credential it sends
//! (PROTOCOL.md §5.2–5.3). The exchange itself runs in [`super::login`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::sss::{self, Keytab, Params};
use xroot_sec::ztn;

use crate::config::Config;
use crate::error::{Error, Result};

/// What the credential of one connection may depend on.
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

/// One credential for `kXR_auth`: the protocol id and the payload, and
/// for a protocol of several rounds (`gsi`) what answers the server's
/// `kXR_authmore`.
pub(crate) struct Credential {
    pub(crate) credtype: [u8; 4],
    pub(crate) credentials: Bytes,
    pub(crate) more: Option<More>,
}

/// What answers a `kXR_authmore`.
pub(crate) enum More {
    /// The `gsi` client handshake.
    #[cfg(feature = "gsi")]
    Gsi(Box<xroot_sec::gsi::ClientHandshake>, String),
}

impl More {
    /// The next `kXR_auth` payload for the server's `params`.
    /// Errors: [`Error::Credential`] naming what failed.
    #[cfg_attr(not(feature = "gsi"), allow(unused_variables))]
    pub(crate) fn next(&mut self, params: &[u8]) -> Result<Bytes> {
        match self {
            #[cfg(feature = "gsi")]
            More::Gsi(hs, endpoint) => {
                let now = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                hs.next(params, now)
                    .map(Bytes::from)
                    .map_err(|e| Error::Credential {
                        endpoint: endpoint.clone(),
                        protocol: "gsi".into(),
                        reason: e.to_string(),
                    })
            }
            #[allow(unreachable_patterns)]
            _ => unreachable!("no multi-round protocol without the gsi feature"),
        }
    }
}

/// The credential for the first protocol of `offered` (the server's order
/// of preference) that this client may use ([`Config::sec_protocols`]) and
/// can answer, with its index in `offered`. Errors: the
/// [`Error::Credential`] of the first protocol whose credential could not be
/// made when none could, else [`Error::AuthUnsupported`].
pub(crate) fn credential(
    offered: &[SecProtocol],
    ctx: &AuthCtx<'_>,
) -> Result<(usize, Credential)> {
    let mut failed = None;
    for (i, p) in offered.iter().enumerate() {
        if !allowed(&p.name, ctx.cfg) {
            continue;
        }
        match answer(p, ctx) {
            Ok(Some(c)) => return Ok((i, c)),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(endpoint = ctx.endpoint, error = %e, "skipping a security protocol");
                failed.get_or_insert(e);
            }
        }
    }
    Err(failed.unwrap_or_else(|| Error::AuthUnsupported {
        endpoint: ctx.endpoint.to_string(),
        offered: offered
            .iter()
            .map(|p| String::from_utf8_lossy(&p.name).into_owned())
            .collect(),
    }))
}

/// Whether `XrdSecPROTOCOL` (as [`Config::sec_protocols`]) lets us use
/// protocol `name`.
fn allowed(name: &[u8], cfg: &Config) -> bool {
    cfg.sec_protocols
        .as_ref()
        .is_none_or(|list| list.iter().any(|p| p.as_bytes() == name))
}

/// The credential for protocol `p`, or `None` when this client does not
/// speak it (or has no credential for it).
fn answer(p: &SecProtocol, ctx: &AuthCtx<'_>) -> Result<Option<Credential>> {
    Ok(match p.name.as_ref() {
        b"unix" => Some(unix(ctx.user)),
        b"host" => Some(Credential {
            credtype: *b"host",
            credentials: Bytes::from_static(b"host\0"),
            more: None,
        }),
        b"sss" => sss_credential(&p.params, ctx)?,
        b"ztn" => Some(ztn_credential(&p.params, ctx)?),
        #[cfg(feature = "gsi")]
        b"gsi" => Some(gsi_credential(&p.params, ctx)?),
        _ => None,
    })
}

/// `ztn` (xroot_sec::ztn): over TLS only, with the configured bearer token
/// or the one discovery finds.
///
/// Errors ([`Error::Credential`], after which the next offered protocol is
/// tried): no TLS on the link, no token found, a token file that may not
/// be used, server parameters that do not parse, a token over the server's
/// size limit.
fn ztn_credential(params: &[u8], ctx: &AuthCtx<'_>) -> Result<Credential> {
    let fail = |reason: String| Error::Credential {
        endpoint: ctx.endpoint.to_string(),
        protocol: "ztn".into(),
        reason,
    };
    if !ctx.tls {
        return Err(fail(
            "ztn needs a TLS connection (roots://, or a server that starts TLS)".into(),
        ));
    }
    let params = ztn::LoginParams::parse(params).map_err(|e| fail(e.to_string()))?;
    let token = match &ctx.cfg.bearer_token {
        Some(t) => t.clone(),
        None => match ztn::discover(params.max_token_size) {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Err(fail(
                    "no bearer token found (BEARER_TOKEN, BEARER_TOKEN_FILE, \
                     $XDG_RUNTIME_DIR/bt_u<euid>, /tmp/bt_u<euid>)"
                        .into(),
                ))
            }
            Err(e) => return Err(fail(e.to_string())),
        },
    };
    let credentials = ztn::encode_credential(&token.token, params.max_token_size)
        .map_err(|e| fail(e.to_string()))?;
    tracing::debug!(endpoint = ctx.endpoint, source = ?token.source, "ztn: sending bearer token");
    Ok(Credential {
        credtype: *b"ztn\0",
        credentials,
        more: None,
    })
}

/// `gsi` (xroot_sec::gsi): the configured X509 credentials, else the
/// configured proxy file or what the stock client would find, read now
/// and checked against the time; the server's
/// certificate is checked against the CA directory at the next round.
///
/// Errors ([`Error::Credential`], after which the next offered protocol is
/// tried): no credentials, expired ones, a CA directory that cannot be
/// read, a server whose CA is not in it.
#[cfg(feature = "gsi")]
fn gsi_credential(params: &[u8], ctx: &AuthCtx<'_>) -> Result<Credential> {
    use std::sync::Arc;
    use xroot_sec::gsi::{default_ca_dir, CaStore, ClientHandshake, Credentials};
    let fail = |reason: String| Error::Credential {
        endpoint: ctx.endpoint.to_string(),
        protocol: "gsi".into(),
        reason,
    };
    let creds = match &ctx.cfg.x509_credentials {
        Some(c) => c.clone(),
        None => {
            let c = match &ctx.cfg.x509_proxy_file {
                Some(file) => Credentials::load_proxy(file),
                None => Credentials::discover(),
            }
            .map_err(|e| fail(e.to_string()))?;
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            c.check_time(now).map_err(|e| fail(e.to_string()))?;
            Arc::new(c)
        }
    };
    let dir = ctx.cfg.x509_cert_dir.clone().unwrap_or_else(default_ca_dir);
    let store = CaStore::load(&dir).map_err(|e| fail(e.to_string()))?;
    let host = ctx
        .endpoint
        .rsplit_once(':')
        .map_or(ctx.endpoint, |(h, _)| h);
    let mut hs = ClientHandshake::new(creds, Arc::new(store), host);
    let first = hs.first(params).map_err(|e| fail(e.to_string()))?;
    tracing::debug!(endpoint = ctx.endpoint, "gsi: sending certificate request");
    Ok(Credential {
        credtype: *b"gsi\0",
        credentials: Bytes::from(first),
        more: Some(More::Gsi(Box::new(hs), ctx.endpoint.to_string())),
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
        more: None,
    }
}

/// The keytab an `sss` credential is sealed with, as the stock client
/// looks for it (`Load_Client`, `Init_Client`): the configured one, the
/// server's suggestion (an absolute path), `$HOME/.xrd/sss.keytab`; the
/// first that exists.
fn sss_keytab(params: &Params, cfg: &Config) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(&h).join(".xrd/sss.keytab"));
    let suggested = Some(PathBuf::from(&params.client_keytab)).filter(|p| p.is_absolute());
    [cfg.sss_keytab.clone(), suggested, home]
        .into_iter()
        .flatten()
        .find(|p| p.exists())
}

/// `sss`: the login user's name and our address as the server sees it,
/// sealed with the keytab's key ([`xroot_sec::sss::seal`]). `None` without
/// a keytab or for a cipher other than Blowfish. Errors:
/// [`Error::Credential`] for parameters that do not parse, a keytab that
/// cannot be used, or no unexpired key.
fn sss_credential(params: &[u8], ctx: &AuthCtx<'_>) -> Result<Option<Credential>> {
    let fail = |reason: String| Error::Credential {
        endpoint: ctx.endpoint.to_string(),
        protocol: "sss".into(),
        reason,
    };
    let params = Params::parse(params).map_err(|e| fail(e.to_string()))?;
    if params.cipher != sss::credential::CIPHER_BLOWFISH {
        return Ok(None);
    }
    let Some(path) = sss_keytab(&params, ctx.cfg) else {
        return Ok(None);
    };
    let now = SystemTime::now();
    let keytab = Keytab::load(&path, now).map_err(|e| fail(e.to_string()))?;
    let unix_now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let key = keytab
        .client_key(unix_now)
        .ok_or_else(|| fail(format!("keytab {} has no unexpired key", path.display())))?;
    let entity = sss::Entity {
        host: ctx.local.map(sss::address_item),
        name: Some(ctx.user.to_string()),
        auth: params.v2.then(|| "sss".to_string()),
        ..sss::Entity::default()
    };
    let cred = sss::seal(key, &entity, now, params.v2).map_err(|e| fail(e.to_string()))?;
    Ok(Some(Credential {
        credtype: *b"sss\0",
        credentials: Bytes::from(cred),
        more: None,
    }))
}
