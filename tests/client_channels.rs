//! Channels against a live stock xrootd 5.5.3: which URLs share a
//! connection (counted on the socket table and in the server's log),
//! `kXR_bind` substreams carrying reads, spreading files over channels, and
//! the per-channel statistics.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::future::join_all;
use xroot::client::{ChannelKey, Client, Config, File, OpenFlags, Spread, Url};
use xroot_testkit::stock::StockServer;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// A stock server exporting one file `f` of `len` pattern bytes.
fn server_with_file(len: usize) -> Option<(StockServer, Vec<u8>, tempfile::TempDir)> {
    let data = tempfile::tempdir().unwrap();
    let content = pattern(len);
    std::fs::write(data.path().join("f"), &content).unwrap();
    let server = StockServer::start(data.path(), &[])?;
    Some((server, content, data))
}

/// `client`'s open of the file `server_with_file` wrote.
async fn open_f(client: &Client, server: &StockServer) -> File {
    let url = format!("root://127.0.0.1:{}//f", server.port);
    client.open(&url, OpenFlags::READ).await.unwrap()
}

/// Established TCP connections to `port` on loopback, from this machine's
/// socket table (`/proc/net/tcp` and `tcp6`: the remote port is the 3rd
/// column's hex suffix, state `01` is ESTABLISHED).
fn connections_to(port: u16) -> usize {
    let tables: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(
        !tables.is_empty(),
        "no /proc/net/tcp to count connections in"
    );
    tables
        .iter()
        .flat_map(|t| t.lines().skip(1))
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let rem_port = cols[2].rsplit(':').next().unwrap();
            u16::from_str_radix(rem_port, 16) == Ok(port) && cols[3] == "01"
        })
        .count()
}

/// Bytes each established connection to `port` has received, from `ss -ti`
/// (iproute2); `None` when `ss` is not installed.
fn bytes_received_per_connection(port: u16) -> Option<Vec<u64>> {
    let out = std::process::Command::new("ss")
        .args(["-tinH", "state", "established", "dst"])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.split_whitespace()
            .filter_map(|t| t.strip_prefix("bytes_received:"))
            .map(|n| n.parse().unwrap())
            .collect(),
    )
}

