//! Measures the memory of the cache for one large vector read: a direct
//! [`CacheFs`] driver over a sparse local origin file, reading it with the
//! largest vector read a client may send (1024 elements of 2,097,136 bytes,
//! 2 GiB with their headers) cut into pieces as the server hands them to
//! its backend, then closing the file.
//!
//! ```text
//! cargo run --release --example cache_rss -- [--piece 8] [--ram 1g] [--dir DIR]
//! ```
//!
//! `--piece N` is the elements per `File::readv` call (8: 16 MiB, as the
//! server does; 1024: the whole read in one call). The cache directory
//! (`--dir`, a temporary directory by default) receives 2 GiB of blocks.
//! Prints the process's resident memory (`VmRSS`) and its peak (`VmHWM`,
//! reset before the read) from `/proc/self/status`: before, at the peak,
//! after the read, and after the close.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use xroot::cache::{CacheConfig, CacheFs, LocalOrigin, OriginFs, RemoteOrigin, Store};
use xroot::client::Client;
use xroot::server::{Caller, File, FileSystem, OpenMode};

/// Largest readv element (`maxRVdsz`).
const ELEMENT: usize = 2_097_136;
/// Most readv elements (`maxRvecsz`).
const ELEMENTS: usize = 1024;

/// `cache_rss [--piece N] [--ram SIZE] [--dir DIR]`
#[derive(Debug, Parser)]
#[command(about = "Peak RSS of the cache for one 2 GiB vector read")]
struct Cli {
    /// Elements per `File::readv` call (1024: one call).
    #[arg(long, default_value_t = 8)]
    piece: usize,
    /// The cache's RAM budget in MiB.
    #[arg(long, default_value_t = 1024)]
    ram_mib: u64,
    /// The cache directory (a temporary one by default).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Read `/big.bin` from this XRootD origin (`root://HOST:PORT`, which
    /// must serve a file of 2,147,467,264 bytes there) instead of a local
    /// sparse file.
    #[arg(long)]
    origin: Option<String>,
}

/// A field of `/proc/self/status`, in MiB.
fn status_mib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// Resets `VmHWM` to the current RSS (Linux ≥ 4.0).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn line(what: &str) {
    println!(
        "{what:<28} rss {:>6} MiB   peak {:>6} MiB",
        status_mib("VmRSS"),
        status_mib("VmHWM")
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> io::Result<()> {
    let cli = Cli::parse();
    let origin = tempfile::tempdir()?;
    let size = (ELEMENTS * ELEMENT) as u64;
    std::fs::File::create(origin.path().join("big.bin"))?.set_len(size)?;
    let tmp;
    let dir = match &cli.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let config = CacheConfig {
        ram: cli.ram_mib << 20,
        ..CacheConfig::default()
    };
    match &cli.origin {
        Some(url) => {
            let remote = RemoteOrigin::new(Client::new(), url)
                .map_err(|e| io::Error::other(e.to_string()))?;
            run(&cli, CacheFs::new(remote, Store::open(&dir)?, config), size).await
        }
        None => {
            let local = LocalOrigin::new(origin.path())?;
            run(&cli, CacheFs::new(local, Store::open(&dir)?, config), size).await
        }
    }
}

/// Reads the file through `fs` and prints the figures.
async fn run<O: OriginFs>(cli: &Cli, fs: CacheFs<O>, size: u64) -> io::Result<()> {
    let f = fs
        .open(
            &Caller::local("cache_rss"),
            "/big.bin",
            OpenMode::default(),
            "",
        )
        .await
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    line("open");
    reset_peak();
    let started = Instant::now();
    let extents: Vec<(u64, usize)> = (0..ELEMENTS)
        .map(|i| ((i * ELEMENT) as u64, ELEMENT))
        .collect();
    let mut total = 0u64;
    for piece in extents.chunks(cli.piece.clamp(1, ELEMENTS)) {
        let data = f
            .readv(piece.to_vec())
            .await
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
        total += data.iter().map(|d| d.len() as u64).sum::<u64>();
        // the server sends the answer and drops it
    }
    assert_eq!(total, size);
    let secs = started.elapsed().as_secs_f64();
    line(&format!("read ({} per call)", cli.piece.clamp(1, ELEMENTS)));
    drop(f);
    fs.flush_all().await?;
    // the close's task (sidecar, origin close) has run once flush_all returns
    tokio::task::yield_now().await;
    line("closed");
    println!(
        "read {} MiB in {secs:.1} s; {}",
        total >> 20,
        fs.stats().to_string().lines().next().unwrap_or("")
    );
    Ok(())
}
