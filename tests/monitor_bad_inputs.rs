//! Monitoring is never in the way of serving (issue 29): `serve` with
//! `--monitor` and `--report` sending to a loopback UDP port nobody
//! listens on (each datagram answered by an ICMP port unreachable), while
//! one session floods opens and closes and then 10,000 sessions (or as
//! many as the descriptor limit leaves room for) log in at once, each
//! opening the file. A read still answers with the file's bytes; every
//! user-map packet the logins made shows in `/metrics` as sent, dropped
//! (the send queue was full) or failed; and the server's peak memory stays
//! within the send queue's bound (1,024 packets of at most 64 KiB) of the
//! same run without monitoring.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use xroot::client::{Client, OpenFlags};
use xroot_testkit::example::{example_bin, scrape, Daemon};
use xroot_testkit::ours::peak_rss;

/// Bytes of the file read.
const SIZE: usize = 1 << 20;
/// Opens (each closed) of the flood, and how many at once.
const OPENS: usize = 2000;
const AT_ONCE: usize = 50;
/// The send queue's bound: its packets (the default `queue`) times the
/// largest datagram.
const QUEUE_BOUND: u64 = 1024 * 65536;

/// 10,000 sessions, or as many as the soft descriptor limit leaves room
/// for (each session is one descriptor in the server and one in
/// `xrdload`), keeping 256 for everything else.
fn sessions() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1024);
    10_000.min(soft.saturating_sub(256))
}

/// The `detailed` stream's packet counts in a scrape, by outcome.
fn detailed(m: &BTreeMap<String, f64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(k, _)| k.contains("monitor_packets_total") && k.contains("stream=\"detailed\""))
        .filter_map(|(k, v)| {
            let outcome = k.split("outcome=\"").nth(1)?.split('"').next()?;
            Some((outcome.to_string(), *v as u64))
        })
        .collect()
}

/// What one run saw: the server's peak RSS, its scrape after the load,
/// the sessions `xrdload` held.
struct Run {
    peak: u64,
    metrics: BTreeMap<String, f64>,
    held: usize,
}

/// `serve ARGS DIR`: the open flood, `n` sessions at once, then a whole
/// read that must equal the file.
async fn run(dir: &Path, args: &[String], n: usize) -> Run {
    let mut all: Vec<String> = vec![
        "--port".into(),
        "0".into(),
        "--metrics".into(),
        "127.0.0.1:0".into(),
    ];
    all.extend(args.iter().cloned());
    all.push(dir.display().to_string());
    let mut serve = Daemon::start("serve", &all);
    let addr = serve.line("serve listening on ");
    let metrics = serve.line("serve metrics on http://");
    let url = format!("root://{addr}//f.bin");

    // the flood: OPENS opens and closes on one session, AT_ONCE at a time
    let client = Client::new();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..AT_ONCE {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            for _ in 0..OPENS / AT_ONCE {
                let f = client.open(&url, OpenFlags::READ).await.unwrap();
                f.close().await.unwrap();
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }

    // n sessions at once, each with the file open
    let xrdload = example_bin("xrdload");
    let out = tokio::task::spawn_blocking({
        let url = url.clone();
        let pid = serve.pid().to_string();
        move || {
            Command::new(xrdload)
                .args(["--sessions", &n.to_string(), "--depth", "0"])
                .args(["--duration", "2", "--server-pid", &pid, &url])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "xrdload: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errors: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("summary: load.errors "))
        .and_then(|v| v.parse().ok())
        .expect("xrdload's error count");
    assert_eq!(errors, 0.0, "{text}");

    // serving goes on: a whole read answers with the file's bytes
    let f = tokio::time::timeout(Duration::from_secs(60), client.open(&url, OpenFlags::READ))
        .await
        .expect("an open after the load")
        .unwrap();
    let got = f.read_at(0, SIZE).await.unwrap();
    assert_eq!(&got[..], &pattern()[..]);
    f.close().await.unwrap();

    // the sender has had a flush interval to send what it queued
    tokio::time::sleep(Duration::from_secs(2)).await;
    Run {
        peak: peak_rss(serve.pid()),
        metrics: scrape(metrics),
        held: n,
    }
}

fn pattern() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 7 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_collector_a_flood_of_opens_and_ten_thousand_sessions_leave_serving_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.bin"), pattern()).unwrap();
    // a port nobody listens on: bound, then closed
    let dead = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let n = sessions();
    let plain = run(dir.path(), &[], n).await;
    let monitored = run(
        dir.path(),
        &[
            "--monitor".into(),
            dead.clone(),
            "--monitor-flush".into(),
            "1".into(),
            "--report".into(),
            dead,
            "--report-every".into(),
            "1".into(),
        ],
        n,
    )
    .await;
    let counts = detailed(&monitored.metrics);
    eprintln!(
        "{} sessions: peak RSS without monitoring {} MiB, with {} MiB; detailed packets {counts:?}",
        monitored.held,
        plain.peak >> 20,
        monitored.peak >> 20
    );
    assert!(detailed(&plain.metrics).values().all(|v| *v == 0));
    // each login made a user-map packet, each open a path map: every one
    // was sent, dropped or failed, and counted
    let accounted: u64 = counts.values().sum();
    assert!(
        accounted >= (monitored.held + OPENS) as u64,
        "{counts:?} for {} logins and {OPENS} opens",
        monitored.held
    );
    assert!(
        monitored.peak <= plain.peak + QUEUE_BOUND,
        "peak RSS {} MiB with monitoring, {} MiB without",
        monitored.peak >> 20,
        plain.peak >> 20
    );
}
