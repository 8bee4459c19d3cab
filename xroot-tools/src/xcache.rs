//! A caching proxy for an XRootD origin: [`CacheFs`] behind [`Server`], the
//! equivalent of the stock XCache, used by stock clients unmodified.
//!
//! ```text
//! cargo run --release --example xcache -- --origin root://HOST:PORT --cache-dir DIR \
//!     [--port P] [--bind ADDR] [--block-size 4k] [--io-size 1m] [--io-gap 0] [--ram 1g] \
//!     [--prefetch BLOCKS] [--purge-low 0.90] [--purge-high 0.95] [--purge-interval 10]
//!     [--no-purge] [--auth host,unix,sss,ztn,gsi] [--sss-keytab FILE]
//!     [--token-issuer ISSUER=JWKS_FILE_OR_URL]... [--token-audience AUD]... [--token-leeway SECS]
//!     [--gsi-cert FILE --gsi-key FILE --gsi-ca-dir DIR [--gsi-gridmap FILE]]
//!     [--origin-token-file FILE] [--origin-proxy FILE]
//!     [--tls-cert FILE --tls-key FILE [--tls LEVEL] [--tls-ca-dir DIR]]
//!     [--role server --manager HOST:CMSPORT] [--metrics ADDR] [-v]
//! xrdcp root://127.0.0.1:1094//store/file.root /tmp/
//! ```
//!
//! `--role server --manager HOST:CMSPORT` joins a stock cluster as a data
//! server: the cache logs into the manager's `cmsd` exporting `r /` and
//! answers its `state` queries with `have` for every file its origin has,
//! so the manager spreads clients over all such caches.
//!
//! Sizes take a `k`, `m` or `g` suffix (powers of 1024). The first line on
//! stdout is `xcache listening on ADDR` once the port is bound; the log
//! (stderr) says before it the address, the TLS level and the
//! authentication protocols its clients meet ([`crate::summary`]; a cache
//! is read-only). Ctrl-C or
//! SIGTERM stops it gracefully: requests in flight are answered, every
//! open file's sidecar is written, and the cache's statistics are printed
//! on stdout. `xrdfs HOST:PORT query stats a` answers the same figures
//! while it runs.
//!
//! `-v` logs each request answered through `tracing` (target
//! `xroot::request`: client, user, request, path, status, duration, bytes
//! in and out). `--metrics ADDR` serves the Prometheus text format at
//! `http://ADDR/metrics`, the server's figures and the cache's (bytes asked
//! and fetched, origin requests per client request, hit ratio, disk use;
//! [`crate::metrics`] lists them); the second line on stdout is
//! then `xcache metrics on http://ADDR/metrics`.
//!
//! `--tls-cert`/`--tls-key` offer TLS to clients (`--tls` requires it:
//! capable, login, session, data or all); SIGHUP reloads the certificate.
//!
//! `--auth` and its flags are those of `serve`: how the cache's own clients
//! authenticate. Towards its origin the cache is a client:
//! `--origin-token-file` is the token it sends to a `ztn` origin,
//! `--origin-proxy` the X509 proxy it logs in to a `gsi` origin with (read
//! again at each login, so a proxy renewed in place is used from the next
//! connection on; the origin's certificate is checked against
//! `--gsi-ca-dir` when given, else `X509_CERT_DIR`, else
//! /etc/grid-security/certificates). Without them, the cache's client finds
//! credentials as any client does (`BEARER_TOKEN`..., `X509_USER_PROXY`...).
//!
//! Purge is on by default, as in the stock XCache (`pfc.diskusage 0.90
//! 0.95`): every `--purge-interval` seconds (and at once when the disk
//! fills up) the cache checks the file system holding `--cache-dir` and,
//! when what is in use on it (every file counted) is above `--purge-high`,
//! removes least recently used closed files down to `--purge-low`. A
//! watermark is a fraction of the disk (`0.9`, `90%`) or a size (`500g`;
//! a plain integer is bytes). `--no-purge` keeps every file: a cache whose
//! disk fills up then stops storing (it keeps serving, from the origin)
//! until something else makes room.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use xroot_cache::origin::RemoteOrigin;
use xroot_cache::plan::Geometry;
use xroot_cache::purge::{disk_space, Level, PurgeConfig};
use xroot_cache::store::Store;
use xroot_cache::{CacheConfig, CacheFs};
use xroot_cache::{CacheStatsSnapshot, FileAccess};
use xroot_client::{Client, Config as ClientConfig};
use xroot_proto::monitor::gstream::{provider, CacheFileClose};
use xroot_proto::monitor::summary::Element;
use xroot_sec::gsi::Credentials;
use xroot_sec::ztn::{read_token_file, BearerToken, DEFAULT_MAX_TOKEN_SIZE};
use xroot_server::observe::MonitorObserver;
use xroot_server::{Config, RequestObserver, Server};

