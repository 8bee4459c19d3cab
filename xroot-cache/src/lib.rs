//! Block-run cache — **not implemented yet**.
//!
//! Planned (see the project README's status table): cache state in 4 kB
//! blocks, transfers in block runs (contiguous missing blocks merged across
//! small gaps, capped in size) so that one client vector read becomes one
//! origin request; single-flight fills; a disk store of sparse data files
//! with a sidecar of block bits and per-page crc32c; and a `CacheFs` that
//! plugs into the server as an XCache equivalent.
//!
//! Today the page geometry and crc32c it will use live in
//! [`xroot_proto::page`].
//!
//! Built so far: the disk store ([`store`]: sparse data files, sidecars with
//! block bits and per-page crc32c, atomic flush) and its [`purge`](mod@purge) between
//! disk-usage watermarks.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod plan;
pub mod stats;

pub use plan::{plan, BlockState, Geometry, Plan, PlanError, Run};
pub use stats::{CacheStats, CacheStatsSnapshot};
pub use xroot_proto as proto;

pub mod purge;
pub mod store;

pub use purge::{disk_usage, purge, PurgeReport, Watermarks};
pub use store::{Entry, Store, StoreError, Validators};
