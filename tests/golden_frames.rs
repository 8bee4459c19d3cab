//! Golden vectors: real exchanges between the stock xrootd 5.5.3 clients
//! (xrdcp, xrdfs, the Python bindings) and the stock 5.5.3 server, recorded on
//! loopback (tests/vectors, see its README.md). They are split into frames by
//! our decoders, typed by `Request::decode` / `Response::decode` and the body
//! parsers, checked against what the captures show, and re-encoded: every
//! request, every response and every body our encoders can build must come
//! out byte for byte as the stock peer sent it.

use bytes::{Bytes, BytesMut};
use xroot::proto::list::ReadListEntry;
use xroot::proto::request::{
    DirlistOptions, Expect, LocateOptions, MkdirOptions, Mode, OpenOptions, ProtocolFlags,
    QueryCode, Request,
};
use xroot::proto::response::{
    Attn, ChecksumAnswer, DirList, LocateAccess, LocateNode, LocateResponse, LoginResponse,
    OpenResponse, PgReadEncoder, PgReadExtent, PgReadFrame, PgWriteResponse, ProtocolResponse,
    QconfigAnswer, ReadvEncoder, ReadvIter, Response, StatFlags, StatInfo, StatusResponse,
};
use xroot::proto::{
    ErrorCode, FHandle, RequestId as R, ResponseType, ServerHandshake, ServerType, Status as S,
    StreamId,
};
use xroot_testkit::vectors::{adler32, all, encoded, pattern, text, wire, Exchange, Reply};
use xroot_testkit::{request, response};

/// Sizes of the data files on the server (content: [`pattern`]).
const BIG: u64 = 300_000;
const SMALL: u64 = 5_000;
/// Size of the file xrdcp uploads.
const UPLOAD: usize = 100_000;
/// mtime (and atime) pinned on the data files, Unix seconds.
const MTIME: i64 = 1_700_000_000;
/// What XrdCl asks for every open: `kXR_async | kXR_retstat`.
const XRDCL_OPEN: OpenOptions = OpenOptions(OpenOptions::ASYNC.0 | OpenOptions::RETSTAT.0);

/// Per scenario, every request after `kXR_protocol` and `kXR_login`, in the
/// order sent, with the statuses of the frames that answered it
/// (`request:status+status`, the C names without `kXR_`; see
/// [`xroot_testkit::vectors::parse_script`]).
const EXPECTED: &[(&str, &str)] = &[
    ("dirlist", "stat:ok locate:ok dirlist:ok"),
    ("dirlist_stat", "stat:ok locate:ok dirlist:ok"),
    ("mkdir", "mkdir:ok"),
    ("mv", "mv:ok"),
    ("open_missing", "open:error"),
    ("open_read", "open:ok read:ok close:ok"),
    ("open_write", "open:ok write:ok close:ok"),
    ("pgread", "open:ok pgread:status close:ok"),
    (
        "pgread_parallel",
        "open:ok pgread:status pgread:status pgread:status pgread:status pgread:status close:ok",
    ),
    ("pgread_unaligned", "open:ok pgread:status close:ok"),
    ("pgwrite", "stat:error open:ok pgwrite:status close:ok"),
    ("ping", "ping:ok"),
    ("query_checksum", "query:waitresp+attn query:ok"),
    ("query_config", "query:ok"),
    ("query_config_xrdfs", "query:ok"),
    ("read_eof", "open:ok read:oksofar+ok close:ok"),
    ("readv", "open:ok readv:ok close:ok"),
    ("rm", "rm:ok"),
    ("rmdir", "rmdir:ok"),
    ("stat_handle", "open:ok stat:ok close:ok"),
    ("stat_missing", "stat:error"),
    ("stat_path", "stat:ok"),
    ("write", "stat:error open:ok write:ok close:ok"),
];

#[test]
fn every_vector_has_an_expected_script() {
    let mut listed: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    listed.sort();
    assert_eq!(xroot_testkit::vectors::names(), listed);
}

