//! The `sss` (simple shared secret) protocol, as the stock xrootd 5.5.3
//! speaks it (src/XrdSecsss): the client proves who it is with a
//! credential encrypted with a key both sides hold in a keytab.
//!
//! - [`keytab`]: keytabs in the format `xrdsssadmin` writes, and the key
//!   each side uses.
//! - [`credential`]: sealing a credential (client) and opening it (server),
//!   and the `sss` parameters of the login reply (`&P=sss,0.+13:`).
//!
//! Sans-IO apart from [`Keytab::load`], which reads the keytab file.

pub mod credential;
pub mod keytab;

pub use credential::{address_item, open, seal, CredentialError, Entity, Opened, Params};
pub use keytab::{Key, Keytab, KeytabError};
