//! The codecs against a live stock xrootd 5.5.3 data server: a small
//! blocking driver built only from xroot-proto (encode a request, decode the
//! frames that answer it) walks a whole session, and every answer is checked
//! against the files on disk. Golden vectors prove decoding of recorded
//! bytes; this proves that what we *encode* is understood by the real server.
//!
//! Needs the stock `xrootd` (ignored without it, a failure when `CI=true`).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use xroot::proto::frame::ResponseDecoder;
use xroot::proto::header::{ClientHandshake, ServerHandshake};
use xroot::proto::list::ReadListEntry;
use xroot::proto::page::crc32c;
use xroot::proto::request::{
    Close, Dirlist, DirlistOptions, Expect, Login, Mkdir, MkdirOptions, Mode, Mv, Open,
    OpenOptions, PgReadArgs, Pgread, Pgwrite, Protocol, ProtocolFlags, Query, QueryCode, Read,
    Readv, Request, Rm, Rmdir, Stat,
};
use xroot::proto::response::{
    Attn, ChecksumAnswer, DirList, LoginResponse, OpenResponse, PgReadFrame, PgWriteResponse,
    ProtocolResponse, QconfigAnswer, ReadvIter, Response, StatInfo,
};
use xroot::proto::{ErrorCode, FHandle, ResponseFrame, StreamId};
use xroot_testkit::stock::StockServer;

/// The answer to one request: the bodies of its `kXR_oksofar` frames and
/// final `kXR_ok` joined, its `kXR_status` frames, or its error.
#[derive(Debug)]
enum Answer {
    Ok(Vec<Bytes>),
    Status(Vec<xroot::proto::response::StatusResponse>),
    Error(xroot::proto::response::ServerError),
}

impl Answer {
    fn ok(self) -> Bytes {
        match self {
            Answer::Ok(chunks) => chunks.concat().into(),
            other => panic!("expected kXR_ok, got {other:?}"),
        }
    }
}

struct Session {
    sock: TcpStream,
    buf: BytesMut,
    dec: ResponseDecoder,
    next: u16,
}

impl Session {
    fn connect(port: u16) -> (Session, ServerHandshake, ProtocolResponse) {
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut s = Session {
            sock,
            buf: BytesMut::new(),
            dec: ResponseDecoder::new(),
            next: 1,
        };
        // handshake and kXR_protocol in one write, as XrdCl does
        let mut out = BytesMut::new();
        ClientHandshake.encode(&mut out);
        Request::from(Protocol {
            clientpv: 0x511,
            flags: ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS,
            expect: Expect::LOGIN,
        })
        .encode(StreamId::ZERO, &mut out);
        s.sock.write_all(&out).unwrap();
        let hs = s.frame();
        let hs = ServerHandshake::from_body(&hs.body).expect("16-byte handshake reply");
        let proto = ProtocolResponse::decode(s.frame().body).expect("protocol response");
        (s, hs, proto)
    }

