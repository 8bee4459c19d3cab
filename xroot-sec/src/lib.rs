//! Security for the xroot crates, shared by the client and the server:
//!
//! - [`tls`]: rustls configurations for `roots://` and the in-protocol TLS
//!   upgrade — trust from a grid CA directory (`X509_CERT_DIR`) or a CA
//!   bundle, a server's certificate and key (PEM), and errors that name
//!   why a handshake failed.
//! - [`sss`]: the `sss` (simple shared secret) protocol — keytabs in the
//!   format `xrdsssadmin` writes, and credentials sealed and opened with a
//!   keytab's key.
//! - `gsi` (feature `gsi`): X509 certificates and proxies — the
//!   `XrdSutBuffer` codec, the client and server handshakes sans IO, chain
//!   checks against a hashed CA directory.
//! - [`ztn`]: the `ztn` protocol — the `kXR_auth` credential that carries a
//!   WLCG bearer token, and the token discovery of the WLCG Bearer Token
//!   Discovery profile.
//!
//! The client and server crates run the exchanges; the one socket type
//! here is [`tls::stream`], the plain-or-TLS stream both sides' links use.
//!
//! # Sources
//!
//! The facts behind this crate are collected in its security notes, which
//! ship with it as `xroot-sec/SECURITY.md` and are rendered as [`notes`];
//! they name the xrootd 5.5.3 sources they come from (`XProtocol.hh`,
//! `XrdXrootdXeq.cc`, `XrdClXRootDTransport.cc`, the `XrdSecztn` and
//! `XrdSecsss` plug-ins). A comment citing `SECURITY.md "TLS"` points to the
//! section of that name. `PROTOCOL.md §N.M` cites the protocol notes that
//! ship with xroot-proto (`xroot-proto/PROTOCOL.md`, rendered as
//! `xroot_proto::notes`), besides the upstream `src/XProtocol/XProtocol.hh`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "gsi")]
pub mod gsi;
pub mod sss;
pub mod tls;
pub mod ztn;

/// The project's notes on TLS, `ztn`, `sss` and `gsi` (`xroot-sec/SECURITY.md`),
/// cited across the crates as `SECURITY.md "TLS"` and so on.
#[doc = ""]
#[doc = include_str!("../SECURITY.md")]
pub mod notes {}

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
