//! The redirector role: this server in front of a stock manager `cmsd`, as
//! the stock manager `xrootd` is. A [`Redirector`] is a [`FileSystem`] that
//! holds no files: for each client request it asks the manager which data
//! server to send the client to (`select`, `locate`) and answers with that
//! `kXR_redirect`, a `kXR_wait` or an error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::timeout;
use xroot_proto::cms::codes::status;
use xroot_proto::cms::{
    CmsDecoder, CmsFrame, CmsRequest, CmsResponse, Login, LoginMode, RespCode, RrCode, Select,
    SelectOpts, YError,
};
use xroot_proto::response::StatInfo;
use xroot_proto::ErrorCode;

use super::config::ClusterConfig;
use crate::auth::Caller;
use crate::fs::{DirEntry, File, FileSystem, FsError, FsResult, OpenMode};

/// How long the redirector waits for the manager's first answer before it
/// tells the client to come back (`kXR_wait`): the reference derives it
/// from the manager's hold time, at most 15 s.
const REPLY_WAIT: Duration = Duration::from_secs(15);

/// How long a deferred answer (`kYR_waitresp`) may take.
const DEFERRED_WAIT: Duration = Duration::from_secs(600);

/// What a client is told when no manager can be asked now: come back in
/// this many seconds.
const NO_MANAGER_WAIT: u32 = 5;

/// A redirector's backend: every open, stat and namespace request becomes
/// a `select` (every `kXR_locate` a `locate`) sent to a manager `cmsd`, and
/// its answer the client's. Cheap to clone; the manager links close when
/// the last clone is dropped.
///
/// The select options follow the reference's (`XrdOfs` to
/// `XrdCmsFinderRMT::Locate`): reads `kYR_read`, writes `kYR_write`,
/// creation `kYR_create`, truncation `kYR_trunc`, stat `kYR_stat`,
/// namespace changes `kYR_metaop`; a client's `tried=` hosts (and
/// `triedrc=`) go to the manager so it picks another node.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use xroot_server::cluster::{ClusterConfig, Redirector};
/// use xroot_server::{Config, Server};
/// let cfg = ClusterConfig::data_server(["127.0.0.1:1213"]);
/// let server = Server::bind("[::]:1094", Redirector::start(&cfg), Config::default()).await?;
/// server.serve().await
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Redirector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    managers: Vec<Arc<Manager>>,
    next: AtomicUsize,
    ids: AtomicU32,
    _stop: watch::Sender<()>,
}

/// One manager link as the requests see it.
#[derive(Debug)]
struct Manager {
    addr: String,
    /// Logged in and not suspended.
    ready: AtomicBool,
    outgoing: mpsc::Sender<BytesMut>,
    /// Requests waiting for their answer, by streamid (a deferred one by
    /// the id its `kYR_waitresp` gave).
    pending: Mutex<HashMap<u32, mpsc::Sender<CmsResponse>>>,
}

impl Redirector {
    /// Starts one link per manager of `cfg` (its `managers`; the other
    /// fields as for a data server: back-off and timeouts). Must be called
    /// within a tokio runtime.
    pub fn start(cfg: &ClusterConfig) -> Redirector {
        let (stop, stopped) = watch::channel(());
        let managers = cfg
            .managers
            .iter()
            .map(|addr| {
                let (tx, rx) = mpsc::channel(1024);
                let m = Arc::new(Manager {
                    addr: addr.clone(),
                    ready: AtomicBool::new(false),
                    outgoing: tx,
                    pending: Mutex::new(HashMap::new()),
                });
                tokio::spawn(hold(m.clone(), cfg.clone(), rx, stopped.clone()));
                m
            })
            .collect();
        Redirector {
            inner: Arc::new(Inner {
                managers,
                next: AtomicUsize::new(0),
                ids: AtomicU32::new(1),
                _stop: stop,
            }),
        }
    }

    /// Whether at least one manager link is logged in and not suspended.
    pub fn ready(&self) -> bool {
        self.inner
            .managers
            .iter()
            .any(|m| m.ready.load(Ordering::Relaxed))
    }

