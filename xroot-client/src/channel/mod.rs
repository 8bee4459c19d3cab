//! A channel: the logical connection to one endpoint under one
//! [`ChannelKey`], which (re)connects on demand.
//!
//! The channel holds at most one live [`Link`]. The first request that finds
//! none starts connecting; requests that arrive meanwhile wait for the
//! outcome on a watch channel rather than on a lock, so no lock is held
//! across the handshake and login round trips. When a link dies its requests
//! fail with [`Error::ConnectionLost`] and the next request connects and
//! logs in again.

mod link;
pub(crate) mod login;
mod streams;

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

pub(crate) use link::{InFlight, Link};
pub use login::ServerInfo;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::key::ChannelKey;
use crate::stats::ChannelStats;

#[derive(Debug)]
enum State {
    /// No connection; the last attempt's failure, if any.
    Down(Option<(std::io::ErrorKind, String)>),
    Connecting,
    Up(Arc<Link>),
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
            substreams,
        }
    }

    /// The channel's key.
    pub fn key(&self) -> &ChannelKey {
        &self.key
    }

    /// A live link, connecting (and logging in) first if there is none.
    /// Errors: those of connecting ([`Error::Io`], [`Error::Timeout`],
    /// [`Error::Server`] for a refused login, [`Error::AuthUnsupported`]).
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
            if let State::Down(Some((kind, msg))) = &*state {
                return Err(Error::Io {
                    endpoint: self.key.endpoint(),
                    source: std::io::Error::new(*kind, msg.clone()),
                });
            }
        }
        // this caller connects; the others wait on `changed`
        let result = self.connect().await;
        let mut state = self.state.lock().unwrap();
        let out = match result {
            Ok(link) => {
                *state = State::Up(Arc::clone(&link));
                Ok(link)
            }
            Err(e) => {
                *state = State::Down(Some((e.kind(), e.to_string())));
                Err(e)
            }
        };
        self.changed.send_modify(|n| *n += 1);
        out
    }

    async fn connect(&self) -> Result<Arc<Link>> {
        let (setup, info) = login::establish(&self.key, &self.config).await?;
        let link = Link::start(setup, info, self.config.stream_timeout);
        // substreams only toward data servers (PROTOCOL.md §9)
        if self.substreams > 1 && link.info.is_data_server() {
            link.ping().await?; // binds only once the login is complete
            for _ in 1..self.substreams {
                match login::bind(&self.key, &self.config, link.info.sessid).await {
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
