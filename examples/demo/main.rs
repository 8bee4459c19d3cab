//! The main job, end to end: an analysis reading NanoAOD-like files across a
//! WAN, directly and then through our cache, cold and warm.
//!
//! ```text
//! cargo run --release --example demo
//! cargo run --release --example demo -- [--files N] [--readers N] [--rtt-ms MS] [--cache-dir DIR]
//! cargo run --release --example demo -- --origin root://HOST:PORT[//dir] [--files N|a.root,b.root]
//! ```
//!
//! The reads are those of `benches/trace/nanoaod.trace`: the 50 vector
//! reads (101 elements, ~635 kB each) uproot issued reading 101 of the 1001
//! branches of a 117.6 MB NanoAOD-like ROOT file (benches/trace/README.md).
//! The access pattern is recorded; the bytes are not ROOT data.
//!
//! With no arguments it writes 4 files of the trace's file size into a
//! temporary directory (byte `i` of file `k` is `((i + 32k) * 7) % 251`, so
//! every byte read is checked), serves them with our server
//! ([`Server`] + [`LocalFs`]) behind a relay that adds 25 ms each way (a
//! 50 ms round trip; xroot-testkit/src/delay_proxy.rs, which also counts what
//! the origin is asked for), and reads each file's trace with our client:
//! one [`Client`], one session, 8 readers taking the vector reads of all
//! files from a shared queue and sending them with [`File::readv`]. Three
//! runs:
//! - direct: from the origin across the WAN;
//! - cache cold: through our cache ([`CacheFs`] + [`RemoteOrigin`] behind
//!   [`Server`], in this process on a runtime of its own, 4 kB blocks),
//!   starting empty;
//! - cache warm: through the cache again, restarted over the same directory.
//!
//! Each run gets a new client and new servers (the origin and relay too), so
//! every counter covers that run. Before the timed replay the client opens
//! the files and reads one byte of each in a block the trace never touches
//! (so the server's readv limits are asked outside the timing). The table:
//! wall time and speed-up; requests in flight (time-weighted mean over the
//! replay, and peak) at the client ([`ChannelStats`]), at the origin server
//! ([`ServerStats`]) and from the cache to its origin ([`CacheStats`]);
//! bytes asked by the client and fetched from the origin; origin read
//! requests, also per client vector read.
//!
//! The origin server and the cache count their requests into the metrics
//! `serve --metrics` and `xcache --metrics` serve (`xroot_tools::metrics`),
//! on an endpoint per role (`--metrics ADDR` to scrape them too). Before and
//! after each replay the demo scrapes them over HTTP; the table shows what
//! they counted beside its own figures, and the demo fails when the two
//! disagree (`scrape.rs` says what agreeing means: equal).
//!
//! With `--origin` it reads files of a real server (no local server, no
//! relay: the WAN is whatever lies between): the files named by `--files`
//! (relative to the URL's directory), or the first 4 (or `--files N`) files
//! of the directory by name. The trace's offsets are scaled to each file's
//! size and its lengths clipped at the end of the file, so the access
//! pattern is the trace's shape, not an analysis of those files. Bytes are
//! checked against the direct run (an MD5 per vector read), and the origin
//! side is seen from the cache only ([`CacheStats`]).
//!
//! Here: the two modes, the servers and the cache; `replay.rs`: one run
//! and its counters; `scrape.rs`: the `/metrics` endpoints, their scrapes
//! and the check; `report.rs`: the table and the conclusion.
//!
//! [`CacheStats`]: xroot::cache::CacheStats
//! [`File::readv`]: xroot::client::File::readv
//! [`ChannelStats`]: xroot::client::ChannelStats
//! [`ServerStats`]: xroot::server::ServerStats

mod replay;
mod report;
mod scrape;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use replay::{compare, replay, Figures, Probe, Workload};
use report::{item, mb, print_conclusion, print_table, NB};
use scrape::Endpoint;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use xroot::cache::store::Store;
use xroot::cache::{CacheConfig, CacheFs, RemoteOrigin};
use xroot::client::{Client, Url};
use xroot::server::{Config, LocalFs, Server, ServerHandle};
use xroot_testkit::delay_proxy::DelayProxy;
use xroot_testkit::trace::Trace;
use xroot_testkit::{bench, trace};
use xroot_tools::metrics;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// Files read when `--files` does not say.
const DEFAULT_FILES: usize = 4;