    /// Asks a ready manager (round robin) and waits for its answer,
    /// following a deferral.
    async fn ask(&self, request: impl Fn() -> CmsRequest) -> FsResult<CmsResponse> {
        let n = self.inner.managers.len();
        let start = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let manager = (0..n)
            .map(|i| &self.inner.managers[(start + i) % n.max(1)])
            .find(|m| m.ready.load(Ordering::Relaxed))
            .ok_or_else(|| wait(NO_MANAGER_WAIT, "no cluster manager is available"))?;
        let id = loop {
            let id = self.inner.ids.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                break id;
            }
        };
        let (tx, mut rx) = mpsc::channel(2);
        manager.pending.lock().unwrap().insert(id, tx);
        let mut frame = BytesMut::new();
        let sent = match request().encode(id, &mut frame) {
            Ok(()) => manager.outgoing.send(frame).await.is_ok(),
            Err(e) => {
                manager.pending.lock().unwrap().remove(&id);
                return Err(FsError::new(ErrorCode::ARG_TOO_LONG, e.to_string()));
            }
        };
        if !sent {
            manager.pending.lock().unwrap().remove(&id);
            return Err(wait(NO_MANAGER_WAIT, "the cluster manager link is down"));
        }
        let mut deferred = None;
        let mut limit = REPLY_WAIT;
        loop {
            match timeout(limit, rx.recv()).await {
                Ok(Some(CmsResponse::WaitResp(later))) => {
                    deferred = Some(later);
                    limit = DEFERRED_WAIT;
                }
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) => return Err(wait(NO_MANAGER_WAIT, "lost the cluster manager")),
                Err(_) => {
                    let mut pending = manager.pending.lock().unwrap();
                    pending.remove(&deferred.unwrap_or(id));
                    return Err(wait(
                        NO_MANAGER_WAIT,
                        "the cluster manager did not answer in time",
                    ));
                }
            }
        }
    }

    /// `select` for `path` with `opts`; never `Ok`: the answer is a
    /// redirect, a wait or an error.
    async fn select(&self, path: &str, opts: SelectOpts, cgi: &str) -> FsError {
        let (opaque, avoid, opts) = tried(cgi, opts);
        let answer = self
            .ask(|| {
                CmsRequest::Select(Select {
                    ident: Bytes::new(),
                    opts,
                    path: Bytes::copy_from_slice(path.as_bytes()),
                    opaque: opaque.clone(),
                    avoid: avoid.clone(),
                })
            })
            .await;
        match answer {
            Ok(answer) => to_fs_error(answer),
            Err(e) => e,
        }
    }
}

/// The CGI as the manager gets it, and the `tried=` hosts to avoid with
/// the `triedrc=` reason folded into the options (as the reference does).
fn tried(cgi: &str, mut opts: SelectOpts) -> (Option<Bytes>, Option<Bytes>, SelectOpts) {
    let mut avoid = None;
    let mut rc = None;
    for kv in cgi.split('&') {
        match kv.split_once('=') {
            Some(("tried", v)) if !v.is_empty() => avoid = Some(Bytes::from(v.to_string())),
            Some(("triedrc", v)) => rc = v.rsplit(',').next().map(str::to_string),
            _ => {}
        }
    }
    if avoid.is_some() {
        opts |= match rc.as_deref() {
            Some("ioerr") => SelectOpts::TRY_IOER,
            Some("fserr") => SelectOpts::TRY_FSER,
            Some("srverr") => SelectOpts::TRY_IOER | SelectOpts::TRY_FSER,
            Some("resel") => SelectOpts::TRY_RSEL,
            Some("reseg") => SelectOpts::TRY_RSEG,
            _ => SelectOpts::EMPTY,
        };
    }
    let opaque = (!cgi.is_empty()).then(|| Bytes::from(cgi.to_string()));
    (opaque, avoid, opts)
}

fn wait(seconds: u32, message: &str) -> FsError {
    FsError::Wait {
        seconds,
        message: message.to_string(),
    }
}

/// The client's answer for a manager's answer to a `select`.
fn to_fs_error(answer: CmsResponse) -> FsError {
    match answer {
        CmsResponse::Redirect { port, host } => {
            let host = String::from_utf8_lossy(&host).into_owned();
            let (host, opaque) = match host.split_once('?') {
                Some((h, cgi)) => (h.to_string(), Some(cgi.to_string())),
                None => (host, None),
            };
            match u16::try_from(port) {
                Ok(port) if !host.is_empty() => FsError::Redirect { host, port, opaque },
                _ => FsError::new(
                    ErrorCode::SERVER_ERROR,
                    format!("the cluster manager redirected to {host}:{port}"),
                ),
            }
        }
        CmsResponse::Wait(seconds) => wait(seconds.max(1), "the cluster is looking for the file"),
        CmsResponse::Error { code, message } => {
            FsError::new(error_code(code), String::from_utf8_lossy(&message))
        }
        other => FsError::new(
            ErrorCode::SERVER_ERROR,
            format!("unexpected answer from the cluster manager: {other:?}"),
        ),
    }
}

