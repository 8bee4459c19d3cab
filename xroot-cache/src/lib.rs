//! Block-run cache (not yet implemented: see the README status table).