/// `demo [--origin URL] [--files N|NAMES] [--readers N] [--rtt-ms MS] [--cache-dir DIR]`
#[derive(Debug, Parser)]
#[command(about = "An analysis's reads across a WAN: direct, then through our cache cold and warm")]
struct Cli {
    /// Read from this server instead of generated files behind an emulated
    /// WAN: `root://HOST:PORT[//dir]`.
    #[arg(long)]
    origin: Option<String>,
    /// How many files to generate (default 4); with --origin, how many
    /// files of its directory to read (the first by name, default 4) or
    /// their names, comma separated, relative to the directory.
    #[arg(long)]
    files: Option<String>,
    /// Concurrent readers on the client's one session.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    readers: u16,
    /// Round trip of the emulated WAN in milliseconds [default: 50].
    #[arg(long, conflicts_with = "origin")]
    rtt_ms: Option<u64>,
    /// The cache's directory, empty or absent [default: a temporary one].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Serve the origin server's metrics (without --origin) at
    /// `http://ADDR/metrics` and the cache's on the next port (port 0:
    /// free ones for both), as `serve --metrics` and `xcache --metrics`
    /// do; each run's new servers count from zero [default: free ports
    /// on 127.0.0.1, scraped by the demo only].
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    let client_rt = runtime()?;
    let cache_rt = runtime()?;
    let trace = trace::nanoaod();
    let readers = usize::from(cli.readers);
    let temp_cache;
    let cache_dir = match &cli.cache_dir {
        Some(dir) => {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
                return Err(format!("--cache-dir {} is not empty", dir.display()).into());
            }
            dir.as_path()
        }
        None => {
            temp_cache = tempfile::tempdir()?;
            temp_cache.path()
        }
    };
    let origin_metrics = cli.metrics.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0)));
    let cache_metrics = match origin_metrics.port() {
        0 => origin_metrics,
        port => SocketAddr::new(origin_metrics.ip(), port.wrapping_add(1)),
    };
    let (source, work) = match &cli.origin {
        None => local(cli, &trace, origin_metrics)?,
        Some(url) => remote(&client_rt, url, cli.files.as_deref(), &trace)?,
    };
    let cache_metrics = (cache_rt.block_on(Endpoint::bind(cache_metrics)))
        .map_err(|e| format!("cannot serve metrics on {cache_metrics}: {e}"))?;
    let work = Arc::new(work);
    item(
        "reads",
        &format!(
            "the recorded vector reads of uproot reading 101 of the 1001 branches of a \
             NanoAOD-like file, for each file: {} in all, {:.0} elements and {:.0}{NB}kB each, \
             {:.1}{NB}MB asked",
            work.jobs.len(),
            work.elements() as f64 / work.jobs.len() as f64,
            work.asked() as f64 / work.jobs.len() as f64 / 1e3,
            mb(work.asked())
        ),
    );
    item(
        "client",
        &format!("our client: one session, {readers} readers taking the vector reads from a queue"),
    );
    item(
        "cache",
        &format!(
            "our cache (4{NB}kB blocks) in {}: empty for the cold run, restarted over the same \
             directory for the warm run",
            cache_dir.display()
        ),
    );
    if cli.metrics.is_some() {
        let origin = match source.metrics() {
            Some(at) => format!("the origin server's at http://{at}/metrics, "),
            None => String::new(),
        };
        item(
            "metrics",
            &format!(
                "{origin}the cache's at http://{}/metrics, the servers of the run under way",
                cache_metrics.addr
            ),
        );
    }
    println!();

    let mut runs: Vec<Figures> = Vec::new();
    let mut direct_digests = None;
    for (name, cached) in [
        ("direct", false),
        ("cache cold", true),
        ("cache warm", true),
    ] {
        let wan = source.wan()?;
        let origin = source.origin_url(wan.as_ref());
        let cache = match cached {
            true => Some(Cache::start(
                &cache_rt,
                &origin.to_string(),
                cache_dir,
                &cache_metrics,
            )?),
            false => None,
        };
        let target = match &cache {
            Some(c) => Url::parse(&format!("root://{}/", c.handle.local_addr()))?,
            None => origin,
        };
        let probe = Probe {
            wan: wan.as_ref(),
            cache: cache.as_ref(),
            origin_metrics: source.metrics(),
            cache_metrics: cache.as_ref().map(|_| cache_metrics.addr),
        };
        let (figures, digests) =
            client_rt.block_on(replay(name, &target, &work, readers, &probe))?;
        match &direct_digests {
            None => direct_digests = Some(digests),
            Some(direct) => compare(name, direct, &digests, &work)?,
        }
        if let Some(cache) = cache {
            cache.stop(&cache_rt)?;
        }
        println!("  {name:<11} {:>6.2} s", figures.wall);
        runs.push(figures);
    }
    print_table(&runs, source.is_local());
    let wrong: Vec<String> = runs.iter().flat_map(scrape::disagreements).collect();
    if !wrong.is_empty() {
        return Err(format!(
            "/metrics disagrees with the table:\n  {}",
            wrong.join("\n  ")
        )
        .into());
    }
    println!("/metrics agree with the table: the same bytes and requests, exactly.");
    print_conclusion(&runs, readers);
    Ok(())
}

