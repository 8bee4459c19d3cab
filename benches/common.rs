//! Helpers shared by the side-by-side benchmarks (included with `#[path]`):
//! the deterministic test file, the load report and the machine-readable
//! figures that `benches/report.sh` collects.

use std::io::Write;
use std::path::Path;

/// Writes `size` bytes where byte `i` is `(i * 7) % 251`, then syncs, so
/// that writeback does not run while timing.
pub fn write_file(path: &Path, size: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let block = 8 << 20;
    let mut buf = vec![0u8; block];
    for start in (0..size).step_by(block) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = ((start + i as u64) * 7 % 251) as u8;
        }
        let n = block.min((size - start) as usize);
        f.write_all(&buf[..n]).unwrap();
    }
    f.sync_all().unwrap();
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
