//! The xrdcp example (examples/xrdcp.rs) side by side with the stock
//! `xrdcp` 5.5.3 on how it runs its copy jobs: connection attempts
//! (`XRD_CONNECTIONRETRY`, `XRD_CONNECTIONWINDOW`) that wait for a server
//! that comes up late; `--retry N` after a failure that may pass; `-r`
//! both ways and between servers, the same tree made by either tool; the
//! progress bar's last line left on the terminal (under `script`, a pseudo
//! terminal), and none with `-s`; and an error naming its URL once.
//!
//! The stock server and tools run as in tests/client_xrdcp.rs
//! (xroot_testkit::stock); the example binary is built by
//! xroot_testkit::example::example_bin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xroot_testkit::stock::{free_port, program_available, xrootd_available, StockServer};
use xroot_testkit::tools::{self, stderr};

/// The two tools compared.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tool {
    Stock,
    Ours,
}

const TOOLS: [Tool; 2] = [Tool::Stock, Tool::Ours];

impl Tool {
    fn program(self) -> PathBuf {
        static BIN: OnceLock<PathBuf> = OnceLock::new();
        match self {
            Tool::Stock => PathBuf::from("xrdcp"),
            Tool::Ours => BIN
                .get_or_init(|| xroot_testkit::example::example_bin("xrdcp"))
                .clone(),
        }
    }
}

/// `tool ARGS` with `env` added (off the async workers).
async fn xrdcp(tool: Tool, args: &[&str], env: &[(&str, &str)]) -> Output {
    tools::run_off_workers(tools::command(tool.program(), args, env)).await
}

/// Whether the stock server and tools are here (panics under CI=true when
/// not).
fn stock_here() -> bool {
    xrootd_available()
        && program_available(
            "xrdcp",
            &["--version"],
            "the stock xrdcp is not installed (apt-get install xrootd-client)",
        )
}

/// Byte `i` of a test file is `(i * 7 + seed) % 251`.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

/// A directory holding `src.bin` (`len` pattern bytes), for a server.
fn data_dir(len: usize) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(len, 0);
    std::fs::write(dir.path().join("src.bin"), &content).unwrap();
    (dir, content)
}

/// XRD_CONNECTIONRETRY / XRD_CONNECTIONWINDOW: with a server that starts
/// listening about 1.5 s after the copy began, attempts 1 s apart find it
/// (both tools copy the file); with one attempt both fail at once with
/// exit code 51; and 3 attempts at a refused port take two windows (2 s)
/// before that 51, for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn connection_attempts_wait_for_a_late_server() {
    if !stock_here() {
        return;
    }
    let (dir, content) = data_dir(100_000);
    let local = tempfile::tempdir().unwrap();
    for tool in TOOLS {
        // a port nobody listens on yet: refused until the server comes
        let port = free_port();
        let data = dir.path().to_path_buf();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            StockServer::start_on(port, &data, &[]).expect("stock xrootd")
        });
        let target = local.path().join(format!("{tool:?}.bin"));
        let src = format!("root://127.0.0.1:{port}//src.bin");
        let started = Instant::now();
        let o = xrdcp(
            tool,
            &["-N", &src, target.to_str().unwrap()],
            &[("XRD_CONNECTIONRETRY", "60"), ("XRD_CONNECTIONWINDOW", "1")],
        )
        .await;
        let took = started.elapsed();
        let server = late.join().unwrap();
        assert!(
            o.status.success(),
            "{tool:?} with 60 attempts 1 s apart: {:?}\n{}\nserver log: {}",
            o.status,
            stderr(&o),
            server.log_tail()
        );
        assert_eq!(std::fs::read(&target).unwrap(), content, "{tool:?}");
        assert!(took >= Duration::from_millis(1400), "{tool:?}: {took:?}");
        eprintln!("{tool:?}: copied from a server up after 1.5 s in {took:?}");
        drop(server);

        // one attempt: the refusal is final
        let refused = format!("root://127.0.0.1:{}//src.bin", free_port());
        let started = Instant::now();
        let o = xrdcp(
            tool,
            &["-N", &refused, target.to_str().unwrap()],
            &[("XRD_CONNECTIONRETRY", "1"), ("XRD_CONNECTIONWINDOW", "30")],
        )
        .await;
        let took = started.elapsed();
        assert_eq!(o.status.code(), Some(51), "{tool:?}: {}", stderr(&o));
        assert!(took < Duration::from_secs(10), "{tool:?}: {took:?}");

        // three attempts, each at the end of the previous one's 1 s window
        let started = Instant::now();
        let o = xrdcp(
            tool,
            &["-N", &refused, target.to_str().unwrap()],
            &[("XRD_CONNECTIONRETRY", "3"), ("XRD_CONNECTIONWINDOW", "1")],
        )
        .await;
        let took = started.elapsed();
        assert_eq!(o.status.code(), Some(51), "{tool:?}: {}", stderr(&o));
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_secs(15),
            "{tool:?}: 3 attempts 1 s apart took {took:?}"
        );
        eprintln!("{tool:?}: 3 attempts at a refused port, 1 s windows: {took:?}");
    }
}

