//! The requests on files: open, close, read, pgread, write, pgwrite, writev,
//! sync and truncate (PROTOCOL.md §6; XrdXrootdXeq `do_Open`, `do_Close`,
//! `do_Read`/`do_ReadAll`, `do_Write`, `do_WriteV`, `do_Sync`,
//! `do_Truncate`; XrdXrootdXeqPgrw `do_PgRead`, `do_PgWrite`).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use xroot_proto::limits::{MAX_TRANSFER, PG_MAX_ERRORS_PER_REQUEST};
use xroot_proto::page::PAGE_SIZE;
use xroot_proto::request::{
    Close, Open, OpenOptionT, OpenOptions, PgReqFlags, Pgread, Pgwrite, Read, Sync, Truncate,
    Write, Writev, WritevOptions,
};
use xroot_proto::response::{
    OpenCompression, OpenResponse, PgReadEncoder, PgWriteCse, PgWriteResponse, Response,
};
use xroot_proto::{ErrorCode, Status};

use crate::dispatch::{err, offset, ok, ok_with, Ctx, Fail, Out};
use crate::files::OpenFile;
use crate::fs::{File, FileSystem, FsError, OpenMode};
use crate::path;

/// `kXR_open`: the options that apply to a POSIX backend become an
/// [`OpenMode`]; `kXR_retstat` (or `kXR_retstatx`) adds the stat text,
/// `kXR_compress` the (zero) compression fields. Cloning and co-locating
/// (`kXR_dup`, `kXR_samefs`) are not supported.
pub(crate) async fn open<F: FileSystem>(ctx: &Ctx<F>, r: Open) -> Result<Response, FsError> {
    let (opts, optt) = (r.options, r.optiont);
    if optt.contains(OpenOptionT::DUP) {
        return Err(err(ErrorCode::UNSUPPORTED, "file cloning is not supported"));
    }
    if optt.contains(OpenOptionT::SAMEFS) {
        return Err(err(
            ErrorCode::UNSUPPORTED,
            "colocating with a specified file is not supported",
        ));
    }
    let target = path::payload_target("Opening", &r.path)?;
    let create_new = opts.contains(OpenOptions::NEW);
    let truncate = !create_new && opts.contains(OpenOptions::DELETE);
    let write = !opts.contains(OpenOptions::READ)
        && (opts.contains(OpenOptions::UPDATE)
            || opts.contains(OpenOptions::WRITE_ONLY)
            || create_new
            || truncate);
    let mode = OpenMode {
        write,
        create_new,
        truncate,
        // the reference's quirk: kXR_async also allows making the path
        make_path: (create_new || truncate)
            && (opts.contains(OpenOptions::MKPATH) || opts.contains(OpenOptions::ASYNC)),
        append: opts.contains(OpenOptions::APPEND),
        mode: (u32::from(r.mode.0) & 0o777) | 0o600,
    };
    let file = ctx.fs().open(&target.path, mode, &target.cgi).await?;
    let retstat = opts.contains(OpenOptions::RETSTAT) || optt.contains(OpenOptionT::RETSTATX);
    let stat = match retstat {
        true => match file.stat().await {
            Ok(s) => Some(s),
            Err(e) => {
                let _ = file.close().await;
                return Err(e);
            }
        },
        false => None,
    };
    let fhandle = ctx
        .session
        .files
        .insert(OpenFile::new(file, target.path, write));
    let answer = OpenResponse {
        fhandle,
        compression: opts
            .contains(OpenOptions::COMPRESS)
            .then(OpenCompression::default),
        stat,
    };
    Ok(ok_with(|b| answer.encode(b)))
}

/// `kXR_close`: waits for the operations running on the file, then closes
/// it. Pages of a pgwrite still bad make it `kXR_ChkSumErr`.
pub(crate) async fn close<F: FileSystem>(ctx: &Ctx<F>, r: Close) -> Result<Response, FsError> {
    let f = ctx.session.files.remove(r.fhandle).await?;
    let closed = f.file.close().await;
    match f.pgw_outstanding() {
        0 => closed.map(|()| ok()),
        n => Err(err(
            ErrorCode::CHKSUM_ERR,
            format!("{n} uncorrected checksum errors"),
        )),
    }
}

/// `kXR_read`: the data in `kXR_oksofar` chunks of at most
/// [`crate::Config::read_chunk`] bytes, the last one `kXR_ok`; at end of
/// file the data read goes out as `kXR_oksofar`, then an empty `kXR_ok`
/// (PROTOCOL.md §6.3, tests/vectors/read_eof). Answered on the link of the
/// `read_args` pathid; pre-read entries are only checked.
pub(crate) async fn read<F: FileSystem>(ctx: &Ctx<F>, r: Read) -> Result<(), Fail> {
    if let Some(args) = &r.args {
        for e in &args.preread {
            ctx.file(e.fhandle, "preread")?;
        }
    }
    let f = ctx.file(r.fhandle, "read")?;
    if r.rlen < 0 {
        return Err(err(ErrorCode::ARG_INVALID, "Read length is negative").into());
    }
    let out = ctx.out(r.pathid())?;
    if r.rlen == 0 {
        return Ok(out.send(&ok()).await?);
    }
    let at = offset(r.offset, "Read")?;
    out.finish(read_chunks(ctx, &f, &out, at, r.rlen as usize).await)
        .await
}

