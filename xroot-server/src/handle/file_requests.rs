//! The requests on files: open, close, read, pgread, write, pgwrite, writev,
//! sync and truncate (PROTOCOL.md §6; XrdXrootdXeq `do_Open`, `do_Close`,
//! `do_Read`/`do_ReadAll`, `do_Write`, `do_WriteV`, `do_Sync`,
//! `do_Truncate`; XrdXrootdXeqPgrw `do_PgRead`, `do_PgWrite`).

use std::sync::Arc;

use bytes::Bytes;
use futures::{stream, FutureExt, StreamExt, TryStreamExt};
use xroot_proto::limits::PG_MAX_ERRORS_PER_REQUEST;
use xroot_proto::page::{wire_len, PAGE_SIZE};
use xroot_proto::request::{
    Close, Open, OpenOptionT, OpenOptions, PgReqFlags, Pgread, Pgwrite, Read, Request, Sync,
    Truncate, Write, Writev, WritevOptions,
};
use xroot_proto::response::{
    OpenCompression, OpenResponse, PgReadEncoder, PgWriteCse, PgWriteResponse, Response,
};
use xroot_proto::{ErrorCode, Status};

use crate::admit::budget::Share;
use crate::admit::files::OpenFile;
use crate::admit::order::Ticket;
use crate::fs::{File, FileRegion, FileSystem, FsError};
use crate::handle::kit::{err, offset, ok, ok_with, open_mode, Ctx, Fail, Out};
use crate::handle::path;
use crate::handle::{scope_check, tpc};
use crate::observe::monitor::{FileCounters, SessionEvent};

/// `kXR_open`: the options that apply to a POSIX backend become an
/// [`OpenMode`]; `kXR_retstat` (or `kXR_retstatx`) adds the stat text,
/// `kXR_compress` the (zero) compression fields. The path is locked first
/// ([`crate::admit::lock`]: `kXR_FileLocked` while another open excludes it,
/// unless `kXR_force`). With `kXR_posc` the file persists only if the
/// client closes it: its session ending first removes it. Cloning and
/// co-locating (`kXR_dup`, `kXR_samefs`) are not supported.
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
    let mode = open_mode(opts, r.mode.0);
    // as do_Open: an update or write-only open locks for writing
    let locks_write = !opts.contains(OpenOptions::READ)
        && (opts.contains(OpenOptions::UPDATE) || opts.contains(OpenOptions::WRITE_ONLY));
    let force = opts.contains(OpenOptions::FORCE);
    let pull = tpc::before_open(ctx, &target.path, &target.cgi, mode.write).await?;
    let lock = ctx.shared.locks.lock(&target.path, locks_write, force)?;
    let file = ctx
        .fs()
        .open(ctx.caller(), &target.path, mode, &target.cgi)
        .await?;
    if mode.create_new || mode.truncate {
        ctx.shared.cluster_events.have(&target.path);
    }
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
    let posc = mode.write && opts.contains(OpenOptions::POSC);
    let mut file = OpenFile::new(file, target.path, mode.write, mode.append, posc, lock);
    file.tpc = pull;
    if let Some(m) = ctx.session.monitor() {
        let size = match &stat {
            Some(s) => s.size,
            None => file.file.stat().await.map_or(0, |s| s.size),
        };
        let counters = Arc::new(FileCounters::new(ctx.shared.next_dictid()));
        m.event(&SessionEvent::Open {
            file: &counters,
            path: &file.path,
            size,
            rw: locks_write,
        });
        file.counters = Some(counters);
    }
    let fhandle = ctx.session.files.insert(file);
    let answer = OpenResponse {
        fhandle,
        compression: opts
            .contains(OpenOptions::COMPRESS)
            .then(OpenCompression::default),
        stat,
    };
    Ok(ok_with(|b| answer.encode(b)))
}

/// `kXR_close`, once every request on the handle that arrived before it is
/// done: closes the file and releases its lock. Pages of a pgwrite still
/// bad make it `kXR_ChkSumErr` (and remove a `kXR_posc` file, as the
/// reference's forced close does).
pub(crate) async fn close<F: FileSystem>(ctx: &Ctx<F>, r: Close) -> Result<Response, FsError> {
    let f = ctx.file(r.fhandle, "close")?;
    ctx.session.files.remove(r.fhandle, &f);
    let closed = f.close(ctx.fs()).await;
    ctx.session.monitor_close(&f, false);
    if f.posc && f.pgw_outstanding() > 0 {
        let _ = ctx.fs().rm(ctx.caller(), &f.path).await;
    }
    f.unlock();
    match f.pgw_outstanding() {
        0 => closed.map(|()| ok()),
        n => Err(err(
            ErrorCode::CHKSUM_ERR,
            format!("{n} uncorrected checksum errors"),
        )),
    }
}

/// `kXR_read`: the data in `kXR_oksofar` chunks of at most
/// [`read_chunk`] bytes, the last one `kXR_ok`; at end of
/// file the data read goes out as `kXR_oksofar`, then an empty `kXR_ok`
/// (PROTOCOL.md §6.3, tests/vectors/read_eof). Answered on the link of the
/// `read_args` pathid; pre-read entries are only checked. Each chunk is read
/// within the memory budget and held only until written, a few read ahead.
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
    ctx.session.monitor_read(&f, at, r.rlen as u32, false);
    out.finish(read_chunks(ctx, &f, &out, at, r.rlen as usize).await)
        .await
}

