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
//! An element that reads short fails the request with `kXR_FSError`, as
//! xrootd 5.5.3 does (PROTOCOL.md Appendix item 3).
//!
//! Answers stream: a readv's frames are planned from the element lengths
//! ([`ReadvEncoder::frame_counts`]), then read a batch of frames at a time
//! (consecutive elements naming the same file are one backend
//! [`crate::File::readv`] call), a few batches ahead, each within the
//! memory budget until written; a pgreadv's extents are read in pgread
//! pieces. So a vector read of any size holds at most a few batches.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{stream, StreamExt, TryFutureExt, TryStreamExt};
use tokio::sync::OwnedSemaphorePermit;
use xroot_proto::limits::MAX_READV_TOTAL_ACCEPTED;
use xroot_proto::request::{PgReadv, Readv, ReadvFlags};
use xroot_proto::response::{PgReadEncoder, ReadvEncoder};
use xroot_proto::{ErrorCode, ReadListEntry, RequestId};

use crate::admit::budget::Share;
use crate::admit::files::OpenFile;
use crate::admit::limit::Slot;
use crate::fs::{File, FileSystem, FsError};
use crate::handle::file_requests::{pgread_piece, pieces, READ_AHEAD};
use crate::handle::kit::{err, offset, Ctx, Fail, Out};
use crate::observe::stats::InFlight;

/// The open file of each element.
type Files<T> = Vec<Arc<OpenFile<T>>>;

/// Checks every element's handle and offset; returns each element's file.
fn files<F: FileSystem>(ctx: &Ctx<F>, list: &[ReadListEntry]) -> Result<Files<F::File>, FsError> {
    list.iter()
        .map(|e| {
            offset(e.offset, "Readv")?;
            ctx.file(e.fhandle, "readv")
        })
        .collect()
}

/// The `(offset, len)` extents of `list`.
fn extents(list: &[ReadListEntry]) -> Vec<(u64, usize)> {
    list.iter()
        .map(|e| (e.offset as u64, e.rlen as usize))
        .collect()
}

/// Most data bytes one backend call of a readv asks for (2 MiB, one frame,
/// within a link's floor of the budget; at most half the link's budget, at
/// least one frame).
const BATCH: usize = 2 << 20;

/// `kXR_readv`: the elements with their 16-byte headers in request order,
/// in frames of at most 2 MiB that never split an element
/// ([`ReadvEncoder`]); with [`ReadvFlags::CRC32C`] (the extension) each
/// header carries its data's crc32c in place of the file handle.
pub(crate) async fn readv<F: FileSystem>(ctx: &Ctx<F>, r: Readv) -> Result<(), Fail> {
    if r.list.is_empty() {
        return Err(err(ErrorCode::ARG_INVALID, "Read vector is invalid").into());
    }
    let files = files(ctx, &r.list)?;
    monitor_runs(ctx, &files, &r.list);
    let out = ctx.out(r.pathid)?;
    let sent = readv_frames(ctx, &files, &r, &out).await;
    out.finish(sent).await
}

async fn readv_frames<F: FileSystem>(
    ctx: &Ctx<F>,
    files: &Files<F::File>,
    r: &Readv,
    out: &Out,
) -> Result<(), Fail> {
    let (_limits, _turns, _in_flight) = turn(ctx, files, RequestId::READV).await;
    let encoder = ReadvEncoder::new().with_crc32c(r.flags.contains(ReadvFlags::CRC32C));
    let counts = encoder.frame_counts(r.list.iter().map(|e| e.rlen as usize));
    let batches = batches(&r.list, &counts, BATCH.min(out.budget.largest() / 2));
    let nframes = counts.len();
    let mut fetched = stream::iter(batches)
        .map(|(frames, elements)| batch_read(files, &r.list, out, frames, elements))
        .buffered(READ_AHEAD);
    while let Some((frames, elements, data, share)) = fetched.try_next().await? {
        let mut data = r.list[elements].iter().copied().zip(data);
        let mut share = Some(share);
        for (k, &n) in counts
            .iter()
            .enumerate()
            .take(frames.end)
            .skip(frames.start)
        {
            let frame: Vec<(ReadListEntry, Bytes)> = data.by_ref().take(n).collect();
            let bytes = frame.iter().map(|(_, d)| d.len()).sum();
            let parts = encoder.frame_parts(out.sid, &frame, k + 1 == nframes);
            // the batch's share goes with its last frame
            let held = if k + 1 == frames.end {
                share.take()
            } else {
                None
            };
            out.parts(parts, bytes, held).await?;
        }
    }
    Ok(())
}

/// Tells the session's monitor of a vector read: one count per run of
/// consecutive elements on the same file, as the stock's `rvOps`.
fn monitor_runs<F: FileSystem>(ctx: &Ctx<F>, files: &Files<F::File>, list: &[ReadListEntry]) {
    let Some(m) = ctx.session.monitor() else {
        return;
    };
    let seq = m.next_readv_seq();
    let mut i = 0;
    while i < list.len() {
        let j = (i..list.len())
            .find(|&j| !Arc::ptr_eq(&files[j], &files[i]))
            .unwrap_or(list.len());
        if let Some(c) = &files[i].counters {
            let len: u64 = list[i..j].iter().map(|e| e.rlen.max(0) as u64).sum();
            let count = (j - i).min(usize::from(u16::MAX)) as u16;
            ctx.session
                .monitor_readv(c, count, len.min(u64::from(u32::MAX)) as u32, seq);
        }
        i = j;
    }
}

