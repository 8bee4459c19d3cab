//! Multipart uploads: one temporary file, each part written at its offset
//! as it comes (parts may be in flight at once), renamed onto the target on
//! completion. An upload dropped unfinished removes its file.

use async_trait::async_trait;
use object_store::{MultipartUpload, PutPayload, PutResult, Result, UploadPart};

use crate::error::STORE;
use crate::store::{e_tag, XrootStore};
use crate::temp::TempFile;

/// A multipart upload to `target` through a temporary file.
#[derive(Debug)]
pub(crate) struct Upload {
    store: XrootStore,
    /// `None` once completed or aborted.
    temp: Option<TempFile>,
    target: String,
    /// Where the next part goes.
    offset: u64,
}

impl Upload {
    pub(crate) fn new(store: XrootStore, temp: TempFile, target: String) -> Upload {
        Upload {
            store,
            temp: Some(temp),
            target,
            offset: 0,
        }
    }

    fn temp(&mut self) -> Result<TempFile> {
        self.temp
            .take()
            .ok_or_else(|| object_store::Error::Generic {
                store: STORE,
                source: format!("upload to {} already completed or aborted", self.target).into(),
            })
    }
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let offset = self.offset;
        self.offset += data.content_length() as u64;
        let writer = self.temp.as_ref().map(TempFile::writer);
        let target = self.target.clone();
        Box::pin(async move {
            match writer {
                Some(w) => w.write(offset, &data).await,
                None => Err(object_store::Error::Generic {
                    store: STORE,
                    source: format!("upload to {target} already completed or aborted").into(),
                }),
            }
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.temp()?.commit(&self.target, false).await?;
        let stat = self.store.stat(&self.target).await?;
        Ok(PutResult {
            e_tag: Some(e_tag(&stat)),
            version: None,
        })
    }

    async fn abort(&mut self) -> Result<()> {
        self.temp()?.discard().await
    }
}
