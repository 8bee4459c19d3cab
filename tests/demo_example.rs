//! The `demo` example end to end in its local mode (generated file, our
//! server behind the delay relay, our cache, our client), small: one file,
//! 4 readers, a 20 ms round trip. Its table must show the cold cache
//! sending one origin request per vector read, the warm one none, and the
//! warm run faster than the cold one (it skips the WAN: by far). What the
//! origin's and the cache's `/metrics` counted (scraped by the demo over
//! HTTP, `--metrics` on free ports) must equal the table's own figures.

use std::process::Command;

/// The three figures (direct, cache cold, cache warm) of the table row
/// labelled `label` (NaN for a `-`).
fn row(table: &str, label: &str) -> [f64; 3] {
    let line = table
        .lines()
        .find(|l| l.get(..42).is_some_and(|head| head.trim_end() == label))
        .unwrap_or_else(|| panic!("no row {label:?} in:\n{table}"));
    let cells: Vec<f64> = line[42..]
        .split_whitespace()
        .map(|c| match c {
            "-" => f64::NAN,
            c => c.parse().unwrap_or_else(|_| panic!("{label}: {c:?}")),
        })
        .collect();
    cells
        .try_into()
        .unwrap_or_else(|c| panic!("{label}: 3 cells, not {c:?}"))
}

#[test]
fn demo_reads_cold_then_warm_through_the_cache() {
    let out = Command::new(xroot_testkit::example::example_bin("demo"))
        .args(["--files", "1", "--readers", "4", "--rtt-ms", "20"])
        .args(["--metrics", "127.0.0.1:0"])
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let [_, cold, warm] = row(&stdout, "wall time, s");
    assert!(warm < cold, "warm {warm} s, cold {cold} s:\n{stdout}");
    let [direct, cold, warm] = row(&stdout, "origin requests per vector read");
    assert_eq!((direct, cold, warm), (1.0, 1.0, 0.0), "{stdout}");
    let [_, _, warm] = row(&stdout, "origin requests");
    assert_eq!(warm, 0.0, "{stdout}");
    let [asked, ..] = row(&stdout, "MB asked by the client");
    assert_eq!(asked, 31.8, "the whole trace once: {stdout}");

    // the demo checks the bytes and requests exactly; the table shows them
    // rounded, equal too
    assert!(stdout.contains("/metrics agree with the table"), "{stdout}");
    assert!(stdout.contains("  metrics the origin server's at http://127.0.0.1:"));
    let same = |scraped: &str, ours: &str, runs: std::ops::Range<usize>| {
        let (a, b) = (row(&stdout, scraped), row(&stdout, ours));
        assert_eq!(a[runs.clone()], b[runs], "{scraped} vs {ours}:\n{stdout}");
    };
    same(
        "origin /metrics: MB of data sent",
        "MB fetched from the origin",
        0..3,
    );
    same("origin /metrics: read requests", "origin requests", 0..3);
    same("cache /metrics: MB asked", "MB asked by the client", 1..3);
    same(
        "cache /metrics: MB fetched from the origin",
        "MB fetched from the origin",
        1..3,
    );
    same("cache /metrics: origin requests", "origin requests", 1..3);
    let [direct, cold, warm] = row(&stdout, "cache /metrics: vector reads answered");
    assert!(direct.is_nan() && (cold, warm) == (50.0, 50.0), "{stdout}");
}