/// Answers `kXR_read` `r` at once, without a task of its own, when that
/// takes no waiting: the request has its turn on the file and is allowed,
/// the file is open for reading only, the read fits in one chunk, the
/// link is plain and has room in its queue, and the backend offers the
/// bytes as a region of its file ([`File::region`]). `false` when any of
/// that does not hold (nothing was sent: [`read`] answers it then).
pub(crate) fn read_now<F: FileSystem>(ctx: &Ctx<F>, r: &Read) -> bool {
    let want = r.rlen as usize;
    if r.rlen <= 0 || r.offset < 0 {
        return false;
    }
    let Ok(f) = ctx.file(r.fhandle, "read") else {
        return false;
    };
    let ready = || ctx.tickets.iter().all(Ticket::is_ready);
    let allowed = || {
        ctx.caller().identity.scopes.is_none() || {
            let request = Request::Read(r.clone());
            matches!(
                scope_check::check(ctx, &request).now_or_never(),
                Some(Ok(()))
            )
        }
    };
    if f.writable || !ready() || r.args.as_ref().is_some_and(|a| !a.preread.is_empty()) {
        return false;
    }
    let Ok(out) = ctx.out(r.pathid()) else {
        return false;
    };
    if want > read_chunk(ctx, &f.file, &out) || !out.zero_copy(want) || !allowed() {
        return false;
    }
    match f.file.region(r.offset as u64, want) {
        Ok(Some(mut region)) => {
            region.len = region.len.min(want);
            let done = out.try_read(region, want);
            if done {
                ctx.session
                    .monitor_read(&f, r.offset as u64, r.rlen as u32, false);
            }
            done
        }
        _ => false,
    }
}

/// Bytes per frame of a `kXR_read` of `file` answered on `out`: the
/// server's [`crate::Config::read_chunk`], or on a plain link the
/// backend's [`File::read_chunk`] where that is smaller.
fn read_chunk<F: FileSystem>(ctx: &Ctx<F>, file: &F::File, out: &Out) -> usize {
    let chunk = ctx.config().read_chunk;
    match (out.is_plain(), file.read_chunk()) {
        (true, Some(backend)) => backend.min(chunk),
        _ => chunk,
    }
}

/// Pieces of a request read ahead of the one being sent.
pub(crate) const READ_AHEAD: usize = 4;

/// The `(offset, len)` pieces of `len` bytes at `at`, each as long as
/// `piece` says at its offset (at least 1 byte, at most what is left).
pub(crate) fn pieces(
    at: u64,
    len: usize,
    mut piece: impl FnMut(u64) -> usize,
) -> impl Iterator<Item = (u64, usize)> {
    let mut done = 0;
    std::iter::from_fn(move || {
        (done < len).then(|| {
            let here = at + done as u64;
            let n = piece(here).clamp(1, len - done);
            done += n;
            (here, n)
        })
    })
}

async fn read_chunks<F: FileSystem>(
    ctx: &Ctx<F>,
    f: &OpenFile<F::File>,
    out: &Out,
    at: u64,
    len: usize,
) -> Result<(), Fail> {
    let end = at + len as u64;
    let quantum = read_chunk(ctx, &f.file, out).clamp(1, out.budget.largest());
    // not for a file open for writing: the kernel sends the page cache's
    // bytes as they are when they leave, possibly after a later write on
    // the same handle ran (which must not change what an earlier read
    // answers, crate::admit::order)
    let zero_copy = !f.writable && out.zero_copy(len);
    let mut chunks = stream::iter(pieces(at, len, |_| quantum))
        .map(|(here, want)| read_piece(f, out, zero_copy, here, want))
        .buffered(READ_AHEAD);
    while let Some((here, want, piece)) = chunks.try_next().await? {
        let n = piece.len();
        let status = match n == 0 || here + n as u64 == end {
            true => Status::OK,
            false => Status::OKSOFAR,
        };
        match piece {
            Piece::Data(data, share) => out.data(status, data, share).await?,
            Piece::Region(region) => out.region(status, region).await?,
        }
        if status == Status::OK {
            return Ok(());
        }
        if n < want {
            // end of file: an empty kXR_ok follows, as from the reference
            let share = out.budget.take(0).await;
            return Ok(out.data(Status::OK, Bytes::new(), share).await?);
        }
    }
    Ok(())
}

/// One piece of a read's answer.
enum Piece {
    /// Read into memory, holding its share of the budget.
    Data(Bytes, Share),
    /// To be sent straight from the file ([`File::region`]).
    Region(FileRegion),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Data(data, _) => data.len(),
            Piece::Region(r) => r.len,
        }
    }
}

