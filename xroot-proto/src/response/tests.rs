//! Helpers shared by the response tests (everything goes through the real
//! [`ResponseDecoder`]) and the tests of [`Response`] itself.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::codes::{AttnAction, ErrorCode, RequestId, ResponseType, Status};
use crate::frame::{ResponseDecoder, ResponseFrame};
use crate::header::{ResponseHeader, StreamId};

/// The wire bytes of `r` answering `streamid`.
pub(crate) fn encode_response(r: &Response, streamid: StreamId) -> Bytes {
    let mut b = BytesMut::new();
    r.encode(streamid, &mut b);
    b.freeze()
}

/// Decodes exactly one frame from `wire` with a [`ResponseDecoder`] and
/// types it; panics if the bytes are not exactly one valid frame.
pub(crate) fn decode_one(wire: Bytes) -> Response {
    let mut buf = BytesMut::from(&wire[..]);
    let frame = ResponseDecoder::new()
        .decode(&mut buf)
        .expect("frame decodes")
        .expect("frame is complete");
    assert!(buf.is_empty(), "{} bytes left after the frame", buf.len());
    Response::decode(frame).expect("response decodes")
}

/// Sends `body` as a `kXR_ok` through encoder and decoder and returns the
/// body that came out.
pub(crate) fn ok_roundtrip(body: Bytes) -> Bytes {
    match decode_one(encode_response(&Response::Ok(body), StreamId([0, 1]))) {
        Response::Ok(b) => b,
        other => panic!("not kXR_ok: {other:?}"),
    }
}

/// Encodes a body type with `encode` into fresh bytes.
pub(crate) fn body_of(encode: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut b = BytesMut::new();
    encode(&mut b);
    b.freeze()
}