#[test]
fn splitting_does_not_depend_on_how_the_bytes_arrive() {
    for name in xroot_testkit::vectors::names() {
        let (c2s, s2c) = xroot_testkit::vectors::load(&name);
        let requests = xroot_testkit::vectors::split_requests(&name, &c2s, 0);
        let responses = xroot_testkit::vectors::split_responses(&name, &s2c, 0);
        assert!(requests.len() >= 3 && responses.len() >= 4, "{name}");
        for chunk in [1, 3, 4099] {
            assert_eq!(
                xroot_testkit::vectors::split_requests(&name, &c2s, chunk),
                requests,
                "{name}/{chunk}"
            );
            assert_eq!(
                xroot_testkit::vectors::split_responses(&name, &s2c, chunk),
                responses,
                "{name}/{chunk}"
            );
        }
    }
}

#[test]
fn truncated_streams_are_reported_at_eof() {
    let (c2s, s2c) = xroot_testkit::vectors::load("ping");
    let mut dec = xroot::proto::RequestDecoder::new();
    let mut buf = BytesMut::from(&c2s[..c2s.len() - 1]);
    while dec.decode(&mut buf).unwrap().is_some() {}
    assert!(dec.decode_eof(&mut buf).is_err());
    let mut dec = xroot::proto::ResponseDecoder::new();
    let mut buf = BytesMut::from(&s2c[..s2c.len() - 1]);
    while dec.decode(&mut buf).unwrap().is_some() {}
    assert!(dec.decode_eof(&mut buf).is_err());
}

/// Every request and every response types without error, is known, and
/// encodes back to exactly the bytes the stock peer sent.
#[test]
fn every_frame_types_and_reencodes_byte_for_byte() {
    for ex in all() {
        let name = &ex.name;
        for f in &ex.requests {
            let typed = Request::decode(f.clone())
                .unwrap_or_else(|e| panic!("{name}: {:?}: {e}", f.header));
            assert!(!matches!(typed, Request::Unknown(_)), "{name}");
            assert_eq!(typed.id(), f.header.requestid);
            let again = encoded(|b| typed.encode(f.header.streamid, b));
            assert_eq!(again, wire(f), "{name}: {typed:?}");
        }
        for f in &ex.responses[1..] {
            let typed = Response::decode(f.clone())
                .unwrap_or_else(|e| panic!("{name}: {:?}: {e}", f.header));
            assert!(!matches!(typed, Response::Unknown(_)), "{name}");
            assert_eq!(typed.status(), f.header.status);
            let again = encoded(|b| typed.encode(f.header.streamid, b));
            assert_eq!(again, encoded(|b| f.encode(b)), "{name}: {typed:?}");
        }
    }
}

/// PROTOCOL.md §2, §5.1, §5.2 and Appendix 1: handshake, `kXR_protocol` with
/// clientpv 0x511, `kXR_login`, both on streamid 0; the server is a 0x511
/// data server with protocol flags 0x00300001 and a 16-byte login reply.
#[test]
fn every_session_starts_with_protocol_and_login() {
    for ex in all() {
        let name = &ex.name;
        let hs = &ex.responses[0];
        assert_eq!(
            (hs.header.streamid, hs.header.status, hs.header.dlen),
            (StreamId::ZERO, S::OK, 8)
        );
        let hs = ServerHandshake::from_body(&hs.body).unwrap();
        assert_eq!(
            (hs.protover, hs.server_type),
            (0x511, ServerType::DATA_SERVER),
            "{name}"
        );

        let replies = ex.replies();
        let (protocol, login) = (&replies[0], &replies[1]);
        assert_eq!(protocol.request.header.streamid, StreamId::ZERO);
        let p = request!(protocol, Protocol);
        assert_eq!(p.clientpv, 0x511, "{name}");
        let want = ProtocolFlags::SECREQS | ProtocolFlags::ABLE_TLS | ProtocolFlags::BIFREQS;
        assert_eq!(p.flags, want, "{name}");
        assert_eq!(p.expect, Expect::LOGIN, "{name}");
        let body = protocol.ok_body();
        let pr = ProtocolResponse::decode(body.clone()).unwrap();
        assert_eq!((pr.pval, pr.flags.0), (0x511, 0x0030_0001), "{name}");
        assert_eq!(
            (&pr.bifinfo, &pr.security),
            (&None, &None),
            "{name}: no B or S record"
        );
        assert_eq!(encoded(|b| pr.encode(b)), body);

        assert_eq!(login.request.header.streamid, StreamId::ZERO);
        let l = request!(login, Login);
        assert_eq!(l.username(), b"root", "{name}");
        assert_eq!(
            (
                l.capver.version(),
                l.capver.contains(xroot::proto::request::Capver::ASYNCAP)
            ),
            (5, true)
        );
        let cgi = l.cgi_str().unwrap();
        assert!(
            cgi.starts_with("xrd.cc=us&xrd.tz=0&xrd.appname="),
            "{name}: {cgi}"
        );
        assert!(
            cgi.ends_with("&xrd.hostname=vm&xrd.rn=v5.5.3"),
            "{name}: {cgi}"
        );
        let body = login.ok_body();
        let lr = LoginResponse::decode(body.clone()).unwrap();
        assert_eq!(lr.sec, None, "{name}: no security");
        assert_eq!(encoded(|b| lr.encode(b)), body);

        for r in &replies[2..] {
            assert_ne!(r.request.header.streamid, StreamId::ZERO, "{name}");
        }
    }
}