use crate::summary::{Access, Summary};
use crate::{auth, cluster, config_file, daemon, metrics, monitor, tls};

/// Bytes of answers one client connection may hold in the cache's server
/// (`Config::link_budget`, 16 MiB for `serve`): 64 MiB, so that the stock
/// `xrdcp`'s four 8 MiB pgreads, asked of the cache in pieces of 2 MiB (and
/// their crc32c), all reach it, and its origin, at once, as they would go
/// direct. With the 16 MiB of `serve`, seven of the sixteen pieces did: 14
/// MiB in flight to an origin 50 ms away against direct's 32 MiB
/// (`CACHE_COPY_TIMELINE`, benches/cache_copy.rs).
const LINK_BUDGET: usize = 64 << 20;

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
    /// Read-ahead, as the stock XCache's `pfc.prefetch`: the most blocks
    /// of one file fetched ahead of its sequential readers at a time (0,
    /// the default: off). A reader that stops or jumps leaves at most this
    /// many being fetched. A cold sequential copy gains with a window
    /// larger than what its client keeps in flight (the stock xrdcp: 32
    /// MiB): 32768 blocks of 4k took it from 1.6x to 1.4x direct, origin
    /// 50 ms away (benches/cache_copy.rs).
    #[arg(long, default_value_t = 0)]
    pub prefetch: u64,
    /// Purge down to this disk usage (a fraction of the disk holding the
    /// cache, `0.9` or `90%`, or a size)...
    #[arg(long, default_value = "0.90", value_parser = level)]
    pub purge_low: Level,
    /// ...once usage (every file on that disk counted) is above this.
    #[arg(long, default_value = "0.95", value_parser = level)]
    pub purge_high: Level,
    /// Seconds between two disk checks.
    #[arg(long, default_value_t = 10)]
    pub purge_interval: u64,
    /// Never remove cached files (a full disk then stops storing until
    /// something else makes room).
    #[arg(long)]
    pub no_purge: bool,
    /// Seconds after the origin last confirmed a file (at an open that
    /// asked it) during which the file is opened from the cache without
    /// asking the origin again, which is asked only for blocks not cached
    /// (600 by default, `CacheConfig::PROXY_TRUST`; 0: every open asks).
    /// Within it a file changed at the origin is served as it was cached;
    /// the first open after it notices the change and caches the new file.
    #[arg(long, default_value_t = CacheConfig::PROXY_TRUST.as_secs(), value_name = "SECONDS")]
    pub trust_window: u64,
    #[command(flatten)]
    pub tls: tls::TlsArgs,
    /// Log each request answered (client, request, path, status,
    /// duration, bytes) and debug events.
    #[arg(short, long)]
    pub verbose: bool,
    /// Serve metrics in the Prometheus text format at
    /// `http://ADDR/metrics` (port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Read flags from a TOML file too: its keys are the long flags'
    /// names (`port = 1094`, `read-only = true`, `dir = "/data"`); a flag
    /// given on the command line wins.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A bearer token file (mode 0600) the cache presents to its origin
    /// when the origin asks for `ztn` (over `roots://`). Without it the
    /// cache's client discovers one as any client does (`BEARER_TOKEN`,
    /// `BEARER_TOKEN_FILE`, `$XDG_RUNTIME_DIR/bt_u<euid>`, `/tmp/bt_u<euid>`).
    #[arg(long, value_name = "FILE")]
    pub origin_token_file: Option<PathBuf>,
    /// An X509 proxy file (as `xrdgsiproxy init` or `voms-proxy-init`
    /// write it) the cache logs in with to an origin that asks for `gsi`,
    /// read again at each login. Without it the cache's client finds one
    /// as any client does (`X509_USER_PROXY`, `/tmp/x509up_u<uid>`,
    /// `X509_USER_CERT`/`X509_USER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub origin_proxy: Option<PathBuf>,
    #[command(flatten)]
    pub auth: auth::AuthArgs,
    /// `--role server --manager HOST:CMSPORT`: join a stock cluster as a
    /// data server that can serve any file of its origin.
    #[command(flatten)]
    pub cluster: cluster::ClusterArgs,
    #[command(flatten)]
    pub monitoring: monitor::MonitorArgs,
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

