//! A caching proxy for an XRootD origin: [`CacheFs`] behind [`Server`], the
//! equivalent of the stock XCache, used by stock clients unmodified.
//!
//! ```text
//! cargo run --release --example xcache -- --origin root://HOST:PORT --cache-dir DIR \
//!     [--port P] [--bind ADDR] [--block-size 4k] [--io-size 1m] [--io-gap 0] [--ram 1g] \
//!     [--prefetch BLOCKS] [--purge-low SIZE --purge-high SIZE] [-v]
//! xrdcp root://127.0.0.1:1094//store/file.root /tmp/
//! ```
//!
//! Sizes take a `k`, `m` or `g` suffix (powers of 1024). The first line on
//! stdout is `xcache listening on ADDR` once the port is bound. Ctrl-C or
//! SIGTERM stops it gracefully: requests in flight are answered, every
//! open file's sidecar is written, and the cache's statistics are printed
//! on stdout. `xrdfs HOST:PORT query stats a` answers the same figures
//! while it runs. With both purge watermarks the cache checks its disk
//! usage every 10 s and removes least recently used files above the high
//! one down to the low one.

#[path = "common/daemon.rs"]
mod daemon;

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use xroot::cache::origin::RemoteOrigin;
use xroot::cache::plan::Geometry;
use xroot::cache::purge::Watermarks;
use xroot::cache::store::Store;
use xroot::cache::{CacheConfig, CacheFs};
use xroot::client::Client;
use xroot::server::{Config, Server};

/// `xcache --origin URL --cache-dir DIR [options]`
#[derive(Debug, Parser)]
#[command(about = "A caching proxy (XCache equivalent) in front of an XRootD origin")]
pub struct Cli {
    /// The origin server, `root://HOST:PORT`.
    #[arg(long)]
    pub origin: String,
    /// Where cached blocks are kept (created if missing).
    #[arg(long)]
    pub cache_dir: PathBuf,
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 1094)]
    pub port: u16,
    /// Address to listen on (IPv4 or IPv6).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Cache block size: the unit of cache state (a power of two, at least 4k).
    #[arg(long, default_value = "4k", value_parser = size)]
    pub block_size: u64,
    /// The largest block run fetched as one element of an origin request.
    #[arg(long, default_value = "1m", value_parser = size)]
    pub io_size: u64,
    /// Runs closer than this are fetched as one, gap included (0, the
    /// default, merges none: merging saves readv elements, not requests,
    /// and costs bytes).
    #[arg(long, default_value = "0", value_parser = size)]
    pub io_gap: u64,
    /// Bytes fetched from the origin and not yet on disk, at most.
    #[arg(long, default_value = "1g", value_parser = size)]
    pub ram: u64,
    /// Blocks fetched ahead of each read in the background (0: off).
    #[arg(long, default_value_t = 0)]
    pub prefetch: u64,
    /// Purge down to this many bytes of disk usage...
    #[arg(long, value_parser = size, requires = "purge_high")]
    pub purge_low: Option<u64>,
    /// ...once usage is above this many bytes.
    #[arg(long, value_parser = size, requires = "purge_low")]
    pub purge_high: Option<u64>,
    /// Log debug events too.
    #[arg(short, long)]
    pub verbose: bool,
}

/// A size in bytes with an optional `k`, `m`, `g` suffix (powers of 1024).
fn size(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let (digits, unit) = match lower.char_indices().last() {
        Some((i, 'k')) => (&lower[..i], 1 << 10),
        Some((i, 'm')) => (&lower[..i], 1 << 20),
        Some((i, 'g')) => (&lower[..i], 1 << 30),
        _ => (&lower[..], 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{s:?} is not a size (e.g. 4096, 4k, 1m, 1g)"))
}

/// The cache `cli` asks for, bound but not serving yet.
///
/// Errors: an origin that is not a `root://` URL, a geometry the cache
/// refuses, a cache directory that cannot be created, or an address that
/// cannot be bound.
pub async fn start(cli: &Cli) -> io::Result<Server<CacheFs<RemoteOrigin>>> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
    let geometry = Geometry::new(cli.block_size, cli.io_size, cli.io_gap)
        .map_err(|e| invalid(e.to_string()))?;
    let config = CacheConfig {
        geometry,
        ram: cli.ram,
        prefetch_blocks: cli.prefetch,
        ..CacheConfig::default()
    };
    let store = Store::open(&cli.cache_dir)?;
    let origin = RemoteOrigin::new(Client::new(), &cli.origin)
        .map_err(|e| invalid(format!("--origin: {e}")))?;
    let fs = CacheFs::new(origin, store, config);
    let server = Server::bind((cli.bind, cli.port), fs, Config::default()).await?;
    tracing::info!(
        origin = %cli.origin,
        cache = %cli.cache_dir.display(),
        addr = %server.local_addr(),
        ?geometry,
        "caching"
    );
    Ok(server)
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let cli = Cli::parse();
    daemon::init_logging(cli.verbose);
    let server = start(&cli).await?;
    let fs = server.fs().clone();
    println!("xcache listening on {}", server.local_addr());
    io::stdout().flush()?;
    daemon::shutdown_on_signal(server.handle())?;
    if let (Some(low), Some(high)) = (cli.purge_low, cli.purge_high) {
        let fs = fs.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(10));
            loop {
                tick.tick().await;
                match fs.purge(Watermarks { low, high }).await {
                    Ok(r) if !r.removed.is_empty() => tracing::info!(
                        before = r.before,
                        after = r.after,
                        files = r.removed.len(),
                        "purged"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("purge failed: {e}"),
                }
            }
        });
    }
    server.serve().await?;
    fs.flush_all().await?;
    println!("{}", fs.stats());
    Ok(())
}
