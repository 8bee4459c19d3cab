//! The `kXR_readv` answer (PROTOCOL.md §6.4; XrdXrootdProtocol `do_ReadV`):
//! for each element in request order a 16-byte `readahead_list` header
//! (`fhandle`, `rlen`, `offset`) followed by its `rlen` data bytes, in frames
//! of at most `min(total, 2 MiB)` bytes (`kXR_oksofar` …, then `kXR_ok`),
//! never splitting an element.
//!
//! With this project's readv-with-crc32c extension ([`crate::ext`]) the
//! header's `fhandle` slot carries the crc32c of the element's data instead.

use bytes::{BufMut, Bytes, BytesMut};

use super::framing::encode_frame;
use crate::codes::Status;
use crate::error::DecodeError;
use crate::header::{FHandle, ResponseHeader, StreamId};
use crate::limits::MAX_TRANSFER;
use crate::list::ReadListEntry;
use crate::page::crc32c;

/// Iterates the elements of a readv answer as `(header, data)`, the data a
/// slice of the body. Works on one frame's body or on the concatenation of
/// all of them (an element never spans frames). After an error it yields
/// nothing more.
///
/// Errors (once): [`DecodeError::Truncated`] for a body that ends inside a
/// header or inside an element's data; [`DecodeError::NegativeLength`] for a
/// header with `rlen < 0`.
#[doc(alias = "kXR_readv")]
#[derive(Debug, Clone)]
pub struct ReadvIter {
    body: Bytes,
    failed: bool,
}

impl ReadvIter {
    /// Walks `body`.
    pub fn new(body: Bytes) -> Self {
        ReadvIter {
            body,
            failed: false,
        }
    }

    fn element(&mut self) -> Result<(ReadListEntry, Bytes), DecodeError> {
        let entry = ReadListEntry::decode(&self.body).map_err(|_| {
            DecodeError::truncated("readv element header", ReadListEntry::LEN, self.body.len())
        })?;
        if entry.rlen < 0 {
            return Err(DecodeError::NegativeLength {
                what: "readv element rlen",
                value: entry.rlen as i64,
            });
        }
        let len = entry.rlen as usize;
        let have = self.body.len() - ReadListEntry::LEN;
        DecodeError::check_len("readv element data", len, have)?;
        let mut unit = self.body.split_to(ReadListEntry::LEN + len);
        Ok((entry, unit.split_off(ReadListEntry::LEN)))
    }
}

impl Iterator for ReadvIter {
    type Item = Result<(ReadListEntry, Bytes), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.body.is_empty() || self.failed {
            return None;
        }
        let item = self.element();
        self.failed = item.is_err();
        Some(item)
    }
}

/// Whether an element of a readv-with-crc32c answer is intact: its header's
/// `fhandle` slot holds the big-endian crc32c of `data` ([`crate::ext`]).
pub fn readv_crc32c_matches(entry: &ReadListEntry, data: &[u8]) -> bool {
    entry.fhandle.0 == crc32c(data).to_be_bytes()
}

/// Builds the frames of a readv answer as the stock server does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadvEncoder {
    quantum: usize,
    crc32c: bool,
}

impl Default for ReadvEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadvEncoder {
    /// Frames of at most 2 MiB ([`MAX_TRANSFER`], the server's `maxTransz`),
    /// file handles echoed.
    pub fn new() -> Self {
        ReadvEncoder {
            quantum: MAX_TRANSFER,
            crc32c: false,
        }
    }

    /// Sets the largest frame body, in bytes.
    pub fn with_quantum(mut self, quantum: usize) -> Self {
        self.quantum = quantum;
        self
    }

    /// Puts each element's crc32c in its header's `fhandle` slot (only for a
    /// client that asked with [`crate::ext::READV_FLAG_CRC32C`]).
    pub fn with_crc32c(mut self, crc32c: bool) -> Self {
        self.crc32c = crc32c;
        self
    }

