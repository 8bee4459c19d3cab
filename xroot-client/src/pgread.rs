//! Paged reads with a crc32c per 4 kB page (`kXR_pgread`, PROTOCOL.md §6.5).
//!
//! The answer is a run of `kXR_status` frames, each at its own file offset
//! and possibly out of order (the server's AIO path): they are placed by
//! offset into one buffer, every page checked as it is copied out of the
//! interleaved `[crc][page]` stream. A page whose crc32c does not match is
//! fetched again on its own with a single-page `kXR_pgread` carrying
//! `kXR_pgRetry` (XrdCl's `PgReadRetry`), up to
//! [`Config::pgread_retries`](crate::Config::pgread_retries) times.
//! A large read goes out as concurrent pieces of at most 8 MiB.

use bytes::{Bytes, BytesMut};
use xroot_proto::request::{PgReadArgs, PgReqFlags, Pgread};
use xroot_proto::response::{PgReadFrame, StatusResponse};
use xroot_proto::{DecodeError, RequestId};

use crate::error::{Error, Result};
use crate::file::File;
use crate::piece::{join, run_all, split, MAX_PIECE};
use crate::readv::check_ranges;

/// One page whose crc32c did not match: file offset and length, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadPage {
    pub(crate) offset: u64,
    pub(crate) len: usize,
}

/// The data of one extent assembled from pgread frames in file order,
/// without the CRCs, and the pages that failed their check.
#[derive(Debug)]
pub(crate) struct Extent {
    /// File offset of the first byte, bytes.
    pub(crate) offset: u64,
    /// Bytes asked for; `data` is shorter only at end of file.
    pub(crate) len: usize,
    pub(crate) data: BytesMut,
    pub(crate) bad: Vec<BadPage>,
}

impl Extent {
    /// An empty extent of `len` bytes at `offset` that fills `buf` (a buffer
    /// with room for `len` bytes is filled without reallocating).
    pub(crate) fn new(offset: u64, len: usize, buf: BytesMut) -> Extent {
        Extent {
            offset,
            len,
            data: buf,
            bad: Vec::new(),
        }
    }

    /// The file offset the next frame must start at.
    pub(crate) fn next_offset(&self) -> u64 {
        self.offset + self.data.len() as u64
    }

    /// Whether `frame`, carrying `n` data bytes, continues this extent.
    pub(crate) fn continues(&self, frame: &PgReadFrame, n: u64) -> bool {
        frame.offset == self.next_offset() && self.data.len() as u64 + n <= self.len as u64
    }

    /// Appends the pages of `frame`, which must continue the extent,
    /// recording those whose crc32c does not match. Errors: those of
    /// walking the pages ([`DecodeError::Truncated`]).
    pub(crate) fn push(&mut self, frame: &PgReadFrame) -> Result<(), DecodeError> {
        for page in frame.pages() {
            let page = page?;
            if !page.is_valid() {
                self.bad.push(BadPage {
                    offset: page.offset,
                    len: page.data.len(),
                });
            }
            self.data.extend_from_slice(&page.data);
        }
        Ok(())
    }

    /// Replaces the data of `page` with `data` (of the page's length).
    fn patch(&mut self, page: BadPage, data: &[u8]) {
        let at = (page.offset - self.offset) as usize;
        self.data[at..at + page.len].copy_from_slice(data);
    }
}

/// The `kXR_status` frames of a pgread-style answer as pgread frames, with
/// their data lengths. Errors: [`Error::UnexpectedResponse`] for a status
/// that is not a pgread frame or whose pages do not add up.
pub(crate) fn frames(
    id: RequestId,
    statuses: Vec<StatusResponse>,
) -> Result<Vec<(PgReadFrame, u64)>> {
    statuses
        .iter()
        .map(|s| {
            let f = PgReadFrame::from_status(s)?;
            let n = f.data_len()?;
            Ok((f, n))
        })
        .collect::<Result<_, DecodeError>>()
        .map_err(|e| Error::unexpected(id, e.to_string()))
}

/// Places the frames answering a pgread of `len` bytes at `offset` into
/// `buf`, in offset order whatever order they came in. Empty frames (the
/// Final one at the end offset) carry nothing. Errors:
/// [`Error::UnexpectedResponse`] for a frame outside the request, a gap or
/// an overlap.
fn place(offset: u64, len: usize, buf: BytesMut, statuses: Vec<StatusResponse>) -> Result<Extent> {
    let mut frames = frames(RequestId::PGREAD, statuses)?;
    frames.sort_by_key(|(f, _)| f.offset);
    let mut extent = Extent::new(offset, len, buf);
    for (f, n) in frames.iter().filter(|(_, n)| *n > 0) {
        if !extent.continues(f, *n) {
            return Err(Error::unexpected(
                RequestId::PGREAD,
                format!(
                    "{n} bytes at {} where {} of {len} bytes at {offset} continue at {}",
                    f.offset,
                    extent.data.len(),
                    extent.next_offset()
                ),
            ));
        }
        extent
            .push(f)
            .map_err(|e| Error::unexpected(RequestId::PGREAD, e.to_string()))?;
    }
    Ok(extent)
}

