//! What the server tells about itself: requests in flight per link and per
//! server ([`stats`]), the record of each answered request given to a
//! [`RequestObserver`], and the `kXR_QStats` report made from them.
//!
//! What the server tells an observer about each request it answered: the
//! hook for request logs and metrics.
//!
//! A [`RequestObserver`] set in [`Config::observer`](crate::Config::observer)
//! is called once per request that reached a handler, when its last response
//! frame is queued for the socket (or the link closed before that), with a
//! [`RequestRecord`]: who asked, the request kind, the path, how it was
//! answered, how long it took and the bytes of file data it moved.
//!
//! Not recorded: the requests of a session's set-up and control
//! (`kXR_protocol`, `kXR_login`, `kXR_auth`, `kXR_bind`, `kXR_ping`,
//! `kXR_endsess`, `kXR_sigver`) and frames refused before they decode into a
//! request the session accepts (those that close the link, or arrive before
//! the login). Requests refused because their payload does not decode are
//! recorded, with their error.
//!
//! The observer runs on the request's task: it must return quickly (count,
//! or hand the record to a logger), never block.

pub mod monitor;
mod record;
pub mod report;
pub mod stats;
mod throttle;
pub mod udp;

pub use monitor::{
    FileCounters, FileStats, LoginRecord, MonitorObserver, RedirectRecord, SessionEvent,
    SessionObserver,
};
pub use record::{Outcome, RequestObserver, RequestRecord};
pub use throttle::Throttle;
