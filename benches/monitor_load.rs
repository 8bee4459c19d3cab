//! What the monitoring streams cost ours under load (`cargo bench --bench
//! monitor_load`; about two minutes): the 1,000-session load of
//! `server_load` (the `xrdload` example: [`SESSIONS`] sessions, each its
//! own connection, keeping [`DEPTH`] reads of 64 KiB outstanding at random
//! offsets of a file in the page cache) against our `serve` example
//! without monitoring and with `--monitor` and `--report` (flushed and
//! reported every second, the most the flags allow) to a UDP collector of
//! the bench that drains them, [`ROUNDS`] times each, alternating (which
//! runs first alternates too), each run on a fresh server process.
//!
//! The throughput of each run, the medians, and their ratio (target:
//! monitoring costs at most 2 %); the datagrams and bytes the collector
//! got. The stock xrootd is not run: this measures our own cost only.
//!
//! The load generator shares the machine's cores with the server, so on a
//! busy machine the throughput of two runs of one kind differs by more
//! than the cost measured; the server's CPU time per GB served is the
//! steadier figure of the cost.
//!
//! Last, `summary: monitor_load.KEY VALUE` lines, KEY `off_mb_s`,
//! `on_mb_s`, `on_over_off` (the ratio of the medians), `cpu_s_per_gb_off`,
//! `cpu_s_per_gb_on`, `cpu_on_over_off`, `datagrams_per_s`.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use xroot_testkit::{bench, example, ours};

/// Size of the file read: 256 MiB.
const SIZE: u64 = 256 << 20;
/// Sessions of each run.
const SESSIONS: usize = 1000;
/// Reads each session keeps outstanding.
const DEPTH: usize = 8;
/// Seconds of each run.
const SECONDS: u32 = 15;
/// Runs of each kind.
const ROUNDS: usize = 4;

/// A UDP collector on loopback counting what it gets, on a thread.
struct Collector {
    addr: SocketAddr,
    datagrams: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Collector {
    fn start() -> Collector {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let (datagrams, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, b, s) = (datagrams.clone(), bytes.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !s.load(Ordering::Relaxed) {
                if let Ok(n) = socket.recv(&mut buf) {
                    d.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        });
        Collector {
            addr,
            datagrams,
            bytes,
            stop,
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if !Path::new("/proc/self/stat").exists() {
        println!("monitor_load: skipped (needs /proc for the server's CPU time)");
        return;
    }
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join("big.bin"), SIZE);
    let xrdload = example::example_bin("xrdload");
    let collector = Collector::start();
    let dest = collector.addr.to_string();
    let monitored = [
        "--monitor",
        &dest,
        "--monitor-flush",
        "1",
        "--report",
        &dest,
        "--report-every",
        "1",
    ];
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut cpu_off = Vec::new();
    let mut cpu_on = Vec::new();
    let mut datagrams = 0;
    let mut bytes = 0;
    println!("{SESSIONS} sessions x {DEPTH} reads of 64 KiB outstanding, {SECONDS} s a run:");
    for round in 1..=ROUNDS {
        // which kind runs first alternates, so that a load that grows or
        // falls during the bench (other processes) weighs on both alike
        let order = if round % 2 == 1 {
            [false, true]
        } else {
            [true, false]
        };
        for monitoring in order {
            let args: &[&str] = if monitoring { &monitored } else { &[] };
            let (d0, b0) = (
                collector.datagrams.load(Ordering::Relaxed),
                collector.bytes.load(Ordering::Relaxed),
            );
            let server = ours::ServeProcess::start_with(data.path(), args);
            let r = load(&xrdload, server.addr, server.pid());
            drop(server);
            // the last flush and summary of a stopped server may still come
            std::thread::sleep(Duration::from_millis(300));
            let (d, b) = (
                collector.datagrams.load(Ordering::Relaxed) - d0,
                collector.bytes.load(Ordering::Relaxed) - b0,
            );
            let mb_s = r.get("mb_s").copied().unwrap_or(f64::NAN);
            let cpu = r.get("server_cpu_s_per_gb").copied().unwrap_or(f64::NAN);
            println!(
                "  round {round} {:14} {mb_s:8.0} MB/s {cpu:6.2} CPU s/GB, errors {:.0}, {d} datagrams ({b} bytes) collected",
                if monitoring { "monitored" } else { "not monitored" },
                r.get("errors").copied().unwrap_or(f64::NAN),
            );
            if monitoring {
                on.push(mb_s);
                cpu_on.push(cpu);
                datagrams += d;
                bytes += b;
            } else {
                off.push(mb_s);
                cpu_off.push(cpu);
            }
        }
    }
    let pairs: Vec<String> = on
        .iter()
        .zip(&off)
        .map(|(a, b)| format!("{:.3}", a / b))
        .collect();
    let (cpu_off_m, cpu_on_m) = (median(cpu_off), median(cpu_on));
    println!(
        "\nper round, monitored / not: {} (the spread is the machine's noise)",
        pairs.join(", ")
    );
    println!(
        "server CPU per GB: {cpu_off_m:.4} s without, {cpu_on_m:.4} s with monitoring: {:+.1} %",
        (cpu_on_m / cpu_off_m - 1.0) * 100.0
    );
    let (off_m, on_m) = (median(off), median(on));
    let ratio = on_m / off_m;
    let per_s = datagrams as f64 / (ROUNDS as f64 * f64::from(SECONDS));
    println!(
        "\nmedian: {off_m:.0} MB/s without monitoring, {on_m:.0} MB/s with --monitor and --report: \
         {ratio:.3} ({:+.1} %; target: a cost of at most 2 %)",
        (ratio - 1.0) * 100.0
    );
    println!(
        "monitoring sent {per_s:.1} datagrams/s, {:.0} bytes/s",
        bytes as f64 / (ROUNDS as f64 * f64::from(SECONDS))
    );
    println!("load average at the end: {}\n", bench::load_average());
    bench::summary("monitor_load.off_mb_s", off_m);
    bench::summary("monitor_load.on_mb_s", on_m);
    bench::summary("monitor_load.on_over_off", ratio);
    bench::summary("monitor_load.cpu_s_per_gb_off", cpu_off_m);
    bench::summary("monitor_load.cpu_s_per_gb_on", cpu_on_m);
    bench::summary("monitor_load.cpu_on_over_off", cpu_on_m / cpu_off_m);
    bench::summary("monitor_load.datagrams_per_s", per_s);
}

/// `xrdload` against `addr`, the server being `pid`: its `summary: load.*`
/// figures by key.
fn load(xrdload: &Path, addr: SocketAddr, pid: u32) -> HashMap<String, f64> {
    let out = Command::new(xrdload)
        .args(["--sessions", &SESSIONS.to_string()])
        .args(["--depth", &DEPTH.to_string()])
        .args(["--duration", &SECONDS.to_string()])
        .args(["--server-pid", &pid.to_string()])
        .arg(format!("root://{addr}//big.bin"))
        .output()
        .expect("run xrdload");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "xrdload: {:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("summary: load."))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}
