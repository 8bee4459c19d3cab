//! Bringing up one connection: TCP connect, the handshake and `kXR_protocol`
//! in one write, the switch to TLS when [`super::tls`] says so, `kXR_login`
//! (never pipelined behind `kXR_protocol`, whose answer decides whether TLS
//! starts first), and authentication when the server asks for it
//! (PROTOCOL.md §2, §5). This runs before the connection's reader and
//! writer tasks start, on the raw stream.

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
use xroot_sec::tls::client::ClientTls;

use super::auth::{self, AuthCtx, Credential};
use super::tls::{Switch, Want};
use super::transport::{self, Transport};
use crate::config::Config;
use crate::error::{Error, Result, TlsCause};
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
    /// Whether the main stream runs TLS (`roots://`, or a `root://`
    /// connection the server switched). Data substreams may not: see
    /// [`crate::Channel::substreams`].
    pub tls: bool,
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

/// A connection mid-setup: the bytes read past the last frame stay in `buf`.
pub(crate) struct Setup {
    pub(crate) sock: Transport,
    pub(crate) buf: BytesMut,
    pub(crate) dec: ResponseDecoder,
    endpoint: String,
}

/// What a channel wants of TLS: `roots://` must be encrypted, and the
/// client is able when it has a configuration. Errors:
/// [`TlsCause::NotConfigured`] for `roots://` without one.
fn want(key: &ChannelKey, cfg: &Config) -> Result<Want> {
    let encrypted = key.scheme == "roots";
    if encrypted && cfg.tls.is_none() {
        // never fall back to plain text for a URL that asks for TLS
        return Err(tls_error(key.endpoint(), TlsCause::NotConfigured));
    }
    Ok(Want {
        encrypted,
        able: cfg.tls.is_some(),
        no_data: cfg.tls_no_data,
    })
}

fn tls_error(endpoint: String, cause: TlsCause) -> Error {
    Error::Tls { endpoint, cause }
}

