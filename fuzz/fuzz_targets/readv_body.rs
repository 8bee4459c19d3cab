#![no_main]
//! A readv response body: any bytes through the element iterator. A body
//! that iterates cleanly must re-encode (as one frame) to the same bytes.
use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use xroot_proto::frame::ResponseDecoder;
use xroot_proto::response::{Response, ReadvEncoder, ReadvIter};
use xroot_proto::StreamId;

fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);
    let Ok(elements) = ReadvIter::new(body.clone()).collect::<Result<Vec<_>, _>>() else {
        return;
    };
    for (entry, bytes) in &elements {
        assert_eq!(entry.rlen as usize, bytes.len(), "element data matches its header");
    }
    let mut out = BytesMut::new();
    ReadvEncoder::new()
        .with_quantum(usize::MAX)
        .encode(StreamId::ZERO, &elements, &mut out);
    let mut joined = Vec::new();
    let mut dec = ResponseDecoder::new().with_max_dlen(usize::MAX);
    while let Some(frame) = dec.decode(&mut out).expect("our own frames decode") {
        match Response::decode(frame).expect("our own response decodes") {
            Response::Ok(b) | Response::OkSoFar(b) => joined.extend_from_slice(&b),
            other => panic!("readv encoder wrote {other:?}"),
        }
    }
    assert_eq!(joined, data);
});
