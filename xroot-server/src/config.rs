//! Server settings: concurrency limits, the memory budget, the
//! deferred-answer delay, frame sizes, deadlines and the security layer.

use std::sync::Arc;
use std::time::Duration;

use xroot_proto::frame::DEFAULT_MAX_REQUEST_DLEN;
use xroot_proto::limits::MAX_TRANSFER;

use crate::auth::Authenticator;
use crate::cluster::ClusterConfig;
use crate::net::tls::{TlsConfig, TlsRequirement};
use crate::observe::{MonitorObserver, RequestObserver};
use crate::tpc::TpcConfig;

/// How a [`crate::Server`] behaves. `Config::default()` suits a data server.
#[derive(Clone)]
pub struct Config {
    /// Most requests processed at once for one link; the link is not read
    /// further while it has this many (64).
    pub max_requests_per_link: usize,
    /// Most requests processed at once in the whole server (4096). While
    /// they are all taken a link may still run 4 of its own, so links whose
    /// clients stopped reading cannot stop the others.
    pub max_requests: usize,
    /// Most vector reads (`kXR_readv`, `kXR_pgreadv`) at once for one
    /// session, its bound substreams included (16). A file's own
    /// [`crate::ReadvConcurrency`] applies on top.
    pub max_readv_per_link: usize,
    /// Most vector reads at once in the whole server (256). While they are
    /// all taken a link may still run 1 of its own.
    pub max_readv: usize,
    /// A backend call that has not answered after this long is answered with
    /// `kXR_waitresp` and its result sent later in a `kXR_attn` asynresp
    /// (5 s). Applies to requests answered with one frame (everything but
    /// read, readv, pgread, pgreadv and dirlist).
    pub waitresp_after: Duration,
    /// The seconds a `kXR_waitresp` tells the client to wait at most (1800,
    /// the reference's default).
    pub waitresp_seconds: u32,
    /// Largest request payload accepted, in bytes (16 MiB). A larger `dlen`
    /// is answered `kXR_ArgTooLong` and the link closed.
    pub max_request_dlen: usize,
    /// Largest payload accepted of a request other than a write
    /// (`kXR_write`, `kXR_pgwrite`, `kXR_writev`): a path, a list, a query,
    /// in bytes (2 MiB - 1, as the stock server, whose argument buffer is
    /// 2 MiB with a terminating null). A larger `dlen` is answered
    /// `kXR_ArgTooLong` "Request argument is too long" and the link
    /// closed, before any of the payload is read: only a write's data may
    /// make one request hold more.
    pub max_argument_dlen: usize,
    /// Largest request payload accepted before the session has logged in
    /// and authenticated, in bytes (32 KiB: what `kXR_login` and
    /// `kXR_auth` credentials need). A larger `dlen` is answered
    /// `kXR_ArgTooLong` and the link closed.
    pub max_login_dlen: usize,
    /// Bytes one link may hold for its requests (16 MiB), once for the
    /// payloads of requests being processed and once for answer data read
    /// but not yet written to the socket. Reads, pgreads and vector reads of any size are
    /// answered frame by frame within it; when it is spent the link's
    /// requests wait and the link is not read further (back-pressure on a
    /// client that does not read its answers). At least 64 KiB; a request
    /// payload of up to `max_request_dlen` always fits.
    pub link_budget: usize,
    /// Bytes of answer data the whole server may hold over all links
    /// (16 MiB). When it is spent, each link may still hold one piece of an
    /// answer (2 MiB and its headers) of its own, so that clients that
    /// stopped reading slow the others down but never stop them: the server
    /// holds at most this plus one piece per link waiting on it.
    pub server_budget: usize,
    /// Bytes of request payloads the whole server may hold over all links
    /// (64 MiB), counted from a frame's header on: a link whose next frame
    /// does not fit is not read further until it does. While it is spent,
    /// a link may still take requests of up to 64 KiB. A request waiting
    /// for earlier requests of its link on the same file counts against
    /// its link's `link_budget` only (its client alone can end the wait):
    /// the server holds at most this plus, per link, what such requests
    /// carry.
    pub server_payload_budget: usize,
    /// Bytes per `kXR_oksofar` chunk of a `kXR_read` answer (2 MiB, the
    /// reference's `maxBuffsz`); on a plain link a backend may ask for
    /// smaller ones ([`crate::File::read_chunk`]: 512 KiB for
    /// [`crate::LocalFs`]).
    pub read_chunk: usize,
    /// `kXR_read` requests of at most this many bytes are answered with
    /// `sendfile(2)`, straight from the page cache, where the backend
    /// offers it ([`crate::File::region`]) and the link is plain (1 MiB;
    /// 0 never, as the reference's `xrootd.async nosf`). Small reads gain
    /// most: at a thousand sessions of 64 KiB reads this cut the server's
    /// CPU per GB by a fifth and its memory by four fifths. Larger reads
    /// are read into memory a few chunks ahead of the socket, which kept a
    /// single 1 GiB copy with 8 MiB reads a fifth faster than `sendfile`
    /// on a loaded machine of two cores.
    pub sendfile_max: usize,
    /// A connection that has not sent the 20-byte handshake after this long
    /// is closed (30 s, the reference's `hailWait`).
    pub handshake_timeout: Duration,
    /// Once the first bytes of the handshake have come, the rest must come
    /// within this long, else the connection is closed (1 s). The stock
    /// 5.5.3 server closes such a connection at once: it peeks at the
    /// first bytes and drops the link when they are fewer than 20
    /// (XrdXrootdProtocol::Match); the second allowed here covers a
    /// handshake split across TCP segments.
    pub handshake_rest_timeout: Duration,
    /// A connection that has not logged in (and authenticated, when
    /// required) this long after it was accepted is closed (30 s).
    pub login_timeout: Duration,
    /// A request frame must arrive whole within this long of its first
    /// byte, else the link is closed and its partial frame dropped (60 s).
    pub frame_timeout: Duration,
    /// The answer to `kXR_query config version`.
    pub version: String,
    /// The security layer; `None` (the default) for none.
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// TLS: the certificate and what must run TLS (see
    /// [`crate::TlsRequirement`]); `None` (the default): no TLS, the
    /// `kXR_protocol` answer does not carry `kXR_haveTLS`. At `capable`
    /// with an [`authenticator`](Config::authenticator) whose every
    /// protocol needs TLS (`ztn` alone), the server requires TLS from login
    /// on ([`Config::tls_requirement`]).
    pub tls: Option<TlsConfig>,
    /// Membership in a stock cluster as a data server
    /// ([`crate::cluster`]); `None` (the default): a standalone server.
    pub cluster: Option<ClusterConfig>,
    /// Told about each request answered, for request logs and metrics
    /// ([`crate::observe`]); `None` (the default): nobody.
    pub observer: Option<Arc<dyn RequestObserver>>,
    /// Told about each session, its files and their I/O, for the XRootD
    /// monitoring streams ([`crate::observe::monitor`],
    /// [`crate::observe::udp`]); `None` (the default): nobody, and no
    /// per-file counts are kept.
    pub monitor: Option<Arc<dyn MonitorObserver>>,
    /// Native third-party copy, both roles ([`crate::tpc`]; the stock's
    /// `ofs.tpc`); `None` (the default): the `tpc.*` CGI of an open is
    /// ignored and `kXR_Qconfig tpc` is not answered `1`.
    pub tpc: Option<TpcConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_requests_per_link: 64,
            max_requests: 4096,
            max_readv_per_link: 16,
            max_readv: 256,
            waitresp_after: Duration::from_secs(5),
            waitresp_seconds: 1800,
            max_request_dlen: DEFAULT_MAX_REQUEST_DLEN,
            max_argument_dlen: (2 << 20) - 1,
            max_login_dlen: 32 << 10,
            link_budget: 16 << 20,
            server_budget: 16 << 20,
            server_payload_budget: 64 << 20,
            read_chunk: MAX_TRANSFER,
            sendfile_max: 1 << 20,
            handshake_timeout: Duration::from_secs(30),
            handshake_rest_timeout: Duration::from_secs(1),
            login_timeout: Duration::from_secs(30),
            frame_timeout: Duration::from_secs(60),
            version: format!("xroot-server v{}", env!("CARGO_PKG_VERSION")),
            authenticator: None,
            tls: None,
            cluster: None,
            observer: None,
            monitor: None,
            tpc: None,
        }
    }
}

