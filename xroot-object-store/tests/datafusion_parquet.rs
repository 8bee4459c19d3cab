//! DataFusion over Parquet files written by pyarrow, read through
//! `root://` by the `sql` example, from our server and from the stock
//! xrootd 5.5.3: the answers must equal pyarrow's own
//! (`tests/parquet/events.py` writes the files and prints them).
//!
//! Needs a Python with pyarrow: `$XROOT_UPROOT_PYTHON`, else the venv
//! `scripts/test` makes at `/opt/xroot-uproot` (ignored without one, failed
//! under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xroot_server::{Config, LocalFs, Server};
use xroot_testkit::{delay_proxy, example, stock};

// column names with capitals are quoted: DataFusion folds unquoted names
// to lower case, as SQL does
const EVENTS_QUERY: &str = r#"SELECT "nMuon", count(*) AS n, sum("MET_pt") AS s,
    max("MET_pt") AS m, min(run) AS r FROM events WHERE "MET_pt" > 20 AND name <> 'bad'
    GROUP BY "nMuon" ORDER BY "nMuon""#;
const ONE_QUERY: &str = r#"SELECT count(*) AS n, sum("nMuon") AS s FROM one WHERE run = 3"#;

/// A Python that has pyarrow, or `None` (skipped; a panic under `CI=true`).
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("XROOT_UPROOT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/xroot-uproot/bin/python"));
    let found = Command::new(&python)
        .args(["-c", "import pyarrow.parquet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some(python);
    }
    let why = format!(
        "{} cannot import pyarrow (scripts/test as root installs it; or set XROOT_UPROOT_PYTHON)",
        python.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {why}");
    }
    eprintln!("skipping: {why}");
    None
}

/// Writes the files under `dir` with pyarrow; its answers, one row of
/// numbers per line, for the `events` and the `one` query.
fn write_files(python: &Path, dir: &Path) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parquet/events.py");
    let out = Command::new(python).arg(script).arg(dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "events.py: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut events, mut one) = (Vec::new(), Vec::new());
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        let which = words.next();
        let row: Vec<f64> = words.map(|w| w.parse().unwrap()).collect();
        match which {
            Some("events") => events.push(row),
            Some("one") => one.push(row),
            _ => panic!("events.py printed {line:?}"),
        }
    }
    assert_eq!(events.len(), 5, "{stdout}");
    (events, one)
}

/// Runs `sql --table ... QUERY`; the rows of the table it printed (the
/// header row left out), as numbers.
fn sql(tables: &[(&str, String)], query: &str) -> Vec<Vec<f64>> {
    sql_with(tables, &[], query)
}

/// [`sql`] with more arguments.
fn sql_with(tables: &[(&str, String)], args: &[&str], query: &str) -> Vec<Vec<f64>> {
    let mut cmd = Command::new(example::example_bin("sql"));
    for (name, url) in tables {
        cmd.arg("--table").arg(format!("{name}={url}"));
    }
    cmd.args(args);
    let out = cmd.arg(query).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sql {query}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rows(&stdout)
}

/// The rows of a table as DataFusion prints it (the header row left out),
/// as numbers.
fn rows(stdout: &str) -> Vec<Vec<f64>> {
    stdout
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| {
                    c.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("cell {c:?} in:\n{stdout}"))
                })
                .collect()
        })
        .collect()
}

/// Our server on `dir`, behind a relay adding `one_way` each way (and
/// counting what the server is asked), on a runtime of their own (kept
/// alive by the caller).
fn served_through_a_relay(
    dir: &Path,
    one_way: std::time::Duration,
) -> (tokio::runtime::Runtime, delay_proxy::DelayProxy) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let relay = rt.block_on(async {
        let server = Server::bind("127.0.0.1:0", LocalFs::new(dir).unwrap(), Config::default())
            .await
            .unwrap();
        let relay = delay_proxy::DelayProxy::start(server.local_addr().port(), one_way).await;
        tokio::spawn(server.serve());
        relay
    });
    (rt, relay)
}

