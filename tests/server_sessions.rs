//! How sessions end, against raw frames and the stock client: `kXR_endsess`
//! of a session with a write still running in the backend answers
//! `kXR_wait` until that write is done and the session's files are closed;
//! a file open for writing is locked against other opens until then (so a
//! late write of an ended session cannot land on data another session
//! wrote); a file opened with `kXR_posc` and never closed is removed when
//! its session ends, by a dropped connection as by a killed `xrdcp --posc`.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Semaphore;
use xroot::proto::request::{Close, Endsess, OpenOptions, Write};
use xroot::proto::response::{Response, StatInfo};
use xroot::proto::ErrorCode;
use xroot::server::{
    Caller, Config, DirEntry, File, FileSystem, FsResult, LocalFs, OpenMode, Server,
};

use xroot_testkit::raw::{Raw, GUARD};
use xroot_testkit::stock::{stock_python_available, xrootd_client_available};

/// `LocalFs` whose writes wait while the gate is held.
#[derive(Clone)]
struct Gated {
    fs: LocalFs,
    gate: Arc<Gate>,
}

struct Gate {
    held: AtomicBool,
    /// Writes that reached the backend.
    entered: Semaphore,
    /// One permit per write let through while held.
    release: Semaphore,
}

struct GatedFile {
    file: <LocalFs as FileSystem>::File,
    gate: Arc<Gate>,
}

impl File for GatedFile {
    async fn read_at(&self, offset: u64, len: usize) -> FsResult<Bytes> {
        self.file.read_at(offset, len).await
    }

    async fn write_at(&self, offset: u64, data: Bytes) -> FsResult<()> {
        self.gate.entered.add_permits(1);
        if self.gate.held.load(Ordering::SeqCst) {
            self.gate.release.acquire().await.unwrap().forget();
        }
        self.file.write_at(offset, data).await
    }

    async fn stat(&self) -> FsResult<StatInfo> {
        self.file.stat().await
    }

    async fn close(&self) -> FsResult<()> {
        self.file.close().await
    }
}

impl FileSystem for Gated {
    type File = GatedFile;

    async fn open(
        &self,
        caller: &Caller,
        path: &str,
        mode: OpenMode,
        cgi: &str,
    ) -> FsResult<GatedFile> {
        Ok(GatedFile {
            file: self.fs.open(caller, path, mode, cgi).await?,
            gate: self.gate.clone(),
        })
    }

    async fn stat(&self, caller: &Caller, path: &str) -> FsResult<StatInfo> {
        self.fs.stat(caller, path).await
    }

    async fn dirlist(
        &self,
        caller: &Caller,
        path: &str,
        with_stat: bool,
    ) -> FsResult<Vec<DirEntry>> {
        self.fs.dirlist(caller, path, with_stat).await
    }

    async fn rm(&self, caller: &Caller, path: &str) -> FsResult<()> {
        self.fs.rm(caller, path).await
    }
}

async fn serve(dir: &Path) -> (std::net::SocketAddr, Arc<Gate>) {
    let gate = Arc::new(Gate {
        held: AtomicBool::new(false),
        entered: Semaphore::new(0),
        release: Semaphore::new(0),
    });
    let fs = Gated {
        fs: LocalFs::new(dir).unwrap(),
        gate: gate.clone(),
    };
    let server = Server::bind("127.0.0.1:0", fs, Config::default())
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    (addr, gate)
}

const WRITE: OpenOptions = OpenOptions(OpenOptions::NEW.0 | OpenOptions::UPDATE.0);

fn write(fh: xroot::proto::FHandle, data: &[u8]) -> Write {
    Write {
        fhandle: fh,
        offset: 0,
        pathid: 0,
        data: Bytes::copy_from_slice(data),
    }
}

