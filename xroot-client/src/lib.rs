//! Async, multiplexed XRootD client — **not implemented yet**.
//!
//! Planned (see the project README's status table): channels keyed by
//! scheme, user, host, port and `xrdcl.intent`, many requests in flight per
//! channel, one response driver for oksofar / wait / waitresp / attn /
//! redirect, `File` (read, readv, pgread, write, pgwrite, ...) and
//! `FileSystem` calls, substreams and channel spreading.
//!
//! Today the wire format lives in [`xroot_proto`], including the `root://`
//! URL parser ([`xroot_proto::url::Url`]) this client will build on.

pub use xroot_proto as proto;
