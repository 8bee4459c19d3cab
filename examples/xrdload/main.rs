//! A load generator for any `root://` (or `roots://`) server: N sessions,
//! each with its own connection and the file open, keeping D reads of S
//! bytes outstanding at random S-aligned offsets for a while, then
//! printing the throughput, the latency percentiles, the errors and, when
//! the server runs on this machine, its CPU time, memory, threads and file
//! descriptors.
//!
//! ```text
//! cargo run --release --example xrdload -- --sessions 1000 --depth 8 \
//!     --size 65536 --duration 30 root://127.0.0.1:1094//data/big.bin
//! ```
//!
//! The server process is the one listening on the URL's port when the
//! host is a loopback address (found through `/proc/net/tcp` and the
//! processes' descriptors; `--server-pid` names it instead). Its CPU time
//! is counted over the measured window only; its peak RSS is `VmHWM`
//! (since it started), so start a fresh server for each run.
//!
//! Two engines drive the sessions: by default each session is a
//! [`Client`] (any server: authentication, TLS, redirects), each of its D
//! reads a task awaiting `File::read_at`; with `--raw` each session is one
//! connection and one task that speaks the protocol itself (plain
//! `root://`, no login authentication; see [`raw`]), costing `xrdload`
//! far less CPU per read, for when it shares the server's cores. Both
//! print `xrdload`'s own CPU per GB and the machine's idle share of the
//! window, so a run shows what else the cores were busy with.
//!
//! The last lines are `summary: load.KEY VALUE`, one per figure, for
//! scripts (`benches/server_load.rs` reads them).

use std::collections::HashSet;
use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use xroot::client::{Client, OpenFlags};
use xroot::proto::url::Url;

/// The command line.
#[derive(Parser, Debug)]
#[command(name = "xrdload", about = "Read load on an XRootD server")]
struct Args {
    /// Sessions, each its own connection.
    #[arg(long, default_value_t = 100)]
    sessions: usize,
    /// Reads each session keeps outstanding; 0: the sessions stay idle
    /// (logged in, the file open) for the duration.
    #[arg(long, default_value_t = 8)]
    depth: usize,
    /// Bytes per read.
    #[arg(long, default_value_t = 65536)]
    size: usize,
    /// Seconds of load, after every session has opened the file.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Drive the sessions with the raw engine (plain root://, no login
    /// authentication): far cheaper per read than the client.
    #[arg(long)]
    raw: bool,
    /// The server's process id (default: found from the port, on loopback).
    #[arg(long)]
    server_pid: Option<u32>,
    /// The file to read: root://host:port//path
    url: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xrdload: {e}");
            ExitCode::from(1)
        }
    }
}

mod raw;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What the reads of one session saw.
#[derive(Default)]
struct Tally {
    /// Latency of each completed read, microseconds.
    latencies: Vec<u32>,
    /// Bytes of the completed reads.
    bytes: u64,
    errors: u64,
    first_error: Option<String>,
}

/// The open sessions, by engine.
enum Sessions {
    /// Each a [`Client`] of its own with the file open.
    Client(Vec<(Client, Arc<xroot::client::File>, u64)>),
    /// Each a connection of the `--raw` engine.
    Raw(Vec<raw::Session>),
}

impl Sessions {
    /// The file's size, bytes, as the first session's open saw it.
    fn size(&self) -> u64 {
        match self {
            Sessions::Client(files) => files.first().map_or(0, |f| f.2),
            Sessions::Raw(raw) => raw.first().map_or(0, |s| s.size),
        }
    }
}

/// `n` sessions through [`Client`], each with `url` open.
async fn open_clients(url: &str, n: usize) -> Res<Vec<(Client, Arc<xroot::client::File>, u64)>> {
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..n {
        let target = url.to_string();
        opening.spawn(async move {
            let client = Client::new();
            let file = client.open(&target, OpenFlags::READ).await?;
            let size = file.stat().await?.size;
            Ok::<_, xroot::client::Error>((client, Arc::new(file), size))
        });
    }
    let mut sessions = Vec::new();
    while let Some(opened) = opening.join_next().await {
        sessions.push(opened??);
    }
    Ok(sessions)
}

/// `n` sessions of the `--raw` engine, each with `url` open.
async fn open_raw(url: &Url, n: usize) -> Res<Vec<raw::Session>> {
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..n {
        let url = url.clone();
        opening.spawn(async move { raw::open(&url).await });
    }
    let mut sessions = Vec::new();
    while let Some(opened) = opening.join_next().await {
        sessions.push(opened??);
    }
    Ok(sessions)
}

