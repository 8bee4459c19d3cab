//! Native third-party copy on loopback, ours beside the stock xrootd 5.5.3
//! (`cargo bench --bench tpc_copy`; about six minutes on two cores, four
//! of them the stock client's 2.5 s poll per file in (b)).
//!
//! Two pairs of servers, source → destination, each exporting a temp dir:
//! `stock ↔ stock` (two `xrootd` with the testkit's `tpc_config`: the
//! destination copies with `/usr/bin/xrdcp --server`) and `ours ↔ ours`
//! (two `serve --tpc`, in this process on a two-worker runtime). Both the
//! stock `xrdcp --tpc only -f` and ours drive copies between them:
//!
//! (a) one 1 GiB file (byte `i` = `(i * 7) % 251`, in the page cache),
//!     every tool on every pair, [`BIG_RUNS`] runs each, interleaved: the
//!     median wall time of the command, and the median time until the
//!     destination file was whole (polled every 10 ms: the copy's own; the
//!     stock client learns that a copy ended only at its next look, every
//!     2.5 s, so its wall times come in 2.5 s steps);
//! (b) 100 files of 64 kB in one run into a directory: files per second of
//!     the whole command, one run each; our xrdcp on both pairs, the stock
//!     one on the stock pair (its 2.5 s per file make about 250 s).
//!
//! The load average is printed at the start and the end. Summary lines for
//! `benches/report.sh`: `tpc_copy.big.PAIR.TOOL_s` and
//! `tpc_copy.big.PAIR.TOOL_whole_s` (seconds, medians), PAIR `stock_stock`
//! or `ours_ours`, TOOL `stock_xrdcp` or `our_xrdcp`;
//! `tpc_copy.small.PAIR.TOOL_files_s` (files/s); the targets:
//! `tpc_copy.big.ratio` (stock ↔ stock with the stock xrdcp ÷ ours ↔ ours
//! with ours, wall times: ≥ 1) and `tpc_copy.small.ratio` (ours ↔ ours
//! with ours ÷ stock ↔ stock with the stock one, files/s: ≥ 1.5); the
//! client alone, on the stock pair: `tpc_copy.big.client_ratio` and
//! `tpc_copy.small.client_ratio` (the same quotients); the server alone,
//! with the stock xrdcp: `tpc_copy.ratio` (stock ↔ stock ÷ ours ↔ ours,
//! times until whole), with `tpc_copy.stock_s`, `tpc_copy.ours_s`,
//! `tpc_copy.stock_whole_s`, `tpc_copy.ours_whole_s` its medians.
//!
//! Prints "skipped" when the stock xrootd or xrdcp is not installed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xroot_testkit::ours::serve_example;
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, example, stock};

/// The big file: 1 GiB.
const BIG: u64 = 1 << 30;
/// Timed runs of each big copy; the medians count.
const BIG_RUNS: usize = 3;
/// The small files: how many, and their size.
const SMALL_FILES: usize = 100;
const SMALL: u64 = 64_000;

/// A pair of servers: the URL prefixes (`root://localhost:PORT/`) and the
/// destination's directory.
struct Pair {
    key: &'static str,
    src: String,
    dst: String,
    dst_dir: PathBuf,
}