/// Polls `cond` until it holds, within the guard.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < GUARD, "{what}: not within {GUARD:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endsess_waits_for_the_ended_sessions_write_and_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, gate) = serve(dir.path()).await;
    // session A: a write that the backend holds
    let (mut a, a_id) = Raw::login(addr).await;
    let fh = a.open_with("/f.bin", WRITE).await;
    gate.held.store(true, Ordering::SeqCst);
    a.send(2, write(fh, b"late write of the ended session"))
        .await;
    let _ = gate.entered.acquire().await.unwrap();
    // session B (same user, same host) ends A while its write runs
    let (mut b, _) = Raw::login(addr).await;
    b.send(3, Endsess { sessid: a_id }).await;
    match b.expect().await.1 {
        Response::Wait(w) => assert_eq!(w.seconds, 4),
        other => panic!("endsess with a write in flight: {other:?}"),
    }
    // the lock of A's open stands until its write is done
    b.send(
        9,
        xroot_testkit::raw::open_request("/f.bin", OpenOptions::UPDATE),
    )
    .await;
    let locked = b.expect_error(ErrorCode::FILE_LOCKED).await;
    assert_eq!(
        locked,
        "Output file /f.bin is already opened by 1 writer; open denied."
    );
    // the write ends: A's session ends, its answer dropped with its link
    gate.held.store(false, Ordering::SeqCst);
    gate.release.add_permits(1);
    a.expect_closed().await;
    b.send(4, Endsess { sessid: a_id }).await;
    assert!(matches!(b.expect().await.1, Response::Ok(_)));
    let fh = b.open_with("/f.bin", OpenOptions::UPDATE).await;
    b.send(5, write(fh, b"B's data")).await;
    assert!(matches!(b.expect().await.1, Response::Ok(_)));
    b.send(6, Close { fhandle: fh }).await;
    assert!(matches!(b.expect().await.1, Response::Ok(_)));
    let got = std::fs::read(dir.path().join("f.bin")).unwrap();
    assert_eq!(
        &got[..8],
        b"B's data",
        "A's write landed before B's, never after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_and_a_writer_exclude_each_other_until_closed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.bin"), b"data").unwrap();
    let (addr, _) = serve(dir.path()).await;
    let (mut a, _) = Raw::login(addr).await;
    let (mut b, _) = Raw::login(addr).await;
    let fh = a.open("/r.bin").await;
    let _also = b.open("/r.bin").await; // readers share
    b.send(
        9,
        xroot_testkit::raw::open_request("/r.bin", OpenOptions::UPDATE),
    )
    .await;
    assert_eq!(
        b.expect_error(ErrorCode::FILE_LOCKED).await,
        "Output file /r.bin is already opened by 2 readers; open denied."
    );
    let forced = OpenOptions(OpenOptions::UPDATE.0 | OpenOptions::FORCE.0);
    let _forced = b.open_with("/r.bin", forced).await;
    a.send(2, Close { fhandle: fh }).await;
    assert!(matches!(a.expect().await.1, Response::Ok(_)));
    a.send(
        9,
        xroot_testkit::raw::open_request("/r.bin", OpenOptions::READ),
    )
    .await;
    assert_eq!(
        a.expect_error(ErrorCode::FILE_LOCKED).await,
        "Input file /r.bin is already opened by 1 writer; open denied."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posc_file_never_closed_is_removed_when_its_session_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve(dir.path()).await;
    let posc = OpenOptions(WRITE.0 | OpenOptions::POSC.0);
    for (name, options, close) in [
        ("posc-dropped", posc, false),
        ("posc-closed", posc, true),
        ("plain-dropped", WRITE, false),
    ] {
        let (mut a, _) = Raw::login(addr).await;
        let path = format!("/{name}");
        let fh = a.open_with(&path, options).await;
        a.send(2, write(fh, b"partial upload")).await;
        assert!(matches!(a.expect().await.1, Response::Ok(_)));
        if close {
            a.send(3, Close { fhandle: fh }).await;
            assert!(matches!(a.expect().await.1, Response::Ok(_)));
        }
        drop(a); // the connection drops
    }
    let gone = dir.path().join("posc-dropped");
    eventually("the never-closed posc file is removed", || !gone.exists()).await;
    // once its session has ended (its lock released), a file closed, or
    // opened without posc, is still there
    let (mut b, _) = Raw::login(addr).await;
    for kept in ["posc-closed", "plain-dropped"] {
        let start = std::time::Instant::now();
        loop {
            let open = xroot_testkit::raw::open_request(&format!("/{kept}"), OpenOptions::UPDATE);
            b.send(9, open).await;
            match b.expect().await.1 {
                Response::Ok(_) => break,
                Response::Error(e) if e.code == ErrorCode::FILE_LOCKED => {}
                other => panic!("open {kept}: {other:?}"),
            }
            assert!(start.elapsed() < GUARD, "{kept} stays locked");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(dir.path().join(kept).exists(), "{kept} must stay");
    }
}

/// Uploads 3 MiB with the stock Python client in three writes and closes;
/// prints `ok` or the first failure. (Opened for update: XrdCl re-opens a
/// recovered file with its flags less `kXR_new` and `kXR_delete`, so a
/// file opened with `kXR_new` alone comes back read-only, from the stock
/// server as from ours.)
const UPLOAD: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
f = client.File()
st, _ = f.open(sys.argv[1], OpenFlags.NEW | OpenFlags.UPDATE)
if not st.ok:
    print("open: %s" % st.message); sys.exit()
for i in range(3):
    data = bytes([(j * 7 + i) % 251 for j in range(1 << 20)])
    st, _ = f.write(data, offset=i << 20)
    if not st.ok:
        print("write %d: %s" % (i, st.message)); sys.exit()
st, _ = f.close()
print("ok" if st.ok else "close: %s" % st.message)
"#;

/// The stock client loses the answer to a write (its connection cut as the
/// write goes through, the server's side of the session left alive): it
/// reconnects, ends the old session with `kXR_endsess`, which our server
/// answers once that session's write is done and its file closed and
/// unlocked, and opens the file again; the upload completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
async fn the_stock_client_recovers_an_upload_whose_write_answer_was_lost() {
    if !stock_python_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve(dir.path()).await;
    let proxy =
        xroot_testkit::cut_proxy::CutProxy::start(addr.port(), xroot::proto::RequestId::WRITE)
            .await;
    let url = format!("root://127.0.0.1:{}//up.bin", proxy.port);
    let args: Vec<String> = ["-c", UPLOAD, &url].iter().map(|s| s.to_string()).collect();
    let out = xroot_testkit::tools::run_ok("/usr/bin/python3", &args).await;
    assert_eq!(String::from_utf8_lossy(&out).trim(), "ok");
    assert_eq!(proxy.cuts(), 1, "the first write's answer was lost");
    let want: Vec<u8> = (0..3)
        .flat_map(|i| (0..1usize << 20).map(move |j| ((j * 7 + i) % 251) as u8))
        .collect();
    let got = std::fs::read(dir.path().join("up.bin")).unwrap();
    assert!(
        got == want,
        "the uploaded bytes ({} of {})",
        got.len(),
        want.len()
    );
}

/// Opens for reading and writing from three sessions: what each open got.
async fn lock_sequence(addr: std::net::SocketAddr) -> Vec<String> {
    let mut out = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(Raw::login(addr).await.0);
    }
    let steps = [
        (0, OpenOptions::READ),
        (1, OpenOptions::UPDATE),
        (2, OpenOptions::READ),
    ];
    for (who, options) in steps {
        let r = &mut sessions[who];
        r.send(9, xroot_testkit::raw::open_request("/l.bin", options))
            .await;
        out.push(match r.expect().await.1 {
            Response::Ok(_) => "ok".to_string(),
            Response::Error(e) => format!("{}: {}", e.code, e.message_lossy()),
            other => format!("{other:?}"),
        });
    }
    // the readers go (their sessions end), then a writer and a reader
    sessions.truncate(0);
    let (mut w, _) = Raw::login(addr).await;
    let (mut r, _) = Raw::login(addr).await;
    let start = std::time::Instant::now();
    loop {
        w.send(
            9,
            xroot_testkit::raw::open_request("/l.bin", OpenOptions::UPDATE),
        )
        .await;
        match w.expect().await.1 {
            Response::Ok(_) => break,
            Response::Error(e) if e.code == ErrorCode::FILE_LOCKED => {}
            other => panic!("open for update: {other:?}"),
        }
        assert!(start.elapsed() < GUARD, "the readers' sessions do not end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    r.send(
        9,
        xroot_testkit::raw::open_request("/l.bin", OpenOptions::READ),
    )
    .await;
    out.push(match r.expect().await.1 {
        Response::Error(e) => format!("{}: {}", e.code, e.message_lossy()),
        other => format!("{other:?}"),
    });
    out
}

/// [`lock_sequence`] on our server serving `dir` (made to hold the file):
/// the stock server's answers, word for word.
async fn our_lock_sequence(dir: &Path) -> Vec<String> {
    let l = dir.join("l.bin");
    std::fs::write(&l, b"locked").unwrap();
    std::fs::set_permissions(&l, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let (ours, _) = serve(dir).await;
    let got = lock_sequence(ours).await;
    assert_eq!(
        got,
        [
            "ok",
            "kXR_FileLocked(3003): Output file /l.bin is already opened by 1 reader; open denied.",
            "ok",
            "kXR_FileLocked(3003): Input file /l.bin is already opened by 1 writer; open denied."
        ]
    );
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_answer_with_the_stock_servers_messages() {
    let dir = tempfile::tempdir().unwrap();
    our_lock_sequence(dir.path()).await;
}

/// The same opens on the stock server, on the same directory: the same
/// answers as ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn locks_answer_as_the_stock_server() {
    let dir = tempfile::tempdir().unwrap();
    let got = our_lock_sequence(dir.path()).await;
    let Some(stock) = xroot_testkit::stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], stock.port));
    assert_eq!(lock_sequence(addr).await, got, "the stock server's answers");
}

/// The stock `xrdcp --posc` killed midway through an upload: the partial
/// file goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn a_killed_xrdcp_posc_upload_leaves_nothing() {
    if !xrootd_client_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve(dir.path()).await;
    let mut xrdcp = Command::new("xrdcp")
        .args(["-s", "--posc", "-"])
        .arg(format!("root://{addr}//up.bin"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn xrdcp");
    let mut stdin = xrdcp.stdin.take().unwrap();
    // more than one 8 MiB chunk, so that some data reaches the server
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..24 {
        stdin.write_all(&chunk).unwrap();
    }
    let up = dir.path().join("up.bin");
    eventually("xrdcp writes to the server", || {
        std::fs::metadata(&up).is_ok_and(|m| m.len() > 0)
    })
    .await;
    xrdcp.kill().unwrap();
    xrdcp.wait().unwrap();
    drop(stdin);
    eventually("the killed upload's file is removed", || !up.exists()).await;
}
