//! The file handle table of a session: the 4-byte `fhandle` a `kXR_open`
//! returns names a slot here (PROTOCOL.md §6.1). The handle is the slot
//! index as a little-endian `u32`, as the reference's x86 build sends it;
//! freed slots are reused lowest first.
//!
//! Each open file counts the operations running on it, so that `kXR_close`
//! waits for them (the reference's `Serialize`) and an operation that comes
//! after the close gets `kXR_FileNotOpen`. It also carries its vector-read
//! permits ([`ReadvConcurrency`]) and the pgwrite pages still waiting for a
//! corrected retry.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use xroot_proto::{ErrorCode, FHandle};

use crate::fs::{File, FsError, ReadvConcurrency};

/// Operations that may run on one file at once (close takes them all).
const OPS: u32 = 1 << 16;

/// An open file and what the server tracks about it.
#[derive(Debug)]
pub(crate) struct OpenFile<T> {
    /// The backend's file.
    pub(crate) file: T,
    /// The path it was opened with (for fattr by handle).
    pub(crate) path: String,
    /// Opened for writing.
    pub(crate) writable: bool,
    ops: Semaphore,
    readv: Arc<Semaphore>,
    /// Offsets of pgwrite pages whose crc32c was bad and that no good write
    /// has replaced yet.
    pgw_bad: Mutex<BTreeSet<u64>>,
}

/// Most uncorrected pgwrite pages one file may have (`kXR_pgMaxEos`).
pub(crate) const PGW_MAX_BAD_PER_FILE: usize = 256;

impl<T: File> OpenFile<T> {
    pub(crate) fn new(file: T, path: String, writable: bool) -> OpenFile<T> {
        let readv = match file.readv_concurrency() {
            ReadvConcurrency::Serial => 1,
            ReadvConcurrency::Parallel(n) => n.max(1),
        };
        OpenFile {
            file,
            path,
            writable,
            ops: Semaphore::new(OPS as usize),
            readv: Arc::new(Semaphore::new(readv)),
            pgw_bad: Mutex::new(BTreeSet::new()),
        }
    }

    /// Registers an operation on the file; `kXR_FileNotOpen` once it is
    /// being closed.
    pub(crate) async fn op(&self, what: &str) -> Result<SemaphorePermit<'_>, FsError> {
        self.ops.acquire().await.map_err(|_| not_open(what))
    }

    /// Waits for the file's turn to run a vector read.
    pub(crate) async fn readv_turn(&self) -> OwnedSemaphorePermit {
        self.readv
            .clone()
            .acquire_owned()
            .await
            .expect("readv semaphore never closed")
    }

    /// Waits for the operations in progress, then refuses new ones.
    async fn quiesce(&self) {
        if let Ok(all) = self.ops.acquire_many(OPS).await {
            all.forget();
        }
        self.ops.close();
    }

    /// Records the pgwrite outcome of a page range: `bad` offsets are added,
    /// `good` ones removed. Errors: the number of uncorrected pages would
    /// exceed [`PGW_MAX_BAD_PER_FILE`].
    pub(crate) fn pgw_update(&self, bad: &[u64], good: &[u64]) -> Result<(), ()> {
        let mut set = self.pgw_bad.lock().unwrap();
        for o in good {
            set.remove(o);
        }
        for &o in bad {
            set.insert(o);
        }
        if set.len() > PGW_MAX_BAD_PER_FILE {
            return Err(());
        }
        Ok(())
    }

    /// The number of uncorrected pgwrite pages.
    pub(crate) fn pgw_outstanding(&self) -> usize {
        self.pgw_bad.lock().unwrap().len()
    }
}

/// `kXR_FileNotOpen` with the reference's message.
pub(crate) fn not_open(what: &str) -> FsError {
    FsError::new(
        ErrorCode::FILE_NOT_OPEN,
        format!("{what} does not refer to an open file"),
    )
}

/// The open files of a session.
#[derive(Debug)]
pub(crate) struct FileTable<T> {
    slots: Mutex<Vec<Option<Arc<OpenFile<T>>>>>,
}

impl<T: File> FileTable<T> {
    pub(crate) fn new() -> FileTable<T> {
        FileTable {
            slots: Mutex::new(Vec::new()),
        }
    }

    /// Adds `file` and returns its handle.
    pub(crate) fn insert(&self, file: OpenFile<T>) -> FHandle {
        let mut slots = self.slots.lock().unwrap();
        let file = Some(Arc::new(file));
        let index = match slots.iter().position(Option::is_none) {
            Some(i) => {
                slots[i] = file;
                i
            }
            None => {
                slots.push(file);
                slots.len() - 1
            }
        };
        FHandle((index as u32).to_le_bytes())
    }

    /// The file `fh` names. Errors: `kXR_FileNotOpen` "`what` does not
    /// refer to an open file".
    pub(crate) fn get(&self, fh: FHandle, what: &str) -> Result<Arc<OpenFile<T>>, FsError> {
        let index = u32::from_le_bytes(fh.0) as usize;
        self.slots
            .lock()
            .unwrap()
            .get(index)
            .and_then(Clone::clone)
            .ok_or_else(|| not_open(what))
    }

    /// Removes `fh` from the table and waits for the operations running on
    /// it. Errors: as [`FileTable::get`].
    pub(crate) async fn remove(&self, fh: FHandle) -> Result<Arc<OpenFile<T>>, FsError> {
        let index = u32::from_le_bytes(fh.0) as usize;
        let file = self
            .slots
            .lock()
            .unwrap()
            .get_mut(index)
            .and_then(Option::take)
            .ok_or_else(|| not_open("close"))?;
        file.quiesce().await;
        Ok(file)
    }

    /// Takes every file out (the session ended).
    pub(crate) fn drain(&self) -> Vec<Arc<OpenFile<T>>> {
        self.slots.lock().unwrap().drain(..).flatten().collect()
    }
}
