//! Vector reads: `kXR_readv` and the `kXR_pgreadv` extension (PROTOCOL.md
//! §6.4; XrdXrootdXeq `do_ReadV`; `xroot_proto::ext`).
//!
//! Unlike the stock server, which runs one vector read at a time per link
//! and ignores the `pathid` byte, every vector read here runs in its own
//! task: several overlap on one link, and one that names a bound substream
//! is answered on it (an unknown pathid is `kXR_ArgInvalid`). How many run
//! at once is bounded three ways: per file by the backend
//! ([`crate::File::readv_concurrency`]: serial, or parallel up to n), per
//! link and per server by [`crate::Config`].
//!
//! The list limits (1024 elements, 2,097,136 bytes per element, 2 GiB in
//! all) are checked when the request is decoded, with the reference's codes.
//! Consecutive elements naming the same file are one backend
//! [`crate::File::readv`] call; an element that reads short fails the whole
//! request with `kXR_FSError`, as xrootd 5.5.3 does (PROTOCOL.md Appendix
//! item 3).

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::sync::{OwnedSemaphorePermit, SemaphorePermit};
use xroot_proto::request::{PgReadv, Readv, ReadvFlags};
use xroot_proto::response::{PgReadEncoder, PgReadExtent, ReadvEncoder};
use xroot_proto::{ErrorCode, ReadListEntry, RequestId};

use crate::dispatch::{err, offset, Ctx, Fail, Out};
use crate::files::OpenFile;
use crate::fs::{File, FileSystem, FsError};
use crate::stats::InFlight;

/// Runs of consecutive elements naming the same open file.
type Runs<T> = Vec<(Arc<OpenFile<T>>, Range<usize>)>;

/// Groups `list` by file and checks every handle and offset.
fn runs<F: FileSystem>(ctx: &Ctx<F>, list: &[ReadListEntry]) -> Result<Runs<F::File>, FsError> {
    let mut out: Runs<F::File> = Vec::new();
    let mut start = 0;
    for (i, e) in list.iter().enumerate() {
        offset(e.offset, "Readv")?;
        if i + 1 == list.len() || list[i + 1].fhandle != e.fhandle {
            out.push((ctx.file(e.fhandle, "readv")?, start..i + 1));
            start = i + 1;
        }
    }
    Ok(out)
}

/// The `(offset, len)` extents of `list`.
fn extents(list: &[ReadListEntry]) -> Vec<(u64, usize)> {
    list.iter()
        .map(|e| (e.offset as u64, e.rlen as usize))
        .collect()
}

/// `kXR_readv`: the elements with their 16-byte headers in request order,
/// in frames of at most 2 MiB that never split an element
/// ([`ReadvEncoder`]); with [`ReadvFlags::CRC32C`] (the extension) each
/// header carries its data's crc32c in place of the file handle.
pub(crate) async fn readv<F: FileSystem>(ctx: &Ctx<F>, r: Readv) -> Result<(), Fail> {
    if r.list.is_empty() {
        return Err(err(ErrorCode::ARG_INVALID, "Read vector is invalid").into());
    }
    let runs = runs(ctx, &r.list)?;
    let out = ctx.out(r.pathid)?;
    let sent = readv_frames(ctx, &runs, &r, &out).await;
    out.finish(sent).await
}

async fn readv_frames<F: FileSystem>(
    ctx: &Ctx<F>,
    runs: &Runs<F::File>,
    r: &Readv,
    out: &Out,
) -> Result<(), Fail> {
    let (_limits, _turns, _in_flight) = turn(ctx, runs, RequestId::READV).await?;
    let mut elements: Vec<(ReadListEntry, Bytes)> = Vec::with_capacity(r.list.len());
    for (f, range) in runs {
        let list = &r.list[range.clone()];
        let data = vector_read(&f.file, extents(list)).await?;
        elements.extend(list.iter().copied().zip(data));
    }
    let mut frames = BytesMut::new();
    ReadvEncoder::new()
        .with_crc32c(r.flags.contains(ReadvFlags::CRC32C))
        .encode(out.sid, &elements, &mut frames);
    Ok(out.raw(frames).await?)
}

/// What a vector read holds while it runs: the server's and the link's
/// vector-read permits, then for each file it reads an operation and its
/// vector-read turn, and its count in the statistics.
type Turn<'a> = (
    (OwnedSemaphorePermit, OwnedSemaphorePermit),
    Vec<(SemaphorePermit<'a>, OwnedSemaphorePermit)>,
    InFlight,
);

/// Waits for the vector read's turn under every limit. The files' turns are
/// taken in address order, so two vector reads over the same files cannot
/// wait for each other. The request counts as in flight from then on.
async fn turn<'a, F: FileSystem>(
    ctx: &Ctx<F>,
    runs: &'a Runs<F::File>,
    kind: RequestId,
) -> Result<Turn<'a>, FsError> {
    let limits = ctx.vector_turn().await;
    let mut files: Vec<&'a Arc<OpenFile<F::File>>> = runs.iter().map(|(f, _)| f).collect();
    files.sort_by_key(|f| Arc::as_ptr(f));
    files.dedup_by(|a, b| Arc::ptr_eq(a, b));
    let mut turns = Vec::with_capacity(files.len());
    for f in files {
        turns.push((f.op("readv").await?, f.readv_turn().await));
    }
    Ok((limits, turns, ctx.in_flight(kind)))
}

/// One backend vector read of one file; every element must come back whole.
async fn vector_read<T: File>(file: &T, extents: Vec<(u64, usize)>) -> Result<Vec<Bytes>, FsError> {
    let lens: Vec<usize> = extents.iter().map(|e| e.1).collect();
    let data = file.readv(extents).await?;
    let whole = data.len() == lens.len() && data.iter().zip(&lens).all(|(d, &l)| d.len() == l);
    match whole {
        true => Ok(data),
        false => Err(err(ErrorCode::FS_ERROR, "readv past EOF")),
    }
}

/// **Extension** `kXR_pgreadv`: each extent read like a `kXR_pgread`
/// (short at end of file), answered as one stream of `kXR_status` frames
/// with a crc32c per page and a single Final frame
/// ([`PgReadEncoder::encode_pgreadv`]).
pub(crate) async fn pgreadv<F: FileSystem>(ctx: &Ctx<F>, r: PgReadv) -> Result<(), Fail> {
    let runs = runs(ctx, &r.list)?;
    let out = ctx.out(r.pathid)?;
    let sent = pgreadv_frames(ctx, &runs, &r, &out).await;
    out.finish(sent).await
}

async fn pgreadv_frames<F: FileSystem>(
    ctx: &Ctx<F>,
    runs: &Runs<F::File>,
    r: &PgReadv,
    out: &Out,
) -> Result<(), Fail> {
    let (_limits, _turns, _in_flight) = turn(ctx, runs, RequestId::PGREADV).await?;
    let mut data = Vec::with_capacity(r.list.len());
    for (f, range) in runs {
        for (at, len) in extents(&r.list[range.clone()]) {
            let mut d = f.file.pgread(at, len).await?;
            d.truncate(len);
            data.push(d);
        }
    }
    let extents: Vec<PgReadExtent<'_>> = r
        .list
        .iter()
        .zip(&data)
        .map(|(e, d)| PgReadExtent {
            offset: e.offset as u64,
            rlen: e.rlen as u64,
            data: d,
        })
        .collect();
    let mut frames = BytesMut::new();
    PgReadEncoder::new().encode_pgreadv(out.sid, &extents, &mut frames);
    Ok(out.raw(frames).await?)
}