/// `YErrorCode` to the client's error code (as the reference maps them
/// through errno, XrdCmsParser.cc: `kYR_RWConflict` is `EEXIST`, so an rm
/// or mv of a file a read-only member also holds is `kXR_ItExists`, which
/// the stock `xrdfs` prints as "file exists").
fn error_code(code: YError) -> ErrorCode {
    match code {
        YError::ENOENT | YError::EPERM => ErrorCode::NOT_FOUND,
        YError::EACCES => ErrorCode::NOT_AUTHORIZED,
        YError::EINVAL => ErrorCode::ARG_INVALID,
        YError::EIO => ErrorCode::IO_ERROR,
        YError::ENOMEM => ErrorCode::NO_MEMORY,
        YError::ENOSPC => ErrorCode::NO_SPACE,
        YError::ENAMETOOLONG => ErrorCode::ARG_TOO_LONG,
        YError::EISDIR => ErrorCode::IS_DIRECTORY,
        YError::RW_CONFLICT => ErrorCode::ITEM_EXISTS,
        YError::NO_REPLICAS => ErrorCode::NO_REPLICAS,
        YError::FS_ERROR => ErrorCode::FS_ERROR,
        _ => ErrorCode::SERVER_ERROR,
    }
}

/// The file type of a [`Redirector`]: it never opens one.
#[derive(Debug)]
pub enum NoFile {}

impl File for NoFile {
    async fn read_at(&self, _: u64, _: usize) -> FsResult<Bytes> {
        match *self {}
    }
    async fn write_at(&self, _: u64, _: Bytes) -> FsResult<()> {
        match *self {}
    }
    async fn stat(&self) -> FsResult<StatInfo> {
        match *self {}
    }
}

impl FileSystem for Redirector {
    type File = NoFile;

    const REDIRECTOR: bool = true;

    async fn open(&self, _: &Caller, path: &str, mode: OpenMode, cgi: &str) -> FsResult<NoFile> {
        let opts = if mode.truncate {
            SelectOpts::TRUNC
        } else if mode.create_new {
            SelectOpts::CREATE
        } else {
            SelectOpts::EMPTY
        } | if mode.write || mode.append || mode.create_new || mode.truncate {
            SelectOpts::WRITE
        } else {
            SelectOpts::READ
        };
        Err(self.select(path, opts, cgi).await)
    }

    async fn stat(&self, _: &Caller, path: &str) -> FsResult<StatInfo> {
        Err(self
            .select(path, SelectOpts::STAT | SelectOpts::READ, "")
            .await)
    }

    async fn dirlist(&self, _: &Caller, path: &str, _: bool) -> FsResult<Vec<DirEntry>> {
        Err(self
            .select(path, SelectOpts::READ | SelectOpts::METAOP, "")
            .await)
    }

    async fn mkdir(&self, _: &Caller, path: &str, _: u32, _: bool) -> FsResult<()> {
        let opts = SelectOpts::WRITE | SelectOpts::CREATE | SelectOpts::METAOP;
        Err(self.select(path, opts, "").await)
    }

    async fn rm(&self, _: &Caller, path: &str) -> FsResult<()> {
        Err(self
            .select(path, SelectOpts::WRITE | SelectOpts::METAOP, "")
            .await)
    }

    async fn rmdir(&self, _: &Caller, path: &str) -> FsResult<()> {
        Err(self
            .select(path, SelectOpts::WRITE | SelectOpts::METAOP, "")
            .await)
    }

    async fn mv(&self, _: &Caller, from: &str, _: &str) -> FsResult<()> {
        Err(self
            .select(from, SelectOpts::WRITE | SelectOpts::METAOP, "")
            .await)
    }

    async fn chmod(&self, _: &Caller, path: &str, _: u32) -> FsResult<()> {
        Err(self
            .select(path, SelectOpts::WRITE | SelectOpts::METAOP, "")
            .await)
    }

