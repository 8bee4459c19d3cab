//! Native third-party copy (TPC), both roles of a server, as the stock
//! `ofs.tpc` gives them (PROTOCOL.md "Third-party copy"):
//!
//! - **source**: a client's open carrying `tpc.key` and `tpc.dst` grants
//!   the read (`rendezvous`); the destination's open carrying the same
//!   key and `tpc.org` claims it, once, within the ttl. A claim that finds
//!   no grant waits for it until the ttl has passed, as the stock does,
//!   then fails with `[3010] tpc authorization expired`.
//! - **destination**: a client's write open carrying `tpc.src` orders a
//!   pull (`job`); the first `kXR_sync` on it starts the pull, the second
//!   is answered at once with `kXR_waitresp` and, when the pull ends, with
//!   its outcome in a `kXR_attn` asynresp. The pull itself is a
//!   [`Puller`], which the server does not implement: it needs a client,
//!   and `xroot-server` does not depend on `xroot-client` (ARCHITECTURE.md;
//!   `xroot-tools` gives `serve` one over `xroot-client`).
//!
//! `host` names hosts the way the stock does for TPC (reverse lookup).
//! The handlers that use all this are in `handle/tpc.rs`.

pub(crate) mod host;
pub(crate) mod job;
pub mod pull;
pub(crate) mod rendezvous;

use std::sync::Arc;
use std::time::Duration;

pub use pull::{PullError, PullRequest, PullSink, Puller};

/// Enables both TPC roles ([`crate::Config::tpc`]; the stock's `ofs.tpc`).
#[derive(Clone)]
pub struct TpcConfig {
    /// Pulls a file for the destination role.
    pub puller: Arc<dyn Puller>,
    /// How long a grant lives when its open gives no `tpc.ttl`, and how
    /// long a claim waits for its grant (15 s, the stock's `ofs.tpc ttl`
    /// default, measured: a guessed key is refused after 15 s).
    pub ttl: Duration,
    /// The longest `tpc.ttl` a client may ask for (the stock's `ttl`
    /// maximum; 15 s here, so the default allows no longer than the
    /// default).
    pub max_ttl: Duration,
    /// Pulls running at once in the server (8); more wait their turn.
    pub max_jobs: usize,
    /// Grants held at once (1024); an open that would add one more is
    /// refused with `kXR_Overloaded`.
    pub max_grants: usize,
    /// Bytes one pull holds in flight, all streams together (16 MiB): its
    /// read size is this divided by its streams, at most 8 MiB.
    pub window: usize,
}

impl TpcConfig {
    /// Both roles, pulling with `puller`, the other settings at their
    /// defaults.
    pub fn new(puller: Arc<dyn Puller>) -> TpcConfig {
        TpcConfig {
            puller,
            ttl: Duration::from_secs(15),
            max_ttl: Duration::from_secs(15),
            max_jobs: 8,
            max_grants: 1024,
            window: 16 << 20,
        }
    }

    /// The read size of a pull with `streams` streams: the window shared
    /// among them, at most 8 MiB, at least 64 KiB.
    pub fn chunk(&self, streams: u8) -> usize {
        (self.window / usize::from(streams.max(1))).clamp(64 << 10, 8 << 20)
    }
}

impl std::fmt::Debug for TpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpcConfig")
            .field("ttl", &self.ttl)
            .field("max_ttl", &self.max_ttl)
            .field("max_jobs", &self.max_jobs)
            .field("max_grants", &self.max_grants)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}
