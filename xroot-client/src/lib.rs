//! Async, multiplexed XRootD client.
//!
//! A [`Client`] keeps one **channel** per [`ChannelKey`] (scheme, user,
//! host, port, `xrdcl.intent` and credential CGI, as the reference client
//! composes its channel id). Each channel is one TCP connection (plus
//! optional `kXR_bind` substreams) with a writer task and a reader task;
//! many requests are in flight on it at once, each identified by its
//! streamid. One driver handles the whole response protocol for every
//! request: `kXR_oksofar`, `kXR_wait`, `kXR_waitresp` + `kXR_attn`,
//! redirects and errors.
//!
//! - [`Client`]: channels, [`Client::open`], [`Client::fs`],
//!   [`Client::stats`], [`Client::set_spread`] (see [`Spread`]).
//! - [`File`]: an open file.
//! - [`FileReader`]: `AsyncRead + AsyncSeek` over a [`File`].
//! - [`FileSystem`]: namespace and query calls.
//! - [`Error`]: every way a call fails, with the server's code kept.
//!
//! Wire formats come from [`xroot_proto`].
//!
//! ```no_run
//! use xroot_client::{Client, OpenFlags};
//!
//! # async fn run() -> Result<(), xroot_client::Error> {
//! let client = Client::new();
//! let file = client.open("root://127.0.0.1:1094//data/f.root", OpenFlags::READ).await?;
//! let parts = file.readv(&[(0, 4096), (1 << 20, 16384)]).await?; // (offset, length) pairs
//! let checked = file.pgread(0, 1 << 20).await?; // every 4 kB page verified with crc32c
//! file.close().await?;
//! let fs = client.fs("root://127.0.0.1:1094")?;
//! for entry in fs.dirlist("/data", true).await? {
//!     println!("{}", entry.name);
//! }
//! # let _ = (parts, checked);
//! # Ok(()) }
//! ```
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

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod channel;
mod client;
mod config;
mod dialer;
mod driver;
mod error;
mod file;
mod fs;
mod io;
mod key;
mod located;
mod pgread;
mod pgreadv;
mod pgwrite;
mod piece;
mod qconfig;
mod readv;
mod spread;
mod stats;
mod tpc;

pub use channel::{Channel, ServerInfo};
pub use client::Client;
pub use config::Config;
pub use error::{Error, Result, TlsCause};
pub use file::{File, OpenFlags};
pub use fs::{DirEntry, FileSystem};
pub use io::FileReader;
pub use key::ChannelKey;
pub use located::{DeepLocation, Listing, DEEP_LOCATE_HOPS};
pub use qconfig::ReadSupport;
pub use spread::Spread;
pub use stats::{ChannelStats, PathStats};
pub use tpc::{ThirdPartyCopy, TpcError};
pub use xroot_proto as proto;
pub use xroot_proto::response::{
    LocateEntry, SpaceInfo, StatExtended, StatFlags, StatInfo, StatVfs,
};
pub use xroot_proto::url::Url;
/// The `kXR_error` numbers of [`Error::Server`] (XProtocol.hh's `XErrorCode`).
pub use xroot_proto::ErrorCode;
/// TLS configuration for [`Config::tls`]: trust store, client certificate,
/// handshake errors (from `xroot-sec`).
pub use xroot_sec::tls::client as tls;

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
