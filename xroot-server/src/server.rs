//! The listener: [`Server::bind`] a TCP address (IPv4 or IPv6), then
//! [`Server::serve`] runs one task per connection until
//! [`ServerHandle::shutdown`]. A graceful shutdown stops accepting, stops
//! reading new requests, lets every request in flight finish and send its
//! answer, then closes the links.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinSet;
use xroot_sec::tls::server::{ServerTls, ServerTlsError};

use crate::cluster::{self};
use crate::config::Config;
use crate::fs::FileSystem;
use crate::link;
use crate::net::transport::LinkStream;
use crate::observe::stats::ServerStats;
use crate::shared::{Monitor, Shared};

/// An XRootD data server serving a [`FileSystem`].
///
/// ```no_run
/// # async fn demo<F: xroot_server::FileSystem>(fs: F) -> std::io::Result<()> {
/// use xroot_server::{Config, Server};
/// let server = Server::bind("[::]:1094", fs, Config::default()).await?;
/// let handle = server.handle();
/// tokio::spawn(server.serve());
/// // ... later
/// handle.shutdown();
/// # Ok(()) }
/// ```
pub struct Server<F: FileSystem> {
    listener: TcpListener,
    shared: Arc<Shared<F>>,
}

/// Controls a running server from elsewhere: its address, statistics and
/// shutdown. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    monitor: Arc<Monitor>,
    tls: Option<Arc<ServerTls>>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.monitor.local_addr
    }

    /// Requests in flight, per link and for the whole server.
    pub fn stats(&self) -> ServerStats {
        self.monitor.snapshot()
    }

    /// A summary document of the server now (`xrd.report`'s, PROTOCOL.md
    /// §17.7): see [`crate::observe::report::summary`]; `extra` sections
    /// (a cache's) go between `ofs` and `sched`, where the stock puts its
    /// storage layer's.
    pub fn summary(
        &self,
        info: &crate::observe::report::SummaryInfo,
        extra: Vec<xroot_proto::monitor::summary::Element<'static>>,
    ) -> String {
        crate::observe::report::summary(&self.monitor.totals(), info, self.monitor.started, extra)
    }

    /// Starts a graceful shutdown: no new connections or requests; requests
    /// in flight finish and are answered, then every link is closed and
    /// [`Server::serve`] returns.
    pub fn shutdown(&self) {
        self.monitor.shutdown.send_replace(true);
    }

    /// Resolves once a shutdown has started ([`ServerHandle::shutdown`]),
    /// at once if it has; for what runs beside the server and ends with it
    /// (a summary stream, say).
    pub async fn stopping(&self) {
        let mut signal = self.monitor.shutdown_signal();
        // the sender lives as long as this handle
        let _ = signal.wait_for(|&stop| stop).await;
    }

    /// Reads the TLS certificate, key and CA directory again from their
    /// files ([`ServerTls::reload`]): handshakes from now on use them;
    /// links already running TLS are not touched. `Ok(false)` when the
    /// server has no TLS.
    ///
    /// Errors: those of [`ServerTls::reload`] (the file that failed and
    /// why); the configuration in use is then kept.
    pub fn reload_tls(&self) -> Result<bool, ServerTlsError> {
        match &self.tls {
            Some(tls) => tls.reload().map(|()| true),
            None => Ok(false),
        }
    }
}

