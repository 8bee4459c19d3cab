//! Async, multiplexed XRootD client (not yet implemented: see the README status table).