impl File {
    /// Reads up to `len` bytes at `offset` with `kXR_pgread`, every 4 kB
    /// page checked against its crc32c; fewer bytes only at end of file, as
    /// [`File::read_at`]. A bad page is fetched again alone with
    /// `kXR_pgRetry`, at most [`Config::pgread_retries`] times. More than
    /// 8 MiB goes out as concurrent requests of at most 8 MiB. Against a
    /// server without pgread (`kXR_suppgrw` unset) this is a plain read.
    ///
    /// Errors: [`Error::NotOpen`] after close; [`Error::PageChecksum`]
    /// naming the pages still bad after the retries; [`Error::InvalidArgument`] for a range past `i64::MAX`;
    /// [`Error::UnexpectedResponse`] for frames that do not add up, as soon
    /// as the answer brings more data or frames than `len` bytes can have;
    /// the server's and connection's errors.
    ///
    /// [`Config::pgread_retries`]: crate::Config::pgread_retries
    #[doc(alias = "kXR_pgread")]
    pub async fn pgread(&self, offset: u64, len: usize) -> Result<Bytes> {
        let _op = self.begin()?;
        self.pgread_in_op(offset, len).await
    }

    /// [`File::pgread`] within a call already begun.
    pub(crate) async fn pgread_in_op(&self, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        check_ranges(&[(offset, len)])?;
        if !self.supports_pgrw().await? {
            return self.read_split_in_op(offset, len).await;
        }
        // one allocation, cut into the pieces' buffers and joined back
        // without a copy
        let mut rest = BytesMut::with_capacity(len);
        let pieces: Vec<_> = split(offset, len, MAX_PIECE)
            .map(|(o, l)| {
                let tail = rest.split_off(l);
                (o, l, std::mem::replace(&mut rest, tail))
            })
            .collect();
        let lens: Vec<usize> = pieces.iter().map(|p| p.1).collect();
        let parts = run_all(pieces, |(o, l, buf)| self.pgread_piece(o, l, buf)).await?;
        let mut out = BytesMut::new();
        for (part, len) in parts.into_iter().zip(lens) {
            let short = part.len() < len;
            out.unsplit(part);
            if short {
                break;
            }
        }
        Ok(out.freeze())
    }

    /// One `kXR_pgread` of at most 8 MiB into `buf`, bad pages repaired.
    async fn pgread_piece(&self, offset: u64, len: usize, buf: BytesMut) -> Result<BytesMut> {
        let statuses = self
            .call(|fhandle| {
                Pgread {
                    fhandle,
                    offset: offset as i64,
                    rlen: len as i32,
                    args: None,
                }
                .into()
            })
            .await?
            .into_status(RequestId::PGREAD)?;
        let mut extent = place(offset, len, buf, statuses)?;
        self.repair(std::slice::from_mut(&mut extent)).await?;
        Ok(extent.data)
    }

    /// Fetches each bad page of `extents` again, one at a time, and puts
    /// the good data in place. Errors: [`Error::PageChecksum`] with every
    /// page still bad after the retries; those of the requests.
    pub(crate) async fn repair(&self, extents: &mut [Extent]) -> Result<()> {
        let retries = self.dialer.config().pgread_retries;
        let mut failed = Vec::new();
        for extent in extents {
            for page in std::mem::take(&mut extent.bad) {
                match self.refetch(page, retries).await? {
                    Some(data) => extent.patch(page, &data),
                    None => failed.push(page.offset),
                }
            }
        }
        Error::pages_left_bad(failed, retries)
    }

