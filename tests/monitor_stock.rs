//! The monitoring streams (`--monitor`, `--report`) against the stock
//! xrootd 5.5.3's (`xrootd.monitor all flush 1s fstat 1s lfn ops xfr 5
//! ident 5m dest fstat info user files io redir HOST:PORT`, `xrd.report
//! HOST:PORT every 1s all`): the same workload (the stock `xrdcp` of three
//! files, a partial read and a vector read from the Python bindings, an
//! `xrdcp` upload) against each, each sending to a UDP collector of the
//! test. Per file, the open and close records (size, read-write, bytes
//! read, vector-read bytes and counts, bytes written, the ops block) and
//! the trace stream's close totals equal the stock's; the login records
//! carry the same user fields and each login has its disconnect; every
//! summary packet parses, has the stock's sections in its order, and the
//! stock `mpxstats` reads ours. With the `xrootdlib` package (a third-party
//! decoder, `scripts/test` installs it), both streams decode to the same
//! view through it too.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::net::UdpSocket;
use xroot_proto::monitor::fstat::FileRecord;
use xroot_proto::monitor::gstream::CacheFileClose;
use xroot_proto::monitor::header::code;
use xroot_proto::monitor::summary::Element;
use xroot_proto::monitor::trace::TraceEntry;
use xroot_proto::monitor::Packet;
use xroot_testkit::collector::{xrootdlib_python, Collector};
use xroot_testkit::stock::{self, StockServer};
use xroot_testkit::tools::{run_ok, run_tool};
use xroot_testkit::xcache::StockCache;
use xroot_tools::{serve, xcache};

/// The files each server exports, with their sizes.
const FILES: [(&str, usize); 3] = [
    ("a.bin", 1_000_000),
    ("b.bin", 3_000_000),
    ("c.bin", 12_345),
];
/// Bytes uploaded.
const UPLOAD: usize = 200_000;

/// The partial and the vector read of the Python bindings.
const PYTHON: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
f = client.File()
st, _ = f.open(sys.argv[1] + "//a.bin", OpenFlags.READ)
assert st.ok, st
st, data = f.read(1000, 5000)
assert st.ok and len(data) == 5000, st
st, v = f.vector_read([(0, 1000), (5000, 1100), (20000, 1200)])
assert st.ok, st
f.close()
"#;

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

/// A directory with the files of [`FILES`].
fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (i, (name, len)) in FILES.iter().enumerate() {
        std::fs::write(dir.path().join(name), pattern(*len, i)).unwrap();
    }
    dir
}

/// The workload against the server on `port`: three downloads, the Python
/// reads, one upload of `up.bin`.
async fn workload(port: u16, scratch: &Path) {
    let url = format!("root://127.0.0.1:{port}");
    for (name, _) in FILES {
        let to = scratch.join(format!("{port}-{name}"));
        run_ok(
            "xrdcp",
            &[
                "-f".into(),
                "-s".into(),
                format!("{url}//{name}"),
                to.display().to_string(),
            ],
        )
        .await;
    }
    run_ok(
        "/usr/bin/python3",
        &["-c".into(), PYTHON.into(), url.clone()],
    )
    .await;
    let up = scratch.join("up.bin");
    std::fs::write(&up, pattern(UPLOAD, 9)).unwrap();
    run_ok(
        "xrdcp",
        &[
            "-f".into(),
            "-s".into(),
            up.display().to_string(),
            format!("{url}//up.bin"),
        ],
    )
    .await;
}

/// What a collector learns from one server's detailed stream, in forms
/// that do not depend on the run (ids, pids, times left out).
#[derive(Debug, Default, PartialEq)]
struct View {
    /// Each login's user line without its pid and server id, and its
    /// detail (`&R=...&x=...&y=...&I=4`), sorted.
    users: Vec<String>,
    /// Each file's open and close records, by path, sorted.
    files: Vec<String>,
    /// The trace stream's opens and closes (with their byte totals), by
    /// path, sorted.
    trace: Vec<String>,
    /// Logins whose disconnect the file stream and the trace stream told.
    disconnected: Vec<String>,
}

