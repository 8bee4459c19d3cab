//! Serves a local directory to stock XRootD clients (`xrdcp`, `xrdfs`, the
//! Python bindings, ROOT) with [`LocalFs`] behind [`Server`].
//!
//! ```text
//! cargo run --example serve -- [--port P] [--bind ADDR] [--readv-concurrency N] \
//!     [--auth host,unix,sss,ztn,gsi] [--sss-keytab FILE] \
//!     [--token-issuer ISSUER=JWKS_FILE_OR_URL]... [--token-audience AUD]... [--token-leeway SECS] \
//!     [--gsi-cert FILE --gsi-key FILE --gsi-ca-dir DIR [--gsi-gridmap FILE [--gsi-gridmap-required]]] \
//!     [--tls-cert FILE --tls-key FILE [--tls capable|login|session|data|all] [--tls-ca-dir DIR]] \
//!     [--role server --manager HOST:CMSPORT]... [--read-only] [--metrics ADDR] \
//!     [--report HOST:PORT[,HOST:PORT] [--report-every SECS]] \
//!     [--monitor HOST:PORT[,HOST:PORT] [--monitor-flush SECS]] [--tpc [--tpc-ttl SECS]] [-v] DIR
//! cargo run --example serve -- --role manager --manager HOST:CMSPORT [--port P]
//! xrdcp root://127.0.0.1:1094//file.root /tmp/
//! ```
//!
//! `--role server --manager HOST:CMSPORT` makes the server a data server of
//! a stock cluster: it logs into that manager's `cmsd` (repeat `--manager`
//! for several), which then redirects clients here for the files in DIR.
//! `--role manager --manager HOST:CMSPORT` runs a redirector instead (no
//! DIR): in front of that manager `cmsd`, as the stock manager `xrootd`, it
//! sends every client to a data server of the cluster.
//!
//! Without `--auth` there is no authentication and clients may write; with
//! it, clients authenticate with one of the protocols listed (`sss` needs
//! `--sss-keytab`, a keytab `xrdsssadmin` wrote; `ztn` needs TLS and
//! `--token-issuer`, and each request is then checked against the token's
//! WLCG scopes; `gsi`, X509 certificates and proxies, needs the host
//! certificate and key `--gsi-cert`/`--gsi-key` and the hashed CA
//! directory `--gsi-ca-dir`, and with `--gsi-gridmap` a client is the
//! user the grid-mapfile names for its DN). The default address
//! is the loopback one; `--bind 0.0.0.0` (or `::`) serves other hosts.
//! The first line on stdout is `serve listening on ADDR` once the port is
//! bound (with `--port 0`, the port picked). The log (stderr) says before
//! it what is served how ([`crate::summary`]): the address, the TLS level,
//! the authentication protocols in order, read-only or read-write, and
//! warns when clients may write without authentication on an address
//! beyond loopback.
//! Ctrl-C or SIGTERM shuts down gracefully (requests in flight are
//! answered first).
//! `xrdfs HOST:PORT query stats a` answers the stock server's XML shape
//! (sections `info`, `link`, `xrootd`; see xroot-server's `query` docs).
//! With `--tls-cert`/`--tls-key` TLS is offered (`roots://`) or required
//! (`--tls`); SIGHUP reloads the certificate and key.
//! Logging goes to stderr through `tracing`; `-v` adds a line per request
//! answered (target `xroot::request`: client, user, request, path, status,
//! duration, bytes in and out) and the debug events. `--metrics ADDR`
//! serves the Prometheus text format at `http://ADDR/metrics`
//! ([`crate::metrics`] lists the metrics); the second line on
//! stdout is then `serve metrics on http://ADDR/metrics`.
//! `--report` and `--monitor` send the XRootD monitoring streams over UDP
//! as the stock server does (the summary and the detailed stream, see
//! [`crate::monitor`]).
//! `--tpc` serves native third-party copy in both roles
//! ([`xroot_server::tpc`]): the stock `xrdcp --tpc only` can copy from this
//! server to another, or make this server pull a file from another
//! ([`crate::tpc_pull`]); `--tpc-ttl SECS` is how long a grant lives.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use xroot_server::cluster::Redirector;
use xroot_server::local::{Access, AccessPolicy};
use xroot_server::observe::udp::UdpMonitor;
use xroot_server::observe::MonitorObserver;
use xroot_server::{
    Config, FileSystem, LocalFs, ReadvConcurrency, RequestObserver, Server, ServerHandle, TpcConfig,
};