/// A disk-usage watermark: a fraction (`0.9`, `90%`) or a size.
fn level(s: &str) -> Result<Level, String> {
    s.parse::<Level>().map_err(|e| e.to_string())
}

/// The cache `cli` asks for, bound but not serving yet: as
/// [`start_with_metrics`], without the metrics address.
///
/// Errors: those of [`start_with_metrics`].
pub async fn start(cli: &Cli) -> io::Result<Server<CacheFs<RemoteOrigin>>> {
    start_with_metrics(cli).await.map(|(server, _)| server)
}

/// The cache `cli` asks for, bound but not serving yet, and the address
/// its metrics are served on (`--metrics`).
///
/// Errors: an origin that is not a `root://` URL, a geometry the cache
/// refuses, a cache directory that cannot be created, purge watermarks
/// whose low one is not below the high one or that exceed the disk (as
/// the stock XCache refuses them), an `--origin-token-file` that cannot be
/// used (missing, empty, open to group or others), an `--origin-proxy`
/// that cannot be read or is not valid now, or an address (of the server
/// or the metrics) that cannot be bound.
pub async fn start_with_metrics(
    cli: &Cli,
) -> io::Result<(Server<CacheFs<RemoteOrigin>>, Option<SocketAddr>)> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
    let geometry = Geometry::new(cli.block_size, cli.io_size, cli.io_gap)
        .map_err(|e| invalid(e.to_string()))?;
    let store = Store::open(&cli.cache_dir)
        .map_err(|e| daemon::failed(format!("cannot cache in {}", cli.cache_dir.display()), e))?;
    let total = disk_space(store.root())?.total;
    let (low, high) = (cli.purge_low.bytes(total), cli.purge_high.bytes(total));
    if low >= high || high > total {
        return Err(invalid(format!(
            "--purge-low {} ({low} bytes) must be below --purge-high {} ({high} bytes), \
             at most the disk's {total} bytes",
            cli.purge_low, cli.purge_high
        )));
    }
    let config = CacheConfig {
        geometry,
        ram: cli.ram,
        prefetch_blocks: cli.prefetch,
        purge: PurgeConfig {
            enabled: !cli.no_purge,
            low: cli.purge_low,
            high: cli.purge_high,
            interval: Duration::from_secs(cli.purge_interval.max(1)),
        },
        trust_window: Duration::from_secs(cli.trust_window),
        ..CacheConfig::default()
    };
    let mut client = ClientConfig::default();
    if let Some(file) = &cli.origin_token_file {
        let token = read_token_file(file, DEFAULT_MAX_TOKEN_SIZE)
            .map_err(|e| invalid(format!("--origin-token-file: {e}")))?
            .ok_or_else(|| {
                invalid(format!(
                    "--origin-token-file: {} does not exist or is empty",
                    file.display()
                ))
            })?;
        client.bearer_token = Some(BearerToken::new(token));
    }
    if let Some(file) = &cli.origin_proxy {
        // read now to refuse a file that cannot serve; the client reads it
        // again at each login
        let proxy =
            Credentials::load_proxy(file).map_err(|e| invalid(format!("--origin-proxy: {e}")))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        proxy
            .check_time(now)
            .map_err(|e| invalid(format!("--origin-proxy: {e}")))?;
        client.x509_proxy_file = Some(file.clone());
    }
    // the origin's gsi certificate: the grid CA directory the cache's own
    // clients are checked against, else X509_CERT_DIR's
    client.x509_cert_dir = cli.auth.gsi_ca_dir.clone();
    let origin = RemoteOrigin::new(Client::with_config(client), &cli.origin)
        .map_err(|e| invalid(format!("--origin: {e}")))?;
    let fs = CacheFs::new(origin, store, config);
    if cli.cluster.role == Some(cluster::Role::Manager) {
        return Err(invalid("xcache takes --role server only".to_string()));
    }
    let figures = cli.metrics.map(|_| {
        let fs = fs.clone();
        let figures: metrics::CacheFigures = Box::new(move || fs.stats());
        metrics::Metrics::new(Some((figures, cli.cache_dir.clone())))
    });
    let detailed = cli
        .monitoring
        .detailed(cli.port, !cli.auth.auth.is_empty())?;
    if let Some(d) = &detailed {
        // the stock XCache's g-stream (`pfc`): a record per file closed
        let g = d.gstream(provider::CACHE);
        let remote = origin_host(&cli.origin);
        let block_size = cli.block_size;
        fs.on_file_close(move |path, access| {
            let record = file_close(path, access, &remote, block_size);
            g.insert(record.encode().as_bytes());
        });
    }
    let config = Config {
        tls: cli.tls.config()?,
        // a cache is read-only: it exports `/` for reading, and answers a
        // manager's `state` for every file its origin has
        cluster: cli.cluster.config(&["r /"]),
        observer: metrics::Observer::new(cli.verbose, figures.clone())
            .map(|o| o as Arc<dyn RequestObserver>),
        monitor: detailed.clone().map(|d| d as Arc<dyn MonitorObserver>),
        // what the server holds of answers is the cache's data, each piece
        // holding its share of --ram until sent: --ram bounds it, not a
        // second, smaller budget
        link_budget: LINK_BUDGET,
        server_budget: usize::try_from(cli.ram)
            .unwrap_or(usize::MAX)
            .max(LINK_BUDGET),
        ..cli.auth.config()?
    };
    let addr = SocketAddr::new(cli.bind, cli.port);
    // a cache refuses every change (CacheFs is read-only)
    let mut summary = Summary::new(addr, &config, Access::ReadOnly);
    let server = Server::bind(addr, fs, config)
        .await
        .map_err(|e| daemon::failed(format!("cannot listen on {addr}"), e))?;
    // the monitoring destinations first: a start-up they stop is not
    // announced as listening
    let (fs, dir, ram) = (server.fs().clone(), cli.cache_dir.clone(), cli.ram);
    monitor::run_beside(
        &cli.monitoring,
        server.handle(),
        detailed,
        figures.as_ref(),
        move || vec![cache_section(&fs.stats(), ram, &dir)],
    )?;
    summary.addr = server.local_addr();
    summary.log("xcache");
    let metrics_addr = match (cli.metrics, figures) {
        (Some(at), Some(m)) => Some(
            metrics::serve(at, m, server.handle())
                .await
                .map_err(|e| daemon::failed(format!("cannot serve metrics on {at}"), e))?,
        ),
        _ => None,
    };
    tracing::info!(
        target: "xcache",
        origin = %cli.origin,
        cache = %cli.cache_dir.display(),
        addr = %server.local_addr(),
        ?geometry,
        purge = !cli.no_purge,
        purge_low = %cli.purge_low,
        purge_high = %cli.purge_high,
        metrics = ?metrics_addr,
        "caching"
    );
    Ok((server, metrics_addr))
}

