//! The [`ObjectStore`] interface of [`XrootStore`]: puts and copies through
//! a temporary file renamed into place, multipart uploads, reads as streams
//! of chunks or as vector reads, deletes, listings and renames.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use futures::FutureExt;
use object_store::path::Path;
use object_store::{
    Attributes, CopyMode, CopyOptions, Error, GetOptions, GetRange, GetResult, GetResultPayload,
    ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, RenameOptions, RenameTargetMode, Result,
};
use xroot_client::OpenFlags;

use crate::ahead::{Ahead, Fill, Filling};
use crate::error::{already_exists, client_error, not_implemented, STORE};
use crate::handles::{self, OpenFile};
use crate::store::{e_tag, XrootStore, CHUNK};
use crate::temp::TempFile;
use crate::upload::Upload;

impl XrootStore {
    /// Writes `payload` to a temporary file beside `target` and renames it
    /// onto `target` as `mode` allows.
    async fn put_file(&self, target: &str, payload: PutPayload, mode: &PutMode) -> Result<()> {
        if let PutMode::Update(_) = mode {
            return Err(not_implemented("put_opts with PutMode::Update"));
        }
        let create = *mode == PutMode::Create;
        if create && self.exists(target).await? {
            return Err(already_exists(target));
        }
        let temp = TempFile::create(self, target).await?;
        temp.writer().write(0, &payload).await?;
        temp.commit(target, create).await
    }
}

