//! The `kXR_pgread` answer, and the `kXR_pgreadv` extension's (PROTOCOL.md
//! §6.5, §15 items 2–3; XrdXrootdProtocol `do_PgRIO`; design note
//! `seeds/002`).
//!
//! Every frame is a `kXR_status` whose info is the file offset of its first
//! data byte and whose data is `[crc32c][page]…`, pages aligned to absolute
//! file offsets. Intermediate frames are `kXR_PartialResult`, the last
//! `kXR_FinalResult`. Frames may arrive in any order (AIO): place data by
//! each frame's offset.
//!
//! The stock 5.5.3 server (sync path) sends frames of at most 512 pages; the
//! first frame of an unaligned read ends on a page boundary; the last frame
//! that carries data is the Final one, unless the data ends exactly where a
//! frame did, in which case an empty Final frame at the end offset follows.
//! A pgreadv answer is the same stream over several extents, offsets jumping
//! between them, with one Final frame for the whole request.

use bytes::{Bytes, BytesMut};

use super::status::{encode_head, StatusResponse, OFFSET_INFO_LEN};
use super::STATUS_BODY_LEN;
use crate::codes::{RequestId, ResponseType};
use crate::error::DecodeError;
use crate::header::{ResponseHeader, StreamId};
use crate::limits::PGREAD_FRAME_PAGES;
use crate::page::{encode_pages, page_count, verify_pages, wire_len, PageIter, PAGE_SIZE};

/// Bytes before the data of a pgread frame: header, status body, offset.
const FRAME_HEAD: usize = ResponseHeader::LEN + STATUS_BODY_LEN + OFFSET_INFO_LEN;

/// One frame of a pgread (or pgreadv) answer, viewed as pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgReadFrame {
    /// File offset of the frame's first data byte, in bytes.
    pub offset: u64,
    /// Final or partial.
    pub resptype: ResponseType,
    /// The interleaved `[crc32c][page]…` bytes (a slice of the frame).
    pub wire: Bytes,
}

impl PgReadFrame {
    /// Views a decoded `kXR_status` as a pgread frame.
    ///
    /// Errors: [`DecodeError::WrongKind`] unless it answers `kXR_pgread` or
    /// `kXR_pgreadv`; [`DecodeError::InvalidValue`] for an info that is not
    /// an 8-byte offset, or a negative offset.
    pub fn from_status(status: &StatusResponse) -> Result<Self, DecodeError> {
        status.expect_request(&[RequestId::PGREAD, RequestId::PGREADV])?;
        let offset = status.offset()?;
        let offset = u64::try_from(offset).map_err(|_| DecodeError::InvalidValue {
            what: "pgread offset",
            expected: "a file offset >= 0",
            got: offset,
        })?;
        Ok(PgReadFrame {
            offset,
            resptype: status.resptype,
            wire: status.data.clone(),
        })
    }

    /// Whether this is the last frame of the request.
    pub fn is_final(&self) -> bool {
        self.resptype == ResponseType::FINAL
    }

    /// The pages, each with its file offset, crc and data (slices of the
    /// frame). Yields [`DecodeError::Truncated`] once for a frame that ends
    /// inside a crc or with a crc and no data.
    pub fn pages(&self) -> PageIter {
        PageIter::new(self.offset, self.wire.clone())
    }

    /// Data bytes the frame carries (its wire length less one crc per page).
    /// Errors: as [`PgReadFrame::pages`].
    pub fn data_len(&self) -> Result<u64, DecodeError> {
        PageIter::data_len(self.offset, self.wire.len())
    }

    /// File offsets of the pages whose crc32c does not match, for a
    /// `kXR_pgRetry` of each. Errors: as [`PgReadFrame::pages`].
    pub fn bad_pages(&self) -> Result<Vec<u64>, DecodeError> {
        verify_pages(self.offset, self.wire.clone())
    }
}

/// One extent to answer: the request's `offset` and `rlen`, and the bytes
/// the file holds from `offset` (shorter than `rlen` at end of file; only
/// the first `rlen` are sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgReadExtent<'a> {
    /// File offset, bytes.
    pub offset: u64,
    /// Bytes asked for.
    pub rlen: u64,
    /// The file's bytes from `offset` on.
    pub data: &'a [u8],
}

