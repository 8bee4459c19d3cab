//! One request, from its admission to its last frame. The floor has three
//! storeys: the handler kit ([`kit`]: the context a handler gets, where its
//! answer goes, the shared small answers) with the request-path screening
//! ([`path`]) and the token-scope check ([`scope_check`]) at the bottom;
//! the handlers, one module per family of requests ([`file_requests`],
//! [`readv`], [`namespace`], [`query`], [`fattr`]) above it; and the
//! dispatch table ([`dispatch`]) on top, which runs a request's task and
//! picks its handler.

pub(crate) mod dispatch;
pub(crate) mod fattr;
pub(crate) mod file_requests;
pub(crate) mod kit;
pub(crate) mod namespace;
pub(crate) mod path;
pub(crate) mod query;
pub(crate) mod readv;
pub(crate) mod scope_check;
pub(crate) mod tpc;
