//! rustls configurations for XRootD links (`roots://` and the in-protocol
//! upgrade): [`client`] for the side that connects, [`server`] for the side
//! that accepts. Both use rustls with the *ring* crypto provider.
//! [`stream`] is the link's byte stream, plain or TLS, and its halves.

pub mod client;
pub mod server;
pub mod stream;