use crate::summary::{self, Summary};
use crate::tpc_pull::ClientPuller;
use crate::{auth, cluster, config_file, daemon, metrics, monitor, tls};

/// `serve [--port P] [--bind ADDR] [--readv-concurrency N] [--read-only] [-v] DIR`
#[derive(Debug, Parser)]
#[command(about = "Serve a directory over the XRootD protocol")]
pub struct Cli {
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 1094)]
    pub port: u16,
    /// Address to listen on (IPv4 or IPv6).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Vector reads of one file served at once; 1 for a spinning disk,
    /// where overlapping reads make the head seek back and forth.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub readv_concurrency: u16,
    /// Refuse every request that would change the directory (open for
    /// writing, mkdir, rm, mv, chmod, truncate) with `kXR_NotAuthorized`.
    #[arg(long)]
    pub read_only: bool,
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
    /// Native third-party copy, both roles, as the stock `ofs.tpc`: a
    /// client's open with `tpc.key`/`tpc.dst` grants the file to a
    /// destination, and a write open with `tpc.src` makes this server pull
    /// the file from the source (`xrdcp --tpc only SRC DST`).
    #[arg(long)]
    pub tpc: bool,
    /// Seconds a TPC grant lives, and a destination's open waits for its
    /// grant, when the client gives no `tpc.ttl` (the stock's `ofs.tpc
    /// ttl`, 15).
    #[arg(long, value_name = "SECS", default_value_t = 15, requires = "tpc")]
    pub tpc_ttl: u64,
    /// Read flags from a TOML file too: its keys are the long flags'
    /// names (`port = 1094`, `read-only = true`, `dir = "/data"`); a flag
    /// given on the command line wins.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub auth: auth::AuthArgs,
    #[command(flatten)]
    pub cluster: cluster::ClusterArgs,
    #[command(flatten)]
    pub monitoring: monitor::MonitorArgs,
    /// The directory to export; nothing outside it is reachable (none for
    /// `--role manager`).
    #[arg(required_unless_present = "role")]
    pub dir: Option<PathBuf>,
}

/// The backend and the listener `cli` asks for, bound but not serving yet
/// (with `-v`, logging each request).
///
/// Errors: those of [`start_counted`].
pub async fn start(cli: &Cli) -> io::Result<Server<LocalFs>> {
    start_counted(cli, None).await
}

/// As [`start`], counting each request into `metrics` too.
///
/// Errors: no DIR or `dir` is not a directory, or the address cannot be
/// bound.
pub async fn start_counted(
    cli: &Cli,
    metrics: Option<Arc<metrics::Metrics>>,
) -> io::Result<Server<LocalFs>> {
    let readv = match cli.readv_concurrency {
        1 => ReadvConcurrency::Serial,
        n => ReadvConcurrency::Parallel(n.into()),
    };
    let dir = cli.dir.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "DIR is required to serve files",
        )
    })?;
    let mut fs = LocalFs::new(dir)
        .map_err(|e| daemon::failed(format!("cannot serve {}", dir.display()), e))?
        .readv_concurrency(readv);
    if cli.read_only {
        fs = fs.with_policy(AccessPolicy::new(Access::ReadOnly));
    }
    let root = fs.root().display().to_string();
    let detailed = cli
        .monitoring
        .detailed(cli.port, !cli.auth.auth.is_empty())?;
    let config = Config {
        tls: cli.tls.config()?,
        // what the node offers its manager: reading only, or writing too
        cluster: cli
            .cluster
            .config(&[if cli.read_only { "r /" } else { "w /" }]),
        observer: observer(cli, metrics.clone()),
        monitor: detailed.clone().map(|d| d as Arc<dyn MonitorObserver>),
        tpc: tpc_config(cli),
        ..cli.auth.config()?
    };
    let access = match cli.read_only {
        true => summary::Access::ReadOnly,
        false => summary::Access::ReadWrite,
    };
    let server = bind(cli, fs, config, access, detailed, metrics.as_ref()).await?;
    tracing::info!(
        target: "serve",
        %root,
        addr = %server.local_addr(),
        readv = ?readv,
        "serving"
    );
    Ok(server)
}