impl<F: FileSystem> Server<F> {
    /// Binds a TCP listener on `addr` (e.g. `"0.0.0.0:1094"`,
    /// `"[::1]:0"`) for a server of `fs`. Errors: those of binding.
    pub async fn bind(addr: impl ToSocketAddrs, fs: F, config: Config) -> io::Result<Server<F>> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        if let Some(m) = &config.monitor {
            m.bound(local_addr);
        }
        let shared = Arc::new(Shared::new(fs, config, local_addr));
        Ok(Server { listener, shared })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.monitor.local_addr
    }

    /// The backend this server serves.
    pub fn fs(&self) -> &F {
        &self.shared.fs
    }

    /// A handle for statistics and shutdown.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle {
            monitor: self.shared.monitor.clone(),
            tls: self.shared.config.tls.as_ref().map(|t| t.server.clone()),
        }
    }

    /// Requests in flight, per link and for the whole server.
    pub fn stats(&self) -> ServerStats {
        self.shared.monitor.snapshot()
    }

    /// A link over an in-process byte stream, as if a client at `peer`
    /// had connected: the future serves it to its end (the client closing
    /// its end, or a shutdown). Such a link never switches to TLS and
    /// sends file data from memory. For tests and fuzzing: the server's
    /// sessions, limits and budgets are the same as for its TCP links,
    /// whether or not [`Server::serve`] runs.
    pub fn serve_stream(
        &self,
        stream: tokio::io::DuplexStream,
        peer: SocketAddr,
    ) -> impl Future<Output = ()> + Send + 'static {
        let local = self.shared.monitor.local_addr;
        link::run_link(self.shared.clone(), LinkStream::Memory(stream), peer, local)
    }

    /// Accepts connections until [`ServerHandle::shutdown`], then waits for
    /// every link to finish; this only returns `Ok`.
    ///
    /// Out of file descriptors (`EMFILE`, `ENFILE`), a connection is
    /// refused rather than left waiting in the backlog: the server frees a
    /// descriptor it keeps in reserve, accepts the connection and closes it
    /// at once, so the client sees it closed. Accept errors are logged one
    /// line per 10 s, with their count.
    pub async fn serve(self) -> io::Result<()> {
        let mut links = JoinSet::new();
        let mut shutdown = self.shared.monitor.shutdown_signal();
        let mut reserve = reserve_descriptor();
        let mut errors = AcceptErrors::default();
        let mut members = JoinSet::new();
        for manager in self.shared.config.cluster.iter().flat_map(|c| &c.managers) {
            members.spawn(cluster::run(self.shared.clone(), manager.clone()));
        }
        loop {
            tokio::select! {
                _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break,
                Some(_) = links.join_next(), if !links.is_empty() => {}
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        links.spawn(link::run(self.shared.clone(), stream, peer));
                    }
                    Err(e) if out_of_descriptors(&e) && reserve.is_some() => {
                        drop(reserve.take());
                        if let Some(Ok((stream, _))) = self.listener.accept().now_or_never() {
                            drop(stream);
                        }
                        reserve = reserve_descriptor();
                        errors.note(&e, "connections refused");
                    }
                    Err(e) => {
                        errors.note(&e, "accept failed");
                        // nothing freed: let descriptors come back first
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        if reserve.is_none() {
                            reserve = reserve_descriptor();
                        }
                    }
                },
            }
        }
        drop(self.listener);
        // the manager links send their suspend and end at the signal
        while members.join_next().await.is_some() {}
        while links.join_next().await.is_some() {}
        Ok(())
    }
}

/// Accept errors are logged at most once per this interval (10 s).
const ACCEPT_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// A descriptor kept in reserve (`/dev/null`), freed to refuse a
/// connection when the process has no other.
fn reserve_descriptor() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if code == rustix::io::Errno::MFILE.raw_os_error()
        || code == rustix::io::Errno::NFILE.raw_os_error())
}

/// Accept errors since the last log line.
#[derive(Debug, Default)]
struct AcceptErrors {
    since_log: u64,
    logged: Option<std::time::Instant>,
}

impl AcceptErrors {
    /// Counts `e`; logs one line (`what`, the count, the error) when the
    /// last was [`ACCEPT_LOG_INTERVAL`] ago or more.
    fn note(&mut self, e: &io::Error, what: &str) {
        self.since_log += 1;
        let due = self
            .logged
            .is_none_or(|t| t.elapsed() >= ACCEPT_LOG_INTERVAL);
        if due {
            tracing::warn!(count = self.since_log, "{what}: {e}");
            self.since_log = 0;
            self.logged = Some(std::time::Instant::now());
        }
    }
}
