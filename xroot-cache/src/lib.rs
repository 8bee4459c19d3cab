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
//! - [`origin`]: the origin below the cache ([`Origin`], [`OriginFs`],
//!   [`RemoteOrigin`], [`LocalOrigin`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod origin;

pub use origin::{
    Fetched, LocalOrigin, LocalOriginFile, Origin, OriginError, OriginFs, OriginStat, RemoteOrigin,
};
pub use xroot_proto as proto;
