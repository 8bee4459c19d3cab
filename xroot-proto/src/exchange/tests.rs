use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::codes::{AttnAction, ErrorCode};
use crate::frame::ResponseDecoder;
use crate::header::FHandle;
use crate::request::{Dirlist, Open, Pgread, Query, Read, Readv, Stat};
use crate::response::{DirStatEntry, PgReadEncoder, PgReadExtent, ReadvEncoder, StatExtended};

const SID: StreamId = StreamId([0, 7]);

/// Every frame in `wire`, in order.
fn frames(mut wire: BytesMut) -> Vec<ResponseFrame> {
    let mut dec = ResponseDecoder::new();
    let mut out = Vec::new();
    while let Some(f) = dec.decode_eof(&mut wire).unwrap() {
        out.push(f);
    }
    out
}

fn encoded(responses: &[Response], sid: StreamId) -> Vec<ResponseFrame> {
    let mut wire = BytesMut::new();
    for r in responses {
        r.encode(sid, &mut wire);
    }
    frames(wire)
}

/// Pushes `request`, then `answer`; returns the one exchange it makes
/// (asserting every frame before the last was held) and checks that
/// nothing is left.
fn pair(request: Request, answer: Vec<ResponseFrame>) -> Exchange {
    let mut talk = Conversation::new();
    talk.push_request(SID, request).unwrap();
    let n = answer.len();
    let mut last = None;
    for (i, f) in answer.into_iter().enumerate() {
        let got = talk.push_response(f).unwrap();
        if i + 1 < n {
            assert_eq!(got, None, "frame {i} of {n}");
        } else {
            last = got;
        }
    }
    assert_eq!(talk.buffered(), 0);
    talk.finish().unwrap();
    match last {
        Some(Event::Exchange(ex)) => ex,
        other => panic!("{other:?}"),
    }
}