async fn read_chunks<F: FileSystem>(
    ctx: &Ctx<F>,
    f: &OpenFile<F::File>,
    out: &Out,
    mut at: u64,
    mut left: usize,
) -> Result<(), Fail> {
    let _op = f.op("read").await?;
    let quantum = ctx.config().read_chunk.max(1);
    loop {
        let want = left.min(quantum);
        let mut data = f.file.read_at(at, want).await?;
        data.truncate(want);
        let n = data.len();
        if n == 0 || n >= left {
            return Ok(out.data(Status::OK, data).await?);
        }
        out.data(Status::OKSOFAR, data).await?;
        at += n as u64;
        left -= n;
    }
}

/// `kXR_pgread`: `kXR_status` frames of at most 512 pages with a crc32c
/// per page, built by [`PgReadEncoder`] (PROTOCOL.md §6.5), on the link of
/// the pathid.
pub(crate) async fn pgread<F: FileSystem>(ctx: &Ctx<F>, r: Pgread) -> Result<(), Fail> {
    if r.rlen <= 0 {
        return Err(err(ErrorCode::ARG_INVALID, "Read length is invalid").into());
    }
    let f = ctx.file(r.fhandle, "pgread")?;
    let out = ctx.out(r.pathid())?;
    let at = offset(r.offset, "Read")?;
    let sent = pgread_frames(&f, &out, at, r.rlen as usize).await;
    out.finish(sent).await
}

async fn pgread_frames<T: File>(
    f: &OpenFile<T>,
    out: &Out,
    at: u64,
    rlen: usize,
) -> Result<(), Fail> {
    let _op = f.op("pgread").await?;
    let encoder = PgReadEncoder::new();
    let pieces = pgread_pieces(&f.file, &encoder, at, rlen).await?;
    let len: usize = pieces.iter().map(Bytes::len).sum();
    // one allocation for every frame: data and crcs, plus a 32-byte status
    // head per frame of up to 512 pages (2 MiB), rounded up
    let heads = 64 * (len / MAX_TRANSFER + 2);
    let mut frames =
        BytesMut::with_capacity(xroot_proto::page::wire_len(at, len as u64) as usize + heads);
    let slices: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
    encoder.encode_pgread_pieces(out.sid, at, rlen as u64, &slices, &mut frames);
    Ok(out.raw(frames).await?)
}

/// The bytes of a pgread of `len` at `at` in one piece (for `kXR_pgreadv`,
/// whose extents are framed whole): [`pgread_pieces`] joined.
pub(crate) async fn pgread_data<T: File>(file: &T, at: u64, len: usize) -> Result<Bytes, FsError> {
    let mut pieces = pgread_pieces(file, &PgReadEncoder::new(), at, len).await?;
    Ok(match pieces.len() {
        1 => pieces.pop().unwrap_or_default(),
        _ => pieces.concat().into(),
    })
}

/// The bytes of a pgread of `len` at `at`, asked of the backend in pieces
/// that each end on a frame boundary of the answer
/// ([`PgReadEncoder::piece_len`], at most [`MAX_TRANSFER`] bytes) up to
/// the first short one (end of file), so that memory follows the data that
/// exists, not the length a client asks for, and each piece is framed
/// where it lies.
async fn pgread_pieces<T: File>(
    file: &T,
    encoder: &PgReadEncoder,
    at: u64,
    len: usize,
) -> Result<Vec<Bytes>, FsError> {
    let mut pieces = Vec::new();
    let mut done = 0;
    if len == 0 {
        return Ok(pieces);
    }
    loop {
        let here = at + done as u64;
        let want = (len - done).min(encoder.piece_len(here) as usize);
        let mut piece = file.pgread(here, want).await?;
        piece.truncate(want);
        done += piece.len();
        let short = piece.len() < want;
        pieces.push(piece);
        if short || done == len {
            return Ok(pieces);
        }
    }
}

/// `kXR_write`: the data at `offset`. (The data always comes with the
/// request; a pathid naming another link for the data is not supported.)
pub(crate) async fn write<F: FileSystem>(ctx: &Ctx<F>, r: Write) -> Result<Response, FsError> {
    let f = ctx.file(r.fhandle, "write")?;
    if r.data.is_empty() {
        return Ok(ok());
    }
    let at = offset(r.offset, "Write")?;
    let _op = f.op("write").await?;
    f.file.write_at(at, r.data).await?;
    Ok(ok())
}

