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
    let s = StatusResponse::with_offset(RequestId::PGWRITE, ResponseType::FINAL, 0, Bytes::new());
    assert!(matches!(
        PgReadFrame::from_status(&s),
        Err(DecodeError::WrongKind { .. })
    ));
    let s = StatusResponse::with_offset(RequestId::PGREAD, ResponseType::FINAL, -1, Bytes::new());
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
