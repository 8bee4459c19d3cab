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
//! The project README follows; its Rust samples are compiled as doctests.
#![doc = include_str!("../README.md")]

pub use xroot_cache as cache;
pub use xroot_client as client;
pub use xroot_proto as proto;
pub use xroot_sec as sec;
pub use xroot_server as server;