impl Setup {
    async fn connect(key: &ChannelKey, cfg: &Config) -> Result<Setup> {
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
            sock: Transport::Plain(sock),
            buf: BytesMut::with_capacity(64 * 1024),
            dec: ResponseDecoder::new().with_max_dlen(cfg.max_response_dlen),
            endpoint,
        })
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let io = |source| Error::Io {
            endpoint: self.endpoint.clone(),
            source,
        };
        self.sock.write_all(bytes).await.map_err(io)?;
        // over TLS the last record may still sit in the session's buffer
        self.sock.flush().await.map_err(io)
    }

    /// Switches to TLS: the handshake with `tls`'s trust, checking the
    /// certificate against `host` (the URL's). Nothing may have arrived
    /// past the last frame read. Errors: [`Error::Tls`] with
    /// [`TlsCause::PlaintextLeftOver`] or [`TlsCause::Handshake`].
    async fn start_tls(mut self, tls: &ClientTls, host: &str) -> Result<Setup> {
        if !self.buf.is_empty() {
            return Err(tls_error(
                self.endpoint,
                TlsCause::PlaintextLeftOver {
                    bytes: self.buf.len(),
                },
            ));
        }
        self.sock = match transport::start_tls(self.sock, tls, host).await {
            Ok(sock) => sock,
            Err(e) => return Err(tls_error(self.endpoint, TlsCause::Handshake(e))),
        };
        tracing::debug!(endpoint = %self.endpoint, "TLS started");
        Ok(self)
    }

    /// [`Setup::start_tls`] with the configuration of `cfg`, when `switch`
    /// says now (or at `when`).
    async fn switch(
        self,
        switch: Switch,
        when: Switch,
        key: &ChannelKey,
        cfg: &Config,
    ) -> Result<Setup> {
        match (switch == when, &cfg.tls) {
            (true, Some(tls)) => self.start_tls(tls, &key.host).await,
            // the decision requires a configuration to switch
            (true, None) => Err(tls_error(self.endpoint, TlsCause::NotConfigured)),
            (false, _) => Ok(self),
        }
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

    /// `kXR_auth`: the body of the final `kXR_ok`; a `kXR_authmore` is
    /// answered by `more` with another `kXR_auth` (at most 8 rounds).
    async fn call_auth(
        &mut self,
        credtype: [u8; 4],
        credentials: Bytes,
        mut more: Option<super::auth::More>,
    ) -> Result<Bytes> {
        let mut out = BytesMut::new();
        Request::from(Auth {
            credtype,
            credentials,
        })
        .encode(StreamId::ZERO, &mut out);
        self.write(&out).await?;
        let mut rounds = 0;
        loop {
            let frame = self.frame().await?;
            match self.decode(frame)? {
                Response::Ok(body) => return Ok(body),
                Response::Error(e) => return Err(server_error(e)),
                Response::Wait(w) => {
                    tokio::time::sleep(Duration::from_secs(w.seconds.max(0) as u64)).await;
                    self.write(&out).await?;
                }
                Response::AuthMore(params) if rounds < 8 => {
                    let Some(next) = more.as_mut() else {
                        return Err(Error::unexpected(
                            xroot_proto::RequestId::AUTH,
                            "kXR_authmore for a one-round protocol".to_string(),
                        ));
                    };
                    rounds += 1;
                    out.clear();
                    Request::from(Auth {
                        credtype,
                        credentials: next.next(&params)?,
                    })
                    .encode(StreamId::ZERO, &mut out);
                    self.write(&out).await?;
                }
                other => {
                    return Err(Error::unexpected(
                        xroot_proto::RequestId::AUTH,
                        format!("{other:?}"),
                    ))
                }
            }
        }
    }

    fn decode(&self, frame: ResponseFrame) -> Result<Response> {
        Response::decode(frame).map_err(|source| Error::Protocol {
            endpoint: self.endpoint.clone(),
            source,
        })
    }

    /// Handshake and `kXR_protocol` (with the TLS `flags` of
    /// [`Want::request_flags`]) in one write; returns the server type and
    /// the protocol answer.
    async fn handshake(
        &mut self,
        expect: Expect,
        flags: ProtocolFlags,
    ) -> Result<(ServerHandshake, ProtocolResponse)> {
        let mut out = BytesMut::new();
        ClientHandshake.encode(&mut out);
        Request::from(Protocol {
            clientpv: version::CURRENT,
            flags,
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

/// Connects, handshakes, switches to TLS when the protocol answer says so
/// ([`super::tls`]), logs in and authenticates the main stream of a
/// channel; on a reconnection, then ends the `previous` session of the
/// channel with `kXR_endsess` (see [`end_session`]). Errors: [`Error::Io`],
/// [`Error::Timeout`] past `connect_timeout`, [`Error::Server`] for a
/// refused login, [`Error::AuthUnsupported`] when the server offers no
/// protocol we have, [`Error::Tls`] when TLS is needed and fails or is
/// missing on either side.
pub(crate) async fn establish(
    key: &ChannelKey,
    cfg: &Config,
    previous: Option<[u8; 16]>,
) -> Result<(Setup, ServerInfo)> {
    tokio::time::timeout(cfg.connect_timeout, async {
        let want = want(key, cfg)?;
        let mut s = Setup::connect(key, cfg).await?;
        let (hs, proto) = s
            .handshake(Expect::LOGIN, want.request_flags(Expect::LOGIN))
            .await?;
        let switch = want
            .main_stream(proto.pval, proto.flags)
            .map_err(|cause| tls_error(key.endpoint(), cause))?;
        let mut s = s.switch(switch, Switch::Now, key, cfg).await?;
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
        // kXR_tlsSess: the server switches once the login (with its
        // authentication) is complete, before kXR_endsess
        let mut s = s.switch(switch, Switch::AfterLogin, key, cfg).await?;
        if let Some(old) = previous {
            end_session(&mut s, old).await?;
        }
        let info = ServerInfo {
            protover: proto.pval,
            server_type: hs.server_type,
            flags: proto.flags,
            sessid: login.sessid,
            tls: s.sock.is_tls(),
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
            tls: s.sock.is_tls(),
            local,
            cfg,
        };
        let (
            used,
            Credential {
                credtype,
                credentials,
                more,
            },
        ) = auth::credential(&offered[from..], &ctx)?;
        let sent = s.call_auth(credtype, credentials, more).await;
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

/// Connects a substream of the channel whose main stream is `main`,
/// switches it to TLS when its protocol answer (or `main`'s `kXR_tlsData`)
/// says so — before `kXR_bind` — and binds it to `main`'s session; returns
/// the stream and the pathid the server assigned (PROTOCOL.md §5.4).
/// Errors: as [`establish`].
pub(crate) async fn bind(key: &ChannelKey, cfg: &Config, main: &ServerInfo) -> Result<(Setup, u8)> {
    let sessid = main.sessid;
    tokio::time::timeout(cfg.connect_timeout, async {
        // a data stream of an encrypted channel wants TLS too (XrdCl's
        // info->encrypted, set when the main stream switched)
        let want = Want {
            encrypted: main.tls,
            ..want(key, cfg)?
        };
        let mut s = Setup::connect(key, cfg).await?;
        let (_, proto) = s
            .handshake(Expect::BIND, want.request_flags(Expect::BIND))
            .await?;
        let switch = want
            .data_stream(proto.flags, main.flags)
            .map_err(|cause| tls_error(key.endpoint(), cause))?;
        let mut s = s.switch(switch, Switch::Now, key, cfg).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;
    use xroot_proto::response::ProtocolFlags as Srv;
    use xroot_sec::tls::client::TrustStore;

    /// A peer that reads the handshake and `kXR_protocol` (44 bytes),
    /// answers them with `flags` followed by `extra` in the same write, and
    /// returns what it read until the client closed.
    async fn peer(flags: Srv, extra: &'static [u8]) -> (u16, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut got = vec![0u8; 44];
            sock.read_exact(&mut got).await.unwrap();
            let mut out = BytesMut::new();
            ServerHandshake {
                protover: 0x511,
                server_type: ServerType::DATA_SERVER,
            }
            .encode(&mut out);
            let mut body = BytesMut::new();
            ProtocolResponse {
                pval: 0x511,
                flags,
                bifinfo: None,
                security: None,
            }
            .encode(&mut body);
            ResponseFrame::new(StreamId::ZERO, xroot_proto::Status::OK, body.freeze())
                .encode(&mut out);
            out.extend_from_slice(extra);
            sock.write_all(&out).await.unwrap();
            let _ = sock.read_to_end(&mut got).await;
            got
        });
        (port, task)
    }

    fn key(port: u16) -> ChannelKey {
        ChannelKey::of(
            &xroot_proto::url::Url::parse(&format!("root://127.0.0.1:{port}//f")).unwrap(),
        )
    }

    #[tokio::test]
    async fn plain_text_past_the_switch_point_is_refused() {
        let flags = Srv::IS_SERVER | Srv::HAVE_TLS | Srv::GOTO_TLS;
        let (port, task) = peer(flags, b"\0\0\0\0\0\0\0\0injected").await;
        let cfg = Config::default().with_tls(ClientTls::new(TrustStore::new()).unwrap());
        let Err(err) = establish(&key(port), &cfg, None).await else {
            panic!("established")
        };
        assert!(
            matches!(
                err,
                Error::Tls {
                    cause: TlsCause::PlaintextLeftOver { bytes: 16 },
                    ..
                }
            ),
            "{err:?}"
        );
        // nothing but the handshake and kXR_protocol went out
        assert_eq!(task.await.unwrap().len(), 44);
    }

    #[tokio::test]
    async fn a_switch_without_tls_configured_stops_before_the_login() {
        let flags = Srv::IS_SERVER | Srv::HAVE_TLS | Srv::TLS_SESS;
        let (port, task) = peer(flags, b"").await;
        let cfg = Config::default().without_tls();
        let Err(err) = establish(&key(port), &cfg, None).await else {
            panic!("established")
        };
        assert!(
            matches!(
                err,
                Error::Tls {
                    cause: TlsCause::Required {
                        asked: "kXR_tlsSess"
                    },
                    ..
                }
            ),
            "{err:?}"
        );
        let sent = task.await.unwrap();
        assert_eq!(sent.len(), 44, "no login after the protocol answer");
        // kXR_protocol's flags byte (request byte 8, after the 20-byte handshake)
        assert_eq!(
            sent[28],
            (ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS).0,
            "no kXR_ableTLS without a configuration"
        );
    }
}
