//! An open file: positional reads and writes, vector reads, paged reads and
//! writes with crc32c, sync, truncate, stat and close (PROTOCOL.md §6).
//!
//! A file handle lives on the connection that opened it. When that
//! connection dies, the next call re-opens the file (without `new`/`delete`,
//! so nothing is recreated) and retries once, as the reference client's
//! recovery (XrdCl's `FileStateHandler`) does: at the data server that held
//! it, the last URL after redirects, even when the redirector that sent the
//! client there is gone; a file open only for reading whose data server
//! cannot take it back (a connection error, or an error the reference
//! retries at a load balancer) is opened at the load balancer met on the
//! way instead (else at the URL it was opened with), with `tried=` and
//! `triedrc=` naming the server that failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;
use xroot_proto::request::{
    Close, Mode, Open, OpenOptions, Read, Request, Stat, Sync, Truncate, Write,
};
use xroot_proto::response::{OpenResponse, StatInfo};
use xroot_proto::url::Url;
use xroot_proto::{FHandle, RequestId};

use crate::channel::Link;
use crate::dialer::Dialer;
use crate::driver::{self, Reply};
use crate::error::{Error, Result};
use crate::qconfig::{self, ReadSupport, ServerConfig};
use crate::spread::SpreadEntry;

/// How to open a file: the `kXR_open` options and, for a file created, its
/// permission bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFlags {
    /// `kXR_open` option bits (`kXR_async` and `kXR_retstat` are always added).
    pub options: OpenOptions,
    /// Permissions of a created file (POSIX `0o777` bits).
    pub mode: u16,
}

impl OpenFlags {
    /// Read only (`kXR_open_read`).
    pub const READ: OpenFlags = OpenFlags {
        options: OpenOptions::READ,
        mode: 0,
    };
    /// Read and write an existing file (`kXR_open_updt`).
    pub const UPDATE: OpenFlags = OpenFlags {
        options: OpenOptions::UPDATE,
        mode: 0,
    };
    /// Create a new file, failing if it exists (`kXR_new`), mode 0644.
    pub const NEW: OpenFlags = OpenFlags {
        options: OpenOptions(OpenOptions::NEW.0 | OpenOptions::UPDATE.0),
        mode: 0o644,
    };
    /// Create or truncate (`kXR_delete`), mode 0644.
    pub const OVERWRITE: OpenFlags = OpenFlags {
        options: OpenOptions(OpenOptions::DELETE.0 | OpenOptions::UPDATE.0),
        mode: 0o644,
    };

    /// The same, also creating missing parent directories (`kXR_mkpath`).
    pub const fn mkpath(self) -> OpenFlags {
        OpenFlags {
            options: OpenOptions(self.options.0 | OpenOptions::MKPATH.0),
            mode: self.mode,
        }
    }

    /// The same with permissions `mode` for a created file.
    pub const fn with_mode(self, mode: u16) -> OpenFlags {
        OpenFlags {
            options: self.options,
            mode,
        }
    }

    /// Whether a file opened with these flags is only read (no
    /// `kXR_open_updt`, `kXR_open_wrto`, `kXR_open_apnd`, `kXR_new`,
    /// `kXR_delete`).
    fn read_only(self) -> bool {
        let writes = OpenOptions::UPDATE
            | OpenOptions::WRITE_ONLY
            | OpenOptions::APPEND
            | OpenOptions::NEW
            | OpenOptions::DELETE;
        self.options.0 & writes.0 == 0
    }

    /// The flags a re-open after a lost connection uses: nothing created or
    /// truncated again.
    fn for_reopen(self) -> OpenFlags {
        OpenFlags {
            options: self
                .options
                .without(OpenOptions::NEW)
                .without(OpenOptions::DELETE),
            mode: self.mode,
        }
    }
}

/// Where a file's handle lives.
#[derive(Debug, Clone)]
pub(crate) struct Handle {
    pub(crate) fhandle: FHandle,
    pub(crate) link: Arc<Link>,
    /// The server that holds the handle (after redirects).
    pub(crate) url: Url,
    /// The load balancer the open met on the way, if any.
    pub(crate) load_balancer: Option<Url>,
}

