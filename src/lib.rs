//! xroot: the XRootD protocol in pure Rust.
//!
//! This facade re-exports the crates of the family:
//! - [`proto`] ([`xroot_proto`]): zero-copy, sans-IO wire codecs;
//! - [`client`] ([`xroot_client`]): the async multiplexed client;
//! - [`server`] ([`xroot_server`]): a server you implement one trait for;
//! - [`cache`] ([`xroot_cache`]): a block-run cache;
//! - [`sec`] ([`xroot_sec`]): security shared by client and server (TLS,
//!   `sss`, `ztn`).
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
//!
//! The project README follows; its Rust samples are compiled as doctests.
#![doc = include_str!("../README.md")]

pub use xroot_cache as cache;
pub use xroot_client as client;
pub use xroot_proto as proto;
pub use xroot_sec as sec;
pub use xroot_server as server;

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
