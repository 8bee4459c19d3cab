//! One data server's link to one manager: log in, answer, report, and
//! come back after failures ([`run`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinSet;
use tokio::time::timeout;
use xroot_proto::cms::codes::status;
use xroot_proto::cms::{
    Avail, CmsDecoder, CmsFrame, CmsRequest, CmsResponse, Have, Load, Login, LoginMode, RrCode,
    Status,
};
use xroot_proto::DecodeError;

use super::config::ClusterConfig;
use super::events::Event;
use crate::auth::Caller;
use crate::fs::FileSystem;
use crate::handle::path;
use crate::shared::Shared;

/// Why a link to a manager ended.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("bad frame from the manager: {0}")]
    Decode(#[from] DecodeError),
    #[error("{0} timed out")]
    Timeout(&'static str),
    #[error("login refused: {0}")]
    Refused(String),
    #[error("unexpected login reply {0}")]
    Unexpected(String),
    #[error("the manager closed the link")]
    Closed,
    #[error("the manager was silent for {0:?}")]
    Silent(Duration),
}

/// How a link ended without an error.
enum End {
    /// The server is shutting down.
    Shutdown,
    /// The manager sent `disc`.
    Disconnected,
    /// The manager sent `try`: these managers instead.
    Try(Vec<String>),
}

/// Holds this server's membership with the manager at `manager` until the
/// server shuts down: logs in, answers, and after a failure logs in again,
/// waiting [`ClusterConfig::reconnect_min`] doubling up to
/// [`ClusterConfig::reconnect_max`]. A `try` from the manager sends the
/// next attempts to the managers it lists, then back to `manager`.
pub(crate) async fn run<F: FileSystem>(shared: Arc<Shared<F>>, manager: String) {
    let Some(cfg) = shared.config.cluster.clone() else {
        return;
    };
    let mut shutdown = shared.monitor.shutdown_signal();
    let mut events = shared.cluster_events.subscribe();
    let mut wait = cfg.reconnect_min;
    let mut redirected: Vec<String> = Vec::new();
    let mut failures = 0u64;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let target = if redirected.is_empty() {
            manager.clone()
        } else {
            redirected.remove(0)
        };
        let mut joined = false;
        let outcome = link(
            &shared,
            &cfg,
            &target,
            &mut events,
            &mut shutdown,
            &mut joined,
        )
        .await;
        if joined {
            wait = cfg.reconnect_min;
            failures = 0;
        }
        match outcome {
            Ok(End::Shutdown) => return,
            Ok(End::Try(hosts)) => {
                tracing::info!(manager = %target, to = ?hosts, "cluster: manager redirects this node");
                redirected = hosts;
                continue;
            }
            Ok(End::Disconnected) => {
                tracing::info!(manager = %target, "cluster: manager asked this node to disconnect");
            }
            Err(e) => {
                failures += 1;
                // a manager that stays down is logged at the first failure
                // and then every tenth, not at each attempt
                if joined || failures == 1 || failures.is_multiple_of(10) {
                    tracing::warn!(manager = %target, failures, "cluster: link to manager lost: {e}");
                } else {
                    tracing::debug!(manager = %target, failures, "cluster: {e}");
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => return,
        }
        wait = (wait * 2).min(cfg.reconnect_max);
    }
}

/// One connection to a manager, from connect to its end.
async fn link<F: FileSystem>(
    shared: &Arc<Shared<F>>,
    cfg: &ClusterConfig,
    target: &str,
    events: &mut broadcast::Receiver<Event>,
    shutdown: &mut watch::Receiver<bool>,
    joined: &mut bool,
) -> Result<End, LinkError> {
    let stream = timeout(cfg.login_timeout, TcpStream::connect(target))
        .await
        .map_err(|_| LinkError::Timeout("connecting"))?
        .map_err(LinkError::Connect)?;
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut reader = FrameReader::new(rd);

    let login = login(shared, cfg).await;
    send(&mut wr, &CmsRequest::Login(login), 0, cfg).await?;
    let reply = timeout(cfg.login_timeout, reader.next())
        .await
        .map_err(|_| LinkError::Timeout("login"))??;
    match RrCode(reply.header.code) {
        RrCode::LOGIN => {
            CmsRequest::decode(&reply)?;
        }
        RrCode::TRY => {
            if let CmsRequest::Try(t) = CmsRequest::decode(&reply)? {
                return Ok(End::Try(t.hosts().map(str::to_string).collect()));
            }
        }
        RrCode(1) => {
            // kYR_error: a u32 code, then the reason
            let why = match CmsResponse::decode(&reply)? {
                CmsResponse::Error { code, message } => {
                    format!("{code}: {}", String::from_utf8_lossy(&message))
                }
                other => format!("{other:?}"),
            };
            return Err(LinkError::Refused(why));
        }
        RrCode::XAUTH => {
            return Err(LinkError::Refused(
                "the manager asks for cmsd authentication (kYR_xauth), which this node does not support".into(),
            ))
        }
        other => return Err(LinkError::Unexpected(other.to_string())),
    }
    *joined = true;
    tracing::info!(manager = %target, "cluster: logged into manager");

    let caller = Caller::local("cmsd");
    let mut lookups: JoinSet<Option<(u32, Bytes)>> = JoinSet::new();
    let mut meter = Meter::new();
    loop {
        tokio::select! {
            frame = timeout(cfg.silence_timeout, reader.next()) => {
                let frame = frame.map_err(|_| LinkError::Silent(cfg.silence_timeout))??;
                let request = match CmsRequest::decode(&frame) {
                    Ok(r) => r,
                    Err(e) => {
                        // a malformed request is dropped, as the stock
                        // node does; the link stays
                        tracing::warn!(manager = %target, "cluster: ignoring a malformed request: {e}");
                        continue;
                    }
                };
                match request {
                    CmsRequest::Ping => send(&mut wr, &CmsRequest::Pong, 0, cfg).await?,
                    CmsRequest::Usage => {
                        let load = meter.load(shared, &caller).await;
                        send(&mut wr, &CmsRequest::Load(load), 0, cfg).await?
                    }
                    CmsRequest::Space => {
                        let (free_mb, util) = free_space(shared, &caller).await;
                        send(&mut wr, &CmsRequest::Avail(Avail { free_mb, util }), 0, cfg).await?
                    }
                    CmsRequest::State(state) => {
                        if state.modifier & xroot_proto::cms::codes::state::NORESP != 0 {
                            continue;
                        }
                        while lookups.len() >= cfg.max_lookups.max(1) {
                            if let Some(Ok(Some((id, path)))) = lookups.join_next().await {
                                send(&mut wr, &CmsRequest::Have(Have::online(path)), id, cfg).await?;
                            }
                        }
                        let shared = shared.clone();
                        let caller = caller.clone();
                        let id = frame.header.streamid;
                        lookups.spawn(async move {
                            let target = path::payload_target("Locating", &state.path).ok()?;
                            shared.fs.stat(&caller, &target.path).await.ok()?;
                            Some((id, state.path))
                        });
                    }
                    CmsRequest::Disc => return Ok(End::Disconnected),
                    CmsRequest::Try(t) => {
                        return Ok(End::Try(t.hosts().map(str::to_string).collect()));
                    }
                    other => {
                        tracing::debug!(manager = %target, code = %other.code(), "cluster: request not handled by a data server");
                    }
                }
            }
            Some(done) = lookups.join_next(), if !lookups.is_empty() => {
                if let Ok(Some((id, path))) = done {
                    send(&mut wr, &CmsRequest::Have(Have::online(path)), id, cfg).await?;
                }
            }
            event = events.recv() => match event {
                Ok(Event::Have(p)) => send(&mut wr, &CmsRequest::Have(Have::online(p)), 0, cfg).await?,
                Ok(Event::Gone(p)) => send(&mut wr, &CmsRequest::Gone(p.into()), 0, cfg).await?,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!(missed = n, "cluster: fell behind on have/gone events");
                }
                Err(broadcast::error::RecvError::Closed) => {}
            },
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => {
                // stop being selected before the links close
                let suspend = CmsRequest::Status(Status { modifier: status::SUSPEND });
                let _ = send(&mut wr, &suspend, 0, cfg).await;
                let _ = wr.shutdown().await;
                return Ok(End::Shutdown);
            }
        }
    }
}

/// The login this node sends: a server without staging that takes
/// permanent redirects, its pid, space, data port, paths and host name.
async fn login<F: FileSystem>(shared: &Arc<Shared<F>>, cfg: &ClusterConfig) -> Login {
    let caller = Caller::local("cmsd");
    let (free_mb, util) = free_space(shared, &caller).await;
    let total_gb = match shared.fs.stat_vfs(&caller, "/").await {
        Ok(v) if v.util_rw < 100 && v.util_rw >= 0 && v.free_rw > 0 => {
            // total from free and utilisation: free = total * (100 - util) / 100
            (v.free_rw as u64 * 100 / (100 - v.util_rw as u64) / 1024) as u32
        }
        _ => 0,
    };
    let host = host_name(cfg);
    let port = cfg
        .data_port
        .unwrap_or_else(|| shared.monitor.local_addr.port());
    let mut l = Login::new(LoginMode::SERVER | LoginMode::NOSTAGE | LoginMode::BLREDIR);
    l.hold_time = std::process::id();
    l.total_gb = total_gb;
    l.free_mb = free_mb;
    l.fs_num = 1;
    l.fs_util = util.min(100) as u16;
    l.data_port = port;
    l.sid = Some(format!("s-xroot{port}@{host} xroot").into());
    l.paths = Some(cfg.paths.join("\n").into());
    l.env_cgi = Some(format!("myHN={host}").into());
    l
}

/// The largest free space (MB) and the utilisation (percent) of the
/// backend, from [`FileSystem::stat_vfs`] of `/`; `(0, 0)` when it cannot
/// tell (a manager then sends no writes here).
async fn free_space<F: FileSystem>(shared: &Arc<Shared<F>>, caller: &Caller) -> (u32, u32) {
    match shared.fs.stat_vfs(caller, "/").await {
        Ok(v) => (
            v.free_rw.clamp(0, i64::from(u32::MAX)) as u32,
            v.util_rw.clamp(0, 100) as u32,
        ),
        Err(_) => (0, 0),
    }
}

pub(super) fn host_name(cfg: &ClusterConfig) -> String {
    cfg.host_name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string())
    })
}

