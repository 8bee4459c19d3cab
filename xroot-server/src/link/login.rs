//! The session requests, answered on the link's own task in arrival order:
//! `kXR_protocol`, `kXR_login`, `kXR_auth`, `kXR_bind` and `kXR_endsess`
//! (PROTOCOL.md §5; XrdXrootdXeq `do_Protocol`, `do_Login`, `do_Auth`,
//! `do_Bind`, `do_Endsess`).

use std::net::{IpAddr, SocketAddr};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BufMut;
use xroot_proto::request::ProtocolFlags as ClientFlags;
use xroot_proto::request::{Auth, Bind, Endsess, Expect, Login, Protocol, RequestBody};
use xroot_proto::response::{
    BindResponse, LoginResponse, ProtocolFlags, ProtocolResponse, Response, Wait,
};
use xroot_proto::{ErrorCode, RequestFrame, ServerType, StreamId};

use super::conn::{Conn, Phase, PROTOCOL_VERSION};
use crate::auth::{AuthContext, AuthOutcome};
use crate::fs::FileSystem;
use crate::handle::kit::ok_with;
use crate::net::tls::TlsRequirement;
use crate::observe::monitor::{cgi_value, LoginRecord, SessionMonitor};
use crate::session::Session;

/// What the `kXR_protocol` answer says this server is: a data server with
/// pgread/pgwrite and persist-on-close, as the stock 5.5.3 server answers
/// (PROTOCOL.md Appendix item 1).
pub(crate) const SERVER_FLAGS: ProtocolFlags =
    ProtocolFlags(ProtocolFlags::IS_SERVER.0 | ProtocolFlags::SUPPOSC.0 | ProtocolFlags::SUPPGRW.0);

/// What the handshake answer says this server is: a data server, or for a
/// redirector ([`FileSystem::REDIRECTOR`]) `kXR_LBalServer`, as the stock
/// manager says.
pub(crate) fn server_type<F: FileSystem>() -> ServerType {
    match F::REDIRECTOR {
        true => ServerType::LOAD_BALANCER,
        false => ServerType::DATA_SERVER,
    }
}

/// The `kXR_protocol` flags: [`SERVER_FLAGS`], or `kXR_isManager` alone for
/// a redirector (as the stock manager answers).
fn server_flags<F: FileSystem>() -> ProtocolFlags {
    match F::REDIRECTOR {
        true => ProtocolFlags::IS_MANAGER,
        false => SERVER_FLAGS,
    }
}

/// The client host of an address, IPv4-mapped IPv6 seen as IPv4.
fn host(addr: SocketAddr) -> IpAddr {
    addr.ip().to_canonical()
}

impl<F: FileSystem> Conn<F> {
    /// Decodes a session request; a frame that does not decode is answered
    /// `kXR_ArgInvalid`.
    async fn decode<R: RequestBody>(&self, frame: &RequestFrame) -> ControlFlow<(), R> {
        match R::decode(frame) {
            Ok(r) => ControlFlow::Continue(r),
            Err(e) => {
                self.error(
                    frame.header.streamid,
                    ErrorCode::ARG_INVALID,
                    &e.to_string(),
                )
                .await?;
                ControlFlow::Break(())
            }
        }
    }

    /// The TLS requirement, when the server has TLS.
    fn tls_requirement(&self) -> Option<TlsRequirement> {
        self.shared.config.tls_requirement()
    }

    /// `kXR_protocol`: the version and what the server is. No 'B' or 'S'
    /// record (no bind interfaces, no request signing). A client that sends
    /// `clientpv` 0 gets the old-style flags, the server type alone. With
    /// TLS, `kXR_haveTLS` and the requirement flags, and `kXR_gotoTLS` when
    /// the link switches right after this answer (see [`crate::net::tls`]).
    pub(crate) async fn protocol(&mut self, frame: RequestFrame) -> ControlFlow<()> {
        let p: Protocol = self.decode(&frame).await?;
        let mut goto = false;
        let flags = match (p.clientpv, self.tls_requirement()) {
            (0, _) => ProtocolFlags(server_type::<F>().0 as u32),
            (_, None) => server_flags::<F>(),
            (_, Some(req)) => {
                if !self.tls {
                    let want = p.flags.contains(ClientFlags::WANT_TLS);
                    self.able_tls = want || p.flags.contains(ClientFlags::ABLE_TLS);
                    goto = want
                        || (self.able_tls
                            && match p.expect.kind() {
                                Expect::BIND => req.data(),
                                Expect::LOGIN | Expect::TPC => req.login(),
                                _ => false,
                            });
                }
                let goto_flag = ProtocolFlags(if goto { ProtocolFlags::GOTO_TLS.0 } else { 0 });
                server_flags::<F>() | req.advertised() | goto_flag
            }
        };
        let answer = ProtocolResponse {
            pval: PROTOCOL_VERSION,
            flags,
            bifinfo: None,
            security: None,
        };
        self.reply(frame.header.streamid, ok_with(|b| answer.encode(b)))
            .await?;
        self.start_tls = goto;
        ControlFlow::Continue(())
    }

