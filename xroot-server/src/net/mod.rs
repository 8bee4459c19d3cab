//! The network floor: a link's socket, plain or TLS, and the switch between
//! them ([`transport`], [`tls`]), and the writer task that owns a link's
//! write half and writes whole frames, from memory or straight from a file
//! ([`writer`], [`zero_copy`]). Nothing here knows requests.

pub(crate) mod tls;
pub(crate) mod transport;
pub(crate) mod writer;
pub(crate) mod zero_copy;
