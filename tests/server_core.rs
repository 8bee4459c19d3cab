//! xroot-server against our own client and raw sockets, over an in-memory
//! backend whose reads can be slowed down: sessions, every file request,
//! concurrent vector reads (and the backend's serial limit), pathid
//! substreams, deferred answers, graceful shutdown, and hostile input that
//! must get the reference's answer or a closed link while another session
//! keeps working. The golden exchanges of tests/vectors are replayed against
//! this server: every answer must match what the stock 5.5.3 server sent.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use xroot::client::{Client, OpenFlags};
use xroot::proto::request::{
    Auth, Bind, Endsess, Login, Open, OpenOptions, Pgwrite, Ping, Query, QueryCode, Read, ReadArgs,
    Readv, Request, Stat,
};
use xroot::proto::response::{
    Attn, BindResponse, ChecksumAnswer, LoginResponse, PgWriteResponse, QconfigAnswer, ReadvIter,
    Response, StatFlags, StatInfo,
};
use xroot::proto::{
    ClientHandshake, ErrorCode, FHandle, ReadListEntry, RequestId, Status, StreamId,
};
use xroot::server::{
    Caller, Config, DirEntry, File, FileSystem, FsError, FsResult, OpenMode, ReadvConcurrency,
    Server, ServerHandle, UnixAuth,
};

/// Byte `i` of every test file is `(i * 7) % 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

use xroot_testkit::raw::{login_request, Raw, GUARD};

// ---------------------------------------------------------------------------
// The in-memory backend

/// Files (path → bytes) and directories, shared by the backend and its files.
#[derive(Default)]
struct Store {
    files: BTreeMap<String, Bytes>,
    dirs: Vec<String>,
}

/// An in-memory backend: every read waits `delay`; `stat` of `/slow` waits
/// `slow_stat`.
#[derive(Clone)]
struct MemFs {
    store: Arc<Mutex<Store>>,
    delay: Duration,
    slow_stat: Duration,
    readv: ReadvConcurrency,
}

impl MemFs {
    fn new(files: &[(&str, Vec<u8>)]) -> MemFs {
        let mut store = Store::default();
        store.dirs.push("/".into());
        for (p, d) in files {
            store.files.insert(p.to_string(), Bytes::from(d.clone()));
            if let Some((dir, _)) = p.rsplit_once('/').filter(|(dir, _)| !dir.is_empty()) {
                store.dirs.push(dir.to_string());
            }
        }
        MemFs {
            store: Arc::new(Mutex::new(store)),
            delay: Duration::ZERO,
            slow_stat: Duration::ZERO,
            readv: ReadvConcurrency::Parallel(8),
        }
    }

    fn content(&self, path: &str) -> Option<Bytes> {
        self.store.lock().unwrap().files.get(path).cloned()
    }
}

fn not_found(path: &str) -> FsError {
    FsError::new(ErrorCode::NOT_FOUND, format!("{path}: no such file"))
}

fn file_stat(size: usize) -> StatInfo {
    StatInfo {
        id: 1,
        size: size as u64,
        flags: StatFlags::READABLE | StatFlags::WRITABLE,
        mtime: 1_700_000_000,
        extended: None,
    }
}

fn dir_stat() -> StatInfo {
    StatInfo {
        id: 2,
        size: 4096,
        flags: StatFlags::IS_DIR | StatFlags::READABLE | StatFlags::WRITABLE,
        mtime: 1_700_000_000,
        extended: None,
    }
}

struct MemFile {
    fs: MemFs,
    path: String,
}

impl File for MemFile {
    async fn read_at(&self, offset: u64, len: usize) -> FsResult<Bytes> {
        tokio::time::sleep(self.fs.delay).await;
        let data = self.fs.content(&self.path).unwrap_or_default();
        let start = (offset as usize).min(data.len());
        Ok(data.slice(start..(start + len).min(data.len())))
    }

    /// One wait for the whole vector, like one origin request.
    async fn readv(&self, extents: Vec<(u64, usize)>) -> FsResult<Vec<Bytes>> {
        tokio::time::sleep(self.fs.delay).await;
        let data = self.fs.content(&self.path).unwrap_or_default();
        extents
            .into_iter()
            .map(|(o, l)| match data.get(o as usize..o as usize + l) {
                Some(_) => Ok(data.slice(o as usize..o as usize + l)),
                None => Err(FsError::new(ErrorCode::FS_ERROR, "readv past EOF")),
            })
            .collect()
    }

    async fn write_at(&self, offset: u64, data: Bytes) -> FsResult<()> {
        let mut store = self.fs.store.lock().unwrap();
        let old = store.files.get(&self.path).cloned().unwrap_or_default();
        let mut new = old.to_vec();
        let end = offset as usize + data.len();
        if new.len() < end {
            new.resize(end, 0);
        }
        new[offset as usize..end].copy_from_slice(&data);
        store.files.insert(self.path.clone(), new.into());
        Ok(())
    }

    async fn stat(&self) -> FsResult<StatInfo> {
        let n = self.fs.content(&self.path).map_or(0, |d| d.len());
        Ok(file_stat(n))
    }

    fn readv_concurrency(&self) -> ReadvConcurrency {
        self.fs.readv
    }

    async fn truncate(&self, size: u64) -> FsResult<()> {
        self.fs
            .truncate(&Caller::local("test"), &self.path, size)
            .await
    }
}

impl FileSystem for MemFs {
    type File = MemFile;

    async fn open(
        &self,
        _caller: &Caller,
        path: &str,
        mode: OpenMode,
        _cgi: &str,
    ) -> FsResult<MemFile> {
        let mut store = self.store.lock().unwrap();
        let exists = store.files.contains_key(path);
        if mode.create_new && exists {
            return Err(FsError::new(ErrorCode::ITEM_EXISTS, "file exists"));
        }
        if mode.create_new || mode.truncate {
            store.files.insert(path.to_string(), Bytes::new());
        } else if !exists {
            return Err(not_found(path));
        }
        Ok(MemFile {
            fs: self.clone(),
            path: path.to_string(),
        })
    }

    async fn stat(&self, _caller: &Caller, path: &str) -> FsResult<StatInfo> {
        match path {
            "/slow" => tokio::time::sleep(self.slow_stat).await,
            "/redirect" => {
                return Err(FsError::Redirect {
                    host: "elsewhere.example".into(),
                    port: 1095,
                    opaque: Some("a=b".into()),
                })
            }
            "/wait" => {
                return Err(FsError::Wait {
                    seconds: 3,
                    message: "busy".into(),
                })
            }
            _ => {}
        }
        let store = self.store.lock().unwrap();
        match store.files.get(path) {
            Some(d) => Ok(file_stat(d.len())),
            None if store.dirs.iter().any(|d| d == path) => Ok(dir_stat()),
            None => Err(not_found(path)),
        }
    }

