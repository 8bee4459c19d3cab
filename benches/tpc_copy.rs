//! Native third-party copy of 1 GiB driven by the stock `xrdcp --tpc
//! only`: between two of our servers (`serve --tpc`, in this process on a
//! two-worker runtime) and between two stock xrootd 5.5.3 (`ofs.tpc`, the
//! testkit's `tpc_config`), [`RUNS`] runs each, interleaved; one table
//! (`cargo bench --bench tpc_copy`; about a minute).
//!
//! The stock client learns that the copy ended only when it next looks: it
//! sleeps 2.5 s between looks (a `kXR_stat` of the destination's handle),
//! so both wall times come in steps of 2.5 s beside the client's own
//! set-up. The table therefore also gives the time until the destination
//! file was whole (polled every 10 ms by this bench), which is the copy's
//! own. The ratio is stock / ours of the medians (target, issue 30: ours no
//! slower, ≥ 1.0).
//!
//! Summary lines for `benches/report.sh`: `tpc_copy.stock_s`,
//! `tpc_copy.ours_s` (median wall times of `xrdcp`, seconds),
//! `tpc_copy.stock_whole_s`, `tpc_copy.ours_whole_s` (median times until the
//! destination file was whole) and `tpc_copy.ratio` (stock / ours, the
//! latter medians).
//!
//! Prints "skipped" when the stock xrootd or xrdcp is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xroot_testkit::ours::serve_example;
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, stock};

/// Size of the copied file: 1 GiB.
const SIZE: u64 = 1 << 30;
/// Timed runs of each pair.
const RUNS: usize = 3;

fn main() {
    if !stock::xrootd_available() || !stock::xrootd_client_available() {
        println!("tpc_copy: skipped (the stock xrootd or xrdcp is not installed)");
        return;
    }
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    for src in [&dirs[0], &dirs[2]] {
        bench::write_file(&src.path().join("big.bin"), SIZE);
        let _ = Command::new("chmod")
            .arg("a+r")
            .arg(src.path().join("big.bin"))
            .status();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let flags = ["--tpc"];
    let ours = [
        rt.block_on(serve_example(&flags, dirs[0].path())).port(),
        rt.block_on(serve_example(&flags, dirs[1].path())).port(),
    ];
    let stock_src = StockServer::start_tpc(dirs[2].path(), 60, &[]).expect("xrootd");
    let stock_dst = StockServer::start_tpc(dirs[3].path(), 60, &[]).expect("xrootd");
    let pairs = [
        (
            "stock xrootd → stock xrootd",
            [stock_src.port, stock_dst.port],
            dirs[3].path(),
        ),
        ("ours → ours", ours, dirs[1].path()),
    ];
    // [stock, ours] × (xrdcp wall time, time until the file was whole)
    let mut runs: [Vec<(f64, f64)>; 2] = Default::default();
    for _ in 0..RUNS {
        for ((_, ports, dst_dir), cell) in pairs.iter().zip(runs.iter_mut()) {
            cell.push(tpc(*ports, dst_dir));
        }
    }
    drop((stock_src, stock_dst));
    println!("\nstock xrdcp --tpc only, 1 GiB on loopback, {RUNS} runs each");
    println!(
        "{:<30} {:>14} {:>14} {:>16}",
        "", "xrdcp median s", "whole median s", "ratio (whole)"
    );
    let med = |cell: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = cell.iter().map(pick).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (wall, whole) = (|r: &(f64, f64)| r.0, |r: &(f64, f64)| r.1);
    for (i, ((name, _, _), cell)) in pairs.iter().zip(&runs).enumerate() {
        let ratio = match i {
            1 => format!("{:.2}x", med(&runs[0], whole) / med(cell, whole)),
            _ => String::new(),
        };
        println!(
            "{name:<30} {:>14.3} {:>14.3} {ratio:>16}",
            med(cell, wall),
            med(cell, whole)
        );
    }
    println!(
        "every run (xrdcp s, whole s): stock {:?}, ours {:?}",
        runs[0], runs[1]
    );
    println!(
        "load average at the end (2 cores shared): {}\n",
        bench::load_average()
    );
    bench::summary("tpc_copy.stock_s", med(&runs[0], wall));
    bench::summary("tpc_copy.ours_s", med(&runs[1], wall));
    bench::summary("tpc_copy.stock_whole_s", med(&runs[0], whole));
    bench::summary("tpc_copy.ours_whole_s", med(&runs[1], whole));
    bench::summary(
        "tpc_copy.ratio",
        med(&runs[0], whole) / med(&runs[1], whole),
    );
}

/// One `xrdcp --tpc only -f` from port `[0]` to port `[1]`: its wall time
/// and the time until `dst_dir/big.bin` had all its bytes, seconds. The
/// destination file is removed first. Panics if the copy fails.
fn tpc(ports: [u16; 2], dst_dir: &Path) -> (f64, f64) {
    let dst = dst_dir.join("big.bin");
    let _ = std::fs::remove_file(&dst);
    let url = |port: u16| format!("root://localhost:{port}//big.bin");
    let t = Instant::now();
    let mut child = Command::new("xrdcp")
        .args([
            "--tpc",
            "only",
            "-f",
            "--nopbar",
            &url(ports[0]),
            &url(ports[1]),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xrdcp");
    let mut whole = None;
    let status = loop {
        if whole.is_none() && std::fs::metadata(&dst).is_ok_and(|m| m.len() == SIZE) {
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
        "xrdcp --tpc: {status:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took.as_secs_f64(), whole.unwrap_or(took).as_secs_f64())
}