fn main() {
    if !stock::xrootd_available() || !stock::xrootd_client_available() {
        println!("tpc_copy: skipped (the stock xrootd or xrdcp is not installed)");
        return;
    }
    println!("load average at the start: {}", bench::load_average());
    // one source dir for both pairs, readable by the stock server's user
    let src = tempfile::tempdir().unwrap();
    bench::write_file(&src.path().join("big.bin"), BIG);
    std::fs::create_dir(src.path().join("small")).unwrap();
    for i in 0..SMALL_FILES {
        bench::write_pattern(&src.path().join(format!("small/f{i:03}")), SMALL, i as u64);
    }
    let _ = Command::new("chmod")
        .arg("-R")
        .arg("a+rX")
        .arg(src.path())
        .status();
    let (dst_stock, dst_ours) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let stock_src = StockServer::start_tpc(src.path(), 60, &[]).expect("xrootd");
    let stock_dst = StockServer::start_tpc(dst_stock.path(), 60, &[]).expect("xrootd");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ours_src = rt.block_on(serve_example(&["--tpc"], src.path())).port();
    let ours_dst = rt
        .block_on(serve_example(&["--tpc"], dst_ours.path()))
        .port();
    let url = |port: u16| format!("root://localhost:{port}/");
    let pairs = [
        Pair {
            key: "stock_stock",
            src: url(stock_src.port),
            dst: url(stock_dst.port),
            dst_dir: dst_stock.path().to_path_buf(),
        },
        Pair {
            key: "ours_ours",
            src: url(ours_src),
            dst: url(ours_dst),
            dst_dir: dst_ours.path().to_path_buf(),
        },
    ];
    let ours = example::example_bin("xrdcp");
    let tools: [(&str, PathBuf); 2] = [("stock_xrdcp", "xrdcp".into()), ("our_xrdcp", ours)];
    let mut figures: Vec<(String, f64)> = Vec::new();

    // (a) the big file, every tool on every pair, runs interleaved
    let mut runs = vec![Vec::new(); pairs.len() * tools.len()];
    for _ in 0..BIG_RUNS {
        for (p, pair) in pairs.iter().enumerate() {
            for (t, (_, program)) in tools.iter().enumerate() {
                let from = format!("{}/big.bin", pair.src);
                let to = format!("{}/big.bin", pair.dst);
                let watched = pair.dst_dir.join("big.bin");
                let _ = std::fs::remove_file(&watched);
                runs[p * tools.len() + t].push(run(program, &[&from, &to], Some(&watched)));
            }
        }
    }
    println!("\n(a) 1 GiB, --tpc only, {BIG_RUNS} runs each: median s (xrdcp / until whole)");
    for (p, pair) in pairs.iter().enumerate() {
        for (t, (tool, _)) in tools.iter().enumerate() {
            let cell = &runs[p * tools.len() + t];
            let (wall, whole) = (median(cell, |r| r.0), median(cell, |r| r.1));
            println!(
                "{:<12} {tool:<12} {wall:>7.2} {whole:>7.2}   runs {cell:.2?}",
                pair.key
            );
            figures.push((format!("big.{}.{tool}_s", pair.key), wall));
            figures.push((format!("big.{}.{tool}_whole_s", pair.key), whole));
        }
    }

    // (b) the small files in one run: ours on both pairs, the stock one
    // on the stock pair
    println!("\n(b) {SMALL_FILES} × 64 kB in one --tpc only run");
    for pair in &pairs {
        for (tool, program) in &tools {
            if *tool == "stock_xrdcp" && pair.key == "ours_ours" {
                continue;
            }
            let dir = pair.dst_dir.join("small");
            std::fs::create_dir(&dir).unwrap();
            // the stock destination's copy program runs as another user
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            let srcs: Vec<String> = (0..SMALL_FILES)
                .map(|i| format!("{}/small/f{i:03}", pair.src))
                .collect();
            let mut args: Vec<&str> = srcs.iter().map(String::as_str).collect();
            let to = format!("{}/small/", pair.dst);
            args.push(&to);
            let (took, _) = run(program, &args, None);
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), SMALL_FILES);
            std::fs::remove_dir_all(&dir).unwrap();
            let rate = SMALL_FILES as f64 / took;
            println!(
                "{:<12} {tool:<12} {took:>7.2} s {rate:>7.1} files/s",
                pair.key
            );
            figures.push((format!("small.{}.{tool}_files_s", pair.key), rate));
        }
    }
    drop((stock_src, stock_dst));

    let get = |k: &str| {
        figures
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| *v)
            .unwrap_or(f64::NAN)
    };
    let ratios = [
        (
            "big.ratio",
            get("big.stock_stock.stock_xrdcp_s") / get("big.ours_ours.our_xrdcp_s"),
        ),
        (
            "small.ratio",
            get("small.ours_ours.our_xrdcp_files_s") / get("small.stock_stock.stock_xrdcp_files_s"),
        ),
        (
            "big.client_ratio",
            get("big.stock_stock.stock_xrdcp_s") / get("big.stock_stock.our_xrdcp_s"),
        ),
        (
            "small.client_ratio",
            get("small.stock_stock.our_xrdcp_files_s")
                / get("small.stock_stock.stock_xrdcp_files_s"),
        ),
        (
            "ratio",
            get("big.stock_stock.stock_xrdcp_whole_s") / get("big.ours_ours.stock_xrdcp_whole_s"),
        ),
        ("stock_s", get("big.stock_stock.stock_xrdcp_s")),
        ("ours_s", get("big.ours_ours.stock_xrdcp_s")),
        ("stock_whole_s", get("big.stock_stock.stock_xrdcp_whole_s")),
        ("ours_whole_s", get("big.ours_ours.stock_xrdcp_whole_s")),
    ];
    println!();
    for (k, v) in &ratios[..5] {
        println!("{k}: {v:.2}");
    }
    println!(
        "\nload average at the end (2 cores shared): {}\n",
        bench::load_average()
    );
    let all = figures.iter().map(|(k, v)| (k.as_str(), *v));
    for (key, value) in all.chain(ratios) {
        bench::summary(&format!("tpc_copy.{key}"), value);
    }
}

/// The median of `pick` over `cell`.
fn median(cell: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64) -> f64 {
    let mut v: Vec<f64> = cell.iter().map(pick).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `program -N -f --tpc only ARGS`: its wall time and, with `watched`, the
/// time until that file held [`BIG`] bytes, seconds. Panics if it fails.
fn run(program: &Path, args: &[&str], watched: Option<&Path>) -> (f64, f64) {
    let t = Instant::now();
    let mut child = Command::new(program)
        .args(["-N", "-f", "--tpc", "only"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut whole = None;
    let status = loop {
        let done = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() == BIG);
        if whole.is_none() && watched.is_some_and(done) {
            whole = Some(t.elapsed());
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "{} {args:?}: {status:?}\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    (took.as_secs_f64(), whole.unwrap_or(took).as_secs_f64())
}
