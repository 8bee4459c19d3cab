//! A channel: the logical connection to one endpoint under one
//! [`ChannelKey`], which (re)connects on demand.
//!
//! The channel holds at most one live [`Link`]. The first request that finds
//! none starts connecting; requests that arrive meanwhile wait for the
//! outcome on a watch channel rather than on a lock, so no lock is held
//! across the handshake and login round trips. When a link dies its requests
//! fail with [`Error::ConnectionLost`] and the next request connects and
//! logs in again, then ends the session of the connection lost
//! (`kXR_endsess`) before any other request, as XrdCl does.

mod auth;
mod link;
pub(crate) mod login;
mod server_config;
mod streams;
mod tls;
mod transport;

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

pub(crate) use link::{InFlight, Link};
pub use login::ServerInfo;
pub(crate) use server_config::ServerConfig;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::key::ChannelKey;
use crate::stats::ChannelStats;

#[derive(Debug)]
enum State {
    /// No connection; the last attempt's failure, if any.
    Down(Option<Error>),
    Connecting,
    Up(Arc<Link>),
}

/// Whether a failed attempt at connecting is worth another: the
/// connection refused, reset, cut or unreachable, or the window passed (a
/// name that does not resolve, a refused login, authentication or TLS is
/// final, as XrdCl's fatal errors are).
fn may_pass(e: &Error) -> bool {
    use std::io::ErrorKind as K;
    match e {
        Error::Io { source, .. } => matches!(
            source.kind(),
            K::ConnectionRefused
                | K::ConnectionReset
                | K::ConnectionAborted
                | K::NotConnected
                | K::BrokenPipe
                | K::TimedOut
                | K::UnexpectedEof
                | K::HostUnreachable
                | K::NetworkUnreachable
                | K::NetworkDown
                | K::AddrNotAvailable
                | K::Interrupted
        ),
        Error::ConnectionLost { .. } | Error::Timeout { .. } => true,
        _ => false,
    }
}

/// The same failure again, for each caller that waited on one connection
/// attempt ([`Error`] is not `Clone`: an I/O error is copied as its kind
/// and message, and so are the variants connecting cannot produce).
fn copy_error(e: &Error) -> Error {
    match e {
        Error::Server { code, message } => Error::Server {
            code: *code,
            message: message.clone(),
        },
        Error::Protocol { endpoint, source } => Error::Protocol {
            endpoint: endpoint.clone(),
            source: source.clone(),
        },
        Error::UnexpectedResponse { request, detail } => Error::UnexpectedResponse {
            request,
            detail: detail.clone(),
        },
        Error::ConnectionLost { endpoint } => Error::ConnectionLost {
            endpoint: endpoint.clone(),
        },
        Error::Timeout { what, after } => Error::Timeout {
            what,
            after: *after,
        },
        Error::AuthUnsupported { endpoint, offered } => Error::AuthUnsupported {
            endpoint: endpoint.clone(),
            offered: offered.clone(),
        },
        Error::Tls { endpoint, cause } => Error::Tls {
            endpoint: endpoint.clone(),
            cause: cause.clone(),
        },
        Error::Credential {
            endpoint,
            protocol,
            reason,
        } => Error::Credential {
            endpoint: endpoint.clone(),
            protocol: protocol.clone(),
            reason: reason.clone(),
        },
        Error::Io { endpoint, source } => Error::Io {
            endpoint: endpoint.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        other => Error::Io {
            endpoint: "?".to_string(),
            source: std::io::Error::new(other.kind(), other.to_string()),
        },
    }
}

/// A connection attempt in progress. It publishes its outcome when dropped,
/// so that a caller that gives up mid-way (its request deadline passed, its
/// future was dropped) leaves the channel `Down` for the next caller rather
/// than `Connecting` forever.
struct Attempt<'a> {
    channel: &'a Channel,
    outcome: State,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        let outcome = std::mem::replace(&mut self.outcome, State::Down(None));
        *self.channel.state.lock().unwrap() = outcome;
        self.channel.changed.send_modify(|n| *n += 1);
    }
}

/// The logical connection to one endpoint (see the module docs).
#[derive(Debug)]
pub struct Channel {
    key: ChannelKey,
    config: Arc<Config>,
    state: Mutex<State>,
    /// Bumped whenever `state` leaves `Connecting`.
    changed: watch::Sender<u64>,
    /// Counters of this channel's earlier (dead) links.
    retired: Mutex<ChannelStats>,
    /// The session id of the last login, ended with `kXR_endsess` by the
    /// next connection.
    last_session: Mutex<Option<[u8; 16]>>,
    substreams: usize,
}

impl Channel {
    pub(crate) fn new(key: ChannelKey, config: Arc<Config>, substreams: usize) -> Channel {
        Channel {
            key,
            config,
            state: Mutex::new(State::Down(None)),
            changed: watch::channel(0).0,
            retired: Mutex::new(ChannelStats::default()),
            last_session: Mutex::new(None),
            substreams,
        }
    }

