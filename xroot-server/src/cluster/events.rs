//! What request handlers tell the manager links: files created and removed
//! here ([`Events`]).

use tokio::sync::broadcast;

/// What the server tells its managers on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A file was created here.
    Have(String),
    /// A file was removed from here.
    Gone(String),
}

/// Where request handlers post [`Event`]s; the manager links take them.
/// Posting without a cluster costs a failed send to no receiver.
#[derive(Debug)]
pub(crate) struct Events(broadcast::Sender<Event>);

/// Events a manager link may fall behind by before it misses some (the
/// manager then learns of those files when it asks).
const EVENT_BACKLOG: usize = 1024;

impl Default for Events {
    fn default() -> Self {
        Events(broadcast::channel(EVENT_BACKLOG).0)
    }
}

impl Events {
    /// `path` was created here.
    pub(crate) fn have(&self, path: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(Event::Have(path.to_string()));
        }
    }

    /// `path` was removed from here.
    pub(crate) fn gone(&self, path: &str) {
        if self.0.receiver_count() > 0 {
            let _ = self.0.send(Event::Gone(path.to_string()));
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0.subscribe()
    }
}