/// `HOST:PORT` of an origin URL (`root://user@HOST:PORT//path`), as the
/// stock XCache names its remotes.
fn origin_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split('/').next().unwrap_or(rest);
    hostport
        .rsplit_once('@')
        .map_or(hostport, |(_, h)| h)
        .to_string()
}

/// The g-stream record of a file whose last handle closed now
/// ([`CacheFileClose`], the stock XCache's `file_close`). `access_cnt`
/// is every access the file's sidecar recorded, this one included, as the
/// stock counts those of its `.cinfo` (1, 2, 3 for three accesses in a
/// row).
fn file_close(path: &str, a: &FileAccess, remote: &str, block_size: u64) -> CacheFileClose {
    let unix = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    CacheFileClose {
        lfn: path.to_string(),
        size: a.size,
        blk_size: block_size,
        n_blks: a.blocks,
        n_blks_done: a.blocks_cached,
        access_cnt: a.accesses,
        attach_t: unix(a.attached),
        detach_t: unix(std::time::SystemTime::now()),
        // the stock names the origins this access read from: none when
        // every byte came from disk
        remotes: if a.missed + a.bypassed > 0 {
            vec![remote.to_string()]
        } else {
            Vec::new()
        },
        b_hit: a.hit,
        b_miss: a.missed,
        b_bypass: a.bypassed,
        n_cks_errs: 0,
    }
}