impl Config {
    /// The TLS requirement the server enforces, `None` without TLS: the
    /// configured one, except `capable` becomes `login` when every
    /// authentication protocol offered needs TLS
    /// ([`Authenticator::requires_tls`]): a client on a plain `root://` URL
    /// (uproot's second connection, the stock client's) then switches to
    /// TLS before its login and can send its token, where it would have
    /// had no protocol left to try.
    pub fn tls_requirement(&self) -> Option<TlsRequirement> {
        let tls = self.tls.as_ref()?;
        let tls_only = self
            .authenticator
            .as_ref()
            .is_some_and(|a| a.requires_tls());
        Some(match tls.requirement {
            TlsRequirement::Capable if tls_only => TlsRequirement::Login,
            r => r,
        })
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_requests_per_link", &self.max_requests_per_link)
            .field("max_requests", &self.max_requests)
            .field("max_readv_per_link", &self.max_readv_per_link)
            .field("max_readv", &self.max_readv)
            .field("waitresp_after", &self.waitresp_after)
            .field("waitresp_seconds", &self.waitresp_seconds)
            .field("max_request_dlen", &self.max_request_dlen)
            .field("max_argument_dlen", &self.max_argument_dlen)
            .field("max_login_dlen", &self.max_login_dlen)
            .field("link_budget", &self.link_budget)
            .field("server_budget", &self.server_budget)
            .field("server_payload_budget", &self.server_payload_budget)
            .field("read_chunk", &self.read_chunk)
            .field("sendfile_max", &self.sendfile_max)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("handshake_rest_timeout", &self.handshake_rest_timeout)
            .field("login_timeout", &self.login_timeout)
            .field("frame_timeout", &self.frame_timeout)
            .field("version", &self.version)
            .field(
                "authenticator",
                &self.authenticator.as_ref().map(|a| {
                    a.protocols()
                        .into_iter()
                        .map(|p| String::from_utf8_lossy(&p.name).into_owned())
                        .collect::<Vec<_>>()
                }),
            )
            .field(
                "tls",
                &self.tls.as_ref().map(|t| (t.server.files(), t.requirement)),
            )
            .field("cluster", &self.cluster)
            .field("observer", &self.observer.is_some())
            .field("monitor", &self.monitor.is_some())
            .field("tpc", &self.tpc)
            .finish()
    }
}