/// An open file. Dropping it without [`File::close`] leaves the handle open
/// on the server until the connection ends.
///
/// Calls and close: [`File::close`] waits until every call begun before it
/// on this `File` (from any task: reads, writes, stat, ...) has ended, then
/// sends `kXR_close`, so that no answer to them can come from a handle the
/// server has since given to another file; a call begun once close has
/// begun fails with [`Error::NotOpen`] at once, without a request. A call
/// ends when its future completes or is dropped: one kept unpolled keeps
/// close waiting.
#[derive(Debug)]
pub struct File {
    /// The channels and settings of the client that opened it.
    pub(crate) dialer: Arc<Dialer>,
    /// The spread entry it was opened on, if any
    /// ([`Client::open`](crate::Client::open)): pending until the file is
    /// dropped.
    _entry: Option<Arc<SpreadEntry>>,
    /// The URL as opened (before redirects), used to re-open.
    url: Url,
    flags: OpenFlags,
    /// `None` once closed. Its lock also orders [`File::begin`] against
    /// the start of [`File::close`].
    handle: Mutex<Option<Handle>>,
    /// Set (under the `handle` lock) when close begins: no call begins
    /// after it.
    closing: AtomicBool,
    /// Calls in progress ([`Op`]); close waits for 0.
    calls: watch::Sender<usize>,
    stat: Mutex<Option<StatInfo>>,
}

impl File {
    /// Opens `url` with `flags` through `dialer`, keeping `entry` (see
    /// [`File::open`]). Errors: those of [`File::open`].
    pub(crate) async fn open_with(
        dialer: Arc<Dialer>,
        entry: Option<Arc<SpreadEntry>>,
        url: &Url,
        flags: OpenFlags,
    ) -> Result<File> {
        let (handle, stat) = open_at(&dialer, url, flags).await?;
        Ok(File {
            dialer,
            _entry: entry,
            url: url.clone(),
            flags,
            handle: Mutex::new(Some(handle)),
            closing: AtomicBool::new(false),
            calls: watch::channel(0).0,
            stat: Mutex::new(stat),
        })
    }

    /// The URL the file was opened with.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The URL of the server that holds the file (after redirects).
    pub fn server_url(&self) -> Option<Url> {
        self.handle.lock().unwrap().as_ref().map(|h| h.url.clone())
    }

