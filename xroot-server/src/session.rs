//! A logged-in session: who it is for, its main link and bound substreams
//! (`kXR_bind`, up to 15, by `pathid`), its open files, and its end (files
//! closed, `kXR_posc` files removed, locks released) once its main link has
//! closed and its requests are done.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;
use xroot_proto::limits::MAX_BOUND_STREAMS;

use crate::admit::files::{FileTable, OpenFile};
use crate::auth::{Caller, Identity};
use crate::fs::FileSystem;
use crate::net::writer::LinkWriter;
use crate::observe::monitor::{FileCounters, SessionEvent, SessionMonitor};

/// Set once to close a link at once; any number of tasks can watch it.
pub(crate) type Kill = Arc<watch::Sender<bool>>;

/// Resolves once `kill` is set.
pub(crate) async fn killed(kill: &Kill) {
    let _ = kill.subscribe().wait_for(|k| *k).await;
}

/// One link of a session, as the session reaches it.
#[derive(Debug, Clone)]
struct Stream {
    writer: LinkWriter,
    kill: Kill,
}

/// A logged-in session: its main link, its bound substreams and its files.
pub(crate) struct Session<F: FileSystem> {
    pub(crate) sessid: [u8; 16],
    pub(crate) peer: SocketAddr,
    pub(crate) user: String,
    /// The process id and the CGI the client sent in `kXR_login`.
    pub(crate) login_pid: i32,
    pub(crate) login_cgi: String,
    /// The session's monitoring, once it logged in with a
    /// [`crate::Config::monitor`] set.
    monitor: OnceLock<SessionMonitor>,
    /// Ended by `kXR_endsess` from another session.
    killed: AtomicBool,
    pub(crate) files: FileTable<F::File>,
    /// Login done and, if required, authentication too.
    pub(crate) authenticated: AtomicBool,
    /// Who the session is for, once authenticated (see [`Session::caller`]).
    caller: OnceLock<Caller>,
    /// The session is ending: no more binds.
    ending: AtomicBool,
    /// Set once the session has ended: its requests done, its files
    /// closed and unlocked.
    ended: watch::Sender<bool>,
    /// Slot 0 is the main link, 1..=15 the bound substreams.
    streams: Mutex<Vec<Option<Stream>>>,
}

impl<F: FileSystem> Session<F> {
    pub(crate) fn new(
        sessid: [u8; 16],
        peer: SocketAddr,
        user: String,
        login: (i32, String),
        main: LinkWriter,
        kill: Kill,
    ) -> Session<F> {
        let mut streams = vec![None; MAX_BOUND_STREAMS + 1];
        streams[0] = Some(Stream { writer: main, kill });
        Session {
            sessid,
            peer,
            user,
            login_pid: login.0,
            login_cgi: login.1,
            monitor: OnceLock::new(),
            killed: AtomicBool::new(false),
            files: FileTable::new(),
            authenticated: AtomicBool::new(false),
            caller: OnceLock::new(),
            ending: AtomicBool::new(false),
            ended: watch::Sender::new(false),
            streams: Mutex::new(streams),
        }
    }

    /// Who the session's requests are for: the identity its authentication
    /// established, or, without authentication, the user of its login.
    pub(crate) fn caller(&self) -> &Caller {
        self.caller.get_or_init(|| Caller {
            identity: Identity::new("", self.user.as_str()),
            peer: self.peer,
        })
    }

    /// Records the identity authentication established; the first one
    /// stays (a session authenticates once).
    pub(crate) fn authenticated_as(&self, identity: Identity) {
        let _ = self.caller.set(Caller {
            identity,
            peer: self.peer,
        });
        self.authenticated.store(true, Ordering::Release);
    }

    /// The link of `pathid` (1..=15) if it is bound and open.
    pub(crate) fn stream(&self, pathid: u8) -> Option<LinkWriter> {
        let streams = self.streams.lock().unwrap();
        let s = streams.get(pathid as usize)?.as_ref()?;
        (!s.writer.is_closed()).then(|| s.writer.clone())
    }

    /// Binds a substream in the lowest free slot; `None` when all 15 are
    /// taken or the session is ending.
    pub(crate) fn bind(&self, writer: LinkWriter, kill: Kill) -> Option<u8> {
        let mut streams = self.streams.lock().unwrap();
        if self.ending.load(Ordering::Acquire) {
            return None;
        }
        let slot = (1..streams.len()).find(|&i| streams[i].is_none())?;
        streams[slot] = Some(Stream { writer, kill });
        Some(slot as u8)
    }

