//! Golden vectors: real exchanges between the stock xrootd 5.5.3 clients
//! (xrdcp, xrdfs, the Python bindings) and the stock 5.5.3 server, recorded on
//! loopback (tests/vectors, see its README.md), split into frames by our
//! decoders. The frame-level facts asserted here are the ones the captures
//! show; the body layouts are read by hand, PROTOCOL.md sections cited.

mod support;

use bytes::Bytes;
use support::{asynresp_header, be_i32, be_i64, pattern, Exchange, Reply};
use xroot::proto::list::ReadListEntry;
use xroot::proto::page::{crc32c, PageIter};
use xroot::proto::{
    ErrorCode, RequestId as R, ResponseFrame, ResponseType, ServerHandshake, ServerType,
    Status as S, StreamId,
};

/// Sizes of the data files on the server (content: [`pattern`]).
const BIG: u64 = 300_000;
const SMALL: u64 = 5_000;
/// Size of the file xrdcp uploads.
const UPLOAD: u64 = 100_000;

/// Per scenario, every request after `kXR_protocol` and `kXR_login`, in the
/// order sent, with the statuses of the frames that answered it.
type Script = &'static [(R, &'static [S])];
const EXPECTED: &[(&str, Script)] = &[
    (
        "dirlist",
        &[
            (R::STAT, &[S::OK]),
            (R::LOCATE, &[S::OK]),
            (R::DIRLIST, &[S::OK]),
        ],
    ),
    (
        "dirlist_stat",
        &[
            (R::STAT, &[S::OK]),
            (R::LOCATE, &[S::OK]),
            (R::DIRLIST, &[S::OK]),
        ],
    ),
    ("mkdir", &[(R::MKDIR, &[S::OK])]),
    ("mv", &[(R::MV, &[S::OK])]),
    ("open_missing", &[(R::OPEN, &[S::ERROR])]),
    (
        "open_read",
        &[
            (R::OPEN, &[S::OK]),
            (R::READ, &[S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "open_write",
        &[
            (R::OPEN, &[S::OK]),
            (R::WRITE, &[S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "pgread",
        &[
            (R::OPEN, &[S::OK]),
            (R::PGREAD, &[S::STATUS]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "pgread_parallel",
        &[
            (R::OPEN, &[S::OK]),
            (R::PGREAD, &[S::STATUS]),
            (R::PGREAD, &[S::STATUS]),
            (R::PGREAD, &[S::STATUS]),
            (R::PGREAD, &[S::STATUS]),
            (R::PGREAD, &[S::STATUS]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "pgread_unaligned",
        &[
            (R::OPEN, &[S::OK]),
            (R::PGREAD, &[S::STATUS]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "pgwrite",
        &[
            (R::STAT, &[S::ERROR]),
            (R::OPEN, &[S::OK]),
            (R::PGWRITE, &[S::STATUS]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    ("ping", &[(R::PING, &[S::OK])]),
    (
        "query_checksum",
        &[(R::QUERY, &[S::WAITRESP, S::ATTN]), (R::QUERY, &[S::OK])],
    ),
    ("query_config", &[(R::QUERY, &[S::OK])]),
    ("query_config_xrdfs", &[(R::QUERY, &[S::OK])]),
    (
        "read_eof",
        &[
            (R::OPEN, &[S::OK]),
            (R::READ, &[S::OKSOFAR, S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    (
        "readv",
        &[
            (R::OPEN, &[S::OK]),
            (R::READV, &[S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    ("rm", &[(R::RM, &[S::OK])]),
    ("rmdir", &[(R::RMDIR, &[S::OK])]),
    (
        "stat_handle",
        &[
            (R::OPEN, &[S::OK]),
            (R::STAT, &[S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
    ("stat_missing", &[(R::STAT, &[S::ERROR])]),
    ("stat_path", &[(R::STAT, &[S::OK])]),
    (
        "write",
        &[
            (R::STAT, &[S::ERROR]),
            (R::OPEN, &[S::OK]),
            (R::WRITE, &[S::OK]),
            (R::CLOSE, &[S::OK]),
        ],
    ),
];

fn all() -> Vec<Exchange> {
    support::names().iter().map(|n| Exchange::load(n)).collect()
}

/// `Bytes` of a `&str`, for comparing bodies.
fn text(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The big-endian `u16` at `at`.
fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[test]
fn every_vector_has_an_expected_script() {
    let mut listed: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    listed.sort();
    assert_eq!(support::names(), listed);
}

#[test]
fn splitting_does_not_depend_on_how_the_bytes_arrive() {
    for name in support::names() {
        let (c2s, s2c) = support::load(&name);
        let requests = support::split_requests(&name, &c2s, 0);
        let responses = support::split_responses(&name, &s2c, 0);
        assert!(requests.len() >= 3 && responses.len() >= 4, "{name}");
        for chunk in [1, 3, 4099] {
            assert_eq!(
                support::split_requests(&name, &c2s, chunk),
                requests,
                "{name}/{chunk}"
            );
            assert_eq!(
                support::split_responses(&name, &s2c, chunk),
                responses,
                "{name}/{chunk}"
            );
        }
    }
}

#[test]
fn truncated_streams_are_reported_at_eof() {
    let (c2s, s2c) = support::load("ping");
    let mut dec = xroot::proto::RequestDecoder::new();
    let mut buf = bytes::BytesMut::from(&c2s[..c2s.len() - 1]);
    while dec.decode(&mut buf).unwrap().is_some() {}
    assert!(dec.decode_eof(&mut buf).is_err());
    let mut dec = xroot::proto::ResponseDecoder::new();
    let mut buf = bytes::BytesMut::from(&s2c[..s2c.len() - 1]);
    while dec.decode(&mut buf).unwrap().is_some() {}
    assert!(dec.decode_eof(&mut buf).is_err());
}

/// PROTOCOL.md §2, §5.1, §5.2 and Appendix 1: handshake, `kXR_protocol` with
/// clientpv 0x511, `kXR_login`, both on streamid 0; the server is a 0x511
/// data server with protocol flags 0x00300001 and a 16-byte login reply.
#[test]
fn every_session_starts_with_protocol_and_login() {
    for ex in all() {
        let name = &ex.name;
        let [protocol, login, rest @ ..] = &ex.requests[..] else {
            panic!("{name}: fewer than two requests")
        };
        assert_eq!(protocol.header.requestid, R::PROTOCOL, "{name}");
        assert_eq!(protocol.header.streamid, StreamId::ZERO, "{name}");
        assert_eq!(be_i32(&protocol.header.params, 0), 0x511, "{name} clientpv");
        assert!(protocol.payload.is_empty(), "{name}");
        assert_eq!(login.header.requestid, R::LOGIN, "{name}");
        assert_eq!(login.header.streamid, StreamId::ZERO, "{name}");
        assert!(login.payload.starts_with(b"xrd.cc="), "{name} login CGI");
        for r in rest {
            assert_ne!(r.header.streamid, StreamId::ZERO, "{name}: {:?}", r.header);
        }

        let hs = &ex.responses[0];
        assert_eq!(
            (hs.header.streamid, hs.header.status, hs.header.dlen),
            (StreamId::ZERO, S::OK, 8)
        );
        let hs = ServerHandshake::from_body(&hs.body).unwrap();
        assert_eq!(hs.protover, 0x511, "{name}");
        assert_eq!(hs.server_type, ServerType::DATA_SERVER, "{name}");

        let replies = ex.replies();
        let pr = replies[0].only(S::OK);
        assert_eq!(pr.header.streamid, StreamId::ZERO);
        assert_eq!(pr.body.len(), 8, "{name}: no B or S record");
        assert_eq!(be_i32(&pr.body, 0), 0x511, "{name} pval");
        assert_eq!(be_i32(&pr.body, 4), 0x0030_0001, "{name} flags");
        let lr = replies[1].only(S::OK);
        assert_eq!(lr.header.streamid, StreamId::ZERO);
        assert_eq!(lr.body.len(), 16, "{name}: sessid only, no security");
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
        let want: Vec<(R, Vec<S>)> = script.iter().map(|(r, s)| (*r, s.to_vec())).collect();
        assert_eq!(got, want, "{name}");
    }
}

/// PROTOCOL.md §8.1 and §15.1: a `kXR_status` body names the streamid and
/// `requestid − 3000` of its request, its crc32c covers the body after the crc
/// plus the info, and `bdy.dlen` is exactly the data that follows.
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
                let dlen = f.header.dlen as usize;
                assert_eq!(dlen, 24, "{}: 16-byte body + 8-byte offset info", ex.name);
                assert_eq!(
                    crc32c(&f.body[4..dlen]),
                    be_i32(&f.body, 0) as u32,
                    "{}",
                    ex.name
                );
                assert_eq!(f.body[4..6], f.header.streamid.0);
                assert_eq!(
                    Some(f.body[6]),
                    reply.request.header.requestid.status_code()
                );
                assert_eq!(ResponseType(f.body[7]), ResponseType::FINAL);
                assert_eq!(be_i32(&f.body, 12) as usize, f.body.len() - dlen);
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 8, "pgread 1 + 5 + 1 frames, pgwrite 1");
}

/// The open reply with retstat (PROTOCOL.md §6.1): fhandle, cpsize, cptype,
/// then the NUL-terminated stat text, whose size field is checked.
fn check_open(ex: &Exchange, options: u16, path: &str, size: u64) -> [u8; 4] {
    let reply = ex.reply(R::OPEN);
    let h = &reply.request.header;
    assert_eq!(be_u16(&h.params, 2), options, "{} open options", ex.name);
    assert_eq!(reply.request.payload, text(path), "{}", ex.name);
    let body = &reply.only(S::OK).body;
    assert_eq!(be_i32(body, 4), 0, "cpsize");
    let stat = check_stat_text(&body[12..]);
    assert_eq!(stat[1], size.to_string(), "{} size", ex.name);
    body[..4].try_into().unwrap()
}

/// Checks a stat text (PROTOCOL.md §7.1): NUL-terminated, nine fields.
fn check_stat_text(b: &[u8]) -> Vec<String> {
    assert_eq!(b.last(), Some(&0), "stat text ends in NUL");
    let s = std::str::from_utf8(&b[..b.len() - 1]).unwrap();
    let fields: Vec<String> = s.split(' ').map(str::to_owned).collect();
    assert_eq!(fields.len(), 9, "{s}");
    fields
}

/// The fhandle of a by-handle request (bytes 4–7 of the header).
fn fhandle(r: &Reply) -> [u8; 4] {
    r.request.header.params[..4].try_into().unwrap()
}

/// PROTOCOL.md §6.3: the offset and rlen of a read-like request.
fn offset_rlen(r: &Reply) -> (u64, usize) {
    let p = &r.request.header.params;
    (be_i64(p, 4) as u64, be_i32(p, 12) as usize)
}

#[test]
fn plain_reads_return_the_file() {
    // open_read: the whole 5000-byte file in one kXR_ok
    let ex = Exchange::load("open_read");
    let fh = check_open(&ex, 0x0450, "/small.bin", SMALL);
    let read = ex.reply(R::READ);
    assert_eq!(fhandle(&read), fh);
    assert_eq!(offset_rlen(&read), (0, 5000));
    assert_eq!(
        read.request.payload.len(),
        8,
        "Appendix 5: read_args, pathid 0"
    );
    assert_eq!(read.only(S::OK).body, pattern(0, 5000));
    assert_eq!(fhandle(&ex.reply(R::CLOSE)), fh);

    // read_eof: 200 bytes asked at 4900, 100 as kXR_oksofar then an empty kXR_ok (§6.3)
    let ex = Exchange::load("read_eof");
    check_open(&ex, 0x0450, "/small.bin", SMALL);
    let read = ex.reply(R::READ);
    assert_eq!(offset_rlen(&read), (4900, 200));
    assert_eq!(read.only(S::OKSOFAR).body, pattern(4900, 100));
    assert!(read.only(S::OK).body.is_empty());
}

#[test]
fn stat_by_handle_and_by_path() {
    let ex = Exchange::load("stat_handle");
    let fh = check_open(&ex, 0x0450, "/big.bin", BIG);
    let stat = ex.reply(R::STAT);
    assert!(stat.request.payload.is_empty(), "dlen 0: by handle");
    assert_eq!(stat.request.header.params[12..16], fh);
    let fields = check_stat_text(&stat.only(S::OK).body);
    assert_eq!(fields[1..4], ["300000", "48", "1700000000"]);
    assert_eq!(fields[6..], ["0644", "xrootd", "xrootd"]);

    let ex = Exchange::load("stat_path");
    let stat = ex.reply(R::STAT);
    assert_eq!(stat.request.payload, text("/big.bin"));
    let fields = check_stat_text(&stat.only(S::OK).body);
    assert_eq!(fields[1..4], ["300000", "48", "1700000000"]);
}

/// PROTOCOL.md §6.4: the reply is the elements in list order, each a 16-byte
/// header echoing fhandle, rlen and offset, then the data.
#[test]
fn readv_elements_follow_the_list() {
    let ex = Exchange::load("readv");
    let fh = check_open(&ex, 0x0450, "/big.bin", BIG);
    let readv = ex.reply(R::READV);
    let list = ReadListEntry::decode_list(&readv.request.payload, "read_list").unwrap();
    let asked: Vec<(i32, i64)> = list.iter().map(|e| (e.rlen, e.offset)).collect();
    assert_eq!(asked, [(100, 0), (4096, 5000), (1000, 200_000)]);
    let mut body = readv.only(S::OK).body.clone();
    for want in &list {
        assert_eq!(want.fhandle.0, fh);
        let got = ReadListEntry::decode(&body).unwrap();
        assert_eq!(&got, want);
        let data = body.split_to(16 + got.rlen as usize).slice(16..);
        assert_eq!(data, pattern(got.offset as u64, got.rlen as usize));
    }
    assert!(body.is_empty());
}

/// Checks every pgread of `name`: each `kXR_status` frame's info offset, its
/// pages (absolute 4 kB alignment, good crc32c) and their data against the
/// file (PROTOCOL.md §6.5). Returns the (offset, length) each request got.
fn check_pgreads(name: &str) -> Vec<(u64, usize)> {
    let ex = Exchange::load(name);
    let fh = check_open(&ex, 0x0450, "/big.bin", BIG);
    let mut got = Vec::new();
    for reply in ex
        .replies()
        .iter()
        .filter(|r| r.request.header.requestid == R::PGREAD)
    {
        assert_eq!(fhandle(reply), fh);
        assert_eq!(
            reply.request.payload,
            Bytes::from_static(&[0, 0]),
            "pathid 0, no flags"
        );
        let (offset, rlen) = offset_rlen(reply);
        let f: &ResponseFrame = reply.only(S::STATUS);
        assert_eq!(be_i64(&f.body, 16) as u64, offset, "info offset");
        let mut at = offset;
        for page in PageIter::new(offset, f.body.slice(24..)) {
            let page = page.unwrap();
            assert!(page.is_valid(), "{name}: crc of page at {}", page.offset);
            assert_eq!(page.offset, at);
            assert!(
                page.offset % 4096 == 0 || page.offset == offset,
                "aligned pages"
            );
            assert_eq!(page.data, pattern(at, page.data.len()));
            at += page.data.len() as u64;
        }
        assert_eq!(
            at,
            (offset + rlen as u64).min(BIG),
            "{name}: all asked, up to EOF"
        );
        got.push((offset, (at - offset) as usize));
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
    let data = ex.reply(R::PGREAD).only(S::STATUS).body.slice(24..);
    let first = PageIter::new(1000, data.clone()).next().unwrap().unwrap();
    assert_eq!(first.data.len(), 3096);
    assert_eq!(data.len(), 299_000 + 4 * 74, "74 pages, 4 crc bytes each");
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
    // Python: open new, one 5000-byte kXR_write at 0, close
    let ex = Exchange::load("open_write");
    let fh = check_open(&ex, 0x0448, "/written.bin", 0);
    assert_eq!(
        be_u16(&ex.reply(R::OPEN).request.header.params, 0),
        0o644,
        "mode"
    );
    let write = ex.reply(R::WRITE);
    assert_eq!(fhandle(&write), fh);
    assert_eq!(be_i64(&write.request.header.params, 4), 0);
    assert_eq!(write.request.payload, pattern(0, 5000));
    assert!(write.only(S::OK).body.is_empty());

    // xrdcp with XRD_CPUSEPGWRTRD=0: stat (NotFound), open new+updt, one kXR_write
    let ex = Exchange::load("write");
    check_open(&ex, 0x0468, "/up_write.bin?oss.asize=100000", 0);
    let write = ex.reply(R::WRITE);
    assert_eq!(be_i64(&write.request.header.params, 4), 0);
    assert_eq!(write.request.payload, pattern(0, UPLOAD as usize));
}

/// PROTOCOL.md §6.7: the pgwrite payload is `[crc][page]…` with dlen counting
/// the crcs; the reply is one final `kXR_status` with the request offset as
/// info and no CSE block.
#[test]
fn pgwrite_pages_are_checksummed() {
    let ex = Exchange::load("pgwrite");
    let fh = check_open(&ex, 0x0468, "/up_pgwrite.bin?oss.asize=100000", 0);
    let pgw = ex.reply(R::PGWRITE);
    assert_eq!(fhandle(&pgw), fh);
    let offset = be_i64(&pgw.request.header.params, 4) as u64;
    assert_eq!(offset, 0);
    assert_eq!(pgw.request.payload.len(), 100_000 + 25 * 4);
    let mut data = Vec::new();
    for page in PageIter::new(offset, pgw.request.payload.clone()) {
        let page = page.unwrap();
        assert!(page.is_valid(), "crc of page at {}", page.offset);
        data.extend_from_slice(&page.data);
    }
    assert_eq!(data, pattern(0, UPLOAD as usize));
    let f = pgw.only(S::STATUS);
    assert_eq!(be_i64(&f.body, 16), 0, "info: the request offset");
    assert_eq!(f.body.len(), 24, "bdy.dlen 0: no checksum errors");
}

/// PROTOCOL.md §8.2, §15.7: errnum then a NUL-terminated message.
fn check_error(f: &ResponseFrame, code: ErrorCode, msg: &str) {
    assert_eq!(ErrorCode(be_i32(&f.body, 0)), code);
    assert_eq!(f.body.slice(4..), text(&format!("{msg}\0")));
}

#[test]
fn missing_files_are_not_found() {
    let not_found = |name: &str, id: R, msg: &str| {
        let ex = Exchange::load(name);
        check_error(ex.reply(id).only(S::ERROR), ErrorCode::NOT_FOUND, msg);
    };
    not_found(
        "open_missing",
        R::OPEN,
        "Unable to open /missing.bin; no such file or directory",
    );
    not_found(
        "stat_missing",
        R::STAT,
        "Unable to locate /missing.bin; no such file or directory",
    );
    not_found(
        "write",
        R::STAT,
        "Unable to locate /up_write.bin; no such file or directory",
    );
    not_found(
        "pgwrite",
        R::STAT,
        "Unable to locate /up_pgwrite.bin; no such file or directory",
    );
}

/// adler32 (RFC 1950), to check the server's checksum of the big file.
fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// Appendix 9: an uncached checksum is answered with `kXR_waitresp`, then a
/// `kXR_attn` asynresp on streamid 0 carrying the real reply for the
/// request's streamid; the second query is answered directly.
#[test]
fn checksum_arrives_as_asynresp() {
    let ex = Exchange::load("query_checksum");
    let replies = ex.replies();
    let answer = text(&format!(
        "adler32 {:08x}\0",
        adler32(&pattern(0, BIG as usize))
    ));
    for q in &replies[2..] {
        assert_eq!(be_u16(&q.request.header.params, 0), 3, "kXR_Qcksum");
        assert_eq!(
            q.request.payload,
            text("/big.bin\0"),
            "the client sends a NUL"
        );
    }
    let first = &replies[2];
    let wait = first.only(S::WAITRESP);
    assert_eq!(be_i32(&wait.body, 0), 600, "seconds");
    assert_eq!(wait.body.slice(4..), text("Job scheduled."));
    let attn = first.only(S::ATTN);
    assert_eq!(attn.header.streamid, StreamId::ZERO);
    let inner = asynresp_header(attn).unwrap();
    assert_eq!(inner.streamid, first.request.header.streamid);
    assert_eq!((inner.status, inner.dlen as usize), (S::OK, answer.len()));
    assert_eq!(attn.body.slice(16..), answer);
    assert_eq!(replies[3].only(S::OK).body, answer);
}

/// PROTOCOL.md §7.7: Qconfig answers one `value\n` line per key, no NUL.
#[test]
fn query_config_lines() {
    for (name, keys, lines) in [
        (
            "query_config",
            "readv_iov_max readv_ior_max version\0",
            "1024\n2097136\nv5.5.3\n",
        ),
        ("query_config_xrdfs", "readv_iov_max\0", "1024\n"),
    ] {
        let q = Exchange::load(name).reply(R::QUERY);
        assert_eq!(be_u16(&q.request.header.params, 0), 7, "kXR_Qconfig");
        assert_eq!(q.request.payload, text(keys));
        assert_eq!(q.only(S::OK).body, text(lines));
    }
}

/// PROTOCOL.md §7.3, §7.5: xrdfs ls stats the directory, locates it, then
/// lists it; the plain list ends in NUL, the dstat one starts with the
/// `".\n0 0 0 0\n"` sentinel and pairs names with stat lines.
#[test]
fn dirlist_plain_and_with_stat() {
    for (name, options) in [("dirlist", 0u8), ("dirlist_stat", 2)] {
        let ex = Exchange::load(name);
        let loc = ex.reply(R::LOCATE);
        assert_eq!(loc.request.payload, text("*/dir"));
        assert_eq!(loc.only(S::OK).body, text("Sw[::127.0.0.1]:11294\0"));
        let ls = ex.reply(R::DIRLIST);
        assert_eq!(ls.request.payload, text("/dir"));
        assert_eq!(ls.request.header.params[15], options);
        let body = ls.only(S::OK).body.clone();
        assert_eq!(body.last(), Some(&0));
        let lines: Vec<&str> = std::str::from_utf8(&body[..body.len() - 1])
            .unwrap()
            .split('\n')
            .collect();
        if options == 0 {
            assert_eq!(lines, ["a.bin", "b.bin", "sub"]);
        } else {
            assert_eq!(lines[..2], [".", "0 0 0 0"]);
            let names: Vec<&str> = lines[2..].iter().step_by(2).copied().collect();
            assert_eq!(names, ["a.bin", "b.bin", "sub"]);
            let sizes: Vec<&str> = lines[3..]
                .iter()
                .step_by(2)
                .map(|l| l.split(' ').nth(1).unwrap())
                .collect();
            assert_eq!(sizes, ["1000", "5000", "4096"]);
        }
    }
}

/// PROTOCOL.md §7.4: paths as payloads, mkdir's mkpath option and mode,
/// mv's arg1len pointing at the space.
#[test]
fn namespace_requests() {
    let mkdir = Exchange::load("mkdir").reply(R::MKDIR);
    assert_eq!(mkdir.request.payload, text("/newdir/sub"));
    assert_eq!(mkdir.request.header.params[0], 1, "kXR_mkdirpath");
    assert_eq!(be_u16(&mkdir.request.header.params, 14), 0o750, "mode");
    let mv = Exchange::load("mv").reply(R::MV);
    assert_eq!(mv.request.payload, text("/tomv.bin /moved.bin"));
    let arg1len = be_u16(&mv.request.header.params, 14) as usize;
    assert_eq!((arg1len, mv.request.payload[arg1len]), (9, b' '));
    assert_eq!(
        Exchange::load("rm").reply(R::RM).request.payload,
        text("/moved.bin")
    );
    assert_eq!(
        Exchange::load("rmdir").reply(R::RMDIR).request.payload,
        text("/newdir/sub")
    );
    for (name, id) in [
        ("mkdir", R::MKDIR),
        ("mv", R::MV),
        ("rm", R::RM),
        ("rmdir", R::RMDIR),
    ] {
        assert!(
            Exchange::load(name).reply(id).only(S::OK).body.is_empty(),
            "{name}"
        );
    }
}