/// Builds pgread and pgreadv answers frame by frame as the stock server's
/// synchronous path does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgReadEncoder {
    frame_pages: usize,
}

impl Default for PgReadEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl PgReadEncoder {
    /// Frames of at most 512 pages, as xrootd 5.5.3 sends
    /// ([`PGREAD_FRAME_PAGES`]).
    pub fn new() -> Self {
        PgReadEncoder {
            frame_pages: PGREAD_FRAME_PAGES,
        }
    }

    /// Sets the most pages per frame (at least 1).
    pub fn with_frame_pages(mut self, pages: usize) -> Self {
        self.frame_pages = pages.max(1);
        self
    }

    /// Appends the frames answering a `kXR_pgread` of `extent` on `streamid`.
    pub fn encode_pgread(&self, streamid: StreamId, extent: &PgReadExtent<'_>, buf: &mut BytesMut) {
        self.encode_extent(streamid, RequestId::PGREAD, extent, true, buf);
    }

    /// Appends the frames answering a `kXR_pgreadv` of `extents`, in order:
    /// each extent as in a pgread but with every frame Partial, and one Final
    /// frame for the whole request, on the last extent (an empty Final at
    /// offset 0 for no extents). Frames carry the `kXR_pgreadv` request code
    /// (33) in `bdy.requestid`.
    pub fn encode_pgreadv(
        &self,
        streamid: StreamId,
        extents: &[PgReadExtent<'_>],
        buf: &mut BytesMut,
    ) {
        let id = RequestId::PGREADV;
        match extents.split_last() {
            None => frame(streamid, id, ResponseType::FINAL, 0, &[], buf),
            Some((last, rest)) => {
                for e in rest {
                    self.encode_extent(streamid, id, e, false, buf);
                }
                self.encode_extent(streamid, id, last, true, buf);
            }
        }
    }

    /// The frames of one extent, following do_PgRIO: a quantum of at most
    /// `frame_pages` pages (no more than the request spans), a first read
    /// that ends on a page boundary, and Final on a short read or on the
    /// read that completes the request; if neither happened, an empty Final
    /// at the end offset. With `last == false` every frame is Partial and
    /// no empty frame is sent.
    fn encode_extent(
        &self,
        streamid: StreamId,
        requestid: RequestId,
        e: &PgReadExtent<'_>,
        last: bool,
        buf: &mut BytesMut,
    ) {
        let page = PAGE_SIZE as u64;
        let quantum = (self.frame_pages as u64 * page).min(page_count(e.offset, e.rlen) * page);
        let mut io_offset = e.offset;
        let mut io_len = e.rlen;
        let mut r_len = quantum.saturating_sub(e.offset % page).min(io_len);
        let resptype = |fin: bool| match fin && last {
            true => ResponseType::FINAL,
            false => ResponseType::PARTIAL,
        };
        while io_len > 0 {
            let at = (io_offset - e.offset) as usize;
            let avail = e.data.len().saturating_sub(at) as u64;
            let xframt = r_len.min(avail);
            if xframt == 0 {
                break;
            }
            let fin = xframt < r_len || xframt == io_len;
            let data = &e.data[at..at + xframt as usize];
            frame(streamid, requestid, resptype(fin), io_offset, data, buf);
            if fin {
                return;
            }
            io_len -= xframt;
            io_offset += xframt;
            r_len = io_len.min(quantum);
        }
        if last {
            frame(
                streamid,
                requestid,
                ResponseType::FINAL,
                io_offset,
                &[],
                buf,
            );
        }
    }
}

/// Appends one pgread-style frame for `data` at `offset`.
fn frame(
    streamid: StreamId,
    requestid: RequestId,
    resptype: ResponseType,
    offset: u64,
    data: &[u8],
    buf: &mut BytesMut,
) {
    let wire = wire_len(offset, data.len() as u64) as usize;
    buf.reserve(FRAME_HEAD + wire);
    encode_head(
        streamid,
        requestid,
        resptype,
        &(offset as i64).to_be_bytes(),
        wire,
        buf,
    );
    encode_pages(offset, data, buf);
}

#[cfg(test)]
mod tests;
