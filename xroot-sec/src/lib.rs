//! Security for the xroot crates, shared by the client and the server:
//!
//! - [`tls`]: rustls configurations for `roots://` and the in-protocol TLS
//!   upgrade — trust from a grid CA directory (`X509_CERT_DIR`) or a CA
//!   bundle, a server's certificate and key (PEM), and errors that name
//!   why a handshake failed.
//! - [`sss`]: the `sss` (simple shared secret) protocol — keytabs in the
//!   format `xrdsssadmin` writes, and credentials sealed and opened with a
//!   keytab's key.
//! - [`ztn`]: the `ztn` protocol — the `kXR_auth` credential that carries a
//!   WLCG bearer token, and the token discovery of the WLCG Bearer Token
//!   Discovery profile.
//!
//! The client and server crates run the exchanges; the one socket type
//! here is [`tls::stream`], the plain-or-TLS stream both sides' links use.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod sss;
pub mod tls;
pub mod ztn;
