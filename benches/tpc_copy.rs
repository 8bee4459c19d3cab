//! Native third-party copy on loopback, ours beside the stock xrootd 5.5.3
//! (`cargo bench --bench tpc_copy`; about six minutes on two cores, most of
//! it the stock client's 2.5 s poll per file in (b)).
//!
//! Pairs of servers, source → destination, both exporting temp dirs:
//! `stock ↔ stock` (two `xrootd` with `ofs.tpc`, `StockServer::start_tpc`:
//! the destination copies with `/usr/bin/xrdcp --server`), and `ours ↔
//! ours` (two `serve --tpc`) when our `serve` has `--tpc` (else that row
//! prints "skipped"). On each pair, `xrdcp --tpc only -f` by our xrdcp and,
//! on the stock pair, by the stock one:
//!
//! (a) one 1 GiB file (byte `i` = `(i * 7) % 251`, in the page cache):
//!     wall time of the whole command, median of 3, runs interleaved, the
//!     copy removed after each;
//! (b) 100 files of 64 kB in one run into a directory: files per second
//!     of the whole command, one run each (the stock client's time is its
//!     2.5 s poll per file, about 250 s).
//!
//! The load average is printed before and after. Last, one `summary: KEY
//! VALUE` line each for `benches/report.sh`: `tpc_copy.big.PAIR.TOOL_s`
//! (seconds) and `tpc_copy.small.PAIR.TOOL_files_s` (files/s), PAIR
//! `stock_stock` or `ours_ours`, TOOL `stock_xrdcp` or `our_xrdcp`;
//! `tpc_copy.big.client_ratio` and `tpc_copy.small.client_ratio` (on the
//! stock pair, our xrdcp against the stock one: stock time / our time, and
//! our files/s / stock files/s; > 1 is ours faster); and, with `ours ↔
//! ours`, the figures `tpc_copy.big.ratio` (stock ↔ stock with the
//! stock xrdcp / ours ↔ ours with ours: target ≥ 1, ours no slower) and
//! `tpc_copy.small.ratio` (ours' files/s / the stock's: target ≥ 1.5).
//!
//! Starts and stops every server itself; prints "skipped" when the stock
//! xrootd or xrdcp is not installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xroot_testkit::ours::ServeProcess;
use xroot_testkit::stock::{self, StockServer};
use xroot_testkit::{bench, example};

/// The big file: 1 GiB.
const BIG: u64 = 1 << 30;
/// Timed runs of each big copy; the median counts.
const BIG_RUNS: usize = 3;
/// The small files: how many, and their size.
const SMALL_FILES: usize = 100;
const SMALL: u64 = 64_000;

/// A source and a destination, by the URL prefix naming each
/// (`root://localhost:PORT/`) and the destination's directory.
struct Pair {
    key: &'static str,
    name: &'static str,
    src: String,
    dst: String,
    dst_dir: PathBuf,
    /// The servers, stopped on drop.
    _servers: Box<dyn std::any::Any>,
}