/// `kXR_pgwrite`: verifies each page's crc32c, writes the good pages
/// (contiguous ones together) and answers the bad ones' offsets in the
/// CSE of a Final `kXR_status` (PROTOCOL.md §6.7) for the client to resend
/// with `kXR_pgRetry`. A page that comes good later is struck off; pages
/// still bad at close make the close fail.
pub(crate) async fn pgwrite<F: FileSystem>(ctx: &Ctx<F>, r: Pgwrite) -> Result<Response, FsError> {
    if r.pathid != 0 && ctx.session.stream(r.pathid).is_none() {
        return Err(err(ErrorCode::ARG_INVALID, "invalid path ID"));
    }
    let f = ctx.file(r.fhandle, "write")?;
    let start = offset(r.offset, "pgwrite")?;
    if r.reqflags.contains(PgReqFlags::RETRY) {
        let page = PAGE_SIZE - (start % PAGE_SIZE as u64) as usize;
        if r.payload.len() > page + 4 {
            return Err(err(
                ErrorCode::ARG_INVALID,
                "pgwrite retry of more than one page not allowed",
            ));
        }
    }
    let _op = f.op("pgwrite").await?;
    let mut run = Run::default();
    let mut good = Vec::new();
    let mut cse = PgWriteCse::default();
    for page in r.pages() {
        let page = page.map_err(|e| err(ErrorCode::ARG_INVALID, e.to_string()))?;
        if page.is_valid() {
            good.push(page.offset);
            run.push(&f.file, page.offset, page.data).await?;
            continue;
        }
        run.flush(&f.file).await?;
        if cse.bad_offsets.len() + 1 >= PG_MAX_ERRORS_PER_REQUEST {
            return Err(err(
                ErrorCode::TOO_MANY_ERRS,
                "Too many checksum errors in request",
            ));
        }
        let len = page.data.len() as i16;
        if cse.bad_offsets.is_empty() {
            cse.dl_first = len;
        }
        cse.dl_last = len;
        cse.bad_offsets.push(page.offset as i64);
    }
    run.flush(&f.file).await?;
    let bad: Vec<u64> = cse.bad_offsets.iter().map(|&o| o as u64).collect();
    f.pgw_update(&bad, &good).map_err(|()| {
        err(
            ErrorCode::TOO_MANY_ERRS,
            "Too many uncorrected checksum errors in file",
        )
    })?;
    let answer = PgWriteResponse {
        offset: r.offset,
        cse: (!bad.is_empty()).then_some(cse),
    };
    Ok(Response::Status(answer.to_status()))
}

/// Contiguous good pages of a pgwrite, written with one call.
#[derive(Default)]
struct Run {
    start: u64,
    len: u64,
    parts: Vec<Bytes>,
}

impl Run {
    async fn push<T: File>(&mut self, file: &T, at: u64, data: Bytes) -> Result<(), FsError> {
        if self.start + self.len != at {
            self.flush(file).await?;
            self.start = at;
        }
        self.len += data.len() as u64;
        self.parts.push(data);
        Ok(())
    }

    async fn flush<T: File>(&mut self, file: &T) -> Result<(), FsError> {
        let data = match self.parts.len() {
            0 => return Ok(()),
            1 => self.parts.pop().unwrap_or_default(),
            _ => Bytes::from(self.parts.concat()),
        };
        self.parts.clear();
        self.start += self.len;
        self.len = 0;
        file.write_at(self.start - data.len() as u64, data).await
    }
}

/// `kXR_writev`: each element at its offset of its file (elements without
/// data are skipped), then a sync of each file with `doSync`.
pub(crate) async fn writev<F: FileSystem>(ctx: &Ctx<F>, r: Writev) -> Result<Response, FsError> {
    let mut writes = Vec::with_capacity(r.segments.len());
    for s in r.segments.into_iter().filter(|s| !s.data.is_empty()) {
        let f = ctx.file(s.fhandle, "writev")?;
        writes.push((f, offset(s.offset, "Writev")?, s.data));
    }
    for (f, at, data) in &writes {
        let _op = f.op("writev").await?;
        f.file.write_at(*at, data.clone()).await?;
    }
    if r.options.contains(WritevOptions::DO_SYNC) {
        let mut synced: Vec<&Arc<OpenFile<F::File>>> = Vec::new();
        for (f, _, _) in &writes {
            if !synced.iter().any(|s| Arc::ptr_eq(s, f)) {
                synced.push(f);
                f.file.sync().await?;
            }
        }
    }
    Ok(ok())
}

/// `kXR_sync`.
pub(crate) async fn sync<F: FileSystem>(ctx: &Ctx<F>, r: Sync) -> Result<Response, FsError> {
    let f = ctx.file(r.fhandle, "sync")?;
    let _op = f.op("sync").await?;
    f.file.sync().await.map(|()| ok())
}

/// `kXR_truncate`: of the open file without a path, else of the path.
pub(crate) async fn truncate<F: FileSystem>(
    ctx: &Ctx<F>,
    r: Truncate,
) -> Result<Response, FsError> {
    let size = offset(r.offset, "Truncate")?;
    if r.path.is_empty() {
        let f = ctx.file(r.fhandle, "trunc")?;
        let _op = f.op("trunc").await?;
        return f.file.truncate(size).await.map(|()| ok());
    }
    let target = path::payload_target("Truncating", &r.path)?;
    ctx.fs().truncate(&target.path, size).await.map(|()| ok())
}
