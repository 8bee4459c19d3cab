//! Client settings, with the reference client's defaults (XrdCl's
//! `XRD_*` environment settings, PROTOCOL.md §12.3).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use xroot_sec::tls::client::{default_cert_dir, ClientTls};

/// How a [`crate::Client`] behaves. `Config::default()` matches XrdCl
/// (and reads the security environment: `XrdSecSSSKT`, `XrdSecPROTOCOL`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Deadline for one request, redirects and waits included
    /// (`XRD_REQUESTTIMEOUT`, 1800 s); past it the call fails with
    /// [`Error::Timeout`](crate::Error::Timeout) of `"request"`. When it
    /// passes inside a frame no other request waits for (the request's own
    /// answer cut off mid-frame, the answer to a request given up, a
    /// partial header), no later answer could be read from that
    /// connection: it is dropped, the requests still waiting on it fail
    /// with [`Error::ConnectionLost`](crate::Error::ConnectionLost), and
    /// the next request connects anew.
    pub request_timeout: Duration,
    /// With requests outstanding, a connection silent this long is declared
    /// dead (`XRD_STREAMTIMEOUT`, 60 s).
    pub stream_timeout: Duration,
    /// The connection window: the deadline of one attempt at connecting a
    /// channel (TCP connect, handshake, TLS and login), and the time from
    /// the start of one attempt to the start of the next when it fails
    /// ([`Config::connect_attempts`]); 120 s, XrdCl's
    /// `DefaultConnectionWindow` (XrdClConstants.hh, `XRD_CONNECTIONWINDOW`
    /// in seconds, which [`Config::with_connection_env`] reads).
    pub connect_timeout: Duration,
    /// Attempts at connecting a channel, the first one included: after an
    /// attempt fails for a reason that may pass (the connection refused,
    /// reset or unreachable, the peer closing during the handshake, the
    /// window passing: [`Error::Io`](crate::Error::Io),
    /// [`Error::ConnectionLost`](crate::Error::ConnectionLost),
    /// [`Error::Timeout`](crate::Error::Timeout)) the next one starts when
    /// the window ([`Config::connect_timeout`]) of the failed one ends, at
    /// once if it has ended; the last failure is the caller's. A refused
    /// login, an authentication or TLS failure, a name that does not
    /// resolve end the attempts at once. 0 counts as 1. Default: 1, the
    /// failure at once (a library caller decides); XrdCl's
    /// `DefaultConnectionRetry` is 5 (XrdClConstants.hh,
    /// `XRD_CONNECTIONRETRY`, which [`Config::with_connection_env`] reads),
    /// so that the stock tools try a refused server for 4 windows, 8
    /// minutes, before they fail.
    pub connect_attempts: u32,
    /// Most redirects one request may follow (`XRD_REDIRECTLIMIT`, 16).
    pub redirect_limit: u32,
    /// Retries of a pgread page whose crc32c is bad, each a single-page
    /// `kXR_pgread` with `kXR_pgRetry` (XrdCl retries once per page; 3 here).
    pub pgread_retries: u32,
    /// Largest response body accepted, in bytes (plain reads arrive as one
    /// frame from the stock server, so this bounds the largest `read_at`).
    pub max_response_dlen: usize,
    /// Most bytes of an answer whose length the request does not set
    /// (`kXR_dirlist`, `kXR_query`, `kXR_locate`, `kXR_stat`, `kXR_open`...),
    /// over all its frames: 256 MiB, a listing of some two million entries.
    /// A read-type answer is bounded by what it asked instead. An answer
    /// past its bound fails its call with
    /// [`Error::UnexpectedResponse`](crate::Error::UnexpectedResponse) at once;
    /// one frame past it by more than 64 KiB (what a status body, an error
    /// message or a redirect's URL may add) is refused at its header with
    /// [`Error::Protocol`](crate::Error::Protocol), and the connection is
    /// dropped.
    pub max_answer_len: usize,
    /// Most frames (`kXR_oksofar` chunks and the final one) of such an
    /// answer: 65,536, which at the stock server's 4 KiB listing chunks is
    /// [`Config::max_answer_len`].
    pub max_answer_frames: usize,
    /// Application name sent in the login CGI (`XRD_APPNAME`).
    pub app_name: String,
    /// TCP connections per channel toward a data server: the main stream
    /// plus `substreams - 1` bound with `kXR_bind` (`XRD_SUBSTREAMSPERCHANNEL`, 1).
    pub substreams: usize,
    /// TLS: whom to trust (and a client certificate, if any). With it the
    /// client offers `kXR_ableTLS` on `root://` and switches when the
    /// server says so; without it a `roots://` URL fails with
    /// [`TlsCause::NotConfigured`](crate::TlsCause::NotConfigured) and a
    /// server that requires TLS with
    /// [`TlsCause::Required`](crate::TlsCause::Required). Default: from
    /// the environment as the stock client builds it,
    /// [`ClientTls::from_env`] — the CA directory `X509_CERT_DIR`, else
    /// `/etc/grid-security/certificates`, when it exists and holds a
    /// certificate; else none.
    pub tls: Option<ClientTls>,
    /// Data substreams in plain text when the main stream runs TLS and the
    /// server does not require TLS for data (`XRD_TLSNODATA`, off; the
    /// default reads that variable, non-zero = on). A channel then opens at
    /// least 2 streams, as XrdCl does, so that reads have a plain one.
    pub tls_no_data: bool,
    /// The `sss` keytab to seal credentials with: `XrdSecSSSKT` (or the
    /// older `XrdSecsssKT`) when set to a file that exists, as the stock
    /// client reads them (XrdSecProtocolsss.cc `Load_Client`). When `None`
    /// or absent, the keytab the server suggests in its `sss` parameters,
    /// then `$HOME/.xrd/sss.keytab`; with none of them, `sss` is skipped for
    /// the next protocol the server offers.
    pub sss_keytab: Option<PathBuf>,
    /// The security protocols this client may answer with
    /// (`XrdSecPROTOCOL`, a comma list such as `sss,unix`); the server's
    /// order of preference still decides among them, as in the stock
    /// client (XrdSecPManager.cc). `None`: every protocol this client
    /// speaks (`host`, `unix`, `sss`, `ztn`, `gsi`).
    pub sec_protocols: Option<Vec<String>>,
    /// The bearer token answered to a server that offers `ztn` (over TLS
    /// only); `None` (the default) finds one as the WLCG Bearer Token
    /// Discovery profile says: `BEARER_TOKEN`, `BEARER_TOKEN_FILE`,
    /// `$XDG_RUNTIME_DIR/bt_u<euid>`, `/tmp/bt_u<euid>`
    /// ([`xroot_sec::ztn::discover`]).
    pub bearer_token: Option<xroot_sec::ztn::BearerToken>,
    /// The X509 credentials answered to a server that offers `gsi`;
    /// `None` (the default) reads them at each login as the stock client
    /// does: the proxy at `X509_USER_PROXY` (default `/tmp/x509up_u<uid>`),
    /// else `X509_USER_CERT` and `X509_USER_KEY` (default
    /// `~/.globus/usercert.pem`, `userkey.pem`)
    /// ([`xroot_sec::gsi::Credentials::discover`]). Expired credentials
    /// are not sent.
    #[cfg(feature = "gsi")]
    pub x509_credentials: Option<std::sync::Arc<xroot_sec::gsi::Credentials>>,
    /// A proxy file (PEM: the proxy certificate, its key, the chain, as
    /// `xrdgsiproxy` writes it) read at each login instead of what
    /// `X509_USER_PROXY` names: a long-running program whose proxy is
    /// renewed in place picks the new one up at its next login. Expired
    /// credentials are not sent; a file that cannot be read fails the
    /// login with [`Error::Credential`](crate::Error::Credential).
    /// [`Config::x509_credentials`] wins when both are set.
    #[cfg(feature = "gsi")]
    pub x509_proxy_file: Option<PathBuf>,
    /// The CA directory a `gsi` server's certificate is checked against;
    /// `None`: `X509_CERT_DIR`, else `/etc/grid-security/certificates`.
    #[cfg(feature = "gsi")]
    pub x509_cert_dir: Option<PathBuf>,
}