/// A tokio runtime with two worker threads (the machine has two cores).
fn runtime() -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}
/// Where the files come from.
enum Source {
    /// Generated files in `dir`, served by our server behind the relay
    /// (`one_way` each way), both on `rt` and started anew for each run.
    Local {
        dir: tempfile::TempDir,
        rt: Runtime,
        one_way: Duration,
        /// The origin server's `/metrics`.
        metrics: Endpoint,
    },
    /// A real server and directory.
    Remote(Url),
}

/// Our origin server and the relay in front of it, for one run.
struct Wan {
    server: ServerHandle,
    /// When the server's counters started.
    started: Instant,
    relay: DelayProxy,
}

impl Drop for Wan {
    fn drop(&mut self) {
        self.server.shutdown();
    }
}

impl Source {
    fn is_local(&self) -> bool {
        matches!(self, Source::Local { .. })
    }

    /// The address of our origin server's `/metrics` (local mode).
    fn metrics(&self) -> Option<SocketAddr> {
        match self {
            Source::Local { metrics, .. } => Some(metrics.addr),
            Source::Remote(_) => None,
        }
    }

    /// A new origin server and relay (local mode).
    fn wan(&self) -> Result<Option<Wan>> {
        let Source::Local {
            dir,
            rt,
            one_way,
            metrics,
        } = self
        else {
            return Ok(None);
        };
        rt.block_on(async {
            let counted = metrics::Metrics::new(None);
            let config = Config {
                observer: Endpoint::observer(&counted),
                ..Config::default()
            };
            let server = Server::bind("127.0.0.1:0", LocalFs::new(dir)?, config).await?;
            let started = Instant::now();
            let handle = server.handle();
            metrics.show(counted, handle.clone());
            tokio::spawn(server.serve());
            let relay = DelayProxy::start(handle.local_addr().port(), *one_way).await;
            Ok(Some(Wan {
                server: handle,
                started,
                relay,
            }))
        })
    }

    /// The origin's URL, directory included: the relay's in local mode.
    fn origin_url(&self, wan: Option<&Wan>) -> Url {
        match (self, wan) {
            (Source::Remote(url), _) => url.clone(),
            (Source::Local { .. }, Some(wan)) => {
                Url::parse(&format!("root://127.0.0.1:{}/", wan.relay.port)).expect("a URL")
            }
            (Source::Local { .. }, None) => unreachable!("local runs have a WAN"),
        }
    }
}

/// The default mode: generated files behind an emulated WAN.
fn local(cli: &Cli, trace: &Trace, metrics: SocketAddr) -> Result<(Source, Workload)> {
    let count = match cli.files.as_deref().map(str::parse::<usize>) {
        None => DEFAULT_FILES,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return Err("--files: a number of files, without --origin".into()),
    };
    let rtt = Duration::from_millis(cli.rtt_ms.unwrap_or(50));
    let dir = tempfile::tempdir()?;
    println!(
        "xroot demo: an analysis's reads of NanoAOD-like files across a {} ms WAN, \
         directly and through our cache\n",
        rtt.as_millis()
    );
    println!("writing the files...");
    let t = Instant::now();
    let files: Vec<(String, Trace)> = (0..count)
        .map(|k| {
            let name = format!("nanoaod_{k}.bin");
            bench::write_pattern(&dir.path().join(&name), trace.size, k as u64);
            (name, trace.clone())
        })
        .collect();
    item(
        "files",
        &format!(
            "{count} file{} of {:.1}{NB}MB (the traced ROOT file's size) in {}, written in {:.1}{NB}s; \
             their bytes are a known pattern, not ROOT data",
            if count == 1 { "" } else { "s" },
            mb(trace.size),
            dir.path().display(),
            t.elapsed().as_secs_f64()
        ),
    );
    item(
        "origin",
        &format!(
            "our server (LocalFs) behind a relay adding {}{NB}ms each way, both new for each run",
            rtt.as_millis() / 2
        ),
    );
    let rt = runtime()?;
    let metrics = (rt.block_on(Endpoint::bind(metrics)))
        .map_err(|e| format!("cannot serve metrics on {metrics}: {e}"))?;
    let source = Source::Local {
        dir,
        rt,
        one_way: rtt / 2,
        metrics,
    };
    Ok((source, Workload::new(files, true)))
}

