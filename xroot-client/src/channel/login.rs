//! Bringing up one connection: TCP connect, the handshake and `kXR_protocol`
//! in one write, `kXR_login`, and authentication when the
//! server asks for it (PROTOCOL.md §2, §5). This runs before the
//! connection's reader and writer tasks start, on the raw socket.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xroot_proto::codes::version;
use xroot_proto::frame::ResponseDecoder;
use xroot_proto::header::{ClientHandshake, ServerHandshake};
use xroot_proto::request::{
    Auth, Bind, Capver, Endsess, Expect, Login, LoginAbility, Protocol, ProtocolFlags, Request,
};
use xroot_proto::response::{self as resp, LoginResponse, ProtocolResponse, Response};
use xroot_proto::{ResponseFrame, ServerType, StreamId};

use super::auth::{self, AuthCtx, Credential};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::key::ChannelKey;

/// What the server told us while the connection came up.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// Protocol version from the `kXR_protocol` answer (`0x511` for xrootd 5.5).
    pub protover: u32,
    /// Data server or load balancer, from the handshake.
    pub server_type: ServerType,
    /// The `kXR_protocol` flags (`kXR_isServer`, `kXR_isManager`, `kXR_suppgrw`, ...).
    pub flags: resp::ProtocolFlags,
    /// The session id from login (for `kXR_bind` and `kXR_endsess`).
    pub sessid: [u8; 16],
}

impl ServerInfo {
    /// Whether the server supports `kXR_pgread` / `kXR_pgwrite`.
    pub fn supports_pgrw(&self) -> bool {
        self.protover >= version::PGRW && self.flags.contains(resp::ProtocolFlags::SUPPGRW)
    }

    /// Whether it is a data server (not a manager or redirector).
    pub fn is_data_server(&self) -> bool {
        self.flags.contains(resp::ProtocolFlags::IS_SERVER)
    }
}

/// A socket mid-setup: the bytes read past the last frame stay in `buf`.
pub(crate) struct Setup {
    pub(crate) sock: TcpStream,
    pub(crate) buf: BytesMut,
    pub(crate) dec: ResponseDecoder,
    endpoint: String,
}

impl Setup {
    async fn connect(key: &ChannelKey, cfg: &Config) -> Result<Setup> {
        if key.scheme == "roots" {
            // never fall back to plain text for a URL that asks for TLS
            return Err(Error::InvalidArgument(format!(
                "{key}: roots:// (TLS) is not supported by this client yet"
            )));
        }
        let endpoint = key.endpoint();
        let host = key.host.trim_start_matches('[').trim_end_matches(']');
        let sock = TcpStream::connect((host, key.port))
            .await
            .map_err(|source| Error::Io {
                endpoint: endpoint.clone(),
                source,
            })?;
        let _ = sock.set_nodelay(true);
        Ok(Setup {
            sock,
            buf: BytesMut::with_capacity(64 * 1024),
            dec: ResponseDecoder::new().with_max_dlen(cfg.max_response_dlen),
            endpoint,
        })
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.sock
            .write_all(bytes)
            .await
            .map_err(|source| Error::Io {
                endpoint: self.endpoint.clone(),
                source,
            })
    }