/// Stops `relay`, the server's only address, and waits until its port
/// refuses connections (its tasks end as the runtime gets to them).
fn stop(relay: delay_proxy::DelayProxy) {
    let port = relay.port;
    drop(relay);
    let gone = (0..1000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    });
    assert!(gone, "the relay still listens");
}

/// Both queries against the server at `root://127.0.0.1:PORT` (which
/// exports the files' directory at its root), with the table URLs in both
/// forms.
fn queries_match_pyarrow(port: u16, events: &[Vec<f64>], one: &[Vec<f64>]) {
    let server = format!("root://127.0.0.1:{port}");
    // a directory in the stock tools' form, without its trailing slash
    let got = sql(&[("events", format!("{server}//events"))], EVENTS_QUERY);
    assert_eq!(got, events, "{server}: events");
    // a file in object_store's form, beside a directory with its slash
    let got = sql(
        &[
            ("one", format!("{server}/events/part-1.parquet")),
            ("events", format!("{server}/events/")),
        ],
        ONE_QUERY,
    );
    assert_eq!(got, one, "{server}: one");
}

#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn datafusion_over_our_server_matches_pyarrow() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (events, one) = write_files(&python, dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(async {
        Server::bind(
            "127.0.0.1:0",
            LocalFs::new(dir.path()).unwrap(),
            Config::default(),
        )
        .await
        .unwrap()
    });
    let port = server.local_addr().port();
    rt.spawn(server.serve());
    queries_match_pyarrow(port, &events, &one);
}

#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
fn datafusion_over_the_stock_server_matches_pyarrow() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (events, one) = write_files(&python, dir.path());
    let Some(server) = stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    queries_match_pyarrow(server.port, &events, &one);
}

#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn a_cache_directory_answers_the_second_query_from_disk() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (events, _) = write_files(&python, dir.path());
    let (_rt, relay) = served_through_a_relay(dir.path(), std::time::Duration::ZERO);
    let table = [("events", format!("root://127.0.0.1:{}//events", relay.port))];
    let cache_dir = cache.path().to_str().unwrap();
    // cold: the blocks come from the server and are stored
    let got = sql_with(&table, &["--cache-dir", cache_dir], EVENTS_QUERY);
    assert_eq!(got, events, "cold");
    let cold = relay.traffic();
    assert!(cold.read_bytes_asked > 0, "{cold:?}");
    // warm, in a new process: the same answer, no byte read from the server
    let got = sql_with(&table, &["--cache-dir", cache_dir], EVENTS_QUERY);
    assert_eq!(got, events, "warm");
    let warm = relay.traffic().since(&cold);
    assert_eq!(warm.read_bytes_asked, 0, "{warm:?}");
    assert_eq!(warm.reads(), 0, "{warm:?}");

    // two processes at once on another, empty cache directory: both right,
    // each block fetched once between them (as much as one process alone
    // fetched); then a third finds every block the two fetched
    let shared = tempfile::tempdir().unwrap();
    let before_two = relay.traffic();
    let shared_dir = shared.path().to_str().unwrap().to_string();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let (table, dir) = (table.clone(), shared_dir.clone());
            std::thread::spawn(move || sql_with(&table, &["--cache-dir", &dir], EVENTS_QUERY))
        })
        .collect();
    for run in runs {
        assert_eq!(run.join().unwrap(), events, "two at once");
    }
    let two = relay.traffic().since(&before_two);
    assert_eq!(
        two.read_bytes_asked, cold.read_bytes_asked,
        "two processes fetched {two:?}, one alone {cold:?}"
    );
    let before = relay.traffic();
    let got = sql_with(&table, &["--cache-dir", &shared_dir], EVENTS_QUERY);
    assert_eq!(got, events, "after two at once");
    let after = relay.traffic().since(&before);
    assert_eq!(after.read_bytes_asked, 0, "{after:?}");
}

