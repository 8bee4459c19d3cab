//! The connecting side: trust and the client configuration (to be written).
