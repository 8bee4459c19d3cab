//! XRootD server framework: implement [`FileSystem`] (and its [`File`]) and
//! stock clients (`xrdcp`, `xrdfs`, the Python bindings, ROOT) can use it.
//!
//! **Work in progress**: the backend traits are defined; the server that
//! drives them is being built (see the README status table).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fs;
pub mod local;

pub use fs::{DirEntry, File, FileSystem, FsError, FsResult, OpenMode, ReadvConcurrency};
pub use local::LocalFs;
pub use xroot_proto as proto;