/// Reads `range` of `file` as a stream of chunks of at most [`CHUNK`]
/// bytes.
fn read_stream(
    handles: Arc<handles::Handles>,
    file: Arc<OpenFile>,
    path: String,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes>> {
    stream::try_unfold(range.start, move |offset| {
        let (file, path, handles) = (file.clone(), path.clone(), handles.clone());
        let end = range.end;
        async move {
            if offset >= end {
                return Ok(None);
            }
            let len = (end - offset).min(CHUNK) as usize;
            let data = file.read_at(offset, len).await.map_err(|e| {
                // a handle that failed serves no other call
                handles.forget(&path, &file);
                client_error(&path, e)
            })?;
            if data.is_empty() {
                return Err(Error::Generic {
                    store: STORE,
                    source: format!("{path} ended at {offset}, before {end}").into(),
                });
            }
            let next = offset + data.len() as u64;
            Ok(Some((data, next)))
        }
    })
    .boxed()
}

/// [`Error::Generic`] unless `r` is a range within `size` bytes.
fn check_range(path: &str, r: &Range<u64>, size: u64) -> Result<()> {
    if r.start <= r.end && r.end <= size {
        return Ok(());
    }
    let why: Box<dyn std::error::Error + Send + Sync> =
        match GetRange::Bounded(r.clone()).as_range(size) {
            Err(e) => Box::new(e),
            Ok(_) => format!("range {r:?} is past the end of {path} ({size} bytes)").into(),
        };
    Err(Error::Generic {
        store: STORE,
        source: why,
    })
}

/// `ranges` of `file` (the file at `path`), each read whole by vector reads
/// within the server's limits: one per 1024 elements or 2,097,136 bytes a
/// element, as [`File::readv`](xroot_client::File::readv) splits them. An
/// empty range is not sent.
///
/// Errors: [`Error::Generic`] for a range that is reversed or ends past
/// the end of the file; the server's, as their kinds.
async fn read_ranges(file: Arc<OpenFile>, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
    let size = file.stat().await.map_err(|e| client_error(path, e))?.size;
    let mut extents = Vec::with_capacity(ranges.len());
    for r in ranges {
        check_range(path, r, size)?;
        extents.push((r.start, (r.end - r.start) as usize));
    }
    let wanted: Vec<(u64, usize)> = extents.iter().copied().filter(|&(_, l)| l > 0).collect();
    let mut got = file
        .readv(&wanted)
        .await
        .map_err(|e| client_error(path, e))?
        .into_iter();
    Ok(extents
        .iter()
        .map(|&(_, l)| {
            if l == 0 {
                Bytes::new()
            } else {
                got.next().unwrap_or_default()
            }
        })
        .collect())
}

/// `range` of `file` (the file at `path`) by a plain read, which needs no
/// `kXR_Qconfig`: the vector reads to come ask it meanwhile
/// ([`OpenFile::warm`]). A read of the file's tail (a Parquet reader's
/// footer) is kept in `ahead`.
///
/// Errors: as [`read_ranges`]; [`Error::Generic`] when the file ends
/// before the range does.
async fn read_one(
    file: Arc<OpenFile>,
    path: &str,
    range: Range<u64>,
    ahead: &Ahead,
) -> Result<Vec<Bytes>> {
    let size = file.stat().await.map_err(|e| client_error(path, e))?.size;
    check_range(path, &range, size)?;
    let len = (range.end - range.start) as usize;
    if len == 0 {
        return Ok(vec![Bytes::new()]);
    }
    let (data, ()) = futures::join!(file.read_at(range.start, len), file.warm());
    let data = data.map_err(|e| client_error(path, e))?;
    if data.len() != len {
        return Err(Error::Generic {
            store: STORE,
            source: format!(
                "{path} ended at {}, before {}",
                range.start + data.len() as u64,
                range.end
            )
            .into(),
        });
    }
    ahead.keep_tail(path, size, range.start, data.clone());
    Ok(vec![data])
}

impl XrootStore {
    /// Starts `fill` on a task: its file's vector read, kept in the
    /// store's read-ahead; the fill to await.
    fn start_fill(&self, fill: &Fill) -> Filling {
        let (store, path, ranges) = (self.clone(), fill.path.clone(), fill.ranges.clone());
        let filling = async move {
            let read = |file: Arc<OpenFile>| read_ranges(file, &path, &ranges);
            let got = store.with_reader(&path, read).await;
            if let Err(e) = &got {
                tracing::debug!("{path}: reading ahead: {e}");
            }
            store.ahead.filled(&path, got.ok());
        }
        .boxed()
        .shared();
        self.ahead.started(fill, filling.clone());
        tokio::spawn(filling.clone());
        filling
    }
}

#[async_trait]
impl ObjectStore for XrootStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if !opts.attributes.is_empty() {
            return Err(not_implemented("put_opts with attributes"));
        }
        let target = self.server_path(location)?;
        self.put_file(&target, payload, &opts.mode).await?;
        let stat = self.stat(&target).await?;
        Ok(PutResult {
            e_tag: Some(e_tag(&stat)),
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        if !opts.attributes.is_empty() {
            return Err(not_implemented("put_multipart_opts with attributes"));
        }
        let target = self.server_path(location)?;
        let temp = TempFile::create(self, &target).await?;
        Ok(Box::new(Upload::new(self.clone(), temp, target)))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.version.is_some() {
            return Err(not_implemented("get_opts with a version"));
        }
        let path = self.server_path(location)?;
        if options.head {
            let stat = match self.trusted_stat(&path).await {
                Some(stat) => stat,
                None => self.stat(&path).await?,
            };
            let meta = self.meta(&path, &stat)?;
            options.check_preconditions(&meta)?;
            return Ok(GetResult {
                payload: GetResultPayload::Stream(stream::empty().boxed()),
                range: 0..meta.size,
                meta,
                attributes: Attributes::new(),
            });
        }
        let checked = |file: Arc<OpenFile>| {
            let (path, options) = (&path, &options);
            async move {
                let stat = file.stat().await.map_err(|e| client_error(path, e))?;
                let meta = self.meta(path, &stat)?;
                options.check_preconditions(&meta)?;
                let range = match &options.range {
                    Some(r) => r.as_range(meta.size).map_err(|e| Error::Generic {
                        store: STORE,
                        source: Box::new(e),
                    })?,
                    None => 0..meta.size,
                };
                Ok((file, meta, range))
            }
        };
        let (file, meta, range) = self.with_reader(&path, checked).await?;
        Ok(GetResult {
            payload: GetResultPayload::Stream(read_stream(
                self.handles.clone(),
                file,
                path,
                range.clone(),
            )),
            meta,
            range,
            attributes: Attributes::new(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let path = self.server_path(location)?;
        if let Some(filling) = self.ahead.filling(&path) {
            filling.await;
        }
        if let Some(got) = self.ahead.get_all(&path, ranges) {
            return Ok(got);
        }
        if let [range] = ranges {
            let read = |file: Arc<OpenFile>| read_one(file, &path, range.clone(), &self.ahead);
            return self.with_reader(&path, read).await;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            let fills = self.ahead.plan(&path, ranges);
            let mut mine = None;
            for fill in &fills {
                let filling = self.start_fill(fill);
                if fill.path == path {
                    mine = Some(filling);
                }
            }
            if let Some(filling) = mine {
                filling.await;
                if let Some(got) = self.ahead.get_all(&path, ranges) {
                    return Ok(got);
                }
            }
        }
        let read = |file: Arc<OpenFile>| read_ranges(file, &path, ranges);
        self.with_reader(&path, read).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let store = self.clone();
        locations
            .map(move |location| {
                let store = store.clone();
                async move {
                    let location = location?;
                    let path = store.server_path(&location)?;
                    let removed = store.fs()?.rm(&path).await;
                    store.changed(&path).await;
                    removed.map_err(|e| client_error(&path, e))?;
                    Ok(location)
                }
            })
            .buffered(10)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        match self.server_path(&prefix.cloned().unwrap_or_default()) {
            Ok(dir) => self.walk(dir),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let dir = self.server_path(&prefix.cloned().unwrap_or_default())?;
        let (objects, dirs) = self.list_dir(&dir).await?;
        let common_prefixes = dirs
            .iter()
            .map(|(d, _)| self.object_path(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(ListResult {
            common_prefixes,
            objects,
        })
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let (source, target) = (self.server_path(from)?, self.server_path(to)?);
        let create = options.mode == CopyMode::Create;
        // a missing source is reported before an existing target (the
        // source is closed when `input` is dropped)
        let input = OpenFile::direct(self.open(&source, OpenFlags::READ).await?);
        if create && self.exists(&target).await? {
            return Err(already_exists(&target));
        }
        let temp = TempFile::create(self, &target).await?;
        let writer = temp.writer();
        let mut offset = 0u64;
        loop {
            let data = input
                .read_at(offset, CHUNK as usize)
                .await
                .map_err(|e| client_error(&source, e))?;
            if data.is_empty() {
                break;
            }
            offset = writer.write_bytes(offset, &data).await?;
        }
        drop(input);
        temp.commit(&target, create).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let (source, target) = (self.server_path(from)?, self.server_path(to)?);
        if options.target_mode == RenameTargetMode::Create && self.exists(&target).await? {
            return Err(already_exists(&target));
        }
        let fs = self.fs()?;
        if let Some((parent, _)) = target.rsplit_once('/') {
            if !parent.is_empty() {
                let _ = fs.mkdir(parent, true, 0o755).await;
            }
        }
        let moved = fs.mv(&source, &target).await;
        self.changed(&source).await;
        self.changed(&target).await;
        moved.map_err(|e| match client_error(&source, e) {
            // the error is about the target unless the source is gone
            Error::AlreadyExists { source: e, .. } => Error::AlreadyExists {
                path: target.clone(),
                source: e,
            },
            other => other,
        })
    }
}
