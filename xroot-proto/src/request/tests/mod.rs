//! Tests of the request codecs: round-trip properties for every type
//! ([`roundtrip`], [`check_roundtrip`]) and hand-written frames ([`frames`],
//! [`data`]).

use bytes::{BufMut, Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::codes::RequestId;
use crate::frame::{ClientMessage, RequestDecoder, RequestFrame};
use crate::header::{FHandle, RequestHeader, StreamId};
use crate::limits::MAX_READV_ELEMENT;
use crate::list::ReadListEntry;

mod data;
mod frames;
mod roundtrip;

const SID: StreamId = StreamId([0, 1]);

fn encoded(req: &impl RequestBody) -> Vec<u8> {
    let mut b = BytesMut::new();
    req.encode(SID, &mut b);
    b.to_vec()
}

/// Header bytes 4..20 with `fields` written at their header offsets.
fn params(fields: &[(usize, &[u8])]) -> [u8; 16] {
    let mut p = [0u8; 16];
    for (at, v) in fields {
        p[at - 4..at - 4 + v.len()].copy_from_slice(v);
    }
    p
}

fn list_bytes(list: &[(i32, i64)]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for &(rlen, offset) in list {
        ReadListEntry {
            fhandle: FHandle([0, 0, 0, 7]),
            rlen,
            offset,
        }
        .encode(&mut b);
    }
    b.to_vec()
}

/// Encodes `req`, decodes it through the frame decoder and both decode paths,
/// and checks equality and a byte-identical re-encode.
fn check_roundtrip<T>(req: T, streamid: StreamId) -> Result<(), TestCaseError>
where
    T: RequestBody + Into<Request> + Clone + PartialEq + core::fmt::Debug,
{
    let mut buf = BytesMut::new();
    req.encode(streamid, &mut buf);
    let wire = buf.clone().freeze();
    let frame = decode_frame(&mut buf);
    prop_assert!(buf.is_empty(), "decoder left {} bytes", buf.len());
    prop_assert_eq!(frame.header.streamid, streamid);
    prop_assert_eq!(frame.header.requestid, T::ID);
    prop_assert_eq!(&T::decode(&frame)?, &req);
    let any = Request::decode(frame)?;
    prop_assert_eq!(any.id(), T::ID);
    prop_assert_eq!(&any, &req.clone().into());
    let mut again = BytesMut::new();
    any.encode(streamid, &mut again);
    prop_assert_eq!(&again[..], &wire[..]);
    Ok(())
}

/// One whole frame off `buf` through [`RequestDecoder`].
fn decode_frame(buf: &mut BytesMut) -> RequestFrame {
    match RequestDecoder::without_handshake().decode(buf) {
        Ok(Some(ClientMessage::Request(f))) => f,
        other => panic!("expected a request frame, got {other:?}"),
    }
}

/// A frame from hand-written header fields and payload.
fn frame(id: RequestId, params: [u8; 16], payload: &[u8]) -> RequestFrame {
    let mut b = BytesMut::new();
    RequestHeader {
        streamid: StreamId([0, 1]),
        requestid: id,
        params,
        dlen: payload.len() as i32,
    }
    .encode(&mut b);
    b.put_slice(payload);
    decode_frame(&mut b)
}

/// Whether `part` lies inside `whole`'s memory (a zero-copy slice).
fn is_within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    !part.is_empty() && p >= w && p + part.len() <= w + whole.len()
}

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..=max).prop_map(Bytes::from)
}

fn text_without(max: usize, banned: u8) -> impl Strategy<Value = Bytes> {
    vec(
        any::<u8>().prop_filter("banned byte", move |&c| c != banned),
        0..=max,
    )
    .prop_map(Bytes::from)
}

fn fh() -> impl Strategy<Value = FHandle> {
    any::<[u8; 4]>().prop_map(FHandle)
}

fn entry(rlen: impl Strategy<Value = i32>) -> impl Strategy<Value = ReadListEntry> {
    (fh(), rlen, any::<i64>()).prop_map(|(fhandle, rlen, offset)| ReadListEntry {
        fhandle,
        rlen,
        offset,
    })
}
