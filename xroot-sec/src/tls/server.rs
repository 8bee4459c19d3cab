//! The accepting side: certificate, key and reload (to be written).