    async fn truncate(&self, _: &Caller, path: &str, _: u64) -> FsResult<()> {
        Err(self.select(path, SelectOpts::WRITE, "").await)
    }

    async fn checksum(
        &self,
        _: &Caller,
        path: &str,
        _: Option<&str>,
    ) -> FsResult<xroot_proto::response::ChecksumAnswer> {
        Err(self.select(path, SelectOpts::READ, "").await)
    }

    async fn locate(&self, _: &Caller, path: &str, refresh: bool) -> FsResult<Option<Bytes>> {
        let opts = SelectOpts::IPV46
            | if refresh {
                SelectOpts::REFRESH
            } else {
                SelectOpts::EMPTY
            };
        let path = Bytes::copy_from_slice(path.as_bytes());
        let answer = self
            .ask(|| {
                CmsRequest::Locate(Select {
                    ident: Bytes::new(),
                    opts,
                    path: path.clone(),
                    opaque: None,
                    avoid: None,
                })
            })
            .await?;
        match answer {
            CmsResponse::Data(text) => Ok(Some(text)),
            other => Err(to_fs_error(other)),
        }
    }
}

/// Holds one manager link until the [`Redirector`] is dropped: logs in as
/// a director, passes requests out and answers back, logs in again after
/// a failure (waiting as a data server does).
async fn hold(
    m: Arc<Manager>,
    cfg: ClusterConfig,
    mut outgoing: mpsc::Receiver<BytesMut>,
    mut stopped: watch::Receiver<()>,
) {
    let mut wait_next = cfg.reconnect_min;
    let mut failures = 0u64;
    loop {
        let result = tokio::select! {
            r = link(&m, &cfg, &mut outgoing) => r,
            _ = stopped.changed() => return,
        };
        m.ready.store(false, Ordering::Relaxed);
        // whoever waits learns the link is gone
        m.pending.lock().unwrap().clear();
        match result {
            Ok(()) => {
                wait_next = cfg.reconnect_min;
                failures = 0;
                tracing::warn!(manager = %m.addr, "cluster: redirector link to manager closed");
            }
            Err(e) => {
                failures += 1;
                if failures == 1 || failures.is_multiple_of(10) {
                    tracing::warn!(manager = %m.addr, failures, "cluster: redirector cannot reach manager: {e}");
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait_next) => {}
            _ = stopped.changed() => return,
        }
        wait_next = (wait_next * 2).min(cfg.reconnect_max);
    }
}

/// One director connection. `Ok` when it ran and then closed; `Err` when
/// it could not log in.
async fn link(
    m: &Manager,
    cfg: &ClusterConfig,
    outgoing: &mut mpsc::Receiver<BytesMut>,
) -> Result<(), String> {
    let stream = timeout(cfg.login_timeout, TcpStream::connect(&m.addr))
        .await
        .map_err(|_| "connect timed out".to_string())?
        .map_err(|e| format!("cannot connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let host = super::member::host_name(cfg);
    let mut login = Login::new(LoginMode::DIRECTOR);
    login.hold_time = std::process::id();
    login.env_cgi = Some(format!("myHN={host}").into());
    let mut out = BytesMut::new();
    CmsRequest::Login(login)
        .encode(0, &mut out)
        .map_err(|e| e.to_string())?;
    wr.write_all(&out).await.map_err(|e| e.to_string())?;
    let mut buf = BytesMut::with_capacity(4096);
    let mut dec = CmsDecoder::new();
    let next = |buf: &mut BytesMut, dec: &mut CmsDecoder| dec.decode(buf);
    let reply = timeout(cfg.login_timeout, async {
        loop {
            if let Some(f) = next(&mut buf, &mut dec).map_err(|e| e.to_string())? {
                return Ok::<CmsFrame, String>(f);
            }
            if rd.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                return Err("the manager closed the link during login".to_string());
            }
        }
    })
    .await
    .map_err(|_| "login timed out".to_string())??;
    let suspended = match RrCode(reply.header.code) {
        RrCode::LOGIN => match CmsRequest::decode(&reply).map_err(|e| e.to_string())? {
            CmsRequest::Login(l) => l.mode.contains(LoginMode::SUSPEND),
            _ => false,
        },
        code if RespCode(code.0) == RespCode::ERROR => {
            return Err(format!(
                "login refused: {:?}",
                CmsResponse::decode(&reply).map_err(|e| e.to_string())?
            ))
        }
        other => return Err(format!("unexpected login reply {other}")),
    };
    m.ready.store(!suspended, Ordering::Relaxed);
    tracing::info!(manager = %m.addr, suspended, "cluster: redirector connected to manager");
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(frame) = frame else { return Ok(()) };
                if wr.write_all(&frame).await.is_err() {
                    return Ok(());
                }
            }
            n = rd.read_buf(&mut buf) => {
                match n {
                    Ok(0) | Err(_) => return Ok(()),
                    Ok(_) => {}
                }
                loop {
                    let frame = match dec.decode(&mut buf) {
                        Ok(Some(f)) => f,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(manager = %m.addr, "cluster: bad frame from manager: {e}");
                            return Ok(());
                        }
                    };
                    answer(m, &frame, &mut wr).await;
                }
            }
        }
    }
}