/// The client-side cache's trust window: once a query has cached a file
/// whole, a query in a new process opens and reads it without contacting
/// the server (no open, no read reaches it), and answers the same with the
/// server gone (its only address, the relay, stopped). With
/// `--trust-window 0` the warm query opens the file at the server.
#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn a_warm_cache_answers_with_the_server_stopped() {
    use xroot_proto::RequestId;
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (_, one) = write_files(&python, dir.path());
    let (_rt, relay) = served_through_a_relay(dir.path(), std::time::Duration::ZERO);
    let table = [(
        "one",
        format!("root://127.0.0.1:{}//events/part-1.parquet", relay.port),
    )];
    let cache_dir = cache.path().to_str().unwrap();
    let got = sql_with(&table, &["--cache-dir", cache_dir], ONE_QUERY);
    assert_eq!(got, one, "cold");
    let cold = relay.traffic();
    assert!(cold.count(RequestId::OPEN) > 0, "{cold:?}");

    // without trust, a warm query opens the file at the server
    let args = ["--cache-dir", cache_dir, "--trust-window", "0"];
    assert_eq!(sql_with(&table, &args, ONE_QUERY), one, "warm, no trust");
    let untrusted = relay.traffic().since(&cold);
    assert!(untrusted.count(RequestId::OPEN) > 0, "{untrusted:?}");
    assert_eq!(untrusted.reads(), 0, "{untrusted:?}");

    // within the window, the server is not asked at all
    let before = relay.traffic();
    let got = sql_with(&table, &["--cache-dir", cache_dir], ONE_QUERY);
    assert_eq!(got, one, "warm");
    let warm = relay.traffic().since(&before);
    assert_eq!(warm.count(RequestId::OPEN), 0, "{warm:?}");
    assert_eq!(warm.count(RequestId::STAT), 0, "{warm:?}");
    assert_eq!(warm.reads(), 0, "{warm:?}");

    stop(relay);
    let got = sql_with(&table, &["--cache-dir", cache_dir], ONE_QUERY);
    assert_eq!(got, one, "warm, server stopped");
}

/// The same for a directory table: within the trust window a warm query
/// in a new process lists the directory from the listing kept beside the
/// cache, and opens and reads its files from the cache (no request reaches
/// the server), and it answers as pyarrow does with the server stopped.
#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn a_warm_cache_answers_a_directory_table_with_the_server_stopped() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (events, _) = write_files(&python, dir.path());
    let (_rt, relay) = served_through_a_relay(dir.path(), std::time::Duration::ZERO);
    // a directory URL ends with `/` (without it the example asks the
    // server whether the path is a file or a directory)
    let table = [(
        "events",
        format!("root://127.0.0.1:{}//events/", relay.port),
    )];
    let args = ["--cache-dir", cache.path().to_str().unwrap()];
    assert_eq!(sql_with(&table, &args, EVENTS_QUERY), events, "cold");
    let cold = relay.traffic();
    assert_eq!(cold.count(xroot_proto::RequestId::DIRLIST), 1, "{cold:?}");

    let before = relay.traffic();
    assert_eq!(sql_with(&table, &args, EVENTS_QUERY), events, "warm");
    let warm = relay.traffic().since(&before);
    let asked: u64 = warm.requests.values().sum();
    assert_eq!(asked, 0, "{warm:?}");

    stop(relay);
    let got = sql_with(&table, &args, EVENTS_QUERY);
    assert_eq!(got, events, "warm, server stopped");
}

/// Whether a live file under `dir` records a written block (byte 1 in its
/// block bytes, which follow a 32-byte header holding the file size at
/// offset 8 and the block size at 24; xroot-cache's `store/live.rs`).
fn a_block_was_written(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() {
            return a_block_was_written(&path);
        }
        if !path.to_string_lossy().ends_with(".cinfo.live") {
            return false;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            return false;
        };
        if bytes.len() < 32 {
            return false;
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let blocks = word(8).div_ceil(word(24).max(1)) as usize;
        bytes[32..bytes.len().min(32 + blocks)].contains(&1)
    })
}