/// Writes one request, within the silence timeout (a manager that does not
/// read is as gone as one that does not write).
async fn send(
    wr: &mut OwnedWriteHalf,
    request: &CmsRequest,
    streamid: u32,
    cfg: &ClusterConfig,
) -> Result<(), LinkError> {
    let mut out = BytesMut::new();
    request.encode(streamid, &mut out)?;
    timeout(cfg.silence_timeout, wr.write_all(&out))
        .await
        .map_err(|_| LinkError::Timeout("sending to the manager"))??;
    Ok(())
}

/// Whole frames off the manager's link. Its buffer holds at most one frame
/// (64 KiB by the 16-bit `datalen`) and what came with it.
struct FrameReader {
    rd: OwnedReadHalf,
    buf: BytesMut,
    dec: CmsDecoder,
}

impl FrameReader {
    fn new(rd: OwnedReadHalf) -> Self {
        FrameReader {
            rd,
            buf: BytesMut::with_capacity(4096),
            dec: CmsDecoder::new(),
        }
    }

    async fn next(&mut self) -> Result<CmsFrame, LinkError> {
        loop {
            if let Some(frame) = self.dec.decode(&mut self.buf)? {
                return Ok(frame);
            }
            if self.rd.read_buf(&mut self.buf).await? == 0 {
                self.dec.decode_eof(&self.buf)?;
                return Err(LinkError::Closed);
            }
        }
    }
}

