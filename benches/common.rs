//! Helpers shared by the side-by-side copy benchmarks (included with
//! `#[path]`): the deterministic test file and the load report.

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