fn stat(size: u64) -> StatInfo {
    StatInfo {
        id: 42,
        size,
        flags: StatFlags::READABLE,
        mtime: 1_700_000_000,
        extended: Some(StatExtended {
            ctime: 1,
            atime: 2,
            mode: 0o644,
            owner: Bytes::from_static(b"alice"),
            group: Bytes::from_static(b"users"),
        }),
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn dirlist_with_stat_across_oksofar_frames() {
    let entries: Vec<DirStatEntry> = (0..300)
        .map(|i| DirStatEntry {
            name: format!("file-{i:04}.root").into(),
            stat: stat(i),
            checksum: None,
        })
        .collect();
    let list = DirList::Stat(entries);
    let responses = list.responses();
    assert!(responses.len() > 2, "the listing takes several chunks");
    let request = Request::Dirlist(Dirlist {
        options: DirlistOptions::DSTAT,
        path: "/d".into(),
    });
    let ex = pair(request, encoded(&responses, SID));
    assert_eq!(ex.frames, responses.len());
    assert_eq!(ex.answer, Answer::Dirlist(list));
}

#[test]
fn dirlist_shape_must_fit_the_options() {
    let plain = DirList::Plain(vec![Bytes::from_static(b"a")]);
    let mut talk = Conversation::new();
    talk.push_request(
        SID,
        Request::Dirlist(Dirlist {
            options: DirlistOptions::DSTAT,
            path: "/d".into(),
        }),
    )
    .unwrap();
    let f = encoded(&plain.responses(), SID).pop().unwrap();
    assert!(matches!(
        talk.push_response(f),
        Err(PairError::Mismatch {
            request: RequestId::DIRLIST,
            ..
        })
    ));
    // the failed request is gone
    assert_eq!(talk.outstanding(), 0);
}

#[test]
fn pgread_pages_across_frames_with_crc_checked() {
    let data = pattern(3 * 4096 + 1000);
    let (offset, rlen) = (1000u64, 10_000u64);
    let mut wire = BytesMut::new();
    PgReadEncoder::new().with_frame_pages(1).encode_pgread(
        SID,
        &PgReadExtent {
            offset,
            rlen,
            data: &data[offset as usize..],
        },
        &mut wire,
    );
    let fs = frames(wire);
    assert!(fs.len() >= 3);
    let request = Request::Pgread(Pgread {
        fhandle: FHandle([0, 0, 0, 1]),
        offset: offset as i64,
        rlen: rlen as i32,
        args: None,
    });
    let ex = pair(request.clone(), fs.clone());
    let Answer::Pgread(pg) = ex.answer else {
        panic!("{:?}", ex.answer)
    };
    assert_eq!(pg.frames.len(), fs.len());
    assert_eq!(pg.data_len(), rlen);
    assert!(pg.bad_pages.is_empty());
    let joined: Vec<u8> = pg.pages.iter().flat_map(|p| p.data.to_vec()).collect();
    assert_eq!(joined, data[1000..11_000]);
    assert_eq!(pg.pages[0].data.len(), 4096 - 1000);

    // a page whose data no longer matches its crc is reported, not fatal:
    // rebuild the second frame with its first data byte flipped
    let mut bad = fs.clone();
    let mut status = match Response::decode(bad[1].clone()).unwrap() {
        Response::Status(s) => s,
        other => panic!("{other:?}"),
    };
    let mut d = status.data.to_vec();
    d[4] ^= 1;
    status.data = d.into();
    let mut w = BytesMut::new();
    status.encode(SID, &mut w);
    bad[1] = frames(w).pop().unwrap();
    let Answer::Pgread(pg) = pair(request.clone(), bad).answer else {
        panic!()
    };
    assert_eq!(pg.bad_pages, vec![4096]);

    // pages outside the range asked do not fit
    let mut talk = Conversation::new();
    let mut short = request;
    if let Request::Pgread(p) = &mut short {
        p.rlen = 100;
    }
    talk.push_request(SID, short).unwrap();
    let mut err = None;
    for f in fs {
        if let Err(e) = talk.push_response(f) {
            err = Some(e);
        }
    }
    assert!(matches!(err, Some(PairError::Mismatch { .. })), "{err:?}");
}

#[test]
fn readv_segments_across_frames() {
    let data = Bytes::from(pattern(100_000));
    let list: Vec<ReadListEntry> = [(0i64, 30_000i32), (40_000, 30_000), (90_000, 10_000)]
        .iter()
        .map(|&(offset, rlen)| ReadListEntry {
            fhandle: FHandle([0, 0, 0, 2]),
            rlen,
            offset,
        })
        .collect();
    let elements: Vec<(ReadListEntry, Bytes)> = list
        .iter()
        .map(|e| {
            let at = e.offset as usize;
            (*e, data.slice(at..at + e.rlen as usize))
        })
        .collect();
    let mut wire = BytesMut::new();
    ReadvEncoder::new()
        .with_quantum(40_000)
        .encode(SID, &elements, &mut wire);
    let fs = frames(wire);
    assert_eq!(fs.len(), 3, "one element per frame");
    let request = Request::Readv(Readv {
        list: list.clone(),
        ..Default::default()
    });
    let ex = pair(request, fs.clone());
    let Answer::Readv(segments) = ex.answer else {
        panic!()
    };
    assert_eq!(segments.len(), 3);
    for ((h, d), (e, want)) in segments.iter().zip(&elements) {
        assert_eq!((h.offset, h.rlen), (e.offset, e.rlen));
        assert_eq!(d, want);
    }

    // one element fewer asked: the answer does not fit
    let mut talk = Conversation::new();
    talk.push_request(
        SID,
        Request::Readv(Readv {
            list: list[..2].to_vec(),
            ..Default::default()
        }),
    )
    .unwrap();
    let results: Vec<_> = fs.into_iter().map(|f| talk.push_response(f)).collect();
    assert!(matches!(results[2], Err(PairError::Mismatch { .. })));
}

#[test]
fn read_joins_its_frames() {
    let ex = pair(
        Request::Read(Read::default()),
        encoded(
            &[
                Response::OkSoFar(Bytes::from_static(b"hel")),
                Response::OkSoFar(Bytes::from_static(b"lo ")),
                Response::Ok(Bytes::from_static(b"world")),
            ],
            SID,
        ),
    );
    assert_eq!(ex.answer, Answer::Read(Bytes::from_static(b"hello world")));
    assert_eq!(ex.frames, 3);
}

#[test]
fn typed_single_bodies() {
    let mut body = BytesMut::new();
    stat(5000).encode(&mut body);
    let ex = pair(
        Request::Stat(Stat::default()),
        encoded(&[Response::Ok(body.freeze())], SID),
    );
    assert_eq!(ex.answer, Answer::Stat(stat(5000)));

    let ex = pair(
        Request::Stat(Stat {
            options: StatOptions::VFS,
            ..Default::default()
        }),
        encoded(
            &[Response::Ok(Bytes::from_static(b"1 2048 40 0 0 0\0"))],
            SID,
        ),
    );
    assert!(matches!(ex.answer, Answer::StatVfs(v) if v.free_rw == 2048));

    let ex = pair(
        Request::Query(Query {
            infotype: QueryCode::CKSUM,
            ..Default::default()
        }),
        encoded(
            &[Response::Ok(Bytes::from_static(b"adler32 091e01de\0"))],
            SID,
        ),
    );
    assert!(matches!(ex.answer, Answer::Checksum(c) if &c.value[..] == b"091e01de"));

    let ex = pair(
        Request::Open(Open::default()),
        encoded(&[Response::Ok(Bytes::from_static(&[0, 0, 0, 9]))], SID),
    );
    assert!(matches!(ex.answer, Answer::Open(o) if o.fhandle == FHandle([0, 0, 0, 9])));

    let ex = pair(
        Request::Ping(Default::default()),
        encoded(&[Response::Ok(Bytes::new())], SID),
    );
    assert_eq!(ex.answer, Answer::Done);
}

#[test]
fn requests_over_the_outstanding_limit_are_refused() {
    let mut talk = Conversation::new().with_max_outstanding(3);
    for i in 1..=3 {
        talk.push_request(StreamId::from_u16(i), Request::Ping(Default::default()))
            .unwrap();
    }
    // a fourth, on a new streamid or queued behind one, is refused
    for sid in [4, 1] {
        let err = talk
            .push_request(StreamId::from_u16(sid), Request::Ping(Default::default()))
            .unwrap_err();
        assert!(
            matches!(err, PairError::TooManyOutstanding { max: 3, .. }),
            "{err}"
        );
    }
    assert_eq!(talk.outstanding(), 3);
    // an answer frees a place
    let f = encoded(&[Response::Ok(Bytes::new())], StreamId::from_u16(2))
        .pop()
        .unwrap();
    assert!(matches!(
        talk.push_response(f).unwrap(),
        Some(Event::Exchange(_))
    ));
    assert_eq!(talk.outstanding(), 2);
    talk.push_request(StreamId::from_u16(4), Request::Ping(Default::default()))
        .unwrap();
    assert_eq!(talk.outstanding(), 3);
}

#[test]
fn a_body_that_does_not_decode_for_its_request() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Open(Open::default()))
        .unwrap();
    let f = encoded(
        &[Response::Ok(Bytes::from_static(&[0, 0, 0, 9, 1, 2]))],
        SID,
    );
    let err = talk.push_response(f[0].clone()).unwrap_err();
    assert!(
        matches!(
            err,
            PairError::Body {
                request: RequestId::OPEN,
                source: DecodeError::Truncated { .. },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(talk.outstanding(), 0);
}

#[test]
fn error_after_partial_frames_ends_the_request() {
    let ex = pair(
        Request::Read(Read::default()),
        encoded(
            &[
                Response::OkSoFar(Bytes::from_static(b"abc")),
                Response::Error(ServerError::new(ErrorCode::IO_ERROR, "disk")),
            ],
            SID,
        ),
    );
    assert_eq!(ex.frames, 2);
    assert!(matches!(ex.answer, Answer::Error(e) if e.code == ErrorCode::IO_ERROR));
}

#[test]
fn waitresp_then_asynresp() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Open(Open::default()))
        .unwrap();
    let waitresp = WaitResp {
        seconds: 30,
        message: Bytes::new(),
    };
    let f = encoded(&[Response::WaitResp(waitresp.clone())], SID);
    assert_eq!(
        talk.push_response(f[0].clone()).unwrap(),
        Some(Event::Deferred {
            streamid: SID,
            request: RequestId::OPEN,
            waitresp: waitresp.clone()
        })
    );
    assert_eq!(talk.outstanding(), 1);
    let attn = Response::Attn(Attn::AsynResp {
        streamid: SID,
        response: Box::new(Response::Ok(Bytes::from_static(&[0, 0, 0, 3]))),
    });
    let f = encoded(&[attn], StreamId([0, 0]));
    let Some(Event::Exchange(ex)) = talk.push_response(f[0].clone()).unwrap() else {
        panic!()
    };
    assert_eq!(ex.streamid, SID);
    assert_eq!(ex.deferred, Some(waitresp));
    assert!(matches!(ex.answer, Answer::Open(o) if o.fhandle == FHandle([0, 0, 0, 3])));
    talk.finish().unwrap();
}

#[test]
fn waitresp_without_asynresp_is_unanswered() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Open(Open::default()))
        .unwrap();
    let f = encoded(
        &[Response::WaitResp(WaitResp {
            seconds: 1,
            message: Bytes::new(),
        })],
        SID,
    );
    talk.push_response(f[0].clone()).unwrap();
    assert!(matches!(
        talk.finish(),
        Err(PairError::Unanswered {
            deferred: true,
            count: 1,
            ..
        })
    ));
}