/// One reader of the default engine: one read of `len` bytes at a time
/// at random offsets of `file` (`size` bytes) until `end`.
async fn client_reads(
    file: Arc<xroot::client::File>,
    size: u64,
    len: usize,
    end: Instant,
    mut rng: Rng,
) -> Tally {
    let slots = size / len as u64;
    let mut tally = Tally::default();
    while Instant::now() < end {
        let offset = rng.below(slots) * len as u64;
        let t = Instant::now();
        match file.read_at(offset, len).await {
            Ok(data) if data.len() == len => tally.done(len, t.elapsed()),
            Ok(data) => tally.fail(format!("{len} bytes at {offset}: got {}", data.len())),
            Err(e) => tally.fail(e.to_string()),
        }
    }
    tally
}

async fn run(args: Args) -> Res<()> {
    if args.sessions == 0 || args.size == 0 {
        return Err("--sessions and --size must be at least 1".into());
    }
    let url = Url::parse(&args.url).map_err(|e| format!("{}: {e}", args.url))?;
    let server = match args.server_pid {
        Some(pid) => Some(pid),
        None => local_server(&url),
    };

    let rss_before = server.and_then(|pid| status_field(pid, "VmRSS:"));
    // every session connects and opens before the clock starts
    let started = Instant::now();
    let sessions = match args.raw {
        false => Sessions::Client(open_clients(&args.url, args.sessions).await?),
        true => Sessions::Raw(open_raw(&url, args.sessions).await?),
    };
    let size = sessions.size();
    if size < args.size as u64 {
        return Err(format!("{}: {size} bytes, less than one read", args.url).into());
    }
    println!(
        "{} sessions open in {:.2} s; {} reads of {} bytes outstanding each, for {} s",
        args.sessions,
        started.elapsed().as_secs_f64(),
        args.depth,
        args.size,
        args.duration
    );

    if let (Some(pid), Some(before)) = (server, rss_before) {
        // let the server settle, then what the open sessions hold
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(now) = status_field(pid, "VmRSS:") {
            let per = (now - before) / args.sessions as f64;
            println!("server RSS {before:.0} kB before the sessions, {now:.0} kB with them open: {per:.1} kB per session");
            summary("server_kb_per_session", per);
        }
    }
    let cpu_before = server.and_then(cpu_seconds);
    let own_before = cpu_seconds(std::process::id());
    let idle_before = machine_idle();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(args.duration);
    let (depth, len) = (args.depth, args.size);
    let mut readers = tokio::task::JoinSet::new();
    let mut raw_readers = tokio::task::JoinSet::new();
    let mut held = None;
    match sessions {
        Sessions::Client(files) if depth > 0 => {
            for (s, (_, file, _)) in files.iter().enumerate() {
                for d in 0..depth {
                    let rng = Rng::new((s * depth + d) as u64);
                    readers.spawn(client_reads(Arc::clone(file), size, len, end, rng));
                }
            }
            held = Some(Sessions::Client(files));
        }
        Sessions::Raw(raw) if depth > 0 => {
            for (s, session) in raw.into_iter().enumerate() {
                let rng = Rng::new(s as u64);
                raw_readers.spawn(raw::reads(session, depth, len, end, rng));
            }
        }
        idle => {
            tokio::time::sleep_until(end.into()).await;
            held = Some(idle);
        }
    }
    let mut all = Tally::default();
    let mut raw_held = Vec::new();
    while let Some(done) = raw_readers.join_next().await {
        let (t, session) = done?;
        raw_held.push(session);
        all.add(t);
    }
    while let Some(t) = readers.join_next().await {
        all.add(t?);
    }
    let took = start.elapsed().as_secs_f64();
    let cpu_after = server.and_then(cpu_seconds);
    let own_after = cpu_seconds(std::process::id());
    let idle_after = machine_idle();
    let status = server.map(|pid| {
        ["VmHWM:", "VmRSS:", "Threads:"].map(|f| status_field(pid, f).unwrap_or(f64::NAN))
    });
    let fds = server.and_then(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()
            .map(|d| d.count())
    });
    if let Some(Sessions::Client(files)) = &held {
        for (_, file, _) in files {
            let _ = file.close().await;
        }
    }
    drop(held);
    drop(raw_held);

    let total = all.bytes;
    let mb_s = total as f64 / took / 1e6;
    all.latencies.sort_unstable();
    let pct = |p: f64| -> f64 {
        match all.latencies.len() {
            0 => f64::NAN,
            n => all.latencies[((n - 1) as f64 * p).round() as usize] as f64 / 1e3,
        }
    };
    println!(
        "{} reads, {:.1} MB in {took:.1} s: {mb_s:.0} MB/s; latency ms p50 {:.2} p99 {:.2} max {:.2}; errors {}",
        all.latencies.len(),
        total as f64 / 1e6,
        pct(0.5),
        pct(0.99),
        pct(1.0),
        all.errors
    );
    if let Some(e) = &all.first_error {
        println!("first error: {e}");
    }
    summary("mb_s", mb_s);
    summary("reads", all.latencies.len() as f64);
    summary("p50_ms", pct(0.5));
    summary("p99_ms", pct(0.99));
    summary("errors", all.errors as f64);
    let gb = total as f64 / 1e9;
    if let (Some(a), Some(b)) = (own_before, own_after) {
        // this process: the load generator's own cost, on the same cores
        println!("xrdload: CPU {:.2} s, {:.2} s per GB", b - a, (b - a) / gb);
        summary("client_cpu_s_per_gb", (b - a) / gb);
    }
    if let (Some((i0, t0)), Some((i1, t1))) = (idle_before, idle_after) {
        let idle = (i1 - i0) / (t1 - t0).max(1.0);
        println!("machine idle {:.1}% of the window", idle * 100.0);
        summary("machine_idle", idle);
    }
    match (server, cpu_before, cpu_after) {
        (Some(pid), Some(a), Some(b)) => {
            let [peak_kb, rss_kb, threads] = status.unwrap_or([f64::NAN; 3]);
            let cpu = b - a;
            let (peak_mb, rss_mb) = (peak_kb / 1024.0, rss_kb / 1024.0);
            println!(
                "server (pid {pid}): CPU {cpu:.2} s, {:.2} s per GB; RSS peak {peak_mb:.1} MiB, now {rss_mb:.1} MiB; {threads} threads, {} fds",
                cpu / gb,
                fds.unwrap_or(0)
            );
            summary("server_cpu_s_per_gb", cpu / gb);
            summary("server_peak_rss_mib", peak_mb);
            summary("server_threads", threads);
            summary("server_fds", fds.unwrap_or(0) as f64);
        }
        _ => println!("server: not on this machine (or not found): no CPU or memory figures"),
    }
    Ok(())
}