    async fn frame(&mut self) -> Result<ResponseFrame> {
        loop {
            match self.dec.decode(&mut self.buf) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => {}
                Err(source) => {
                    return Err(Error::Protocol {
                        endpoint: self.endpoint.clone(),
                        source,
                    })
                }
            }
            let n = self
                .sock
                .read_buf(&mut self.buf)
                .await
                .map_err(|source| Error::Io {
                    endpoint: self.endpoint.clone(),
                    source,
                })?;
            if n == 0 {
                return Err(Error::ConnectionLost {
                    endpoint: self.endpoint.clone(),
                });
            }
        }
    }

    /// Sends `req` on streamid 0 and returns the body of its `kXR_ok`,
    /// resending after `kXR_wait` (handshake-phase requests are not
    /// redirected).
    async fn call(&mut self, req: Request) -> Result<Bytes> {
        let id = req.id();
        let mut out = BytesMut::new();
        req.encode(StreamId::ZERO, &mut out);
        self.write(&out).await?;
        loop {
            let frame = self.frame().await?;
            match self.decode(frame)? {
                Response::Ok(body) => return Ok(body),
                Response::Error(e) => return Err(server_error(e)),
                Response::Wait(w) => {
                    tokio::time::sleep(Duration::from_secs(w.seconds.max(0) as u64)).await;
                    self.write(&out).await?;
                }
                other => return Err(Error::unexpected(id, format!("{other:?}"))),
            }
        }
    }

    fn decode(&self, frame: ResponseFrame) -> Result<Response> {
        Response::decode(frame).map_err(|source| Error::Protocol {
            endpoint: self.endpoint.clone(),
            source,
        })
    }

    /// Handshake and `kXR_protocol` in one write; returns the server type
    /// and the protocol answer.
    async fn handshake(&mut self, expect: Expect) -> Result<(ServerHandshake, ProtocolResponse)> {
        let mut out = BytesMut::new();
        ClientHandshake.encode(&mut out);
        Request::from(Protocol {
            clientpv: version::CURRENT,
            flags: ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS,
            expect,
        })
        .encode(StreamId::ZERO, &mut out);
        self.write(&out).await?;
        let hs = self.frame().await?;
        let hs = ServerHandshake::from_body(&hs.body).map_err(|source| Error::Protocol {
            endpoint: self.endpoint.clone(),
            source,
        })?;
        let frame = self.frame().await?;
        let body = match self.decode(frame)? {
            Response::Ok(b) => b,
            Response::Error(e) => return Err(server_error(e)),
            other => {
                return Err(Error::unexpected(
                    xroot_proto::RequestId::PROTOCOL,
                    format!("{other:?}"),
                ))
            }
        };
        let proto = ProtocolResponse::decode(body).map_err(|source| Error::Protocol {
            endpoint: self.endpoint.clone(),
            source,
        })?;
        Ok((hs, proto))
    }
}

pub(crate) fn server_error(e: resp::ServerError) -> Error {
    Error::Server {
        code: e.code,
        message: e.message_lossy().into_owned(),
    }
}

/// The user name to log in as: the URL's, else the OS user, else `_anon_`
/// (what XrdCl does).
fn login_user(key: &ChannelKey) -> String {
    key.user
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "_anon_".to_string())
}

/// Connects, handshakes, logs in and authenticates the main stream of a
/// channel; on a reconnection, then ends the `previous` session of the
/// channel with `kXR_endsess` (see [`end_session`]). Errors: [`Error::Io`],
/// [`Error::Timeout`] past `connect_timeout`, [`Error::Server`] for a
/// refused login, [`Error::AuthUnsupported`] when the server offers no
/// protocol we have.
pub(crate) async fn establish(
    key: &ChannelKey,
    cfg: &Config,
    previous: Option<[u8; 16]>,
) -> Result<(Setup, ServerInfo)> {
    tokio::time::timeout(cfg.connect_timeout, async {
        let mut s = Setup::connect(key, cfg).await?;
        let (hs, proto) = s.handshake(Expect::LOGIN).await?;
        let user = login_user(key);
        let cgi = format!(
            "&xrd.appname={}&xrd.rn=xroot-{}",
            cfg.app_name,
            env!("CARGO_PKG_VERSION")
        );
        let body = s
            .call(
                Login {
                    pid: std::process::id() as i32,
                    username: Login::pack_username(&user),
                    ability: LoginAbility::FULLURL
                        | LoginAbility::READRDOK
                        | LoginAbility::REDIRFLAGS,
                    capver: Capver(0x85),
                    cgi: Bytes::from(cgi),
                    ..Default::default()
                }
                .into(),
            )
            .await?;
        let login = LoginResponse::decode(body).map_err(|source| Error::Protocol {
            endpoint: key.endpoint(),
            source,
        })?;
        if login.sec.is_some() {
            authenticate(&mut s, &login, &user, cfg).await?;
        }
        if let Some(old) = previous {
            end_session(&mut s, old).await?;
        }
        let info = ServerInfo {
            protover: proto.pval,
            server_type: hs.server_type,
            flags: proto.flags,
            sessid: login.sessid,
        };
        Ok((s, info))
    })
    .await
    .map_err(|_| Error::Timeout {
        what: "connect",
        after: cfg.connect_timeout,
    })?
}

