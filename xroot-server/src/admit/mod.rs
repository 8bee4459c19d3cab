//! The admission floor: the rules a request meets before its handler runs,
//! each owned by one module. Per-handle order ([`order`]: who waits for
//! whom on one open file), the memory budgets of a link and the server
//! ([`budget`]), the limits on requests and vector reads in progress
//! ([`limit`]), file locks between sessions ([`lock`]), and a session's
//! table of open files ([`files`]). Handlers never re-implement these.

pub(crate) mod budget;
pub(crate) mod files;
pub(crate) mod limit;
pub(crate) mod lock;
pub(crate) mod order;