    /// Whether the connection that holds the file runs TLS (its main
    /// stream; XrdCl's `File::IsSecure`, which xrdcp consults to skip
    /// `kXR_pgread` / `kXR_pgwrite`: TLS protects the data already).
    /// `false` when closed.
    pub fn is_secure(&self) -> bool {
        self.handle
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|h| h.link.info.tls)
    }

    /// The stat the server returned at open (or the last [`File::stat`]).
    pub fn cached_stat(&self) -> Option<StatInfo> {
        self.stat.lock().unwrap().clone()
    }

    /// Begins a call on the handle: [`File::close`] waits until the
    /// returned [`Op`] is dropped. Every public call holds one for its
    /// whole run; what it calls inside does not take another. Errors:
    /// [`Error::NotOpen`] once close has begun.
    pub(crate) fn begin(&self) -> Result<Op<'_>> {
        let handle = self.handle.lock().unwrap();
        if handle.is_none() || self.closing.load(Ordering::Acquire) {
            return Err(Error::NotOpen);
        }
        self.calls.send_modify(|n| *n += 1);
        Ok(Op(self))
    }

    /// The current handle, re-opening first if its connection died.
    /// Errors: [`Error::NotOpen`] after close; those of re-opening.
    pub(crate) async fn handle(&self) -> Result<Handle> {
        let current = self.handle.lock().unwrap().clone();
        match current {
            None => Err(Error::NotOpen),
            Some(h) if !h.link.is_dead() => Ok(h),
            Some(lost) => {
                let (h, stat) = self.reopen(&lost).await?;
                *self.handle.lock().unwrap() = Some(h.clone());
                if stat.is_some() {
                    *self.stat.lock().unwrap() = stat;
                }
                Ok(h)
            }
        }
    }

    /// Opens the file again after the connection of `lost` died: at its
    /// data server, or, for a file only read that the data server cannot
    /// take back, at the load balancer (see the module docs).
    async fn reopen(&self, lost: &Handle) -> Result<(Handle, Option<StatInfo>)> {
        let flags = self.flags.for_reopen();
        let mut server = lost.url.clone();
        server.cgi.retain(|(k, _)| k != "tried" && k != "triedrc");
        tracing::debug!(url = %server, "connection lost: re-opening at the data server");
        let err = match open_at(&self.dialer, &server, flags).await {
            Err(e) if self.flags.read_only() => e,
            done => return done,
        };
        let reason = match &err {
            Error::Io { .. } | Error::ConnectionLost { .. } | Error::Timeout { .. } => "srverr",
            Error::Server { code, .. } if driver::retry_at_load_balancer(*code) => {
                driver::tried_reason(*code).unwrap_or("")
            }
            _ => return Err(err),
        };
        let mut back = lost
            .load_balancer
            .clone()
            .unwrap_or_else(|| self.url.clone());
        if back.host_port() == server.host_port() {
            return Err(err);
        }
        back.cgi.retain(|(k, _)| k != "tried" && k != "triedrc");
        back.cgi.push(("tried".into(), server.host.clone()));
        if !reason.is_empty() {
            back.cgi.push(("triedrc".into(), reason.into()));
        }
        tracing::debug!(error = %err, url = %back, "re-opening at the load balancer");
        open_at(&self.dialer, &back, flags).await
    }

    /// What the server holding the handle says about its readv limits and
    /// the `kXR_pgreadv` extension (one `kXR_Qconfig` per connection).
    pub(crate) async fn server_config(&self) -> Result<ServerConfig> {
        let h = self.handle().await?;
        qconfig::server_config(&self.dialer, &h.link, &h.url).await
    }

    /// What the server holding the handle offers for reads: `kXR_pgread`,
    /// the `kXR_pgreadv` extension and the readv limits, with which a
    /// caller can tell how many requests [`File::readv`], [`File::pgreadv`]
    /// and [`File::pgread`] will send and whether their data is checked by
    /// page crc32c. Asks `kXR_Qconfig` once per connection, as those calls
    /// do (no request when one of them already asked).
    ///
    /// Errors: [`Error::NotOpen`] after close; those of re-opening a lost
    /// connection and of the query (a server that refuses it gets the
    /// stock limits and no `kXR_pgreadv`).
    #[doc(alias = "kXR_Qconfig")]
    pub async fn read_support(&self) -> Result<ReadSupport> {
        let _op = self.begin()?;
        let pgread = self.supports_pgrw().await?;
        Ok(ReadSupport::new(pgread, &self.server_config().await?))
    }

    /// Whether the server holding the handle serves `kXR_pgread` and
    /// `kXR_pgwrite` (`kXR_suppgrw` at protocol 5.1 or later).
    pub(crate) async fn supports_pgrw(&self) -> Result<bool> {
        Ok(self.handle().await?.link.info.supports_pgrw())
    }

    /// Runs a handle-based request built by `make` (reads carry the pathid
    /// of the least-loaded substream), re-opening and retrying once if the
    /// connection was lost. Reads go with the pathid of the
    /// least-loaded substream ([`Link::route_read`]).
    pub(crate) async fn call(&self, make: impl Fn(FHandle) -> Request) -> Result<Reply> {
        Ok(self.call_with_handle(make).await?.0)
    }

    /// [`File::call`], also returning the file handle the answered request
    /// carried (a re-open may change it).
    pub(crate) async fn call_with_handle(
        &self,
        make: impl Fn(FHandle) -> Request,
    ) -> Result<(Reply, FHandle)> {
        let h = self.handle().await?;
        let (req, _path) = h.link.route_read(make(h.fhandle));
        match driver::execute_on(&self.dialer, &h.link, &h.url, &req).await {
            // the connection died under the request (dropped, or silent past
            // the stream timeout): re-open on a new one and retry once
            Err(Error::ConnectionLost { .. } | Error::Timeout { what: "stream", .. }) => {
                let h = self.handle().await?;
                let (req, _path) = h.link.route_read(make(h.fhandle));
                let reply = driver::execute_on(&self.dialer, &h.link, &h.url, &req).await?;
                Ok((reply, h.fhandle))
            }
            other => other.map(|reply| (reply, h.fhandle)),
        }
    }

    /// Reads up to `len` bytes at `offset`; fewer only at end of file.
    /// Errors: [`Error::NotOpen`] after close; [`Error::InvalidArgument`]
    /// for `len` over `i32::MAX`;
    /// [`Error::UnexpectedResponse`] as soon as the answer brings more than
    /// `len` bytes (or more than a few empty `kXR_oksofar` frames); the
    /// server's and connection's errors.
    pub async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let _op = self.begin()?;
        self.read_at_in_op(offset, len).await
    }

    /// [`File::read_at`] without joining the answer: its data as the
    /// server's frames brought it, in file order, `Vec<Bytes>` of up to
    /// `len` bytes in all (fewer only at end of file; parts may be empty).
    /// A server that answers in several `kXR_oksofar` frames (the stock one
    /// does over TLS, in pieces of its buffer size) costs [`File::read_at`]
    /// one copy of the whole answer to join them; a caller that writes the
    /// data out (`write_vectored`, a hash, a file) can skip it here.
    /// Errors: those of [`File::read_at`].
    pub async fn read_parts_at(&self, offset: u64, len: usize) -> Result<Vec<Bytes>> {
        let _op = self.begin()?;
        self.read_reply(offset, len)
            .await?
            .into_parts(RequestId::READ)
    }

    /// [`File::read_at`] within a call already begun.
    pub(crate) async fn read_at_in_op(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.read_reply(offset, len)
            .await?
            .into_bytes(RequestId::READ)
    }

    /// One `kXR_read` of `len` bytes at `offset`, its reply as it came.
    async fn read_reply(&self, offset: u64, len: usize) -> Result<Reply> {
        let rlen = i32::try_from(len)
            .map_err(|_| Error::InvalidArgument(format!("read of {len} bytes")))?;
        let offset = to_offset(offset)?;
        self.call(|fhandle| {
            Read {
                fhandle,
                offset,
                rlen,
                args: None,
            }
            .into()
        })
        .await
    }

    /// Writes `data` at `offset` (plain `kXR_write`).
    /// Errors: [`Error::NotOpen`] after close; [`Error::InvalidArgument`]
    /// for an offset past `i64::MAX`; the server's and connection's errors.
    pub async fn write_at(&self, offset: u64, data: Bytes) -> Result<()> {
        let _op = self.begin()?;
        self.write_at_in_op(offset, data).await
    }

    /// [`File::write_at`] within a call already begun.
    pub(crate) async fn write_at_in_op(&self, offset: u64, data: Bytes) -> Result<()> {
        let offset = to_offset(offset)?;
        self.call(|fhandle| {
            Write {
                fhandle,
                offset,
                pathid: 0,
                data: data.clone(),
            }
            .into()
        })
        .await?;
        Ok(())
    }

    /// Flushes the file to stable storage on the server.
    /// Errors: [`Error::NotOpen`] after close; the server's and
    /// connection's errors.
    pub async fn sync(&self) -> Result<()> {
        let _op = self.begin()?;
        self.call(|fhandle| Sync { fhandle }.into()).await?;
        Ok(())
    }

    /// Sets the file's size to `size` bytes.
    /// Errors: [`Error::NotOpen`] after close; [`Error::InvalidArgument`]
    /// for a size past `i64::MAX`; the server's and connection's errors.
    pub async fn truncate(&self, size: u64) -> Result<()> {
        let _op = self.begin()?;
        let offset = to_offset(size)?;
        self.call(|fhandle| {
            Truncate {
                fhandle,
                offset,
                path: Bytes::new(),
            }
            .into()
        })
        .await?;
        Ok(())
    }

    /// Asks the server for the file's stat (by handle).
    /// Errors: [`Error::NotOpen`] after close; [`Error::UnexpectedResponse`]
    /// for an answer that does not parse; the server's and connection's
    /// errors.
    pub async fn stat(&self) -> Result<StatInfo> {
        let _op = self.begin()?;
        let body = self
            .call(|fhandle| {
                Stat {
                    fhandle,
                    ..Default::default()
                }
                .into()
            })
            .await?
            .into_bytes(RequestId::STAT)?;
        let st = StatInfo::decode(body)
            .map_err(|e| Error::unexpected(RequestId::STAT, e.to_string()))?;
        *self.stat.lock().unwrap() = Some(st.clone());
        Ok(st)
    }

    /// Closes the file: refuses calls from now on, waits until the calls
    /// in progress on this `File` have ended, then sends `kXR_close` (see
    /// [`File`]). A close abandoned while it waits (its future dropped)
    /// leaves the file open.
    ///
    /// Errors: [`Error::NotOpen`] for a second close (or one begun while
    /// another waits); the server's (`kXR_ChkSumErr` for pgwrite pages left
    /// bad, ...) and connection's errors. A handle whose connection died is
    /// closed with it: no request, `Ok`.
    pub async fn close(&self) -> Result<()> {
        {
            let handle = self.handle.lock().unwrap();
            if handle.is_none() || self.closing.swap(true, Ordering::AcqRel) {
                return Err(Error::NotOpen);
            }
        }
        let mut waiting = Closing {
            file: self,
            abandoned: true,
        };
        let _ = self.calls.subscribe().wait_for(|n| *n == 0).await;
        let h = self.handle.lock().unwrap().take();
        waiting.abandoned = false;
        let h = h.ok_or(Error::NotOpen)?;
        if h.link.is_dead() {
            return Ok(()); // the server closed it with the connection
        }
        driver::execute_on(
            &self.dialer,
            &h.link,
            &h.url,
            &Close { fhandle: h.fhandle }.into(),
        )
        .await?;
        Ok(())
    }
}

