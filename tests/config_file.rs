//! `--config FILE` of the `serve` and `xcache` examples
//! (`xroot_tools::config_file`), run as processes: a TOML file whose
//! keys are the long flags' names sets what the flags set (checked by what
//! the server then does, through our client), a flag on the command line
//! wins over the file's, a key that is no flag exits 2 naming it, and a
//! file that is not TOML exits 1 naming the file.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bytes::Bytes;
use xroot::client::{Client, Error, OpenFlags};
use xroot::proto::ErrorCode;
use xroot_testkit::example::{example_bin, Daemon};

/// `text` written to `config.toml` in `dir`.
fn config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A TOML string (the paths of these tests need no escapes).
fn quoted(p: &Path) -> String {
    let s = p.to_str().unwrap();
    assert!(!s.contains(['"', '\\']), "{s}");
    format!("\"{s}\"")
}

/// The bytes of `path` read from the server at `addr`.
async fn read(addr: SocketAddr, path: &str) -> Result<Bytes, Error> {
    let client = Client::new();
    let f = client
        .open(&format!("root://{addr}/{path}"), OpenFlags::READ)
        .await?;
    let data = f.read_at(0, 1 << 20).await?;
    f.close().await?;
    Ok(data)
}

/// The server code a failed call got.
fn code<T: std::fmt::Debug>(r: Result<T, Error>) -> ErrorCode {
    match r {
        Err(Error::Server { code, .. }) => code,
        other => panic!("not a server error: {other:?}"),
    }
}

/// Creating `path` on the server at `addr`.
async fn create(addr: SocketAddr, path: &str) -> Result<(), Error> {
    let client = Client::new();
    let f = client
        .open(&format!("root://{addr}/{path}"), OpenFlags::NEW)
        .await?;
    f.write_at(0, Bytes::from_static(b"new")).await?;
    f.close().await
}

/// The status line of `GET /metrics` at `addr`.
fn metrics_status(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.lines().next().unwrap_or_default().to_string()
}

