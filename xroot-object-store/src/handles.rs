//! Open files kept for reads: object_store has no file handles, and parquet
//! asks for each column chunk with a call of its own, so opening (and
//! closing) the file on every `get_ranges` would cost two round trips per
//! call. Calls within [`FRESH`] of an open share its handle instead.
//!
//! A handle serves new calls for [`FRESH`] after its open, and none once
//! this store writes, renames or deletes its path, or a read on it failed
//! (the read is then tried once more on a fresh open). A file replaced on
//! the server by someone else is thus seen by calls made [`FRESH`] or
//! more after it. The file is closed when the last call or stream using it
//! ends.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xroot_client::File;

/// How long after its open a handle serves new calls.
pub(crate) const FRESH: Duration = Duration::from_secs(5);

/// At most this many handles are kept; past it the oldest are let go.
const MAX_KEPT: usize = 64;

/// An open file, closed (on a task) when the last of its users drops it.
#[derive(Debug)]
pub(crate) struct OpenFile(Option<File>);

impl OpenFile {
    pub(crate) fn new(file: File) -> Arc<OpenFile> {
        Arc::new(OpenFile(Some(file)))
    }
}

impl Deref for OpenFile {
    type Target = File;

    fn deref(&self) -> &File {
        self.0
            .as_ref()
            .expect("an OpenFile holds its file until dropped")
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        // without a runtime the server closes it with the connection
        if let (Some(file), Ok(rt)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(async move {
                if let Err(e) = file.close().await {
                    tracing::debug!("closing {}: {e}", file.url());
                }
            });
        }
    }
}

/// The open read handles of one store (and its clones), by server path.
#[derive(Debug, Default)]
pub(crate) struct Handles {
    open: Mutex<HashMap<String, Kept>>,
}

#[derive(Debug)]
struct Kept {
    file: Arc<OpenFile>,
    opened: Instant,
}

impl Handles {
    /// The kept handle of `path`, if it was opened within [`FRESH`]. Lets
    /// go of the handles that are no longer fresh.
    pub(crate) fn get(&self, path: &str) -> Option<Arc<OpenFile>> {
        let now = Instant::now();
        let mut open = self.open.lock().unwrap();
        open.retain(|_, k| now.duration_since(k.opened) < FRESH);
        open.get(path).map(|k| k.file.clone())
    }

    /// Keeps `file`, just opened, as the handle of `path` (in place of one
    /// another call opened meanwhile).
    pub(crate) fn keep(&self, path: &str, file: Arc<OpenFile>) {
        let opened = Instant::now();
        let mut open = self.open.lock().unwrap();
        open.insert(path.to_string(), Kept { file, opened });
        while open.len() > MAX_KEPT {
            let oldest = open
                .iter()
                .min_by_key(|(_, k)| k.opened)
                .map(|(p, _)| p.clone());
            match oldest {
                Some(p) => open.remove(&p),
                None => break,
            };
        }
    }

    /// Lets go of the handle of `path`, if it is `file` (or whatever it is,
    /// for `None`).
    pub(crate) fn forget(&self, path: &str, file: Option<&Arc<OpenFile>>) {
        let mut open = self.open.lock().unwrap();
        let ours = open
            .get(path)
            .is_some_and(|k| file.is_none_or(|f| Arc::ptr_eq(f, &k.file)));
        if ours {
            open.remove(path);
        }
    }
}
