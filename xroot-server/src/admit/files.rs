//! The file handle table of a session: the 4-byte `fhandle` a `kXR_open`
//! returns names a slot here (PROTOCOL.md §6.1). The handle is the slot
//! index as a little-endian `u32`, as the reference's x86 build sends it;
//! freed slots are reused lowest first.
//!
//! Each open file keeps the order of the requests admitted on it
//! ([`crate::admit::order`]), so that `kXR_close` waits for the requests that
//! arrived before it (the reference's `Serialize`) and a request that comes
//! after the close gets `kXR_FileNotOpen`. It also carries its vector-read
//! permits ([`ReadvConcurrency`]), the pgwrite pages still waiting for a
//! corrected retry, its lock against other sessions ([`crate::admit::lock`]) and
//! whether it persists only on close (`kXR_posc`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use xroot_proto::{ErrorCode, FHandle};

use crate::admit::lock::FileLock;
use crate::admit::order::{Access, Order, Ticket};
use crate::auth::Caller;
use crate::fs::{File, FileSystem, FsError, ReadvConcurrency};
use crate::observe::monitor::FileCounters;
use crate::tpc::job::Destination;

/// An open file and what the server tracks about it.
#[derive(Debug)]
pub(crate) struct OpenFile<T> {
    /// The backend's file.
    pub(crate) file: T,
    /// The path it was opened with (for fattr by handle).
    pub(crate) path: String,
    /// Opened for writing.
    pub(crate) writable: bool,
    /// Opened with `kXR_posc`: removed when its session ends without a
    /// close.
    pub(crate) posc: bool,
    /// Its monitoring counts, when the session is monitored.
    pub(crate) counters: Option<Arc<FileCounters>>,
    /// The third-party copy its open ordered, on a TPC destination.
    pub(crate) tpc: Option<Arc<Destination>>,
    order: Order,
    readv: Arc<Semaphore>,
    lock: Mutex<Option<FileLock>>,
    /// Offsets of pgwrite pages whose crc32c was bad and that no good write
    /// has replaced yet.
    pgw_bad: Mutex<BTreeSet<u64>>,
}

/// Who removes the file of a third-party copy that did not succeed: the
/// server itself (the stock's `autorm`), not the client, whose token may
/// allow creating the file but not removing it.
pub(crate) fn tpc_cleaner() -> Caller {
    Caller::local("tpc")
}

/// Most uncorrected pgwrite pages one file may have (`kXR_pgMaxEos`).
pub(crate) const PGW_MAX_BAD_PER_FILE: usize = 256;

impl<T: File> OpenFile<T> {
    /// An open file of `path`; `append` when writes go to its end
    /// whatever their offset; `lock` held until the file is closed.
    pub(crate) fn new(
        file: T,
        path: String,
        writable: bool,
        append: bool,
        posc: bool,
        lock: FileLock,
    ) -> OpenFile<T> {
        let readv = match file.readv_concurrency() {
            ReadvConcurrency::Serial => 1,
            ReadvConcurrency::Parallel(n) => n.max(1),
        };
        OpenFile {
            file,
            path,
            writable,
            posc,
            counters: None,
            tpc: None,
            order: Order::new(append),
            readv: Arc::new(Semaphore::new(readv)),
            lock: Mutex::new(Some(lock)),
            pgw_bad: Mutex::new(BTreeSet::new()),
        }
    }

    /// Closes the backend file (a `kXR_close` or the session's end). On a
    /// third-party-copy destination its pull is stopped first, so that no
    /// write of it follows the close, and unless it succeeded the file is
    /// removed afterwards (as the server, [`tpc_cleaner`]). Errors: the
    /// backend's close.
    pub(crate) async fn close<F: FileSystem<File = T>>(&self, fs: &F) -> Result<(), FsError> {
        let failed_tpc = self.tpc.as_ref().is_some_and(|d| d.cancel());
        let closed = self.file.close().await;
        if failed_tpc {
            let _ = fs.rm(&tpc_cleaner(), &self.path).await;
        }
        closed
    }

    /// Releases the file's lock (its backend file is closed).
    pub(crate) fn unlock(&self) {
        self.lock.lock().unwrap().take();
    }

    /// Waits for the file's turn to run a vector read.
    pub(crate) async fn readv_turn(&self) -> OwnedSemaphorePermit {
        self.readv
            .clone()
            .acquire_owned()
            .await
            .expect("readv semaphore never closed")
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

    /// Whether `fh` names a slot that holds a file (its close may have been
    /// admitted already).
    pub(crate) fn holds(&self, fh: FHandle) -> bool {
        let index = u32::from_le_bytes(fh.0) as usize;
        let slots = self.slots.lock().unwrap();
        slots.get(index).is_some_and(Option::is_some)
    }

    /// Admits a request that will do `access` on the file `fh` names, in
    /// arrival order ([`crate::admit::order`]). `None` when `fh` names no open file
    /// or one whose close was admitted before.
    pub(crate) fn admit(&self, fh: FHandle, access: Access) -> Option<(Arc<OpenFile<T>>, Ticket)> {
        let index = u32::from_le_bytes(fh.0) as usize;
        let slots = self.slots.lock().unwrap();
        let file = slots.get(index)?.as_ref()?;
        // a TPC destination is written by its pull alone: a sync (which
        // waits for the pull) or a stat by handle (its progress) orders
        // after nothing, so a close never queues behind a waiting sync
        let access = match access {
            Access::Flush if file.tpc.is_some() => Access::Lookup,
            access => access,
        };
        let ticket = file.order.admit(access).ok()?;
        Some((file.clone(), ticket))
    }

    /// Removes `file` from slot `fh` (its close has its turn).
    pub(crate) fn remove(&self, fh: FHandle, file: &Arc<OpenFile<T>>) {
        let index = u32::from_le_bytes(fh.0) as usize;
        let mut slots = self.slots.lock().unwrap();
        if let Some(slot) = slots.get_mut(index) {
            if slot.as_ref().is_some_and(|f| Arc::ptr_eq(f, file)) {
                *slot = None;
            }
        }
    }

    /// Takes every file out (the session ended).
    pub(crate) fn drain(&self) -> Vec<Arc<OpenFile<T>>> {
        self.slots.lock().unwrap().drain(..).flatten().collect()
    }
}