#[test]
fn wait_ends_the_request_and_the_resend_queues() {
    let mut talk = Conversation::new();
    // a capture replayed one direction at a time: both sends first
    talk.push_request(SID, Request::Open(Open::default()))
        .unwrap();
    talk.push_request(SID, Request::Open(Open::default()))
        .unwrap();
    let fs = encoded(
        &[
            Response::Wait(Wait {
                seconds: 2,
                message: Bytes::new(),
            }),
            Response::Ok(Bytes::from_static(&[0, 0, 0, 1])),
        ],
        SID,
    );
    let Some(Event::Exchange(first)) = talk.push_response(fs[0].clone()).unwrap() else {
        panic!()
    };
    assert!(matches!(first.answer, Answer::Wait(w) if w.seconds == 2));
    let Some(Event::Exchange(second)) = talk.push_response(fs[1].clone()).unwrap() else {
        panic!()
    };
    assert!(matches!(second.answer, Answer::Open(_)));
    talk.finish().unwrap();
}

#[test]
fn unsolicited_attn() {
    let mut talk = Conversation::new();
    let f = encoded(
        &[Response::Attn(Attn::Message(Bytes::from_static(b"hi")))],
        StreamId([0, 0]),
    );
    assert_eq!(
        talk.push_response(f[0].clone()).unwrap(),
        Some(Event::Unsolicited(Attn::Message(Bytes::from_static(b"hi"))))
    );
    let other = Attn::Other {
        actnum: AttnAction(5000),
        parms: Bytes::new(),
    };
    let f = encoded(&[Response::Attn(other.clone())], StreamId([0, 0]));
    assert_eq!(
        talk.push_response(f[0].clone()).unwrap(),
        Some(Event::Unsolicited(other))
    );
}

