//! Typed requests: one struct per request id (PROTOCOL.md §4–7).
