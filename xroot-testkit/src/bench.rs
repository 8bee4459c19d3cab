//! Helpers shared by the side-by-side benchmarks and `examples/demo/`: the
//! deterministic test files, the load report and the machine-readable
//! figures that `benches/report.sh` collects.

use std::io::Write;
use std::path::Path;

/// The period of the files' byte pattern.
const PERIOD: usize = 251;
/// The longest slice [`pattern_slice`] hands out.
const CHUNK: usize = 1 << 16;

/// Byte `i` of generated file number `seed` is
/// `((i + 32 * seed) * 7) % 251`: file 0 is `(i * 7) % 251`, and files of
/// different seeds (below 251) differ at every offset.
pub fn pattern(seed: u64, i: u64) -> u8 {
    ((i + 32 * seed) % PERIOD as u64 * 7 % PERIOD as u64) as u8
}

/// The pattern of file `seed` from byte `offset` on, `len` (at most
/// [`CHUNK`]) bytes: a slice of one precomputed buffer, so writing and
/// checking are memory copies and compares.
fn pattern_slice(seed: u64, offset: u64, len: usize) -> &'static [u8] {
    static CYCLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let cycle = CYCLE.get_or_init(|| {
        (0..(PERIOD + CHUNK) as u64)
            .map(|i| pattern(0, i))
            .collect()
    });
    let start = ((offset + 32 * seed) % PERIOD as u64) as usize;
    &cycle[start..start + len.min(CHUNK)]
}

/// Whether `data`, read at `offset` of file `seed`, holds its pattern.
pub fn is_pattern(seed: u64, offset: u64, data: &[u8]) -> bool {
    data.chunks(CHUNK)
        .zip((offset..).step_by(CHUNK))
        .all(|(got, at)| got == pattern_slice(seed, at, got.len()))
}

/// Writes `size` bytes of the pattern of file `seed` (see [`pattern`]),
/// then syncs, so that writeback does not run while timing.
pub fn write_pattern(path: &Path, size: u64, seed: u64) {
    let mut f = std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(path).unwrap());
    for at in (0..size).step_by(CHUNK) {
        let n = CHUNK.min((size - at) as usize);
        f.write_all(pattern_slice(seed, at, n)).unwrap();
    }
    f.into_inner().unwrap().sync_all().unwrap();
}

/// Writes `size` bytes where byte `i` is `(i * 7) % 251` (file 0 of
/// [`write_pattern`]).
pub fn write_file(path: &Path, size: u64) {
    write_pattern(path, size, 0);
}

/// The machine's load average, for the end of a report (`/proc/loadavg`).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Prints one figure for `benches/report.sh` as the line
/// `summary: KEY VALUE`, VALUE a plain decimal number. Each bench documents
/// its keys and their units; the human tables stay free to change.
pub fn summary(key: &str, value: f64) {
    println!("summary: {key} {value:.4}");
}

/// Wall time of the stock `xrdcp` copying `url` to /dev/null, with pgread
/// (its default, `kXR_pgread`) or plain reads (`XRD_CPUSEPGWRTRD=0`).
/// Panics if it fails.
pub fn stock_xrdcp(url: &str, pgread: bool) -> std::time::Duration {
    let mut cmd = std::process::Command::new("xrdcp");
    cmd.args(["-f", "--nopbar", url, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if pgread {
        cmd.env_remove("XRD_CPUSEPGWRTRD");
    } else {
        cmd.env("XRD_CPUSEPGWRTRD", "0");
    }
    let t = std::time::Instant::now();
    let out = cmd.output().expect("run xrdcp");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "xrdcp {url}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    took
}