    async fn dirlist(
        &self,
        _caller: &Caller,
        path: &str,
        with_stat: bool,
    ) -> FsResult<Vec<DirEntry>> {
        let store = self.store.lock().unwrap();
        if !store.dirs.iter().any(|d| d == path) {
            return Err(not_found(path));
        }
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let names = store.files.keys().chain(store.dirs.iter());
        let mut out: Vec<DirEntry> = names
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(|name| DirEntry {
                name: name.to_string(),
                stat: with_stat.then(|| match store.files.get(&format!("{prefix}{name}")) {
                    Some(d) => file_stat(d.len()),
                    None => dir_stat(),
                }),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn mkdir(
        &self,
        _caller: &Caller,
        path: &str,
        _mode: u32,
        _parents: bool,
    ) -> FsResult<()> {
        self.store.lock().unwrap().dirs.push(path.to_string());
        Ok(())
    }

    async fn rm(&self, _caller: &Caller, path: &str) -> FsResult<()> {
        let removed = self.store.lock().unwrap().files.remove(path);
        removed.map(drop).ok_or_else(|| not_found(path))
    }

    async fn truncate(&self, _caller: &Caller, path: &str, size: u64) -> FsResult<()> {
        let mut store = self.store.lock().unwrap();
        let data = store.files.get(path).ok_or_else(|| not_found(path))?;
        let mut data = data.to_vec();
        data.resize(size as usize, 0);
        store.files.insert(path.to_string(), data.into());
        Ok(())
    }

    async fn rmdir(&self, _caller: &Caller, path: &str) -> FsResult<()> {
        let mut store = self.store.lock().unwrap();
        let before = store.dirs.len();
        store.dirs.retain(|d| d != path);
        match store.dirs.len() < before {
            true => Ok(()),
            false => Err(not_found(path)),
        }
    }

    async fn mv(&self, _caller: &Caller, from: &str, to: &str) -> FsResult<()> {
        let mut store = self.store.lock().unwrap();
        let data = store.files.remove(from).ok_or_else(|| not_found(from))?;
        store.files.insert(to.to_string(), data);
        Ok(())
    }

    async fn checksum(
        &self,
        _caller: &Caller,
        path: &str,
        alg: Option<&str>,
    ) -> FsResult<ChecksumAnswer> {
        let data = self.content(path).ok_or_else(|| not_found(path))?;
        let (mut a, mut b) = (1u32, 0u32);
        for &x in data.iter() {
            a = (a + x as u32) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(alg, Some("adler32"));
        Ok(ChecksumAnswer::from_value(
            "adler32",
            &((b << 16) | a).to_be_bytes(),
        ))
    }

    fn checksum_algorithms(&self) -> Vec<String> {
        vec!["adler32".into()]
    }
}

// ---------------------------------------------------------------------------
// Starting servers and talking to them

async fn start_with(fs: MemFs, config: Config) -> ServerHandle {
    let server = Server::bind("127.0.0.1:0", fs, config).await.unwrap();
    let handle = server.handle();
    tokio::spawn(server.serve());
    handle
}

async fn start(fs: MemFs) -> ServerHandle {
    start_with(fs, Config::default()).await
}

fn url(h: &ServerHandle, path: &str) -> String {
    format!("root://{}/{path}", h.local_addr())
}

fn readv_of(fh: FHandle, pathid: u8, extents: &[(i64, i32)]) -> Readv {
    Readv {
        pathid,
        list: extents
            .iter()
            .map(|&(offset, rlen)| ReadListEntry {
                fhandle: fh,
                rlen,
                offset,
            })
            .collect(),
        ..Default::default()
    }
}

/// Another session, through our client, still works.
async fn other_session_works(h: &ServerHandle) {
    let client = Client::new();
    let st = tokio::time::timeout(GUARD, client.fs(&url(h, "")).unwrap().stat("/a.bin"))
        .await
        .expect("in time")
        .unwrap();
    assert_eq!(st.size, 5000);
}

// ---------------------------------------------------------------------------
// Our client against the server

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reads_writes_and_lists() {
    let content = pattern(300_000);
    let fs = MemFs::new(&[("/a.bin", content.clone()), ("/d/x", vec![1, 2, 3])]);
    let h = start(fs.clone()).await;
    let client = Client::new();
    let nsp = client.fs(&url(&h, "")).unwrap();
    assert_eq!(nsp.stat("/a.bin").await.unwrap().size, 300_000);
    assert!(nsp.stat("/d").await.unwrap().is_dir());
    let missing = nsp.stat("/nope").await.unwrap_err();
    assert_eq!(missing.server_code(), Some(ErrorCode::NOT_FOUND));
    nsp.ping().await.unwrap();

    let f = client
        .open(&url(&h, "/a.bin"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(f.stat().await.unwrap().size, 300_000);
    assert_eq!(
        &f.read_at(1000, 5000).await.unwrap()[..],
        &content[1000..6000]
    );
    // a short read at end of file
    assert_eq!(
        &f.read_at(299_900, 500).await.unwrap()[..],
        &content[299_900..]
    );
    let ranges = [(0u64, 100usize), (5000, 4096), (200_000, 1000)];
    let got = f.readv(&ranges).await.unwrap();
    for (&(o, l), g) in ranges.iter().zip(&got) {
        assert_eq!(&g[..], &content[o as usize..o as usize + l]);
    }
    assert_eq!(
        &f.pgread(1000, 250_000).await.unwrap()[..],
        &content[1000..251_000]
    );
    let v = f.pgreadv(&[(7, 9000), (290_000, 20_000)]).await.unwrap();
    assert_eq!(
        (&v[0][..], &v[1][..]),
        (&content[7..9007], &content[290_000..])
    );
    f.close().await.unwrap();
    let used = h.stats().in_flight;
    assert_eq!(
        (
            used.kind(RequestId::PGREADV).total,
            used.kind(RequestId::PGREAD).total
        ),
        (1, 1)
    );

    let w = client
        .open(&url(&h, "/w.bin"), OpenFlags::NEW)
        .await
        .unwrap();
    w.write_at(0, Bytes::from(pattern(10_000))).await.unwrap();
    w.pgwrite(10_000, Bytes::from(pattern(9000))).await.unwrap();
    w.sync().await.unwrap();
    w.close().await.unwrap();
    let mut expect = pattern(10_000);
    expect.extend(pattern(9000));
    assert_eq!(&fs.content("/w.bin").unwrap()[..], &expect[..]);
    let exists = client
        .open(&url(&h, "/w.bin"), OpenFlags::NEW)
        .await
        .unwrap_err();
    assert_eq!(exists.server_code(), Some(ErrorCode::ITEM_EXISTS));

    nsp.mkdir("/d/sub", true, 0o755).await.unwrap();
    nsp.mv("/w.bin", "/d/w.bin").await.unwrap();
    let names: Vec<String> = nsp
        .dirlist("/d", false)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["sub", "w.bin", "x"]);
    let listed = nsp.dirlist("/d", true).await.unwrap();
    assert_eq!(listed[1].stat.as_ref().unwrap().size, 19_000);
    nsp.rm("/d/w.bin").await.unwrap();
    let (alg, value) = nsp.query_checksum("/a.bin", None).await.unwrap();
    assert_eq!((alg.as_str(), value.len()), ("adler32", 8));
    let locs = nsp.locate("/a.bin").await.unwrap();
    assert_eq!(
        &locs[0].address[..],
        format!("[::127.0.0.1]:{}", h.local_addr().port()).as_bytes()
    );
}

/// K vector reads at once on one session, each against a backend that takes
/// 200 ms: the server serves them together (its statistics see K in flight
/// at once) unless the backend says serial (then one at a time).
async fn concurrent_readv(readv: ReadvConcurrency) -> (u64, u64) {
    const K: usize = 6;
    let content = pattern(1 << 20);
    let mut fs = MemFs::new(&[("/a.bin", content.clone())]);
    fs.delay = Duration::from_millis(200);
    fs.readv = readv;
    let h = start(fs).await;
    let client = Client::new();
    let f = Arc::new(
        client
            .open(&url(&h, "/a.bin"), OpenFlags::READ)
            .await
            .unwrap(),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..K {
        let f = f.clone();
        tasks.spawn(async move {
            let ranges: Vec<(u64, usize)> = (0..50)
                .map(|i| ((i * 9973 + k * 131) as u64, 1000 + k))
                .collect();
            (ranges.clone(), f.readv(&ranges).await.unwrap())
        });
    }
    while let Some(done) = tokio::time::timeout(GUARD, tasks.join_next())
        .await
        .unwrap()
    {
        let (ranges, got) = done.unwrap();
        for (&(o, l), g) in ranges.iter().zip(&got) {
            assert_eq!(&g[..], &content[o as usize..o as usize + l]);
        }
    }
    let stats = h.stats();
    let readv = stats.in_flight.kind(RequestId::READV);
    assert_eq!((readv.total, readv.current), (K as u64, 0));
    assert!(readv.mean > 0.0);
    (readv.peak, stats.link_peak(RequestId::READV))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_reads_overlap_on_one_session() {
    let (server_peak, link_peak) = concurrent_readv(ReadvConcurrency::Parallel(8)).await;
    assert!(server_peak >= 6, "server peak {server_peak}");
    assert!(link_peak >= 6, "link peak {link_peak}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_backend_gets_one_vector_read_at_a_time() {
    let (server_peak, link_peak) = concurrent_readv(ReadvConcurrency::Serial).await;
    assert_eq!((server_peak, link_peak), (1, 1));
}

// ---------------------------------------------------------------------------
// Raw sockets: the reference's answers

/// A request with an arbitrary header and payload.
fn raw_frame(sid: u16, id: u16, dlen: i32, payload: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    xroot::proto::RequestHeader {
        streamid: StreamId::from_u16(sid),
        requestid: RequestId(id),
        params: [0; 16],
        dlen,
    }
    .encode(&mut b);
    b.extend_from_slice(payload);
    b.to_vec()
}

fn stat_of(path: &str) -> Stat {
    Stat {
        path: Bytes::copy_from_slice(path.as_bytes()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gating_as_the_reference() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let addr = h.local_addr();

    // before login: refused and closed
    let mut r = Raw::hello(addr, 3).await;
    r.send(1, stat_of("/a.bin")).await;
    let m = r.expect_error(ErrorCode::INVALID_REQUEST).await;
    assert_eq!(m, "Invalid request; user not logged in");
    r.expect_closed().await;

    let (mut r, _) = Raw::login(addr).await;
    let auth = Auth {
        credtype: *b"unix",
        credentials: Bytes::from_static(b"unix\0me\0"),
    };
    r.send(1, auth).await;
    let m = r.expect_error(ErrorCode::INVALID_REQUEST).await;
    assert_eq!(m, "Invalid request code");
    let again = Login {
        cgi: Bytes::from_static(b"&xrd.appname=again"),
        ..login_request()
    };
    r.send(2, again).await;
    let m = r.expect_error(ErrorCode::INVALID_REQUEST).await;
    assert_eq!(m, "Invalid request code");
    r.send(3, Ping {}).await;
    assert_eq!(
        r.expect().await,
        (StreamId::from_u16(3), Response::Ok(Bytes::new()))
    );
    r.write(&raw_frame(4, 3100, 1, b"x")).await;
    let m = r.expect_error(ErrorCode::INVALID_REQUEST).await;
    assert_eq!(m, "Invalid request code");
    r.write(&raw_frame(5, 3100, 0, b"")).await;
    r.expect_error(ErrorCode::ARG_MISSING).await;
    r.write(&raw_frame(6, RequestId::MKDIR.0, 0, b"")).await;
    r.expect_error(ErrorCode::ARG_MISSING).await;
    r.send(7, stat_of("a.bin")).await;
    let m = r.expect_error(ErrorCode::NOT_AUTHORIZED).await;
    assert_eq!(m, "Stating relative path 'a.bin' is disallowed.");
    let read = Read {
        fhandle: FHandle([9, 9, 9, 9]),
        rlen: 10,
        ..Default::default()
    };
    r.send(8, read).await;
    let m = r.expect_error(ErrorCode::FILE_NOT_OPEN).await;
    assert_eq!(m, "read does not refer to an open file");
    r.send(9, stat_of("")).await; // by handle
    r.expect_error(ErrorCode::FILE_NOT_OPEN).await;
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_gets_the_reference_answer_or_a_closed_link() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let addr = h.local_addr();

    // a garbage handshake: closed without a word
    let mut r = Raw::connect(addr).await;
    r.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    r.expect_closed().await;
    other_session_works(&h).await;

    // a truncated frame, then the client's end of the stream
    let (mut r, _) = Raw::login(addr).await;
    r.write(&raw_frame(1, RequestId::STAT.0, 7, b"/a.b")[..20])
        .await;
    r.s.shutdown().await.unwrap();
    r.expect_closed().await;
    other_session_works(&h).await;

    // negative dlen, before and after login: ArgInvalid, closed
    let mut r = Raw::hello(addr, 3).await;
    r.write(&raw_frame(1, RequestId::STAT.0, -5, b"")).await;
    let m = r.expect_error(ErrorCode::ARG_INVALID).await;
    assert_eq!(m, "Invalid request data length");
    r.expect_closed().await;
    let (mut r, _) = Raw::login(addr).await;
    r.write(&raw_frame(1, RequestId::READ.0, -1, b"")).await;
    r.expect_error(ErrorCode::ARG_INVALID).await;
    r.expect_closed().await;
    other_session_works(&h).await;

    // a huge dlen: ArgTooLong, closed (nothing allocated for it)
    let (mut r, _) = Raw::login(addr).await;
    r.write(&raw_frame(1, RequestId::STAT.0, 0x7fff_fff0, b"/a"))
        .await;
    let m = r.expect_error(ErrorCode::ARG_TOO_LONG).await;
    assert_eq!(m, "Request argument is too long");
    r.expect_closed().await;
    other_session_works(&h).await;

    // a 1025-element readv: ArgTooLong, and the link goes on
    let (mut r, _) = Raw::login(addr).await;
    let fh = r.open("/a.bin").await;
    let mut list = BytesMut::new();
    for i in 0..1025 {
        ReadListEntry {
            fhandle: fh,
            rlen: 1,
            offset: i,
        }
        .encode(&mut list);
    }
    r.write(&raw_frame(1, RequestId::READV.0, list.len() as i32, &list))
        .await;
    let m = r.expect_error(ErrorCode::ARG_TOO_LONG).await;
    assert_eq!(m, "Read vector is too long");
    // a list that is not a multiple of 16 bytes: ArgInvalid, the link goes on
    r.write(&raw_frame(2, RequestId::READV.0, 17, &[0; 17]))
        .await;
    r.expect_error(ErrorCode::ARG_INVALID).await;
    // the other readv limits
    r.send(3, readv_of(fh, 0, &[(0, 2_097_137)])).await;
    let m = r.expect_error(ErrorCode::NO_MEMORY).await;
    assert_eq!(m, "Single readv transfer is too large");
    r.send(4, readv_of(fh, 0, &[(0, -1)])).await;
    r.expect_error(ErrorCode::ARG_INVALID).await;
    r.send(5, readv_of(fh, 0, &[])).await;
    let m = r.expect_error(ErrorCode::ARG_INVALID).await;
    assert_eq!(m, "Read vector is invalid");
    r.send(6, readv_of(fh, 0, &[(0, 10), (4990, 20)])).await;
    let m = r.expect_error(ErrorCode::FS_ERROR).await;
    assert_eq!(m, "readv past EOF");
    r.send(7, readv_of(FHandle([7; 4]), 0, &[(0, 10)])).await;
    r.expect_error(ErrorCode::FILE_NOT_OPEN).await;
    r.send(8, Ping {}).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    other_session_works(&h).await;

    // the same readv before login: refused as any request before login
    let mut r = Raw::hello(addr, 3).await;
    r.write(&raw_frame(1, RequestId::READV.0, list.len() as i32, &list))
        .await;
    r.expect_error(ErrorCode::INVALID_REQUEST).await;
    r.expect_closed().await;

    // a pgwrite too short to hold a page: ArgInvalid, closed
    let (mut r, _) = Raw::login(addr).await;
    r.write(&raw_frame(1, RequestId::PGWRITE.0, 3, b"abc"))
        .await;
    let m = r.expect_error(ErrorCode::ARG_INVALID).await;
    assert_eq!(m, "pgwrite length is invalid");
    r.expect_closed().await;
    other_session_works(&h).await;
}

/// An argument (the payload of a request other than a write) of the
/// stock's 2 MiB or more is refused as soon as its header is in, before
/// any of it is held; one of 2 MiB - 1 is read and answered, the link
/// going on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argument_past_the_stock_limit_is_refused_from_its_header() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let addr = h.local_addr();
    let (mut r, _) = Raw::login(addr).await;
    r.write(&raw_frame(1, RequestId::STAT.0, 2 << 20, b"/a"))
        .await;
    let m = r.expect_error(ErrorCode::ARG_TOO_LONG).await;
    assert_eq!(m, "Request argument is too long");
    r.expect_closed().await;
    let (mut r, _) = Raw::login(addr).await;
    let mut path = b"/missing".to_vec();
    path.resize((2 << 20) - 1, b'x');
    r.write(&raw_frame(2, RequestId::STAT.0, path.len() as i32, &path))
        .await;
    // (answered on its merits: a path that long is refused as a path)
    let too_long = |e: &xroot::proto::response::ServerError| {
        e.message_lossy() == "Request argument is too long"
    };
    let (_, answer) = r.expect().await;
    assert!(
        !matches!(&answer, Response::Error(e) if too_long(e)),
        "{answer:?}"
    );
    r.send(3, Ping {}).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    other_session_works(&h).await;
}

/// A `kXR_write` naming no open file is answered `kXR_FileNotOpen` once
/// its data has come (read and dropped as it came, never held: see
/// tests/server_memory.rs), as the stock server answers it; the frame
/// after it is read as the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_naming_no_open_file_is_answered_after_its_data() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let mut params = [0u8; 16];
    params[..4].copy_from_slice(&[9, 0, 0, 0]);
    let mut write = BytesMut::new();
    xroot::proto::RequestHeader {
        streamid: StreamId::from_u16(4),
        requestid: RequestId::WRITE,
        params,
        dlen: 4 << 20,
    }
    .encode(&mut write);
    write.resize(24 + (4 << 20), 7);
    // the first half: no answer before the rest
    r.write(&write[..2 << 20]).await;
    let early = tokio::time::timeout(Duration::from_millis(300), r.next()).await;
    assert!(early.is_err(), "answered before its data: {early:?}");
    let mut rest = write[2 << 20..].to_vec();
    rest.extend_from_slice(&frame(5, Ping {}));
    r.write(&rest).await;
    let (sid, answer) = r.expect().await;
    assert_eq!(sid, StreamId::from_u16(4));
    match answer {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::FILE_NOT_OPEN);
            assert_eq!(e.message_lossy(), "write does not refer to an open file");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        r.expect().await,
        (StreamId::from_u16(5), Response::Ok(Bytes::new()))
    );
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_dropped() {
    let config = Config {
        handshake_timeout: Duration::from_millis(200),
        ..Config::default()
    };
    let h = start_with(MemFs::new(&[("/a.bin", pattern(5000))]), config).await;
    let mut silent = Raw::connect(h.local_addr()).await;
    let mut half = Raw::connect(h.local_addr()).await;
    half.write(&[0; 10]).await;
    silent.expect_closed().await;
    half.expect_closed().await;
    // once greeted, a link may stay idle
    let (mut r, _) = Raw::login(h.local_addr()).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    r.send(1, Ping {}).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    other_session_works(&h).await;
}

/// A handshake that stops midway is dropped at the (short) rest timeout,
/// whatever the time allowed for the first byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_that_stops_midway_is_dropped_soon() {
    let config = Config {
        handshake_timeout: Duration::from_secs(3600),
        handshake_rest_timeout: Duration::from_millis(100),
        ..Config::default()
    };
    let h = start_with(MemFs::new(&[("/a.bin", pattern(5000))]), config).await;
    let mut half = Raw::connect(h.local_addr()).await;
    half.write(&[0; 10]).await;
    half.expect_closed().await;
    // a whole handshake is served as before
    let (mut r, _) = Raw::login(h.local_addr()).await;
    r.send(1, Ping {}).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_chunked_as_the_reference() {
    let big = pattern(5 << 20);
    let h = start(MemFs::new(&[
        ("/a.bin", pattern(5000)),
        ("/big", big.clone()),
    ]))
    .await;
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let fh = r.open("/a.bin").await;
    let read = |offset: i64, rlen: i32| Read {
        fhandle: fh,
        offset,
        rlen,
        args: Some(ReadArgs::default()),
    };
    // tests/vectors/read_eof: 200 at 4900 of 5000 → oksofar 100, then empty ok
    r.send(1, read(4900, 200)).await;
    assert_eq!(
        r.expect().await.1,
        Response::OkSoFar(Bytes::copy_from_slice(&pattern(5000)[4900..]))
    );
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    r.send(2, read(6000, 10)).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    r.send(3, read(0, 0)).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    r.send(4, read(0, -1)).await;
    let m = r.expect_error(ErrorCode::ARG_INVALID).await;
    assert_eq!(m, "Read length is negative");

    // 5 MiB: 2 MiB oksofar chunks, then the rest in kXR_ok
    let fh = r.open("/big").await;
    let read = Read {
        fhandle: fh,
        rlen: 5 << 20,
        ..Default::default()
    };
    r.send(5, read).await;
    let mut got = Vec::new();
    let mut sizes = Vec::new();
    loop {
        match r.expect().await.1 {
            Response::OkSoFar(b) => {
                sizes.push(b.len());
                got.extend_from_slice(&b);
            }
            Response::Ok(b) => {
                sizes.push(b.len());
                got.extend_from_slice(&b);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(sizes, [2 << 20, 2 << 20, 1 << 20]);
    assert!(got == big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_follow_the_pathid_to_a_bound_substream() {
    let content = pattern(5000);
    let h = start(MemFs::new(&[("/a.bin", content.clone())])).await;
    let addr = h.local_addr();
    let (mut main, sessid) = Raw::login(addr).await;
    let fh = main.open("/a.bin").await;

    let mut sub = Raw::hello(addr, 1).await;
    sub.send(0, Bind { sessid }).await;
    let (_, Response::Ok(body)) = sub.expect().await else {
        panic!("bind")
    };
    assert_eq!(BindResponse::decode(body).unwrap().pathid, 1);

    main.send(5, readv_of(fh, 1, &[(0, 100), (4000, 1000)]))
        .await;
    let (sid, Response::Ok(body)) = sub.expect().await else {
        panic!("readv on the substream")
    };
    assert_eq!(sid, StreamId::from_u16(5));
    let items: Vec<_> = ReadvIter::new(body).map(Result::unwrap).collect();
    assert_eq!(&items[0].1[..], &content[..100]);
    assert_eq!(&items[1].1[..], &content[4000..]);

    let read = Read {
        fhandle: fh,
        offset: 10,
        rlen: 20,
        args: Some(ReadArgs {
            pathid: 1,
            preread: vec![],
        }),
    };
    main.send(6, read).await;
    assert_eq!(
        sub.expect().await.1,
        Response::Ok(Bytes::copy_from_slice(&content[10..30]))
    );

    let pgread = xroot::proto::request::Pgread {
        fhandle: fh,
        offset: 100,
        rlen: 5000,
        args: Some(xroot::proto::request::PgReadArgs {
            pathid: 1,
            reqflags: None,
        }),
    };
    main.send(7, pgread).await;
    let (_, Response::Status(st)) = sub.expect().await else {
        panic!("pgread on the substream")
    };
    let frame = xroot::proto::response::PgReadFrame::from_status(&st).unwrap();
    assert!(frame.is_final() && frame.bad_pages().unwrap().is_empty());
    assert_eq!(frame.data_len().unwrap(), 4900);

    main.send(7, readv_of(fh, 2, &[(0, 10)])).await;
    let m = main.expect_error(ErrorCode::ARG_INVALID).await;
    assert_eq!(m, "invalid path ID");

    // a request on the bound link is refused, the link stays
    sub.send(8, Ping {}).await;
    sub.expect_error(ErrorCode::INVALID_REQUEST).await;

    // binding: unknown session, then up to 15 substreams
    let mut stray = Raw::hello(addr, 1).await;
    stray.send(0, Bind { sessid: [1; 16] }).await;
    stray.expect_error(ErrorCode::NOT_FOUND).await;
    let mut subs = Vec::new();
    for pathid in 2..=15 {
        let mut s = Raw::hello(addr, 1).await;
        s.send(0, Bind { sessid }).await;
        let (_, Response::Ok(body)) = s.expect().await else {
            panic!("bind {pathid}")
        };
        assert_eq!(BindResponse::decode(body).unwrap().pathid, pathid);
        subs.push(s);
    }
    let mut s = Raw::hello(addr, 1).await;
    s.send(0, Bind { sessid }).await;
    let m = s.expect_error(ErrorCode::NO_MEMORY).await;
    assert_eq!(m, "bind limit exceeded");

    // the main link goes: its substreams are closed
    drop(main);
    sub.expect_closed().await;
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endsess_ends_another_session_of_the_same_user() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let addr = h.local_addr();
    let (mut a, sessid_a) = Raw::login(addr).await;
    let (mut b, sessid_b) = Raw::login(addr).await;
    assert_ne!(sessid_a, sessid_b);
    b.send(1, Endsess { sessid: sessid_a }).await;
    assert_eq!(b.expect().await.1, Response::Ok(Bytes::new()));
    a.expect_closed().await;
    // a session that is gone, or never was: ok
    b.send(2, Endsess { sessid: [3; 16] }).await;
    assert_eq!(b.expect().await.1, Response::Ok(Bytes::new()));
    // its own: the link closes
    b.send(3, Endsess { sessid: sessid_b }).await;
    b.expect_closed().await;
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_answers_are_deferred_with_waitresp() {
    let mut fs = MemFs::new(&[("/a.bin", pattern(5000)), ("/slow", pattern(77))]);
    fs.slow_stat = Duration::from_millis(600);
    let config = Config {
        waitresp_after: Duration::from_millis(100),
        ..Config::default()
    };
    let h = start_with(fs, config).await;
    let (mut r, _) = Raw::login(h.local_addr()).await;
    r.send(3, stat_of("/slow")).await;
    let (sid, Response::WaitResp(w)) = r.expect().await else {
        panic!("waitresp first")
    };
    assert_eq!((sid, w.seconds), (StreamId::from_u16(3), 1800));
    let (sid, Response::Attn(Attn::AsynResp { streamid, response })) = r.expect().await else {
        panic!("then the asynresp")
    };
    assert_eq!((sid, streamid), (StreamId::ZERO, StreamId::from_u16(3)));
    let Response::Ok(text) = *response else {
        panic!("{response:?}")
    };
    assert_eq!(StatInfo::decode(text).unwrap().size, 77);
    // our client takes the deferred answer transparently
    let client = Client::new();
    let st = client
        .fs(&url(&h, ""))
        .unwrap()
        .stat("/slow")
        .await
        .unwrap();
    assert_eq!(st.size, 77);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgwrite_reports_bad_pages_until_retried() {
    let fs = MemFs::new(&[("/a.bin", pattern(5000))]);
    let h = start(fs.clone()).await;
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let data = pattern(3 * 4096 + 100);
    for (name, retry) in [("/fixed", true), ("/broken", false)] {
        let open = Open {
            options: OpenOptions::NEW | OpenOptions::UPDATE,
            path: Bytes::from_static(name.as_bytes()),
            ..Default::default()
        };
        r.send(1, open).await;
        let (_, Response::Ok(b)) = r.expect().await else {
            panic!("open")
        };
        let fh = FHandle(b[..4].try_into().unwrap());
        let mut pg = Pgwrite::new(fh, 0, &data);
        let mut spoiled = pg.payload.to_vec();
        spoiled[4100 + 4 + 7] ^= 0xff; // a data byte of the second page
        pg.payload = spoiled.into();
        r.send(2, pg).await;
        let (_, Response::Status(s)) = r.expect().await else {
            panic!("pgwrite status")
        };
        let cse = PgWriteResponse::from_status(&s).unwrap().cse.unwrap();
        assert_eq!(
            (cse.bad_offsets, cse.dl_first, cse.dl_last),
            (vec![4096], 4096, 4096)
        );
        if retry {
            let mut again = Pgwrite::new(fh, 4096, &data[4096..8192]);
            again.reqflags = xroot::proto::request::PgReqFlags::RETRY;
            r.send(3, again).await;
            let (_, Response::Status(s)) = r.expect().await else {
                panic!("retry status")
            };
            assert_eq!(PgWriteResponse::from_status(&s).unwrap().cse, None);
        }
        r.send(4, xroot::proto::request::Close { fhandle: fh })
            .await;
        match retry {
            true => assert_eq!(r.expect().await.1, Response::Ok(Bytes::new())),
            false => {
                let m = r.expect_error(ErrorCode::CHKSUM_ERR).await;
                assert_eq!(m, "1 uncorrected checksum errors");
            }
        }
    }
    assert!(fs.content("/fixed").unwrap() == data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_config_answers_the_real_keys_and_the_extensions() {
    let h = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let keys = "readv_iov_max readv_ior_max bind_max pio_max chksum role xroot.pgreadv xroot.readv_crc32c tpc nokey";
    let query = Query {
        infotype: QueryCode::CONFIG,
        args: Bytes::from(format!("{keys}\0")),
        ..Default::default()
    };
    r.send(1, query).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("qconfig")
    };
    let values: Vec<String> = QconfigAnswer::decode(body)
        .unwrap()
        .values
        .iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert_eq!(
        values,
        [
            "1024",
            "2097136",
            "15",
            "5",
            "0:adler32",
            "none",
            "1",
            "1",
            "tpc",
            "nokey"
        ]
    );
    let client = Client::new();
    let nsp = client.fs(&url(&h, "")).unwrap();
    assert_eq!(
        nsp.query_config(&["readv_iov_max"]).await.unwrap(),
        ["1024"]
    );
    let bad = Query {
        infotype: QueryCode::CONFIG,
        args: Bytes::from_static(b" \0"),
        ..Default::default()
    };
    r.send(2, bad).await;
    r.expect_error(ErrorCode::ARG_MISSING).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_authentication_gates_the_session() {
    let config = Config {
        authenticator: Some(Arc::new(UnixAuth)),
        ..Config::default()
    };
    let h = start_with(MemFs::new(&[("/a.bin", pattern(5000))]), config).await;
    let addr = h.local_addr();
    let mut r = Raw::hello(addr, 3).await;
    r.send(0, login_request()).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("login")
    };
    let reply = LoginResponse::decode(body).unwrap();
    assert_eq!(reply.sec.as_deref(), Some(&b"&P=unix"[..]));
    r.send(1, stat_of("/a.bin")).await;
    let m = r.expect_error(ErrorCode::INVALID_REQUEST).await;
    assert_eq!(m, "Invalid request; user not authenticated");
    r.expect_closed().await;

    let mut r = Raw::hello(addr, 3).await;
    r.send(0, login_request()).await;
    r.expect().await;
    r.send(1, Ping {}).await; // allowed while authentication is pending
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    let auth = Auth {
        credtype: *b"unix",
        credentials: Bytes::from_static(b"unix\0alice users\0"),
    };
    r.send(2, auth).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    r.send(3, stat_of("/a.bin")).await;
    assert!(matches!(r.expect().await.1, Response::Ok(_)));
    // our client authenticates with unix by itself
    other_session_works(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_requests_finish() {
    let mut fs = MemFs::new(&[("/a.bin", pattern(5000))]);
    fs.delay = Duration::from_millis(400);
    let server = Server::bind("127.0.0.1:0", fs, Config::default())
        .await
        .unwrap();
    let h = server.handle();
    let serving = tokio::spawn(server.serve());
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let fh = r.open("/a.bin").await;
    let read = Read {
        fhandle: fh,
        offset: 100,
        rlen: 50,
        ..Default::default()
    };
    r.send(1, read).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.shutdown();
    // the read in flight is answered, then the link closes
    let expect = Bytes::copy_from_slice(&pattern(5000)[100..150]);
    assert_eq!(r.expect().await.1, Response::Ok(expect));
    r.expect_closed().await;
    tokio::time::timeout(GUARD, serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(h.local_addr()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_ipv6, ignore = "needs an IPv6 loopback")]
async fn ipv6_listener() {
    let fs = MemFs::new(&[("/a.bin", pattern(5000))]);
    let server = Server::bind("[::1]:0", fs, Config::default())
        .await
        .expect("bind [::1]:0");
    let h = server.handle();
    tokio::spawn(server.serve());
    let (mut r, _) = Raw::login(h.local_addr()).await;
    let locate = xroot::proto::request::Locate {
        path: Bytes::from_static(b"/a.bin"),
        ..Default::default()
    };
    r.send(1, locate).await;
    let expect = format!("Sw[::1]:{}\0", h.local_addr().port());
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::from(expect)));
    let client = Client::new();
    let url = format!("root://[::1]:{}//a.bin", h.local_addr().port());
    let f = client.open(&url, OpenFlags::READ).await.unwrap();
    assert_eq!(&f.read_at(0, 10).await.unwrap()[..], &pattern(10)[..]);
}

// ---------------------------------------------------------------------------
// The golden exchanges of the stock client and server, replayed

/// The data the vectors were made with (tests/vectors/README.md).
fn golden_fs() -> MemFs {
    let fs = MemFs::new(&[
        ("/small.bin", pattern(5000)),
        ("/big.bin", pattern(300_000)),
        ("/tomv.bin", pattern(1234)),
        ("/dir/a.bin", pattern(1000)),
        ("/dir/b.bin", pattern(5000)),
    ]);
    fs.store.lock().unwrap().dirs.push("/dir/sub".into());
    fs
}

/// Sends `ex`'s requests one at a time (each after the last one's final
/// answer) and collects the answers; a `kXR_waitresp` is dropped and an
/// asynresp unwrapped, so a deferred answer compares with a direct one.
async fn replay(
    addr: SocketAddr,
    ex: &xroot_testkit::vectors::Exchange,
) -> (Bytes, Vec<Vec<Response>>) {
    let mut r = Raw::connect(addr).await;
    let mut hs = BytesMut::new();
    ClientHandshake.encode(&mut hs);
    r.write(&hs).await;
    let (_, Response::Ok(hs)) = r.expect().await else {
        panic!("handshake")
    };
    let mut out = Vec::new();
    for req in &ex.requests {
        r.write(&xroot_testkit::vectors::wire(req)).await;
        let mut got = Vec::new();
        loop {
            let response = match r.expect().await {
                (_, Response::WaitResp(_)) => continue,
                (_, Response::Attn(Attn::AsynResp { response, .. })) => *response,
                (sid, response) => {
                    assert_eq!(sid, req.header.streamid, "{}", ex.name);
                    response
                }
            };
            let done = response.is_final();
            got.push(response);
            if done {
                break;
            }
        }
        out.push(got);
    }
    (hs, out)
}

/// The stock answers of `reply`, folded like [`replay`]'s.
fn stock_answers(reply: &xroot_testkit::vectors::Reply) -> Vec<Response> {
    reply
        .responses
        .iter()
        .map(|f| Response::decode(f.clone()).unwrap())
        .filter(|r| !matches!(r, Response::WaitResp(_)))
        .map(|r| match r {
            Response::Attn(Attn::AsynResp { response, .. }) => *response,
            r => r,
        })
        .collect()
}

/// The bytes of a stat text that do not depend on the inode or the clock.
fn stat_gist(text: &Bytes) -> (u64, bool) {
    let s = StatInfo::decode(text.clone()).unwrap();
    (s.size, s.is_dir())
}

/// Compares one answer, allowing what depends on the machine: session ids,
/// stat ids and times, error messages, the locate port.
fn same_answer(name: &str, id: RequestId, ours: &[Response], stock: &[Response]) {
    let statuses = |v: &[Response]| v.iter().map(Response::status).collect::<Vec<_>>();
    assert_eq!(statuses(ours), statuses(stock), "{name}: {id} statuses");
    let body = |v: &[Response]| -> Bytes {
        let parts: Vec<Bytes> = v
            .iter()
            .filter_map(|r| match r {
                Response::Ok(b) | Response::OkSoFar(b) => Some(b.clone()),
                _ => None,
            })
            .collect();
        parts.concat().into()
    };
    for (o, s) in ours.iter().zip(stock) {
        if let (Response::Error(o), Response::Error(s)) = (o, s) {
            assert_eq!(o.code, s.code, "{name}: {id} error code");
        }
    }
    if matches!(stock.last(), Some(Response::Error(_))) {
        return;
    }
    let (ob, sb) = (body(ours), body(stock));
    match id {
        RequestId::LOGIN => assert_eq!((ob.len(), sb.len()), (16, 16), "{name}"),
        RequestId::OPEN => {
            assert_eq!(ob[..12], sb[..12], "{name}: open handle");
            assert_eq!(
                stat_gist(&ob.slice(12..)),
                stat_gist(&sb.slice(12..)),
                "{name}"
            );
        }
        RequestId::STAT => assert_eq!(stat_gist(&ob), stat_gist(&sb), "{name}"),
        RequestId::LOCATE => assert_eq!(ob[..2], sb[..2], "{name}: locate entry type"),
        RequestId::DIRLIST => {
            use xroot::proto::response::DirList;
            let gist = |b: &Bytes| match DirList::decode(b.clone()).unwrap() {
                DirList::Plain(n) => (n, Vec::new()),
                DirList::Stat(e) => (
                    e.iter().map(|e| e.name.clone()).collect(),
                    e.iter()
                        .map(|e| {
                            stat_gist(&{
                                let mut t = BytesMut::new();
                                e.stat.write_text(&mut t);
                                t.freeze()
                            })
                        })
                        .collect(),
                ),
            };
            assert_eq!(gist(&ob), gist(&sb), "{name}: listing");
        }
        _ => assert_eq!(ours, stock, "{name}: {id} answer"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_exchanges_get_the_stock_answers() {
    let config = Config {
        version: "v5.5.3".into(),
        ..Config::default()
    };
    let h = start_with(golden_fs(), config).await;
    let names = xroot_testkit::vectors::names();
    assert!(names.len() >= 20, "{names:?}");
    for name in names {
        let ex = xroot_testkit::vectors::Exchange::load(&name);
        let (hs, ours) = replay(h.local_addr(), &ex).await;
        assert_eq!(hs, ex.responses[0].body, "{name}: handshake reply");
        for (reply, ours) in ex.replies().iter().zip(&ours) {
            let id = reply.request.header.requestid;
            same_answer(&name, id, ours, &stock_answers(reply));
        }
    }
}

// ---------------------------------------------------------------------------
// Side by side with the stock server

/// How far a case's connection gets before its request.
#[derive(Clone, Copy)]
enum Stage {
    /// Connected, nothing sent.
    Connected,
    /// Handshake and `kXR_protocol` done.
    Hello,
    /// Logged in, `/a.bin` open as handle 0.
    Ready,
}

/// The first answer to `bytes` sent at `stage`: its status and error code,
/// or `None` when the link was closed without one.
async fn first_answer(
    addr: SocketAddr,
    stage: Stage,
    bytes: &[u8],
) -> Option<(Status, Option<ErrorCode>)> {
    let mut r = match stage {
        Stage::Connected => Raw::connect(addr).await,
        Stage::Hello => Raw::hello(addr, 3).await,
        Stage::Ready => {
            let (mut r, _) = Raw::login(addr).await;
            assert_eq!(r.open("/a.bin").await, FHandle([0; 4]));
            r
        }
    };
    r.write(bytes).await;
    let (_, response) = r.next().await?;
    let code = match &response {
        Response::Error(e) => Some(e.code),
        _ => None,
    };
    Some((response.status(), code))
}

fn frame(sid: u16, req: impl Into<Request>) -> Vec<u8> {
    let mut b = BytesMut::new();
    req.into().encode(StreamId::from_u16(sid), &mut b);
    b.to_vec()
}

/// Every error a client can provoke at the protocol level, sent to the
/// stock server and to ours: the same status and error code come back (or
/// both close the link). Backend errors (a missing file, …) included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn errors_match_the_stock_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.bin"), pattern(5000)).unwrap();
    let Some(stock) = xroot_testkit::stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    let stock_addr = SocketAddr::from(([127, 0, 0, 1], stock.port));
    let ours = start(MemFs::new(&[("/a.bin", pattern(5000))])).await;
    let fh = FHandle([0; 4]);
    let gone = FHandle([0, 0, 0, 9]);
    let read = |fhandle, offset, rlen| Read {
        fhandle,
        offset,
        rlen,
        args: None,
    };
    let pgread = |fhandle, rlen| xroot::proto::request::Pgread {
        fhandle,
        rlen,
        ..Default::default()
    };
    let path = |p: &'static str| Bytes::from_static(p.as_bytes());
    let query = |infotype, args: &'static str| Query {
        infotype,
        args: path(args),
        ..Default::default()
    };
    let mut big_list = BytesMut::new();
    for i in 0..1025 {
        ReadListEntry {
            fhandle: fh,
            rlen: 1,
            offset: i,
        }
        .encode(&mut big_list);
    }
    use Stage::*;
    let cases: Vec<(&str, Stage, Vec<u8>)> = vec![
        ("stat relative", Ready, frame(1, stat_of("a.bin"))),
        ("stat dotdot", Ready, frame(1, stat_of("/x/../a.bin"))),
        ("stat missing", Ready, frame(1, stat_of("/nope"))),
        (
            "stat by unknown handle",
            Ready,
            frame(
                1,
                Stat {
                    fhandle: gone,
                    ..Default::default()
                },
            ),
        ),
        (
            "open missing",
            Ready,
            frame(
                1,
                Open {
                    options: OpenOptions::READ,
                    path: path("/nope"),
                    ..Default::default()
                },
            ),
        ),
        ("read unknown handle", Ready, frame(1, read(gone, 0, 10))),
        ("read negative rlen", Ready, frame(1, read(fh, 0, -1))),
        ("read past eof", Ready, frame(1, read(fh, 6000, 10))),
        ("read zero", Ready, frame(1, read(fh, 0, 0))),
        ("pgread zero", Ready, frame(1, pgread(fh, 0))),
        ("pgread unknown handle", Ready, frame(1, pgread(gone, 10))),
        (
            "readv 1025 elements",
            Ready,
            raw_frame(1, RequestId::READV.0, big_list.len() as i32, &big_list),
        ),
        (
            "readv misaligned",
            Ready,
            raw_frame(1, RequestId::READV.0, 17, &[0; 17]),
        ),
        (
            "readv element too large",
            Ready,
            frame(1, readv_of(fh, 0, &[(0, 2_097_137)])),
        ),
        (
            "readv negative",
            Ready,
            frame(1, readv_of(fh, 0, &[(0, -1)])),
        ),
        ("readv empty", Ready, frame(1, readv_of(fh, 0, &[]))),
        (
            "readv past eof",
            Ready,
            frame(1, readv_of(fh, 0, &[(4990, 20)])),
        ),
        (
            "readv unknown handle",
            Ready,
            frame(1, readv_of(gone, 0, &[(0, 20)])),
        ),
        (
            "write unknown handle",
            Ready,
            frame(
                1,
                xroot::proto::request::Write {
                    fhandle: gone,
                    data: path("xyz"),
                    ..Default::default()
                },
            ),
        ),
        (
            "pgwrite unknown handle",
            Ready,
            frame(1, Pgwrite::new(gone, 0, b"xyz")),
        ),
        (
            "close unknown handle",
            Ready,
            frame(1, xroot::proto::request::Close { fhandle: gone }),
        ),
        (
            "sync unknown handle",
            Ready,
            frame(1, xroot::proto::request::Sync { fhandle: gone }),
        ),
        (
            "truncate unknown handle",
            Ready,
            frame(
                1,
                xroot::proto::request::Truncate {
                    fhandle: gone,
                    ..Default::default()
                },
            ),
        ),
        (
            "query unknown handle",
            Ready,
            frame(
                1,
                Query {
                    fhandle: gone,
                    infotype: QueryCode::FINFO,
                    ..Default::default()
                },
            ),
        ),
        (
            "query bad infotype",
            Ready,
            frame(1, query(QueryCode(99), "x")),
        ),
        (
            "query config blank",
            Ready,
            frame(1, query(QueryCode::CONFIG, " \0")),
        ),
        ("unknown request", Ready, raw_frame(1, 3100, 1, b"x")),
        (
            "unknown request no payload",
            Ready,
            raw_frame(1, 3100, 0, b""),
        ),
        (
            "mkdir no payload",
            Ready,
            raw_frame(1, RequestId::MKDIR.0, 0, b""),
        ),
        (
            "auth without security",
            Ready,
            frame(
                1,
                Auth {
                    credtype: *b"unix",
                    credentials: path("unix\0me\0"),
                },
            ),
        ),
        ("second login", Ready, frame(1, login_request())),
        (
            "set unknown",
            Ready,
            frame(
                1,
                xroot::proto::request::Set {
                    data: path("foo bar"),
                    ..Default::default()
                },
            ),
        ),
        (
            "set appid",
            Ready,
            frame(
                1,
                xroot::proto::request::Set {
                    data: path("appid test"),
                    ..Default::default()
                },
            ),
        ),
        (
            "gpfile",
            Ready,
            frame(
                1,
                xroot::proto::request::Gpfile {
                    payload: path("x"),
                    ..Default::default()
                },
            ),
        ),
        (
            "endsess unknown",
            Ready,
            frame(1, Endsess { sessid: [5; 16] }),
        ),
        (
            "locate missing",
            Ready,
            frame(
                1,
                xroot::proto::request::Locate {
                    path: path("/nope"),
                    ..Default::default()
                },
            ),
        ),
        (
            "dirlist missing",
            Ready,
            frame(
                1,
                xroot::proto::request::Dirlist {
                    path: path("/nope"),
                    ..Default::default()
                },
            ),
        ),
        (
            "rm missing",
            Ready,
            frame(
                1,
                xroot::proto::request::Rm {
                    path: path("/nope"),
                },
            ),
        ),
        (
            "mv missing",
            Ready,
            frame(1, xroot::proto::request::Mv::new(b"/nope", b"/nope2")),
        ),
        ("ping", Ready, frame(1, Ping {})),
        (
            "negative dlen",
            Ready,
            raw_frame(1, RequestId::STAT.0, -1, b""),
        ),
        (
            "sigver without signature",
            Ready,
            raw_frame(1, RequestId::SIGVER.0, 0, b""),
        ),
        (
            "pgwrite too short",
            Ready,
            raw_frame(1, RequestId::PGWRITE.0, 3, b"abc"),
        ),
        ("stat before login", Hello, frame(1, stat_of("/a.bin"))),
        (
            "readv before login",
            Hello,
            frame(1, readv_of(fh, 0, &[(0, 1)])),
        ),
        (
            "negative dlen before login",
            Hello,
            raw_frame(1, RequestId::STAT.0, -1, b""),
        ),
        (
            "bind to an unknown session",
            Hello,
            frame(0, Bind { sessid: [7; 16] }),
        ),
        (
            "garbage handshake",
            Connected,
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
    ];
    for (name, stage, bytes) in &cases {
        let theirs = first_answer(stock_addr, *stage, bytes).await;
        let mine = first_answer(ours.local_addr(), *stage, bytes).await;
        assert_eq!(mine, theirs, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_requests() {
    let content = pattern(5000);
    let fs = MemFs::new(&[("/a.bin", content.clone()), ("/d/x", pattern(10))]);
    let h = start(fs.clone()).await;
    let client = Client::new();
    let nsp = client.fs(&url(&h, "")).unwrap();
    let flags = nsp.statx(&["/a.bin", "/d"]).await.unwrap();
    assert_eq!(flags, [StatFlags::FILE, StatFlags::IS_DIR]);
    nsp.truncate("/d/x", 4).await.unwrap();
    assert_eq!(fs.content("/d/x").unwrap().len(), 4);
    let f = client
        .open(&url(&h, "/d/x"), OpenFlags::UPDATE)
        .await
        .unwrap();
    f.truncate(2).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(fs.content("/d/x").unwrap().len(), 2);
    let unsupported = |e: xroot::client::Error| e.server_code() == Some(ErrorCode::UNSUPPORTED);
    assert!(unsupported(nsp.chmod("/a.bin", 0o600).await.unwrap_err()));
    assert!(unsupported(nsp.stat_vfs("/").await.unwrap_err()));
    assert!(unsupported(nsp.query_space("/").await.unwrap_err()));
    let prepared = nsp.prepare(&["/a.bin"], Default::default()).await.unwrap();
    assert_eq!(prepared, "");

    let (mut r, _) = Raw::login(h.local_addr()).await;
    let fh = r.open("/a.bin").await;
    // the readv extension: each element's crc32c in its header
    let mut crc = readv_of(fh, 0, &[(0, 100), (4000, 1000)]);
    crc.flags = xroot::proto::request::ReadvFlags::CRC32C;
    r.send(1, crc).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("readv crc32c")
    };
    for item in ReadvIter::new(body) {
        let (entry, data) = item.unwrap();
        assert!(xroot::proto::response::readv_crc32c_matches(&entry, &data));
    }
    // writev with doSync into a new file
    let open = Open {
        options: OpenOptions::NEW | OpenOptions::UPDATE,
        path: Bytes::from_static(b"/wv"),
        ..Default::default()
    };
    r.send(2, open).await;
    let (_, Response::Ok(b)) = r.expect().await else {
        panic!("open /wv")
    };
    let wv = FHandle(b[..4].try_into().unwrap());
    let seg = |offset, data: &'static [u8]| xroot::proto::request::WriteSegment {
        fhandle: wv,
        offset,
        data: Bytes::from_static(data),
    };
    let writev = xroot::proto::request::Writev {
        options: xroot::proto::request::WritevOptions::DO_SYNC,
        segments: vec![seg(3, b"def"), seg(0, b"abc"), seg(9, b"")],
    };
    r.send(3, writev).await;
    assert_eq!(r.expect().await.1, Response::Ok(Bytes::new()));
    assert_eq!(&fs.content("/wv").unwrap()[..], b"abcdef");
    // a dirlist with checksums
    let dl = xroot::proto::request::Dirlist {
        options: xroot::proto::request::DirlistOptions::DCKSM,
        path: Bytes::from_static(b"/d?cks.type=ADLER32"),
    };
    r.send(4, dl).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("dcksm")
    };
    let xroot::proto::response::DirList::Stat(entries) =
        xroot::proto::response::DirList::decode(body).unwrap()
    else {
        panic!("a dstat listing")
    };
    let c = entries[0].checksum.as_ref().unwrap();
    assert_eq!((&c.alg[..], c.value.len()), (&b"adler32"[..], 8));
    // a backend's redirect and wait
    r.send(5, stat_of("/redirect")).await;
    let (_, Response::Redirect(rd)) = r.expect().await else {
        panic!("redirect")
    };
    assert_eq!((rd.port, &rd.host[..]), (1095, &b"elsewhere.example"[..]));
    assert_eq!(rd.opaque.as_deref(), Some(&b"a=b"[..]));
    r.send(6, stat_of("/wait")).await;
    let (_, Response::Wait(w)) = r.expect().await else {
        panic!("wait")
    };
    assert_eq!((w.seconds, &w.message[..]), (3, &b"busy"[..]));
    // not supported: fattr without backend support, chkpoint, clone
    let fattr = xroot::proto::request::Fattr {
        subcode: xroot::proto::request::FattrSubcode::GET,
        path: Bytes::from_static(b"/a.bin"),
        names: vec![Bytes::from_static(b"k")],
        ..Default::default()
    };
    r.send(7, fattr).await;
    r.expect_error(ErrorCode::UNSUPPORTED).await;
    r.send(
        8,
        xroot::proto::request::Chkpoint {
            fhandle: fh,
            ..Default::default()
        },
    )
    .await;
    r.expect_error(ErrorCode::UNSUPPORTED).await;
    let dlen = frame(9, xroot::proto::request::Gpfile::default());
    r.write(&dlen).await;
    r.expect_error(ErrorCode::ARG_MISSING).await;
    // a signature is accepted without an answer
    let sig = xroot::proto::request::Sigver {
        expectrid: RequestId::PING,
        signature: Bytes::from_static(&[1; 32]),
        ..Default::default()
    };
    r.send(10, sig).await;
    r.send(11, Ping {}).await;
    assert_eq!(
        r.expect().await,
        (StreamId::from_u16(11), Response::Ok(Bytes::new()))
    );
}

/// A link over an in-process stream (`Server::serve_stream`, as the
/// `server_session` fuzz target drives it) is served as a TCP link is:
/// handshake, login, open and read answered, and the session ends when the
/// client closes its end, with the server counting the link meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_over_an_in_process_stream_is_served() {
    use tokio::io::AsyncReadExt;
    use xroot::proto::request::Protocol;
    use xroot::proto::ResponseDecoder;
    let data = pattern(100_000);
    let server = Server::bind(
        "127.0.0.1:0",
        MemFs::new(&[("/f", data.clone())]),
        Config::default(),
    )
    .await
    .unwrap();
    let (mut client, end) = tokio::io::duplex(1 << 16);
    let session = tokio::spawn(server.serve_stream(end, "192.0.2.1:5000".parse().unwrap()));
    let mut out = BytesMut::new();
    ClientHandshake.encode(&mut out);
    let requests: Vec<Request> = vec![
        Protocol::default().into(),
        login_request().into(),
        xroot_testkit::raw::open_request("/f", OpenOptions::READ).into(),
    ];
    for (i, r) in requests.into_iter().enumerate() {
        r.encode(StreamId::from_u16(i as u16 + 1), &mut out);
    }
    client.write_all(&out).await.unwrap();
    let mut buf = BytesMut::new();
    let mut dec = ResponseDecoder::new();
    let mut answers = Vec::new();
    // the handshake's answer, then one per request
    let mut wanted = 4;
    while answers.len() < wanted {
        match dec.decode(&mut buf).unwrap() {
            Some(f) => answers.push((f.header.streamid, Response::decode(f).unwrap())),
            None => assert!(client.read_buf(&mut buf).await.unwrap() > 0, "closed"),
        }
        if answers.len() == 4 && wanted == 4 {
            let Response::Ok(open) = &answers[3].1 else {
                panic!("open: {:?}", answers[3])
            };
            let read = Read {
                fhandle: FHandle(open[..4].try_into().unwrap()),
                offset: 1000,
                rlen: 5000,
                args: None,
            };
            out.clear();
            Request::from(read).encode(StreamId::from_u16(4), &mut out);
            client.write_all(&out).await.unwrap();
            wanted = 5;
        }
    }
    assert_eq!(server.stats().links.len(), 1);
    assert!(answers[..4]
        .iter()
        .all(|(_, r)| matches!(r, Response::Ok(_))));
    match &answers[4] {
        (sid, Response::Ok(b)) if *sid == StreamId::from_u16(4) => {
            assert_eq!(&b[..], &data[1000..6000])
        }
        other => panic!("the read's answer: {other:?}"),
    }
    drop(client);
    tokio::time::timeout(GUARD, session).await.unwrap().unwrap();
}
