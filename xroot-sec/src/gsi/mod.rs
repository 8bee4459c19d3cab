//! The `gsi` protocol: X509 certificates and proxies
//! (`SECURITY.md "gsi"`; xrootd 5.5.3 `src/XrdSecgsi/`, `src/XrdSut/`,
//! `src/XrdCrypto/`).
//!
//! Sans IO: [`bucket`] frames every message (the `XrdSutBuffer` codec),
//! [`ClientHandshake`] and [`ServerHandshake`] turn one message into the
//! next, [`CaStore`] checks chains against a hashed CA directory with its
//! CRLs, [`Credentials`] reads proxies and certificates.
//!
//! The handshake, in two round trips after the login offer
//! `&P=gsi,v:10600,c:ssl,ca:<hash>.0`:
//!
//! 1. client `kXGC_certreq` (1000): crypto module, version, the hash of
//!    its CA, options, and a random tag in the main buffer;
//! 2. server `kXGS_cert` (2001): its certificate, its Diffie-Hellman part
//!    signed with its key, the ciphers and digests it offers, the
//!    client's tag signed and a tag of its own;
//! 3. client `kXGC_cert` (1001): its Diffie-Hellman part signed with its
//!    (proxy) key, that key, the chosen cipher and digest, and in the main
//!    buffer, encrypted with the agreed key, its chain and the server's
//!    tag signed;
//! 4. server: `kXR_ok`, or a refusal.

pub mod bucket;
mod client;
mod creds;
pub mod crypto;
mod error;
mod gridmap;
mod server;
mod trust;
pub mod x509;

pub use bucket::{BufferError, ServerOffer, SutBuffer};
pub use client::ClientHandshake;
pub use creds::{default_ca_dir, Credentials};
pub use error::GsiError;
pub use gridmap::Gridmap;
pub use server::{GsiIdentity, ServerConfig, ServerHandshake, ServerStep};
pub use trust::{CaStore, Verified, ALLOWED_SKEW};

/// Our `gsi` version (`XrdSecgsiVERSION` of 5.5.3).
pub const VERSION: i32 = 10600;

/// From this version on the Diffie-Hellman parts are signed
/// (`XrdSecgsiVersDHsigned`); we refuse peers below it.
pub const VERSION_DH_SIGNED: i32 = 10400;

/// The client option "I always use a proxy" (`kOptsCreatePxy`): the
/// server then wants at least two certificates.
pub const OPT_CREATE_PROXY: i32 = 128;

/// Longest a handshake may take between its two rounds, seconds (the
/// stock's `TimeSkew`).
pub const TIME_SKEW: i64 = 300;

/// The steps (`kXGC_*`, `kXGS_*`).
pub mod step {
    /// Client: request the server's certificate.
    pub const CERTREQ: i32 = 1000;
    /// Client: here is my certificate.
    pub const CERT: i32 = 1001;
    /// Client: a signed proxy (delegation; not supported).
    pub const SIGPXY: i32 = 1002;
    /// Server: the login offer.
    pub const S_INIT: i32 = 2000;
    /// Server: here is my certificate.
    pub const S_CERT: i32 = 2001;
    /// Server: sign this proxy request (delegation; not supported).
    pub const S_PXYREQ: i32 = 2002;
}
