//! The sparse data file of one entry: block data at its file offsets, holes
//! where nothing is cached.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// A data file opened for positional reads and writes (no shared cursor, so
/// `&self` calls from several threads do not interfere).
#[derive(Debug)]
pub(crate) struct DataFile {
    file: Arc<File>,
}

impl DataFile {
    /// Opens `path` read-write, creating it empty if absent.
    pub(crate) fn open(path: &Path) -> io::Result<DataFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(DataFile {
            file: Arc::new(file),
        })
    }

    /// Opens the existing file `path` read-write. Errors: `NotFound` when
    /// it is absent, and those of `open`.
    pub(crate) fn open_existing(path: &Path) -> io::Result<DataFile> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(DataFile {
            file: Arc::new(file),
        })
    }

    /// The open file, shared (for `sendfile(2)` of its blocks).
    pub(crate) fn shared(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// Writes all of `data` at file `offset` (bytes).
    pub(crate) fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    /// Fills `buf` from file `offset`. Bytes past the end of the file read as
    /// zeros, as a hole does: the caller's crc32c check decides whether they
    /// are the right bytes.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    buf[done..].fill(0);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Takes the cross-process lock of this entry (`flock(LOCK_EX)` on the
    /// data file, waiting for it): held around sidecar commits, resets and
    /// eviction, so that processes sharing a cache directory do not
    /// overwrite each other's sidecar. Released when the guard drops.
    pub(crate) fn lock(&self) -> io::Result<Locked<'_>> {
        rustix::fs::flock(&self.file, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(Locked(&self.file))
    }

    /// Whether `path` still names this data file (the same device and
    /// inode): false once another process evicted the entry (and perhaps
    /// made a new one).
    pub(crate) fn is_at(&self, path: &Path) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let ours = self.file.metadata()?;
        match std::fs::metadata(path) {
            Ok(there) => Ok(there.dev() == ours.dev() && there.ino() == ours.ino()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// fdatasync: makes the written data durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Drops every byte (length 0).
    pub(crate) fn truncate(&self) -> io::Result<()> {
        self.file.set_len(0)
    }

    /// Frees the disk space of `len` bytes at `offset` (they read as zeros
    /// after), keeping the file's length: `fallocate(PUNCH_HOLE |
    /// KEEP_SIZE)`. Errors: those of `fallocate` (`Unsupported` where the
    /// file system or the platform cannot punch holes).
    pub(crate) fn punch(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{fallocate, FallocateFlags};
            let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            fallocate(&self.file, mode, offset, len).map_err(io::Error::from)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = offset;
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

/// The cross-process lock of an entry, held until dropped
/// ([`DataFile::lock`]).
#[derive(Debug)]
pub(crate) struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if let Err(e) = rustix::fs::flock(self.0, rustix::fs::FlockOperation::Unlock) {
            tracing::debug!("cache entry unlock: {e}");
        }
    }
}

/// Takes the cross-process lock of the data file at `path`, if it exists,
/// for removing it ([`DataFile::lock`]); `None` when there is no such file.
pub(crate) fn lock_path(path: &Path) -> io::Result<Option<File>> {
    match File::open(path) {
        Ok(file) => {
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            Ok(Some(file))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
