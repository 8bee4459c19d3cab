//! The server-wide state every link and request of one server shares:
//! the backend, the settings, the open sessions, the request and
//! vector-read limits, the memory budgets, the file locks, the cluster
//! events, and the backend-independent [`Monitor`] (statistics, open links,
//! the shutdown signal).

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{watch, Semaphore};

use crate::admit::budget::Pool;
use crate::admit::lock::Locks;
use crate::cluster::Events;
use crate::config::Config;
use crate::fs::FileSystem;
use crate::observe::stats::{LinkStats, Scope, ServerStats};
use crate::observe::Throttle;
use crate::session::Session;
use crate::tpc::rendezvous::Rendezvous;

/// Refused credentials logged at INFO per [`REFUSAL_INTERVAL`]; the rest are
/// counted and the next line logged says how many were left out.
const REFUSALS_LOGGED: u32 = 10;

/// See [`REFUSALS_LOGGED`].
const REFUSAL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// The parts of a server that do not depend on its backend: statistics,
/// the open links and the shutdown signal.
#[derive(Debug)]
pub(crate) struct Monitor {
    pub(crate) stats: Arc<Scope>,
    links: Mutex<BTreeMap<u64, (SocketAddr, Arc<Scope>)>>,
    connections: AtomicU64,
    pub(crate) logins: AtomicU64,
    peak_links: AtomicU64,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) local_addr: SocketAddr,
    /// When the server was bound, for its statistics report.
    pub(crate) started: std::time::SystemTime,
}

impl Monitor {
    /// Registers a new link; returns its id and its gauges.
    pub(crate) fn open_link(&self, peer: SocketAddr) -> (u64, Arc<Scope>) {
        let id = self.connections.fetch_add(1, Ordering::Relaxed);
        let scope = Scope::new();
        let mut links = self.links.lock().unwrap();
        links.insert(id, (peer, scope.clone()));
        self.peak_links
            .fetch_max(links.len() as u64, Ordering::Relaxed);
        (id, scope)
    }

    pub(crate) fn close_link(&self, id: u64) {
        self.links.lock().unwrap().remove(&id);
    }

    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub(crate) fn snapshot(&self) -> ServerStats {
        let links = self
            .links
            .lock()
            .unwrap()
            .values()
            .map(|(peer, scope)| LinkStats {
                peer: *peer,
                in_flight: scope.snapshot(),
            })
            .collect();
        ServerStats {
            in_flight: self.stats.snapshot(),
            links,
            connections: self.connections.load(Ordering::Relaxed),
            logins: self.logins.load(Ordering::Relaxed),
            peak_links: self.peak_links.load(Ordering::Relaxed),
        }
    }
}

/// What every session of a server shares.
pub(crate) struct Shared<F: FileSystem> {
    pub(crate) fs: F,
    pub(crate) config: Config,
    pub(crate) monitor: Arc<Monitor>,
    /// Logged-in sessions by session id (for `kXR_bind` and `kXR_endsess`).
    pub(crate) sessions: Mutex<HashMap<[u8; 16], Weak<Session<F>>>>,
    /// Requests in progress in the whole server.
    pub(crate) limit: Arc<Semaphore>,
    /// Vector reads in progress in the whole server.
    pub(crate) readv_limit: Arc<Semaphore>,
    /// The server's memory budget for answers ([`crate::admit::budget`]).
    pub(crate) budget: Pool,
    /// The server's memory budget for request payloads.
    pub(crate) payload_budget: Pool,
    /// Files open for reading and writing, by path ([`crate::admit::lock`]).
    pub(crate) locks: Locks,
    /// `have`/`gone` for the cluster links ([`crate::cluster`]).
    pub(crate) cluster_events: Events,
    /// How often a refused credential is logged (at INFO).
    pub(crate) refusals: Throttle,
    /// The third-party-copy grants ([`crate::tpc`]).
    pub(crate) rendezvous: Rendezvous,
    /// Turns of the third-party-copy pulls ([`crate::tpc::TpcConfig::max_jobs`]).
    pub(crate) tpc_jobs: Arc<Semaphore>,
    ids: AtomicU64,
    /// The monitoring dictionary ids, from 1 (the stock's `GetDictID`).
    dict_ids: AtomicU32,
    seed: RandomState,
}

impl<F: FileSystem> Shared<F> {
    /// The next monitoring dictionary id (a login's or an open's).
    pub(crate) fn next_dictid(&self) -> u32 {
        self.dict_ids.fetch_add(1, Ordering::Relaxed)
    }

    /// The state of a server of `fs` with `config`, listening on
    /// `local_addr`.
    pub(crate) fn new(fs: F, config: Config, local_addr: SocketAddr) -> Shared<F> {
        let monitor = Arc::new(Monitor {
            stats: Scope::new(),
            links: Mutex::new(BTreeMap::new()),
            connections: AtomicU64::new(0),
            logins: AtomicU64::new(0),
            peak_links: AtomicU64::new(0),
            shutdown: watch::Sender::new(false),
            local_addr,
            started: std::time::SystemTime::now(),
        });
        Shared {
            limit: Arc::new(Semaphore::new(config.max_requests.max(1))),
            readv_limit: Arc::new(Semaphore::new(config.max_readv.max(1))),
            budget: Pool::new(config.server_budget),
            payload_budget: Pool::new(config.server_payload_budget),
            locks: Locks::default(),
            cluster_events: Events::default(),
            refusals: Throttle::new(REFUSALS_LOGGED, REFUSAL_INTERVAL),
            rendezvous: Rendezvous::new(config.tpc.as_ref().map_or(0, |t| t.max_grants)),
            tpc_jobs: Arc::new(Semaphore::new(
                config.tpc.as_ref().map_or(1, |t| t.max_jobs.max(1)),
            )),
            fs,
            config,
            monitor,
            sessions: Mutex::new(HashMap::new()),
            ids: AtomicU64::new(0),
            dict_ids: AtomicU32::new(1),
            seed: RandomState::new(),
        }
    }

    /// A fresh, unguessable session id.
    pub(crate) fn new_sessid(&self) -> [u8; 16] {
        let n = self.ids.fetch_add(1, Ordering::Relaxed);
        let mut out = [0u8; 16];
        for (i, half) in out.chunks_exact_mut(8).enumerate() {
            let mut h = self.seed.build_hasher();
            h.write_u64(n);
            h.write_usize(i);
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
        out
    }

    /// The logged-in session `sessid`, if it is still alive.
    pub(crate) fn session(&self, sessid: &[u8; 16]) -> Option<Arc<Session<F>>> {
        self.sessions
            .lock()
            .unwrap()
            .get(sessid)
            .and_then(Weak::upgrade)
    }
}