#[test]
fn a_response_nobody_asked_for() {
    let mut talk = Conversation::new();
    let f = encoded(&[Response::Ok(Bytes::new())], SID);
    assert_eq!(
        talk.push_response(f[0].clone()),
        Err(PairError::NoRequest {
            streamid: SID,
            status: Status::OK
        })
    );
    // an asynresp for a streamid with nothing outstanding
    let attn = Response::Attn(Attn::AsynResp {
        streamid: SID,
        response: Box::new(Response::Ok(Bytes::new())),
    });
    let f = encoded(&[attn], StreamId([0, 0]));
    assert!(matches!(
        talk.push_response(f[0].clone()),
        Err(PairError::NoRequest { .. })
    ));
}

#[test]
fn status_for_a_read_is_the_wrong_status() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Read(Read::default()))
        .unwrap();
    let s = StatusResponse::with_offset(
        RequestId::READ,
        crate::codes::ResponseType::FINAL,
        0,
        Bytes::new(),
    );
    let mut w = BytesMut::new();
    s.encode(SID, &mut w);
    let f = frames(w).pop().unwrap();
    assert!(matches!(
        talk.push_response(f),
        Err(PairError::WrongStatus {
            status: Status::STATUS,
            ..
        })
    ));
}

#[test]
fn endless_oksofar_is_bounded() {
    let mut talk = Conversation::new().with_max_buffered(100);
    assert_eq!(talk.max_buffered(), 100);
    talk.push_request(SID, Request::Read(Read::default()))
        .unwrap();
    let empty = encoded(&[Response::OkSoFar(Bytes::new())], SID)
        .pop()
        .unwrap();
    let mut held = 0;
    let err = loop {
        match talk.push_response(empty.clone()) {
            Ok(None) => held += 1,
            Ok(other) => panic!("{other:?}"),
            Err(e) => break e,
        }
    };
    // each empty frame costs its 8-byte header
    assert_eq!(held, 12);
    assert_eq!(
        err,
        PairError::TooMuchBuffered {
            streamid: SID,
            request: RequestId::READ,
            would: 104,
            max: 100
        }
    );
    assert_eq!(talk.buffered(), 0, "the partial answer is dropped");
    assert_eq!(talk.outstanding(), 1);
}