/// `--origin`: the files of a real server.
fn remote(
    rt: &Runtime,
    origin: &str,
    files: Option<&str>,
    trace: &Trace,
) -> Result<(Source, Workload)> {
    let url = Url::parse(origin).map_err(|e| format!("--origin {origin}: {e}"))?;
    println!("xroot demo: an analysis's reads of files of {url}, directly and through our cache\n");
    let chosen = rt.block_on(pick_files(&url, files))?;
    let mut mapped = Vec::new();
    for (name, size) in chosen {
        item("file", &format!("{name}, {:.1}{NB}MB", mb(size)));
        mapped.push((name, trace.scaled(size)));
    }
    item(
        "origin",
        &format!(
            "{url} as it is (no emulated delay); the trace's offsets are scaled from {:.1}{NB}MB \
             to each file's size, its lengths clipped at the file's end",
            mb(trace.size)
        ),
    );
    Ok((Source::Remote(url), Workload::new(mapped, false)))
}

/// The files `--files` names (or the first few of the directory by name),
/// with their sizes; empty files and directories are skipped.
async fn pick_files(url: &Url, files: Option<&str>) -> Result<Vec<(String, u64)>> {
    let fs = Client::new().fs(&url.to_string())?;
    let dir = url.path.trim_end_matches('/');
    let at = |name: &str| format!("{dir}/{name}");
    let (names, count) = match files.map(|f| (f, f.parse::<usize>())) {
        None => (None, DEFAULT_FILES),
        Some((_, Ok(n))) => (None, n),
        Some((list, Err(_))) => {
            let names: Vec<String> = list.split(',').map(str::to_string).collect();
            let n = names.len();
            (Some(names), n)
        }
    };
    let names = match names {
        Some(names) => names,
        None => {
            let mut entries = (fs.dirlist(&format!("{dir}/"), false).await)
                .map_err(|e| format!("listing {url}: {e}"))?;
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            entries.into_iter().map(|e| e.name).collect()
        }
    };
    let mut chosen = Vec::new();
    for name in names {
        let stat = fs
            .stat(&at(&name))
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        if !stat.is_dir() && stat.size > 0 {
            chosen.push((name, stat.size));
        }
        if chosen.len() == count {
            return Ok(chosen);
        }
    }
    match chosen.is_empty() {
        true => Err(format!("no non-empty file to read in {url}").into()),
        false => Ok(chosen),
    }
}

/// Our cache, serving on 127.0.0.1 on a runtime of its own.
struct Cache {
    fs: CacheFs<RemoteOrigin>,
    handle: ServerHandle,
    /// When the cache's counters started.
    started: Instant,
    serving: JoinHandle<std::io::Result<()>>,
}

impl Cache {
    /// A cache of `origin` keeping its blocks in `dir`, with the defaults
    /// of `examples/xcache.rs` (4 kB blocks, 1 MiB runs, no gap merging),
    /// its metrics those of `xcache --metrics`, served at `endpoint`.
    fn start(rt: &Runtime, origin: &str, dir: &Path, endpoint: &Endpoint) -> Result<Cache> {
        rt.block_on(async {
            let origin = RemoteOrigin::new(Client::new(), origin)?;
            let fs = CacheFs::new(origin, Store::open(dir)?, CacheConfig::default());
            let started = Instant::now();
            let stats = fs.clone();
            let figures: metrics::CacheFigures = Box::new(move || stats.stats());
            let counted = metrics::Metrics::new(Some((figures, dir.to_path_buf())));
            let config = Config {
                observer: Endpoint::observer(&counted),
                ..Config::default()
            };
            let server = Server::bind("127.0.0.1:0", fs.clone(), config).await?;
            let handle = server.handle();
            endpoint.show(counted, handle.clone());
            Ok(Cache {
                fs,
                handle,
                started,
                serving: tokio::spawn(server.serve()),
            })
        })
    }

    /// Writes every sidecar and stops serving.
    fn stop(self, rt: &Runtime) -> Result<()> {
        rt.block_on(async {
            self.fs.flush_all().await?;
            self.handle.shutdown();
            Ok(self.serving.await??)
        })
    }
}