/// One piece of a read: `(offset, asked, piece)`. A region of the file
/// with `zero_copy` where the backend offers one, else read within the
/// budget.
async fn read_piece<T: File>(
    f: &OpenFile<T>,
    out: &Out,
    zero_copy: bool,
    at: u64,
    want: usize,
) -> Result<(u64, usize, Piece), FsError> {
    if zero_copy {
        if let Some(mut region) = f.file.region(at, want)? {
            region.len = region.len.min(want);
            return Ok((at, want, Piece::Region(region)));
        }
    }
    let share = out.budget.take(want).await;
    let mut data = f.file.read_at(at, want).await?;
    data.truncate(want);
    Ok((at, want, Piece::Data(data, share)))
}

/// `kXR_pgread`: `kXR_status` frames of at most 512 pages with a crc32c
/// per page, built by [`PgReadEncoder`] (PROTOCOL.md §6.5), on the link of
/// the pathid. The data is read in pieces that end on frame boundaries
/// ([`PgReadEncoder::piece_len`]), each framed where it lies (its pages
/// not copied) and held, within the memory budget, only until written.
pub(crate) async fn pgread<F: FileSystem>(ctx: &Ctx<F>, r: Pgread) -> Result<(), Fail> {
    if r.rlen <= 0 {
        return Err(err(ErrorCode::ARG_INVALID, "Read length is invalid").into());
    }
    let f = ctx.file(r.fhandle, "pgread")?;
    let out = ctx.out(r.pathid())?;
    let at = offset(r.offset, "Read")?;
    ctx.session.monitor_read(&f, at, r.rlen as u32, true);
    let sent = pgread_frames(&f.file, &out, at, r.rlen as usize).await;
    out.finish(sent).await
}

/// Most bytes of `kXR_status` heads in the frames of one piece.
pub(crate) const PIECE_HEADS: usize = 64;

/// The budget one pgread piece of `want` bytes at `at` holds: its data,
/// with a crc32c per page and its frames' heads.
pub(crate) fn piece_share(at: u64, want: usize) -> usize {
    wire_len(at, want as u64) as usize + PIECE_HEADS
}

/// Reads one piece of a pgread within the budget: `(offset, asked, data,
/// share)`; a piece of 0 bytes is not asked of the backend.
pub(crate) async fn pgread_piece<T: File>(
    file: &T,
    out: &Out,
    at: u64,
    want: usize,
) -> Result<(u64, usize, Bytes, Share), FsError> {
    let share = out.budget.take(piece_share(at, want)).await;
    if want == 0 {
        return Ok((at, want, Bytes::new(), share));
    }
    let mut data = file.pgread(at, want).await?;
    data.truncate(want);
    Ok((at, want, data, share))
}

async fn pgread_frames<T: File>(file: &T, out: &Out, at: u64, rlen: usize) -> Result<(), Fail> {
    let encoder = PgReadEncoder::new();
    let end = at + rlen as u64;
    let mut parts = stream::iter(pieces(at, rlen, |here| encoder.piece_len(here) as usize))
        .map(|(here, want)| pgread_piece(file, out, here, want))
        .buffered(READ_AHEAD);
    while let Some((here, want, data, share)) = parts.try_next().await? {
        let last = data.len() < want || here + want as u64 == end;
        let parts = encoder.pgread_part_parts(out.sid, here, end - here, &data, last);
        out.parts(parts, data.len(), Some(share)).await?;
        if last {
            break;
        }
    }
    Ok(())
}

/// `kXR_write`: the data at `offset`. (The data always comes with the
/// request; a pathid naming another link for the data is not supported.)
pub(crate) async fn write<F: FileSystem>(ctx: &Ctx<F>, r: Write) -> Result<Response, FsError> {
    let f = ctx.file(r.fhandle, "write")?;
    if r.data.is_empty() {
        return Ok(ok());
    }
    let at = offset(r.offset, "Write")?;
    ctx.session
        .monitor_write(&f, at, r.data.len() as u32, false);
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
    ctx.session
        .monitor_write(&f, start, r.payload.len() as u32, true);
    if r.reqflags.contains(PgReqFlags::RETRY) {
        let page = PAGE_SIZE - (start % PAGE_SIZE as u64) as usize;
        if r.payload.len() > page + 4 {
            return Err(err(
                ErrorCode::ARG_INVALID,
                "pgwrite retry of more than one page not allowed",
            ));
        }
    }
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
        let at = offset(s.offset, "Writev")?;
        ctx.session
            .monitor_write(&f, at, s.data.len() as u32, false);
        writes.push((f, at, s.data));
    }
    for (f, at, data) in &writes {
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

/// `kXR_sync`; on a third-party-copy destination it starts or awaits the
/// pull ([`tpc::sync`]).
pub(crate) async fn sync<F: FileSystem>(ctx: &Ctx<F>, r: Sync) -> Result<Response, FsError> {
    let f = ctx.file(r.fhandle, "sync")?;
    if let Some(d) = &f.tpc {
        return tpc::sync(ctx, &f, d).await;
    }
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
        return f.file.truncate(size).await.map(|()| ok());
    }
    let target = path::payload_target("Truncating", &r.path)?;
    ctx.fs()
        .truncate(ctx.caller(), &target.path, size)
        .await
        .map(|()| ok())
}