    /// After the login answer (or the final `kXR_auth` one): a session
    /// that needs TLS switches now, or, for a client that cannot do TLS, is
    /// refused `kXR_TLSRequired` and its link closed (`logLogin`).
    async fn logged_in_tls(&mut self, sid: StreamId) -> ControlFlow<()> {
        match self.tls_requirement() {
            Some(req) if req.session() && !self.tls => {}
            _ => return ControlFlow::Continue(()),
        }
        if self.able_tls {
            self.start_tls = true;
            return ControlFlow::Continue(());
        }
        tracing::debug!(peer = %self.peer, "session requires TLS but the client is incapable");
        let _ = self
            .error(sid, ErrorCode::TLS_REQUIRED, "session requires TLS support")
            .await;
        ControlFlow::Break(())
    }

    /// `kXR_login`: opens the session. The answer is the 16-byte session id
    /// (none for a login version 0), then the security token when an
    /// [`crate::Authenticator`] offers protocols.
    pub(crate) async fn login(&mut self, frame: RequestFrame) -> ControlFlow<()> {
        let login: Login = self.decode(&frame).await?;
        if self.tls_requirement().is_some_and(|r| r.login()) && !self.tls {
            let message = match self.able_tls {
                true => "login requires TLS be enabled",
                false => "login requires TLS support",
            };
            let sid = frame.header.streamid;
            return self.error(sid, ErrorCode::TLS_REQUIRED, message).await;
        }
        let user: String = String::from_utf8_lossy(login.username())
            .chars()
            .map(|c| if c.is_ascii_graphic() { c } else { '_' })
            .collect();
        let token = self
            .shared
            .config
            .authenticator
            .as_ref()
            .and_then(|a| LoginResponse::token(&a.protocols()));
        let cgi = login.cgi_str().unwrap_or_default().to_owned();
        let session = self.start_session(user, (login.pid, cgi), token.is_some());
        tracing::debug!(peer = %self.peer, user = %session.user, "login");
        let body = ok_with(|b| {
            if login.capver.version() > 0 {
                b.put_slice(&session.sessid);
            }
            if let Some(token) = &token {
                b.put_slice(token);
            }
        });
        self.reply(frame.header.streamid, body).await?;
        if token.is_none() {
            self.shared
                .monitor
                .unauthenticated
                .fetch_add(1, Ordering::Relaxed);
            self.monitor_login(&session);
        }
        match token {
            Some(_) => ControlFlow::Continue(()),
            None => self.logged_in_tls(frame.header.streamid).await,
        }
    }

    /// `kXR_auth` while authentication is pending.
    pub(crate) async fn auth(&mut self, frame: RequestFrame) -> ControlFlow<()> {
        let sid = frame.header.streamid;
        let auth: Auth = self.decode(&frame).await?;
        let Phase::LoggedIn { session, .. } = &self.phase else {
            return ControlFlow::Break(());
        };
        let session = session.clone();
        let Some(authn) = self.shared.config.authenticator.clone() else {
            return self.reply(sid, Response::Ok(Default::default())).await;
        };
        let credtype = String::from_utf8_lossy(auth.credtype_name()).into_owned();
        let ctx = AuthContext {
            peer: self.peer,
            login_user: &session.user,
            tls: self.tls,
        };
        let mut state = self.auth_state.take();
        let outcome = authn.authenticate_round(&ctx, &credtype, &auth.credentials, &mut state);
        self.auth_state = state;
        match outcome {
            AuthOutcome::Accepted(id) => {
                tracing::debug!(peer = %self.peer, ?id, "authenticated");
                session.authenticated_as(id);
                self.shared
                    .monitor
                    .authenticated
                    .fetch_add(1, Ordering::Relaxed);
                self.monitor_login(&session);
                self.phase = Phase::LoggedIn {
                    session,
                    auth_pending: false,
                };
                self.reply(sid, Response::Ok(Default::default())).await?;
                self.logged_in_tls(sid).await
            }
            AuthOutcome::More(parms) => self.reply(sid, Response::AuthMore(parms)).await,
            AuthOutcome::Refused(why) => {
                self.shared
                    .monitor
                    .auth_failures
                    .fetch_add(1, Ordering::Relaxed);
                if let Some(skipped) = self.shared.refusals.admit(std::time::Instant::now()) {
                    tracing::info!(
                        peer = %self.peer,
                        user = %session.user,
                        protocol = %credtype,
                        skipped,
                        "credential refused: {why}"
                    );
                }
                self.error(sid, ErrorCode::AUTH_FAILED, &why).await
            }
        }
    }

