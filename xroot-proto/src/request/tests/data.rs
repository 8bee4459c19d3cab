//! Hand-written frames of the data requests (PROTOCOL.md §6.3–6.8 and the
//! Appendix): read args, every readv limit's distinct error, pgread/pgwrite
//! page geometry, writev data slicing and zero copy.

use bytes::{BufMut, Bytes, BytesMut};

use super::*;
use crate::error::DecodeError;
use crate::page::crc32c;

#[test]
fn xrdcp_read_carries_eight_bytes_of_read_args() {
    // PROTOCOL.md Appendix item 5: 8 MiB at offset 0, read_args with pathid 0.
    #[rustfmt::skip]
    let wire: &[u8] = &[
        0, 1, 0x0b, 0xc5,                       // 3013 kXR_read
        0, 0, 0, 0,                             // fhandle
        0, 0, 0, 0, 0, 0, 0, 0,                 // offset
        0, 0x80, 0, 0,                          // rlen 8 MiB
        0, 0, 0, 8,                             // dlen
        0, 0, 0, 0, 0, 0, 0, 0,                 // read_args
    ];
    let f = decode_frame(&mut BytesMut::from(wire));
    let read = Read::decode(&f).unwrap();
    assert_eq!(read.rlen, 8 << 20);
    assert_eq!(read.args, Some(ReadArgs::default()));
    assert_eq!(read.pathid(), 0);
    assert_eq!(encoded(&read), wire);
}

#[test]
fn read_args_shapes() {
    let p = params(&[(16, &100i32.to_be_bytes())]);
    let err = Read::decode(&frame(RequestId::READ, p, &[2, 0, 0])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Truncated {
            expected: 8,
            got: 3,
            ..
        }
    ));
    let mut payload = vec![3, 0, 0, 0, 0, 0, 0, 0];
    payload.extend(list_bytes(&[(10, 0), (20, 4096)]));
    let read = Read::decode(&frame(RequestId::READ, p, &payload)).unwrap();
    assert_eq!(read.pathid(), 3);
    assert_eq!(read.args.unwrap().preread.len(), 2);
    payload.push(0);
    let err = Read::decode(&frame(RequestId::READ, p, &payload)).unwrap_err();
    assert!(matches!(err, DecodeError::Misaligned { len: 33, .. }));
}

#[test]
fn readv_fields_and_extension_flag() {
    let list = list_bytes(&[(100, 0), (4096, 1 << 20)]);
    let p = params(&[(18, &[crate::ext::READV_FLAG_CRC32C]), (19, &[2])]);
    let rv = Readv::decode(&frame(RequestId::READV, p, &list)).unwrap();
    assert_eq!(rv.pathid, 2);
    assert!(rv.flags.contains(ReadvFlags::CRC32C));
    assert_eq!(ReadvFlags::CRC32C.0, crate::ext::READV_FLAG_CRC32C);
    assert_eq!(rv.list[1].rlen, 4096);
    assert_eq!(rv.list[1].offset, 1 << 20);
    assert!(rv.check_not_empty().is_ok());
}

/// A readv frame built by hand, bypassing the frame decoder's own checks.
fn readv_frame(id: RequestId, list: &[u8]) -> RequestFrame {
    RequestFrame {
        header: RequestHeader {
            streamid: SID,
            requestid: id,
            params: [0; 16],
            dlen: list.len() as i32,
        },
        payload: Bytes::copy_from_slice(list),
        data: Bytes::new(),
    }
}

#[test]
fn each_readv_limit_has_its_own_error() {
    let max = MAX_READV_ELEMENT as i32;
    let dec = |l: &[(i32, i64)]| Readv::decode(&readv_frame(RequestId::READV, &list_bytes(l)));
    assert!(matches!(
        dec(&vec![(1, 0); 1025]),
        Err(DecodeError::TooManyElements {
            count: 1025,
            max: 1024,
            ..
        })
    ));
    assert!(matches!(
        dec(&[(1, 0), (-1, 0)]),
        Err(DecodeError::NegativeLength { value: -1, .. })
    ));
    assert!(matches!(
        dec(&[(1, 0), (max + 1, 0)]),
        Err(DecodeError::ReadvElementTooLarge { index: 1, .. })
    ));
    // exactly 2 GiB with the element headers: accepted (xrootd#2614)
    assert!(dec(&vec![(max, 0); 1024]).is_ok());
    let err = Readv::decode(&readv_frame(RequestId::READV, &[0; 17])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Misaligned {
            len: 17,
            unit: 16,
            ..
        }
    ));
    // the frame decoder refuses an oversized list before it arrives
    let mut b = BytesMut::new();
    Readv {
        list: vec![ReadListEntry::default(); 1025],
        ..Readv::default()
    }
    .encode(SID, &mut b);
    assert!(matches!(
        RequestDecoder::without_handshake().decode(&mut b),
        Err(DecodeError::TooManyElements { .. })
    ));
    // n == 0 decodes; the reference's ArgInvalid is a separate check
    let empty = dec(&[]).unwrap();
    assert!(matches!(
        empty.check_not_empty(),
        Err(DecodeError::InvalidValue { got: 0, .. })
    ));
}