/// The summary's cache section, in the stock XCache's shape
/// (`<stats id="cache" type="pfc">`, `XrdPosixConfig::Stats` of 5.5.3,
/// figures as `XrdOucCacheStats.hh` defines them): `rd/in` bytes read
/// into the cache (fetched and stored), `rd/out` bytes delivered from it
/// (from disk), `pass` bytes read and not cached, `store` the cache
/// directory's file system, `mem` the RAM budget and what reads hold of
/// it. Figures this cache does not keep (prereads, hit and miss counts,
/// files, deferred opens) are 0.
fn cache_section(s: &CacheStatsSnapshot, ram: u64, dir: &std::path::Path) -> Element<'static> {
    let zeros = |name: &'static str, keys: &[&'static str]| {
        keys.iter().fold(Element::new(name), |e, k| e.leaf(k, 0))
    };
    let disk = disk_space(dir).ok();
    let mut pass = Element::new("pass").leaf("cnt", 0);
    pass.text = s.bytes_not_stored.to_string().into();
    Element::new("stats")
        .attr("id", "cache")
        .attr("type", "pfc")
        .child(zeros("prerd", &["in", "hits", "miss"]))
        .child(
            Element::new("rd")
                .leaf("in", s.bytes_fetched.saturating_sub(s.bytes_not_stored))
                .leaf("out", s.bytes_from_disk)
                .leaf("hits", 0)
                .leaf("miss", 0),
        )
        .child(pass)
        .child(zeros("wr", &["out", "updt"]))
        .leaf("saved", 0)
        .leaf("purge", 0)
        .child(zeros(
            "files",
            &["opened", "closed", "new", "del", "now", "full"],
        ))
        .child(
            Element::new("store")
                .leaf("size", disk.as_ref().map_or(0, |d| d.total))
                .leaf("used", disk.as_ref().map_or(0, |d| d.used))
                .leaf("min", 0)
                .leaf("max", 0),
        )
        .child(
            Element::new("mem")
                .leaf("size", ram)
                .leaf("used", s.ram_held)
                .leaf("wq", 0),
        )
        .child(zeros("opcl", &["odefer", "defero", "cdefer", "clost"]))
}

/// The `xcache` example's `main`: reads the command line (and
/// `--config`), caches and serves until a signal, prints the statistics,
/// exits 0, or 1 after printing `xcache: ERROR`.
#[tokio::main]
pub async fn main() -> std::process::ExitCode {
    // freed request and answer buffers go back to the kernel at once
    xroot_server::allocator::unmap_large_buffers();
    let args = match config_file::with_config_file(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => return daemon::exit("xcache", Err(e)),
    };
    let cli = Cli::parse_from(args);
    daemon::init_logging(cli.verbose);
    daemon::exit("xcache", serve(&cli).await)
}