    /// The channel's key.
    pub fn key(&self) -> &ChannelKey {
        &self.key
    }

    /// A live link, connecting (and logging in) first if there is none.
    /// Errors: those of connecting ([`Error::Io`], [`Error::Timeout`],
    /// [`Error::Server`] for a refused login, [`Error::AuthUnsupported`],
    /// [`Error::Tls`]).
    pub(crate) async fn link(&self) -> Result<Arc<Link>> {
        loop {
            let mut waiter = {
                let mut state = self.state.lock().unwrap();
                match &*state {
                    State::Up(link) if !link.is_dead() => return Ok(Arc::clone(link)),
                    State::Connecting => self.changed.subscribe(),
                    State::Up(dead) => {
                        self.retired.lock().unwrap().merge(&dead.stats.snapshot());
                        *state = State::Connecting;
                        break;
                    }
                    State::Down(_) => {
                        *state = State::Connecting;
                        break;
                    }
                }
            };
            let _ = waiter.changed().await;
            let state = self.state.lock().unwrap();
            if let State::Down(Some(e)) = &*state {
                return Err(copy_error(e));
            }
        }
        // this caller connects; the others wait on `changed`
        let mut attempt = Attempt {
            channel: self,
            outcome: State::Down(None),
        };
        let result = self.connect().await;
        attempt.outcome = match &result {
            Ok(link) => State::Up(Arc::clone(link)),
            Err(e) => State::Down(Some(copy_error(e))),
        };
        result
    }

    async fn connect(&self) -> Result<Arc<Link>> {
        let previous = *self.last_session.lock().unwrap();
        let (setup, info) = self.establish(previous).await?;
        *self.last_session.lock().unwrap() = Some(info.sessid);
        let link = Link::start(setup, info, self.config.stream_timeout);
        // a plain data stream when TLS carries the main one and
        // XRD_TLSNODATA asks for plain data (XrdCl's StreamNumber)
        let substreams = tls::stream_count(
            self.substreams,
            link.info.tls,
            self.config.tls_no_data,
            link.info.flags,
        );
        // substreams only toward data servers (PROTOCOL.md §9)
        if substreams > 1 && link.info.is_data_server() {
            link.ping().await?; // binds only once the login is complete
            for _ in 1..substreams {
                match login::bind(&self.key, &self.config, &link.info).await {
                    Ok((setup, pathid)) => {
                        link.add_substream(setup, pathid, self.config.stream_timeout)
                    }
                    Err(e) => {
                        tracing::warn!(endpoint = %self.key.endpoint(), error = %e, "kXR_bind failed; continuing with fewer substreams");
                        break;
                    }
                }
            }
        }
        Ok(link)
    }

    /// The main stream connected and logged in, in up to
    /// `connect_attempts` attempts: after one that fails for a reason that
    /// may pass ([`may_pass`]), the next starts when its connection window
    /// (`connect_timeout`) ends, as XrdCl's `Stream::OnConnectError` does.
    /// Errors: the last attempt's, as [`login::establish`].
    async fn establish(&self, previous: Option<[u8; 16]>) -> Result<(login::Setup, ServerInfo)> {
        let attempts = self.config.connect_attempts.max(1);
        let mut attempt = 1;
        loop {
            let started = tokio::time::Instant::now();
            match login::establish(&self.key, &self.config, previous).await {
                Err(e) if attempt < attempts && may_pass(&e) => {
                    let next = started + self.config.connect_timeout;
                    tracing::info!(endpoint = %self.key.endpoint(), error = %e, attempt, attempts,
                        wait = ?next.saturating_duration_since(tokio::time::Instant::now()),
                        "connecting failed; trying again when the connection window ends");
                    tokio::time::sleep_until(next).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// The live link, if connected (no connecting).
    pub(crate) fn current(&self) -> Option<Arc<Link>> {
        match &*self.state.lock().unwrap() {
            State::Up(l) if !l.is_dead() => Some(Arc::clone(l)),
            _ => None,
        }
    }

    /// What the server said at login, if connected.
    pub fn server_info(&self) -> Option<ServerInfo> {
        self.current().map(|l| l.info.clone())
    }

    /// The bound substreams of the live connection, in binding order: each
    /// one's pathid and whether it runs TLS. Empty when not connected or
    /// none is bound.
    pub fn substreams(&self) -> Vec<(u8, bool)> {
        self.current().map_or_else(Vec::new, |l| {
            let ids = l.pathids.lock().unwrap().clone();
            let tls = l.path_tls.lock().unwrap().clone();
            ids.into_iter().zip(tls).collect()
        })
    }

    /// Counters since the channel was created, over all its connections.
    pub fn stats(&self) -> ChannelStats {
        let mut s = self.retired.lock().unwrap().clone();
        if let State::Up(l) = &*self.state.lock().unwrap() {
            s.merge(&l.stats.snapshot());
        }
        s
    }

    /// Requests in flight on this channel now.
    pub fn in_flight(&self) -> usize {
        self.current().map_or(0, |l| l.in_flight())
    }
}
