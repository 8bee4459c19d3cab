//! Vector reads (`kXR_readv`, PROTOCOL.md §6.4): the caller's ranges are
//! split into requests under the server's `readv_iov_max` /
//! `readv_ior_max` and the 2 GiB total, sent concurrently, checked element
//! by element and put back together in request order.

use bytes::Bytes;
use xroot_proto::request::{Readv, ReadvFlags};
use xroot_proto::response::{readv_crc32c_matches, ReadvIter};
use xroot_proto::{FHandle, ReadListEntry, RequestId};

use crate::driver::Reply;
use crate::error::{Error, Result};
use crate::file::{to_offset, File};
use crate::piece::{assemble, plan_vectors, run_all, Element};

impl File {
    /// Reads every `(offset, len)` of `ranges` and returns their data in the
    /// same order (`len` bytes each). Ranges may repeat and overlap; a range
    /// longer than the server's `readv_ior_max` is read as several elements,
    /// and more ranges than its `readv_iov_max` (or more than 2 GiB) as
    /// several `kXR_readv` requests sent concurrently. Both limits are asked
    /// once per connection with `kXR_Qconfig` (1024 and 2,097,136 bytes when
    /// the answer is unusable). Empty ranges, and an empty `ranges`, are
    /// answered without a request.
    ///
    /// Errors: [`Error::NotOpen`] after close; [`Error::InvalidArgument`]
    /// for a range past `i64::MAX`; [`Error::Server`] when the server
    /// refuses the readv — a range that
    /// extends past end of file fails the whole call, as in the reference
    /// (`kXR_FSError` "illegal seek" from xrootd 5.5.3);
    /// [`Error::UnexpectedResponse`] when the answer's elements do not match
    /// the request's offsets, lengths and file handle, or it brings more
    /// than the elements asked; connection errors.
    #[doc(alias = "kXR_readv")]
    pub async fn readv(&self, ranges: &[(u64, usize)]) -> Result<Vec<Bytes>> {
        let _op = self.begin()?;
        if let Some(empty) = vector_prologue(ranges)? {
            return Ok(empty);
        }
        let limits = self.server_config().await?.readv_limits();
        let plan = plan_vectors(ranges, &limits);
        let results = run_all(0..plan.len(), |i| self.readv_request(&plan[i])).await?;
        Ok(assemble(ranges, &plan, results))
    }

    /// One `kXR_readv` of `elements` (within the server's limits); the data
    /// of each, in order.
    async fn readv_request(&self, elements: &[Element]) -> Result<Vec<Bytes>> {
        // no extension flags: the stock answer, each element's handle in
        // its header (the crc32c extension would put a crc32c there)
        let flags = ReadvFlags::default();
        let (reply, fhandle) = self
            .call_with_handle(|fhandle| {
                Readv {
                    flags,
                    list: elements
                        .iter()
                        .map(|e| ReadListEntry {
                            fhandle,
                            rlen: e.len as i32,
                            offset: e.offset as i64,
                        })
                        .collect(),
                    ..Default::default()
                }
                .into()
            })
            .await?;
        let slot = match flags.contains(ReadvFlags::CRC32C) {
            true => Slot::Crc32c,
            false => Slot::Handle(fhandle),
        };
        match reply {
            Reply::Data(frames) => split_answer(elements, slot, frames),
            Reply::Status(_) => Err(Error::unexpected(RequestId::READV, "a kXR_status reply")),
        }
    }
}

/// What every vector call does first: checks `ranges` ([`check_ranges`]),
/// and answers empty data without a request when every range is empty.
pub(crate) fn vector_prologue(ranges: &[(u64, usize)]) -> Result<Option<Vec<Bytes>>> {
    check_ranges(ranges)?;
    Ok(ranges
        .iter()
        .all(|&(_, len)| len == 0)
        .then(|| vec![Bytes::new(); ranges.len()]))
}

/// Checks that `ranges` fit the protocol's signed 64-bit offsets.
/// Errors: [`Error::InvalidArgument`].
pub(crate) fn check_ranges(ranges: &[(u64, usize)]) -> Result<()> {
    for &(offset, len) in ranges {
        to_offset(offset.saturating_add(len as u64))?;
    }
    Ok(())
}

/// What the 4-byte `fhandle` slot of every element header of a readv answer
/// holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The handle of the file read (a stock answer).
    Handle(FHandle),
    /// The crc32c of the element's data (the readv-with-crc32c extension,
    /// [`xroot_proto::ext`]).
    Crc32c,
}

