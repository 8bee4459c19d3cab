#![no_main]
//! Request frames, as a server receives them: any bytes through the
//! server-side frame decoder (handshake first when the first input byte is
//! odd), then the typed decode of every frame. A request that decodes must
//! survive encode → decode unchanged.
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use xroot_proto::frame::{ClientMessage, RequestDecoder};
use xroot_proto::request::Request;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut dec = if mode & 1 == 1 {
        RequestDecoder::new()
    } else {
        RequestDecoder::without_handshake()
    }
    .with_max_dlen(1 << 20);
    let mut buf = BytesMut::from(rest);
    while let Ok(Some(msg)) = dec.decode(&mut buf) {
        let ClientMessage::Request(frame) = msg else {
            continue;
        };
        let streamid = frame.header.streamid;
        let Ok(req) = Request::decode(frame) else {
            continue;
        };
        let mut out = BytesMut::new();
        req.encode(streamid, &mut out);
        let again = RequestDecoder::without_handshake()
            .with_max_dlen(usize::MAX)
            .decode(&mut out)
            .expect("our own encoding decodes")
            .expect("our own encoding is a whole frame");
        let ClientMessage::Request(again) = again else {
            unreachable!("a request decoder without handshake yields requests")
        };
        assert!(out.is_empty(), "encoding wrote exactly one frame");
        assert_eq!(Request::decode(again).expect("re-decode"), req);
    }
    let _ = dec.decode_eof(&mut buf);
});