    pub(crate) fn unbind(&self, pathid: u8) {
        if let Some(s) = self.streams.lock().unwrap().get_mut(pathid as usize) {
            *s = None;
        }
    }

    /// Asks the main link to close at once (`kXR_endsess` from elsewhere):
    /// it reads no more, drops its answers, and the session ends when its
    /// requests in flight have.
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.ending.store(true, Ordering::Release);
        if let Some(Some(main)) = self.streams.lock().unwrap().first() {
            main.kill.send_replace(true);
        }
    }

    /// Tells whoever waits in [`Session::ended`] that the session has
    /// ended.
    pub(crate) fn set_ended(&self) {
        self.ended.send_replace(true);
    }

    /// Waits until the session has ended (see the module docs).
    pub(crate) async fn ended(&self) {
        let _ = self.ended.subscribe().wait_for(|e| *e).await;
    }

    /// The main link ended and its requests are done: closes the
    /// substreams, then every file the client left open (removing those
    /// opened with `kXR_posc`) and releases their locks.
    pub(crate) async fn end(&self, fs: &F) {
        self.ending.store(true, Ordering::Release);
        let streams: Vec<Stream> = self.streams.lock().unwrap().drain(..).flatten().collect();
        for s in streams.iter().skip(1) {
            s.kill.send_replace(true);
        }
        for f in self.files.drain() {
            let _ = f.close(fs).await;
            self.monitor_close(&f, true);
            if f.posc {
                match fs.rm(self.caller(), &f.path).await {
                    Ok(()) => tracing::debug!(path = %f.path, "posc: removed, never closed"),
                    Err(e) => tracing::warn!(path = %f.path, "posc: cannot remove: {e}"),
                }
            }
            f.unlock();
        }
        if let Some(m) = self.monitor.get() {
            m.event(&SessionEvent::Logout {
                secs: m.since.elapsed().as_secs().min(u64::from(u32::MAX)) as u32,
                forced: self.killed.load(Ordering::Acquire),
            });
        }
    }

    /// The session's monitoring, when it has one.
    pub(crate) fn monitor(&self) -> Option<&SessionMonitor> {
        self.monitor.get()
    }

    /// Sets the session's monitoring (once).
    pub(crate) fn set_monitor(&self, m: SessionMonitor) {
        let _ = self.monitor.set(m);
    }

    /// Tells the monitor `f` closed, when both are monitored.
    pub(crate) fn monitor_close(&self, f: &OpenFile<F::File>, forced: bool) {
        if let (Some(m), Some(c)) = (self.monitor.get(), &f.counters) {
            m.event(&SessionEvent::Close { file: c, forced });
        }
    }

    /// Counts a `kXR_read` (`pg`: a `kXR_pgread`) of `len` bytes asked at
    /// `offset` on `f` and tells the monitor.
    pub(crate) fn monitor_read(&self, f: &OpenFile<F::File>, offset: u64, len: u32, pg: bool) {
        if let (Some(m), Some(c)) = (self.monitor.get(), &f.counters) {
            match pg {
                true => c.pgread(len),
                false => c.read(len),
            }
            m.event(&SessionEvent::Read {
                file: c.id,
                offset,
                len,
            });
        }
    }

    /// Counts a write (`pg`: a `kXR_pgwrite`, `len` with its crc32c).
    pub(crate) fn monitor_write(&self, f: &OpenFile<F::File>, offset: u64, len: u32, pg: bool) {
        if let (Some(m), Some(c)) = (self.monitor.get(), &f.counters) {
            match pg {
                true => c.pgwrite(len),
                false => c.write(len),
            }
            m.event(&SessionEvent::Write {
                file: c.id,
                offset,
                len,
            });
        }
    }

    /// Counts the `count` elements of `len` bytes of one vector read on
    /// `c` (`seq`: the vector read's sequence number).
    pub(crate) fn monitor_readv(&self, c: &FileCounters, count: u16, len: u32, seq: u8) {
        if let Some(m) = self.monitor.get() {
            c.readv(len, count);
            m.event(&SessionEvent::Readv {
                file: c.id,
                count,
                len,
                seq,
            });
        }
    }
}