impl Tally {
    /// Adds what `t` saw.
    fn add(&mut self, t: Tally) {
        self.latencies.extend(t.latencies);
        self.bytes += t.bytes;
        self.errors += t.errors;
        self.first_error = self.first_error.take().or(t.first_error);
    }

    /// A read of `len` bytes completed after `took`.
    fn done(&mut self, len: usize, took: Duration) {
        self.latencies.push(took.as_micros() as u32);
        self.bytes += len as u64;
    }

    fn fail(&mut self, why: String) {
        self.errors += 1;
        self.first_error.get_or_insert(why);
    }
}

fn summary(key: &str, value: f64) {
    println!("summary: load.{key} {value}");
}

/// xorshift64*: offsets that differ per reader and per run of the same
/// arguments alike.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// A number in `0..n` (`n` at least 1).
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// A number field of `/proc/PID/status` (`VmRSS:` in kB, `Threads:`).
fn status_field(pid: u32, name: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The user and system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields after the command name, which may hold spaces
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // in USER_HZ, which Linux fixes at 100 for /proc
    Some(ticks / 100.0)
}

/// The machine's idle and total CPU time so far, in clock ticks of all
/// CPUs (the first line of `/proc/stat`; idle counts iowait too).
fn machine_idle() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some((idle, ticks.iter().sum()))
}

/// The process listening on `url`'s port, when its host is this machine's
/// loopback: the socket inode from `/proc/net/tcp{,6}`, then the process
/// holding a descriptor to it.
fn local_server(url: &Url) -> Option<u32> {
    let host = url.host.trim_matches(['[', ']']);
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return None;
    }
    let port = url.port;
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXADDR:HEXPORT; state 0A is LISTEN
            let listening = f.get(3) == Some(&"0A");
            let on_port = f
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port);
            if listening && on_port {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let target = std::fs::read_link(fd.path()).ok();
            if target.is_some_and(|t| inodes.contains(t.to_string_lossy().as_ref())) {
                return Some(pid);
            }
        }
    }
    None
}