    /// Appends the frames answering `streamid` for `elements`, in order:
    /// each header is the element's `fhandle` (or crc32c) and `offset` with
    /// `rlen = data.len()` (`entry.rlen` is not used). A frame is sent as
    /// `kXR_oksofar` when the next element would take it past
    /// `min(total, quantum)` bytes; the last frame is `kXR_ok` (empty when
    /// there are no elements). An element larger than the quantum goes
    /// alone in its own frame. The same frames as
    /// [`ReadvEncoder::frame_counts`] then [`ReadvEncoder::encode_frame`]
    /// for each.
    pub fn encode(
        &self,
        streamid: StreamId,
        elements: &[(ReadListEntry, Bytes)],
        buf: &mut BytesMut,
    ) {
        let counts = self.frame_counts(elements.iter().map(|(_, d)| d.len()));
        let mut rest = elements;
        for (i, &n) in counts.iter().enumerate() {
            let (frame, tail) = rest.split_at(n);
            self.encode_frame(streamid, frame, i + 1 == counts.len(), buf);
            rest = tail;
        }
    }

    /// How [`ReadvEncoder::encode`] frames elements whose data have these
    /// lengths, in bytes: the number of elements in each frame, in order
    /// (one frame of none for no elements). A server that knows the
    /// lengths before it has the data (every readv element must come back
    /// whole) can read and send the answer one frame at a time.
    pub fn frame_counts(&self, lens: impl IntoIterator<Item = usize> + Clone) -> Vec<usize> {
        let unit = |len: usize| ReadListEntry::LEN + len;
        let total: usize = lens.clone().into_iter().map(unit).sum();
        let quantum = self.quantum.min(total);
        let mut counts = Vec::new();
        let (mut n, mut used) = (0, 0);
        for len in lens {
            if n > 0 && used + unit(len) > quantum {
                counts.push(n);
                (n, used) = (0, 0);
            }
            n += 1;
            used += unit(len);
        }
        counts.push(n);
        counts
    }

    /// The same frame as [`ReadvEncoder::encode_frame`] as parts to write
    /// one after the other, the data not copied: the 8-byte response
    /// header, then each element's 16-byte header and its data (a clone of
    /// the `Bytes` handle).
    pub fn frame_parts(
        &self,
        streamid: StreamId,
        elements: &[(ReadListEntry, Bytes)],
        last: bool,
    ) -> Vec<Bytes> {
        let status = if last { Status::OK } else { Status::OKSOFAR };
        let dlen: usize = elements.iter().map(|(_, d)| 16 + d.len()).sum();
        let mut heads = BytesMut::with_capacity(ResponseHeader::LEN + 16 * elements.len());
        ResponseHeader {
            streamid,
            status,
            dlen: dlen as i32,
        }
        .encode(&mut heads);
        let mut parts = Vec::with_capacity(1 + 2 * elements.len());
        parts.push(heads.split().freeze());
        for (entry, data) in elements {
            self.element_head(entry, data).encode(&mut heads);
            parts.push(heads.split().freeze());
            parts.push(data.clone());
        }
        parts
    }

    /// The 16-byte header of an element with `data`: its `fhandle` (or the
    /// data's crc32c) and `offset`, `rlen` the data's length.
    fn element_head(&self, entry: &ReadListEntry, data: &[u8]) -> ReadListEntry {
        let fhandle = match self.crc32c {
            true => FHandle(crc32c(data).to_be_bytes()),
            false => entry.fhandle,
        };
        ReadListEntry {
            fhandle,
            rlen: data.len() as i32,
            offset: entry.offset,
        }
    }

