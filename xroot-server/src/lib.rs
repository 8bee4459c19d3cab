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
//!   authentication ([`Authenticator`]: [`HostAuth`], [`UnixAuth`], [`SssAuth`],
//!   [`ZtnAuth`] for bearer tokens validated by [`token`], with the `ztn`
//!   feature, on by default),
//!   `kXR_bind` substreams, `kXR_endsess`, and the reference's gating of
//!   every request (see `link/`).
//! - TLS ([`TlsConfig`]): offered to clients that ask (`roots://`) or
//!   required for login, the session or the data substreams
//!   ([`TlsRequirement`]), switched on the same connection as the
//!   reference does; the certificate reloads without a restart
//!   ([`ServerHandle::reload_tls`]).
//! - Dispatch: requests on one link run concurrently, each frame written
//!   whole; partial answers chunked as the reference chunks them; slow
//!   backend calls deferred with `kXR_waitresp` + `kXR_attn`.
//! - **Per-handle order.** Requests naming an open file are admitted in
//!   arrival order before they run: a `kXR_close`, a `kXR_truncate` by
//!   handle, and (for the writes) a `kXR_sync` or stat by handle complete
//!   only after every request on that handle that arrived before them;
//!   writes apply in arrival order where they overlap, reads see the writes
//!   sent before them and not those sent after; a request that arrives
//!   after the close gets `kXR_FileNotOpen`. Requests that cannot disturb
//!   each other (reads, disjoint writes) still run concurrently.
//! - **Bounded memory.** Read, pgread, readv and pgreadv answers are read
//!   and sent frame by frame within a memory budget per link and per server
//!   ([`Config::link_budget`], [`Config::server_budget`]); a client that
//!   does not read its answers meets back-pressure. Before login a
//!   connection is cheap ([`Config::max_login_dlen`],
//!   [`Config::login_timeout`], [`Config::frame_timeout`]).
//! - **Sessions end cleanly**: a session's requests in flight finish before
//!   its files are closed and unlocked; `kXR_endsess` answers `kXR_wait`
//!   until then. A file open for writing is locked against other opens
//!   (`kXR_FileLocked`, as the reference); one opened with `kXR_posc` and
//!   never closed is removed when its session ends.
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
//!
//! # Sources
//!
//! A comment citing `PROTOCOL.md §N.M` (or `PROTOCOL.md Appendix item K`)
//! points to the protocol notes that ship with xroot-proto
//! (`xroot-proto/PROTOCOL.md`, rendered as [`xroot_proto::notes`]); one
//! citing `SECURITY.md "TLS"` and the like points to the security notes
//! that ship with xroot-sec (`xroot-sec/SECURITY.md`, rendered as
//! [`xroot_sec::notes`]). Besides those, the sources are the upstream
//! `src/XProtocol/XProtocol.hh` and the other xrootd files named where they
//! are used (<https://github.com/xrootd/xrootd>).

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod admit;
pub mod allocator;
pub mod auth;
pub mod checksum;
pub mod cluster;
mod config;
pub mod fs;
mod handle;
mod link;
pub mod local;
mod net;
pub mod observe;
mod server;
mod session;
mod shared;
pub mod tpc;

/// The authorization scopes of bearer tokens (also [`auth::scope`]).
pub use auth::scope as authz;
#[cfg(feature = "gsi")]
pub use auth::GsiAuth;
#[cfg(feature = "ztn")]
pub use auth::ZtnAuth;
#[cfg(feature = "ztn")]
pub use auth::{jwks, token};
pub use auth::{
    AnyOf, AuthContext, AuthOutcome, AuthState, Authenticator, Caller, HostAuth, Identity, SssAuth,
    UnixAuth,
};
pub use cluster::ClusterConfig;
pub use config::Config;
pub use fs::{
    DirEntry, File, FileRegion, FileSystem, FsError, FsResult, OpenMode, ReadvConcurrency,
};
pub use local::LocalFs;
pub use net::tls::{TlsConfig, TlsRequirement};
pub use observe::stats;
pub use observe::{Outcome, RequestObserver, RequestRecord};
pub use server::{Server, ServerHandle};
pub use stats::{GaugeGuard, GaugeStats, InFlightStats, LinkStats, ServerStats, TimeGauge};
#[cfg(feature = "ztn")]
pub use token::{TokenConfig, TokenError, TokenValidator};
pub use tpc::{PullError, PullRequest, PullSink, Puller, TpcConfig};
pub use xroot_proto as proto;
/// What [`FileSystem`] calls answer with: stat text, checksums.
pub use xroot_proto::response::{ChecksumAnswer, StatExtended, StatFlags, StatInfo};
/// The `kXR_error` numbers of [`FsError::Error`] (XProtocol.hh's `XErrorCode`).
pub use xroot_proto::ErrorCode;
pub use xroot_sec::tls::server::{ServerTls, ServerTlsError, ServerTlsFiles};

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
