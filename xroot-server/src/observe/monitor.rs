//! The typed monitoring stream: what the server tells a
//! [`MonitorObserver`] about each session (its login, the files it opens,
//! their I/O, their closes with their counts, its logout), with the
//! dictionary ids and the counts the XRootD detailed monitoring stream
//! carries (PROTOCOL.md §17). [`crate::observe::udp`] turns it into the
//! stock server's UDP packets; a tool author can send it anywhere else.
//!
//! Set [`Config::monitor`](crate::Config::monitor). At each login (after
//! authentication, when the server requires it) the server calls
//! [`MonitorObserver::login`], which returns the session's own
//! [`SessionObserver`]; that one is told the session's events on the
//! tasks that serve its requests, so it must not block (append to a
//! buffer, count, hand to a channel). Ids come from one server-wide
//! counter from 1, taken by each login and each open, as the stock
//! server's `GetDictID`.
//!
//! What the file counts mean is the stock server's accounting
//! (`XrdXrootdFileStats.hh`), so that collectors see the same figures
//! from either server: a `kXR_read` counts the length it asked for when it
//! starts, a `kXR_pgread` its asked length, a `kXR_pgwrite` its whole
//! payload (data and crc32c), a vector read its element lengths.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::auth::Identity;

/// Told about each session; set in [`Config::monitor`](crate::Config::monitor).
pub trait MonitorObserver: Send + Sync + 'static {
    /// A session logged in (and authenticated, when required). Returns
    /// what is told about its events. Must not block.
    fn login(&self, login: &LoginRecord<'_>) -> Arc<dyn SessionObserver>;

    /// The server was bound to `addr` ([`Server::bind`](crate::Server::bind)),
    /// before any login: the port a monitor names the server by (its
    /// identification), known only now when the server was asked for port
    /// 0. The default does nothing.
    fn bound(&self, addr: SocketAddr) {
        let _ = addr;
    }

    /// A redirector sent a client elsewhere (`kXR_redirect`). Must not
    /// block. The default does nothing.
    fn redirect(&self, redirect: &RedirectRecord<'_>) {
        let _ = redirect;
    }
}

/// Told about one session's events, in the order they happened on it.
pub trait SessionObserver: Send + Sync + 'static {
    /// One event. Must not block.
    fn event(&self, event: &SessionEvent<'_>);
}

/// A login.
#[derive(Debug, Clone)]
pub struct LoginRecord<'a> {
    /// The session's dictionary id.
    pub user_id: u32,
    /// The client's address.
    pub peer: SocketAddr,
    /// The user name the client sent in `kXR_login`.
    pub login_user: &'a str,
    /// The process id it sent.
    pub pid: i32,
    /// The login CGI's `xrd.rn` (the client's release), when sent.
    pub release: Option<&'a str>,
    /// The login CGI's `xrd.appname`, when sent.
    pub app_name: Option<&'a str>,
    /// The login CGI's `xrd.info`, when sent.
    pub info: Option<&'a str>,
    /// Who authentication said the client is (`None` without an
    /// authentication protocol).
    pub identity: Option<&'a Identity>,
}

/// A redirect sent by a redirector.
#[derive(Debug, Clone)]
pub struct RedirectRecord<'a> {
    /// The redirected session's dictionary id (0 when not known).
    pub user_id: u32,
    /// The operation, as `xroot_proto::monitor::redir::op`.
    pub op: u8,
    /// The host the client was sent to.
    pub host: &'a str,
    /// The port.
    pub port: u16,
    /// The path the request named.
    pub path: &'a str,
}

/// An event of one session.
#[derive(Debug, Clone)]
pub enum SessionEvent<'a> {
    /// A file opened.
    Open {
        /// Its counts, updated as its I/O is done; keep a clone to read
        /// them while it is open (the stock's `xfr` records).
        file: &'a Arc<FileCounters>,
        /// The path the client named (without its CGI).
        path: &'a str,
        /// Its size when opened, bytes.
        size: u64,
        /// Opened for reading and writing.
        rw: bool,
    },
    /// A `kXR_read` or `kXR_pgread` started: the length it asked for.
    Read {
        /// The file's id.
        file: u32,
        /// Offset, bytes.
        offset: u64,
        /// Length asked, bytes.
        len: u32,
    },
    /// A vector read's elements on one file.
    Readv {
        /// The file's id.
        file: u32,
        /// Elements.
        count: u16,
        /// Bytes asked.
        len: u32,
        /// The session's vector-read sequence number (wrapping).
        seq: u8,
    },
    /// A write (`kXR_write`, `kXR_pgwrite` with its crc32c, an element of
    /// `kXR_writev`) started.
    Write {
        /// The file's id.
        file: u32,
        /// Offset, bytes.
        offset: u64,
        /// Length, bytes.
        len: u32,
    },
    /// A file closed, by the client or (`forced`) by its session's end.
    Close {
        /// Its counts, final.
        file: &'a FileCounters,
        /// Closed because the session ended.
        forced: bool,
    },
    /// The session ended; its files were closed before.
    Logout {
        /// Seconds it was logged in.
        secs: u32,
        /// Ended by `kXR_endsess` from another session.
        forced: bool,
    },
}

/// The counts of one open file (`XrdXrootdFileStats`), shared between the
/// server's requests and whoever holds it.
#[derive(Debug)]
pub struct FileCounters {
    /// The file's dictionary id.
    pub id: u32,
    stats: Mutex<FileStats>,
    moved: AtomicBool,
}

