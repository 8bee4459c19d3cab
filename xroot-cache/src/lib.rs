//! A block-run cache for XRootD: cache **state** in blocks (4 kB by
//! default), **transfers** in block runs, so that one client vector read
//! becomes one origin request however many blocks it touches.
//!
//! The layers, bottom up:
//! - [`origin`]: the file server below ([`Origin`], [`OriginFs`]): an
//!   [`xroot_client::File`] through [`RemoteOrigin`] (pgread, pgreadv or
//!   readv — page checksums from the network where the origin offers
//!   them), or a local directory ([`LocalOrigin`], for tests).
//! - [`plan`](mod@plan): a pure function from requested extents to the
//!   missing blocks, to runs (contiguous, merged across small gaps, capped
//!   at `io_size`), to origin vector reads within the protocol's limits.
//! - [`store`]: a sparse data file and a sidecar per file (block bits, a
//!   crc32c per 4 kB page, the origin's size and mtime); data is written
//!   before its bit and the sidecar replaced atomically, so a crash loses
//!   cached pages but never serves wrong ones; on a full disk what is on
//!   disk stays indexed. [`purge`](mod@purge) keeps disk usage between
//!   watermarks (by default 0.90 and 0.95 of the disk, as the stock XCache),
//!   least recently used files first.
//! - [`CachedFile`]: block states and single-flight fills under a RAM
//!   budget; [`CacheFs`] puts it behind [`xroot_server::Server`] as a
//!   caching proxy (the XCache equivalent, `examples/xcache.rs`).
//! - [`stats`]: client reads and origin requests in flight, bytes asked,
//!   fetched and served from disk.
//!
//! # Sources
//!
//! A comment citing `PROTOCOL.md §N.M` (or `PROTOCOL.md Appendix item K`)
//! points to the protocol notes that ship with xroot-proto
//! (`xroot-proto/PROTOCOL.md`, rendered as [`xroot_proto::notes`]); one
//! citing `SECURITY.md "TLS"` and the like points to the security notes
//! that ship with xroot-sec (`xroot-sec/SECURITY.md`, rendered as
//! `xroot_sec::notes`). Besides those, the sources are the upstream
//! `src/XProtocol/XProtocol.hh` and the other xrootd files named where they
//! are used (<https://github.com/xrootd/xrootd>).

// One exception, commented: byte-range locks (`store::live`), which rustix
// does not wrap.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cachefs;
pub mod file;
pub mod origin;
pub mod plan;
pub mod purge;
pub mod stats;
pub mod store;

pub use cachefs::{CacheFs, CacheHandle, OriginFile};
pub use file::{CacheConfig, CacheError, CachedFile, FileAccess};
pub use origin::{
    Fetched, LocalOrigin, LocalOriginFile, Origin, OriginError, OriginFs, RemoteOrigin,
};
pub use plan::{plan, BlockState, Geometry, Plan, PlanError, Run};
pub use purge::{
    disk_space, disk_usage, purge, purge_disk, BadLevel, DiskPurge, DiskSpace, Level, PurgeConfig,
    PurgeReport, Watermarks,
};
pub use stats::{CacheStats, CacheStatsSnapshot};
pub use store::{is_full, Checked, Claim, Entry, Store, StoreError, Validators};
pub use xroot_proto as proto;

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
