#![no_main]
//! `kXR_status` frames (pgread, pgreadv, pgwrite replies): the status body
//! with its crc32c, the page stream and the pgwrite bad-page (CSE) block.
//!
//! Input: one mode byte, then the status body (16 bytes, the 8-byte info
//! unless mode bit 1 is set, then data). With mode bit 0 set the target
//! fixes `bdy.dlen` and the status crc32c so that mutations reach the page
//! and CSE parsers; without it they are taken as they come.
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use xroot_proto::frame::ResponseDecoder;
use xroot_proto::header::{ResponseHeader, StreamId};
use xroot_proto::page::crc32c;
use xroot_proto::response::{PgReadFrame, PgWriteResponse, StatusResponse};
use xroot_proto::Status;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let hdr_dlen = if mode & 2 == 0 { 24 } else { 16 };
    if rest.len() < hdr_dlen {
        return;
    }
    let mut body = rest.to_vec();
    if mode & 1 == 1 {
        let data_len = (body.len() - hdr_dlen) as i32;
        body[12..16].copy_from_slice(&data_len.to_be_bytes());
        let crc = crc32c(&body[4..hdr_dlen]);
        body[..4].copy_from_slice(&crc.to_be_bytes());
    }
    let mut buf = BytesMut::new();
    ResponseHeader {
        streamid: StreamId([body[4], body[5]]),
        status: Status::STATUS,
        dlen: hdr_dlen as i32,
    }
    .encode(&mut buf);
    buf.extend_from_slice(&body);
    let mut dec = ResponseDecoder::new().with_max_dlen(1 << 22);
    if let Ok(Some(frame)) = dec.decode(&mut buf) {
        exercise(&frame.header, frame.body);
    }
});

fn exercise(header: &ResponseHeader, body: bytes::Bytes) {
    let Ok(status) = StatusResponse::decode(header, body) else {
        return;
    };
    if let Ok(pg) = PgReadFrame::from_status(&status) {
        let pages: Vec<_> = pg.pages().collect();
        if let (Ok(len), Ok(bad)) = (pg.data_len(), pg.bad_pages()) {
            let pages: Vec<_> = pages
                .into_iter()
                .map(|p| p.expect("pages agree with data_len"))
                .collect();
            assert_eq!(pages.iter().map(|p| p.data.len() as u64).sum::<u64>(), len);
            assert_eq!(pages.iter().filter(|p| !p.is_valid()).count(), bad.len());
        }
    }
    if let Ok(pw) = PgWriteResponse::from_status(&status) {
        let again = PgWriteResponse::from_status(&pw.to_status()).expect("re-decode");
        assert_eq!(again, pw);
    }
    let mut out = BytesMut::new();
    status.encode(header.streamid, &mut out);
    let frame = ResponseDecoder::new()
        .with_max_dlen(usize::MAX)
        .decode(&mut out)
        .expect("our own status frame decodes")
        .expect("whole");
    let again = StatusResponse::decode(&frame.header, frame.body).expect("re-decode");
    assert_eq!(again, status);
}