/// Decodes `packets` (every one must decode) into a [`View`], and the
/// summary documents' section ids.
fn view(packets: &[Vec<u8>]) -> (View, Vec<Vec<String>>) {
    let mut users: BTreeMap<u32, String> = BTreeMap::new();
    let mut paths: HashMap<u32, String> = HashMap::new();
    let mut opens: HashMap<u32, String> = HashMap::new();
    let mut files = Vec::new();
    let mut trace = Vec::new();
    let mut f_disc = Vec::new();
    let mut t_disc = Vec::new();
    let mut summaries = Vec::new();
    let mut trace_entries = Vec::new();
    for p in packets {
        match Packet::decode(p).unwrap_or_else(|e| panic!("{e}: {p:02x?}")) {
            Packet::Map(m) if m.header.code == code::USER => {
                let u = m.user().expect("a user line");
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                users.insert(
                    m.dictid,
                    format!(
                        "{}/{}@{} {}",
                        text(u.prot),
                        text(u.user),
                        text(u.host),
                        text(m.detail())
                    ),
                );
            }
            Packet::Map(m) if m.header.code == code::PATH => {
                paths.insert(m.dictid, String::from_utf8_lossy(m.detail()).into_owned());
            }
            Packet::Map(_) => {}
            Packet::Fstat(f) => {
                for r in f.records {
                    match r {
                        FileRecord::Open {
                            file,
                            size,
                            rw,
                            lfn: Some((_, path)),
                        } => {
                            let path = String::from_utf8_lossy(path).into_owned();
                            opens.insert(file, format!("{path} open size={size} rw={rw}"));
                        }
                        FileRecord::Close {
                            file,
                            forced,
                            xfr,
                            ops,
                            ..
                        } => {
                            let open = opens.remove(&file).expect("a close after its open");
                            files.push(format!("{open} | close forced={forced} {xfr:?} {ops:?}"));
                        }
                        FileRecord::Disc { user } => f_disc.push(user),
                        other => panic!("unexpected f-stream record {other:?}"),
                    }
                }
            }
            Packet::Trace(t) => trace_entries.extend(t.entries),
            Packet::Summary(e) => {
                summaries.push(
                    e.children
                        .iter()
                        .filter_map(|c| c.get_attr("id").map(str::to_string))
                        .collect(),
                );
            }
            other => panic!("unexpected packet {other:?}"),
        }
    }
    for e in trace_entries {
        let path = |file: u32| paths.get(&file).cloned().unwrap_or_default();
        match e {
            TraceEntry::Open { file, size } => trace.push(format!("{} open {size}", path(file))),
            TraceEntry::Close {
                file,
                read_shift,
                read_val,
                write_shift,
                write_val,
            } => trace.push(format!(
                "{} close read={} written={}",
                path(file),
                u64::from(read_val) << read_shift,
                u64::from(write_val) << write_shift
            )),
            TraceEntry::Disc { user, .. } => t_disc.push(user),
            _ => {}
        }
    }
    assert!(opens.is_empty(), "opens without their close: {opens:?}");
    f_disc.sort_unstable();
    t_disc.sort_unstable();
    assert_eq!(f_disc, t_disc, "the f-stream and trace disconnects");
    let mut disconnected: Vec<String> = f_disc.iter().map(|u| users[u].clone()).collect();
    let mut users: Vec<String> = users.into_values().collect();
    for v in [&mut users, &mut files, &mut trace, &mut disconnected] {
        v.sort();
    }
    (
        View {
            users,
            files,
            trace,
            disconnected,
        },
        summaries,
    )
}

/// Splits a collector's datagrams into the detailed stream's and the
/// summaries (both servers send both to one collector each here).
fn summaries_of(packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
    packets
        .iter()
        .filter(|p| p.first() == Some(&b'<'))
        .cloned()
        .collect()
}

