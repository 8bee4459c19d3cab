//! Membership in a stock XRootD cluster: the server as a *data server* that
//! logs into one or more managers (a stock `cmsd` with `all.role manager`),
//! so the manager's redirector sends clients to it.
//!
//! A manager learns which data server holds a file by asking each one
//! (`state`); a node that has it answers `have`, one that does not stays
//! silent. This server answers from its backend: [`FileSystem::stat`] of the
//! path, so [`crate::LocalFs`] answers for the files in its directory and a
//! cache backend for every file its origin has (it joins as a proxy-style
//! member that can serve anything). The manager also asks for the node's
//! load (`usage`) and free space (`space`), and pings it every minute; it
//! drops a node that stays silent.
//!
//! One task per manager ([`ClusterConfig::managers`]) holds the link:
//! login, answers, `have`/`gone` when a client creates or removes a file
//! here, reconnecting with back-off when the link drops, following `try`
//! to the managers the manager names, and `status` suspend on a graceful
//! shutdown so the manager stops selecting this node before its links close.
//! The wire format is [`xroot_proto::cms`].
//!
//! [`FileSystem::stat`]: crate::FileSystem::stat

mod director;
mod member;

pub use director::{NoFile, Redirector};

use std::time::Duration;

use tokio::sync::broadcast;

pub(crate) use member::run;

/// How a server takes part in a cluster ([`crate::Config::cluster`]).
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The managers' cmsd addresses, `host:port` (`all.manager` of the
    /// reference). The node logs into each.
    pub managers: Vec<String>,
    /// The paths this node exports and how, one per entry: `"w /"` (read
    /// and write under `/`), `"r /data"` (read only). Default `["w /"]`; a
    /// manager sends writes only to nodes with a `w` path.
    pub paths: Vec<String>,
    /// The host name the node reports (`myHN`); `None`: this machine's.
    pub host_name: Option<String>,
    /// The port the manager sends clients to; `None`: the server's own.
    pub data_port: Option<u16>,
    /// The first wait before logging in again after the link to a
    /// manager failed; doubled after each failure (1 s).
    pub reconnect_min: Duration,
    /// The longest wait between attempts (30 s).
    pub reconnect_max: Duration,
    /// A manager silent for this long is taken as gone and the link
    /// reopened (180 s: a stock manager pings every 60 s).
    pub silence_timeout: Duration,
    /// Connecting and logging in must finish within this long (10 s).
    pub login_timeout: Duration,
    /// `state` lookups answered at once per manager (64); more wait.
    pub max_lookups: usize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            managers: Vec::new(),
            paths: vec!["w /".to_string()],
            host_name: None,
            data_port: None,
            reconnect_min: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(30),
            silence_timeout: Duration::from_secs(180),
            login_timeout: Duration::from_secs(10),
            max_lookups: 64,
        }
    }
}

impl ClusterConfig {
    /// A data server of the managers at `managers` (`host:port`),
    /// exporting `/` read-write.
    pub fn data_server(managers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ClusterConfig {
            managers: managers.into_iter().map(Into::into).collect(),
            ..ClusterConfig::default()
        }
    }
}

/// What the server tells its managers on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A file was created here.
    Have(String),
    /// A file was removed from here.
    Gone(String),
}

/// Where request handlers post [`Event`]s; the manager links take them.
/// Posting without a cluster costs a failed send to no receiver.
#[derive(Debug)]
pub(crate) struct Events(broadcast::Sender<Event>);

/// Events a manager link may fall behind by before it misses some (the
/// manager then learns of those files when it asks).
const EVENT_BACKLOG: usize = 1024;

impl Default for Events {
    fn default() -> Self {
        Events(broadcast::channel(EVENT_BACKLOG).0)
    }
}

impl Events {
    /// `path` was created here.
    pub(crate) fn have(&self, path: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(Event::Have(path.to_string()));
        }
    }

    /// `path` was removed from here.
    pub(crate) fn gone(&self, path: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(Event::Gone(path.to_string()));
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0.subscribe()
    }
}
