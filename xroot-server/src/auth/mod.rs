//! The security floor: who a client is and what it may do.
//!
//! - Authentication ([`Authenticator`], `authenticate.rs`): what the login
//!   reply offers and how a `kXR_auth` credential is checked, with the
//!   built-in protocols [`HostAuth`], [`UnixAuth`], [`SssAuth`] and, with
//!   the `ztn` feature (on by default), `ZtnAuth` (bearer tokens validated
//!   by `token`, with issuer keys from `jwks`) and, with the `gsi` feature
//!   (on by default), `GsiAuth` (X509 certificates and proxies); its
//!   result is an
//!   [`Identity`], and every backend call gets the session's [`Caller`].
//! - Authorization: one decision point (`decide.rs`) answers "may this
//!   caller do this on this path" for both what a token's [`scope`]s allow
//!   and what a backend's path [`policy`] allows; the server asks it for
//!   every request before the backend (`handle/scope_check.rs`) and
//!   [`LocalFs`](crate::LocalFs) asks it again on the path as resolved on
//!   disk.

mod authenticate;
mod decide;
#[cfg(feature = "gsi")]
mod gsi;
mod identity;
#[cfg(feature = "ztn")]
pub mod jwks;
pub mod policy;
pub mod scope;
mod sss;
#[cfg(feature = "ztn")]
pub mod token;
#[cfg(feature = "ztn")]
mod ztn;

pub use authenticate::{
    AnyOf, AuthContext, AuthOutcome, AuthState, Authenticator, HostAuth, UnixAuth,
};
pub use decide::authorize;
#[cfg(feature = "gsi")]
pub use gsi::GsiAuth;
pub use identity::{Caller, Identity};
pub use sss::SssAuth;
#[cfg(feature = "ztn")]
pub use ztn::{ZtnAuth, NON_TLS_REFUSAL};