/// A snapshot of [`FileCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FileStats {
    /// Bytes of `kXR_read` asked.
    pub read: u64,
    /// Bytes of vector reads asked.
    pub readv: u64,
    /// Bytes written with `kXR_write` and `kXR_writev`.
    pub write: u64,
    /// `kXR_read` requests.
    pub reads: u32,
    /// Vector reads (per run of elements on this file).
    pub readvs: u32,
    /// `kXR_write` requests and `kXR_writev` elements.
    pub writes: u32,
    /// Fewest and most elements of a vector read (0 when none).
    pub rs_min: u16,
    /// See `rs_min`.
    pub rs_max: u16,
    /// Elements of all vector reads.
    pub rsegs: u64,
    /// Smallest and largest `kXR_read`, bytes (0 when none).
    pub rd_min: u32,
    /// See `rd_min`.
    pub rd_max: u32,
    /// Smallest and largest vector read, bytes (0 when none).
    pub rv_min: u32,
    /// See `rv_min`.
    pub rv_max: u32,
    /// Smallest and largest write, bytes (0 when none).
    pub wr_min: u32,
    /// See `wr_min`.
    pub wr_max: u32,
    /// Bytes of `kXR_pgread` asked.
    pub pgread: u64,
    /// `kXR_pgread` requests.
    pub pgreads: u32,
    /// Bytes of `kXR_pgwrite` payload (data and crc32c).
    pub pgwrite: u64,
    /// `kXR_pgwrite` requests.
    pub pgwrites: u32,
    /// Sums of squares: read sizes, vector-read sizes, vector-read element
    /// counts, write sizes.
    pub ssq: [f64; 4],
}

fn min_max(n: u32, v: u32, min: &mut u32, max: &mut u32) {
    if n == 1 || v < *min {
        *min = v;
    }
    if v > *max {
        *max = v;
    }
}

impl FileCounters {
    /// Counts for the file of dictionary id `id`.
    pub fn new(id: u32) -> FileCounters {
        FileCounters {
            id,
            stats: Mutex::new(FileStats::default()),
            moved: AtomicBool::new(false),
        }
    }

    fn update(&self, f: impl FnOnce(&mut FileStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
        self.moved.store(true, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn snapshot(&self) -> FileStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether bytes moved since the last call (then resets it): the
    /// stock's `xfrXeq`, for `xfr` records of files with I/O only.
    pub fn take_moved(&self) -> bool {
        self.moved.swap(false, Ordering::Relaxed)
    }

    /// A `kXR_read` of `len` bytes asked.
    pub fn read(&self, len: u32) {
        self.update(|s| {
            s.read += u64::from(len);
            s.reads += 1;
            min_max(s.reads, len, &mut s.rd_min, &mut s.rd_max);
            s.ssq[0] += f64::from(len) * f64::from(len);
        });
    }

    /// A `kXR_pgread` of `len` bytes asked.
    pub fn pgread(&self, len: u32) {
        self.update(|s| {
            s.pgread += u64::from(len);
            s.pgreads += 1;
        });
    }

    /// A vector read of `count` elements and `len` bytes on this file.
    pub fn readv(&self, len: u32, count: u16) {
        self.update(|s| {
            s.readv += u64::from(len);
            s.readvs += 1;
            s.rsegs += u64::from(count);
            min_max(s.readvs, len, &mut s.rv_min, &mut s.rv_max);
            let (mut lo, mut hi) = (u32::from(s.rs_min), u32::from(s.rs_max));
            min_max(s.readvs, u32::from(count), &mut lo, &mut hi);
            (s.rs_min, s.rs_max) = (lo as u16, hi as u16);
            s.ssq[1] += f64::from(len) * f64::from(len);
            s.ssq[2] += f64::from(count) * f64::from(count);
        });
    }

    /// A write of `len` bytes.
    pub fn write(&self, len: u32) {
        self.update(|s| {
            s.write += u64::from(len);
            s.writes += 1;
            min_max(s.writes, len, &mut s.wr_min, &mut s.wr_max);
            s.ssq[3] += f64::from(len) * f64::from(len);
        });
    }

    /// A `kXR_pgwrite` of `len` bytes of payload.
    pub fn pgwrite(&self, len: u32) {
        self.update(|s| {
            s.pgwrite += u64::from(len);
            s.pgwrites += 1;
        });
    }
}

/// A session's monitoring: its id, when it logged in and its observer.
pub(crate) struct SessionMonitor {
    pub(crate) user_id: u32,
    pub(crate) since: std::time::Instant,
    pub(crate) observer: Arc<dyn SessionObserver>,
    readv_seq: std::sync::atomic::AtomicU8,
}

impl SessionMonitor {
    pub(crate) fn new(user_id: u32, observer: Arc<dyn SessionObserver>) -> SessionMonitor {
        SessionMonitor {
            user_id,
            since: std::time::Instant::now(),
            observer,
            readv_seq: Default::default(),
        }
    }

    pub(crate) fn event(&self, e: &SessionEvent<'_>) {
        self.observer.event(e);
    }

    /// The next vector-read sequence number (from 1, wrapping).
    pub(crate) fn next_readv_seq(&self) -> u8 {
        self.readv_seq
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
    }
}

impl std::fmt::Debug for SessionMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionMonitor")
            .field("user_id", &self.user_id)
            .finish()
    }
}

/// `key`'s value in a login CGI (`&xrd.rn=v5.5.3&xrd.appname=xrdcp`).
pub(crate) fn cgi_value<'a>(cgi: &'a str, key: &str) -> Option<&'a str> {
    cgi.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then_some(v)
    })
}