/// Every response is matched by streamid to a request (see
/// [`Exchange::replies`]) and every request gets the expected statuses.
#[test]
fn requests_and_statuses_follow_the_script() {
    for (name, script) in EXPECTED {
        let replies = Exchange::load(name).replies();
        let got: Vec<(R, Vec<S>)> = replies[2..]
            .iter()
            .map(|r| (r.request.header.requestid, r.statuses()))
            .collect();
        assert_eq!(got, xroot_testkit::vectors::parse_script(script), "{name}");
    }
}

/// PROTOCOL.md §8.1: every `kXR_status` (its crc32c checked by
/// `StatusResponse::decode`) names its request, is final, and carries the
/// 8-byte offset info.
#[test]
fn status_frames_are_consistent() {
    let mut seen = 0;
    for ex in all() {
        for reply in ex.replies() {
            for f in reply
                .responses
                .iter()
                .filter(|f| f.header.status == S::STATUS)
            {
                let st = StatusResponse::decode(&f.header, f.body.clone()).unwrap();
                assert_eq!(st.requestid, reply.request.header.requestid, "{}", ex.name);
                assert_eq!(st.resptype, ResponseType::FINAL);
                assert_eq!(st.info.len(), 8);
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 8, "pgread 1 + 5 + 1 frames, pgwrite 1");
}

/// The open of `ex` (PROTOCOL.md §6.1): XrdCl's options plus `extra`, the
/// path, and a reply with fhandle, cpsize 0 and the stat of a `size`-byte
/// file, which re-encodes exactly. Returns the fhandle.
fn check_open(ex: &Exchange, extra: OpenOptions, path: &str, size: u64) -> FHandle {
    let reply = ex.reply(R::OPEN);
    let open = request!(reply, Open);
    assert_eq!(open.options, XRDCL_OPEN | extra, "{}", ex.name);
    assert_eq!(open.path_str().unwrap(), path);
    let body = reply.ok_body();
    let or = OpenResponse::decode(body.clone()).unwrap();
    assert_eq!(or.compression.unwrap().cpsize, 0);
    let stat = or.stat.as_ref().unwrap();
    assert_eq!(stat.size, size, "{}", ex.name);
    assert_eq!(stat.flags, StatFlags::READABLE | StatFlags::WRITABLE);
    assert_eq!(encoded(|b| or.encode(b)), body);
    assert_eq!(request!(ex.reply(R::CLOSE), Close).fhandle, or.fhandle);
    or.fhandle
}

/// The stat text of `body` (PROTOCOL.md §7.1), checked to re-encode exactly.
fn stat_of(body: &Bytes) -> StatInfo {
    let stat = StatInfo::decode(body.clone()).unwrap();
    assert_eq!(encoded(|b| stat.encode(b)), body);
    stat
}

#[test]
fn plain_reads_return_the_file() {
    // open_read: the whole 5000-byte file in one kXR_ok
    let ex = Exchange::load("open_read");
    let fh = check_open(&ex, OpenOptions::READ, "/small.bin", SMALL);
    let reply = ex.reply(R::READ);
    let read = request!(reply, Read);
    assert_eq!((read.fhandle, read.offset, read.rlen), (fh, 0, 5000));
    let args = read.args.expect("Appendix 5: XrdCl always sends read_args");
    assert_eq!((args.pathid, args.preread.len()), (0, 0));
    assert_eq!(reply.ok_body(), pattern(0, 5000));

    // read_eof: 200 bytes asked at 4900: kXR_oksofar with the 100 there are,
    // then an empty kXR_ok (PROTOCOL.md §6.3)
    let ex = Exchange::load("read_eof");
    check_open(&ex, OpenOptions::READ, "/small.bin", SMALL);
    let reply = ex.reply(R::READ);
    let read = request!(reply, Read);
    assert_eq!((read.offset, read.rlen), (4900, 200));
    assert_eq!(response!(reply, S::OKSOFAR, OkSoFar), pattern(4900, 100));
    assert!(reply.ok_body().is_empty());
}

#[test]
fn stat_by_handle_and_by_path() {
    let ex = Exchange::load("stat_handle");
    let fh = check_open(&ex, OpenOptions::READ, "/big.bin", BIG);
    let reply = ex.reply(R::STAT);
    let stat = request!(reply, Stat);
    assert!(stat.path.is_empty(), "dlen 0: by handle");
    assert_eq!(stat.fhandle, fh);
    let by_handle = stat_of(&reply.ok_body());
    let open_stat = OpenResponse::decode(ex.reply(R::OPEN).ok_body())
        .unwrap()
        .stat;
    assert_eq!(
        Some(&by_handle),
        open_stat.as_ref(),
        "same as the open's retstat"
    );

    let ex = Exchange::load("stat_path");
    let reply = ex.reply(R::STAT);
    assert_eq!(request!(reply, Stat).path_str().unwrap(), "/big.bin");
    let st = stat_of(&reply.ok_body());
    assert_eq!(
        (st.size, st.flags, st.mtime),
        (BIG, StatFlags::READABLE | StatFlags::WRITABLE, MTIME)
    );
    assert!(!st.is_dir());
    let x = st.extended.unwrap();
    assert_eq!(
        (x.mode, &x.owner[..], &x.group[..]),
        (0o644, &b"xrootd"[..], &b"xrootd"[..])
    );
}

/// PROTOCOL.md §6.4: the reply is the elements in list order, each a 16-byte
/// header echoing fhandle, rlen and offset, then the data; our
/// `ReadvEncoder` builds the same frame.
#[test]
fn readv_elements_follow_the_list() {
    let ex = Exchange::load("readv");
    let fh = check_open(&ex, OpenOptions::READ, "/big.bin", BIG);
    let reply = ex.reply(R::READV);
    let readv = request!(reply, Readv);
    let asked: Vec<(FHandle, i32, i64)> = readv
        .list
        .iter()
        .map(|e| (e.fhandle, e.rlen, e.offset))
        .collect();
    assert_eq!(asked, [(fh, 100, 0), (fh, 4096, 5000), (fh, 1000, 200_000)]);
    let got: Vec<(ReadListEntry, Bytes)> = ReadvIter::new(reply.ok_body())
        .map(Result::unwrap)
        .collect();
    assert_eq!(got.len(), 3);
    for ((entry, data), want) in got.iter().zip(&readv.list) {
        assert_eq!(entry, want);
        assert_eq!(data, &pattern(want.offset as u64, want.rlen as usize));
    }
    let sid = reply.request.header.streamid;
    let ours = encoded(|b| ReadvEncoder::new().encode(sid, &got, b));
    assert_eq!(ours, encoded(|b| reply.only(S::OK).encode(b)));
}

/// Checks every pgread of `name` (PROTOCOL.md §6.5): the request, the
/// frame's offset and pages (absolute 4 kB alignment, good crc32c, the
/// file's data), and that our `PgReadEncoder` builds the same frames from
/// the file. Returns the (offset, data length) each request got.
fn check_pgreads(name: &str) -> Vec<(u64, usize)> {
    let ex = Exchange::load(name);
    let fh = check_open(&ex, OpenOptions::READ, "/big.bin", BIG);
    let file = pattern(0, BIG as usize);
    let mut got = Vec::new();
    for reply in ex
        .replies()
        .iter()
        .filter(|r| r.request.header.requestid == R::PGREAD)
    {
        let pg = request!(reply, Pgread);
        assert_eq!((pg.fhandle, pg.pathid(), pg.reqflags().0), (fh, 0, 0));
        let (offset, rlen) = (pg.offset as u64, pg.rlen as u64);
        let frame = PgReadFrame::from_status(&response!(reply, S::STATUS, Status)).unwrap();
        assert!(frame.is_final());
        assert_eq!(frame.offset, offset);
        assert_eq!(frame.bad_pages().unwrap(), Vec::<u64>::new(), "{name}");
        let mut at = offset;
        for page in frame.pages() {
            let page = page.unwrap();
            assert_eq!(page.offset, at);
            assert!(
                page.offset % 4096 == 0 || page.offset == offset,
                "aligned pages"
            );
            assert_eq!(page.data, pattern(at, page.data.len()));
            at += page.data.len() as u64;
        }
        assert_eq!(at, (offset + rlen).min(BIG), "{name}: all asked, up to EOF");
        assert_eq!(frame.data_len().unwrap(), at - offset);
        got.push((offset, (at - offset) as usize));

        let extent = PgReadExtent {
            offset,
            rlen,
            data: &file[offset as usize..],
        };
        let sid = reply.request.header.streamid;
        let ours = encoded(|b| PgReadEncoder::new().encode_pgread(sid, &extent, b));
        let theirs = encoded(|b| reply.responses.iter().for_each(|f| f.encode(b)));
        assert!(
            ours == theirs,
            "{name}: our pgread frames differ from the stock server's"
        );
    }
    got
}

#[test]
fn pgread_pages_are_aligned_and_checksummed() {
    assert_eq!(check_pgreads("pgread"), [(0, 300_000)]);
    assert_eq!(check_pgreads("pgread_unaligned"), [(1000, 299_000)]);
    // XRD_CPCHUNKSIZE=65536: five chunks, the last one short
    let mut chunks: Vec<(u64, usize)> = (0..5).map(|i| (i * 65536, 65536)).collect();
    chunks[4].1 = 300_000 - 4 * 65536;
    assert_eq!(check_pgreads("pgread_parallel"), chunks);

    // the unaligned read's first page runs to the next 4 kB boundary
    let ex = Exchange::load("pgread_unaligned");
    let status = response!(ex.reply(R::PGREAD), S::STATUS, Status);
    let frame = PgReadFrame::from_status(&status).unwrap();
    assert_eq!(frame.pages().next().unwrap().unwrap().data.len(), 3096);
    assert_eq!(
        frame.wire.len(),
        299_000 + 4 * 74,
        "74 pages, 4 crc bytes each"
    );
}

/// pgread_parallel keeps 4 requests in flight on 4 streamids and reuses
/// the first streamid once its request is done.
#[test]
fn parallel_pgreads_use_distinct_streamids() {
    let ex = Exchange::load("pgread_parallel");
    let sids: Vec<u16> = ex.requests[2..]
        .iter()
        .map(|r| r.header.streamid.to_u16())
        .collect();
    assert_eq!(
        sids,
        [0x0100, 0x0100, 0x0200, 0x0300, 0x0400, 0x0100, 0x0200]
    );
}

#[test]
fn writes_carry_the_data() {
    // Python: open new (mode 0644), one 5000-byte kXR_write at 0, close
    let ex = Exchange::load("open_write");
    let fh = check_open(&ex, OpenOptions::NEW, "/written.bin", 0);
    assert_eq!(
        request!(ex.reply(R::OPEN), Open).mode,
        Mode::from_posix(0o644)
    );
    let reply = ex.reply(R::WRITE);
    let write = request!(reply, Write);
    assert_eq!((write.fhandle, write.offset, write.pathid), (fh, 0, 0));
    assert_eq!(write.data, pattern(0, 5000));
    assert!(reply.ok_body().is_empty());

    // xrdcp with XRD_CPUSEPGWRTRD=0: stat (NotFound), open new+updt, one kXR_write
    let ex = Exchange::load("write");
    let new_updt = OpenOptions::NEW | OpenOptions::UPDATE;
    let fh = check_open(&ex, new_updt, "/up_write.bin?oss.asize=100000", 0);
    let write = request!(ex.reply(R::WRITE), Write);
    assert_eq!((write.fhandle, write.offset), (fh, 0));
    assert_eq!(write.data, pattern(0, UPLOAD));
}

/// PROTOCOL.md §6.7: the pgwrite payload is `[crc][page]…` with dlen counting
/// the crcs; the reply is one final `kXR_status` with the request offset as
/// info and no CSE block.
#[test]
fn pgwrite_pages_are_checksummed() {
    let ex = Exchange::load("pgwrite");
    let new_updt = OpenOptions::NEW | OpenOptions::UPDATE;
    let fh = check_open(&ex, new_updt, "/up_pgwrite.bin?oss.asize=100000", 0);
    let reply = ex.reply(R::PGWRITE);
    let pgw = request!(reply, Pgwrite);
    assert_eq!((pgw.fhandle, pgw.offset, pgw.reqflags.0), (fh, 0, 0));
    assert_eq!(pgw.payload.len(), UPLOAD + 25 * 4);
    assert_eq!(pgw.data_len().unwrap(), UPLOAD as u64);
    let mut data = Vec::new();
    for page in pgw.pages() {
        let page = page.unwrap();
        assert!(page.is_valid(), "crc of page at {}", page.offset);
        data.extend_from_slice(&page.data);
    }
    assert_eq!(data, pattern(0, UPLOAD));
    assert_eq!(
        xroot::proto::request::Pgwrite::new(fh, 0, &data),
        pgw,
        "our pages match xrdcp's"
    );

    let status = response!(reply, S::STATUS, Status);
    let answer = PgWriteResponse::from_status(&status).unwrap();
    assert_eq!(
        (answer.offset, &answer.cse),
        (0, &None),
        "no checksum errors"
    );
    assert_eq!(answer.to_status(), status);
}

#[test]
fn missing_files_are_not_found() {
    for (name, id, msg) in [
        (
            "open_missing",
            R::OPEN,
            "Unable to open /missing.bin; no such file or directory",
        ),
        (
            "stat_missing",
            R::STAT,
            "Unable to locate /missing.bin; no such file or directory",
        ),
        (
            "write",
            R::STAT,
            "Unable to locate /up_write.bin; no such file or directory",
        ),
        (
            "pgwrite",
            R::STAT,
            "Unable to locate /up_pgwrite.bin; no such file or directory",
        ),
    ] {
        let reply = Exchange::load(name).reply(id);
        let err = response!(reply, S::ERROR, Error);
        assert_eq!(
            (err.code, err.message_lossy()),
            (ErrorCode::NOT_FOUND, msg.into()),
            "{name}"
        );
        assert_eq!(reply.only(S::ERROR).body.last(), Some(&0), "NUL-terminated");
    }
}

/// Appendix 9: an uncached checksum is answered with `kXR_waitresp`, then a
/// `kXR_attn` asynresp on streamid 0 carrying the real reply for the
/// request's streamid; the second query is answered directly. Both clients
/// end query arguments with a NUL.
#[test]
fn checksum_arrives_as_asynresp() {
    let ex = Exchange::load("query_checksum");
    let replies = ex.replies();
    let adler = format!("{:08x}", adler32(&pattern(0, BIG as usize)));
    let check_answer = |body: &Bytes| {
        let answer = ChecksumAnswer::decode(body.clone()).unwrap();
        assert_eq!(
            (&answer.alg[..], &answer.value[..]),
            (&b"adler32"[..], adler.as_bytes())
        );
        assert_eq!(encoded(|b| answer.encode(b)), body);
    };
    for q in &replies[2..] {
        let query = request!(q, Query);
        assert_eq!(query.infotype, QueryCode::CKSUM);
        assert_eq!(query.args, text("/big.bin\0"), "the client sends a NUL");
    }
    let first = &replies[2];
    let wait = response!(first, S::WAITRESP, WaitResp);
    assert_eq!((wait.seconds, wait.message), (600, text("Job scheduled.")));
    assert_eq!(first.only(S::ATTN).header.streamid, StreamId::ZERO);
    let Attn::AsynResp { streamid, response } = response!(first, S::ATTN, Attn) else {
        panic!("not an asynresp")
    };
    assert_eq!(streamid, first.request.header.streamid);
    let Response::Ok(body) = *response else {
        panic!("the asynresp carries {response:?}")
    };
    check_answer(&body);
    check_answer(&replies[3].ok_body());
}

/// PROTOCOL.md §7.7: Qconfig answers one `value\n` line per key, no NUL.
#[test]
fn query_config_lines() {
    for (name, keys, values) in [
        (
            "query_config",
            "readv_iov_max readv_ior_max version",
            &["1024", "2097136", "v5.5.3"][..],
        ),
        ("query_config_xrdfs", "readv_iov_max", &["1024"][..]),
    ] {
        let reply = Exchange::load(name).reply(R::QUERY);
        let query = request!(reply, Query);
        assert_eq!(query.infotype, QueryCode::CONFIG);
        assert_eq!(query.args, text(&format!("{keys}\0")), "{name}");
        let body = reply.ok_body();
        assert_eq!(body.last(), Some(&b'\n'), "no NUL");
        let answer = QconfigAnswer::decode(body.clone()).unwrap();
        let keys: Vec<&str> = keys.split(' ').collect();
        let pairs = answer.with_keys(&keys).unwrap();
        let got: Vec<(&str, Bytes)> = pairs.into_iter().collect();
        let want: Vec<(&str, Bytes)> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| (*k, text(v)))
            .collect();
        assert_eq!(got, want);
        assert_eq!(encoded(|b| answer.encode(b)), body);
    }
}

/// PROTOCOL.md §7.3, §7.5: xrdfs ls stats the directory, locates it, then
/// lists it; the plain list ends in NUL, the dstat one starts with the
/// `".\n0 0 0 0\n"` sentinel and pairs names with stat lines. Our
/// `DirList::responses` rebuilds the stock server's reply.
#[test]
fn dirlist_plain_and_with_stat() {
    for (name, options) in [
        ("dirlist", DirlistOptions(0)),
        ("dirlist_stat", DirlistOptions::DSTAT),
    ] {
        let ex = Exchange::load(name);
        let dir = stat_of(&ex.reply(R::STAT).ok_body());
        assert!(
            dir.is_dir() && dir.flags.contains(StatFlags::IS_DIR),
            "{name}"
        );

        let reply = ex.reply(R::LOCATE);
        let locate = request!(reply, Locate);
        let want = LocateOptions::FOR_DIRLIST | LocateOptions::PREFNAME | LocateOptions::COMPRESS;
        assert_eq!(
            (locate.options, locate.path_str().unwrap()),
            (want, "*/dir")
        );
        let body = reply.ok_body();
        let located = LocateResponse::decode(body.clone()).unwrap();
        let entries: Vec<_> = located
            .entries
            .iter()
            .map(|e| (e.node, e.access, e.address.clone()))
            .collect();
        assert_eq!(
            entries,
            [(
                LocateNode::ServerOnline,
                LocateAccess::ReadWrite,
                text("[::127.0.0.1]:11294")
            )]
        );
        assert_eq!(encoded(|b| located.encode(b)), body);

        let reply = ex.reply(R::DIRLIST);
        let ls = request!(reply, Dirlist);
        assert_eq!(
            (ls.options, ls.path_str().unwrap()),
            (options, "/dir"),
            "{name}"
        );
        let body = reply.ok_body();
        let list = DirList::decode(body.clone()).unwrap();
        let names: Vec<Bytes> = match &list {
            DirList::Plain(names) => names.clone(),
            DirList::Stat(entries) => {
                let sizes: Vec<u64> = entries.iter().map(|e| e.stat.size).collect();
                assert_eq!(sizes, [1000, 5000, 4096]);
                assert!(entries[2].stat.is_dir());
                entries.iter().map(|e| e.name.clone()).collect()
            }
        };
        assert_eq!(
            matches!(list, DirList::Stat(_)),
            options == DirlistOptions::DSTAT
        );
        assert_eq!(names, [text("a.bin"), text("b.bin"), text("sub")]);
        assert_eq!(
            list.responses(),
            [Response::Ok(body)],
            "{name}: our reply is the stock one"
        );
    }
}

/// PROTOCOL.md §7.4: paths as payloads, mkdir's mkpath option and mode,
/// mv's arg1len pointing at the space; each answered by an empty kXR_ok.
#[test]
fn namespace_requests() {
    let reply = |name: &str, id: R| -> Reply {
        let reply = Exchange::load(name).reply(id);
        assert!(reply.ok_body().is_empty(), "{name}");
        reply
    };
    let mkdir = request!(reply("mkdir", R::MKDIR), Mkdir);
    assert_eq!(mkdir.path_str().unwrap(), "/newdir/sub");
    assert_eq!(
        (mkdir.options, mkdir.mode),
        (MkdirOptions::MKDIRPATH, Mode::from_posix(0o750))
    );
    let mv = request!(reply("mv", R::MV), Mv);
    assert_eq!(mv.arg1len, 9);
    assert_eq!(mv.paths().unwrap(), (text("/tomv.bin"), text("/moved.bin")));
    assert_eq!(
        mv.payload,
        xroot::proto::request::Mv::new(b"/tomv.bin", b"/moved.bin").payload
    );
    assert_eq!(
        request!(reply("rm", R::RM), Rm).path_str().unwrap(),
        "/moved.bin"
    );
    assert_eq!(
        request!(reply("rmdir", R::RMDIR), Rmdir)
            .path_str()
            .unwrap(),
        "/newdir/sub"
    );
    request!(reply("ping", R::PING), Ping);
}

/// Every capture pairs fully through `xroot_proto::exchange::Conversation`:
/// all requests pushed first (the two directions are stored apart), then
/// every response after the handshake reply; each request gets exactly one
/// typed answer, none decodes as raw where a typed body exists, and nothing
/// is left over.
#[test]
fn every_capture_pairs_with_typed_answers() {
    use xroot::proto::exchange::{Answer, Conversation, Event};
    let mut seen_deferred = 0;
    for ex in all() {
        let name = &ex.name;
        let mut talk = Conversation::new();
        for r in &ex.requests {
            talk.push_request_frame(r.clone()).unwrap();
        }
        let mut answers = Vec::new();
        for f in &ex.responses[1..] {
            match talk.push_response(f.clone()) {
                Ok(Some(Event::Exchange(x))) => answers.push(x),
                Ok(Some(Event::Deferred { .. })) => seen_deferred += 1,
                Ok(None) => {}
                Ok(Some(other)) => panic!("{name}: {other:?}"),
                Err(e) => panic!("{name}: {:?}: {e}", f.header),
            }
        }
        assert_eq!(talk.buffered(), 0, "{name}");
        talk.finish().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(answers.len(), ex.requests.len(), "{name}");
        for x in &answers {
            if let Answer::Raw(b) = &x.answer {
                panic!("{name}: {:?} answered raw {b:?}", x.request.id());
            }
            if let Answer::Pgread(pg) = &x.answer {
                assert!(pg.bad_pages.is_empty(), "{name}");
            }
        }
        let find = |id: R| answers.iter().find(|x| x.request.id() == id);
        match name.as_str() {
            "dirlist_stat" => match &find(R::DIRLIST).unwrap().answer {
                Answer::Dirlist(DirList::Stat(e)) => assert!(!e.is_empty()),
                other => panic!("{other:?}"),
            },
            "pgread" | "pgread_unaligned" | "pgread_parallel" => {
                let total: u64 = answers
                    .iter()
                    .filter_map(|x| match &x.answer {
                        Answer::Pgread(pg) => Some(pg.data_len()),
                        _ => None,
                    })
                    .sum();
                assert!(total > 0, "{name}");
            }
            "query_checksum" => {
                let x = find(R::QUERY).unwrap();
                assert!(
                    x.deferred.is_some(),
                    "{name}: the checksum came as asynresp"
                );
                assert!(matches!(&x.answer, Answer::Checksum(c) if &c.alg[..] == b"adler32"));
            }
            _ => {}
        }
    }
    assert!(seen_deferred > 0, "a capture has a kXR_waitresp");
}