/// A relay on 127.0.0.1 to `upstream` that closes the first `drop`
/// connections as soon as it accepts them (a FIN, never a reset) and
/// relays the others.
async fn dropping_relay(upstream: u16, drop: usize) -> (u16, tokio::task::AbortHandle) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let task = tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if seen.fetch_add(1, Ordering::SeqCst) < drop {
                // closed the orderly way, FIN first and then what the
                // client sent read to its end: dropping a socket with
                // unread bytes (the client's handshake, when it came
                // first) sends RST, which the stock client takes as a
                // fatal "Poller error" no retry passes (seen under load)
                tokio::spawn(async move {
                    let _ = client.shutdown().await;
                    let mut sink = [0u8; 1024];
                    while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
                });
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (port, task.abort_handle())
}

/// Seconds a copy of [`retry_tries_a_failed_copy_again`] may take (each
/// takes about one).
const HANG_GUARD: &str = "60";

/// `--retry N`: the first connection closed during the handshake, one
/// connection attempt each (XRD_CONNECTIONRETRY=1): without `--retry`
/// both tools fail with 51; with `--retry 1` both copy the file on the
/// second try; with two connections closed, `--retry 1` is not enough
/// (51). The stock client refuses a server whose connection failed for
/// `XRD_STREAMERRORWINDOW` seconds (1800), so that a retry would meet the
/// same error at once: the window is 0 here, as ours has none.
///
/// Each copy runs under `timeout` [`HANG_GUARD`]: a copy of ours that hangs
/// fails the test (exit 124); the stock one that hangs is reported and not
/// compared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn retry_tries_a_failed_copy_again() {
    if !stock_here() {
        return;
    }
    let (dir, content) = data_dir(300_000);
    let server = StockServer::start(dir.path(), &[]).expect("stock xrootd");
    let local = tempfile::tempdir().unwrap();
    let env = [("XRD_CONNECTIONRETRY", "1"), ("XRD_STREAMERRORWINDOW", "0")];
    for tool in TOOLS {
        for (retry, dropped, want) in [("0", 1, 51), ("1", 1, 0), ("1", 2, 51), ("3", 2, 0)] {
            let (port, relay) = dropping_relay(server.port, dropped).await;
            let target = local.path().join(format!("{tool:?}-{retry}-{dropped}.bin"));
            let src = format!("root://127.0.0.1:{port}//src.bin");
            let program = tool.program();
            let args = ["-N", "--retry", retry, &src, target.to_str().unwrap()];
            let guarded = [&[HANG_GUARD, program.to_str().unwrap()][..], &args].concat();
            let o = tools::run_off_workers(tools::command("timeout", &guarded, &env)).await;
            relay.abort();
            let what = format!("{tool:?} --retry {retry}, {dropped} connection(s) closed");
            if matches!(tool, Tool::Stock) && o.status.code() == Some(124) {
                // XrdCl 5.5.3 can deadlock reconnecting (its threads all in
                // futex waits; xrootd/xrootd#1883 shows one such lock
                // cycle in PostMaster::Send): seen once here, so its exit
                // code cannot be compared then; ours still is
                eprintln!("{what}: the stock xrdcp hung and was stopped after {HANG_GUARD} s");
                continue;
            }
            assert_eq!(o.status.code(), Some(want), "{what}: {}", stderr(&o));
            if want == 0 {
                assert_eq!(std::fs::read(&target).unwrap(), content, "{what}");
            }
        }
    }
}

