//! The origin below the cache: where missing block runs come from and where
//! the namespace calls the cache does not answer itself go.
//!
//! - [`Origin`]: an open origin file. [`Origin::read_runs`] fetches the runs
//!   of one plan as **one** origin request when the protocol allows, and
//!   says how many wire requests it took and whether the data was checked
//!   by page crc32c on its way ([`Fetched`]).
//! - [`OriginFs`]: the origin's namespace (open, stat, dirlist, checksum).
//! - [`RemoteOrigin`] (and `impl Origin for xroot_client::File`): an XRootD
//!   server reached with [`xroot_client`].
//! - [`LocalOrigin`] / [`LocalOriginFile`]: a local directory, for tests.
//! - `From<OriginError> for FsError`: what the cache's own clients are told
//!   when the origin fails.

mod api;
mod error;
mod local;
mod remote;

pub use api::{Fetched, Origin, OriginFs};
pub use error::OriginError;
pub use local::{LocalOrigin, LocalOriginFile};
pub use remote::RemoteOrigin;

#[cfg(test)]
mod tests;