    fn frame(&mut self) -> ResponseFrame {
        loop {
            if let Some(f) = self.dec.decode(&mut self.buf).expect("valid frame") {
                return f;
            }
            let mut chunk = [0u8; 65536];
            let n = self.sock.read(&mut chunk).expect("read");
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends `req` on a fresh streamid and collects its answer, following
    /// `kXR_waitresp` to the `kXR_attn` asynresp that completes it.
    fn call(&mut self, req: impl Into<Request>) -> Answer {
        let sid = StreamId::from_u16(self.next);
        self.next += 1;
        let mut out = BytesMut::new();
        req.into().encode(sid, &mut out);
        self.sock.write_all(&out).unwrap();
        let mut chunks = Vec::new();
        let mut statuses = Vec::new();
        loop {
            let frame = self.frame();
            let mut resp = Response::decode(frame.clone()).expect("typed response");
            if let Response::Attn(Attn::AsynResp { streamid, response }) = resp {
                assert_eq!(streamid, sid, "asynresp for our request");
                resp = *response;
            } else {
                assert_eq!(frame.header.streamid, sid, "response to our streamid");
            }
            match resp {
                Response::OkSoFar(b) => chunks.push(b),
                Response::Ok(b) => {
                    chunks.push(b);
                    return Answer::Ok(chunks);
                }
                Response::WaitResp(_) => {}
                Response::Status(s) => {
                    let last = s.is_final();
                    statuses.push(s);
                    if last {
                        return Answer::Status(statuses);
                    }
                }
                Response::Error(e) => return Answer::Error(e),
                other => panic!("unexpected response {other:?}"),
            }
        }
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn open(s: &mut Session, path: &str, options: OpenOptions, mode: u16) -> OpenResponse {
    let body = s
        .call(Open {
            mode: Mode(mode),
            options: options | OpenOptions::RETSTAT,
            path: Bytes::copy_from_slice(path.as_bytes()),
            ..Default::default()
        })
        .ok();
    OpenResponse::decode(body).expect("open response")
}

#[test]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
fn a_whole_session_against_the_stock_server() {
    let data_dir = tempfile::tempdir().unwrap();
    let content = pattern(300_000);
    std::fs::write(data_dir.path().join("big.bin"), &content).unwrap();
    std::fs::create_dir(data_dir.path().join("dir")).unwrap();
    std::fs::write(data_dir.path().join("dir/a.bin"), pattern(1000)).unwrap();
    let Some(server) = StockServer::start(data_dir.path(), &[]) else {
        return;
    };
    let disk = |p: &str| std::fs::read(server.data.join(p)).unwrap();

    let (mut s, hs, proto) = Session::connect(server.port);
    assert_eq!(hs.protover, 0x511, "xrootd 5.5.3 speaks protocol 5.1.1");
    assert!(proto
        .flags
        .contains(xroot::proto::response::ProtocolFlags::IS_SERVER));

    // login: a no-auth server answers exactly the 16-byte session id
    let login = s
        .call(Login {
            pid: std::process::id() as i32,
            username: Login::pack_username("xroottest"),
            capver: xroot::proto::request::Capver(0x85),
            cgi: Bytes::from_static(b"&xrd.appname=xroot-test"),
            ..Default::default()
        })
        .ok();
    let login = LoginResponse::decode(login).unwrap();
    assert!(
        login.sec.is_none(),
        "no security token from a no-auth server"
    );

    // stat by path
    let st = StatInfo::decode(
        s.call(Stat {
            path: "/big.bin".into(),
            ..Default::default()
        })
        .ok(),
    )
    .unwrap();
    assert_eq!(st.size, 300_000);
    assert!(!st.is_dir());

    // open with retstat, read across EOF: short data, then nothing more
    let f = open(&mut s, "/big.bin", OpenOptions::READ, 0);
    assert_eq!(f.stat.as_ref().map(|st| st.size), Some(300_000));
    let fh: FHandle = f.fhandle;
    let tail = s
        .call(Read {
            fhandle: fh,
            offset: 299_900,
            rlen: 1000,
            args: None,
        })
        .ok();
    assert_eq!(&tail[..], &content[299_900..]);

    // readv of three extents, reassembled in order
    let list: Vec<_> = [(0i64, 100i32), (150_000, 4096), (299_000, 1000)]
        .iter()
        .map(|&(offset, rlen)| ReadListEntry {
            fhandle: fh,
            rlen,
            offset,
        })
        .collect();
    let body = s
        .call(Readv {
            list: list.clone(),
            ..Default::default()
        })
        .ok();
    let got: Vec<_> = ReadvIter::new(body).collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), 3);
    for ((entry, data), want) in got.iter().zip(&list) {
        assert_eq!((entry.offset, entry.rlen), (want.offset, want.rlen));
        let at = want.offset as usize;
        assert_eq!(&data[..], &content[at..at + want.rlen as usize]);
    }

    // pgread at an unaligned offset: pages verified, data matches
    let Answer::Status(frames) = s.call(Pgread {
        fhandle: fh,
        offset: 1000,
        rlen: 20_000,
        args: Some(PgReadArgs {
            pathid: 0,
            reqflags: None,
        }),
    }) else {
        panic!("pgread answers kXR_status")
    };
    let mut joined = Vec::new();
    for f in &frames {
        let pg = PgReadFrame::from_status(f).unwrap();
        assert!(pg.bad_pages().unwrap().is_empty());
        assert_eq!(pg.offset as usize, 1000 + joined.len());
        for page in pg.pages() {
            joined.extend_from_slice(&page.unwrap().data);
        }
    }
    assert_eq!(&joined[..], &content[1000..21_000]);

    // checksum (computed on demand: waitresp then asynresp), and Qconfig
    let ck = s
        .call(Query {
            infotype: QueryCode::CKSUM,
            args: "/big.bin".into(),
            ..Default::default()
        })
        .ok();
    let ck = ChecksumAnswer::decode(ck).unwrap();
    assert_eq!(&ck.alg[..], b"adler32");
    assert_eq!(ck.value_bytes().unwrap(), adler32(&content).to_be_bytes());
    let cfg = s
        .call(Query {
            infotype: QueryCode::CONFIG,
            args: "readv_iov_max readv_ior_max xroot.pgreadv".into(),
            ..Default::default()
        })
        .ok();
    let cfg = QconfigAnswer::decode(cfg).unwrap();
    let values = cfg
        .with_keys(&["readv_iov_max", "readv_ior_max", "xroot.pgreadv"])
        .unwrap();
    assert_eq!(&values[0].1[..], b"1024");
    assert_eq!(&values[1].1[..], b"2097136");
    assert!(
        !xroot::proto::ext::config_says_supported(std::str::from_utf8(&values[2].1).unwrap()),
        "the stock server does not advertise our extension"
    );
    s.call(Close { fhandle: fh }).ok();

    // write with pgwrite: the server verifies our crc32c and reports no bad page
    let f = open(
        &mut s,
        "/new.bin",
        OpenOptions::NEW | OpenOptions::UPDATE,
        0o644,
    );
    let upload = pattern(10_000);
    let Answer::Status(reply) = s.call(Pgwrite::new(f.fhandle, 0, &upload)) else {
        panic!("pgwrite answers kXR_status")
    };
    assert!(PgWriteResponse::from_status(&reply[0])
        .unwrap()
        .cse
        .is_none());
    // a page with a wrong crc32c is reported bad
    let mut bad = Pgwrite::new(f.fhandle, 10_000, &upload[..5000]);
    let mut payload = BytesMut::from(&bad.payload[..]);
    payload[4 + 10] ^= 0xff;
    bad.payload = payload.freeze();
    let Answer::Status(reply) = s.call(bad) else {
        panic!("pgwrite answers kXR_status")
    };
    let cse = PgWriteResponse::from_status(&reply[0])
        .unwrap()
        .cse
        .expect("a bad page");
    assert_eq!(cse.bad_offsets, vec![10_000]);
    let _ = s.call(Close { fhandle: f.fhandle });
    assert_eq!(crc32c(&disk("new.bin")[..10_000]), crc32c(&upload));

    // namespace: mkdir -p, dirlist with stat, mv, rm, rmdir
    s.call(Mkdir {
        options: MkdirOptions::MKDIRPATH,
        mode: Mode(0o750),
        path: "/dir/x/y".into(),
    })
    .ok();
    assert!(server.data.join("dir/x/y").is_dir());
    let list = DirList::decode(
        s.call(Dirlist {
            options: DirlistOptions::DSTAT,
            path: "/dir".into(),
        })
        .ok(),
    )
    .unwrap();
    let DirList::Stat(entries) = list else {
        panic!("dstat listing expected")
    };
    let mut names: Vec<_> = entries
        .iter()
        .map(|e| (e.name.clone(), e.stat.size, e.stat.is_dir()))
        .collect();
    names.sort();
    assert_eq!(names[0], (Bytes::from_static(b"a.bin"), 1000, false));
    assert_eq!(names[1].0, Bytes::from_static(b"x"));
    assert!(names[1].2);
    s.call(Mv::new(b"/dir/a.bin", b"/dir/b.bin")).ok();
    assert!(server.data.join("dir/b.bin").exists());
    s.call(Rm {
        path: "/dir/b.bin".into(),
    })
    .ok();
    s.call(Rmdir {
        path: "/dir/x/y".into(),
    })
    .ok();
    assert!(!server.data.join("dir/x/y").exists());

    // errors keep the server's code: a missing file
    let Answer::Error(e) = s.call(Stat {
        path: "/missing.bin".into(),
        ..Default::default()
    }) else {
        panic!("stat of a missing file must fail")
    };
    assert_eq!(e.code, ErrorCode::NOT_FOUND);
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}
