#![no_main]
//! Response frames, as a client receives them: any bytes through the
//! client-side frame decoder, then the typed decode of every frame. A
//! response that decodes must survive encode → decode unchanged.
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use xroot_proto::frame::ResponseDecoder;
use xroot_proto::response::Response;

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    let mut dec = ResponseDecoder::new().with_max_dlen(1 << 20);
    while let Ok(Some(frame)) = dec.decode(&mut buf) {
        let streamid = frame.header.streamid;
        let Ok(resp) = Response::decode(frame) else {
            continue;
        };
        let mut out = BytesMut::new();
        resp.encode(streamid, &mut out);
        let again = ResponseDecoder::new()
            .with_max_dlen(usize::MAX)
            .decode(&mut out)
            .expect("our own encoding decodes")
            .expect("our own encoding is a whole frame");
        assert!(out.is_empty(), "encoding wrote exactly one frame");
        assert_eq!(Response::decode(again).expect("re-decode"), resp);
    }
    let _ = dec.decode_eof(&mut buf);
});
