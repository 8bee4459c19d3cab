//! The `kXR_pgread` answer, and the `kXR_pgreadv` extension's (PROTOCOL.md
//! §6.5, §15 items 2–3, §16; XrdXrootdProtocol `do_PgRIO`).
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

use bytes::{BufMut, Bytes, BytesMut};

use super::status::{encode_head, StatusResponse, OFFSET_INFO_LEN};
use crate::codes::{RequestId, ResponseType};
use crate::error::DecodeError;
use crate::header::{ResponseHeader, StreamId, STATUS_BODY_LEN};
use crate::limits::PGREAD_FRAME_PAGES;
use crate::page::{
    crc32c, encode_pages, page_count, pages, verify_pages, wire_len, PageIter, CRC_LEN, PAGE_SIZE,
};

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

    /// The longest piece of data at file `offset` that ends on a frame
    /// boundary of a pgread answer: up to the end of the frame that holds
    /// `offset`, in bytes. A server that reads a large pgread in pieces of
    /// this length can frame each piece as it comes
    /// ([`PgReadEncoder::pgread_part_parts`]).
    pub fn piece_len(&self, offset: u64) -> u64 {
        let page = PAGE_SIZE as u64;
        self.frame_pages as u64 * page - offset % page
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
        self.encode_sequence(streamid, RequestId::PGREADV, extents, buf);
    }

    /// `extents` one after the other, every frame Partial but the last
    /// extent's closing one (an empty Final at offset 0 for none).
    fn encode_sequence(
        &self,
        streamid: StreamId,
        id: RequestId,
        extents: &[PgReadExtent<'_>],
        buf: &mut BytesMut,
    ) {
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
        self.frames(e, last, |resptype, offset, range| {
            frame(streamid, requestid, resptype, offset, &e.data[range], buf)
        });
    }

    /// Calls `emit(resptype, offset, range)` for each frame of extent `e`
    /// ([`PgReadEncoder::encode_extent`]), `range` the frame's data in
    /// `e.data`.
    fn frames(
        &self,
        e: &PgReadExtent<'_>,
        last: bool,
        mut emit: impl FnMut(ResponseType, u64, std::ops::Range<usize>),
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
            emit(resptype(fin), io_offset, at..at + xframt as usize);
            if fin {
                return;
            }
            io_len -= xframt;
            io_offset += xframt;
            r_len = io_len.min(quantum);
        }
        if last {
            let at = (io_offset - e.offset) as usize;
            emit(ResponseType::FINAL, io_offset, at..at);
        }
    }

    /// The frames of one piece of a `kXR_pgread` answer, so that a server
    /// can send the answer as it reads it, as parts to write one after the
    /// other with the data not copied: each frame's head with its first
    /// page's crc32c, then each page (a slice of `data`) followed by the
    /// next page's crc32c. `data` is the piece read at `offset`, `rlen` what
    /// the request still asks from there. Every piece but the last is
    /// [`PgReadEncoder::piece_len`] long and sent with `last == false`; the
    /// `last` piece is the one that comes short (end of file, maybe empty)
    /// or completes the request. The pieces of one answer, one after the
    /// other, make the same bytes as [`PgReadEncoder::encode_pgread`] of
    /// the whole.
    pub fn pgread_part_parts(
        &self,
        streamid: StreamId,
        offset: u64,
        rlen: u64,
        data: &Bytes,
        last: bool,
    ) -> Vec<Bytes> {
        self.part_parts(streamid, RequestId::PGREAD, offset, rlen, data, last)
    }

    /// As [`PgReadEncoder::pgread_part_parts`] for a piece of one extent of
    /// a `kXR_pgreadv` answer: `last` only for the last piece of the last
    /// extent. The pieces of every extent in order make the same bytes as
    /// [`PgReadEncoder::encode_pgreadv`] of the whole.
    pub fn pgreadv_part_parts(
        &self,
        streamid: StreamId,
        offset: u64,
        rlen: u64,
        data: &Bytes,
        last: bool,
    ) -> Vec<Bytes> {
        self.part_parts(streamid, RequestId::PGREADV, offset, rlen, data, last)
    }

    fn part_parts(
        &self,
        streamid: StreamId,
        requestid: RequestId,
        offset: u64,
        rlen: u64,
        data: &Bytes,
        last: bool,
    ) -> Vec<Bytes> {
        let e = PgReadExtent { offset, rlen, data };
        let mut parts = Vec::new();
        let mut heads = BytesMut::new();
        self.frames(&e, last, |resptype, at, range| {
            let len = range.len() as u64;
            heads.reserve(FRAME_HEAD + CRC_LEN * page_count(at, len) as usize);
            let info = (at as i64).to_be_bytes();
            encode_head(
                streamid,
                requestid,
                resptype,
                &info,
                wire_len(at, len) as usize,
                &mut heads,
            );
            let mut from = range.start;
            for (_, n) in pages(at, len) {
                heads.put_u32(crc32c(&data[from..from + n]));
                parts.push(heads.split().freeze());
                parts.push(data.slice(from..from + n));
                from += n;
            }
            if range.is_empty() {
                parts.push(heads.split().freeze());
            }
        });
        parts
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
mod tests {
    use super::*;
    use crate::codes::Status;
    use crate::frame::{ResponseDecoder, ResponseFrame};
    use crate::page::{crc32c, CRC_LEN};
    use crate::response::Response;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// Decodes every frame in `wire` with the real decoder.
    fn decode_all(wire: Bytes) -> Vec<(ResponseFrame, PgReadFrame)> {
        let mut buf = BytesMut::from(&wire[..]);
        let mut dec = ResponseDecoder::new();
        let mut out = Vec::new();
        while let Some(f) = dec.decode(&mut buf).unwrap() {
            let Response::Status(s) = Response::decode(f.clone()).unwrap() else {
                panic!("not a kXR_status");
            };
            out.push((f, PgReadFrame::from_status(&s).unwrap()));
        }
        assert!(buf.is_empty());
        out
    }

    fn pgread(
        enc: PgReadEncoder,
        offset: u64,
        rlen: u64,
        file: &[u8],
    ) -> Vec<(ResponseFrame, PgReadFrame)> {
        let mut b = BytesMut::new();
        enc.encode_pgread(
            StreamId([0, 9]),
            &PgReadExtent {
                offset,
                rlen,
                data: file,
            },
            &mut b,
        );
        decode_all(b.freeze())
    }

    /// `(offset, data bytes, final)` of each frame.
    fn shape(frames: &[(ResponseFrame, PgReadFrame)]) -> Vec<(u64, u64, bool)> {
        frames
            .iter()
            .map(|(_, p)| (p.offset, p.data_len().unwrap(), p.is_final()))
            .collect()
    }

    #[test]
    fn protocol_md_example() {
        // offset 1000, rlen 10000: pages of 3096, 4096, 2808 bytes
        let file = data(10000);
        let frames = pgread(PgReadEncoder::new(), 1000, 10000, &file);
        assert_eq!(frames.len(), 1);
        let (f, p) = &frames[0];
        assert_eq!(f.header.status, Status::STATUS);
        assert_eq!(f.header.dlen, 24);
        assert_eq!(
            i32::from_be_bytes(f.body[12..16].try_into().unwrap()),
            10012
        );
        assert_eq!(f.wire_len(), 10044);
        assert_eq!(f.body[6], 30); // requestid byte
        assert!(p.is_final());
        let pages: Vec<_> = p.pages().map(Result::unwrap).collect();
        assert_eq!(
            pages
                .iter()
                .map(|pg| (pg.offset, pg.data.len()))
                .collect::<Vec<_>>(),
            [(1000, 3096), (4096, 4096), (8192, 2808)]
        );
        let joined: Vec<u8> = pages.iter().flat_map(|pg| pg.data.to_vec()).collect();
        assert_eq!(joined, file);
        assert!(p.bad_pages().unwrap().is_empty());
        // zero copy: page data points into the frame
        let range = f.body.as_ptr_range();
        assert!(pages.iter().all(|pg| range.contains(&pg.data.as_ptr())));
    }

    #[test]
    fn frames_of_512_pages() {
        const MIB: u64 = 1 << 20;
        let file = data(4 << 20);
        // aligned 4 MiB: two frames of 2 MiB, the second Final
        assert_eq!(
            shape(&pgread(PgReadEncoder::new(), 0, 4 * MIB, &file)),
            [(0, 2 * MIB, false), (2 * MIB, 2 * MIB, true)]
        );
        // the file ends where a frame does: an empty Final at the end offset
        assert_eq!(
            shape(&pgread(PgReadEncoder::new(), 0, 4 * MIB, &file[..2 << 20])),
            [(0, 2 * MIB, false), (2 * MIB, 0, true)]
        );
        // unaligned: the first frame ends on a page boundary, 512 pages
        let frames = pgread(PgReadEncoder::new(), 1000, 3 * MIB, &file);
        assert_eq!(
            shape(&frames),
            [(1000, 2 * MIB - 1000, false), (2 * MIB, MIB + 1000, true)]
        );
        assert_eq!(frames[0].1.pages().count(), 512);
        // short read inside a frame: that frame is Final
        assert_eq!(
            shape(&pgread(PgReadEncoder::new(), 0, 4 * MIB, &file[..3 << 20])),
            [(0, 2 * MIB, false), (2 * MIB, MIB, true)]
        );
        // at or after end of file: one empty Final
        assert_eq!(
            shape(&pgread(PgReadEncoder::new(), 5000, 100, &[])),
            [(5000, 0, true)]
        );
    }

    #[test]
    fn bad_page_offsets() {
        let file = data(10000);
        let mut b = BytesMut::new();
        PgReadEncoder::new().encode_pgread(
            StreamId([0, 1]),
            &PgReadExtent {
                offset: 1000,
                rlen: 10000,
                data: &file,
            },
            &mut b,
        );
        // corrupt one byte of the second page's data (not the status body)
        let at = 8 + 24 + CRC_LEN + 3096 + CRC_LEN + 7;
        b[at] ^= 0x40;
        let frames = decode_all(b.freeze());
        assert_eq!(frames[0].1.bad_pages().unwrap(), [4096]);
    }

    #[test]
    fn wrong_request_and_negative_offset() {
        let s =
            StatusResponse::with_offset(RequestId::PGWRITE, ResponseType::FINAL, 0, Bytes::new());
        assert!(matches!(
            PgReadFrame::from_status(&s),
            Err(DecodeError::WrongKind { .. })
        ));
        let s =
            StatusResponse::with_offset(RequestId::PGREAD, ResponseType::FINAL, -1, Bytes::new());
        assert!(matches!(
            PgReadFrame::from_status(&s),
            Err(DecodeError::InvalidValue { .. })
        ));
        let s = StatusResponse::with_offset(
            RequestId::PGREAD,
            ResponseType::FINAL,
            0,
            Bytes::from_static(&[0; 4]),
        );
        assert!(PgReadFrame::from_status(&s)
            .unwrap()
            .pages()
            .next()
            .unwrap()
            .is_err());
    }

    #[test]
    fn pgreadv_has_one_final() {
        let file = data(64 * 1024);
        let extents = [
            PgReadExtent {
                offset: 100,
                rlen: 5000,
                data: &file[100..],
            },
            PgReadExtent {
                offset: 40_000,
                rlen: 9000,
                data: &file[40_000..],
            },
            PgReadExtent {
                offset: 8192,
                rlen: 4096,
                data: &file[8192..],
            },
        ];
        let mut b = BytesMut::new();
        PgReadEncoder::new()
            .with_frame_pages(2)
            .encode_pgreadv(StreamId([0, 2]), &extents, &mut b);
        let frames = decode_all(b.freeze());
        // quantum 2 pages: the second extent (40000 % 4096 = 3136) splits at 45056
        assert_eq!(
            shape(&frames),
            [
                (100, 5000, false),
                (40_000, 5056, false),
                (45_056, 3944, false),
                (8192, 4096, true),
            ]
        );
        assert!(frames.iter().all(|(f, _)| f.body[6] == 33));
    }

    #[test]
    fn pgreadv_without_extents() {
        let mut b = BytesMut::new();
        PgReadEncoder::new().encode_pgreadv(StreamId([0, 2]), &[], &mut b);
        assert_eq!(shape(&decode_all(b.freeze())), [(0, 0, true)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn reference_frame_sequence(
            offset in 0u64..20_000,
            rlen in 1u64..40_000,
            avail in 0usize..45_000,
            pages in 1usize..5,
        ) {
            let file = data(avail);
            let frames = pgread(PgReadEncoder::new().with_frame_pages(pages), offset, rlen, &file);
            let want = (avail as u64).min(rlen);
            // in offset order, contiguous from the request offset, one Final, last
            let mut at = offset;
            let mut got = Vec::new();
            for (i, (f, p)) in frames.iter().enumerate() {
                prop_assert_eq!(p.offset, at);
                prop_assert_eq!(p.is_final(), i + 1 == frames.len());
                prop_assert_eq!(f.header.dlen, 24);
                let n = p.pages().count();
                prop_assert!(n <= pages);
                // all frames but the first start on a page boundary
                prop_assert!(i == 0 || p.offset % PAGE_SIZE as u64 == 0);
                for page in p.pages() {
                    let page = page.unwrap();
                    prop_assert_eq!(page.crc, crc32c(&page.data));
                    got.extend_from_slice(&page.data);
                }
                at += p.data_len().unwrap();
            }
            prop_assert_eq!(got.len() as u64, want);
            prop_assert_eq!(&got[..], &file[..want as usize]);
            // an empty frame only as the Final one, and only when the data ran
            // out exactly at a frame boundary
            for (i, (_, p)) in frames.iter().enumerate() {
                prop_assert!(p.data_len().unwrap() > 0 || i + 1 == frames.len());
            }
        }

        #[test]
        fn pieces_cut_at_frame_boundaries_frame_as_the_whole(
            offset in 0u64..20_000,
            rlen in 1u64..40_000,
            avail in 0usize..45_000,
            pages in 1usize..5,
        ) {
            let enc = PgReadEncoder::new().with_frame_pages(pages);
            let file = data(avail);
            let mut whole = BytesMut::new();
            enc.encode_pgread(StreamId([0, 9]), &PgReadExtent { offset, rlen, data: &file }, &mut whole);
            // cut as a server reads: full pieces until the request is done
            // or a piece comes short (end of file; then maybe empty)
            let have = &file[..file.len().min(rlen as usize)];
            let mut pieces: Vec<&[u8]> = Vec::new();
            let mut done = 0usize;
            loop {
                let want = (enc.piece_len(offset + done as u64) as usize).min(rlen as usize - done);
                let piece = &have[done..(done + want).min(have.len())];
                done += piece.len();
                pieces.push(piece);
                if piece.len() < want || done == rlen as usize {
                    break;
                }
            }
            let mut cut = Vec::new();
            let mut at = offset;
            for (i, piece) in pieces.iter().enumerate() {
                let data = Bytes::copy_from_slice(piece);
                let parts = enc.pgread_part_parts(StreamId([0, 9]), at, offset + rlen - at, &data, i + 1 == pieces.len());
                parts.iter().for_each(|p| cut.extend_from_slice(p));
                at += piece.len() as u64;
            }
            prop_assert_eq!(&cut[..], &whole[..]);
        }

        #[test]
        fn pgreadv_parts_frame_as_the_whole(
            spec in proptest::collection::vec((0u64..30_000, 1u64..12_000), 1..6),
            pages in 1usize..4,
        ) {
            let enc = PgReadEncoder::new().with_frame_pages(pages);
            let file = data(32_000);
            let extents: Vec<_> = spec
                .iter()
                .map(|&(offset, rlen)| PgReadExtent { offset, rlen, data: file.get(offset as usize..).unwrap_or(&[]) })
                .collect();
            let mut whole = BytesMut::new();
            enc.encode_pgreadv(StreamId([1, 2]), &extents, &mut whole);
            let mut cut = Vec::new();
            for (k, e) in extents.iter().enumerate() {
                let have = &e.data[..e.data.len().min(e.rlen as usize)];
                let mut done = 0usize;
                loop {
                    let at = e.offset + done as u64;
                    let want = (enc.piece_len(at) as usize).min(e.rlen as usize - done);
                    let piece = &have[done..(done + want).min(have.len())];
                    done += piece.len();
                    let end = piece.len() < want || done == e.rlen as usize;
                    let rlen = e.rlen - (done - piece.len()) as u64;
                    let data = Bytes::copy_from_slice(piece);
                    let parts = enc.pgreadv_part_parts(StreamId([1, 2]), at, rlen, &data, end && k + 1 == extents.len());
                    parts.iter().for_each(|p| cut.extend_from_slice(p));
                    if end {
                        break;
                    }
                }
            }
            prop_assert_eq!(&cut[..], &whole[..]);
        }

        #[test]
        fn pgreadv_stream(
            spec in proptest::collection::vec((0u64..30_000, 1u64..12_000), 1..6),
            pages in 1usize..4,
        ) {
            let file = data(32_000);
            let extents: Vec<_> = spec
                .iter()
                .map(|&(offset, rlen)| PgReadExtent { offset, rlen, data: file.get(offset as usize..).unwrap_or(&[]) })
                .collect();
            let mut b = BytesMut::new();
            PgReadEncoder::new().with_frame_pages(pages).encode_pgreadv(StreamId([1, 2]), &extents, &mut b);
            let frames = decode_all(b.freeze());
            prop_assert_eq!(frames.iter().filter(|(_, p)| p.is_final()).count(), 1);
            prop_assert!(frames.last().unwrap().1.is_final());
            // every requested byte that exists comes back, verified, at its offset
            for e in &extents {
                let want = (e.data.len() as u64).min(e.rlen);
                let mut got = 0u64;
                for (_, p) in &frames {
                    for page in p.pages() {
                        let page = page.unwrap();
                        prop_assert!(page.is_valid());
                        let start = page.offset.max(e.offset);
                        let end = (page.offset + page.data.len() as u64).min(e.offset + want);
                        if start < end {
                            let s = (start - page.offset) as usize;
                            prop_assert_eq!(&page.data[s..s + (end - start) as usize], &file[start as usize..end as usize]);
                            got += end - start;
                        }
                    }
                }
                prop_assert!(got >= want);
            }
        }
    }
}