/// The data of each element from the frame bodies of a readv answer (an
/// element never spans frames, PROTOCOL.md §6.4), each header checked
/// against the element asked at its position: offset, length, and the
/// handle slot as `slot` says. Errors: [`Error::UnexpectedResponse`] for a
/// body that does not decode, a header whose offset, length or handle
/// differs (or whose crc32c does not match its data), or a different
/// number of elements.
fn split_answer(elements: &[Element], slot: Slot, frames: Vec<Bytes>) -> Result<Vec<Bytes>> {
    let unexpected = |detail: String| Error::unexpected(RequestId::READV, detail);
    let mut out = Vec::with_capacity(elements.len());
    for body in frames {
        for item in ReadvIter::new(body) {
            let (entry, data) = item.map_err(|e| unexpected(e.to_string()))?;
            let Some(asked) = elements.get(out.len()) else {
                return Err(unexpected(format!(
                    "more than the {} elements asked",
                    elements.len()
                )));
            };
            if entry.offset != asked.offset as i64 || entry.rlen as usize != asked.len {
                return Err(unexpected(format!(
                    "element {} is {} bytes at {}, asked {} at {}",
                    out.len(),
                    entry.rlen,
                    entry.offset,
                    asked.len,
                    asked.offset
                )));
            }
            match slot {
                Slot::Handle(fhandle) if entry.fhandle != fhandle => {
                    return Err(unexpected(format!(
                        "element {} is of file handle {:?}, asked {fhandle:?}",
                        out.len(),
                        entry.fhandle
                    )))
                }
                Slot::Crc32c if !readv_crc32c_matches(&entry, &data) => {
                    return Err(unexpected(format!(
                        "element {} ({} bytes at {}) fails its crc32c",
                        out.len(),
                        entry.rlen,
                        entry.offset
                    )))
                }
                _ => {}
            }
            out.push(data);
        }
    }
    if out.len() != elements.len() {
        return Err(unexpected(format!(
            "{} elements for the {} asked",
            out.len(),
            elements.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use xroot_proto::response::ReadvEncoder;
    use xroot_proto::{ResponseDecoder, StreamId};

    const FH: FHandle = FHandle([0, 0, 0, 1]);

    fn el(offset: u64, len: usize) -> Element {
        Element {
            range: 0,
            offset,
            len,
        }
    }

    /// The frame bodies a stock server sends for `answer`.
    fn bodies(answer: &[(u64, &'static [u8])]) -> Vec<Bytes> {
        encode(answer, FH, false)
    }

    /// The frame bodies answering `answer`, every element of `fhandle`, or
    /// with its crc32c in the handle slot.
    fn encode(answer: &[(u64, &'static [u8])], fhandle: FHandle, crc32c: bool) -> Vec<Bytes> {
        let elements: Vec<_> = answer
            .iter()
            .map(|&(offset, d)| {
                let entry = ReadListEntry {
                    fhandle,
                    rlen: d.len() as i32,
                    offset: offset as i64,
                };
                (entry, Bytes::from_static(d))
            })
            .collect();
        let mut wire = BytesMut::new();
        ReadvEncoder::new()
            .with_quantum(20)
            .with_crc32c(crc32c)
            .encode(StreamId::from_u16(1), &elements, &mut wire);
        let mut dec = ResponseDecoder::new();
        std::iter::from_fn(|| dec.decode(&mut wire).unwrap().map(|f| f.body)).collect()
    }

    #[test]
    fn answer_checked_element_by_element() {
        let asked = [el(0, 3), el(100, 5), el(0, 3)];
        let frames = bodies(&[(0, b"abc"), (100, b"hello"), (0, b"abc")]);
        assert!(frames.len() > 1, "several frames");
        let data = split_answer(&asked, Slot::Handle(FH), frames).unwrap();
        assert_eq!(data, [&b"abc"[..], b"hello", b"abc"]);

        for wrong in [
            bodies(&[(0, b"abc"), (101, b"hello"), (0, b"abc")]), // offset
            bodies(&[(0, b"abc"), (100, b"hell"), (0, b"abc")]),  // length
            bodies(&[(0, b"abc"), (100, b"hello")]),              // missing
            bodies(&[(0, b"abc"), (100, b"hello"), (0, b"abc"), (0, b"a")]), // extra
        ] {
            assert!(matches!(
                split_answer(&asked, Slot::Handle(FH), wrong),
                Err(Error::UnexpectedResponse { .. })
            ));
        }
        let truncated = vec![Bytes::from_static(&[0; 10])];
        assert!(split_answer(&asked, Slot::Handle(FH), truncated).is_err());
    }

    #[test]
    fn the_handle_slot_is_checked_as_the_request_says() {
        let asked = [el(0, 3), el(100, 5)];
        let answer = [(0, &b"abc"[..]), (100, &b"hello"[..])];
        let other = FHandle([0, 0, 0, 2]);
        for (frames, slot, ok) in [
            (encode(&answer, FH, false), Slot::Handle(FH), true),
            (encode(&answer, other, false), Slot::Handle(FH), false),
            (encode(&answer, FH, true), Slot::Crc32c, true),
            // a stock answer where crc32c were asked: the handle is no crc
            (encode(&answer, FH, false), Slot::Crc32c, false),
            // crc32c answers where the handle is due
            (encode(&answer, FH, true), Slot::Handle(FH), false),
        ] {
            let got = split_answer(&asked, slot, frames);
            match ok {
                true => assert_eq!(got.unwrap(), [&b"abc"[..], b"hello"], "{slot:?}"),
                false => assert!(
                    matches!(got, Err(Error::UnexpectedResponse { .. })),
                    "{slot:?}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn ranges_must_fit_signed_offsets() {
        assert!(check_ranges(&[(0, 10), (i64::MAX as u64 - 10, 10)]).is_ok());
        assert!(matches!(
            check_ranges(&[(i64::MAX as u64, 1)]),
            Err(Error::InvalidArgument(_))
        ));
    }
}
