//! Multipart uploads: one temporary file, each part written at its offset
//! as it comes (parts may be in flight at once), renamed onto the target on
//! completion.

use std::sync::Arc;

use async_trait::async_trait;
use object_store::{MultipartUpload, PutPayload, PutResult, Result, UploadPart};
use xroot_client::File;

use crate::error::client_error;
use crate::XrootStore;

/// A multipart upload to `target` through `temp`.
#[derive(Debug)]
pub(crate) struct Upload {
    store: XrootStore,
    file: Arc<File>,
    temp: String,
    target: String,
    /// Where the next part goes.
    offset: u64,
}

impl Upload {
    pub(crate) fn new(store: XrootStore, file: File, temp: String, target: String) -> Upload {
        Upload {
            store,
            file: Arc::new(file),
            temp,
            target,
            offset: 0,
        }
    }
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let mut offset = self.offset;
        self.offset += data.content_length() as u64;
        let file = self.file.clone();
        let temp = self.temp.clone();
        Box::pin(async move {
            for part in data.iter() {
                file.write_at(offset, part.clone())
                    .await
                    .map_err(|e| client_error(&temp, e))?;
                offset += part.len() as u64;
            }
            Ok(())
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.file
            .close()
            .await
            .map_err(|e| client_error(&self.temp, e))?;
        self.store.commit(&self.temp, &self.target, false).await?;
        let stat = self.store.stat(&self.target).await?;
        Ok(PutResult {
            e_tag: Some(crate::e_tag(&stat)),
            version: None,
        })
    }

    async fn abort(&mut self) -> Result<()> {
        let _ = self.file.close().await;
        self.store
            .fs()?
            .rm(&self.temp)
            .await
            .map_err(|e| client_error(&self.temp, e))
    }
}
