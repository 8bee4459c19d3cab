//! Write requests: write, pgwrite and writev (PROTOCOL.md §6.6–6.8).

use bytes::{Bytes, BytesMut};

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::{FHandle, StreamId};
use crate::limits::MAX_WRITEV_ELEMENTS;
use crate::list::ReadListEntry;
use crate::page::{encode_pages, PageIter};

use super::body::RequestBody;
use super::params::{put_header, Params};
use super::read::PgReqFlags;

simple_request! {
    /// `kXR_write` (3019): `data` at `offset` of an open file; `dlen` is the
    /// data length (`ClientWriteRequest`, PROTOCOL.md §6.6).
    Write = WRITE "kXR_write" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
        /// Bytes 8-15: file offset in bytes.
        offset: i64 = 8,
        /// Byte 16: the substream the data comes on (XrdCl never sets it).
        pathid: u8 = 16,
    }
    payload
        /// The data.
        data;
}

simple_request! {
    /// `kXR_pgwrite` (3026): data at `offset` with a crc32c per page
    /// (`ClientPgWriteRequest`, PROTOCOL.md §6.7). The payload is the
    /// interleaved `[crc32c BE][page]…` stream, pages aligned to absolute
    /// file offsets, and `dlen` includes the CRCs. [`Pgwrite::new`] builds
    /// one from plain data; [`Pgwrite::pages`] walks the pages of one.
    ///
    /// Decoding fails with [`DecodeError::InvalidValue`] for a negative
    /// offset and [`DecodeError::Truncated`] for a stream that ends inside a
    /// crc or with a crc and no data. It does not verify the CRCs (that is
    /// the server's work, per page: see [`crate::page::verify_pages`]). The
    /// reference refuses a `dlen` of 4 or less and a [`PgReqFlags::RETRY`]
    /// covering more than one page.
    Pgwrite = PGWRITE "kXR_pgwrite" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
        /// Bytes 8-15: file offset of the first data byte.
        offset: i64 = 8,
        /// Byte 16.
        pathid: u8 = 16,
        /// Byte 17.
        reqflags: PgReqFlags = 17,
    }
    payload
        /// The interleaved crc/page stream.
        payload;
    check Pgwrite::check_geometry;
}

impl Pgwrite {
    /// A pgwrite of `data` at `offset`, with the page CRCs computed here.
    ///
    /// # Panics
    /// If `offset` exceeds `i64::MAX`.
    pub fn new(fhandle: FHandle, offset: u64, data: &[u8]) -> Pgwrite {
        let mut payload = BytesMut::new();
        encode_pages(offset, data, &mut payload);
        Pgwrite {
            fhandle,
            offset: i64::try_from(offset).expect("file offset over i64::MAX"),
            pathid: 0,
            reqflags: PgReqFlags::EMPTY,
            payload: payload.freeze(),
        }
    }

    /// The pages with their CRCs as sent, each page a slice of the payload.
    /// A negative `offset` is read as 0 (decoding refuses it).
    pub fn pages(&self) -> PageIter {
        PageIter::new(self.offset.max(0) as u64, self.payload.clone())
    }

    /// Data bytes carried (the payload minus its CRCs). Errors as
    /// [`PageIter::data_len`].
    pub fn data_len(&self) -> Result<u64, DecodeError> {
        PageIter::data_len(self.offset.max(0) as u64, self.payload.len())
    }

    fn check_geometry(&self) -> Result<(), DecodeError> {
        if self.offset < 0 {
            return Err(DecodeError::InvalidValue {
                what: "kXR_pgwrite offset",
                expected: "a file offset >= 0",
                got: self.offset,
            });
        }
        self.data_len().map(drop)
    }
}

wire_newtype! {
    /// `ClientWriteVRequest::options` (byte 4).
    flags WritevOptions(u8);
    /// Sync the file after writing.
    DO_SYNC = 0x01 => "doSync";
}

/// One element of a `kXR_writev`: where the data goes and the data. On the
/// wire it is a 16-byte `write_list` entry (`wlen` = `data.len()`) and, after
/// the whole list, the data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[doc(alias = "write_list")]
pub struct WriteSegment {
    /// The open file.
    pub fhandle: FHandle,
    /// File offset in bytes.
    pub offset: i64,
    /// The data (a slice of the frame when decoded).
    pub data: Bytes,
}

/// `kXR_writev` (3031): several writes in one request
/// (`ClientWriteVRequest`, PROTOCOL.md §6.8). `dlen` = 16·n covers only the
/// `write_list`; the data of every element follows it, concatenated in list
/// order, **uncounted by `dlen`** ([`RequestFrame::data`]).
///
/// Decoding fails with [`DecodeError::TooManyElements`] over 1024 elements
/// (`maxWvecsz`), [`DecodeError::NegativeLength`] for a negative `wlen`,
/// [`DecodeError::Misaligned`] for a list that is not a multiple of 16,
/// and [`DecodeError::Truncated`] / [`DecodeError::TrailingBytes`] when the
/// data is shorter / longer than the sum of the `wlen`s.
#[doc(alias = "kXR_writev")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Writev {
    /// Byte 4.
    pub options: WritevOptions,
    /// The elements, in order; elements with no data are skipped by the server.
    pub segments: Vec<WriteSegment>,
}

impl RequestBody for Writev {
    const ID: RequestId = RequestId::WRITEV;

    fn decode(frame: &RequestFrame) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_writev write_list";
        let p = Params::of(frame, Self::ID)?;
        let list = ReadListEntry::decode_list(&frame.payload, WHAT)?;
        DecodeError::check_count(WHAT, list.len(), MAX_WRITEV_ELEMENTS)?;
        let mut total = 0u64;
        for e in &list {
            if e.rlen < 0 {
                return Err(DecodeError::NegativeLength {
                    what: "kXR_writev wlen",
                    value: e.rlen.into(),
                });
            }
            total += e.rlen as u64;
        }
        let data = &frame.data;
        let got = data.len() as u64;
        if got < total {
            return Err(DecodeError::Truncated {
                what: "kXR_writev data",
                expected: total,
                got,
            });
        }
        if got > total {
            return Err(DecodeError::TrailingBytes {
                what: "kXR_writev data",
                extra: got - total,
            });
        }
        let mut at = 0;
        let segments = list
            .iter()
            .map(|e| {
                let n = e.rlen as usize;
                at += n;
                WriteSegment {
                    fhandle: e.fhandle,
                    offset: e.offset,
                    data: data.slice(at - n..at),
                }
            })
            .collect();
        Ok(Writev {
            options: p.get(4),
            segments,
        })
    }

    /// # Panics
    /// Also if one segment's data exceeds `i32::MAX` bytes.
    fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
        let p = Params::default().set(4, self.options);
        let list_len = self.segments.len() * ReadListEntry::LEN;
        put_header(buf, streamid, Self::ID, p, list_len);
        let data_len: usize = self.segments.iter().map(|s| s.data.len()).sum();
        buf.reserve(data_len);
        for s in &self.segments {
            ReadListEntry {
                fhandle: s.fhandle,
                rlen: i32::try_from(s.data.len()).expect("writev element over i32::MAX bytes"),
                offset: s.offset,
            }
            .encode(buf);
        }
        for s in &self.segments {
            buf.extend_from_slice(&s.data);
        }
    }
}
