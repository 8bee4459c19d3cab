//! The XRootD monitoring streams over UDP, as the stock server sends them:
//! [`UdpMonitor`] turns the typed stream ([`crate::observe::monitor`]) into
//! the detailed stream of `xrootd.monitor all flush SECS fstat SECS lfn ops
//! xfr N ident SECS dest fstat info user files io redir HOST:PORT` (the
//! server's identification `=`, user `u` and path `d` maps, each session's
//! trace `t`, the file stream `f`, a redirector's redirects `r`), and [`SummaryReporter`] sends a summary
//! document (`xrd.report DEST every SECS all`) each interval. Layouts and
//! the stock's behaviour: PROTOCOL.md §17; codecs:
//! [`xroot_proto::monitor`].
//!
//! **Never in the way of serving.** Observer calls only append to a
//! buffer under a short lock and, when a packet is complete, hand it to a
//! bounded queue (`queue` packets) with `try_send`; one task sends the
//! queue to the collectors. A full queue drops the packet, a failed send
//! (a collector that is down, an ICMP error) is counted and forgotten:
//! both show in [`MonitorCounts`]. Buffers are bounded: one trace buffer
//! per monitored session (`trace_buffer` bytes at most), one file-stream
//! buffer, one redirect buffer, the queue.
//!
//! A destination that does not resolve is an error of
//! [`UdpMonitor::start`] (and [`SummaryReporter::start`]) naming it.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use xroot_proto::monitor::fstat::{FileOps, FileRecord, FileSsq, FileTod, FileXfr};
use xroot_proto::monitor::gstream::GSTREAM_HEADER_LEN;
use xroot_proto::monitor::header::{code, MonHeader};
use xroot_proto::monitor::map::encode_map;
use xroot_proto::monitor::redir::{RedirEntry, RedirPacket};
use xroot_proto::monitor::trace::{shift_total, TraceEntry, ENTRY_LEN};

use crate::observe::monitor::{
    FileCounters, FileStats, LoginRecord, MonitorObserver, RedirectRecord, SessionEvent,
    SessionObserver,
};

/// Why monitoring could not start.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// A destination did not resolve to an address.
    #[error("monitoring destination {dest}: {source}")]
    Resolve {
        /// The destination as given.
        dest: String,
        /// Why.
        source: std::io::Error,
    },
    /// No destination was given, or more than two.
    #[error("monitoring needs one or two destinations, got {0}")]
    Destinations(usize),
    /// The UDP socket could not be made.
    #[error("monitoring socket: {0}")]
    Socket(std::io::Error),
}

/// Resolves `HOST:PORT` destinations (first address of each). Errors:
/// [`MonitorError::Resolve`] naming the one that did not resolve.
pub fn resolve(dests: &[String]) -> Result<Vec<SocketAddr>, MonitorError> {
    dests
        .iter()
        .map(|d| {
            d.to_socket_addrs()
                .and_then(|mut a| {
                    a.next().ok_or_else(|| {
                        std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
                    })
                })
                .map_err(|source| MonitorError::Resolve {
                    dest: d.clone(),
                    source,
                })
        })
        .collect()
}

/// The settings of the detailed stream (the stock directive's options).
#[derive(Debug, Clone)]
pub struct UdpMonitorConfig {
    /// Where to send (`dest ... HOST:PORT`; one or two).
    pub dests: Vec<String>,
    /// File-stream flush interval (`fstat SECS`, 60 s by default; the
    /// tools' `--monitor-flush`).
    pub fstat: Duration,
    /// Transfer records of open files every `xfr` file-stream intervals
    /// (`xfr N`, 5; 0: none).
    pub xfr: u32,
    /// The server's identification every this long (`ident`, 5 min);
    /// also sent at start.
    pub ident: Duration,
    /// The trace stream's time window (`window`, 60 s).
    pub window: Duration,
    /// Bytes of a session's trace buffer (`mbuff`, 16,384).
    pub trace_buffer: usize,
    /// Bytes of the file-stream buffer (`fbsz`, 65,472).
    pub fstat_buffer: usize,
    /// Bytes of the redirect stream's buffer (`rbuff`, 32,768; 1,024 to
    /// 65,535): a redirector's `r` packets are sent when it is full and
    /// every `fstat` interval.
    pub redir_buffer: usize,
    /// User maps carry the authenticated identity (`auth`): `&p=PROT&n=NAME
    /// &h=HOST&o=&r=&g=GROUP&m=` before the login's detail.
    pub auth: bool,
    /// Bytes of a g-stream's buffer, header included (the stock's
    /// `maxlen`, 32,768; 1,024 to 65,536).
    pub gstream_buffer: usize,
    /// Packets waiting to be sent at most (1,024); more are dropped.
    pub queue: usize,
    /// The server's identity: site (`XRDSITE`), host name, port, instance
    /// name (`anon`), program (`xrootd`) and version.
    pub site: String,
    /// See `site`.
    pub host: String,
    /// See `site`.
    pub port: u16,
    /// See `site`.
    pub instance: String,
    /// See `site`.
    pub program: String,
    /// See `site`.
    pub version: String,
}