/// Binds `--bind`:`--port` serving `fs` with `config`, logs the start-up
/// summary ([`Summary`]: the address bound, TLS, authentication, `access`)
/// and starts the monitoring streams beside the server.
///
/// Errors: the address cannot be bound; a monitoring destination does not
/// resolve.
async fn bind<F: FileSystem>(
    cli: &Cli,
    fs: F,
    config: Config,
    access: summary::Access,
    detailed: Option<Arc<UdpMonitor>>,
    metrics: Option<&Arc<metrics::Metrics>>,
) -> io::Result<Server<F>> {
    let addr = SocketAddr::new(cli.bind, cli.port);
    let mut summary = Summary::new(addr, &config, access);
    let server = Server::bind(addr, fs, config)
        .await
        .map_err(|e| daemon::failed(format!("cannot listen on {addr}"), e))?;
    // the monitoring destinations first: a start-up they stop is not
    // announced as listening
    monitor::run_beside(
        &cli.monitoring,
        server.handle(),
        detailed,
        metrics,
        Vec::new,
    )?;
    summary.addr = server.local_addr();
    summary.log("serve");
    Ok(server)
}

/// `--tpc`: both roles, pulling with `xroot-client` ([`ClientPuller`]),
/// grants living `--tpc-ttl` seconds.
fn tpc_config(cli: &Cli) -> Option<TpcConfig> {
    cli.tpc.then(|| {
        let puller = ClientPuller::new(xroot_client::Config::default());
        let mut tpc = TpcConfig::new(Arc::new(puller));
        tpc.ttl = std::time::Duration::from_secs(cli.tpc_ttl);
        tpc.max_ttl = tpc.max_ttl.max(tpc.ttl);
        tpc
    })
}

/// The request log (`-v`) and the counting into `metrics`.
fn observer(cli: &Cli, metrics: Option<Arc<metrics::Metrics>>) -> Option<Arc<dyn RequestObserver>> {
    metrics::Observer::new(cli.verbose, metrics).map(|o| o as Arc<dyn RequestObserver>)
}

/// `--role manager`: a redirector in front of the `--manager` cmsd,
/// bound but not serving yet.
///
/// Errors: the address cannot be bound, or a TLS or auth flag is unusable.
pub async fn start_redirector(
    cli: &Cli,
    metrics: Option<Arc<metrics::Metrics>>,
) -> io::Result<Server<Redirector>> {
    let cfg = cli.cluster.config(&[]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "--role manager needs --manager",
        )
    })?;
    let detailed = cli
        .monitoring
        .detailed(cli.port, !cli.auth.auth.is_empty())?;
    let config = Config {
        tls: cli.tls.config()?,
        observer: observer(cli, metrics.clone()),
        monitor: detailed.clone().map(|d| d as Arc<dyn MonitorObserver>),
        ..cli.auth.config()?
    };
    let access = summary::Access::Redirects;
    let server = bind(
        cli,
        Redirector::start(&cfg),
        config,
        access,
        detailed,
        metrics.as_ref(),
    )
    .await?;
    tracing::info!(target: "serve", addr = %server.local_addr(), managers = ?cfg.managers, "redirecting");
    Ok(server)
}