/// Groups frames (`counts` elements each) into batches of at most `cap`
/// data bytes (at least one frame each): `(frames, elements)` ranges.
fn batches(
    list: &[ReadListEntry],
    counts: &[usize],
    cap: usize,
) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (k, &n) in counts.iter().enumerate() {
        let frame: usize = list[start..start + n].iter().map(|e| e.rlen as usize).sum();
        match out.last_mut() {
            Some((frames, elements)) if bytes + frame <= cap => {
                frames.end = k + 1;
                elements.end = start + n;
                bytes += frame;
            }
            _ => {
                out.push((k..k + 1, start..start + n));
                bytes = frame;
            }
        }
        start += n;
    }
    out
}

/// A batch read within the budget.
type Batch = (Range<usize>, Range<usize>, Vec<Bytes>, Share);

/// The data of `list[elements]` (`frames` passed through), within the
/// budget: one backend vector read per run of consecutive elements on the
/// same file, every element whole.
async fn batch_read<T: File>(
    files: &Files<T>,
    list: &[ReadListEntry],
    out: &Out,
    frames: Range<usize>,
    elements: Range<usize>,
) -> Result<Batch, FsError> {
    let bytes: usize = list[elements.clone()]
        .iter()
        .map(|e| e.rlen as usize + ReadListEntry::LEN)
        .sum();
    let share = out.budget.take(bytes).await;
    let mut data = Vec::with_capacity(elements.len());
    let mut i = elements.start;
    while i < elements.end {
        let f = &files[i];
        let j = (i..elements.end)
            .find(|&j| !Arc::ptr_eq(&files[j], f))
            .unwrap_or(elements.end);
        data.extend(vector_read(&f.file, extents(&list[i..j])).await?);
        i = j;
    }
    Ok((frames, elements, data, share))
}

/// What a vector read holds while it runs: the server's and the link's
/// vector-read permits, each file's vector-read turn, and its count in the
/// statistics.
type Turn = (Slot, Vec<OwnedSemaphorePermit>, InFlight);

/// Waits for the vector read's turn under every limit. The files' turns are
/// taken in address order, so two vector reads over the same files cannot
/// wait for each other. The request counts as in flight from then on.
async fn turn<F: FileSystem>(ctx: &Ctx<F>, files: &Files<F::File>, kind: RequestId) -> Turn {
    let limits = ctx.vector_turn().await;
    let mut distinct: Vec<&Arc<OpenFile<F::File>>> = files.iter().collect();
    distinct.sort_by_key(|f| Arc::as_ptr(f));
    distinct.dedup_by(|a, b| Arc::ptr_eq(a, b));
    let mut turns = Vec::with_capacity(distinct.len());
    for f in distinct {
        turns.push(f.readv_turn().await);
    }
    (limits, turns, ctx.in_flight(kind))
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
/// ([`PgReadEncoder::encode_pgreadv`]), piece by piece
/// ([`PgReadEncoder::pgreadv_part_parts`]). The lengths with 16 bytes per
/// element may not pass 2 GiB, as for readv (`kXR_NoMemory`).
pub(crate) async fn pgreadv<F: FileSystem>(ctx: &Ctx<F>, r: PgReadv) -> Result<(), Fail> {
    let total: u64 = r.list.iter().map(|e| e.rlen as u64 + 16).sum();
    if total > MAX_READV_TOTAL_ACCEPTED {
        let e = err(ErrorCode::NO_MEMORY, "Total pgreadv transfer is too large");
        return Err(e.into());
    }
    let files = files(ctx, &r.list)?;
    monitor_runs(ctx, &files, &r.list);
    let out = ctx.out(r.pathid)?;
    let sent = pgreadv_frames(ctx, &files, &r, &out).await;
    out.finish(sent).await
}

async fn pgreadv_frames<F: FileSystem>(
    ctx: &Ctx<F>,
    files: &Files<F::File>,
    r: &PgReadv,
    out: &Out,
) -> Result<(), Fail> {
    let (_limits, _turns, _in_flight) = turn(ctx, files, RequestId::PGREADV).await;
    let encoder = PgReadEncoder::new();
    if r.list.is_empty() {
        let mut frames = BytesMut::new();
        encoder.encode_pgreadv(out.sid, &[], &mut frames);
        return Ok(out.raw(frames, out.budget.take(0).await).await?);
    }
    // (element, offset, length) of every piece, a zero-length extent as one
    // empty piece
    let mut plan: Vec<(usize, u64, usize)> = Vec::new();
    for (k, e) in r.list.iter().enumerate() {
        let (at, len) = (e.offset as u64, e.rlen as usize);
        match len {
            0 => plan.push((k, at, 0)),
            _ => plan.extend(
                pieces(at, len, |here| encoder.piece_len(here) as usize)
                    .map(|(here, want)| (k, here, want)),
            ),
        }
    }
    let mut fetched = stream::iter(plan)
        .map(|(k, here, want)| {
            pgread_piece(&files[k].file, out, here, want).map_ok(move |piece| (k, piece))
        })
        .buffered(READ_AHEAD);
    let last = r.list.len() - 1;
    let mut ended = None;
    while let Some((k, (here, want, data, share))) = fetched.try_next().await? {
        if ended == Some(k) {
            continue; // past the end of file in this extent
        }
        let e = &r.list[k];
        let end = e.offset as u64 + e.rlen as u64;
        let done = data.len() < want || here + want as u64 == end;
        if done {
            ended = Some(k);
        }
        let parts = encoder.pgreadv_part_parts(out.sid, here, end - here, &data, done && k == last);
        if !parts.is_empty() {
            out.parts(parts, data.len(), Some(share)).await?;
        }
    }
    Ok(())
}
