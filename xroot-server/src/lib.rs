//! XRootD server framework: implement [`FileSystem`] (and its [`File`]) and
//! stock clients (`xrdcp`, `xrdfs`, the Python bindings, ROOT) can use it.
//!
//! ```no_run
//! # async fn demo<F: xroot_server::FileSystem>(fs: F) -> std::io::Result<()> {
//! use xroot_server::{Config, Server};
//! let server = Server::bind("0.0.0.0:1094", fs, Config::default()).await?;
//! server.serve().await
//! # }
//! ```
//!
//! - [`Server`]: the TCP listener (IPv4 and IPv6), one task per connection,
//!   graceful shutdown through a [`ServerHandle`], [`ServerStats`].
//! - Sessions: the handshake, `kXR_protocol`, `kXR_login` with optional
//!   authentication ([`Authenticator`]: [`HostAuth`], [`UnixAuth`]),
//!   `kXR_bind` substreams, `kXR_endsess`, and the reference's gating of
//!   every request (see `session`).
//! - Dispatch: requests on one link run concurrently, each frame written
//!   whole; partial answers chunked as the reference chunks them; slow
//!   backend calls deferred with `kXR_waitresp` + `kXR_attn`.
//! - Vector reads overlap on a link, follow their `pathid` to a bound
//!   substream, and are bounded per file by the backend
//!   ([`ReadvConcurrency`]), per link and per server ([`Config`]).
//! - The two extensions of [`xroot_proto::ext`] (`kXR_pgreadv`, readv with
//!   per-element crc32c) are served and advertised through `kXR_Qconfig`,
//!   where a stock client never looks.
//! - [`LocalFs`] serves a directory; [`checksum`] has the adler32, crc32c
//!   and md5 it answers `kXR_Qcksum` with, also as a running [`Checksum`]
//!   for tools that verify what they copy.
//!
//! [`Checksum`]: checksum::Checksum
//!
//! The server speaks protocol 5.1.1 (0x511), as the stock xrootd 5.5.3
//! does. `kXR_sigver` is accepted and its signature ignored: signed
//! requests are not verified.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
mod budget;
pub mod checksum;
mod config;
mod dispatch;
mod fattr;
mod files;
pub mod fs;
mod io;
mod link;
pub mod local;
mod lock;
mod login;
mod namespace;
mod order;
mod path;
mod query;
mod readv;
mod server;
mod session;
pub mod stats;

pub use auth::{AnyOf, AuthContext, AuthOutcome, Authenticator, HostAuth, Identity, UnixAuth};
pub use config::Config;
pub use fs::{DirEntry, File, FileSystem, FsError, FsResult, OpenMode, ReadvConcurrency};
pub use local::LocalFs;
pub use server::{Server, ServerHandle};
pub use stats::{GaugeGuard, GaugeStats, InFlightStats, LinkStats, ServerStats, TimeGauge};
pub use xroot_proto as proto;