/// The node's load for `usage` answers: this process's CPU since the last
/// answer, requests in flight against the server's limit, resident memory
/// against the machine's, and the backend's disk utilisation.
struct Meter {
    last: Option<(Instant, u64)>,
}

impl Meter {
    fn new() -> Self {
        Meter { last: None }
    }

    async fn load<F: FileSystem>(&mut self, shared: &Arc<Shared<F>>, caller: &Caller) -> Load {
        let (free_mb, util) = free_space(shared, caller).await;
        let now = Instant::now();
        let cpu_ticks = proc_cpu_ticks();
        let cpu = match (self.last, cpu_ticks) {
            (Some((then, before)), Some(ticks)) => {
                let hz = rustix::param::clock_ticks_per_second() as f64;
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
                let busy = ticks.saturating_sub(before) as f64 / hz;
                let wall = now.duration_since(then).as_secs_f64().max(1e-3);
                (busy / wall / cores * 100.0).round().clamp(0.0, 100.0) as u8
            }
            _ => 0,
        };
        if let Some(ticks) = cpu_ticks {
            self.last = Some((now, ticks));
        }
        let in_flight = shared.monitor.stats.snapshot().all.current;
        let limit = shared.config.max_requests.max(1) as u64;
        let xeq = (in_flight.saturating_mul(100) / limit).min(100) as u8;
        Load {
            loads: [cpu, 0, xeq, memory_percent(), 0, util.min(100) as u8],
            free_mb,
        }
    }
}

/// utime + stime of this process, in clock ticks (`/proc/self/stat`).
fn proc_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // the command name may hold spaces: count fields after its ')'
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory of this process as a percentage of the machine's.
fn memory_percent() -> u8 {
    let kb = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line.split_ascii_whitespace().nth(1)?.parse().ok()
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    match (kb(&status, "VmRSS:"), kb(&meminfo, "MemTotal:")) {
        (Some(rss), Some(total)) if total > 0 => (rss * 100 / total).min(100) as u8,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_figures_read() {
        assert!(proc_cpu_ticks().is_some());
        assert!(memory_percent() <= 100);
    }
}
