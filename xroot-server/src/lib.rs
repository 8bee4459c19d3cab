//! XRootD server framework (not yet implemented: see the README status table).