/// What an example run to its end printed on stderr, and its exit code.
fn run_to_end(name: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(example_bin(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `port`, `dir`, `read-only` and `metrics` from the file alone: `serve`
/// listens where the file says (port 0: one picked), serves that
/// directory, refuses a write and serves its metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_port_dir_read_only_and_metrics_from_the_file() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("nine"), b"123456789").unwrap();
    let etc = tempfile::tempdir().unwrap();
    let file = config(
        etc.path(),
        &format!(
            "port = 0\nread-only = true\nmetrics = \"127.0.0.1:0\"\ndir = {}\n",
            quoted(data.path())
        ),
    );
    let mut serve = Daemon::start("serve", &["--config", file.to_str().unwrap()]);
    let addr = serve.line("serve listening on ");
    let metrics = serve.line("serve metrics on http://");
    assert_eq!(&read(addr, "/nine").await.unwrap()[..], b"123456789");
    assert_eq!(code(create(addr, "/new").await), ErrorCode::NOT_AUTHORIZED);
    assert!(!data.path().join("new").exists());
    assert!(
        metrics_status(metrics).starts_with("HTTP/1.1 200"),
        "metrics at {metrics}"
    );
}

/// A flag on the command line wins over the file's key: `--port 0` over
/// the file's port (taken by another listener), the command line's DIR
/// over the file's `dir`; the file's `read-only`, not on the command line,
/// still holds (`--config=FILE` is read too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_command_line_wins_over_the_file() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let from_file = tempfile::tempdir().unwrap();
    std::fs::write(from_file.path().join("a"), b"file's dir").unwrap();
    let from_line = tempfile::tempdir().unwrap();
    std::fs::write(from_line.path().join("b"), b"command line's dir").unwrap();
    let etc = tempfile::tempdir().unwrap();
    let file = config(
        etc.path(),
        &format!(
            "port = {}\nread-only = true\ndir = {}\n",
            taken.local_addr().unwrap().port(),
            quoted(from_file.path())
        ),
    );
    let mut serve = Daemon::start(
        "serve",
        &[
            &format!("--config={}", file.display()),
            "--port",
            "0",
            from_line.path().to_str().unwrap(),
        ],
    );
    let addr = serve.line("serve listening on ");
    assert_ne!(addr, taken.local_addr().unwrap());
    assert_eq!(&read(addr, "/b").await.unwrap()[..], b"command line's dir");
    assert_eq!(code(read(addr, "/a").await), ErrorCode::NOT_FOUND);
    assert_eq!(code(create(addr, "/new").await), ErrorCode::NOT_AUTHORIZED);
    assert!(!from_line.path().join("new").exists());
}

/// A key that is no flag of the tool is refused as an unknown argument
/// (exit 2, naming it), by `serve` and by `xcache`; nothing is served.
#[test]
fn an_unknown_key_exits_2_naming_it() {
    let etc = tempfile::tempdir().unwrap();
    let data = etc.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let file = config(
        etc.path(),
        &format!("port = 0\ncolour = \"red\"\ndir = {}\n", quoted(&data)),
    );
    let (code, stderr) = run_to_end("serve", &["--config", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--colour"), "{stderr}");
    assert!(!stderr.contains("listening"), "{stderr}");

    let file = config(
        etc.path(),
        &format!(
            "origin = \"root://127.0.0.1:1\"\ncache-dir = {}\nport = 0\nmax-age = 5\n",
            quoted(&data)
        ),
    );
    let (code, stderr) = run_to_end("xcache", &["--config", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--max-age"), "{stderr}");
}

/// A file that cannot be read as TOML (or at all) exits 1, naming the
/// file and what is wrong (for TOML, the parser's message: line, column).
#[test]
fn a_broken_or_missing_file_exits_1_naming_it() {
    let etc = tempfile::tempdir().unwrap();
    let broken = config(etc.path(), "port = \nread-only = true\n");
    let missing = etc.path().join("missing.toml");
    for (name, file, what) in [
        ("serve", &broken, "cannot read config"),
        ("xcache", &broken, "cannot read config"),
        ("serve", &missing, "No such file or directory"),
    ] {
        let (code, stderr) = run_to_end(name, &["--config", file.to_str().unwrap(), "/tmp"]);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        let line = format!("{name}: cannot read config {}", file.display());
        assert!(stderr.contains(&line), "{name}: {stderr}");
        assert!(stderr.contains(what), "{name}: {stderr}");
        assert!(!stderr.contains("listening"), "{name}: {stderr}");
    }
}

/// `xcache` with `origin`, `cache-dir` and `port` from the file: it
/// serves the origin's file and keeps a copy in the file's cache
/// directory. With `--origin` on the command line, that origin is used
/// (the file's names a port where nothing listens).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xcache_takes_its_origin_and_cache_dir_from_the_file() {
    let data = tempfile::tempdir().unwrap();
    let content: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(data.path().join("f.bin"), &content).unwrap();
    let origin =
        xroot_testkit::ours::serve(xroot::server::LocalFs::new(data.path()).unwrap()).await;
    let etc = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cached = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };

    let file = config(
        etc.path(),
        &format!(
            "origin = \"root://{origin}\"\ncache-dir = {}\nport = 0\n",
            quoted(cache_dir.path())
        ),
    );
    let mut xcache = Daemon::start("xcache", &["--config", file.to_str().unwrap()]);
    let addr = xcache.line("xcache listening on ");
    assert_eq!(&read(addr, "/f.bin").await.unwrap()[..], &content[..]);
    assert!(!cached(cache_dir.path()).is_empty(), "nothing cached");
    drop(xcache);

    let other_cache = tempfile::tempdir().unwrap();
    let file = config(
        etc.path(),
        &format!(
            "origin = \"root://127.0.0.1:1\"\ncache-dir = {}\nport = 0\n",
            quoted(other_cache.path())
        ),
    );
    let mut xcache = Daemon::start(
        "xcache",
        &[
            "--config",
            file.to_str().unwrap(),
            "--origin",
            &format!("root://{origin}"),
        ],
    );
    let addr = xcache.line("xcache listening on ");
    assert_eq!(&read(addr, "/f.bin").await.unwrap()[..], &content[..]);
    assert!(!cached(other_cache.path()).is_empty(), "nothing cached");
}

/// The body of `GET /metrics` at `addr`.
fn metrics_text(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// `monitor`, `monitor-flush`, `report` (a list) and `report-every` from
/// the file: `serve` sends its identification and a summary document
/// each second to the collector the file names, and `/metrics` counts the
/// packets sent per stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_its_monitoring_from_the_file() {
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let at = collector.local_addr().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("nine"), b"123456789").unwrap();
    let etc = tempfile::tempdir().unwrap();
    let file = config(
        etc.path(),
        &format!(
            "port = 0\nmetrics = \"127.0.0.1:0\"\nmonitor = \"{at}\"\nmonitor-flush = 1\n\
             report = [\"{at}\"]\nreport-every = 1\ndir = {}\n",
            quoted(data.path())
        ),
    );
    let mut serve = Daemon::start("serve", &["--config", file.to_str().unwrap()]);
    let addr = serve.line("serve listening on ");
    let metrics = serve.line("serve metrics on http://");
    assert_eq!(&read(addr, "/nine").await.unwrap()[..], b"123456789");
    let (mut ident, mut summary) = (false, false);
    let mut buf = vec![0u8; 65536];
    while !(ident && summary) {
        let n = collector
            .recv(&mut buf)
            .expect("a monitoring packet within 10 s");
        match buf[0] {
            b'=' => {
                let text = String::from_utf8_lossy(&buf[12..n]).into_owned();
                assert!(text.contains(&format!("&port={}&", addr.port())), "{text}");
                ident = true;
            }
            b'<' => summary = true,
            _ => {}
        }
    }
    // a packet is counted once its send returns, which may be after the
    // collector has it: the counts are read again until they show (10 s)
    let sent = |text: &str, stream: &str| {
        let prefix =
            format!("xroot_monitor_packets_total{{stream=\"{stream}\",outcome=\"sent\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut text = metrics_text(metrics);
    for _ in 0..100 {
        if sent(&text, "detailed") >= 1 && sent(&text, "summary") >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        text = metrics_text(metrics);
    }
    assert!(
        sent(&text, "detailed") >= 1 && sent(&text, "summary") >= 1,
        "{text}"
    );
}

/// A monitoring destination that does not resolve stops the start-up:
/// exit 1, naming the flag and the destination.
#[test]
fn a_monitoring_destination_that_does_not_resolve_exits_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    for (flag, name) in [("--monitor", "serve"), ("--report", "serve")] {
        let (code, stderr) = run_to_end(name, &["--port", "0", flag, "nowhere.invalid:9930", dir]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{name}: {flag}: monitoring destination nowhere.invalid:9930"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("listening"), "{stderr}");
    }
}
