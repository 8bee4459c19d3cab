#![no_main]
//! A whole server session fed arbitrary frames: a [`Server`] on an
//! in-memory backend, one link over an in-process stream
//! ([`Server::serve_stream`]). The link is logged in and has two files open
//! (handle 0 read-only, handle 1 for update; their answers awaited) before
//! the fuzzer's bytes follow; the client then closes its end, and everything the server
//! answers is read as it comes.
//!
//! Checked for every input: no panic (a panicking request task aborts the
//! run: the fuzz profile aborts on panic), the session ends (time is paused
//! and advances when every task waits, so timeouts fire at once), and
//! memory stays bounded: the bytes live in the Rust heap during the
//! session stay under [`PEAK`] above what they were before it (the server
//! runs with small budgets), and come back to within [`LEAK`] after it.
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xroot_proto::request::{Capver, Login, Mode, Open, OpenOptions, Protocol, Request};
use xroot_proto::response::StatInfo;
use xroot_proto::{ClientHandshake, ErrorCode, ResponseDecoder, Status, StreamId};
use xroot_server::auth::Caller;
use xroot_server::{Config, DirEntry, File, FileSystem, FsError, FsResult, OpenMode, Server};

/// Heap bytes a session may hold above the baseline at its peak.
const PEAK: usize = 48 << 20;
/// Heap bytes a session may leave behind (the server's pools and maps
/// keep a little).
const LEAK: usize = 1 << 20;
/// Most bytes an in-memory file may grow to.
const FILE_MAX: u64 = 1 << 20;

/// The Rust heap, counted: bytes live now and at most since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static HIGH: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            HIGH.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// Files by path, each at most [`FILE_MAX`] bytes.
#[derive(Clone, Default)]
struct MemFs {
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
}

struct MemFile {
    fs: MemFs,
    path: String,
}

fn stat_of(len: usize) -> StatInfo {
    StatInfo {
        id: 1,
        size: len as u64,
        flags: Default::default(),
        mtime: 0,
        extended: None,
    }
}

impl File for MemFile {
    async fn read_at(&self, offset: u64, len: usize) -> FsResult<Bytes> {
        let files = self.fs.files.lock().unwrap();
        let data = files.get(&self.path).map(Vec::as_slice).unwrap_or(&[]);
        let start = (offset as usize).min(data.len());
        let end = start + len.min(data.len() - start);
        Ok(Bytes::copy_from_slice(&data[start..end]))
    }

    async fn write_at(&self, offset: u64, data: Bytes) -> FsResult<()> {
        let end = offset.saturating_add(data.len() as u64);
        if end > FILE_MAX {
            return Err(FsError::new(ErrorCode::NO_SPACE, "file too large"));
        }
        let mut files = self.fs.files.lock().unwrap();
        let file = files.entry(self.path.clone()).or_default();
        if file.len() < end as usize {
            file.resize(end as usize, 0);
        }
        file[offset as usize..end as usize].copy_from_slice(&data);
        Ok(())
    }

    async fn stat(&self) -> FsResult<StatInfo> {
        let files = self.fs.files.lock().unwrap();
        Ok(stat_of(files.get(&self.path).map_or(0, Vec::len)))
    }

    async fn truncate(&self, size: u64) -> FsResult<()> {
        if size > FILE_MAX {
            return Err(FsError::new(ErrorCode::NO_SPACE, "file too large"));
        }
        let mut files = self.fs.files.lock().unwrap();
        files
            .entry(self.path.clone())
            .or_default()
            .resize(size as usize, 0);
        Ok(())
    }
}

impl FileSystem for MemFs {
    type File = MemFile;

    async fn open(&self, _: &Caller, path: &str, mode: OpenMode, _: &str) -> FsResult<MemFile> {
        let mut files = self.files.lock().unwrap();
        if mode.create_new && files.contains_key(path) {
            return Err(FsError::new(ErrorCode::ITEM_EXISTS, "file exists"));
        }
        if mode.create_new || mode.truncate {
            if files.len() >= 16 {
                return Err(FsError::new(ErrorCode::NO_SPACE, "too many files"));
            }
            files.insert(path.to_string(), Vec::new());
        } else if !files.contains_key(path) {
            return Err(FsError::new(ErrorCode::NOT_FOUND, "no such file"));
        }
        Ok(MemFile {
            fs: self.clone(),
            path: path.to_string(),
        })
    }

