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
mod consts;
mod creds;
pub mod crypto;
mod error;
mod gridmap;
mod server;
mod trust;
pub mod x509;

pub use bucket::{BufferError, ServerOffer, SutBuffer};
pub use client::ClientHandshake;
pub use consts::{step, OPT_CREATE_PROXY, TIME_SKEW, VERSION, VERSION_DH_SIGNED};
pub use creds::{default_ca_dir, Credentials};
pub use error::GsiError;
pub use gridmap::Gridmap;
pub use server::{GsiIdentity, ServerConfig, ServerHandshake, ServerStep};
pub use trust::{CaStore, Verified, ALLOWED_SKEW};
