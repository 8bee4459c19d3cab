//! One test per kind of malformed input the frame decoders must refuse, each
//! with its own typed error, and the zero-copy guarantee of decoding.

use bytes::{BufMut, BytesMut};
use xroot_proto::frame::{ClientMessage, RequestDecoder, ResponseDecoder};
use xroot_proto::header::{ClientHandshake, RequestHeader, ResponseHeader, StreamId};
use xroot_proto::{DecodeError, RequestId, Status};

fn request(id: RequestId, dlen: i32, payload: &[u8]) -> BytesMut {
    let mut b = BytesMut::new();
    RequestHeader {
        streamid: StreamId::from_u16(7),
        requestid: id,
        params: [0; 16],
        dlen,
    }
    .encode(&mut b);
    b.put_slice(payload);
    b
}

fn response(status: Status, dlen: i32, body: &[u8]) -> BytesMut {
    let mut b = BytesMut::new();
    ResponseHeader {
        streamid: StreamId::from_u16(7),
        status,
        dlen,
    }
    .encode(&mut b);
    b.put_slice(body);
    b
}

/// The error the request decoder (no handshake expected) gives for `b`.
fn request_err(mut b: BytesMut) -> DecodeError {
    RequestDecoder::without_handshake()
        .decode(&mut b)
        .unwrap_err()
}

/// A request whose payload is a read_list/write_list of `(rlen, offset)`.
fn list_frame(id: RequestId, elements: &[(i32, i64)]) -> BytesMut {
    let mut list = BytesMut::new();
    for &(rlen, offset) in elements {
        xroot_proto::ReadListEntry {
            fhandle: xroot_proto::FHandle([1, 2, 3, 4]),
            rlen,
            offset,
        }
        .encode(&mut list);
    }
    request(id, list.len() as i32, &list)
}

#[test]
fn negative_request_dlen() {
    let err = request_err(request(RequestId::OPEN, -1, b""));
    assert_eq!(
        err,
        DecodeError::NegativeLength {
            what: "request dlen",
            value: -1
        }
    );
}

#[test]
fn negative_response_dlen() {
    let mut b = response(Status::OK, i32::MIN, b"");
    let err = ResponseDecoder::new().decode(&mut b).unwrap_err();
    assert!(matches!(err, DecodeError::NegativeLength { value, .. } if value == i32::MIN as i64));
}

#[test]
fn oversized_dlen_is_refused_before_the_body_arrives() {
    // Only the 24-byte header is present: the decoder must refuse at once,
    // not wait for (or reserve) 2 GiB.
    let mut b = request(RequestId::WRITE, i32::MAX, b"");
    let err = RequestDecoder::without_handshake()
        .with_max_dlen(1 << 20)
        .decode(&mut b)
        .unwrap_err();
    assert_eq!(
        err,
        DecodeError::LengthTooLarge {
            what: "request dlen",
            value: i32::MAX as u64,
            max: 1 << 20
        }
    );
    assert!(b.capacity() < 4096, "no allocation for the hostile length");

    let mut b = response(Status::OK, 100_000_000, b"");
    let err = ResponseDecoder::new()
        .with_max_dlen(1 << 20)
        .decode(&mut b)
        .unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthTooLarge {
            value: 100_000_000,
            ..
        }
    ));
}

#[test]
fn an_argument_over_its_limit_is_refused_from_the_header_alone() {
    // a query announcing 2 MiB: its argument is over the limit, a write's
    // data of the same length is not
    let decoder = RequestDecoder::without_handshake().with_max_argument_dlen((2 << 20) - 1);
    let mut b = request(RequestId::QUERY, 2 << 20, b"");
    assert_eq!(
        decoder.clone().decode(&mut b).unwrap_err(),
        DecodeError::LengthTooLarge {
            what: "request argument",
            value: 2 << 20,
            max: (2 << 20) - 1
        }
    );
    for id in [RequestId::WRITE, RequestId::PGWRITE] {
        let mut b = request(id, 2 << 20, b"");
        let mut d = decoder.clone();
        assert!(d.decode(&mut b).unwrap().is_none());
        assert_eq!(d.pending_len(), Some(24 + (2 << 20)));
    }
    let mut b = request(RequestId::QUERY, (2 << 20) - 1, b"");
    let mut d = decoder.clone();
    assert!(d.decode(&mut b).unwrap().is_none(), "at the limit: waits");
}

