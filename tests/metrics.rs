//! `serve --metrics` and `xcache --metrics`: the Prometheus text scraped
//! over HTTP agrees with what the test's client did, and the cache's
//! figures with the cache's own `query stats` answer; `-v` logs one line per
//! request with client, request, path, status, duration and bytes.
//!
//! Hostile ones: requests pipelined on one session and a close while reads
//! are in flight are counted exactly; a crowd of scrapers (silent ones,
//! garbage, some gone mid-answer) neither stops the server's clients nor
//! the well-formed scrapes; a huge request head is refused unread.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xroot::client::{Client, OpenFlags};
use xroot::proto::exchange::Answer;
use xroot::proto::request::{self, Request, Stat};
use xroot::proto::{ErrorCode, FHandle, StreamId};
use xroot_testkit::example::{example_bin, scrape};
use xroot_testkit::raw::{readv_request, Raw, GUARD};

/// An example (`serve` or `xcache`) run as a process with `--port 0
/// --metrics 127.0.0.1:0`; killed on drop.
struct Daemon {
    child: Child,
    addr: SocketAddr,
    metrics: SocketAddr,
    stderr: Option<ChildStderr>,
}

impl Daemon {
    /// Starts example `name` with `args` and reads its two first lines,
    /// `NAME listening on ADDR` and `NAME metrics on http://ADDR/metrics`.
    fn start(name: &str, args: &[&str]) -> Daemon {
        let mut child = Command::new(example_bin(name))
            .args(args)
            .args(["--port", "0", "--metrics", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the example");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = |prefix: String| {
            let mut l = String::new();
            out.read_line(&mut l).unwrap();
            l.trim()
                .strip_prefix(&prefix)
                .map(|a| a.trim_end_matches("/metrics").to_string())
                .unwrap_or_else(|| panic!("{name} said {l:?}, not {prefix}..."))
        };
        let addr = line(format!("{name} listening on ")).parse().unwrap();
        let metrics = line(format!("{name} metrics on http://")).parse().unwrap();
        let stderr = child.stderr.take();
        Daemon {
            child,
            addr,
            metrics,
            stderr,
        }
    }

    fn url(&self) -> String {
        format!("root://{}", self.addr)
    }

    /// What `GET /metrics` answers: the body, parsed into `series → value`
    /// (`name{labels}` as written), after checking the status line.
    fn scrape(&self) -> BTreeMap<String, f64> {
        scrape(self.metrics)
    }

    /// Stops it and returns what it logged.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut log = String::new();
        self.stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .unwrap();
        log
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole answer to `GET path` (HTTP/1.1, one request, closed after).
fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

fn value(m: &BTreeMap<String, f64>, series: &str) -> f64 {
    *m.get(series)
        .unwrap_or_else(|| panic!("no {series} in {:#?}", m.keys().collect::<Vec<_>>()))
}

fn write_file(dir: &Path, name: &str, len: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.join(name), &data).unwrap();
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_counts_what_its_clients_did() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_file(dir.path(), "f.bin", 1 << 20);
    let serve = Daemon::start("serve", &["-v", dir.path().to_str().unwrap()]);
    let before = serve.scrape();
    assert_eq!(value(&before, "xroot_read_bytes_total"), 0.0);

    let client = Client::new();
    let url = format!("{}//f.bin", serve.url());
    let file = client.open(&url, OpenFlags::READ).await.unwrap();
    for i in 0..4u64 {
        let got = file.read_at(i * 1000, 1000).await.unwrap();
        assert_eq!(&got[..], &data[i as usize * 1000..][..1000]);
    }
    let parts = file.readv(&[(0, 100), (5000, 200)]).await.unwrap();
    assert_eq!(parts.len(), 2);
    file.close().await.unwrap();
    let fs = client.fs(&serve.url()).unwrap();
    assert!(fs.stat("/missing").await.is_err());
    let out = client
        .open(&format!("{}//new.bin", serve.url()), OpenFlags::NEW)
        .await
        .unwrap();
    out.write_at(0, Bytes::from(vec![1u8; 3000])).await.unwrap();
    out.close().await.unwrap();

    let m = serve.scrape();
    let requests = |kind: &str, status: &str| {
        value(
            &m,
            &format!("xroot_requests_total{{kind=\"{kind}\",status=\"{status}\"}}"),
        )
    };
    assert_eq!(requests("open", "ok"), 2.0);
    assert_eq!(requests("read", "ok"), 4.0);
    assert_eq!(requests("readv", "ok"), 1.0);
    assert_eq!(requests("close", "ok"), 2.0);
    assert_eq!(requests("stat", "NotFound"), 1.0);
    assert_eq!(requests("write", "ok"), 1.0);
    // four reads of 1000 bytes, and a vector read of 300 bytes
    assert_eq!(value(&m, "xroot_read_bytes_total"), 4000.0 + 300.0);
    assert_eq!(value(&m, "xroot_written_bytes_total"), 3000.0);
    assert_eq!(
        value(&m, "xroot_request_duration_seconds_count{kind=\"read\"}"),
        4.0
    );
    assert_eq!(
        value(
            &m,
            "xroot_request_duration_seconds_bucket{le=\"+Inf\",kind=\"read\"}"
        ),
        4.0
    );
    assert_eq!(value(&m, "xroot_vector_reads_in_flight"), 0.0);
    assert!(value(&m, "xroot_connections_total") >= 1.0);
    assert!(value(&m, "xroot_links") >= 1.0, "our client's link is open");
    assert!(http_get(serve.metrics, "/other").starts_with("HTTP/1.1 404"));

    drop(client);
    let log = serve.stop();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("xroot::request") && l.contains("request=\"read\""))
        .collect();
    assert_eq!(lines.len(), 4, "{log}");
    for l in &lines {
        for field in [
            "client=127.0.0.1:",
            "path=\"/f.bin\"",
            "status=\"ok\"",
            "duration_us=",
            "bytes_out=1000",
        ] {
            assert!(l.contains(field), "{field} missing in {l}");
        }
    }
    assert!(
        log.contains("request=\"stat\" path=\"/missing\" status=\"NotFound\""),
        "{log}"
    );
}

