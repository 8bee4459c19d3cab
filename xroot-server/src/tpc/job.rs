//! A destination's pull, as its open file carries it: ordered by the open,
//! started by the first `kXR_sync`, awaited by the second, cancelled by a
//! close or the session's end before it finished (XrdOfsTPCJob, `do_Sync`
//! in XrdXrootdProtocol: the stock's first sync answers `kXR_ok` once the
//! copy program runs, the second `kXR_waitresp` and later the copy's
//! outcome).

use std::sync::Mutex;

use tokio::sync::watch;
use tokio::task::AbortHandle;
use xroot_proto::tpc::Checksum;

use crate::fs::FsError;
use crate::tpc::PullRequest;

/// Where a pull is.
#[derive(Debug)]
enum Stage {
    /// Ordered by the open, no sync yet.
    Ordered,
    /// Running (or done: its outcome is in `done`).
    Started(AbortHandle),
    /// Cancelled by a close or the session's end.
    Cancelled,
}

/// The pull an open ordered.
#[derive(Debug)]
pub(crate) struct Destination {
    /// What to pull.
    pub(crate) request: PullRequest,
    /// The checksum to verify afterwards (`tpc.cks`).
    pub(crate) cks: Option<Checksum>,
    stage: Mutex<Stage>,
    done: watch::Sender<Option<Result<(), FsError>>>,
}

impl Destination {
    /// A pull of `request`, not started.
    pub(crate) fn new(request: PullRequest, cks: Option<Checksum>) -> Destination {
        Destination {
            request,
            cks,
            stage: Mutex::new(Stage::Ordered),
            done: watch::Sender::new(None),
        }
    }

    /// Whether a sync has started the pull.
    pub(crate) fn started(&self) -> bool {
        matches!(*self.stage.lock().unwrap(), Stage::Started(_))
    }

    /// Starts the pull with `spawn` (which spawns it and returns its
    /// handle) if it was only ordered; whether this call started it.
    pub(crate) fn start(&self, spawn: impl FnOnce() -> AbortHandle) -> bool {
        let mut stage = self.stage.lock().unwrap();
        match *stage {
            Stage::Ordered => {
                *stage = Stage::Started(spawn());
                true
            }
            _ => false,
        }
    }

    /// Records the pull's outcome.
    pub(crate) fn finish(&self, outcome: Result<(), FsError>) {
        self.done.send_replace(Some(outcome));
    }

    /// The pull's outcome, once it has one.
    pub(crate) async fn outcome(&self) -> Result<(), FsError> {
        let mut rx = self.done.subscribe();
        let outcome = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        outcome.ok().flatten().unwrap_or_else(|| Err(cancelled()))
    }

    /// Stops the pull (a close or the session's end): whether it had not
    /// succeeded, so that its file must go.
    pub(crate) fn cancel(&self) -> bool {
        let mut stage = self.stage.lock().unwrap();
        if let Stage::Started(h) = &*stage {
            h.abort();
        }
        *stage = Stage::Cancelled;
        drop(stage);
        let succeeded = matches!(*self.done.borrow(), Some(Ok(())));
        if !succeeded {
            self.done.send_if_modified(|d| {
                let unset = d.is_none();
                if unset {
                    *d = Some(Err(cancelled()));
                }
                unset
            });
        }
        !succeeded
    }
}

/// The outcome of a pull stopped by the close of its file (or the end of
/// its session): `kXR_Cancelled` with the stock's text
/// (XrdOfsTPCJob.cc, the job's `Del`).
fn cancelled() -> FsError {
    FsError::new(
        xroot_proto::ErrorCode::CANCELLED,
        "destination file prematurely closed",
    )
}
