#![no_main]
//! cmsd frames: any bytes through the frame decoder, then every frame
//! decoded both as a request (what a node or manager sends) and as an answer
//! to a redirector. What decodes must re-encode to a frame that decodes to
//! the same value.
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use xroot_proto::cms::{CmsDecoder, CmsRequest, CmsResponse};

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    let mut dec = CmsDecoder::new();
    while let Ok(Some(frame)) = dec.decode(&mut buf) {
        assert_eq!(frame.payload.len(), usize::from(frame.header.datalen));
        if let Ok(req) = CmsRequest::decode(&frame) {
            let mut out = BytesMut::new();
            if req.encode(frame.header.streamid, &mut out).is_ok() {
                let again = CmsDecoder::new()
                    .decode(&mut out)
                    .expect("our own frame decodes")
                    .expect("our own frame is whole");
                assert!(out.is_empty());
                assert_eq!(CmsRequest::decode(&again).expect("our own request decodes"), req);
            }
        }
        if let Ok(resp) = CmsResponse::decode(&frame) {
            let mut out = BytesMut::new();
            let asynchronous = frame.header.modifier & 0x80 != 0;
            if resp.encode(frame.header.streamid, asynchronous, &mut out).is_ok() {
                let again = CmsDecoder::new().decode(&mut out).unwrap().unwrap();
                assert_eq!(CmsResponse::decode(&again).unwrap(), resp);
            }
        }
    }
    let _ = dec.decode_eof(&buf);
});
