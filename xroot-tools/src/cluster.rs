//! The cluster flags `serve` and `xcache` share: `--role` and `--manager`,
//! in the stock configuration's words (`all.role`, `all.manager`).

use xroot_server::ClusterConfig;

/// A role in a stock XRootD cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// A data server: logs into each `--manager` cmsd, which then sends
    /// clients here for the files this server has.
    Server,
    /// A redirector in front of the `--manager` cmsd (as the stock manager
    /// `xrootd` is): sends every client to a data server of the cluster.
    Manager,
}

/// `--role server|manager --manager HOST:CMSPORT...`
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// The role in a stock cluster: `server` (a data server of the
    /// managers) or `manager` (a redirector in front of the manager's cmsd).
    #[arg(long, value_enum, requires = "managers")]
    pub role: Option<Role>,
    /// A manager's cmsd, HOST:PORT (repeat for several managers).
    #[arg(long = "manager", value_name = "HOST:CMSPORT", requires = "role")]
    pub managers: Vec<String>,
}

impl ClusterArgs {
    /// The cluster settings for `--role`, exporting `paths` (`"w /"`,
    /// `"r /"`) as a data server; `None` without `--role`.
    pub fn config(&self, paths: &[&str]) -> Option<ClusterConfig> {
        self.role?;
        Some(ClusterConfig {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            ..ClusterConfig::data_server(self.managers.clone())
        })
    }
}