/// The `serve` example's `main`: reads the command line (and `--config`),
/// serves until a signal, exits 0, or 1 after printing `serve: ERROR`.
#[tokio::main]
pub async fn main() -> std::process::ExitCode {
    // freed request and answer buffers go back to the kernel at once
    xroot_server::allocator::unmap_large_buffers();
    let args = match config_file::with_config_file(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => return daemon::exit("serve", Err(e)),
    };
    let cli = Cli::parse_from(args);
    daemon::init_logging(cli.verbose);
    daemon::exit("serve", serve(&cli).await)
}

/// Serves as `cli` asks until a signal stops it.
async fn serve(cli: &Cli) -> io::Result<()> {
    let metrics = cli.metrics.map(|_| metrics::Metrics::new(None));
    let handle = if cli.cluster.role == Some(cluster::Role::Manager) {
        let server = start_redirector(cli, metrics.clone()).await?;
        run(cli, server, metrics).await?
    } else {
        run(cli, start_counted(cli, metrics.clone()).await?, metrics).await?
    };
    let s = handle.stats();
    tracing::info!(
        target: "serve",
        connections = s.connections,
        requests = s.in_flight.all.total,
        peak_in_flight = s.in_flight.all.peak,
        "stopped"
    );
    Ok(())
}

/// Prints the listening line, starts the metrics endpoint (`--metrics`;
/// its line follows), serves until a signal, returns the handle.
async fn run<F: FileSystem>(
    cli: &Cli,
    server: Server<F>,
    metrics: Option<Arc<metrics::Metrics>>,
) -> io::Result<ServerHandle> {
    println!("serve listening on {}", server.local_addr());
    if let (Some(at), Some(m)) = (cli.metrics, metrics) {
        let bound = metrics::serve(at, m, server.handle())
            .await
            .map_err(|e| daemon::failed(format!("cannot serve metrics on {at}"), e))?;
        println!("serve metrics on http://{bound}/metrics");
    }
    io::stdout().flush()?;
    let handle = server.handle();
    daemon::shutdown_on_signal("serve", handle.clone())?;
    tls::reload_on_sighup("serve", handle.clone())?;
    server.serve().await?;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_their_defaults() {
        let cli = Cli::try_parse_from(["serve", "/data"]).unwrap();
        assert_eq!(cli.port, 1094);
        assert_eq!(cli.bind.to_string(), "127.0.0.1");
        assert_eq!(cli.readv_concurrency, 8);
        assert!(!cli.read_only && !cli.verbose);
        assert_eq!(cli.auth.token_leeway, None);
        assert!(!cli.tpc && tpc_config(&cli).is_none());
        assert_eq!(cli.dir.as_deref(), Some(std::path::Path::new("/data")));
        let cli = Cli::try_parse_from([
            "serve",
            "--port",
            "0",
            "--bind",
            "::",
            "--read-only",
            "-v",
            "--token-leeway",
            "5",
            "/d",
        ])
        .unwrap();
        assert_eq!((cli.port, cli.bind.to_string()), (0, "::".to_string()));
        assert_eq!(cli.auth.token_leeway, Some(5));
        assert!(cli.read_only && cli.verbose);
        let cli = Cli::try_parse_from(["serve", "--tpc", "--tpc-ttl", "60", "/d"]).unwrap();
        let tpc = tpc_config(&cli).unwrap();
        assert_eq!((tpc.ttl.as_secs(), tpc.max_ttl.as_secs()), (60, 60));
        assert!(Cli::try_parse_from(["serve", "--tpc-ttl", "60", "/d"]).is_err());
    }

    #[test]
    fn a_directory_is_needed_unless_a_manager_is_run() {
        assert!(Cli::try_parse_from(["serve"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--readv-concurrency", "0", "/d"]).is_err());
        let manager =
            Cli::try_parse_from(["serve", "--role", "manager", "--manager", "m:1213"]).unwrap();
        assert_eq!(manager.cluster.role, Some(cluster::Role::Manager));
        assert!(manager.dir.is_none());
        // --role needs --manager
        assert!(Cli::try_parse_from(["serve", "--role", "server", "/d"]).is_err());
    }
}