    /// Starts the session's monitoring, when the server has a
    /// [`crate::Config::monitor`]: takes its dictionary id and tells the
    /// observer who logged in (after authentication, when required).
    fn monitor_login(&self, session: &Session<F>) {
        let Some(observer) = &self.shared.config.monitor else {
            return;
        };
        let user_id = self.shared.next_dictid();
        let cgi = session.login_cgi.as_str();
        let identity = self
            .shared
            .config
            .authenticator
            .as_ref()
            .map(|_| &session.caller().identity);
        let record = LoginRecord {
            user_id,
            peer: self.peer,
            login_user: &session.user,
            pid: session.login_pid,
            release: cgi_value(cgi, "xrd.rn"),
            app_name: cgi_value(cgi, "xrd.appname"),
            info: cgi_value(cgi, "xrd.info"),
            identity,
        };
        let s = observer.login(&record);
        session.set_monitor(SessionMonitor::new(user_id, s));
    }

    /// `kXR_bind` on a fresh link: attach it to a logged-in session of the
    /// same client host as a substream, and answer its path id.
    pub(crate) async fn bind(&mut self, frame: RequestFrame) -> ControlFlow<()> {
        let sid = frame.header.streamid;
        let bind: Bind = self.decode(&frame).await?;
        if self.tls_requirement().is_some_and(|r| r.data()) && !self.tls {
            return self
                .error(sid, ErrorCode::TLS_REQUIRED, "bind requires TLS")
                .await;
        }
        let Some(session) = self.shared.session(&bind.sessid) else {
            return self
                .error(sid, ErrorCode::NOT_FOUND, "session not found")
                .await;
        };
        if !session.authenticated.load(Ordering::Acquire) {
            return self
                .error(sid, ErrorCode::ARG_INVALID, "session not logged in")
                .await;
        }
        if host(session.peer) != host(self.peer) {
            return self
                .error(
                    sid,
                    ErrorCode::NOT_AUTHORIZED,
                    "cross-host bind not allowed",
                )
                .await;
        }
        match self.bind_to(session) {
            Some(pathid) => {
                let answer = BindResponse { pathid };
                self.reply(sid, ok_with(|b| answer.encode(b))).await
            }
            None => {
                self.error(sid, ErrorCode::NO_MEMORY, "bind limit exceeded")
                    .await
            }
        }
    }

    /// `kXR_endsess`: ending this very session closes the link. Another
    /// session of the same user and host is ended (see `session.rs`): the
    /// answer is `kXR_ok` once it has — its requests done, its files closed
    /// and unlocked — or, if it has not within 3 s (the reference's
    /// `killWait`), `kXR_wait` 4 s "session still active" (its `waitKill`),
    /// after which the client asks again. A session that is not known
    /// (gone, or never ours) is answered `kXR_ok` (do_Endsess).
    pub(crate) async fn endsess(&mut self, frame: RequestFrame) -> ControlFlow<()> {
        let sid = frame.header.streamid;
        let end: Endsess = self.decode(&frame).await?;
        let Phase::LoggedIn { session, .. } = &self.phase else {
            return ControlFlow::Break(());
        };
        if end.sessid == session.sessid {
            return ControlFlow::Break(());
        }
        let Some(other) = self.shared.session(&end.sessid) else {
            return self.reply(sid, Response::Ok(Default::default())).await;
        };
        if host(other.peer) != host(self.peer) || other.user != session.user {
            return self
                .error(sid, ErrorCode::NOT_AUTHORIZED, "not session owner")
                .await;
        }
        other.kill();
        let link = self.link.clone();
        self.tasks.spawn(async move {
            let answer = match tokio::time::timeout(KILL_WAIT, other.ended()).await {
                Ok(()) => Response::Ok(Default::default()),
                Err(_) => Response::Wait(Wait {
                    seconds: WAIT_KILL,
                    message: "session still active".into(),
                }),
            };
            let _ = link.send(sid, &answer).await;
        });
        ControlFlow::Continue(())
    }
}

/// How long `kXR_endsess` waits for the session it ends (the reference's
/// `killWait`, 3 s).
const KILL_WAIT: Duration = Duration::from_secs(3);
/// The `kXR_wait` for a session not ended in time (the reference's
/// `waitKill`, 4 s).
const WAIT_KILL: i32 = 4;
