//! XRootD server framework — **not implemented yet**.
//!
//! Planned (see the project README's status table): a server you implement
//! one `FileSystem` trait for, sessions with handshake, login and
//! authentication, `kXR_bind` substreams, requests on one link dispatched
//! concurrently, and vector reads offloaded per pathid so that several run at
//! once (the stock server runs one at a time per connection), plus a
//! `LocalFs` backend confined to its export root.
//!
//! Today the wire format lives in [`xroot_proto`]: its
//! [`RequestDecoder`](xroot_proto::frame::RequestDecoder) is the server side's
//! frame decoder.

pub use xroot_proto as proto;