impl Config {
    /// This configuration with `tls` as its TLS configuration.
    pub fn with_tls(mut self, tls: ClientTls) -> Config {
        self.tls = Some(tls);
        self
    }

    /// This configuration without TLS (no `kXR_ableTLS`; `roots://` fails).
    pub fn without_tls(mut self) -> Config {
        self.tls = None;
        self
    }

    /// This configuration with the connection settings of the stock
    /// tools: [`Config::connect_attempts`] from `XRD_CONNECTIONRETRY`
    /// (attempts, default 5) and [`Config::connect_timeout`] from
    /// `XRD_CONNECTIONWINDOW` (seconds, default 120), XrdCl's defaults
    /// (XrdClConstants.hh `DefaultConnectionRetry`,
    /// `DefaultConnectionWindow`). A value that is not an integer is
    /// ignored (logged) for the default, as XrdCl's `Env::GetInt` does; a
    /// negative one counts as 0 (one attempt; a window of 0 s fails every
    /// attempt that does not connect at once).
    pub fn with_connection_env(mut self) -> Config {
        self.connect_attempts = env_int("XRD_CONNECTIONRETRY")
            .unwrap_or(5)
            .clamp(0, u32::MAX as i64) as u32;
        self.connect_timeout =
            Duration::from_secs(env_int("XRD_CONNECTIONWINDOW").unwrap_or(120).max(0) as u64);
        self
    }
}