#[test]
fn a_skipped_pending_frame_leaves_the_next_one_to_decode() {
    let mut d = RequestDecoder::without_handshake();
    let mut b = request(RequestId::WRITE, 1000, &[1; 10]);
    assert!(d.decode(&mut b).unwrap().is_none());
    assert_eq!(d.skip_pending(), Some(1024));
    assert_eq!(d.pending_len(), None);
    // the caller drops the frame's bytes; the next frame decodes
    let mut b = request(RequestId::PING, 0, b"");
    match d.decode(&mut b).unwrap() {
        Some(ClientMessage::Request(f)) => assert_eq!(f.header.requestid, RequestId::PING),
        other => panic!("{other:?}"),
    }
}

#[test]
fn too_many_readv_elements_from_the_header_alone() {
    let err = request_err(request(RequestId::READV, 1025 * 16, b""));
    assert_eq!(
        err,
        DecodeError::TooManyElements {
            what: "read_list",
            count: 1025,
            max: 1024
        }
    );
}

#[test]
fn misaligned_read_list() {
    let err = request_err(request(RequestId::READV, 17, &[0; 17]));
    assert!(matches!(
        err,
        DecodeError::Misaligned {
            len: 17,
            unit: 16,
            ..
        }
    ));
}

#[test]
fn writev_negative_and_oversized_elements() {
    let err = request_err(list_frame(RequestId::WRITEV, &[(-5, 0)]));
    assert!(matches!(
        err,
        DecodeError::NegativeLength {
            what: "kXR_writev wlen",
            value: -5
        }
    ));

    let err = request_err(list_frame(RequestId::WRITEV, &[(3 << 20, 0)]));
    assert!(matches!(
        err,
        DecodeError::LengthTooLarge {
            what: "kXR_writev element",
            ..
        }
    ));
}

#[test]
fn writev_data_follows_the_list_uncounted() {
    let mut b = list_frame(RequestId::WRITEV, &[(3, 0), (2, 100)]);
    b.put_slice(b"abc");
    let mut dec = RequestDecoder::without_handshake();
    assert_eq!(dec.decode(&mut b).unwrap(), None, "waits for the data");
    b.put_slice(b"de");
    b.put_slice(b"NEXT");
    let Some(ClientMessage::Request(f)) = dec.decode(&mut b).unwrap() else {
        panic!("no frame")
    };
    assert_eq!(f.payload.len(), 32);
    assert_eq!(&f.data[..], b"abcde");
    assert_eq!(&b[..], b"NEXT");
}

#[test]
fn negative_status_data_length() {
    let mut body = [0u8; 24];
    body[12..16].copy_from_slice(&(-8i32).to_be_bytes());
    let mut b = response(Status::STATUS, 24, &body);
    let err = ResponseDecoder::new().decode(&mut b).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::NegativeLength {
            what: "kXR_status bdy.dlen",
            value: -8
        }
    ));
}

#[test]
fn status_shorter_than_its_body() {
    let mut b = response(Status::STATUS, 8, &[0; 8]);
    let err = ResponseDecoder::new().decode(&mut b).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Truncated {
            what: "kXR_status body",
            expected: 16,
            got: 8
        }
    ));
}

#[test]
fn truncated_frames_at_end_of_stream() {
    let mut b = request(RequestId::OPEN, 10, b"/tmp");
    let mut dec = RequestDecoder::without_handshake();
    assert_eq!(dec.decode(&mut b).unwrap(), None);
    let err = dec.decode_eof(&mut b).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Truncated {
            what: "request frame",
            expected: 34,
            got: 28
        }
    );

    let mut b = response(Status::OK, 100, &[1; 40]);
    let err = ResponseDecoder::new().decode_eof(&mut b).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Truncated {
            what: "response frame",
            expected: 108,
            got: 48
        }
    ));

    let mut b = BytesMut::from(&[0u8; 5][..]);
    let err = ResponseDecoder::new().decode_eof(&mut b).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Truncated {
            expected: 8,
            got: 5,
            ..
        }
    ));
}

