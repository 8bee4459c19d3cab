//! A local directory as the origin, for tests: [`LocalOrigin`] over
//! [`xroot_server::LocalFs`] (confined beneath its root, blocking calls on
//! tokio's blocking pool) and [`LocalOriginFile`] reading with positional
//! reads.

use std::io;
use std::path::Path;

use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_server::local::LocalFile;
use xroot_server::{Caller, DirEntry, File as _, FileSystem as _, LocalFs, OpenMode};

use super::api::{Fetched, Origin, OriginFs};
use super::error::OriginError;

/// A local directory as the origin. Paths are confined beneath it (`..`, a
/// NUL byte or a symlink leading outside are refused with the errors of
/// [`LocalFs`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct LocalOrigin {
    fs: LocalFs,
    /// Who the cache is to its origin.
    caller: Caller,
}

impl LocalOrigin {
    /// The directory `root` as the origin. Errors: those of
    /// [`LocalFs::new`] (`root` missing or not a directory).
    pub fn new(root: impl AsRef<Path>) -> io::Result<LocalOrigin> {
        Ok(LocalOrigin {
            caller: Caller::local("xcache"),
            fs: LocalFs::new(root)?,
        })
    }

    /// The directory (canonical).
    pub fn root(&self) -> &Path {
        self.fs.root()
    }
}

/// A file of a [`LocalOrigin`], open read-only.
#[derive(Debug)]
pub struct LocalOriginFile {
    file: LocalFile,
}

impl Origin for LocalOriginFile {
    async fn stat(&self) -> Result<StatInfo, OriginError> {
        Ok(self.file.stat().await?)
    }

    /// Every run with positional reads in one blocking task: one request,
    /// not checksummed. A run past end of file fails the call with
    /// [`OriginError::Fs`] (`kXR_FSError`, as a stock server's readv).
    async fn read_runs(&self, runs: &[(u64, usize)]) -> Result<Fetched, OriginError> {
        if runs.is_empty() {
            return Ok(Fetched::nothing());
        }
        let data = self.file.readv(runs.to_vec()).await?;
        Fetched::checked(runs, data, 1, false)
    }

    async fn close(&self) -> Result<(), OriginError> {
        Ok(self.file.close().await?)
    }
}

impl OriginFs for LocalOrigin {
    type File = LocalOriginFile;

    async fn open(&self, path: &str) -> Result<LocalOriginFile, OriginError> {
        let file = self
            .fs
            .open(&self.caller, path, OpenMode::default(), "")
            .await?;
        Ok(LocalOriginFile { file })
    }

    async fn stat(&self, path: &str) -> Result<StatInfo, OriginError> {
        Ok(self.fs.stat(&self.caller, path).await?)
    }

    async fn dirlist(&self, path: &str, with_stat: bool) -> Result<Vec<DirEntry>, OriginError> {
        Ok(self.fs.dirlist(&self.caller, path, with_stat).await?)
    }

    async fn checksum(&self, path: &str, alg: Option<&str>) -> Result<ChecksumAnswer, OriginError> {
        Ok(self.fs.checksum(&self.caller, path, alg).await?)
    }
}
