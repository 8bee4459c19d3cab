//! Serves a local directory to stock XRootD clients (`xrdcp`, `xrdfs`, the
//! Python bindings, ROOT) with [`LocalFs`] behind [`Server`].
//!
//! ```text
//! cargo run --example serve -- [--port P] [--bind ADDR] [--readv-concurrency N] \
//!     [--auth host,unix,sss,ztn] [--sss-keytab FILE] \
//!     [--token-issuer ISSUER=JWKS_FILE_OR_URL]... [--token-audience AUD]... \
//!     [--tls-cert FILE --tls-key FILE [--tls capable|login|session|data|all] [--tls-ca-dir DIR]] \
//!     [--role server --manager HOST:CMSPORT]... [-v] DIR
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
//! WLCG scopes). The default address
//! is the loopback one; `--bind 0.0.0.0` (or `::`) serves other hosts.
//! The first line on stdout is `serve listening on ADDR` once the port is
//! bound (with `--port 0`, the port picked).
//! Ctrl-C or SIGTERM shuts down gracefully (requests in flight are
//! answered first).
//! With `--tls-cert`/`--tls-key` TLS is offered (`roots://`) or required
//! (`--tls`); SIGHUP reloads the certificate and key.
//! Logging goes to stderr through `tracing`; `-v` adds the debug events.

#[path = "common/auth.rs"]
mod auth;
#[path = "common/cluster.rs"]
mod cluster;
#[path = "common/daemon.rs"]
mod daemon;
#[path = "common/tls.rs"]
mod tls;

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;
use xroot::server::cluster::Redirector;
use xroot::server::local::{Access, AccessPolicy};
use xroot::server::{Config, LocalFs, ReadvConcurrency, Server, ServerHandle};

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
    /// Log debug events too.
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub auth: auth::AuthArgs,
    #[command(flatten)]
    pub cluster: cluster::ClusterArgs,
    /// The directory to export; nothing outside it is reachable (none for
    /// `--role manager`).
    #[arg(required_unless_present = "role")]
    pub dir: Option<PathBuf>,
}

/// The backend and the listener `cli` asks for, bound but not serving yet.
///
/// Errors: no DIR or `dir` is not a directory, or the address cannot be
/// bound.
pub async fn start(cli: &Cli) -> io::Result<Server<LocalFs>> {
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
    let config = Config {
        tls: cli.tls.config()?,
        // what the node offers its manager: reading only, or writing too
        cluster: cli
            .cluster
            .config(&[if cli.read_only { "r /" } else { "w /" }]),
        ..cli.auth.config()?
    };
    let addr = std::net::SocketAddr::new(cli.bind, cli.port);
    let server = Server::bind(addr, fs, config)
        .await
        .map_err(|e| daemon::failed(format!("cannot listen on {addr}"), e))?;
    tracing::info!(
        %root,
        addr = %server.local_addr(),
        readv = ?readv,
        "serving"
    );
    Ok(server)
}

/// `--role manager`: a redirector in front of the `--manager` cmsd,
/// bound but not serving yet.
///
/// Errors: the address cannot be bound, or a TLS or auth flag is unusable.
pub async fn start_redirector(cli: &Cli) -> io::Result<Server<Redirector>> {
    let cfg = cli.cluster.config(&[]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "--role manager needs --manager",
        )
    })?;
    let config = Config {
        tls: cli.tls.config()?,
        ..cli.auth.config()?
    };
    let addr = std::net::SocketAddr::new(cli.bind, cli.port);
    let server = Server::bind(addr, Redirector::start(&cfg), config)
        .await
        .map_err(|e| daemon::failed(format!("cannot listen on {addr}"), e))?;
    tracing::info!(addr = %server.local_addr(), managers = ?cfg.managers, "redirecting");
    Ok(server)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    daemon::init_logging(cli.verbose);
    daemon::exit("serve", serve(&cli).await)
}

/// Serves as `cli` asks until a signal stops it.
async fn serve(cli: &Cli) -> io::Result<()> {
    let handle = if cli.cluster.role == Some(cluster::Role::Manager) {
        let server = start_redirector(cli).await?;
        run(server).await?
    } else {
        run(start(cli).await?).await?
    };
    let s = handle.stats();
    tracing::info!(
        connections = s.connections,
        requests = s.in_flight.all.total,
        peak_in_flight = s.in_flight.all.peak,
        "stopped"
    );
    Ok(())
}

/// Prints the listening line, serves until a signal, returns the handle.
async fn run<F: xroot::server::FileSystem>(server: Server<F>) -> io::Result<ServerHandle> {
    println!("serve listening on {}", server.local_addr());
    io::stdout().flush()?;
    let handle = server.handle();
    daemon::shutdown_on_signal(handle.clone())?;
    tls::reload_on_sighup(handle.clone())?;
    server.serve().await?;
    Ok(handle)
}