/// Waits until the packets show every login disconnected and `closes`
/// close records, and two summaries; at most 30 s (then the caller's
/// comparison says what is missing).
async fn settle(c: &Collector, closes: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let packets = c.packets();
        let mut users = 0;
        let mut discs = 0;
        let mut close_records = 0;
        let mut docs = 0;
        for p in &packets {
            match Packet::decode(p) {
                Ok(Packet::Map(m)) if m.header.code == code::USER => users += 1,
                Ok(Packet::Fstat(f)) => {
                    for r in &f.records {
                        match r {
                            FileRecord::Disc { .. } => discs += 1,
                            FileRecord::Close { .. } => close_records += 1,
                            _ => {}
                        }
                    }
                }
                Ok(Packet::Summary(_)) => docs += 1,
                _ => {}
            }
        }
        if users > 0 && discs == users && close_records >= closes && docs >= 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The stock server's directives for a collector at `addr`.
fn stock_directives(addr: SocketAddr) -> Vec<String> {
    vec![
        format!(
            "xrootd.monitor all flush 1s fstat 1s lfn ops xfr 5 ident 5m dest fstat info user \
             files io redir {addr}"
        ),
        format!("xrd.report {addr} every 1s all"),
    ]
}

/// Runs the workload against the stock server and ours; their packets.
async fn both(scratch: &Path) -> Option<(Vec<Vec<u8>>, Vec<Vec<u8>>)> {
    let stock_data = data_dir();
    let stock_collector = Collector::start().await;
    let directives = stock_directives(stock_collector.addr);
    let lines: Vec<&str> = directives.iter().map(String::as_str).collect();
    let stock = StockServer::start(stock_data.path(), &lines)?;
    workload(stock.port, scratch).await;
    settle(&stock_collector, 5).await;
    drop(stock);

    let our_data = data_dir();
    let our_collector = Collector::start().await;
    let dest = our_collector.addr.to_string();
    let cli = serve::Cli::try_parse_from([
        "serve",
        "--port",
        "0",
        "--monitor",
        &dest,
        "--monitor-flush",
        "1",
        "--report",
        &dest,
        "--report-every",
        "1",
        our_data.path().to_str().unwrap(),
    ])
    .unwrap();
    let server = serve::start(&cli).await.unwrap();
    let (port, handle) = (server.local_addr().port(), server.handle());
    tokio::spawn(server.serve());
    workload(port, scratch).await;
    settle(&our_collector, 5).await;
    handle.shutdown();
    Some((stock_collector.packets(), our_collector.packets()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_xrootd,
    ignore = "needs the stock xrootd (apt-get install xrootd-server)"
)]
#[cfg_attr(
    missing_xrootd_client,
    ignore = "needs the stock xrdcp (apt-get install xrootd-client)"
)]
#[cfg_attr(
    missing_stock_python,
    ignore = "needs the stock Python client (apt-get install python3-xrootd)"
)]
async fn the_detailed_and_summary_streams_equal_the_stocks() {
    if !stock::xrootd_client_available() || !stock::stock_python_available() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let Some((theirs, ours)) = both(scratch.path()).await else {
        return;
    };
    let (their_view, their_docs) = view(&theirs);
    let (our_view, our_docs) = view(&ours);
    eprintln!("stock: {their_view:#?}\nours: {our_view:#?}");
    assert_eq!(our_view.files.len(), 5, "{our_view:#?}");
    assert_eq!(our_view.users.len(), 5, "{our_view:#?}");
    assert_eq!(our_view.files, their_view.files);
    assert_eq!(our_view.trace, their_view.trace);
    assert_eq!(our_view.users, their_view.users);
    assert_eq!(our_view.disconnected, their_view.disconnected);
    assert_eq!(our_view.disconnected, our_view.users);

    // every summary parses (view() asserted it) and has the stock's
    // sections, in its order, but the stock's `oss` (its exported paths)
    assert!(our_docs.len() >= 2 && their_docs.len() >= 2);
    let theirs_ids: Vec<String> = their_docs[0]
        .iter()
        .filter(|id| *id != "oss")
        .cloned()
        .collect();
    for ids in &our_docs {
        assert_eq!(ids, &theirs_ids);
    }
    mpxstats_reads(&summaries_of(&ours)).await;
    xrootdlib_agrees(&theirs, &ours).await;
}

