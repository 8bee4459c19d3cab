//! The third-party-copy side of `kXR_open`, `kXR_sync` and `kXR_close`
//! ([`crate::tpc`]; PROTOCOL.md "Third-party copy"): with
//! [`Config::tpc`](crate::Config::tpc) set, an open's `tpc.*` CGI grants a
//! read (source), claims one (source) or orders a pull (destination); the
//! first sync on a destination starts its pull, the next waits for it; a
//! close or the session's end before it succeeded removes its file.
//! Without `Config::tpc`, the CGI is ignored as any other.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::OwnedSemaphorePermit;
use xroot_proto::response::Response;
use xroot_proto::tpc::{self, TpcOpen};
use xroot_proto::ErrorCode;

use crate::admit::files::{tpc_cleaner, OpenFile};
use crate::auth::Caller;
use crate::fs::{File, FileSystem, FsError, FsResult};
use crate::handle::kit::{ok, Ctx};
use crate::shared::Shared;
use crate::tpc::host;
use crate::tpc::job::Destination;
use crate::tpc::rendezvous::{Claim, Grant};
use crate::tpc::{PullError, PullRequest, PullSink, TpcConfig};

/// Acts on the `tpc.*` CGI of an open of `path` before the file is
/// opened: records a grant, waits for and takes one, or returns the pull
/// a write open orders. Errors: the CGI's ([`tpc::TpcCgiError`], as
/// `kXR_ArgInvalid`), a pull order on a read open (`kXR_ArgInvalid`), the
/// grant table's, or an expired claim (`[3010] tpc authorization
/// expired`).
pub(crate) async fn before_open<F: FileSystem>(
    ctx: &Ctx<F>,
    path: &str,
    cgi: &str,
    write: bool,
) -> Result<Option<Arc<Destination>>, FsError> {
    let Some(cfg) = &ctx.config().tpc else {
        return Ok(None);
    };
    let order = tpc::parse(cgi).map_err(|e| FsError::new(ErrorCode::ARG_INVALID, e.to_string()))?;
    let session = &ctx.session;
    let ip = session.peer.ip().to_canonical();
    match order {
        None | Some(TpcOpen::Placement) => Ok(None),
        Some(TpcOpen::Grant { key, dst, ttl }) => {
            let ttl = ttl.map_or(cfg.ttl, |s| {
                std::time::Duration::from_secs(s.into()).min(cfg.max_ttl.max(cfg.ttl))
            });
            let grant = Grant {
                user: session.user.clone(),
                pid: session.login_pid,
                ip,
                host: host::name_of(ip).await,
                dst: host::addresses(&dst).await,
                path: path.to_string(),
                expires: Instant::now() + ttl,
            };
            ctx.shared.rendezvous.grant(&key, grant)?;
            Ok(None)
        }
        Some(TpcOpen::Claim { key, org }) => {
            let org_ips = host::addresses(&org.host).await;
            let claim = Claim {
                key: &key,
                org: &org,
                org_ips: &org_ips,
                path,
                from: ip,
            };
            ctx.shared.rendezvous.claim(&claim, cfg.ttl).await?;
            Ok(None)
        }
        Some(TpcOpen::Pull(order)) => {
            if !write {
                return Err(FsError::new(
                    ErrorCode::ARG_INVALID,
                    "tpc destination must be opened for writing",
                ));
            }
            let org = tpc::Origin {
                user: session.user.clone(),
                pid: session.login_pid,
                host: host::name_of(ip).await,
            };
            let lfn = order.lfn.as_deref().unwrap_or(path);
            let url = format!(
                "{}://{}/{}?{}",
                order.spr,
                order.src,
                lfn,
                tpc::claim_cgi(&order.key, &org, order.scgi.as_deref())
            );
            let request = PullRequest {
                url,
                streams: order.streams,
                chunk: cfg.chunk(order.streams),
                size: order.size,
            };
            Ok(Some(Arc::new(Destination::new(request, order.cks))))
        }
    }
}

