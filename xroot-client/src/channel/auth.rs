//! The client side of `kXR_auth`: which of the protocols a server offers in
//! its login reply this client answers, and the credential it sends
//! (PROTOCOL.md §5.2–5.3). The exchange itself runs in [`super::login`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::sss::{self, Keytab, Params};

use crate::config::Config;
use crate::error::{Error, Result};

/// What the credential of one connection may depend on.
#[allow(dead_code)] // tls: for the ztn credential
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
        }),
        b"sss" => sss_credential(&p.params, ctx)?,
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
    }))
}