/// A call in progress on a [`File`]'s handle ([`File::begin`]).
#[derive(Debug)]
pub(crate) struct Op<'a>(&'a File);

impl Drop for Op<'_> {
    fn drop(&mut self) {
        self.0.calls.send_modify(|n| *n -= 1);
    }
}

/// A [`File::close`] waiting for the calls in progress; dropped before it
/// takes the handle (the close abandoned), it lets calls begin again.
struct Closing<'a> {
    file: &'a File,
    abandoned: bool,
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        if self.abandoned {
            let _handle = self.file.handle.lock().unwrap();
            self.file.closing.store(false, Ordering::Release);
        }
    }
}

async fn open_at(
    dialer: &Dialer,
    url: &Url,
    flags: OpenFlags,
) -> Result<(Handle, Option<StatInfo>)> {
    let req = Open {
        mode: Mode(flags.mode),
        options: flags.options | OpenOptions::ASYNC | OpenOptions::RETSTAT,
        path: Bytes::from(url.path_with_cgi()),
        ..Default::default()
    };
    let answered = driver::execute(dialer, url, req.into()).await?;
    let body = answered.reply.into_bytes(RequestId::OPEN)?;
    let open = OpenResponse::decode(body)
        .map_err(|e| Error::unexpected(RequestId::OPEN, e.to_string()))?;
    Ok((
        Handle {
            fhandle: open.fhandle,
            link: answered.link,
            url: answered.url,
            load_balancer: answered.load_balancer,
        },
        open.stat,
    ))
}

pub(crate) fn to_offset(offset: u64) -> Result<i64> {
    i64::try_from(offset).map_err(|_| Error::InvalidArgument(format!("offset {offset}")))
}
