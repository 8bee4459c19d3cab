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

mod config;
mod director;
mod events;
mod member;

pub use config::ClusterConfig;
pub use director::{NoFile, Redirector};
pub(crate) use events::Events;
pub(crate) use member::run;