/// The users of the `login` lines in the server's log, once there are at
/// least `n` (the log is written by the server's own threads; 10 s guard).
async fn logins_in_log(server: &StockServer, n: usize) -> Vec<String> {
    let log = server.state.path().join("test/xrootd.log");
    let mut users = Vec::new();
    for _ in 0..200 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // "... XrootdXeq: alice.1234:22@127.0.0.1 pvt IPv4 login"
        users = text
            .lines()
            .filter(|l| l.ends_with(" login"))
            .filter_map(|l| l.split("XrootdXeq: ").nth(1))
            .map(|rest| rest.split('.').next().unwrap().to_string())
            .collect();
        if users.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    users
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_connection_per_channel_key() {
    let Some((server, content, _data)) = server_with_file(10_000) else {
        return;
    };
    let port = server.port;
    let client = Client::new();
    let content = &content;
    let open = |url: String| {
        let client = client.clone();
        async move {
            let f = client.open(&url, OpenFlags::READ).await.unwrap();
            assert_eq!(&f.read_at(0, 10_000).await.unwrap()[..], &content[..]);
            f
        }
    };
    let base = format!("root://127.0.0.1:{port}");
    let anon = format!("{base}//f");
    // same host, port and user; other paths and CGI: one connection
    let _a = open(anon.clone()).await;
    let _b = open(format!("{base}//f?some=cgi&more=1")).await;
    client.fs(&base).unwrap().stat("/f").await.unwrap();
    assert_eq!(connections_to(port), 1);
    // another user: a second login
    let alice = format!("root://alice@127.0.0.1:{port}//f");
    let _c = open(alice.clone()).await;
    let _d = open(format!("{alice}?other=cgi")).await;
    assert_eq!(connections_to(port), 2);
    // another xrdcl.intent: a third, and with alice a fourth
    let _e = open(format!("{anon}?xrdcl.intent=x")).await;
    let _f = open(format!("{alice}?xrdcl.intent=x&z=2")).await;
    assert_eq!(connections_to(port), 4);
    let _g = open(format!("{anon}?xrdcl.intent=x&y=1")).await;
    assert_eq!(connections_to(port), 4, "same intent, same channel");

    let keys: BTreeSet<ChannelKey> = client.channels().iter().map(|c| c.key().clone()).collect();
    let want: BTreeSet<ChannelKey> = [
        anon.clone(),
        alice.clone(),
        format!("{anon}?xrdcl.intent=x"),
        format!("{alice}?xrdcl.intent=x"),
    ]
    .iter()
    .map(|u| ChannelKey::of(&Url::parse(u).unwrap()))
    .collect();
    assert_eq!(keys, want);

    let mut users = logins_in_log(&server, 4).await;
    users.sort();
    assert_eq!(users.len(), 4, "one login per channel: {users:?}");
    assert_eq!(
        users.iter().filter(|u| *u == "alice").count(),
        2,
        "{users:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn substreams_carry_reads() {
    const CHUNK: usize = 128 * 1024;
    const READS: usize = 12;
    let Some((server, content, _data)) = server_with_file(READS * CHUNK + 5000) else {
        return;
    };
    let port = server.port;
    let client = Client::with_config(Config {
        substreams: 4,
        ..Config::default()
    });
    let f = client
        .open(&format!("root://127.0.0.1:{port}//f"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(connections_to(port), 4, "the main stream and 3 bound");

    // each read takes the least-loaded substream, equals in turn: however
    // many overlap, the first three reads use all three
    let reads = (0..READS).map(|i| f.read_at((i * CHUNK) as u64 + 17, CHUNK));
    for (i, r) in join_all(reads).await.into_iter().enumerate() {
        let at = i * CHUNK + 17;
        let want = &content[at..(at + CHUNK).min(content.len())];
        assert_eq!(&r.unwrap()[..], want, "read {i}");
    }
    let paths = client.channels()[0].stats().paths;
    let pathids: Vec<u8> = paths.iter().map(|p| p.pathid).collect();
    assert_eq!(pathids, [1, 2, 3], "{paths:?}");
    assert!(paths.iter().all(|p| p.in_flight == 0), "{paths:?}");
    let completed: u64 = paths.iter().map(|p| p.completed).sum();
    assert_eq!(completed, READS as u64);
    assert_eq!(connections_to(port), 4, "the substreams stay up");

    // the server answered on the substreams: each received a read's worth,
    // the main stream (handshake, login, open, ping) much less
    match bytes_received_per_connection(port) {
        Some(bytes) => {
            assert_eq!(bytes.len(), 4, "{bytes:?}");
            let busy = bytes.iter().filter(|&&b| b >= CHUNK as u64);
            assert_eq!(busy.count(), 3, "{bytes:?}");
        }
        None => eprintln!("ss not installed: per-connection bytes not checked"),
    }
    f.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_quiet_main_stream_is_not_dead_while_substreams_answer() {
    let Some((server, content, _data)) = server_with_file(64 * 1024) else {
        return;
    };
    let stream_timeout = Duration::from_secs(1);
    let client = Client::with_config(Config {
        substreams: 2,
        stream_timeout,
        ..Config::default()
    });
    let f = open_f(&client, &server).await;
    // reads answered on the substream, back to back for several stream
    // timeouts: the main stream hears nothing all that time
    let until = std::time::Instant::now() + 3 * stream_timeout;
    while std::time::Instant::now() < until {
        assert_eq!(&f.read_at(0, 64 * 1024).await.unwrap()[..], &content[..]);
    }
    assert_eq!(connections_to(server.port), 2);
    let logins = logins_in_log(&server, 1).await;
    assert_eq!(logins.len(), 1, "the link was never replaced: {logins:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_dropped_client_closes_its_substreams() {
    let Some((server, _content, _data)) = server_with_file(100) else {
        return;
    };
    // a stream timeout long enough that a loaded machine never trips it
    // while the reads run; the readers notice the drop at their next tick
    let client = Client::with_config(Config {
        substreams: 3,
        stream_timeout: Duration::from_secs(3),
        ..Config::default()
    });
    let f = open_f(&client, &server).await;
    f.read_at(0, 100).await.unwrap();
    // the main stream and two bound substreams; a refused or closing
    // socket may linger in the table for a moment, so wait for the count
    // to settle (30 s hang guard)
    let mut n = 0;
    for _ in 0..600 {
        n = connections_to(server.port);
        if n == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(n, 3, "main stream + 2 substreams");
    drop((f, client));
    // the reader tasks notice at their next idle tick (30 s guard)
    for _ in 0..600 {
        if connections_to(server.port) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} connections still open", connections_to(server.port));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn fixed_spread_puts_files_on_separate_channels() {
    let Some((server, content, _data)) = server_with_file(70_000) else {
        return;
    };
    let port = server.port;
    let client = Client::new();
    client.set_spread(Spread::Fixed(4));
    assert_eq!(client.spread(), Spread::Fixed(4));
    let url = format!("root://127.0.0.1:{port}//f");
    let opens = (0..8).map(|_| client.open(&url, OpenFlags::READ));
    let files: Vec<_> = join_all(opens)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let reads = files
        .iter()
        .enumerate()
        .map(|(i, f)| f.read_at(i as u64 * 1000, 60_000));
    for (i, r) in join_all(reads).await.into_iter().enumerate() {
        let at = i * 1000;
        assert_eq!(&r.unwrap()[..], &content[at..at + 60_000], "file {i}");
    }
    let intents: Vec<_> = files
        .iter()
        .map(|f| f.url().cgi_value("xrdcl.intent").map(str::to_string))
        .collect();
    let round = [None, Some("1"), Some("2"), Some("3")].map(|i| i.map(String::from));
    assert_eq!(intents, [round.clone(), round].concat(), "round-robin");
    assert_eq!(client.channels().len(), 4);
    assert_eq!(connections_to(port), 4);
    for (key, stats) in client.stats() {
        // two opens and two reads each
        assert_eq!(stats.completed, 4, "{key}: {stats:?}");
    }

    // an explicit intent is kept and takes no entry
    let pinned = client
        .open(&format!("{url}?xrdcl.intent=mine"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(pinned.url().cgi_value("xrdcl.intent"), Some("mine"));
    assert_eq!(client.channels().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn auto_spread_grows_when_every_channel_is_busy() {
    let Some((server, _content, _data)) = server_with_file(100) else {
        return;
    };
    let client = Client::new();
    client.set_spread(Spread::Auto { max_pending: 1 });
    let url = format!("root://127.0.0.1:{}//f", server.port);
    // 4 entries, then a tune to 8 for the 5th and 6th file
    let opens = (0..6).map(|_| client.open(&url, OpenFlags::READ));
    let files: Vec<_> = join_all(opens).await;
    assert!(files.iter().all(Result::is_ok));
    assert_eq!(client.channels().len(), 6);
    assert_eq!(connections_to(server.port), 6);
    // files that are dropped give their entries back
    drop(files);
    let again = client.open(&url, OpenFlags::READ).await.unwrap();
    assert_eq!(again.url().cgi_value("xrdcl.intent"), Some("6"));
    assert_eq!(client.channels().len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn stats_of_concurrent_reads_on_one_channel() {
    // Every read is sent before any answer is awaited; a read overlaps the
    // next unless its whole 1 MiB answer arrives between its send and its
    // first poll, which would take a preemption of the test thread each
    // time, 16 times in a row.
    const CHUNK: usize = 1 << 20;
    const K: usize = 16;
    let Some((server, content, _data)) = server_with_file(K * CHUNK) else {
        return;
    };
    let client = Client::new();
    let url = format!("root://127.0.0.1:{}//f", server.port);
    let f = client.open(&url, OpenFlags::READ).await.unwrap();
    let reads = (0..K).map(|i| f.read_at((i * CHUNK) as u64, CHUNK));
    for (i, r) in join_all(reads).await.into_iter().enumerate() {
        assert_eq!(&r.unwrap()[..], &content[i * CHUNK..(i + 1) * CHUNK]);
    }
    f.close().await.unwrap();

    let all = client.stats();
    assert_eq!(all.len(), 1);
    let (key, s) = &all[0];
    assert_eq!(*key, ChannelKey::of(&Url::parse(&url).unwrap()));
    assert!(s.in_flight_peak >= 2, "{s:?}");
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.completed, K as u64 + 2, "the reads, open and close");
    assert!(s.bytes_received >= (K * CHUNK) as u64, "{s:?}");
    assert!(s.bytes_sent >= (K + 2) as u64 * 24, "{s:?}");
    assert!(s.in_flight_mean > 0.0 && s.in_flight_seconds > 0.0, "{s:?}");
    assert!(s.observed > Duration::ZERO, "{s:?}");
    assert!(s.latency_max >= s.latency_mean && s.latency_mean > Duration::ZERO);
    assert!(s.paths.is_empty(), "no substreams");
}