/// Routes one frame from the manager: an answer to its waiting request,
/// a status change, or a ping.
async fn answer(m: &Manager, frame: &CmsFrame, wr: &mut tokio::net::tcp::OwnedWriteHalf) {
    let h = frame.header;
    if h.modifier & xroot_proto::cms::codes::ASYNC == 0 {
        match RrCode(h.code) {
            RrCode::STATUS => {
                if h.modifier & status::SUSPEND != 0 {
                    m.ready.store(false, Ordering::Relaxed);
                } else if h.modifier & status::RESUME != 0 {
                    m.ready.store(true, Ordering::Relaxed);
                }
                return;
            }
            RrCode::PING => {
                let mut out = BytesMut::new();
                let _ = CmsRequest::Pong.encode(0, &mut out);
                let _ = wr.write_all(&out).await;
                return;
            }
            RrCode::PONG => return,
            _ => {}
        }
    }
    let Ok(response) = CmsResponse::decode(frame) else {
        return;
    };
    let mut pending = m.pending.lock().unwrap();
    let Some(tx) = pending.remove(&h.streamid) else {
        tracing::debug!(manager = %m.addr, id = h.streamid, "cluster: answer to no request");
        return;
    };
    if let CmsResponse::WaitResp(later) = response {
        // the real answer comes with streamid `later`: wait for it there
        pending.insert(later, tx.clone());
    }
    let _ = tx.try_send(response);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tried_hosts_go_to_the_manager() {
        let (opaque, avoid, opts) = tried("tried=a,b&triedrc=ioerr&x=1", SelectOpts::READ);
        assert_eq!(avoid.as_deref(), Some(&b"a,b"[..]));
        assert!(opts.contains(SelectOpts::TRY_IOER | SelectOpts::READ));
        assert_eq!(opaque.as_deref(), Some(&b"tried=a,b&triedrc=ioerr&x=1"[..]));
        let (opaque, avoid, opts) = tried("", SelectOpts::READ);
        assert_eq!((opaque, avoid, opts), (None, None, SelectOpts::READ));
    }

    #[test]
    fn manager_answers_map_to_the_clients() {
        let r = to_fs_error(CmsResponse::Redirect {
            port: 1095,
            host: Bytes::from_static(b"node1?x=1"),
        });
        assert!(
            matches!(r, FsError::Redirect { ref host, port: 1095, ref opaque }
            if host == "node1" && opaque.as_deref() == Some("x=1"))
        );
        assert!(matches!(
            to_fs_error(CmsResponse::Wait(3)),
            FsError::Wait { seconds: 3, .. }
        ));
        assert!(matches!(
            to_fs_error(CmsResponse::Error {
                code: YError::ENOENT,
                message: Bytes::from_static(b"No servers have the file")
            }),
            FsError::Error {
                code: ErrorCode::NOT_FOUND,
                ..
            }
        ));
        // a read-only member holds the file: EEXIST for the stock manager
        assert_eq!(
            to_fs_error(CmsResponse::Error {
                code: YError::RW_CONFLICT,
                message: Bytes::from_static(b"Unable to modify file; r/o copy already exists")
            }),
            FsError::new(
                ErrorCode::ITEM_EXISTS,
                "Unable to modify file; r/o copy already exists"
            )
        );
        assert!(matches!(
            to_fs_error(CmsResponse::Redirect {
                port: 70000,
                host: Bytes::from_static(b"h")
            }),
            FsError::Error {
                code: ErrorCode::SERVER_ERROR,
                ..
            }
        ));
    }
}
