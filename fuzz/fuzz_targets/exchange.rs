#![no_main]
//! Pairing, as a capture tool does it: `[u16 BE n][u8 burst][n bytes of
//! requests][responses]`. The requests (after the client's handshake) and
//! the responses (after the server's handshake reply) go through the frame
//! decoders into one `exchange::Conversation` with small limits: after
//! each request, `burst % 4` responses (0: every request first), then the
//! rest, then `finish`. No input may panic, and the conversation never
//! holds more than its limits allow.
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use xroot_proto::exchange::{Conversation, Event};
use xroot_proto::frame::{ClientMessage, RequestDecoder, ResponseDecoder};

/// Limits small enough for the fuzzer to reach.
const MAX_BUFFERED: usize = 64 << 10;
const MAX_OUTSTANDING: usize = 64;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let n = u16::from_be_bytes([data[0], data[1]]) as usize;
    let burst = (data[2] % 4) as usize;
    let rest = &data[3..];
    let (requests, responses) = rest.split_at(n.min(rest.len()));
    let mut requests = BytesMut::from(requests);
    let mut responses = BytesMut::from(responses);
    let mut req_dec = RequestDecoder::without_handshake().with_max_dlen(1 << 20);
    let mut resp_dec = ResponseDecoder::new().with_max_dlen(1 << 20);
    let mut talk = Conversation::new()
        .with_max_buffered(MAX_BUFFERED)
        .with_max_outstanding(MAX_OUTSTANDING);

    let mut respond = |talk: &mut Conversation, count: usize| {
        for _ in 0..count {
            let Ok(Some(frame)) = resp_dec.decode(&mut responses) else {
                return false;
            };
            let before = talk.outstanding();
            match talk.push_response(frame) {
                Ok(Some(Event::Exchange(_))) => assert_eq!(talk.outstanding(), before - 1),
                Ok(_) | Err(_) => assert!(talk.outstanding() <= before),
            }
            assert!(talk.buffered() <= talk.max_buffered());
        }
        true
    };

    while let Ok(Some(msg)) = req_dec.decode(&mut requests) {
        let ClientMessage::Request(frame) = msg else {
            continue;
        };
        let _ = talk.push_request_frame(frame);
        assert!(talk.outstanding() <= MAX_OUTSTANDING);
        if burst > 0 {
            respond(&mut talk, burst);
        }
    }
    while respond(&mut talk, 1) {}
    let _ = talk.finish();
});