/// Caches and serves as `cli` asks until a signal stops it.
async fn serve(cli: &Cli) -> io::Result<()> {
    let (server, metrics_addr) = start_with_metrics(cli).await?;
    let fs = server.fs().clone();
    println!("xcache listening on {}", server.local_addr());
    if let Some(at) = metrics_addr {
        println!("xcache metrics on http://{at}/metrics");
    }
    io::stdout().flush()?;
    daemon::shutdown_on_signal("xcache", server.handle())?;
    tls::reload_on_sighup("xcache", server.handle())?;
    server.serve().await?;
    fs.flush_all().await?;
    println!("{}", fs.stats());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_powers_of_1024() {
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("4k"), Ok(4 << 10));
        assert_eq!(size(" 1M "), Ok(1 << 20));
        assert_eq!(size("2g"), Ok(2 << 30));
        assert_eq!(size("0"), Ok(0));
        for bad in ["", "k", "1t", "1.5m", "-1", "99999999999g"] {
            assert!(size(bad).unwrap_err().contains("is not a size"), "{bad:?}");
        }
    }

    #[test]
    fn watermarks_are_fractions_or_sizes() {
        assert!(matches!(level("0.9"), Ok(Level::Fraction(f)) if f == 0.9));
        assert!(matches!(level("95%"), Ok(Level::Fraction(f)) if (f - 0.95).abs() < 1e-12));
        assert!(level("500g").is_ok());
        assert!(level("1.5").is_err());
        assert!(level("lots").is_err());
    }

    #[test]
    fn flags_and_their_defaults() {
        let cli = Cli::try_parse_from(["xcache", "--origin", "root://o:1094", "--cache-dir", "/c"])
            .unwrap();
        assert_eq!(cli.port, 1094);
        assert_eq!(cli.bind.to_string(), "127.0.0.1");
        assert_eq!(
            (cli.block_size, cli.io_size, cli.io_gap),
            (4096, 1 << 20, 0)
        );
        assert_eq!((cli.ram, cli.prefetch), (1 << 30, 0));
        assert_eq!(
            (cli.purge_interval, cli.no_purge, cli.trust_window),
            (10, false, 600)
        );
        assert_eq!(
            cli.purge_low.to_string(),
            level("0.90").unwrap().to_string()
        );
        assert!(cli.cluster.role.is_none() && cli.metrics.is_none());
        assert_eq!(cli.auth.token_leeway, None);
        let cli = Cli::try_parse_from([
            "xcache",
            "--origin",
            "root://o",
            "--cache-dir",
            "/c",
            "--token-leeway",
            "7",
        ])
        .unwrap();
        assert_eq!(cli.auth.token_config().leeway, Duration::from_secs(7));
        assert!(cli.origin_proxy.is_none() && cli.origin_token_file.is_none());
        let cli = Cli::try_parse_from([
            "xcache",
            "--origin",
            "root://o:1094",
            "--cache-dir",
            "/c",
            "--origin-proxy",
            "/tmp/x509up_u1000",
            "--auth",
            "gsi",
            "--gsi-ca-dir",
            "/cas",
        ])
        .unwrap();
        assert_eq!(
            cli.origin_proxy.as_deref(),
            Some(std::path::Path::new("/tmp/x509up_u1000"))
        );
        assert_eq!(cli.auth.auth, ["gsi"]);
        // the origin and the cache directory are required
        assert!(Cli::try_parse_from(["xcache", "--cache-dir", "/c"]).is_err());
        assert!(Cli::try_parse_from(["xcache", "--origin", "root://o"]).is_err());
        // --role needs --manager and the other way round
        let role = [
            "xcache",
            "--origin",
            "root://o",
            "--cache-dir",
            "/c",
            "--role",
            "server",
        ];
        assert!(Cli::try_parse_from(role).is_err());
        let cli = Cli::try_parse_from(role.iter().chain(&["--manager", "m:1213"])).unwrap();
        assert_eq!(cli.cluster.managers, ["m:1213"]);
    }
}