impl UdpMonitorConfig {
    /// The stock directive's defaults with `fstat` and `flush` of
    /// `flush`, for a server on `port`, sending to `dests`.
    pub fn new(dests: Vec<String>, port: u16, flush: Duration) -> UdpMonitorConfig {
        UdpMonitorConfig {
            dests,
            fstat: flush,
            xfr: 5,
            ident: Duration::from_secs(300),
            window: Duration::from_secs(60),
            trace_buffer: 16384,
            fstat_buffer: 65472,
            redir_buffer: 32768,
            gstream_buffer: 32768,
            auth: false,
            queue: 1024,
            site: String::new(),
            host: host_name(),
            port,
            instance: "anon".into(),
            program: "xrootd".into(),
            version: format!("v{}-xroot", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`; `localhost`
/// when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The 48-bit server id of site, host, port, instance and program: an
/// FNV-1a hash of them (the stock convolves SHA3-512 with crc32c; a
/// collector only needs it stable and distinct per server).
pub fn server_id(site: &str, host: &str, port: u16, instance: &str, program: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{site}{host}{port}{instance}{program}").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h & 0x0000_ffff_ffff_ffff
}

/// What the sender did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MonitorCounts {
    /// Datagrams sent (one per destination).
    pub sent: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets dropped because the queue was full.
    pub dropped: u64,
    /// Sends that failed (the collector down, an ICMP error, no route).
    pub errors: u64,
}

#[derive(Debug, Default)]
struct Counts {
    sent: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
}

impl Counts {
    fn get(&self) -> MonitorCounts {
        MonitorCounts {
            sent: self.sent.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}

/// A packet for the sender; `sequenced` ones get the destination's next
/// `pseq` (every kind but `f` and `g`).
struct Outgoing {
    bytes: Vec<u8>,
    sequenced: bool,
}

/// The queue to the sender task and its counts.
#[derive(Clone)]
struct Queue {
    tx: mpsc::Sender<Outgoing>,
    counts: Arc<Counts>,
}

impl Queue {
    /// Starts the task that sends to `dests`. Must run in a tokio runtime.
    fn start(dests: Vec<SocketAddr>, depth: usize) -> Result<Queue, MonitorError> {
        let bind: SocketAddr = match dests.first() {
            Some(SocketAddr::V6(_)) => "[::]:0".parse().unwrap_or(SocketAddr::from(([0u8; 16], 0))),
            _ => SocketAddr::from(([0, 0, 0, 0], 0)),
        };
        let std_socket = std::net::UdpSocket::bind(bind).map_err(MonitorError::Socket)?;
        std_socket
            .set_nonblocking(true)
            .map_err(MonitorError::Socket)?;
        let socket = UdpSocket::from_std(std_socket).map_err(MonitorError::Socket)?;
        let (tx, mut rx) = mpsc::channel::<Outgoing>(depth.max(1));
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        tokio::spawn(async move {
            let mut seq = vec![0u8; dests.len()];
            while let Some(mut p) = rx.recv().await {
                for (d, s) in dests.iter().zip(seq.iter_mut()) {
                    if p.sequenced && p.bytes.len() > 1 {
                        p.bytes[1] = *s;
                        *s = s.wrapping_add(1);
                    }
                    match socket.send_to(&p.bytes, *d).await {
                        Ok(n) => {
                            c.sent.fetch_add(1, Ordering::Relaxed);
                            c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(_) => {
                            c.errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        });
        Ok(Queue { tx, counts })
    }

    fn push(&self, bytes: Vec<u8>, sequenced: bool) {
        if self.tx.try_send(Outgoing { bytes, sequenced }).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Unix seconds now.
fn now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

/// The file stream's buffer (`XrdXrootdMonFile`'s `repBuff`).
struct Fstat {
    records: Vec<u8>,
    t_begin: u32,
    xfr: u16,
    total: u16,
    seq: u8,
    cap: usize,
}

/// The detailed stream's sender: a [`MonitorObserver`] to set in
/// [`Config::monitor`](crate::Config::monitor).
pub struct UdpMonitor {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: UdpMonitorConfig,
    /// The server id, set again when the server is bound (its port).
    sid: AtomicU64,
    /// The server's port, as [`Inner::sid`].
    port: AtomicU16,
    /// Whether the identification was sent since the start.
    announced: AtomicBool,
    stod: u32,
    queue: Queue,
    /// The g-streams made, flushed with the file stream.
    gstreams: Mutex<Vec<Weak<GStream>>>,
    fstat: Mutex<Fstat>,
    /// Files open now, for `xfr` records.
    open: Mutex<HashMap<u32, Weak<FileCounters>>>,
    /// The redirect stream's buffer.
    redir: Mutex<Redir>,
}

/// The redirect stream's buffer: its time marks and redirects, in order,
/// and their bytes on the wire.
struct Redir {
    entries: Vec<Redirected>,
    wire: usize,
    /// The window of the last time mark.
    window: u32,
    /// Bytes of entries a packet holds.
    cap: usize,
}

/// An entry of [`Redir`]: a time mark (the window's start) or a redirect.
enum Redirected {
    Mark(u32),
    Redirect {
        op: u8,
        port: u16,
        user: u32,
        host: Box<[u8]>,
        path: Box<[u8]>,
    },
}

impl std::fmt::Debug for UdpMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpMonitor")
            .field("dests", &self.inner.cfg.dests)
            .field("counts", &self.counts())
            .finish()
    }
}

impl UdpMonitor {
    /// Resolves the destinations, starts the sender and the timer (file
    /// stream flushes, transfer records, identification) and sends the
    /// identification (with a `cfg.port` of 0, when the server is bound:
    /// [`MonitorObserver::bound`]). Must run in a tokio runtime. Errors: a destination
    /// that does not resolve, none or more than two, no socket.
    pub fn start(cfg: UdpMonitorConfig) -> Result<Arc<UdpMonitor>, MonitorError> {
        if cfg.dests.is_empty() || cfg.dests.len() > 2 {
            return Err(MonitorError::Destinations(cfg.dests.len()));
        }
        let dests = resolve(&cfg.dests)?;
        let queue = Queue::start(dests, cfg.queue)?;
        let sid = server_id(&cfg.site, &cfg.host, cfg.port, &cfg.instance, &cfg.program);
        let stod = now();
        // the header, the sid and the closing time mark are not entries
        let redir_cap = cfg.redir_buffer.clamp(1024, 65535) - MonHeader::LEN - 16;
        let inner = Arc::new(Inner {
            sid: AtomicU64::new(sid),
            port: AtomicU16::new(cfg.port),
            announced: AtomicBool::new(false),
            gstreams: Mutex::new(Vec::new()),
            fstat: Mutex::new(Fstat {
                records: Vec::new(),
                t_begin: 0,
                xfr: 0,
                total: 0,
                seq: 0,
                cap: cfg.fstat_buffer.clamp(1024, 65535),
            }),
            cfg,
            stod,
            queue,
            open: Mutex::new(HashMap::new()),
            redir: Mutex::new(Redir {
                entries: Vec::new(),
                wire: 0,
                window: 0,
                cap: redir_cap,
            }),
        });
        if inner.cfg.port != 0 {
            inner.announced.store(true, Ordering::Relaxed);
            inner.ident();
        }
        let weak = Arc::downgrade(&inner);
        tokio::spawn(timer(weak));
        Ok(Arc::new(UdpMonitor { inner }))
    }

    /// What the sender did so far.
    pub fn counts(&self) -> MonitorCounts {
        self.inner.queue.counts.get()
    }

    /// Sends what the file stream and the g-streams hold now (a server
    /// shutting down).
    pub fn flush(&self) {
        self.inner.flush_fstat();
        self.inner.flush_redirects();
        self.inner.flush_gstreams();
    }

    /// A g-stream of `provider` ([`xroot_proto::monitor::gstream::provider`]:
    /// `C` for a cache's file records) sent to this monitor's
    /// destinations: records are buffered (`gstream_buffer` bytes) and
    /// sent when the buffer is full and every `fstat` interval, as the
    /// stock's `XrdXrootdGSReal`.
    pub fn gstream(&self, provider: u8) -> Arc<GStream> {
        let cap = (self.inner.cfg.gstream_buffer.clamp(1024, 65536) & !7) - 1 - GSTREAM_HEADER_LEN;
        let g = Arc::new(GStream {
            inner: self.inner.clone(),
            provider,
            buf: Mutex::new(GBuf {
                records: Vec::new(),
                t_begin: 0,
                t_end: 0,
                seq: 0,
                cap,
            }),
        });
        let mut all = self
            .inner
            .gstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&g));
        g
    }
}

/// A g-stream (`g`, PROTOCOL.md §17.5): text records of one provider,
/// each sent as a line of a `g` packet (made by [`UdpMonitor::gstream`]).
pub struct GStream {
    inner: Arc<Inner>,
    provider: u8,
    buf: Mutex<GBuf>,
}

struct GBuf {
    /// Records, each followed by `\n`.
    records: Vec<u8>,
    t_begin: u32,
    t_end: u32,
    seq: u8,
    /// Bytes of records a packet holds.
    cap: usize,
}

impl std::fmt::Debug for GStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GStream")
            .field("provider", &(self.provider as char))
            .finish()
    }
}

impl GStream {
    /// Appends one record (a line: no `\n` or NUL in it), sending what
    /// the buffer holds first when the record would not fit
    /// (`XrdXrootdGSReal::Insert`). Returns `false`, the record dropped,
    /// when it is empty, holds a `\n` or NUL, or is larger than a packet
    /// holds.
    pub fn insert(&self, record: &[u8]) -> bool {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if record.is_empty()
            || record.len() + 1 > b.cap
            || record.iter().any(|&c| c == b'\n' || c == 0)
        {
            return false;
        }
        if b.records.len() + record.len() + 1 > b.cap {
            self.send(&mut b);
        }
        let t = now();
        if b.records.is_empty() {
            b.t_begin = t;
        }
        b.t_end = t;
        b.records.extend_from_slice(record);
        b.records.push(b'\n');
        true
    }

    /// Sends what the buffer holds now, if anything.
    pub fn flush(&self) {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        self.send(&mut b);
    }

    /// The packet: the header with this stream's own sequence number (its
    /// first packet is 1), the times, the sid with the provider in its top
    /// byte, the records, the last `\n` turned to NUL.
    fn send(&self, b: &mut GBuf) {
        if b.records.is_empty() {
            return;
        }
        b.seq = b.seq.wrapping_add(1);
        let mut header = self.inner.header(code::GSTREAM);
        header.pseq = b.seq;
        header.plen = (GSTREAM_HEADER_LEN + b.records.len()) as u16;
        let mut out = Vec::with_capacity(GSTREAM_HEADER_LEN + b.records.len());
        header.encode(&mut out);
        out.extend_from_slice(&b.t_begin.to_be_bytes());
        out.extend_from_slice(&b.t_end.to_be_bytes());
        let sid = (u64::from(self.provider) << 56) | (self.inner.sid() & 0x0000_ffff_ffff_ffff);
        out.extend_from_slice(&sid.to_be_bytes());
        out.extend_from_slice(&b.records);
        if let Some(last) = out.last_mut() {
            *last = 0;
        }
        b.records.clear();
        (b.t_begin, b.t_end) = (0, 0);
        self.inner.queue.push(out, false);
    }
}

/// Every second: the file stream's flush and transfer records each
/// `fstat` interval, the identification each `ident` interval. Ends when
/// the monitor is dropped.
async fn timer(inner: Weak<Inner>) {
    let (fstat, ident) = match inner.upgrade() {
        Some(i) => (i.cfg.fstat.max(Duration::from_secs(1)), i.cfg.ident),
        None => return,
    };
    let mut next_fstat = tokio::time::Instant::now() + fstat;
    let mut next_ident = tokio::time::Instant::now() + ident;
    let mut xfr_left = 0u32;
    loop {
        tokio::time::sleep_until(next_fstat.min(next_ident)).await;
        let Some(i) = inner.upgrade() else { return };
        let t = tokio::time::Instant::now();
        if t >= next_fstat {
            next_fstat += fstat;
            if i.cfg.xfr > 0 {
                xfr_left = xfr_left.checked_sub(1).unwrap_or(i.cfg.xfr - 1);
                if xfr_left == 0 {
                    i.xfr_records();
                }
            }
            i.flush_fstat();
            i.flush_redirects();
            i.flush_gstreams();
        }
        if t >= next_ident && !ident.is_zero() {
            next_ident += ident;
            i.ident();
        }
    }
}

impl Inner {
    fn sid(&self) -> u64 {
        self.sid.load(Ordering::Relaxed)
    }

    fn header(&self, code: u8) -> MonHeader {
        MonHeader {
            code,
            pseq: 0,
            plen: 0,
            stod: self.stod,
        }
    }

    /// The `=` packet: `=/USER.PID:SID@HOST\n&site=&port=&inst=&pgm=&ver=`.
    fn ident(&self) {
        let c = &self.cfg;
        let user = std::env::var("USER").unwrap_or_else(|_| "xroot".into());
        let text = format!(
            "=/{user}.{}:{}@{}\n&site={}&port={}&inst={}&pgm={}&ver={}",
            std::process::id(),
            self.sid(),
            c.host,
            c.site,
            self.port.load(Ordering::Relaxed),
            c.instance,
            c.program,
            c.version
        );
        self.map(code::IDENT, 0, text.as_bytes(), &[]);
    }

    fn map(&self, code: u8, dictid: u32, line: &[u8], detail: &[u8]) {
        let mut out = Vec::with_capacity(12 + line.len() + detail.len() + 1);
        let parts: [&[u8]; 3] = [line, b"\n", detail];
        let parts = if detail.is_empty() {
            &parts[..1]
        } else {
            &parts[..]
        };
        if encode_map(self.header(code), dictid, parts, &mut out).is_ok() {
            self.queue.push(out, true);
        }
    }

    /// The window clock: the stock's `currWindow`, the start time plus
    /// whole windows.
    fn window(&self) -> u32 {
        let w = self.cfg.window.as_secs().max(1) as u32;
        let t = now();
        self.stod + (t.saturating_sub(self.stod) / w) * w
    }

    /// Appends a file-stream record, sending the buffer first when it
    /// would not fit (`XrdXrootdMonFile::GetSlot`).
    fn fstat_record(&self, r: &FileRecord<'_>, xfr: bool) {
        let mut f = self.fstat.lock().unwrap_or_else(PoisonError::into_inner);
        let room = f.cap - 1 - MonHeader::LEN - FileTod::LEN;
        if r.wire_len() > room {
            return;
        }
        if f.records.is_empty() {
            f.t_begin = now();
        } else if f.records.len() + r.wire_len() > room {
            self.send_fstat(&mut f);
        }
        if r.encode(&mut f.records).is_ok() {
            f.total = f.total.saturating_add(1);
            if xfr {
                f.xfr = f.xfr.saturating_add(1);
            }
        }
    }

    /// Appends a redirect to the redirect stream's buffer, after a time
    /// mark when it starts the buffer or a new window, sending the buffer
    /// first when it would not fit (`XrdXrootdMonitor::Redirect`). A host
    /// is cut to 256 bytes and a path to 1,024, as the stock cuts them.
    fn redirect(&self, r: &RedirectRecord<'_>) {
        let host = &r.host.as_bytes()[..r.host.len().min(256)];
        let path = &r.path.as_bytes()[..r.path.len().min(1024)];
        let len = 8 + (host.len() + 1 + path.len() + 1).div_ceil(8) * 8;
        let w = self.window();
        let mut b = self.redir.lock().unwrap_or_else(PoisonError::into_inner);
        if b.wire + 8 + len > b.cap {
            self.send_redirects(&mut b);
        }
        if b.entries.is_empty() || b.window != w {
            b.entries.push(Redirected::Mark(w));
            b.window = w;
            b.wire += 8;
        }
        b.entries.push(Redirected::Redirect {
            op: r.op,
            port: r.port,
            user: r.user_id,
            host: host.into(),
            path: path.into(),
        });
        b.wire += len;
    }

    fn flush_redirects(&self) {
        let mut b = self.redir.lock().unwrap_or_else(PoisonError::into_inner);
        self.send_redirects(&mut b);
    }

    /// Sends the redirect buffer, if it holds any, closed by a time mark
    /// at its last window's end (`XrdXrootdMonitor::Flush` of a redirect
    /// buffer): `r` packets are sequenced with the maps and traces.
    fn send_redirects(&self, b: &mut Redir) {
        if b.entries.is_empty() {
            return;
        }
        let window = self.cfg.window.as_secs().clamp(1, 0x00ff_ffff) as u32;
        let mut entries: Vec<RedirEntry<'_>> = b
            .entries
            .iter()
            .map(|e| match e {
                Redirected::Mark(time) => RedirEntry::Time {
                    window,
                    time: *time,
                },
                Redirected::Redirect {
                    op,
                    port,
                    user,
                    host,
                    path,
                } => RedirEntry::Redirect {
                    op: *op,
                    local: false,
                    port: *port,
                    user: *user,
                    host,
                    path,
                },
            })
            .collect();
        entries.push(RedirEntry::Time {
            window,
            time: b.window.wrapping_add(window),
        });
        let packet = RedirPacket {
            header: self.header(code::REDIRECT),
            sid: self.sid(),
            entries,
        };
        let mut out = Vec::with_capacity(MonHeader::LEN + 8 + b.wire + 8);
        let sent = packet.encode(&mut out);
        b.entries.clear();
        b.wire = 0;
        if sent.is_ok() {
            self.queue.push(out, true);
        }
    }

    fn flush_gstreams(&self) {
        let all: Vec<Arc<GStream>> = self
            .gstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for g in all {
            g.flush();
        }
    }

    fn flush_fstat(&self) {
        let mut f = self.fstat.lock().unwrap_or_else(PoisonError::into_inner);
        if !f.records.is_empty() {
            self.send_fstat(&mut f);
        }
    }

    /// Sends the file stream's buffer (`XrdXrootdMonFile::Flush`).
    fn send_fstat(&self, f: &mut Fstat) {
        let t_end = now();
        let mut out = Vec::with_capacity(MonHeader::LEN + FileTod::LEN + f.records.len());
        let mut header = self.header(code::FSTAT);
        header.pseq = f.seq;
        f.seq = f.seq.wrapping_add(1);
        header.plen = (MonHeader::LEN + FileTod::LEN + f.records.len()) as u16;
        header.encode(&mut out);
        FileTod {
            xfr_records: f.xfr,
            total_records: f.total,
            t_begin: f.t_begin,
            t_end,
            sid: self.sid(),
        }
        .encode(&mut out);
        out.extend_from_slice(&f.records);
        f.records.clear();
        f.t_begin = t_end;
        (f.xfr, f.total) = (0, 0);
        self.queue.push(out, false);
    }

    /// A transfer record for each open file with I/O since the last.
    fn xfr_records(&self) {
        let files: Vec<Arc<FileCounters>> = {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            open.retain(|_, w| w.strong_count() > 0);
            open.values().filter_map(Weak::upgrade).collect()
        };
        for c in files {
            if c.take_moved() {
                let s = c.snapshot();
                let r = FileRecord::Xfr {
                    file: c.id,
                    xfr: xfr_of(&s),
                };
                self.fstat_record(&r, true);
            }
        }
    }
}

/// The bytes a close or transfer record carries: pgreads counted as
/// reads, pgwrites as writes (`XrdXrootdFileTable::Del`).
fn xfr_of(s: &FileStats) -> FileXfr {
    FileXfr {
        read: s.read + s.pgread,
        readv: s.readv,
        write: s.write + s.pgwrite,
    }
}

/// The ops block of a close record as the stock fills it
/// (`XrdXrootdMonFile::Close`): minimums and maximums of a kind with no
/// operation are 0; pg-operations count in the totals but never in the
/// minimums and maximums, which stay at `0x7fffffff` and 0 when only they
/// were done.
fn ops_of(s: &FileStats) -> FileOps {
    let reads = s.reads + s.pgreads;
    let writes = s.writes + s.pgwrites;
    let (rd_min, rd_max) = match (reads, s.reads) {
        (0, _) => (0, 0),
        (_, 0) => (0x7fff_ffff, 0),
        _ => (s.rd_min, s.rd_max),
    };
    let (wr_min, wr_max) = match (writes, s.writes) {
        (0, _) => (0, 0),
        (_, 0) => (0x7fff_ffff, 0),
        _ => (s.wr_min, s.wr_max),
    };
    FileOps {
        read: reads,
        readv: s.readvs,
        write: writes,
        rs_min: s.rs_min,
        rs_max: s.rs_max,
        rsegs: s.rsegs,
        rd_min,
        rd_max,
        rv_min: s.rv_min,
        rv_max: s.rv_max,
        wr_min,
        wr_max,
    }
}

impl MonitorObserver for UdpMonitor {
    /// Names the server by the port it was bound to and sends the
    /// identification (again, when the port differs from the one it was
    /// started with).
    fn bound(&self, addr: SocketAddr) {
        let i = &self.inner;
        let c = &i.cfg;
        let changed = i.port.swap(addr.port(), Ordering::Relaxed) != addr.port();
        if changed {
            let sid = server_id(&c.site, &c.host, addr.port(), &c.instance, &c.program);
            i.sid.store(sid, Ordering::Relaxed);
        }
        if !i.announced.swap(true, Ordering::Relaxed) || changed {
            i.ident();
        }
    }

    /// Buffers the redirect for the redirect stream (`r`).
    fn redirect(&self, redirect: &RedirectRecord<'_>) {
        self.inner.redirect(redirect);
    }

    fn login(&self, login: &LoginRecord<'_>) -> Arc<dyn SessionObserver> {
        let i = &self.inner;
        let host = match login.peer.ip() {
            std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => format!("[{v6}]"),
            },
            ip => ip.to_string(),
        };
        let line = format!(
            "xroot/{}.{}:{}@{host}",
            login.login_user,
            login.pid,
            i.sid()
        );
        let ipv = match login.peer.ip() {
            std::net::IpAddr::V4(_) => '4',
            std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => '4',
            _ => '6',
        };
        let client = (login.app_name.is_some() || login.info.is_some()).then(|| {
            format!(
                "&R={}&x={}&y={}&I={ipv}",
                login.release.unwrap_or(""),
                login.app_name.unwrap_or(""),
                login.info.unwrap_or("")
            )
        });
        let detail = match (i.cfg.auth, login.identity) {
            (true, Some(id)) => format!(
                "&p={}&n={}&h={host}&o=&r=&g={}&m={}&I={ipv}",
                id.protocol,
                id.name,
                id.group.as_deref().unwrap_or(""),
                client.as_deref().unwrap_or("")
            ),
            _ => client.unwrap_or_default(),
        };
        i.map(
            code::USER,
            login.user_id,
            line.as_bytes(),
            detail.as_bytes(),
        );
        let cap = (i.cfg.trace_buffer.clamp(1024, 65535) - MonHeader::LEN) / ENTRY_LEN - 1;
        let w = i.window();
        Arc::new(Session {
            inner: i.clone(),
            user_id: login.user_id,
            line,
            trace: Mutex::new(Trace {
                entries: vec![TraceEntry::Window {
                    sid: i.sid(),
                    end: w,
                    start: w,
                }],
                last_window: 0,
                cap,
            }),
        })
    }
}

/// One session's trace buffer (`XrdXrootdMonitor`'s `monBuff`).
struct Trace {
    entries: Vec<TraceEntry>,
    last_window: u32,
    /// The stock's `lastEnt`: entries before a flush.
    cap: usize,
}

struct Session {
    inner: Arc<Inner>,
    user_id: u32,
    line: String,
    trace: Mutex<Trace>,
}

impl Session {
    /// Appends a trace entry, marking a new window first
    /// (`XrdXrootdMonitor::Mark`) or sending a full buffer.
    fn trace(&self, e: TraceEntry) {
        let i = &self.inner;
        let w = i.window();
        let win = i.cfg.window.as_secs().max(1) as u32;
        let mut t = self.trace.lock().unwrap_or_else(PoisonError::into_inner);
        if t.last_window != w {
            let full = t.entries.len() + 8 > t.cap;
            match t.entries.last_mut() {
                Some(TraceEntry::Window { start, .. }) => *start = w,
                _ if full => self.send_trace(&mut t, w),
                _ => {
                    let end = t.last_window.wrapping_add(win);
                    t.entries.push(TraceEntry::Window {
                        sid: i.sid(),
                        end,
                        start: w,
                    });
                }
            }
            t.last_window = w;
        } else if t.entries.len() >= t.cap {
            self.send_trace(&mut t, w);
        }
        t.entries.push(e);
    }

    /// Sends the trace buffer closed by a window mark and starts a new one
    /// (`XrdXrootdMonitor::Flush`).
    fn send_trace(&self, t: &mut Trace, w: u32) {
        if t.entries.len() <= 1 {
            return;
        }
        let i = &self.inner;
        let end = t
            .last_window
            .wrapping_add(i.cfg.window.as_secs().max(1) as u32);
        t.entries.push(TraceEntry::Window {
            sid: i.sid(),
            end,
            start: end,
        });
        let mut out = Vec::with_capacity(MonHeader::LEN + t.entries.len() * ENTRY_LEN);
        let mut header = i.header(code::TRACE);
        header.plen = (MonHeader::LEN + t.entries.len() * ENTRY_LEN) as u16;
        header.encode(&mut out);
        for e in &t.entries {
            out.extend_from_slice(&e.encode());
        }
        t.entries.clear();
        t.entries.push(TraceEntry::Window {
            sid: i.sid(),
            end: w,
            start: w,
        });
        i.queue.push(out, true);
    }
}

impl SessionObserver for Session {
    fn event(&self, event: &SessionEvent<'_>) {
        let i = &self.inner;
        match *event {
            SessionEvent::Open {
                file,
                path,
                size,
                rw,
            } => {
                i.map(code::PATH, file.id, self.line.as_bytes(), path.as_bytes());
                self.trace(TraceEntry::Open {
                    file: file.id,
                    size,
                });
                i.open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(file.id, Arc::downgrade(file));
                let lfn = Some((self.user_id, path.as_bytes()));
                let r = FileRecord::Open {
                    file: file.id,
                    size,
                    rw,
                    lfn,
                };
                i.fstat_record(&r, false);
            }
            SessionEvent::Read { file, offset, len } => {
                self.trace(TraceEntry::Read { file, offset, len })
            }
            SessionEvent::Write { file, offset, len } => {
                self.trace(TraceEntry::Write { file, offset, len })
            }
            SessionEvent::Readv {
                file,
                count,
                len,
                seq,
            } => self.trace(TraceEntry::Readv {
                file,
                unwound: false,
                seq,
                count,
                len,
            }),
            SessionEvent::Close { file, forced } => {
                i.open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&file.id);
                let s = file.snapshot();
                let xfr = xfr_of(&s);
                let (read_shift, read_val) = shift_total(xfr.read + xfr.readv);
                let (write_shift, write_val) = shift_total(xfr.write);
                self.trace(TraceEntry::Close {
                    file: file.id,
                    read_shift,
                    read_val,
                    write_shift,
                    write_val,
                });
                let r = FileRecord::Close {
                    file: file.id,
                    forced,
                    xfr,
                    ops: Some(ops_of(&s)),
                    ssq: None::<FileSsq>,
                };
                i.fstat_record(&r, false);
            }
            SessionEvent::Logout { secs, forced } => {
                self.trace(TraceEntry::Disc {
                    user: self.user_id,
                    flags: u8::from(forced),
                    secs,
                });
                i.fstat_record(&FileRecord::Disc { user: self.user_id }, false);
                let mut t = self.trace.lock().unwrap_or_else(PoisonError::into_inner);
                self.send_trace(&mut t, i.window());
            }
        }
    }
}

/// Sends a summary document every interval (`xrd.report DEST every SECS
/// all`): `document` is asked for it each time (its text must fit a
/// datagram: 65,507 bytes at most are sent). Ends when dropped.
pub struct SummaryReporter {
    queue: Queue,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SummaryReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryReporter")
            .field("counts", &self.counts())
            .finish()
    }
}

impl SummaryReporter {
    /// Resolves `dests` (one or two), then sends `document()` every
    /// `every`, the first after one interval. Must run in a tokio runtime.
    /// Errors: a destination that does not resolve, none or more than
    /// two, no socket.
    pub fn start(
        dests: &[String],
        every: Duration,
        document: impl Fn() -> String + Send + Sync + 'static,
    ) -> Result<SummaryReporter, MonitorError> {
        if dests.is_empty() || dests.len() > 2 {
            return Err(MonitorError::Destinations(dests.len()));
        }
        let queue = Queue::start(resolve(dests)?, 4)?;
        let q = queue.clone();
        let every = every.max(Duration::from_secs(1));
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let mut doc = document().into_bytes();
                doc.truncate(65507);
                q.push(doc, false);
            }
        });
        Ok(SummaryReporter { queue, task })
    }