#[test]
fn pgreadv_caps_only_the_count() {
    let dec = |l: &[(i32, i64)]| PgReadv::decode(&readv_frame(RequestId::PGREADV, &list_bytes(l)));
    let big = dec(&[(64 << 20, 0), (i32::MAX, 1 << 30)]).unwrap();
    assert_eq!(big.list[0].rlen, 64 << 20);
    assert!(matches!(
        dec(&vec![(1, 0); 1025]),
        Err(DecodeError::TooManyElements { count: 1025, .. })
    ));
    assert!(matches!(
        dec(&[(-5, 0)]),
        Err(DecodeError::NegativeLength { value: -5, .. })
    ));
    let p = params(&[(18, &[1]), (19, &[0])]);
    let pv = PgReadv::decode(&frame(RequestId::PGREADV, p, &list_bytes(&[(8192, 0)]))).unwrap();
    assert_eq!(pv.reqflags, PgReqFlags::RETRY);
}

#[test]
fn pgread_args() {
    let p = params(&[(16, &4096i32.to_be_bytes())]);
    let none = Pgread::decode(&frame(RequestId::PGREAD, p, &[])).unwrap();
    assert_eq!((none.args, none.pathid()), (None, 0));
    let one = Pgread::decode(&frame(RequestId::PGREAD, p, &[3])).unwrap();
    assert_eq!((one.pathid(), one.reqflags()), (3, PgReqFlags::EMPTY));
    let two = Pgread::decode(&frame(RequestId::PGREAD, p, &[0, 1])).unwrap();
    assert_eq!(two.reqflags(), PgReqFlags::RETRY);
    assert_eq!(encoded(&two)[20..], [0, 0, 0, 2, 0, 1]);
    let err = Pgread::decode(&frame(RequestId::PGREAD, p, &[0, 1, 2])).unwrap_err();
    assert!(matches!(err, DecodeError::TrailingBytes { extra: 1, .. }));
}

#[test]
fn pgwrite_geometry_of_an_unaligned_write() {
    // PROTOCOL.md §6.5 geometry: 10000 bytes at 1000 → pages of 3096, 4096, 2808.
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let pw = Pgwrite::new(FHandle([0, 0, 0, 1]), 1000, &data);
    let wire = encoded(&pw);
    assert_eq!(i32::from_be_bytes(wire[20..24].try_into().unwrap()), 10_012);
    assert_eq!(&wire[24..28], crc32c(&data[..3096]).to_be_bytes());
    let f = decode_frame(&mut BytesMut::from(&wire[..]));
    let back = Pgwrite::decode(&f).unwrap();
    assert_eq!(back.data_len().unwrap(), 10_000);
    let pages: Vec<_> = back.pages().map(Result::unwrap).collect();
    let geometry: Vec<_> = pages.iter().map(|p| (p.offset, p.data.len())).collect();
    assert_eq!(geometry, [(1000, 3096), (4096, 4096), (8192, 2808)]);
    assert!(pages
        .iter()
        .all(|p| p.is_valid() && is_within(&p.data, &f.payload)));

    let p = params(&[(8, &(-1i64).to_be_bytes())]);
    let err = Pgwrite::decode(&frame(RequestId::PGWRITE, p, &[0; 8])).unwrap_err();
    assert!(matches!(err, DecodeError::InvalidValue { got: -1, .. }));
    // a 4100-byte unit followed by a crc and nothing else
    let err = Pgwrite::decode(&frame(RequestId::PGWRITE, [0; 16], &[0; 4104])).unwrap_err();
    assert!(matches!(err, DecodeError::Truncated { .. }));
}

#[test]
fn write_data_is_the_payload() {
    let p = params(&[(4, &[0, 0, 0, 3]), (8, &77i64.to_be_bytes()), (16, &[1])]);
    let f = frame(RequestId::WRITE, p, b"hello");
    let w = Write::decode(&f).unwrap();
    assert_eq!((w.offset, w.pathid, &w.data[..]), (77, 1, &b"hello"[..]));
    assert!(is_within(&w.data, &f.payload));
}

#[test]
fn writev_slices_the_data_after_the_list() {
    let mut wire = BytesMut::new();
    let mut p = [0u8; 16];
    p[0] = 1; // doSync
    RequestHeader {
        streamid: SID,
        requestid: RequestId::WRITEV,
        params: p,
        dlen: 32,
    }
    .encode(&mut wire);
    for (wlen, offset) in [(3i32, 100i64), (2, 0)] {
        ReadListEntry {
            fhandle: FHandle([0, 0, 0, 5]),
            rlen: wlen,
            offset,
        }
        .encode(&mut wire);
    }
    wire.put_slice(b"abcde");
    let expected = wire.to_vec();
    let f = decode_frame(&mut wire);
    assert_eq!(&f.data[..], b"abcde");
    let wv = Writev::decode(&f).unwrap();
    assert!(wv.options.contains(WritevOptions::DO_SYNC));
    let segs: Vec<_> = wv
        .segments
        .iter()
        .map(|s| (s.offset, &s.data[..]))
        .collect();
    assert_eq!(segs, [(100, &b"abc"[..]), (0, &b"de"[..])]);
    assert!(wv.segments.iter().all(|s| is_within(&s.data, &f.data)));
    assert_eq!(encoded(&wv), expected);

    let short = RequestFrame {
        data: f.data.slice(..4),
        ..f.clone()
    };
    assert!(matches!(
        Writev::decode(&short),
        Err(DecodeError::Truncated {
            expected: 5,
            got: 4,
            ..
        })
    ));
    let long = RequestFrame {
        data: Bytes::from_static(b"abcdef"),
        ..f
    };
    assert!(matches!(
        Writev::decode(&long),
        Err(DecodeError::TrailingBytes { extra: 1, .. })
    ));
}
