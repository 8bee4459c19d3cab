//! `serve --metrics` and `xcache --metrics`: the Prometheus text scraped
//! over HTTP agrees with what the test's client did, and the cache's
//! figures with the cache's own `query stats` answer; `-v` logs one line per
//! request with client, request, path, status, duration and bytes.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};

use bytes::Bytes;
use support::example::example_bin;
use xroot::client::{Client, OpenFlags};

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
        let text = http_get(self.metrics, "/metrics");
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.ends_with("# EOF\n"), "an OpenMetrics text ends so");
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').unwrap();
                (series.to_string(), value.parse().unwrap())
            })
            .collect()
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
#[cfg_attr(
    missing_xrootd,
    ignore = "needs the stock xrootd (xrootd-server; scripts/test as root installs it)"
)]
async fn serve_answers_query_stats_in_the_stock_shape() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "f.bin", 10_000);
    let Some(stock) = support::stock::StockServer::start(dir.path(), &[]) else {
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
