//! [`OriginFile`]: the origin file of a cached path, opened with it or — for
//! a file opened on trust — at the first read the store cannot serve.

use std::sync::Arc;

use tokio::sync::OnceCell;
use xroot_proto::response::StatInfo;

use crate::origin::{Fetched, Origin, OriginError, OriginFs};
use crate::store::{Store, Validators};

/// The origin file below a [`CachedFile`](crate::CachedFile) of
/// [`CacheFs`](crate::CacheFs). A file opened the usual way has it open from
/// the start. A file opened on trust (in the store and confirmed within the
/// trust window) has not: it is opened at the first read that needs the
/// origin (a block not cached, a page that failed its crc32c), and its stat
/// is then
/// compared with the cached copy's validators: a file that changed is not
/// read (its blocks would mix with the old ones), its store entry is reset
/// and the read fails with [`OriginError::Changed`].
pub struct OriginFile<F: OriginFs> {
    file: OnceCell<F::File>,
    /// Set once the file was found changed: the cached copy's validators
    /// and the origin's (no open is tried again).
    changed: std::sync::OnceLock<(Validators, Validators)>,
    /// Set for a file opened on trust: how to open it later.
    later: Option<Later<F>>,
}

struct Later<F> {
    fs: Arc<F>,
    path: String,
    /// The cached copy's stat.
    stat: StatInfo,
    store: Arc<Store>,
    block_size: u64,
}

impl<F: OriginFs> OriginFile<F> {
    /// `file`, open now.
    pub(crate) fn open(file: F::File) -> OriginFile<F> {
        OriginFile {
            file: OnceCell::new_with(Some(file)),
            changed: std::sync::OnceLock::new(),
            later: None,
        }
    }

    /// The file of `path` in `fs`, to be opened at its first read; `stat`
    /// is the cached copy's (in `store`, at `block_size`).
    pub(crate) fn later(
        fs: Arc<F>,
        path: &str,
        stat: StatInfo,
        store: Arc<Store>,
        block_size: u64,
    ) -> OriginFile<F> {
        OriginFile {
            file: OnceCell::new(),
            changed: std::sync::OnceLock::new(),
            later: Some(Later {
                fs,
                path: path.to_string(),
                stat,
                store,
                block_size,
            }),
        }
    }

    /// The origin file if it is open.
    pub fn get(&self) -> Option<&F::File> {
        self.file.get()
    }

    /// Whether the file was found changed at the origin since it was
    /// cached (see [`OriginError::Changed`]).
    pub fn is_changed(&self) -> bool {
        self.changed.get().is_some()
    }

    /// The origin file, opened now if it is not yet (once, however many
    /// callers ask at once).
    ///
    /// Errors: the origin's open and stat errors; [`OriginError::Changed`]
    /// when the file changed since it was cached (the open file is closed
    /// again, the store entry reset).
    pub async fn file(&self) -> Result<&F::File, OriginError> {
        let later = self.later.as_ref();
        let changed = |&(cached, now): &(Validators, Validators)| OriginError::Changed {
            path: later.map_or_else(String::new, |l| l.path.clone()),
            cached,
            now,
        };
        if let Some(found) = self.changed.get() {
            return Err(changed(found));
        }
        self.file
            .get_or_try_init(|| async {
                let later = later.expect("an OriginFile without its file opens later");
                match later.open().await {
                    Err(OriginError::Changed { cached, now, .. }) => {
                        let found = *self.changed.get_or_init(|| (cached, now));
                        Err(changed(&found))
                    }
                    other => other,
                }
            })
            .await
    }
}

impl<F: OriginFs> Later<F> {
    async fn open(&self) -> Result<F::File, OriginError> {
        let file = self.fs.open(&self.path).await?;
        let stat = match file.stat().await {
            Ok(stat) => stat,
            Err(e) => {
                let _ = file.close().await;
                return Err(e);
            }
        };
        let (cached, now) = (Validators::from(&self.stat), Validators::from(&stat));
        if cached == now {
            return Ok(file);
        }
        let _ = file.close().await;
        tracing::info!(path = self.path, "changed at the origin: cache entry reset");
        let (store, path, bs) = (self.store.clone(), self.path.clone(), self.block_size);
        // the entry made for the new validators resets the sidecar and the data
        let reset =
            tokio::task::spawn_blocking(move || store.entry(&path, now, bs).map(drop)).await;
        if let Ok(Err(e)) = reset {
            tracing::warn!(path = self.path, "resetting a changed cache entry: {e}");
        }
        Err(OriginError::Changed {
            path: self.path.clone(),
            cached,
            now,
        })
    }
}

impl<F: OriginFs> Origin for OriginFile<F> {
    /// The origin's stat when the file is open, else the cached copy's.
    async fn stat(&self) -> Result<StatInfo, OriginError> {
        match (self.file.get(), &self.later) {
            (Some(file), _) => file.stat().await,
            (None, Some(later)) => Ok(later.stat.clone()),
            (None, None) => unreachable!("an OriginFile without its file opens later"),
        }
    }

    async fn read_runs(&self, runs: &[(u64, usize)]) -> Result<Fetched, OriginError> {
        self.file().await?.read_runs(runs).await
    }

    /// Closes the file if it was opened.
    async fn close(&self) -> Result<(), OriginError> {
        match self.file.get() {
            Some(file) => file.close().await,
            None => Ok(()),
        }
    }
}