#[test]
fn partial_answer_at_end_of_stream() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Read(Read::default()))
        .unwrap();
    talk.push_request(StreamId([0, 9]), Request::Read(Read::default()))
        .unwrap();
    let f = encoded(&[Response::OkSoFar(Bytes::from_static(b"x"))], SID);
    assert_eq!(talk.push_response(f[0].clone()).unwrap(), None);
    let err = talk.finish().unwrap_err();
    assert_eq!(
        err,
        PairError::Unanswered {
            count: 2,
            streamid: SID,
            request: RequestId::READ,
            partial_frames: 1,
            deferred: false
        }
    );
    assert!(err.to_string().contains("1 partial frame"), "{err}");
}

#[test]
fn unknown_status() {
    let mut talk = Conversation::new();
    talk.push_request(SID, Request::Read(Read::default()))
        .unwrap();
    let f = ResponseFrame::new(SID, Status(4999), Bytes::new());
    assert!(matches!(
        talk.push_response(f),
        Err(PairError::UnknownStatus { .. })
    ));
    assert_eq!(talk.outstanding(), 0);
}

proptest! {
    /// Interleaved answers to several reads on distinct streamids, each
    /// split into any number of chunks, pair back to each read's data.
    #[test]
    fn interleaved_reads_pair_back(
        bodies in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5),
            1..6,
        ),
        order in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let mut talk = Conversation::new();
        let mut pending: Vec<(StreamId, std::collections::VecDeque<Response>)> = Vec::new();
        for (i, chunks) in bodies.iter().enumerate() {
            let sid = StreamId::from_u16(i as u16 + 1);
            talk.push_request(sid, Request::Read(Read::default())).unwrap();
            let n = chunks.len();
            let rs = chunks.iter().enumerate().map(|(j, c)| {
                let b = Bytes::from(c.clone());
                if j + 1 == n { Response::Ok(b) } else { Response::OkSoFar(b) }
            });
            pending.push((sid, rs.collect()));
        }
        let mut done = std::collections::HashMap::new();
        let mut pick = order.into_iter().chain(std::iter::repeat(0));
        while !pending.is_empty() {
            let k = pick.next().unwrap() as usize % pending.len();
            let (sid, queue) = &mut pending[k];
            let sid = *sid;
            let r = queue.pop_front().unwrap();
            if queue.is_empty() {
                pending.remove(k);
            }
            let f = encoded(&[r], sid).pop().unwrap();
            if let Some(Event::Exchange(ex)) = talk.push_response(f).unwrap() {
                done.insert(ex.streamid, ex.answer);
            }
        }
        talk.finish().unwrap();
        for (i, chunks) in bodies.iter().enumerate() {
            let want: Vec<u8> = chunks.concat();
            prop_assert_eq!(
                &done[&StreamId::from_u16(i as u16 + 1)],
                &Answer::Read(Bytes::from(want))
            );
        }
    }
}