    /// What the sender did so far.
    pub fn counts(&self) -> MonitorCounts {
        self.queue.counts.get()
    }
}

impl Drop for SummaryReporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xroot_proto::monitor::trace::TraceEntry as T;
    use xroot_proto::monitor::Packet;

    async fn recv(s: &UdpSocket) -> Vec<u8> {
        let mut b = vec![0u8; 65536];
        let n = tokio::time::timeout(Duration::from_secs(5), s.recv(&mut b))
            .await
            .expect("a packet")
            .unwrap();
        b.truncate(n);
        b
    }

    #[tokio::test]
    async fn a_session_as_the_stock_sends_it() {
        let collector = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let dest = collector.local_addr().unwrap().to_string();
        let cfg = UdpMonitorConfig::new(vec![dest], 1094, Duration::from_secs(1));
        let mon = UdpMonitor::start(cfg).unwrap();
        let ident = recv(&collector).await;
        let Packet::Map(m) = Packet::decode(&ident).unwrap() else {
            panic!()
        };
        assert_eq!((m.header.code, m.header.pseq, m.dictid), (b'=', 0, 0));
        assert!(m
            .detail()
            .starts_with(b"&site=&port=1094&inst=anon&pgm=xrootd&ver="));

        let s = mon.login(&LoginRecord {
            user_id: 1,
            peer: "127.0.0.1:5000".parse().unwrap(),
            login_user: "alice",
            pid: 42,
            release: Some("v5.5.3"),
            app_name: Some("xrdcp"),
            info: None,
            identity: None,
        });
        let u = recv(&collector).await;
        let Packet::Map(m) = Packet::decode(&u).unwrap() else {
            panic!()
        };
        assert_eq!((m.header.pseq, m.dictid), (1, 1));
        let line = m.user().unwrap();
        assert_eq!(
            (line.user, line.pid, line.host),
            (&b"alice"[..], &b"42"[..], &b"127.0.0.1"[..])
        );
        assert_eq!(m.detail(), b"&R=v5.5.3&x=xrdcp&y=&I=4");

        let f = Arc::new(FileCounters::new(2));
        s.event(&SessionEvent::Open {
            file: &f,
            path: "/d/f",
            size: 10,
            rw: false,
        });
        let d = recv(&collector).await;
        assert_eq!(&d[d.len() - 5..], b"\n/d/f");
        f.pgread(10);
        s.event(&SessionEvent::Read {
            file: 2,
            offset: 0,
            len: 10,
        });
        f.readv(6, 2);
        s.event(&SessionEvent::Readv {
            file: 2,
            count: 2,
            len: 6,
            seq: 1,
        });
        s.event(&SessionEvent::Close {
            file: &f,
            forced: false,
        });
        s.event(&SessionEvent::Logout {
            secs: 3,
            forced: false,
        });
        let t = recv(&collector).await;
        let Packet::Trace(t) = Packet::decode(&t).unwrap() else {
            panic!()
        };
        assert_eq!(t.header.pseq, 3);
        let kinds: Vec<_> = t.entries.iter().map(std::mem::discriminant).collect();
        assert_eq!(kinds.len(), 7);
        assert!(matches!(
            t.entries[4],
            T::Close {
                read_val: 16,
                write_val: 0,
                ..
            }
        ));
        assert!(matches!(
            t.entries[5],
            T::Disc {
                user: 1,
                secs: 3,
                ..
            }
        ));
        let fs = recv(&collector).await;
        let Packet::Fstat(fs) = Packet::decode(&fs).unwrap() else {
            panic!()
        };
        assert_eq!((fs.header.pseq, fs.tod.total_records), (0, 3));
        let FileRecord::Close {
            xfr,
            ops: Some(ops),
            ..
        } = &fs.records[1]
        else {
            panic!()
        };
        assert_eq!((xfr.read, xfr.readv), (10, 6));
        assert_eq!(
            (ops.read, ops.rd_min, ops.rd_max, ops.rs_min, ops.rsegs),
            (1, 0x7fff_ffff, 0, 2, 2)
        );
        assert_eq!(fs.records[2], FileRecord::Disc { user: 1 });
        assert_eq!(mon.counts().dropped, 0);
    }

    #[tokio::test]
    async fn the_bound_port_names_the_server_and_gstream_records_are_lines() {
        let collector = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let dest = collector.local_addr().unwrap().to_string();
        let cfg = UdpMonitorConfig::new(vec![dest], 0, Duration::from_secs(3600));
        let mon = UdpMonitor::start(cfg).unwrap();
        mon.bound("127.0.0.1:4321".parse().unwrap());
        let ident = recv(&collector).await;
        let Packet::Map(m) = Packet::decode(&ident).unwrap() else {
            panic!()
        };
        assert!(m.detail().starts_with(b"&site=&port=4321&"));
        let sid: u64 = std::str::from_utf8(m.user().unwrap().sid)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(sid, server_id("", &host_name(), 4321, "anon", "xrootd"));

        let g = mon.gstream(b'C');
        assert!(g.insert(br#"{"event":"file_close","lfn":"/a"}"#));
        assert!(g.insert(br#"{"event":"file_close","lfn":"/b"}"#));
        assert!(!g.insert(b"two\nlines"));
        assert!(!g.insert(b""));
        assert!(!g.insert(&vec![b'x'; 40000]));
        g.flush();
        g.flush(); // nothing more to send
        let p = recv(&collector).await;
        let Packet::GStream(p) = Packet::decode(&p).unwrap() else {
            panic!()
        };
        assert_eq!((p.header.pseq, p.provider, p.sid), (1, b'C', sid));
        assert_eq!(usize::from(p.header.plen), 24 + 33 + 1 + 33 + 1);
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1], br#"{"event":"file_close","lfn":"/b"}"#);
        assert!(p.t_begin > 0 && p.t_begin <= p.t_end);
        // a record that does not fit sends the buffer first
        let big = vec![b'y'; 20000];
        assert!(g.insert(&big) && g.insert(&big));
        let p = recv(&collector).await;
        let Packet::GStream(p) = Packet::decode(&p).unwrap() else {
            panic!()
        };
        assert_eq!((p.header.pseq, p.records.len()), (2, 1));
        assert_eq!(mon.counts().dropped, 0);
    }

    /// 10,000 logins at once with a queue of 4 packets, to a collector
    /// that never reads: the observer calls return (nothing waits for the
    /// sender), the packets beyond the queue are dropped and counted, and
    /// every packet is either sent, dropped or failed.
    #[tokio::test(flavor = "current_thread")]
    async fn a_flood_beyond_the_queue_is_dropped_and_counted() {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut cfg = UdpMonitorConfig::new(
            vec![silent.local_addr().unwrap().to_string()],
            1094,
            Duration::from_secs(3600),
        );
        cfg.queue = 4;
        let mon = UdpMonitor::start(cfg).unwrap();
        // on a current-thread runtime the sender task cannot run before
        // this loop yields: all but the queue's 4 must be dropped
        for id in 1..=10_000u32 {
            let _s = mon.login(&LoginRecord {
                user_id: id,
                peer: "127.0.0.1:5000".parse().unwrap(),
                login_user: "u",
                pid: 1,
                release: None,
                app_name: None,
                info: None,
                identity: None,
            });
        }
        let c = mon.counts();
        // the identification and 3 logins were queued
        assert_eq!(c.dropped, 10_000 + 1 - 4);
        // the sender then sends the 4 (waiting for it at most 10 s)
        for _ in 0..1000 {
            let c = mon.counts();
            if c.sent + c.errors >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let c = mon.counts();
        assert_eq!((c.sent + c.errors, c.dropped), (4, 10_000 + 1 - 4));
    }

    #[test]
    fn a_destination_that_does_not_resolve_is_named() {
        let e = resolve(&["no-such-host.invalid:9930".into()]).unwrap_err();
        assert!(e.to_string().contains("no-such-host.invalid:9930"), "{e}");
    }
}