/// kill -9 of a query while its cache fills (the server 50 ms of round
/// trip away; the kill once the live file records a block written), then
/// the same query on the same cache directory: the answer is pyarrow's, and
/// it asks the server for fewer bytes than a cold query does (the blocks
/// the killed one wrote are used).
#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn a_query_killed_during_a_fill_leaves_a_cache_that_answers_right() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cold_cache, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (events, _) = write_files(&python, dir.path());
    let (_rt, relay) = served_through_a_relay(dir.path(), std::time::Duration::from_millis(25));
    let url = format!("root://127.0.0.1:{}//events", relay.port);
    let table = [("events", url.clone())];
    let before = relay.traffic();
    let cold_dir = cold_cache.path().to_str().unwrap();
    assert_eq!(
        sql_with(&table, &["--cache-dir", cold_dir], EVENTS_QUERY),
        events
    );
    let cold = relay.traffic().since(&before);

    let cache_dir = cache.path().to_str().unwrap();
    let mut child = Command::new(example::example_bin("sql"))
        .args([
            "--table",
            &format!("events={url}"),
            "--cache-dir",
            cache_dir,
        ])
        .arg(EVENTS_QUERY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = (0..6000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        a_block_was_written(cache.path())
    });
    assert!(started, "the query wrote no block");
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the query ended before the kill: {status}"
    );
    let before = relay.traffic();
    let got = sql_with(&table, &["--cache-dir", cache_dir], EVENTS_QUERY);
    assert_eq!(got, events, "after the kill");
    let after = relay.traffic().since(&before);
    assert!(
        after.read_bytes_asked < cold.read_bytes_asked,
        "after the kill {after:?}, cold {cold:?}"
    );
}

/// A query over a directory table, the server 50 ms of round trip away,
/// in this process: the round trips it waits for, counted by the relay by
/// causality (a request sent after an answer came starts a new round trip;
/// not timed), are at most 6: log in (`kXR_protocol`, then `kXR_login`),
/// list, open the files, read their footers, read the column chunks. Run
/// with DataFusion's footer size hint (512 KiB, more than each file: the
/// footer read brings every column chunk) and with 16 KiB (only the footer
/// and page indexes: the column chunks are read ahead, one vector read per
/// file).
#[test]
#[cfg_attr(
    missing_uproot,
    ignore = "needs pyarrow in the venv at /opt/xroot-uproot or $XROOT_UPROOT_PYTHON (scripts/test as root makes it)"
)]
fn a_directory_query_takes_at_most_six_round_trips() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = write_files(&python, dir.path());
    let (rt, relay) = served_through_a_relay(dir.path(), std::time::Duration::from_millis(25));
    let url = format!("root://127.0.0.1:{}//events/", relay.port);
    for hint in [None, Some(16 << 10)] {
        a_query_in_few_round_trips(&rt, &relay, &url, hint, &events);
    }
}

fn a_query_in_few_round_trips(
    rt: &tokio::runtime::Runtime,
    relay: &delay_proxy::DelayProxy,
    url: &str,
    hint: Option<usize>,
    events: &[Vec<f64>],
) {
    use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
    let before = relay.traffic();
    let (printed, traffic) = rt.block_on(async {
        let mut config = SessionConfig::new();
        if let Some(hint) = hint {
            config.options_mut().execution.parquet.metadata_size_hint = Some(hint);
        }
        let ctx = SessionContext::new_with_config(config);
        let (key, store) =
            xroot_object_store::server_store(xroot_client::Client::new(), url).unwrap();
        ctx.register_object_store(&key, store);
        let table = xroot_object_store::object_url(url).unwrap();
        ctx.register_parquet("events", table.as_str(), ParquetReadOptions::default())
            .await
            .unwrap();
        let batches = ctx
            .sql(EVENTS_QUERY)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        // before the handles' closes, which nothing waits for
        let traffic = relay.traffic().since(&before);
        let printed = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        (printed, traffic)
    });
    assert_eq!(rows(&printed), events, "footer hint {hint:?}");
    eprintln!("footer hint {hint:?}:\n{}", traffic.waves_text());
    assert!(
        traffic.round_trips <= 6,
        "footer hint {hint:?}: {} round trips:\n{}",
        traffic.round_trips,
        traffic.waves_text()
    );
}