    /// Appends one frame of a readv answer holding `elements` whole:
    /// `kXR_ok` when it is the `last`, else `kXR_oksofar`. Headers as in
    /// [`ReadvEncoder::encode`].
    pub fn encode_frame(
        &self,
        streamid: StreamId,
        elements: &[(ReadListEntry, Bytes)],
        last: bool,
        buf: &mut BytesMut,
    ) {
        let status = if last { Status::OK } else { Status::OKSOFAR };
        encode_frame(streamid, status, buf, |buf| {
            buf.reserve(elements.iter().map(|(_, d)| 16 + d.len()).sum());
            for (entry, data) in elements {
                self.element_head(entry, data).encode(buf);
                buf.put_slice(data);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{ResponseDecoder, ResponseFrame};
    use crate::response::Response;
    use proptest::prelude::*;

    fn frames(wire: Bytes) -> Vec<ResponseFrame> {
        let mut buf = BytesMut::from(&wire[..]);
        let mut dec = ResponseDecoder::new();
        let mut out = Vec::new();
        while let Some(f) = dec.decode(&mut buf).unwrap() {
            out.push(f);
        }
        assert!(buf.is_empty());
        out
    }

    fn element(fh: u8, offset: i64, len: usize) -> (ReadListEntry, Bytes) {
        let data: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(fh)).collect();
        (
            ReadListEntry {
                fhandle: FHandle([fh; 4]),
                rlen: len as i32,
                offset,
            },
            Bytes::from(data),
        )
    }

    fn encode(enc: ReadvEncoder, elements: &[(ReadListEntry, Bytes)]) -> Vec<ResponseFrame> {
        let mut b = BytesMut::new();
        enc.encode(StreamId([0, 4]), elements, &mut b);
        frames(b.freeze())
    }

    #[test]
    fn elements_are_zero_copy_slices() {
        let elements = [element(1, 0, 10), element(2, 4096, 0), element(3, 99, 5)];
        let f = encode(ReadvEncoder::new(), &elements);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].header.status, Status::OK);
        let body = f[0].body.clone();
        let got: Vec<_> = ReadvIter::new(body.clone()).map(Result::unwrap).collect();
        assert_eq!(got, elements);
        let range = body.as_ptr_range();
        for (_, d) in &got {
            assert!(range.contains(&d.as_ptr()) || d.is_empty());
        }
        assert_eq!(got[2].1.as_ptr(), body[16 + 10 + 16 + 16..].as_ptr());
    }

    #[test]
    fn frames_never_split_an_element() {
        // three 1 MiB elements: 1 MiB + 16 each, two do not fit in 2 MiB
        let elements: Vec<_> = (0..3)
            .map(|i| element(i + 1, (i as i64) << 20, 1 << 20))
            .collect();
        let f = encode(ReadvEncoder::new(), &elements);
        assert_eq!(f.len(), 3);
        assert_eq!(
            f.iter().map(|f| f.header.status).collect::<Vec<_>>(),
            [Status::OKSOFAR, Status::OKSOFAR, Status::OK]
        );
        // maximal elements (2 MiB − 16) fill a frame each, exactly 2 MiB
        let big: Vec<_> = (0..2)
            .map(|i| element(i + 1, 0, MAX_TRANSFER - 16))
            .collect();
        let f = encode(ReadvEncoder::new(), &big);
        assert_eq!(
            f.iter().map(|f| f.body.len()).collect::<Vec<_>>(),
            [MAX_TRANSFER; 2]
        );
        // an empty request answers with one empty kXR_ok
        let f = encode(ReadvEncoder::new(), &[]);
        assert_eq!(
            (f.len(), f[0].header.status, f[0].body.len()),
            (1, Status::OK, 0)
        );
    }

    #[test]
    fn crc32c_extension() {
        let elements = [element(7, 0, 100), element(7, 200, 50)];
        let f = encode(ReadvEncoder::new().with_crc32c(true), &elements);
        for item in ReadvIter::new(f[0].body.clone()) {
            let (entry, data) = item.unwrap();
            assert!(readv_crc32c_matches(&entry, &data));
            assert_eq!(entry.fhandle.0, crc32c(&data).to_be_bytes());
        }
        let (entry, data) = &elements[0];
        assert!(!readv_crc32c_matches(entry, data));
    }

    #[test]
    fn truncation_and_negative_rlen() {
        let mut b = BytesMut::new();
        element(1, 0, 8).0.encode(&mut b);
        b.put_slice(&[0; 5]);
        let items: Vec<_> = ReadvIter::new(b.freeze()).collect();
        assert!(matches!(
            items[..],
            [Err(DecodeError::Truncated {
                what: "readv element data",
                expected: 8,
                got: 5
            })]
        ));

        let items: Vec<_> = ReadvIter::new(Bytes::from_static(&[0; 7])).collect();
        assert!(matches!(
            items[..],
            [Err(DecodeError::Truncated {
                what: "readv element header",
                ..
            })]
        ));

        let mut b = BytesMut::new();
        ReadListEntry {
            fhandle: FHandle::default(),
            rlen: -1,
            offset: 0,
        }
        .encode(&mut b);
        let items: Vec<_> = ReadvIter::new(b.freeze()).collect();
        assert!(matches!(
            items[..],
            [Err(DecodeError::NegativeLength { value: -1, .. })]
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn frames_one_at_a_time_equal_the_whole(
            spec in proptest::collection::vec((any::<u8>(), any::<i64>(), 0usize..3000), 0..40),
            quantum in 1usize..9000,
            crc in any::<bool>(),
        ) {
            let enc = ReadvEncoder::new().with_quantum(quantum).with_crc32c(crc);
            let elements: Vec<_> = spec.iter().map(|&(fh, o, len)| element(fh, o, len)).collect();
            let mut whole = BytesMut::new();
            enc.encode(StreamId([0, 5]), &elements, &mut whole);
            let counts = enc.frame_counts(elements.iter().map(|(_, d)| d.len()));
            prop_assert_eq!(counts.iter().sum::<usize>(), elements.len());
            let mut parts = Vec::new();
            let mut rest = &elements[..];
            for (i, &n) in counts.iter().enumerate() {
                let (frame, tail) = rest.split_at(n);
                for p in enc.frame_parts(StreamId([0, 5]), frame, i + 1 == counts.len()) {
                    parts.extend_from_slice(&p);
                }
                rest = tail;
            }
            prop_assert_eq!(&parts[..], &whole[..]);
        }

        #[test]
        fn roundtrip(
            spec in proptest::collection::vec((any::<u8>(), any::<i64>(), 0usize..3000), 0..40),
            quantum in 16usize..20000,
            crc in any::<bool>(),
        ) {
            let elements: Vec<_> = spec.iter().map(|&(fh, off, len)| element(fh, off, len)).collect();
            let f = encode(ReadvEncoder::new().with_quantum(quantum).with_crc32c(crc), &elements);
            let total: usize = elements.iter().map(|(_, d)| 16 + d.len()).sum();
            let mut got = Vec::new();
            for (i, frame) in f.iter().enumerate() {
                let last = i + 1 == f.len();
                prop_assert_eq!(frame.header.status, if last { Status::OK } else { Status::OKSOFAR });
                let items: Vec<_> = ReadvIter::new(frame.body.clone()).collect::<Result<_, _>>().unwrap();
                // at most the quantum, unless one oversized element fills it alone
                prop_assert!(frame.body.len() <= quantum.min(total) || items.len() == 1);
                match Response::decode(frame.clone()).unwrap() {
                    Response::Ok(_) | Response::OkSoFar(_) => {}
                    other => prop_assert!(false, "{:?}", other),
                }
                got.extend(items);
            }
            prop_assert_eq!(got.len(), elements.len());
            for ((e, d), (ge, gd)) in elements.iter().zip(&got) {
                prop_assert_eq!(d, gd);
                prop_assert_eq!((e.offset, d.len() as i32), (ge.offset, ge.rlen));
                if crc {
                    prop_assert!(readv_crc32c_matches(ge, gd));
                } else {
                    prop_assert_eq!(ge.fhandle, e.fhandle);
                }
            }
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let n = ReadvIter::new(Bytes::from(b)).count();
            prop_assert!(n <= 7);
        }
    }
}