    async fn stat(&self, _: &Caller, path: &str) -> FsResult<StatInfo> {
        match self.files.lock().unwrap().get(path) {
            Some(f) => Ok(stat_of(f.len())),
            None => Err(FsError::new(ErrorCode::NOT_FOUND, "no such file")),
        }
    }

    async fn dirlist(&self, _: &Caller, path: &str, _: bool) -> FsResult<Vec<DirEntry>> {
        if path != "/" {
            return Err(FsError::new(ErrorCode::NOT_FOUND, "no such directory"));
        }
        let files = self.files.lock().unwrap();
        Ok(files
            .iter()
            .map(|(p, f)| DirEntry {
                name: p[1..].to_string(),
                stat: Some(stat_of(f.len())),
            })
            .collect())
    }

    async fn rm(&self, _: &Caller, path: &str) -> FsResult<()> {
        match self.files.lock().unwrap().remove(path) {
            Some(_) => Ok(()),
            None => Err(FsError::new(ErrorCode::NOT_FOUND, "no such file")),
        }
    }
}

struct World {
    rt: tokio::runtime::Runtime,
    server: Server<MemFs>,
    fs: MemFs,
    /// The frames every input follows: handshake, protocol, login, opens.
    preamble: Bytes,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let fs = MemFs::default();
        let config = Config {
            link_budget: 1 << 20,
            server_budget: 4 << 20,
            server_payload_budget: 4 << 20,
            ..Config::default()
        };
        let server = rt
            .block_on(Server::bind("127.0.0.1:0", fs.clone(), config))
            .unwrap();
        let mut preamble = BytesMut::new();
        ClientHandshake.encode(&mut preamble);
        let frames: [Request; 4] = [
            Protocol::default().into(),
            Login {
                pid: 1,
                username: Login::pack_username("fuzz"),
                capver: Capver(0x85),
                ..Default::default()
            }
            .into(),
            open("/r", OpenOptions::READ),
            open("/w", OpenOptions::UPDATE),
        ];
        for (i, f) in frames.into_iter().enumerate() {
            f.encode(StreamId::from_u16(i as u16 + 1), &mut preamble);
        }
        World {
            rt,
            server,
            fs,
            preamble: preamble.freeze(),
        }
    })
}

fn open(path: &str, options: OpenOptions) -> Request {
    Open {
        mode: Mode(0o644),
        options,
        path: Bytes::copy_from_slice(path.as_bytes()),
        ..Default::default()
    }
    .into()
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    {
        let mut files = w.fs.files.lock().unwrap();
        files.clear();
        files.insert("/r".into(), (0..200_000u32).map(|i| i as u8).collect());
        files.insert("/w".into(), vec![7; 50_000]);
    }
    let before = LIVE.load(Ordering::Relaxed);
    HIGH.store(before, Ordering::Relaxed);
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    w.rt.block_on(async {
        let (mut client, end) = tokio::io::duplex(64 << 10);
        let session = tokio::spawn(w.server.serve_stream(end, peer));
        client.write_all(&w.preamble).await.unwrap();
        // the preamble's five answers first, so that the handles are open
        let mut buf = BytesMut::new();
        let mut dec = ResponseDecoder::new();
        let mut answered = 0;
        while answered < 5 {
            match dec.decode(&mut buf).unwrap() {
                Some(f) => {
                    assert_eq!(f.header.status, Status::OK, "preamble answer {answered}");
                    answered += 1;
                }
                None => assert!(client.read_buf(&mut buf).await.unwrap() > 0),
            }
        }
        let (mut rd, mut wr) = tokio::io::split(client);
        let write = async {
            let _ = wr.write_all(data).await;
            let _ = wr.shutdown().await;
        };
        let read = async {
            let mut sink = vec![0u8; 64 << 10];
            while matches!(rd.read(&mut sink).await, Ok(n) if n > 0) {}
        };
        tokio::join!(write, read);
        session.await.unwrap();
        client = rd.unsplit(wr);
        drop(client);
        // the link's writer task ends once the session has
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    });
    let high = HIGH.load(Ordering::Relaxed);
    let after = LIVE.load(Ordering::Relaxed);
    assert!(
        high - before <= PEAK,
        "the session held {} KiB at its peak",
        (high - before) >> 10
    );
    assert!(
        after <= before + LEAK,
        "the session left {} KiB behind",
        (after - before) >> 10
    );
});