/// Ends the session `old`, the one this channel had before its connection
/// was lost, so that the server closes the files it held open (and their
/// writer locks) before they are opened again: XrdCl sends `kXR_endsess`
/// with the previous session id after every re-login (PROTOCOL.md §5.5).
/// A `kXR_wait` ("session still active") is waited out and the request
/// sent again, within the connect deadline. `kXR_NotFound` means the
/// session is already gone. Another refusal (`kXR_NotAuthorized`,
/// `kXR_Cancelled`, a server without `kXR_endsess`) is logged and the
/// connection used anyway (XrdCl gives up on it): what the old session
/// still holds then shows in the server's answer to the re-open. Errors:
/// the connection's.
async fn end_session(s: &mut Setup, old: [u8; 16]) -> Result<()> {
    match s.call(Endsess { sessid: old }.into()).await {
        Ok(_) => Ok(()),
        Err(Error::Server { code, .. }) if code == xroot_proto::ErrorCode::NOT_FOUND => Ok(()),
        Err(Error::Server { code, message }) => {
            tracing::warn!(endpoint = %s.endpoint, ?code, message, "kXR_endsess of the previous session refused");
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Answers the login's security token with the first protocol offered
/// that this client speaks ([`super::auth`]); when the server refuses it
/// (`kXR_AuthFailed`), with the next one, as the stock client does
/// (XrdClXRootDTransport.cc, `GetCredentials` after a `kXR_error`).
async fn authenticate(
    s: &mut Setup,
    login: &LoginResponse,
    user: &str,
    cfg: &Config,
) -> Result<()> {
    let offered = login.protocols().map_err(|source| Error::Protocol {
        endpoint: s.endpoint.clone(),
        source,
    })?;
    let mut from = 0;
    loop {
        let local = s.sock.local_addr().ok();
        let endpoint = s.endpoint.clone();
        let ctx = AuthCtx {
            endpoint: &endpoint,
            user,
            tls: false,
            local,
            cfg,
        };
        let (
            used,
            Credential {
                credtype,
                credentials,
            },
        ) = auth::credential(&offered[from..], &ctx)?;
        let sent = s
            .call(
                Auth {
                    credtype,
                    credentials,
                }
                .into(),
            )
            .await;
        match sent {
            Err(Error::Server { code, message })
                if code == xroot_proto::ErrorCode::AUTH_FAILED
                    && offered[from + used + 1..]
                        .iter()
                        .any(|p| auth::credential(std::slice::from_ref(p), &ctx).is_ok()) =>
            {
                tracing::warn!(endpoint = %s.endpoint, message, "authentication refused; trying the next protocol");
                from += used + 1;
            }
            other => return other.map(drop),
        }
    }
}

/// Connects a substream and binds it to `sessid`; returns the socket and the
/// pathid the server assigned (PROTOCOL.md §5.4).
pub(crate) async fn bind(key: &ChannelKey, cfg: &Config, sessid: [u8; 16]) -> Result<(Setup, u8)> {
    tokio::time::timeout(cfg.connect_timeout, async {
        let mut s = Setup::connect(key, cfg).await?;
        s.handshake(Expect::BIND).await?;
        let body = s.call(Bind { sessid }.into()).await?;
        let reply = resp::BindResponse::decode(body).map_err(|source| Error::Protocol {
            endpoint: key.endpoint(),
            source,
        })?;
        Ok((s, reply.pathid))
    })
    .await
    .map_err(|_| Error::Timeout {
        what: "connect",
        after: cfg.connect_timeout,
    })?
}
