//! The temporary file a put, a copy or a multipart upload writes beside its
//! target before renaming it into place (`kXR_mv`), so that readers see the
//! old object or the new one, never part of one.

use std::sync::Arc;

use bytes::Bytes;
use object_store::{PutPayload, Result};
use xroot_client::{File, OpenFlags};

use crate::error::{already_exists, client_error};
use crate::store::{XrootStore, CHUNK};

/// A temporary file being written: committed onto its target, or
/// discarded. Dropped before either (its call cancelled, an upload
/// dropped), it is closed and removed on a task (nothing without a
/// runtime: the server closes it with the connection, and the file stays,
/// hidden from listings).
#[derive(Debug)]
pub(crate) struct TempFile {
    store: XrootStore,
    /// Server path of the temporary file.
    path: String,
    /// `None` once committed or discarded.
    file: Option<Arc<File>>,
}

impl TempFile {
    /// Creates a fresh temporary file beside the server path `target`
    /// (`kXR_open` new, with `kXR_mkpath`).
    ///
    /// # Errors
    /// The server's, as their object_store kinds.
    pub(crate) async fn create(store: &XrootStore, target: &str) -> Result<TempFile> {
        let path = store.temp_path(target);
        let file = store.open(&path, OpenFlags::NEW.mkpath()).await?;
        Ok(TempFile {
            store: store.clone(),
            path,
            file: Some(Arc::new(file)),
        })
    }

    /// A writer for `payload`'s bytes at `offset`, usable while other
    /// writes are in flight (multipart parts).
    pub(crate) fn writer(&self) -> Writer {
        Writer {
            file: self
                .file
                .clone()
                .expect("a TempFile is open until consumed"),
            path: self.path.clone(),
        }
    }

    /// Closes the file and renames it onto `target`; with `create`, first
    /// checks that `target` does not exist. On any failure the temporary
    /// file is removed.
    ///
    /// # Errors
    /// [`object_store::Error::AlreadyExists`] with `create` when the target
    /// exists; the server's, as their kinds.
    pub(crate) async fn commit(mut self, target: &str, create: bool) -> Result<()> {
        let file = self.file.take().expect("a TempFile is open until consumed");
        let result = async {
            file.close()
                .await
                .map_err(|e| client_error(&self.path, e))?;
            if create && self.store.exists(target).await? {
                return Err(already_exists(target));
            }
            let moved = self.store.fs()?.mv(&self.path, target).await;
            // reads of the target see the new file from now on
            self.store.changed(target).await;
            moved.map_err(|e| client_error(target, e))
        }
        .await;
        if result.is_err() {
            self.remove().await;
        }
        result
    }

    /// Closes and removes the file.
    ///
    /// # Errors
    /// Those of the removal (`kXR_rm`), as their kinds.
    pub(crate) async fn discard(mut self) -> Result<()> {
        if let Some(file) = self.file.take() {
            let _ = file.close().await;
        }
        let fs = self.store.fs()?;
        fs.rm(&self.path)
            .await
            .map_err(|e| client_error(&self.path, e))
    }

    /// Removes the file, ignoring a failure (it stays, hidden from
    /// listings).
    async fn remove(&self) {
        if let Ok(fs) = self.store.fs() {
            if let Err(e) = fs.rm(&self.path).await {
                tracing::debug!("removing {}: {e}", self.path);
            }
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let Some(file) = self.file.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (store, path) = (self.store.clone(), std::mem::take(&mut self.path));
            rt.spawn(async move {
                let _ = file.close().await;
                let leftover = TempFile {
                    store,
                    path,
                    file: None,
                };
                leftover.remove().await;
            });
        }
    }
}

/// Writes into a [`TempFile`].
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    file: Arc<File>,
    path: String,
}

impl Writer {
    /// Writes `payload` at `offset`, in requests of at most 8 MiB (a
    /// request carries at most 2 GiB, and each must finish within the
    /// client's request timeout): `kXR_pgwrite`, a crc32c with every 4 kB
    /// page, where the server serves it and the link is plain, as the
    /// stock `xrdcp` does (over TLS the record layer protects the data
    /// already); `kXR_write` otherwise.
    ///
    /// # Errors
    /// The server's, as their kinds.
    pub(crate) async fn write(&self, mut offset: u64, payload: &PutPayload) -> Result<()> {
        for part in payload.iter() {
            offset = self.write_bytes(offset, part).await?;
        }
        Ok(())
    }

    /// Writes `data` at `offset` in pieces of at most 8 MiB; the offset
    /// after it.
    pub(crate) async fn write_bytes(&self, mut offset: u64, data: &Bytes) -> Result<u64> {
        let mut at = 0;
        while at < data.len() {
            let n = (data.len() - at).min(CHUNK as usize);
            let piece = data.slice(at..at + n);
            // pgwrite is a plain write against a server without it
            let written = match self.file.is_secure() {
                false => self.file.pgwrite(offset, piece).await,
                true => self.file.write_at(offset, piece).await,
            };
            written.map_err(|e| client_error(&self.path, e))?;
            at += n;
            offset += n as u64;
        }
        Ok(offset)
    }
}