/// The TLS configuration of the environment; none when there is no CA
/// directory, or it cannot be read (logged). The directory is read once
/// per path and modification time (adding or removing a CA, as `openssl
/// rehash` does, changes it), not at every `Config::default()`.
fn tls_from_env() -> Option<ClientTls> {
    type Seen = (PathBuf, Option<SystemTime>, Option<ClientTls>);
    static LAST: Mutex<Option<Seen>> = Mutex::new(None);
    let dir = default_cert_dir();
    let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((d, t, tls)) = &*last {
        if *d == dir && *t == mtime && mtime.is_some() {
            return tls.clone();
        }
    }
    let tls = ClientTls::from_env().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "no TLS configuration from the environment");
        None
    });
    *last = Some((dir, mtime, tls.clone()));
    tls
}

/// An `XRD_*` integer setting: `None` when unset or not an integer (that
/// logged).
fn env_int(name: &str) -> Option<i64> {
    let v = std::env::var(name).ok()?;
    let n = v.trim().parse::<i64>().ok();
    if n.is_none() {
        tracing::warn!(name, value = v, "not an integer; the default is used");
    }
    n
}

/// An `XRD_*` integer setting as XrdCl's `Env::GetInt` reads it: set and
/// a non-zero integer.
fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .is_some_and(|v| v != 0)
}

impl Default for Config {
    fn default() -> Self {
        Config {
            request_timeout: Duration::from_secs(1800),
            stream_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(120),
            connect_attempts: 1,
            redirect_limit: 16,
            pgread_retries: 3,
            max_response_dlen: 256 << 20,
            max_answer_len: 256 << 20,
            max_answer_frames: 65_536,
            app_name: "xroot".to_string(),
            substreams: 1,
            tls: tls_from_env(),
            tls_no_data: env_flag("XRD_TLSNODATA"),
            sss_keytab: ["XrdSecSSSKT", "XrdSecsssKT"]
                .iter()
                .filter_map(std::env::var_os)
                .find(|p| !p.is_empty() && std::path::Path::new(p).exists())
                .map(PathBuf::from),
            sec_protocols: std::env::var("XrdSecPROTOCOL").ok().map(|l| {
                l.split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect()
            }),
            bearer_token: None,
            #[cfg(feature = "gsi")]
            x509_credentials: None,
            #[cfg(feature = "gsi")]
            x509_proxy_file: None,
            #[cfg(feature = "gsi")]
            x509_cert_dir: None,
        }
    }
}