/// Whether `kXR_sync` on `f` waits for a started pull: it is answered with
/// `kXR_waitresp` at once, as the stock does.
pub(crate) fn sync_waits<T>(f: &OpenFile<T>) -> bool {
    f.tpc.as_ref().is_some_and(|d| d.started())
}

/// `kXR_sync` on a TPC destination: the first starts the pull and is
/// answered `kXR_ok`; a later one is answered with the pull's outcome.
pub(crate) async fn sync<F: FileSystem>(
    ctx: &Ctx<F>,
    f: &Arc<OpenFile<F::File>>,
    d: &Arc<Destination>,
) -> Result<Response, FsError> {
    let started = d.start(|| {
        // a free turn is taken now, so that pulls started in turn run in turn
        let turn = ctx.shared.tpc_jobs.clone().try_acquire_owned().ok();
        let job = pull(
            ctx.shared.clone(),
            ctx.caller().clone(),
            f.clone(),
            d.clone(),
            turn,
        );
        tokio::spawn(job).abort_handle()
    });
    if started {
        return Ok(ok());
    }
    d.outcome().await.map(|()| ok())
}

/// Runs one pull, in its turn among the server's pulls (`turn`, else it
/// waits for one, [`TpcConfig::max_jobs`]): the bytes into the file, then
/// the checksum check when one was asked for; a failure removes the file.
async fn pull<F: FileSystem>(
    shared: Arc<Shared<F>>,
    caller: Caller,
    f: Arc<OpenFile<F::File>>,
    d: Arc<Destination>,
    turn: Option<OwnedSemaphorePermit>,
) {
    let Some(cfg) = shared.config.tpc.clone() else {
        return;
    };
    let turn = match turn {
        Some(t) => Ok(t),
        None => shared.tpc_jobs.clone().acquire_owned().await,
    };
    let outcome = match turn {
        Ok(_turn) => copy(&shared, &cfg, &caller, &f, &d).await,
        Err(_) => Err(FsError::new(ErrorCode::SERVER_ERROR, "tpc jobs closed")),
    };
    if let Err(e) = &outcome {
        tracing::info!(path = %f.path, src = %d.request.url, "tpc pull failed: {e}");
        let _ = shared.fs.rm(&tpc_cleaner(), &f.path).await;
    }
    d.finish(outcome);
}

async fn copy<F: FileSystem>(
    shared: &Shared<F>,
    cfg: &TpcConfig,
    caller: &Caller,
    f: &OpenFile<F::File>,
    d: &Destination,
) -> Result<(), FsError> {
    let sink = Sink(&f.file);
    let n = cfg
        .puller
        .pull(&d.request, &sink)
        .await
        .map_err(from_pull)?;
    tracing::debug!(path = %f.path, bytes = n, "tpc pull done");
    f.file.sync().await?;
    let Some(cks) = &d.cks else {
        return Ok(());
    };
    let expected = match &cks.value {
        Some(v) => v.clone(),
        None => cfg
            .puller
            .checksum(&d.request, &cks.kind)
            .await
            .map_err(from_pull)?,
    };
    let ours = shared.fs.checksum(caller, &f.path, Some(&cks.kind)).await?;
    let ours = String::from_utf8_lossy(&ours.value).to_ascii_lowercase();
    if ours.trim_start_matches('0') != expected.trim_start_matches('0') {
        return Err(FsError::new(
            ErrorCode::CHKSUM_ERR,
            format!(
                "tpc {} checksum mismatch: source {expected}, copy {ours}",
                cks.kind
            ),
        ));
    }
    Ok(())
}

fn from_pull(e: PullError) -> FsError {
    FsError::new(e.code, e.message)
}

/// The destination file as a [`PullSink`].
struct Sink<'a, T>(&'a T);

impl<T: File> PullSink for Sink<'_, T> {
    fn write_at(&self, offset: u64, data: Bytes) -> BoxFuture<'_, FsResult<()>> {
        Box::pin(self.0.write_at(offset, data))
    }
}
