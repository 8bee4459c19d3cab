//! The link floor: one TCP link from its handshake to its close. The read
//! loop with its deadlines, its phases (new, logged in, bound) and the TLS
//! switch ([`conn`]), the gating rules it applies to every frame
//! ([`gate`]), its read buffer ([`buffer`]), and the session requests it
//! answers itself, in arrival order ([`login`]: protocol, login, auth,
//! bind, endsess). Everything else it admits and hands to
//! [`crate::handle`].

mod buffer;
mod conn;
mod gate;
mod login;

pub(crate) use conn::{run, run_link};