    /// Up to `retries` single-page `kXR_pgread`s of `page` with
    /// `kXR_pgRetry`; the page's data once its crc32c matches, `None` if it
    /// never did. Errors: [`Error::UnexpectedResponse`] for an answer of
    /// another length; those of the requests.
    async fn refetch(&self, page: BadPage, retries: u32) -> Result<Option<BytesMut>> {
        for attempt in 1..=retries {
            tracing::debug!(offset = page.offset, attempt, "pgread: page retry");
            let statuses = self
                .call(|fhandle| {
                    Pgread {
                        fhandle,
                        offset: page.offset as i64,
                        rlen: page.len as i32,
                        args: Some(PgReadArgs {
                            pathid: 0,
                            reqflags: Some(PgReqFlags::RETRY),
                        }),
                    }
                    .into()
                })
                .await?
                .into_status(RequestId::PGREAD)?;
            let buf = BytesMut::with_capacity(page.len);
            let again = place(page.offset, page.len, buf, statuses)?;
            if again.data.len() != page.len {
                return Err(Error::unexpected(
                    RequestId::PGREAD,
                    format!(
                        "retry of the {}-byte page at {} returned {} bytes",
                        page.len,
                        page.offset,
                        again.data.len()
                    ),
                ));
            }
            if again.bad.is_empty() {
                return Ok(Some(again.data));
            }
        }
        Ok(None)
    }

    /// `len` bytes at `offset` with plain reads of at most 8 MiB, sent
    /// concurrently; short at end of file.
    /// Errors: [`Error::NotOpen`] after close; those of [`File::read_at`].
    pub(crate) async fn read_split(&self, offset: u64, len: usize) -> Result<Bytes> {
        let _op = self.begin()?;
        self.read_split_in_op(offset, len).await
    }

    /// [`File::read_split`] within a call already begun.
    async fn read_split_in_op(&self, offset: u64, len: usize) -> Result<Bytes> {
        let pieces: Vec<_> = split(offset, len, MAX_PIECE).collect();
        let parts = run_all(pieces.clone(), |(o, l)| self.read_at_in_op(o, l)).await?;
        let mut kept = Vec::with_capacity(parts.len());
        for (part, &(_, l)) in parts.into_iter().zip(&pieces) {
            let short = part.len() < l;
            kept.push(part);
            if short {
                break;
            }
        }
        Ok(join(kept))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use xroot_proto::response::{PgReadEncoder, PgReadExtent, Response};
    use xroot_proto::{ResponseDecoder, StreamId};

    pub(crate) fn file(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// The statuses a server sends for a pgread, frames of `frame_pages`.
    fn answer(offset: u64, rlen: u64, file: &[u8], frame_pages: usize) -> Vec<StatusResponse> {
        let mut wire = BytesMut::new();
        let from = (offset as usize).min(file.len());
        PgReadEncoder::new()
            .with_frame_pages(frame_pages)
            .encode_pgread(
                StreamId::from_u16(1),
                &PgReadExtent {
                    offset,
                    rlen,
                    data: &file[from..],
                },
                &mut wire,
            );
        statuses(wire)
    }

    pub(crate) fn statuses(mut wire: BytesMut) -> Vec<StatusResponse> {
        let mut dec = ResponseDecoder::new();
        std::iter::from_fn(|| dec.decode(&mut wire).unwrap())
            .map(|f| match Response::decode(f).unwrap() {
                Response::Status(s) => s,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn frames_placed_by_offset_in_any_order() {
        let data = file(50_000);
        let mut st = answer(1000, 40_000, &data, 2);
        assert!(st.len() > 3);
        st.reverse();
        let e = place(1000, 40_000, BytesMut::new(), st).unwrap();
        assert_eq!(&e.data[..], &data[1000..41_000]);
        assert!(e.bad.is_empty());
        // short at end of file, with the empty Final frame
        let st = answer(40_960, 20_000, &data, 1);
        let e = place(40_960, 20_000, BytesMut::new(), st).unwrap();
        assert_eq!(&e.data[..], &data[40_960..]);
    }

    #[test]
    fn gaps_and_overlaps_are_refused() {
        let data = file(50_000);
        let mut st = answer(0, 40_000, &data, 2);
        st.remove(1);
        assert!(matches!(
            place(0, 40_000, BytesMut::new(), st),
            Err(Error::UnexpectedResponse { .. })
        ));
        let mut st = answer(0, 40_000, &data, 2);
        st.push(st[0].clone());
        assert!(place(0, 40_000, BytesMut::new(), st).is_err());
    }

    #[test]
    fn bad_pages_are_recorded_and_patched() {
        let data = file(20_000);
        let mut st = answer(1000, 15_000, &data, 512);
        // the second page (file offset 4096): crc of 3096 bytes, 4 + 10 in
        let mut d = BytesMut::from(&st[0].data[..]);
        d[3100 + 4 + 10] ^= 1;
        st[0].data = d.freeze();
        let mut e = place(1000, 15_000, BytesMut::new(), st).unwrap();
        let page = BadPage {
            offset: 4096,
            len: 4096,
        };
        assert_eq!(e.bad, [page]);
        assert_ne!(&e.data[..], &data[1000..16_000]);
        e.patch(page, &data[4096..8192]);
        assert_eq!(&e.data[..], &data[1000..16_000]);
    }
}