fn main() {
    if !stock::xrootd_available() || !stock::xrootd_client_available() {
        println!("tpc_copy: skipped (the stock xrootd or xrdcp is not installed)");
        return;
    }
    println!("load average at the start: {}", bench::load_average());
    let src = tempfile::tempdir().expect("temp dir");
    bench::write_file(&src.path().join("big.bin"), BIG);
    std::fs::create_dir(src.path().join("small")).unwrap();
    for i in 0..SMALL_FILES {
        bench::write_pattern(&src.path().join(format!("small/f{i:03}")), SMALL, i as u64);
    }
    let ours = example::example_bin("xrdcp");
    let stock_xrdcp = PathBuf::from("xrdcp");
    let (dst_a, dst_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    let mut pairs = vec![stock_pair(src.path(), dst_a.path())];
    match ours_pair(src.path(), dst_b.path()) {
        Some(p) => pairs.push(p),
        None => println!("ours ↔ ours: skipped (our serve has no --tpc yet)"),
    }
    let mut figures: Vec<(String, f64)> = Vec::new();
    for pair in &pairs {
        let tools: Vec<(&str, &Path)> = match pair.key {
            "stock_stock" => vec![("stock_xrdcp", &stock_xrdcp), ("our_xrdcp", &ours)],
            _ => vec![("our_xrdcp", &ours)],
        };
        // (a) the big file, runs interleaved
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); tools.len()];
        for _ in 0..BIG_RUNS {
            for (t, (_, program)) in tools.iter().enumerate() {
                let to = format!("{}/big.bin", pair.dst);
                times[t].push(run(program, &[&format!("{}/big.bin", pair.src), &to]));
                std::fs::remove_file(pair.dst_dir.join("big.bin")).unwrap();
            }
        }
        for ((tool, _), mut t) in tools.iter().zip(times) {
            t.sort();
            let median = t[BIG_RUNS / 2].as_secs_f64();
            println!(
                "(a) 1 GiB, {}, {tool}: median {median:.2} s ({:.2} GB/s; runs {:?})",
                pair.name,
                BIG as f64 / median / 1e9,
                t.iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect::<Vec<_>>()
            );
            figures.push((format!("big.{}.{tool}_s", pair.key), median));
        }
        // (b) the small files, in one run each
        for (tool, program) in &tools {
            let dir = pair.dst_dir.join("small");
            std::fs::create_dir(&dir).unwrap();
            // the stock destination's copy program runs as another user
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            let srcs: Vec<String> = (0..SMALL_FILES)
                .map(|i| format!("{}/small/f{i:03}", pair.src))
                .collect();
            let mut args: Vec<&str> = srcs.iter().map(String::as_str).collect();
            let to = format!("{}/small/", pair.dst);
            args.push(&to);
            let took = run(program, &args).as_secs_f64();
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), SMALL_FILES);
            std::fs::remove_dir_all(&dir).unwrap();
            let rate = SMALL_FILES as f64 / took;
            println!(
                "(b) {SMALL_FILES} × 64 kB, {}, {tool}: {took:.2} s, {rate:.1} files/s",
                pair.name
            );
            figures.push((format!("small.{}.{tool}_files_s", pair.key), rate));
        }
    }
    let get = |k: &str| figures.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
    let mut ratios = Vec::new();
    if let (Some(s), Some(o)) = (
        get("big.stock_stock.stock_xrdcp_s"),
        get("big.stock_stock.our_xrdcp_s"),
    ) {
        ratios.push(("big.client_ratio", s / o));
    }
    if let (Some(s), Some(o)) = (
        get("small.stock_stock.stock_xrdcp_files_s"),
        get("small.stock_stock.our_xrdcp_files_s"),
    ) {
        ratios.push(("small.client_ratio", o / s));
    }
    if let (Some(s), Some(o)) = (
        get("big.stock_stock.stock_xrdcp_s"),
        get("big.ours_ours.our_xrdcp_s"),
    ) {
        ratios.push(("big.ratio", s / o));
    }
    if let (Some(s), Some(o)) = (
        get("small.stock_stock.stock_xrdcp_files_s"),
        get("small.ours_ours.our_xrdcp_files_s"),
    ) {
        ratios.push(("small.ratio", o / s));
    }
    for (k, v) in &ratios {
        println!("{k}: {v:.2}");
    }
    println!("\nload average at the end: {}\n", bench::load_average());
    for (key, value) in figures.iter().map(|(k, v)| (k.as_str(), *v)).chain(ratios) {
        bench::summary(&format!("tpc_copy.{key}"), value);
    }
}

/// Two stock `ofs.tpc` servers: `src` the source's export, `dst` the
/// destination's.
fn stock_pair(src: &Path, dst: &Path) -> Pair {
    let a = StockServer::start_tpc(src, &[]).expect("xrootd");
    let b = StockServer::start_tpc(dst, &[]).expect("xrootd");
    Pair {
        key: "stock_stock",
        name: "stock ↔ stock",
        src: a.tpc_url(""),
        dst: b.tpc_url(""),
        dst_dir: dst.to_path_buf(),
        _servers: Box::new((a, b)),
    }
}

/// Two `serve --tpc`, when our serve has that flag.
fn ours_pair(src: &Path, dst: &Path) -> Option<Pair> {
    let help = Command::new(example::example_bin("serve"))
        .arg("--help")
        .output()
        .ok()?;
    if !String::from_utf8_lossy(&help.stdout).contains("--tpc") {
        return None;
    }
    let a = ServeProcess::start_with(src, &["--tpc"]);
    let b = ServeProcess::start_with(dst, &["--tpc"]);
    let url = |s: &ServeProcess| format!("root://localhost:{}/", s.addr.port());
    Some(Pair {
        key: "ours_ours",
        name: "ours ↔ ours",
        src: url(&a),
        dst: url(&b),
        dst_dir: dst.to_path_buf(),
        _servers: Box::new((a, b)),
    })
}

/// Wall time of `program -N -f --tpc only ARGS`. Panics if it fails.
fn run(program: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = Command::new(program)
        .args(["-N", "-f", "--tpc", "only"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{} {args:?}: {:?}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    took
}