/// The stock `mpxstats -f flat` reads our summary documents: each comes
/// out as its `key value` lines, among them what the document says of its
/// links and logins.
async fn mpxstats_reads(docs: &[Vec<u8>]) {
    if !stock::program_available(
        "mpxstats",
        &["-p", "0", "-x"],
        "the stock mpxstats is not installed (apt-get install xrootd-server)",
    ) {
        return;
    }
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let child = std::process::Command::new("mpxstats")
        .args(["-f", "flat", "-p", &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start mpxstats");
    // it binds at start: send until it has read one
    let sender = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    for d in docs {
        sender.send_to(d, ("127.0.0.1", port)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let first = Element::parse(std::str::from_utf8(&docs[0]).unwrap()).unwrap();
    let logins = first
        .section("xrootd")
        .unwrap()
        .number(&["lgn", "num"])
        .unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("link.tot ")).count(),
        docs.len(),
        "mpxstats printed:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l == format!("xrootd.lgn.num {logins}")),
        "mpxstats printed:\n{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("proc.usr.s ")), "{text}");
}

/// Both servers' detailed streams decoded by xrootdlib
/// (`tests/monitor/xrootdlib_view.py`) give the same view.
async fn xrootdlib_agrees(theirs: &[Vec<u8>], ours: &[Vec<u8>]) {
    let Some(python) = xrootdlib_python() else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitor/xrootdlib_view.py");
    let decode = |packets: &[Vec<u8>]| {
        let hex: String = packets
            .iter()
            .filter(|p| p.first() != Some(&b'<'))
            .map(|p| p.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("packets.hex");
        std::fs::write(&file, hex).unwrap();
        (dir, file)
    };
    let (_d1, their_file) = decode(theirs);
    let (_d2, our_file) = decode(ours);
    let run = |file: &Path| {
        let args = vec![script.display().to_string(), file.display().to_string()];
        let python = python.display().to_string();
        async move { run_tool(&python, &args).await }
    };
    let (t, o) = (run(&their_file).await, run(&our_file).await);
    for out in [&t, &o] {
        assert!(
            out.status.success(),
            "xrootdlib_view.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (t, o) = (
        String::from_utf8_lossy(&t.stdout),
        String::from_utf8_lossy(&o.stdout),
    );
    eprintln!("xrootdlib, stock:\n{t}\nxrootdlib, ours:\n{o}");
    assert!(
        t.lines().filter(|l| l.starts_with("file ")).count() == 5,
        "{t}"
    );
    assert_eq!(o, t);
}

/// The cache workload: `xrdcp` of `a.bin` and `c.bin`, the Python reads of
/// `a.bin` (cached by then), `xrdcp` of `a.bin` again.
async fn cache_workload(port: u16, scratch: &Path) {
    let url = format!("root://127.0.0.1:{port}");
    for name in ["a.bin", "c.bin"] {
        let to = scratch.join(format!("{port}-{name}"));
        run_ok(
            "xrdcp",
            &[
                "-f".into(),
                "-s".into(),
                format!("{url}//{name}"),
                to.display().to_string(),
            ],
        )
        .await;
    }
    run_ok(
        "/usr/bin/python3",
        &["-c".into(), PYTHON.into(), url.clone()],
    )
    .await;
    let to = scratch.join(format!("{port}-again"));
    run_ok(
        "xrdcp",
        &[
            "-f".into(),
            "-s".into(),
            format!("{url}//a.bin"),
            to.display().to_string(),
        ],
    )
    .await;
}

/// The records of the cache's g-stream in `packets` (each must read and
/// encode back to its bytes), in the order sent, without what differs
/// between runs: the times.
fn cache_records(packets: &[Vec<u8>]) -> Vec<CacheFileClose> {
    let mut out = Vec::new();
    for p in packets {
        if let Ok(Packet::GStream(g)) = Packet::decode(p) {
            assert_eq!((g.provider, g.header.code), (b'C', b'g'));
            for r in g.records {
                let text = r;
                let r = CacheFileClose::decode(r)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(r)));
                // written as the stock writes it, byte for byte
                assert_eq!(r.encode().as_bytes(), text);
                assert!(r.attach_t > 0 && r.attach_t <= r.detach_t, "{r:?}");
                out.push(CacheFileClose {
                    attach_t: 0,
                    detach_t: 0,
                    ..r
                });
            }
        }
    }
    out
}

/// Waits until `c` got `n` g-stream records and two summaries (at most
/// 30 s).
async fn settle_cache(c: &Collector, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let packets = c.packets();
        if cache_records(&packets).len() >= n && summaries_of(&packets).len() >= 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The f-stream's close records in the order sent: path and record.
fn closes(packets: &[Vec<u8>]) -> Vec<String> {
    let mut paths = HashMap::new();
    let mut out = Vec::new();
    for p in packets {
        if let Ok(Packet::Fstat(f)) = Packet::decode(p) {
            for r in f.records {
                match r {
                    FileRecord::Open {
                        file,
                        lfn: Some((_, path)),
                        ..
                    } => {
                        paths.insert(file, String::from_utf8_lossy(path).into_owned());
                    }
                    FileRecord::Close { file, xfr, ops, .. } => {
                        out.push(format!("{} {xfr:?} {ops:?}", paths[&file]));
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// Through the stock XCache (`pfc` added to the directive's `dest`) and
/// ours (`xcache --monitor --report`), both in front of one stock origin:
/// the g-stream's `file_close` records (size, blocks, blocks cached, bytes
/// from the cache, from the origin, bypassed, the origins read) and the
/// f-stream's close records equal the stock's, but where the stock
/// `xrdcp`'s reads differ (its first download through the stock XCache is
/// read in 118 `kXR_read`s, 1,475,712 bytes asked, overlapping; through
/// ours in one `kXR_pgread` of the file); the summaries carry the stock
/// XCache's sections, the `cache` one with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_xrootd,
    ignore = "needs the stock xrootd (apt-get install xrootd-server)"
)]
#[cfg_attr(
    missing_xrootd_client,
    ignore = "needs the stock xrdcp (apt-get install xrootd-client)"
)]
#[cfg_attr(
    missing_stock_python,
    ignore = "needs the stock Python client (apt-get install python3-xrootd)"
)]
async fn through_the_caches_the_gstream_equals_the_stock_xcaches() {
    if !stock::xrootd_client_available() || !stock::stock_python_available() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let data = data_dir();
    let Some(origin) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let remote = format!("127.0.0.1:{}", origin.port);

    let stock_collector = Collector::start().await;
    let mut lines = stock_directives(stock_collector.addr);
    lines[0] = lines[0].replace(" redir ", " redir pfc ");
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let Some(cache) = StockCache::start_with(origin.port, "64k", &lines) else {
        return;
    };
    cache_workload(cache.port(), scratch.path()).await;
    settle_cache(&stock_collector, 4).await;
    drop(cache);

    let our_collector = Collector::start().await;
    let dest = our_collector.addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = xroot_testkit::our_cache::cli_args(origin.port, dir.path());
    for a in [
        "--block-size",
        "64k",
        "--monitor",
        &dest,
        "--monitor-flush",
        "1",
        "--report",
        &dest,
        "--report-every",
        "1",
    ] {
        argv.push(a.to_string());
    }
    let cli = xcache::Cli::try_parse_from(argv).unwrap();
    let server = xcache::start(&cli).await.unwrap();
    let (port, handle) = (server.local_addr().port(), server.handle());
    tokio::spawn(server.serve());
    cache_workload(port, scratch.path()).await;
    settle_cache(&our_collector, 4).await;
    handle.shutdown();

    let (theirs, ours) = (stock_collector.packets(), our_collector.packets());
    let (mut their_g, our_g) = (cache_records(&theirs), cache_records(&ours));
    eprintln!("stock: {their_g:#?}\nours: {our_g:#?}");
    assert_eq!(our_g.len(), 4, "{our_g:#?}");
    // access_cnt: the accesses the file's `.cinfo` (ours: its sidecar)
    // recorded, this one included
    let block = |lfn: &str, size: u64, hit: u64, miss: u64, access_cnt: u64| CacheFileClose {
        lfn: lfn.into(),
        size,
        access_cnt,
        blk_size: 65536,
        n_blks: size.div_ceil(65536),
        n_blks_done: size.div_ceil(65536),
        remotes: if miss > 0 {
            vec![remote.clone()]
        } else {
            vec![]
        },
        b_hit: hit,
        b_miss: miss,
        ..CacheFileClose::default()
    };
    // the first download: every byte from the origin (the stock counts
    // its client's overlapping reads as hits too)
    assert_eq!(our_g[0], block("/a.bin", 1_000_000, 0, 1_000_000, 1));
    assert_eq!(their_g[0].b_miss, 1_000_000);
    their_g[0].b_hit = 0;
    let want = [
        block("/a.bin", 1_000_000, 0, 1_000_000, 1),
        block("/c.bin", 12_345, 0, 12_345, 1),
        block("/a.bin", 1_000_000, 8300, 0, 2),
        block("/a.bin", 1_000_000, 1_000_000, 0, 3),
    ];
    assert_eq!(their_g, want);
    assert_eq!(our_g, want);

    let (mut their_closes, mut our_closes) = (closes(&theirs), closes(&ours));
    assert_eq!(our_closes.len(), 4, "{our_closes:#?}");
    // the first download: ours one pgread of the file; the stock's client
    // reads it through the stock XCache in one read or in many overlapping
    // ones, as its timing goes, so its bytes and counts are not compared
    let whole = "/a.bin FileXfr { read: 1000000, readv: 0, write: 0 } Some(FileOps { read: 1,";
    let first_download = |closes: &[String]| {
        closes
            .iter()
            .position(|c| c.starts_with("/a.bin FileXfr { read: ") && !c.contains("readv: 3300"))
    };
    let their_first = first_download(&their_closes)
        .unwrap_or_else(|| panic!("the stock's first download: {their_closes:#?}"));
    their_closes.remove(their_first);
    let first = first_download(&our_closes).unwrap();
    assert!(our_closes[first].starts_with(whole), "{our_closes:#?}");
    our_closes.remove(first);
    their_closes.sort();
    our_closes.sort();
    assert_eq!(our_closes, their_closes);

    // ours has the stock XCache's sections but `pss` (its proxy's opens
    // and closes), the `cache` one among them, where the stock puts it
    let ids = |docs: &[Vec<u8>]| -> Vec<Vec<String>> {
        docs.iter()
            .map(|d| {
                let e = Element::parse(std::str::from_utf8(d).unwrap()).unwrap();
                e.children
                    .iter()
                    .filter_map(|c| c.get_attr("id").map(str::to_string))
                    .filter(|id| id != "pss")
                    .collect()
            })
            .collect()
    };
    let (their_ids, our_ids) = (ids(&summaries_of(&theirs)), ids(&summaries_of(&ours)));
    assert!(their_ids[0].contains(&"cache".to_string()));
    for i in &our_ids {
        assert_eq!(i, &their_ids[0]);
    }
    let last = summaries_of(&ours).pop().unwrap();
    let doc = Element::parse(std::str::from_utf8(&last).unwrap()).unwrap();
    let cache = doc.section("cache").unwrap();
    assert_eq!(cache.get_attr("type"), Some("pfc"));
    // bytes read into the cache, and delivered from its disk
    assert_eq!(cache.number(&["rd", "in"]), Some(1_012_345));
    assert!(cache.number(&["rd", "out"]).unwrap() >= 1_008_300);
}
