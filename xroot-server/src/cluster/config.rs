//! [`ClusterConfig`]: how this server joins a stock cluster.

use std::time::Duration;

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