/// A figure of the cache's `query stats` answer: the first number after
/// `label` on the line that starts with it.
fn stat_figure(stats: &str, label: &str) -> f64 {
    let line = stats
        .lines()
        .find(|l| {
            l.strip_prefix(label)
                .is_some_and(|rest| rest.starts_with("  "))
        })
        .unwrap_or_else(|| panic!("no {label:?} in {stats}"));
    line[line.find(label).unwrap() + label.len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xcache_counts_bytes_asked_and_fetched_as_its_stats_say() {
    let dir = tempfile::tempdir().unwrap();
    let len = 256 << 10;
    let data = write_file(dir.path(), "f.bin", len);
    let origin = Daemon::start("serve", &[dir.path().to_str().unwrap()]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Daemon::start(
        "xcache",
        &[
            "--origin",
            &origin.url(),
            "--cache-dir",
            cache_dir.path().to_str().unwrap(),
        ],
    );
    let client = Client::new();
    let url = format!("{}//f.bin", cache.url());
    for _ in 0..2 {
        let file = client.open(&url, OpenFlags::READ).await.unwrap();
        let got = file.read_at(0, len).await.unwrap();
        assert_eq!(&got[..], &data[..]);
        file.close().await.unwrap();
    }
    let m = cache.scrape();
    let stats = client
        .fs(&cache.url())
        .unwrap()
        .query_stats("a")
        .await
        .unwrap();
    let asked = value(&m, "xroot_cache_asked_bytes_total");
    let fetched = value(&m, "xroot_cache_fetched_bytes_total");
    let from_disk = value(&m, "xroot_cache_disk_bytes_total");
    assert_eq!(asked, 2.0 * len as f64, "{stats}");
    assert_eq!(fetched, len as f64, "the second read came from disk");
    assert_eq!(from_disk, len as f64);
    assert_eq!(value(&m, "xroot_cache_hit_ratio"), 0.5);
    let (client_requests, origin_requests) = (
        value(&m, "xroot_cache_client_requests_total"),
        value(&m, "xroot_cache_origin_requests_total"),
    );
    assert!(client_requests >= 2.0 && origin_requests >= 1.0);
    let ratio = value(&m, "xroot_cache_origin_requests_per_client_request");
    assert!((ratio - origin_requests / client_requests).abs() < 1e-9);
    assert!(value(&m, "xroot_cache_disk_size_bytes") > 0.0);
    assert!(value(&m, "xroot_cache_disk_used_bytes") > 0.0);
    // the same figures the cache answers to `query stats` itself
    assert_eq!(stat_figure(&stats, "asked by clients"), asked);
    assert_eq!(stat_figure(&stats, "fetched from origin"), fetched);
    assert_eq!(stat_figure(&stats, "served from disk"), from_disk);
    assert_eq!(stat_figure(&stats, "client requests"), client_requests);
    assert_eq!(stat_figure(&stats, "origin requests"), origin_requests);
    drop(client);
    drop((cache, origin));
}

/// The `<stats id="ID">` sections of a `query stats` answer: id → the
/// element names directly inside, in order (nested sections not followed).
fn sections(xml: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for part in xml.split("<stats id=\"").skip(1) {
        let (id, rest) = part.split_once("\">").unwrap();
        let body = rest.split("</stats>").next().unwrap();
        let names = body
            .split('<')
            .filter(|t| !t.is_empty() && !t.starts_with('/'))
            .map(|t| t.split(['>', ' ']).next().unwrap().to_string())
            .collect();
        out.insert(id.to_string(), names);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn serve_answers_query_stats_in_the_stock_shape() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "f.bin", 10_000);
    let Some(stock) = xroot_testkit::stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    let serve = Daemon::start("serve", &[dir.path().to_str().unwrap()]);
    let client = Client::new();
    for base in [serve.url(), format!("root://127.0.0.1:{}", stock.port)] {
        let file = client
            .open(&format!("{base}//f.bin"), OpenFlags::READ)
            .await
            .unwrap();
        file.read_at(0, 100).await.unwrap();
        file.readv(&[(0, 10), (50, 10)]).await.unwrap();
        file.close().await.unwrap();
    }
    let stats = |base: String| {
        let client = client.clone();
        async move { client.fs(&base).unwrap().query_stats("a").await.unwrap() }
    };
    let ours = stats(serve.url()).await;
    let theirs = stats(format!("root://127.0.0.1:{}", stock.port)).await;
    assert!(ours.starts_with("<statistics tod=\"") && ours.ends_with("</statistics>"));
    let (ours_s, theirs_s) = (sections(&ours), sections(&theirs));
    assert_eq!(
        ours_s.keys().collect::<Vec<_>>(),
        ["info", "link", "xrootd"],
        "{ours}"
    );
    for (id, names) in &ours_s {
        let stock_names = &theirs_s[id];
        for n in names {
            assert!(
                stock_names.contains(n),
                "<{n}> in our {id} section, not in the stock one: {theirs}"
            );
        }
    }
    // what our server counted: the one read and the one vector read
    assert!(
        ours.contains("<rd>1</rd>") && ours.contains("<rv>1</rv>"),
        "{ours}"
    );
    assert!(ours.contains("<open>1</open>"), "{ours}");
    let link_only = client
        .fs(&serve.url())
        .unwrap()
        .query_stats("l")
        .await
        .unwrap();
    assert_eq!(sections(&link_only).keys().collect::<Vec<_>>(), ["link"]);
}

/// The figure of every series of `name` whose labels include each of
/// `labels` (`kind="read"`), summed; 0 when there is none.
fn sum(m: &BTreeMap<String, f64>, name: &str, labels: &[&str]) -> f64 {
    m.iter()
        .filter(|(series, _)| {
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            n == name && labels.iter().all(|l| rest.contains(l))
        })
        .map(|(_, v)| v)
        .sum()
}

/// `xroot_requests_total` of `kind` with `status` (0 when never counted).
fn requests(m: &BTreeMap<String, f64>, kind: &str, status: &str) -> f64 {
    let (kind, status) = (format!("kind=\"{kind}\""), format!("status=\"{status}\""));
    sum(m, "xroot_requests_total", &[&kind, &status])
}

impl Daemon {
    /// Scrapes until `done` holds of the figures (within the guard).
    async fn scrape_until(&self, what: &str, done: impl Fn(&BTreeMap<String, f64>) -> bool) {
        let wait = async {
            loop {
                if done(&self.scrape()) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(GUARD, wait)
            .await
            .unwrap_or_else(|_| panic!("no scrape showed {what}: {:#?}", self.scrape()));
    }
}

/// Every request in flight, of every kind, and every vector read.
fn in_flight(m: &BTreeMap<String, f64>) -> f64 {
    sum(m, "xroot_requests_in_flight", &[]) + value(m, "xroot_vector_reads_in_flight")
}

/// `(streamid, data, error)` of each answer to the requests `sent`,
/// paired with them by [`Raw::answers`] (`xroot_proto::exchange`): a
/// read's data, a vector read's elements joined, or the error code.
async fn answers(
    raw: &mut Raw,
    sent: Vec<(StreamId, Request)>,
) -> BTreeMap<u16, (Vec<u8>, Option<ErrorCode>)> {
    let mut out = BTreeMap::new();
    for x in raw.answers(sent).await {
        let sid = x.streamid.to_u16();
        let answer = match x.answer {
            Answer::Read(b) => (b.to_vec(), None),
            Answer::Readv(elements) => (
                elements.iter().flat_map(|(_, b)| b.to_vec()).collect(),
                None,
            ),
            Answer::Error(e) => (Vec::new(), Some(e.code)),
            other => panic!("{sid}: {other:?}"),
        };
        assert!(out.insert(sid, answer).is_none(), "two answers to {sid}");
    }
    out
}

fn read(fh: FHandle, offset: usize, len: usize) -> Request {
    Request::from(request::Read {
        fhandle: fh,
        offset: offset as i64,
        rlen: len as i32,
        args: None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_and_a_close_mid_read_are_counted_exactly() {
    const READS: usize = 200;
    const STATS: usize = 20;
    const READVS: usize = 20;
    // big reads sent and never read: the server blocks on the full socket
    const BIG: usize = 48;
    const BIG_LEN: usize = 1 << 20;
    const FRAME: usize = 512 << 10;
    let dir = tempfile::tempdir().unwrap();
    let data = write_file(dir.path(), "f.bin", 8 << 20);
    let serve = Daemon::start("serve", &[dir.path().to_str().unwrap()]);
    let (mut raw, _) = Raw::login(serve.addr).await;
    let fh = raw.open("/f.bin").await;

    // every request in one write, none waiting for an answer
    let mut frames = BytesMut::new();
    let mut expected: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    let mut sid = 100u16;
    let mut sent = Vec::new();
    let mut put = |r: Request, frames: &mut BytesMut, sent: &mut Vec<(StreamId, Request)>| {
        r.encode(StreamId::from_u16(sid), frames);
        sent.push((StreamId::from_u16(sid), r));
        sid += 1;
        sid - 1
    };
    for i in 0..READS {
        let (at, len) = (i * 37_003 % (7 << 20), 1 + i * 311 % 20_000);
        let s = put(read(fh, at, len), &mut frames, &mut sent);
        expected.insert(s, data[at..at + len].to_vec());
    }
    for i in 0..STATS {
        let stat = Stat {
            path: Bytes::from(format!("/missing{i}")),
            ..Default::default()
        };
        put(Request::from(stat), &mut frames, &mut sent);
    }
    for i in 0..READVS {
        let list: Vec<(usize, usize)> = (0..1 + i % 7)
            .map(|k| (k * 65_537 + i * 999, 100 + k * i))
            .collect();
        let readv = readv_request(fh, list.iter().map(|&(at, len)| (at as u64, len)));
        let s = put(Request::from(readv), &mut frames, &mut sent);
        expected.insert(
            s,
            list.iter()
                .flat_map(|&(at, len)| data[at..at + len].to_vec())
                .collect(),
        );
    }
    raw.write(&frames).await;
    assert_eq!(sent.len(), READS + STATS + READVS);
    let got = answers(&mut raw, sent).await;
    let mut data_sent = 0;
    for (sid, (bytes, error)) in &got {
        match expected.get(sid) {
            Some(want) => {
                assert_eq!((bytes.len(), *error), (want.len(), None), "streamid {sid}");
                assert!(bytes == want, "streamid {sid}: wrong bytes");
                data_sent += bytes.len();
            }
            None => assert_eq!(*error, Some(ErrorCode::NOT_FOUND), "streamid {sid}"),
        }
    }
    let m = serve.scrape();
    assert_eq!(requests(&m, "open", "ok"), 1.0);
    assert_eq!(requests(&m, "read", "ok"), READS as f64);
    assert_eq!(
        sum(&m, "xroot_requests_total", &["kind=\"read\""]),
        READS as f64
    );
    assert_eq!(requests(&m, "stat", "NotFound"), STATS as f64);
    assert_eq!(requests(&m, "readv", "ok"), READVS as f64);
    assert_eq!(
        sum(&m, "xroot_requests_total", &[]),
        (1 + READS + STATS + READVS) as f64,
        "nothing else counted: {m:#?}"
    );
    assert_eq!(value(&m, "xroot_read_bytes_total"), data_sent as f64);
    assert_eq!(in_flight(&m), 0.0);
    assert_eq!(value(&m, "xroot_links"), 1.0);

    // big reads pipelined, none read; closed once the server serves one
    frames.clear();
    for i in 0..BIG {
        put(
            read(fh, i % 7 * BIG_LEN, BIG_LEN),
            &mut frames,
            &mut Vec::new(),
        );
    }
    raw.write(&frames).await;
    serve
        .scrape_until("a big read in flight", |m| {
            sum(m, "xroot_requests_in_flight", &["kind=\"read\""]) >= 1.0
        })
        .await;
    drop(raw);
    serve
        .scrape_until("the link closed, nothing in flight", |m| {
            value(m, "xroot_links") == 0.0 && in_flight(m) == 0.0
        })
        .await;
    let m = serve.scrape();
    let ok = requests(&m, "read", "ok") - READS as f64;
    let gone = requests(&m, "read", "gone");
    // each big read the server took counts once, answered or gone; the
    // rest were lost with the link, unread
    assert!(
        (1.0..=BIG as f64).contains(&(ok + gone)),
        "{ok} ok, {gone} gone"
    );
    assert_eq!(
        sum(&m, "xroot_requests_total", &["kind=\"read\""]),
        READS as f64 + ok + gone,
        "a read ends ok or gone: {m:#?}"
    );
    // a big read goes out in two 512 KiB frames (LocalFs on a plain link):
    // one that is gone may have queued its first, and a frame counts once
    // queued, whole
    let extra = value(&m, "xroot_read_bytes_total") - data_sent as f64 - ok * BIG_LEN as f64;
    assert!(
        (0.0..=gone * BIG_LEN as f64).contains(&extra) && extra % FRAME as f64 == 0.0,
        "{ok} big reads queued whole, {gone} gone with {extra} bytes of whole frames queued"
    );
    assert_eq!(
        value(&m, "xroot_request_duration_seconds_count{kind=\"read\"}"),
        READS as f64 + ok + gone
    );
    assert_eq!(value(&m, "xroot_vector_reads_in_flight"), 0.0);
}

/// What an HTTP exchange on the metrics endpoint got: the answer's first
/// bytes, or the error that ended it.
async fn exchange(addr: SocketAddr, send: Vec<u8>, read: bool) -> std::io::Result<Vec<u8>> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(&send).await?;
    let mut got = Vec::new();
    if read {
        s.read_to_end(&mut got).await?;
    }
    Ok(got)
}

/// A scrape over tokio: the status line and the body, which must be a
/// whole OpenMetrics text.
async fn scrape_async(addr: SocketAddr) -> String {
    let got = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        true,
    )
    .await
    .unwrap();
    let text = String::from_utf8(got).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(body.contains("xroot_read_bytes_total") && body.ends_with("# EOF\n"));
    body.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_hostile_scrapers_stops_neither_clients_nor_scrapes() {
    const LEN: usize = 1 << 20;
    const ROUNDS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let data = write_file(dir.path(), "f.bin", LEN);
    let serve = Daemon::start("serve", &[dir.path().to_str().unwrap()]);
    let at = serve.metrics;

    // a client reading the whole file again and again meanwhile
    let url = format!("{}//f.bin", serve.url());
    let reader = tokio::spawn(async move {
        let client = Client::new();
        let file = client.open(&url, OpenFlags::READ).await.unwrap();
        for round in 0..ROUNDS {
            let got = file.read_at(0, LEN).await.unwrap();
            assert!(got[..] == data[..], "round {round}: wrong bytes");
        }
        file.close().await.unwrap();
    });

    // silent ones first, held open to the end: a request line begun, or
    // nothing at all
    let mut silent = Vec::new();
    for i in 0..50 {
        let mut s = tokio::net::TcpStream::connect(at).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"GET /metr").await.unwrap();
        }
        silent.push(s);
    }
    // then 150 at once: well-formed, garbage, gone before or during the
    // answer
    let crowd: Vec<_> = (0..150usize)
        .map(|i| {
            tokio::spawn(async move {
                let garbage: Vec<u8> = (0..i * 13).map(|k| (k * 31 + i) as u8).collect();
                match i % 5 {
                    0 => Some(scrape_async(at).await),
                    1 => {
                        let mut g = garbage;
                        g.extend_from_slice(b"\r\n\r\n");
                        let got = exchange(at, g, true).await.unwrap_or_default();
                        let status =
                            String::from_utf8_lossy(&got[..got.len().min(12)]).into_owned();
                        assert!(
                            got.is_empty()
                                || ["HTTP/1.1 400", "HTTP/1.1 405"].contains(&&status[..]),
                            "{status}"
                        );
                        None
                    }
                    2 => {
                        // asks, leaves without reading the answer
                        let _ =
                            exchange(at, b"GET /metrics HTTP/1.1\r\n\r\n".to_vec(), false).await;
                        None
                    }
                    3 => {
                        // reads a few bytes of the answer, then leaves
                        if let Ok(mut s) = tokio::net::TcpStream::connect(at).await {
                            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").await;
                            let _ = s.read(&mut [0u8; 10]).await;
                        }
                        None
                    }
                    _ => {
                        // garbage, then gone with it half sent
                        let _ = exchange(at, garbage, false).await;
                        None
                    }
                }
            })
        })
        .collect();
    let mut answered = 0;
    for c in crowd {
        answered += usize::from(c.await.unwrap().is_some());
    }
    assert_eq!(answered, 30);
    // the silent ones still open, scrapes are answered
    for _ in 0..10 {
        scrape_async(at).await;
    }
    reader.await.unwrap();
    let m = serve.scrape();
    assert_eq!(requests(&m, "read", "ok"), ROUNDS as f64);
    assert_eq!(value(&m, "xroot_read_bytes_total"), (ROUNDS * LEN) as f64);
    assert_eq!(in_flight(&m), 0.0);
    drop(silent);
    scrape_async(at).await;
}

/// Writes `head` then `fill` again and again (64 MiB in all), without an
/// end of head; the bytes written before the server stopped the exchange,
/// and what it answered.
fn flood(addr: SocketAddr, head: &[u8], fill: u8) -> (usize, Vec<u8>) {
    const FLOOD: usize = 64 << 20;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(GUARD)).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    let chunk = vec![fill; 64 << 10];
    let mut written = 0;
    let mut ended = s.write_all(head).is_err();
    while !ended && written < FLOOD {
        match s.write(&chunk) {
            Ok(n) => written += n,
            Err(_) => ended = true,
        }
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    (written, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_request_head_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Daemon::start("serve", &[dir.path().to_str().unwrap()]);
    let at = serve.metrics;
    let cases: [(&[u8], u8); 2] = [
        (b"GET /", b'a'),
        (b"GET /metrics HTTP/1.1\r\nX-Long: ", b'b'),
    ];
    for (head, fill) in cases {
        let (written, answer) = tokio::task::spawn_blocking(move || flood(at, head, fill))
            .await
            .unwrap();
        // what the kernels buffer, not 64 MiB: the server stopped reading
        assert!(written < 32 << 20, "{written} bytes taken");
        assert!(
            answer.is_empty() || answer.starts_with(b"HTTP/1.1 431 "),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        scrape_async(at).await;
    }
}
