//! The protocol's numbers (xrootd 5.5.3 `src/XrdSecgsi/XrdSecProtocolgsi.hh`),
//! below every other module of `gsi` so that none reaches up to `mod.rs`
//! for them; `gsi` re-exports them.

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