#[test]
fn garbage_handshake() {
    let mut b = BytesMut::from(&b"GET / HTTP/1.1\r\nHost: x\r\n"[..]);
    let err = RequestDecoder::new().decode(&mut b).unwrap_err();
    assert!(matches!(err, DecodeError::BadHandshake { .. }));
}

#[test]
fn handshake_then_request_byte_by_byte() {
    let mut wire = BytesMut::new();
    ClientHandshake.encode(&mut wire);
    wire.extend_from_slice(&request(RequestId::PING, 0, b""));
    let mut dec = RequestDecoder::new();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for byte in wire.iter() {
        buf.put_u8(*byte);
        while let Some(m) = dec.decode(&mut buf).unwrap() {
            got.push(m);
        }
    }
    assert_eq!(got.len(), 2);
    assert!(matches!(got[0], ClientMessage::Handshake(_)));
    assert!(matches!(&got[1], ClientMessage::Request(f) if f.header.requestid == RequestId::PING));
}

#[test]
fn payloads_are_slices_of_the_input_not_copies() {
    let mut b = request(RequestId::WRITE, 5000, &[0xAB; 5000]);
    b.extend_from_slice(&response(Status::OK, 3000, &[0xCD; 3000]));
    let base = b.as_ptr() as usize;
    let span = base..base + b.len();
    let Some(ClientMessage::Request(f)) =
        RequestDecoder::without_handshake().decode(&mut b).unwrap()
    else {
        panic!("no request")
    };
    assert!(span.contains(&(f.payload.as_ptr() as usize)));
    assert_eq!(f.payload.as_ptr() as usize, base + 24);
    let r = ResponseDecoder::new().decode(&mut b).unwrap().unwrap();
    assert_eq!(r.body.as_ptr() as usize, base + 24 + 5000 + 8);
}

fn decode_request(mut b: BytesMut) -> Result<xroot_proto::request::Request, DecodeError> {
    let Some(ClientMessage::Request(f)) = RequestDecoder::without_handshake().decode(&mut b)?
    else {
        panic!("no whole frame")
    };
    xroot_proto::request::Request::decode(f)
}

#[test]
fn readv_element_over_2097136_bytes() {
    let err =
        decode_request(list_frame(RequestId::READV, &[(100, 0), (2_097_137, 4096)])).unwrap_err();
    assert_eq!(
        err,
        DecodeError::ReadvElementTooLarge {
            index: 1,
            rlen: 2_097_137,
            max: 2_097_136
        }
    );
    assert!(decode_request(list_frame(RequestId::READV, &[(2_097_136, 0)])).is_ok());
}

#[test]
fn readv_negative_element_length() {
    let err = decode_request(list_frame(RequestId::READV, &[(-1, 0)])).unwrap_err();
    assert!(matches!(err, DecodeError::NegativeLength { value: -1, .. }));
}

#[test]
fn readv_of_exactly_2_gib_with_element_headers() {
    // 1024 maximal elements: 1024 × (2,097,136 + 16) = 2^31, what current
    // xrootd accepts (xrootd#2614); one byte more needs an element over the
    // maximum, refused as such
    let max = vec![(2_097_136, 0); 1024];
    assert!(decode_request(list_frame(RequestId::READV, &max)).is_ok());
    let mut over = max;
    over[1023].0 += 1;
    let err = decode_request(list_frame(RequestId::READV, &over)).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::ReadvElementTooLarge { index: 1023, .. }
    ));
}

#[test]
fn the_length_of_a_frame_being_received_is_known_from_its_header() {
    let whole = request(RequestId::WRITE, 100_000, &[7; 100_000]);
    let mut dec = RequestDecoder::without_handshake();
    let mut buf = BytesMut::from(&whole[..10]);
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
    assert_eq!(dec.pending_len(), None, "no header yet");
    buf.extend_from_slice(&whole[10..5000]);
    assert_eq!(dec.decode(&mut buf).unwrap(), None);
    assert_eq!(dec.pending_len(), Some(24 + 100_000));
    buf.extend_from_slice(&whole[5000..]);
    assert!(matches!(
        dec.decode(&mut buf).unwrap(),
        Some(ClientMessage::Request(f)) if f.payload.len() == 100_000
    ));
    assert_eq!(dec.pending_len(), None, "between frames");
}