/// The regular files under `root`, by path relative to it, with their
/// bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                files.insert(rel.into_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Every directory under `root`, relative to it.
fn dirs(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.push(path.strip_prefix(root).unwrap().display().to_string());
                todo.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `-r` side by side: a local tree (nested directories, an empty one, a
/// 20 MB file over several blocks) uploaded into an existing remote
/// directory, downloaded into an existing local one, and copied between
/// two directories of the server: each tool makes `DST/a/...` with the
/// same files and bytes, and neither makes the empty directory. A missing
/// local target fails with 2, a missing remote one with 50, a tree
/// without a file with 2, for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn recursive_copies_make_the_same_tree() {
    if !stock_here() {
        return;
    }
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("a");
    std::fs::create_dir_all(src.join("b/c")).unwrap();
    std::fs::create_dir_all(src.join("empty")).unwrap();
    std::fs::create_dir_all(local.path().join("bare/d")).unwrap();
    std::fs::write(src.join("x.txt"), b"x\n").unwrap();
    std::fs::write(src.join("b/y.bin"), pattern(70_000, 1)).unwrap();
    std::fs::write(src.join("b/c/z.bin"), pattern(20 << 20, 2)).unwrap();
    std::fs::write(src.join("b/c/zero"), b"").unwrap();
    let want = tree(&src);

    let data = tempfile::tempdir().unwrap();
    for d in ["up/Stock", "up/Ours", "r2r/Stock", "r2r/Ours"] {
        std::fs::create_dir_all(data.path().join(d)).unwrap();
    }
    let server = StockServer::start(data.path(), &[]).expect("stock xrootd");
    let url = |p: &str| format!("root://127.0.0.1:{}/{p}", server.port);
    let src_arg = src.to_str().unwrap();

    for tool in TOOLS {
        let name = format!("{tool:?}");
        // local -> remote, into an existing directory (trailing slash)
        let o = xrdcp(
            tool,
            &["-N", "-r", src_arg, &url(&format!("/up/{name}/"))],
            &[],
        )
        .await;
        assert!(o.status.success(), "{name} upload: {}", stderr(&o));
        let up = data.path().join("up").join(&name);
        assert_eq!(dirs(&up), ["a", "a/b", "a/b/c"], "{name} upload");
        assert_eq!(tree(&up.join("a")), want, "{name} upload");

        // remote -> local, into an existing directory
        let down = local.path().join(format!("down-{name}"));
        std::fs::create_dir(&down).unwrap();
        let o = xrdcp(
            tool,
            &["-N", "-r", &url("/up/Stock/a"), down.to_str().unwrap()],
            &[],
        )
        .await;
        assert!(o.status.success(), "{name} download: {}", stderr(&o));
        assert_eq!(dirs(&down), ["a", "a/b", "a/b/c"], "{name} download");
        assert_eq!(tree(&down.join("a")), want, "{name} download");

        // remote -> remote
        let o = xrdcp(
            tool,
            &[
                "-N",
                "-r",
                &url("/up/Stock/a/"),
                &url(&format!("/r2r/{name}")),
            ],
            &[],
        )
        .await;
        assert!(
            o.status.success(),
            "{name} remote to remote: {}",
            stderr(&o)
        );
        let r2r = data.path().join("r2r").join(&name);
        assert_eq!(tree(&r2r.join("a")), want, "{name} remote to remote");

        // a target that is not there, a tree without a file
        let missing = local.path().join(format!("missing-{name}"));
        let failures: [(&str, Vec<String>, i32); 3] = [
            (
                "a missing local target",
                vec![url("/up/Stock/a"), missing.display().to_string()],
                2,
            ),
            (
                "a missing remote target",
                vec![src_arg.to_string(), url(&format!("/nowhere-{name}"))],
                50,
            ),
            (
                "a tree without a file",
                vec![
                    local.path().join("bare").display().to_string(),
                    url(&format!("/up/{name}")),
                ],
                2,
            ),
        ];
        for (what, args, code) in failures {
            let mut all = vec!["-N", "-r"];
            all.extend(args.iter().map(String::as_str));
            let o = xrdcp(tool, &all, &[]).await;
            assert_eq!(
                o.status.code(),
                Some(code),
                "{name}, {what}: {}",
                stderr(&o)
            );
        }
        assert!(!missing.exists(), "{name}");
    }
}

/// What `tool ARGS` writes to its terminal, run under `script` (a pseudo
/// terminal on its standard output and error).
async fn on_a_terminal(tool: Tool, args: &[&str]) -> String {
    let mut line = tool.program().display().to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let script = tools::command("script", &["-qec", &line, "/dev/null"], &[]);
    let o = tools::run_off_workers(script).await;
    assert!(o.status.success(), "{args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The progress bar on a terminal: after the copy its last state,
/// `[SIZE/SIZE][100%][===...]...`, stays (no line erased after it; what
/// follows ends that line), for both tools; with `-s` no bar at all; and
/// `--version` prints `v` and a version. (`script` from util-linux makes
/// the terminal.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn the_progress_bar_leaves_its_last_line() {
    if !stock_here()
        || !program_available(
            "script",
            &["--version"],
            "script (util-linux) is not installed",
        )
    {
        return;
    }
    let (dir, _content) = data_dir(30 << 20);
    let server = StockServer::start(dir.path(), &[]).expect("stock xrootd");
    let src = format!("root://127.0.0.1:{}//src.bin", server.port);
    let local = tempfile::tempdir().unwrap();
    let target = local.path().join("t.bin");
    let target = target.to_str().unwrap();
    for tool in TOOLS {
        let shown = on_a_terminal(tool, &["-f", &src, target]).await;
        let last = shown
            .rfind("[100%][")
            .unwrap_or_else(|| panic!("{tool:?}: no 100% line in {shown:?}"));
        let after = &shown[last..];
        assert!(
            !after.contains("\x1b[2K") && !after.contains("\x1b[1A") && !after.contains("\x1b[0J"),
            "{tool:?}: the last line is erased: {after:?}"
        );
        assert!(
            after.contains("=]") || after.contains("==="),
            "{tool:?}: {after:?}"
        );
        assert!(
            after.ends_with('\n'),
            "{tool:?}: the line is not ended: {after:?}"
        );

        let silent = on_a_terminal(tool, &["-s", "-f", &src, target]).await;
        assert!(!silent.contains("100%"), "{tool:?} -s: {silent:?}");

        let o = xrdcp(tool, &["--version"], &[]).await;
        let printed = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{tool:?}: {printed}");
        assert!(printed.trim().starts_with('v'), "{tool:?}: {printed:?}");
    }
}

/// An error line names its URL (or path) once and what failed: a source
/// the server does not have (both tools exit 54; the stock one prints the
/// server's `[3011]`, ours says `source URL: ... kXR_NotFound(3011)`), a
/// refused connection (51), a local target that exists (54).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn an_error_names_its_url_once() {
    if !stock_here() {
        return;
    }
    let (dir, _content) = data_dir(1000);
    let server = StockServer::start(dir.path(), &[]).expect("stock xrootd");
    let local = tempfile::tempdir().unwrap();
    let fresh = local.path().join("fresh.bin").display().to_string();
    let exists = local.path().join("exists.bin").display().to_string();
    std::fs::write(&exists, b"old").unwrap();
    let missing = format!("root://127.0.0.1:{}//missing.bin", server.port);
    let refused = format!("root://127.0.0.1:{}//src.bin", free_port());
    let present = format!("root://127.0.0.1:{}//src.bin", server.port);
    let once = [("XRD_CONNECTIONRETRY", "1")];

    let theirs = xrdcp(Tool::Stock, &["-N", &missing, &fresh], &once).await;
    assert_eq!(theirs.status.code(), Some(54), "{}", stderr(&theirs));
    assert!(stderr(&theirs).contains("[3011]"), "{}", stderr(&theirs));

    for (what, src, dst, code, named, says) in [
        ("a missing source", &missing, &fresh, 54, &missing, "3011"),
        (
            "a refused connection",
            &refused,
            &fresh,
            51,
            &refused,
            "refused",
        ),
        (
            "a target that exists",
            &present,
            &exists,
            54,
            &exists,
            "exists",
        ),
    ] {
        let theirs = xrdcp(Tool::Stock, &["-N", src, dst], &once).await;
        assert_eq!(
            theirs.status.code(),
            Some(code),
            "stock, {what}: {}",
            stderr(&theirs)
        );
        let mine = xrdcp(Tool::Ours, &["-N", src, dst], &once).await;
        let text = stderr(&mine);
        assert_eq!(mine.status.code(), Some(code), "ours, {what}: {text}");
        assert_eq!(
            text.matches(named.as_str()).count(),
            1,
            "ours, {what}: {text}"
        );
        assert!(text.to_lowercase().contains(says), "ours, {what}: {text}");
        let side = if named == dst { "target " } else { "source " };
        assert!(
            text.contains(&format!("{side}{named}")),
            "ours, {what}: {text}"
        );
        eprintln!(
            "{what}: stock: {}; ours: {}",
            stderr(&theirs).trim(),
            text.trim()
        );
    }
}
