//! The workspace's test kit: what the tests, benches and examples of the
//! xroot crates share, in one unpublished crate (`publish = false`) that
//! they take as a dev-dependency.
//!
//! - Peers to test against: the stock xrootd and its tools ([`stock`]), a
//!   stock cluster of `cmsd` and data servers ([`cluster`]), the stock
//!   XCache ([`xcache`]); our server ([`ours`]) and our cache
//!   ([`our_cache`]), in-process or as the examples' processes
//!   ([`example`] builds those); a scripted peer for client tests
//!   ([`scripted`]).
//! - Relays between a client and a server: one that delays each frame
//!   ([`delay_proxy`]), one that cuts the link ([`cut_proxy`]), one that
//!   spoils answers ([`corrupt_proxy`]).
//! - Clients for server tests: a raw connection writing requests as they
//!   are ([`raw`]), a TLS link ([`tls_link`]) and a TLS client
//!   ([`tls_client`]).
//! - Credentials: a throw-away PKI made with `openssl` ([`pki`], the one
//!   recipe every test uses), a token issuer ([`tokens`]) and `sss`
//!   keytabs made by `xrdsssadmin` ([`sss`]).
//! - The golden vectors of `tests/vectors`, loaded, split and paired
//!   ([`vectors`], with the [`request!`] and [`response!`] macros).
//! - A UDP collector for the monitoring streams ([`collector`]).
//! - Running programs and reading what they printed ([`tools`]), uproot
//!   ([`uproot`]), the benches' files and figures ([`bench`](mod@bench)) and the
//!   recorded NanoAOD trace ([`trace`](mod@trace)).
//! - The build-script probes that mark a test ignored when its peer is
//!   missing ([`probes`]).
//!
//! Paths the kit reads (the vectors, the uproot check, the workspace's
//! examples) are found from this crate's directory, so it is used from
//! within the workspace only.

#![warn(missing_docs)]

pub mod bench;
pub mod cluster;
pub mod collector;
pub mod corrupt_proxy;
pub mod cut_proxy;
pub mod delay_proxy;
pub mod example;
pub mod our_cache;
pub mod ours;
pub mod pki;
pub mod probes;
pub mod raw;
pub mod scripted;
pub mod sss;
pub mod stock;
pub mod tls_client;
pub mod tls_link;
pub mod tokens;
pub mod tools;
pub mod trace;
pub mod uproot;
pub mod vectors;
pub mod xcache;

#[doc(hidden)]
pub use xroot_proto; // for the macros