/// Any bytes up to `max` long.
pub(crate) fn arb_bytes(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

/// Non-empty text without spaces, NUL or newlines (stat owner names,
/// checksum names, locate addresses).
pub(crate) fn arb_word(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(
        any::<u8>().prop_filter("word byte", |b| !matches!(b, b' ' | 0 | b'\n')),
        1..max,
    )
    .prop_map(Bytes::from)
}

/// `r` as it decodes when sent on `streamid`: an unknown frame carries the
/// streamid it was sent with.
pub(crate) fn as_sent(r: Response, streamid: StreamId) -> Response {
    match r {
        Response::Unknown(f) => {
            Response::Unknown(ResponseFrame::new(streamid, f.header.status, f.body))
        }
        r => r,
    }
}

/// Any response except `kXR_attn` (which may only embed the others).
pub(crate) fn arb_response() -> impl Strategy<Value = Response> {
    prop_oneof![
        arb_bytes(64).prop_map(Response::Ok),
        arb_bytes(64).prop_map(Response::OkSoFar),
        arb_bytes(64).prop_map(Response::AuthMore),
        (any::<i32>(), arb_bytes(64))
            .prop_map(|(c, m)| Response::Error(ServerError::new(ErrorCode(c), m))),
        (any::<i32>(), arb_word(30)).prop_map(|(port, host)| Response::Redirect(Redirect {
            port,
            host: host
                .iter()
                .map(|&b| if b == b'?' { b'_' } else { b })
                .collect::<Vec<_>>()
                .into(),
            opaque: None,
            token: None,
        })),
        (any::<i32>(), arb_bytes(32))
            .prop_map(|(seconds, message)| Response::Wait(Wait { seconds, message })),
        (any::<i32>(), arb_bytes(32))
            .prop_map(|(seconds, message)| Response::WaitResp(WaitResp { seconds, message })),
        (any::<u8>(), 0u8..3, any::<i64>(), arb_bytes(64)).prop_map(|(code, t, off, data)| {
            Response::Status(StatusResponse::with_offset(
                RequestId::from_status_code(code),
                ResponseType(t),
                off,
                data,
            ))
        }),
        (prop_oneof![1u16..4000, 4008u16..=u16::MAX], arb_bytes(64)).prop_map(|(s, body)| {
            Response::Unknown(ResponseFrame::new(StreamId::ZERO, Status(s), body))
        }),
    ]
}

#[test]
fn finality() {
    let status = |t| {
        Response::Status(StatusResponse::with_offset(
            RequestId::PGREAD,
            t,
            0,
            Bytes::new(),
        ))
    };
    let wait = Wait {
        seconds: 1,
        message: Bytes::new(),
    };
    assert!(Response::Ok(Bytes::new()).is_final());
    assert!(Response::Error(ServerError::new(ErrorCode::IO_ERROR, "")).is_final());
    assert!(Response::Redirect(Redirect::to_host("h", 1)).is_final());
    assert!(status(ResponseType::FINAL).is_final());
    assert!(!status(ResponseType::PARTIAL).is_final());
    assert!(!status(ResponseType::PROGRESS).is_final());
    assert!(!Response::OkSoFar(Bytes::new()).is_final());
    assert!(!Response::Wait(wait.clone()).is_final());
    assert!(!Response::WaitResp(WaitResp {
        seconds: 1,
        message: Bytes::new()
    })
    .is_final());
    assert!(!Response::Attn(Attn::Message(Bytes::new())).is_final());
    assert_eq!(Response::Wait(wait).status(), Status::WAIT);
}

#[test]
fn unknown_status_is_kept_whole() {
    let r = Response::Unknown(ResponseFrame::new(
        StreamId([0, 3]),
        Status(4100),
        Bytes::from_static(b"??"),
    ));
    let wire = encode_response(&r, StreamId([0, 3]));
    assert_eq!(decode_one(wire), r);
    assert_eq!(r.status(), Status(4100));
    assert!(!r.is_final());
}

#[test]
fn attn_action_other_is_kept() {
    let r = Response::Attn(Attn::Other {
        actnum: AttnAction::ASYNCDI,
        parms: Bytes::from_static(&[0, 0, 0, 1]),
    });
    assert_eq!(decode_one(encode_response(&r, StreamId::ZERO)), r);
}

proptest! {
    #[test]
    fn every_status_roundtrips(r in arb_response(), sid in any::<[u8; 2]>()) {
        let wire = encode_response(&r, StreamId(sid));
        let back = decode_one(wire.clone());
        prop_assert_eq!(&back, &as_sent(r, StreamId(sid)));
        prop_assert_eq!(encode_response(&back, StreamId(sid)), wire);
    }

    #[test]
    fn garbage_never_panics(status in prop_oneof![Just(4001u16), Just(4003), Just(4004), Just(4005), Just(4006), Just(4007), any::<u16>()], body in arb_bytes(80)) {
        let frame = ResponseFrame {
            header: ResponseHeader { streamid: StreamId::ZERO, status: Status(status), dlen: body.len().min(24) as i32 },
            body,
        };
        let _ = Response::decode(frame);
    }
}

/// Decodes `wire` with the real decoder and returns the frame (whose body
/// is a slice of the receive buffer) with its typed response.
fn decode_frame(wire: &[u8]) -> (ResponseFrame, Response) {
    let mut buf = BytesMut::from(wire);
    let frame = ResponseDecoder::new().decode(&mut buf).unwrap().unwrap();
    (frame.clone(), Response::decode(frame).unwrap())
}

/// Whether `part` lies inside `frame` (a non-empty part: same allocation).
fn inside(frame: &ResponseFrame, part: &Bytes) -> bool {
    let range = frame.body.as_ptr_range();
    !part.is_empty() && range.contains(&part.as_ptr()) && part.as_ptr_range().end <= range.end
}

#[test]
fn decoded_payloads_point_into_the_frame() {
    let sid = StreamId([0, 1]);
    let (f, r) = decode_frame(&encode_response(
        &Response::Ok(Bytes::from_static(b"payload")),
        sid,
    ));
    let Response::Ok(body) = r else { panic!() };
    assert!(inside(&f, &body));

    let error = Response::Error(ServerError::new(ErrorCode::IO_ERROR, "disk on fire"));
    let (f, r) = decode_frame(&encode_response(&error, sid));
    let Response::Error(e) = r else { panic!() };
    assert!(inside(&f, &e.message));

    let status = Response::Status(StatusResponse::with_offset(
        RequestId::PGREAD,
        ResponseType::FINAL,
        0,
        Bytes::from_static(b"\0\0\0\0data"),
    ));
    let (f, r) = decode_frame(&encode_response(&status, sid));
    let Response::Status(s) = r else { panic!() };
    assert!(inside(&f, &s.info) && inside(&f, &s.data));
    let page = PgReadFrame::from_status(&s)
        .unwrap()
        .pages()
        .next()
        .unwrap()
        .unwrap();
    assert!(inside(&f, &page.data));

    let asyn = Response::Attn(Attn::AsynResp {
        streamid: sid,
        response: Box::new(Response::Ok(Bytes::from_static(b"late answer"))),
    });
    let (f, r) = decode_frame(&encode_response(&asyn, StreamId::ZERO));
    let Response::Attn(Attn::AsynResp { response, .. }) = r else {
        panic!()
    };
    let Response::Ok(body) = *response else {
        panic!()
    };
    assert!(inside(&f, &body));

    // text bodies: the parsed fields are slices too
    let stat = Bytes::from_static(b"1 2 16 3 4 5 0644 alice users\0");
    let (f, r) = decode_frame(&encode_response(&Response::Ok(stat), sid));
    let Response::Ok(body) = r else { panic!() };
    let s = StatInfo::decode(body.clone()).unwrap();
    assert!(inside(&f, &s.extended.unwrap().owner));
    let DirList::Plain(names) = DirList::decode(body).unwrap() else {
        panic!()
    };
    assert!(inside(&f, &names[0]));
}

#[test]
fn a_large_body_is_handed_to_its_reader() {
    let body: Vec<u8> = (0..100u8).collect();
    let mut wire = vec![0, 5, 0x0f, 0xa0, 0, 0, 0, 100]; // oksofar, dlen 100
    wire.extend_from_slice(&body);
    wire.extend_from_slice(&[0, 6, 0, 0, 0, 0, 0, 0]); // a kXR_ok after it
    let mut dec = ResponseDecoder::new();
    let mut buf = BytesMut::from(&wire[..30]);
    assert!(dec.decode(&mut buf).unwrap().is_none());
    // a body under the threshold stays with the decoder
    assert!(dec.take_large_body(&mut buf, 101).is_none());
    assert_eq!(buf.len(), 30);
    let large = dec.take_large_body(&mut buf, 100).unwrap();
    assert_eq!(large.header.streamid.to_u16(), 5);
    assert_eq!(large.header.status, Status::OKSOFAR);
    assert_eq!(large.len, 100);
    assert_eq!(&large.head[..], &body[..22]);
    assert!(buf.is_empty());
    // the reader collected the body; the next frame decodes afresh
    let mut buf = BytesMut::from(&wire[108..]);
    let next = dec.decode(&mut buf).unwrap().unwrap();
    assert_eq!(next.header.status, Status::OK);
}
