//! Driving a native third-party copy (TPC): the destination pulls the file
//! straight from the source; the client only arranges the rendezvous and
//! waits (PROTOCOL.md §18.5).
//!
//! [`ThirdPartyCopy::run`] does what the stock `xrdcp --tpc only` 5.5.3
//! does on the wire (its `XRD_LOGLEVEL=Dump` log against two `ofs.tpc`
//! servers; upstream `src/XrdCl/XrdClThirdPartyCopyJob.cc`), every request
//! on channels of intent `tpc`:
//!
//! 1. opens the source for reading with `tpc.stage=placement`, for its
//!    size, and closes it;
//! 2. asks the source `kXR_Qconfig tpc`: a server that does not answer a
//!    number ≥ 1 does not take part ([`TpcError::SourceUnsupported`], on
//!    which `xrdcp --tpc first` copies the usual way);
//! 3. opens the destination for writing (`kXR_new`, or `kXR_delete` to
//!    replace, mode 0644) with the [`PullOrder`]'s CGI and a fresh random
//!    key;
//! 4. `kXR_sync` on the destination: the stock server starts the copy and
//!    answers at once;
//! 5. opens the source with the rendezvous, `tpc.dst=HOST&tpc.key=KEY&
//!    tpc.stage=copy` ([`tpc::grant_pairs`]): the source now lets the destination
//!    that presents the key read;
//! 6. `kXR_sync` on the destination again: the stock server answers
//!    `kXR_waitresp` and, when the copy ends, its outcome; meanwhile
//!    `kXR_stat` on the destination's handle every
//!    [`ThirdPartyCopy::progress_every`] reports the bytes so far (the
//!    stock client polls every 2.5 s and only then looks whether the copy
//!    ended; this one ends as soon as the answer comes);
//! 7. closes the source, then the destination.
//!
//! A failure closes what was opened and names the side it came from; the
//! client removes nothing (a stock destination with `ofs.tpc autorm`
//! removes what a failed copy left).

use std::time::Duration;

use xroot_proto::tpc::{self, PullOrder};
use xroot_proto::url::Url;

use crate::client::Client;
use crate::error::Error;
use crate::file::{File, OpenFlags};

/// The `xrdcl.intent` of a TPC's channels, as the stock client's.
const INTENT: (&str, &str) = ("xrdcl.intent", "tpc");

/// Random bytes in a rendezvous key: 12, the stock client's 24 hex digits.
const KEY_BYTES: usize = 12;

/// Why a third-party copy failed; the side comes first in the message.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum TpcError {
    /// A request to the source failed (the placement open, the query, the
    /// rendezvous open, its close).
    #[error("source {url}: {error}")]
    Source {
        /// The source as given.
        url: String,
        /// The client's error (the server's code kept).
        #[source]
        error: Error,
    },
    /// A request to the destination failed: its open, the syncs that start
    /// and await the copy (the copy's own failure comes back here, with
    /// the destination's words), a progress stat, its close.
    #[error("target {url}: {error}")]
    Target {
        /// The destination as given.
        url: String,
        /// The client's error.
        #[source]
        error: Error,
    },
    /// The source answered `kXR_Qconfig tpc` with no positive number: it
    /// does not take part in third-party copies.
    #[error("source {url}: does not support third-party copy (kXR_Qconfig tpc: {answer:?})")]
    SourceUnsupported {
        /// The source as given.
        url: String,
        /// Its answer (the stock server echoes `tpc`).
        answer: String,
    },
    /// The copy did not end within [`ThirdPartyCopy::timeout`].
    #[error("target {url}: third-party copy not done after {after:?}")]
    Timeout {
        /// The destination as given.
        url: String,
        /// The limit.
        after: Duration,
    },
    /// The destination said the copy succeeded but holds another size.
    #[error("target {url}: holds {got} bytes after the copy, the source {expected}")]
    Incomplete {
        /// The destination as given.
        url: String,
        /// Bytes at the destination.
        got: u64,
        /// Bytes at the source.
        expected: u64,
    },
}

/// One third-party copy of `source` to `target`, both `root://` URLs (the
/// source's CGI, a token's `authz=` among it, goes with every open of the
/// source and, with [`ThirdPartyCopy::delegate`], to the destination as
/// `tpc.scgi`; the target's with the target's open).
#[derive(Debug, Clone)]
pub struct ThirdPartyCopy {
    source: Url,
    target: Url,
    force: bool,
    streams: u8,
    delegate: bool,
    timeout: Duration,
    progress_every: Duration,
}

impl ThirdPartyCopy {
    /// A copy with the stock client's defaults: the target must not exist,
    /// one stream, no delegation, 1800 s for the copy (`XRD_CPTPCTIMEOUT`),
    /// progress every second.
    pub fn new(source: Url, target: Url) -> ThirdPartyCopy {
        ThirdPartyCopy {
            source,
            target,
            force: false,
            streams: 1,
            delegate: false,
            timeout: Duration::from_secs(1800),
            progress_every: Duration::from_secs(1),
        }
    }

    /// Replace an existing target (`kXR_delete` rather than `kXR_new`).
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Streams the destination reads the source with (`tpc.str`: 1 to
    /// [`tpc::MAX_STREAMS`], bounded to that).
    pub fn streams(mut self, streams: u16) -> Self {
        self.streams = streams.clamp(1, tpc::MAX_STREAMS.into()) as u8;
        self
    }

    /// Delegate the client's credential (`tpc.dlgon=1`) and pass the
    /// source's CGI to the destination (`tpc.scgi`), as `xrdcp --tpc
    /// delegate`.
    pub fn delegate(mut self, delegate: bool) -> Self {
        self.delegate = delegate;
        self
    }

    /// How long the copy may take once started (`XRD_CPTPCTIMEOUT`, 1800 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How often the destination is asked how far it is (1 s). It also
    /// keeps the connection from looking idle while the copy runs.
    pub fn progress_every(mut self, every: Duration) -> Self {
        self.progress_every = every.max(Duration::from_millis(10));
        self
    }

    /// Runs the copy on `client`'s channels, calling `progress(done,
    /// total)` (bytes at the destination, the source's size) as the
    /// destination reports, and last with `(total, total)`. Returns the
    /// bytes copied.
    ///
    /// Errors: [`TpcError`], naming the side: the source's
    /// (`kXR_NotFound` for a missing file...), [`TpcError::SourceUnsupported`],
    /// the destination's (`kXR_ItemExists` without [`ThirdPartyCopy::force`],
    /// `kXR_Unsupported` from a server without TPC, the copy's failure),
    /// [`TpcError::Timeout`], [`TpcError::Incomplete`].
    pub async fn run(
        &self,
        client: &Client,
        mut progress: impl FnMut(u64, u64) + Send,
    ) -> Result<u64, TpcError> {
        let (src_err, dst_err) = (|e| self.source_error(e), |e| self.target_error(e));
        // 1. placement: the size
        let placement = with_cgi(&self.source, &[(tpc::STAGE, "placement")]);
        let probe = File::open(client, &placement, OpenFlags::READ)
            .await
            .map_err(src_err)?;
        let size = match probe.cached_stat() {
            Some(st) => st.size,
            None => probe.stat().await.map_err(src_err)?.size,
        };
        probe.close().await.map_err(src_err)?;
        // 2. does the source take part?
        let fs = client
            .fs(&with_cgi(&self.source, &[]).to_string())
            .map_err(src_err)?;
        let answer = fs.query_config(&["tpc"]).await.map_err(src_err)?;
        let answer = answer.into_iter().next().unwrap_or_default();
        if !tpc::supported(&answer) {
            return Err(TpcError::SourceUnsupported {
                url: self.source.to_string(),
                answer,
            });
        }
        // 3. the destination, told where to pull from
        let key = new_key();
        let mut order = PullOrder::new(&self.source.host_port(), &self.source.path, &key);
        order.size = Some(size);
        order.streams = self.streams;
        order.delegated = self.delegate;
        order.scgi = user_cgi(&self.source);
        let flags = match self.force {
            true => OpenFlags::OVERWRITE,
            false => OpenFlags::NEW,
        };
        let pairs = order.to_pairs();
        let dst_url = with_cgi(&self.target, &borrowed(&pairs));
        let dst = File::open(client, &dst_url, flags).await.map_err(dst_err)?;
        let copied = self.drive(client, &dst, &key, size, &mut progress).await;
        let closed = dst.close().await.map_err(dst_err);
        let copied = copied?;
        closed?;
        progress(copied, size);
        Ok(copied)
    }

    fn source_error(&self, error: Error) -> TpcError {
        TpcError::Source {
            url: self.source.to_string(),
            error,
        }
    }

    fn target_error(&self, error: Error) -> TpcError {
        TpcError::Target {
            url: self.target.to_string(),
            error,
        }
    }

    /// Steps 4 to 6 and the source's close, with the destination open.
    async fn drive(
        &self,
        client: &Client,
        dst: &File,
        key: &str,
        size: u64,
        progress: &mut (impl FnMut(u64, u64) + Send),
    ) -> Result<u64, TpcError> {
        let (src_err, dst_err) = (|e| self.source_error(e), |e| self.target_error(e));
        // 4. start
        dst.sync().await.map_err(dst_err)?;
        // 5. the rendezvous at the source
        let rendezvous = tpc::grant_pairs(key, &self.target.host);
        let src_url = with_cgi(&self.source, &borrowed(&rendezvous));
        let src = File::open(client, &src_url, OpenFlags::READ)
            .await
            .map_err(src_err)?;
        // 6. await the end, asking how far it is meanwhile
        let waited = tokio::time::timeout(self.timeout, async {
            let done = dst.sync();
            tokio::pin!(done);
            let mut tick = tokio::time::interval(self.progress_every);
            tick.tick().await;
            loop {
                tokio::select! {
                    r = &mut done => return r,
                    _ = tick.tick() => {
                        // a poll that fails says nothing the sync will not
                        if let Ok(st) = dst.stat().await {
                            progress(st.size, size);
                        }
                    }
                }
            }
        })
        .await;
        let ended = match waited {
            Ok(r) => r.map_err(dst_err),
            Err(_) => Err(TpcError::Timeout {
                url: self.target.to_string(),
                after: self.timeout,
            }),
        };
        let src_closed = src.close().await.map_err(src_err);
        ended?;
        src_closed?;
        let got = dst.stat().await.map_err(dst_err)?.size;
        if got != size {
            return Err(TpcError::Incomplete {
                url: self.target.to_string(),
                got,
                expected: size,
            });
        }
        Ok(got)
    }
}

/// A fresh rendezvous key from the system's random source: 24 hex digits.
fn new_key() -> String {
    let mut raw = [0u8; KEY_BYTES];
    getrandom::fill(&mut raw).expect("the system's random source");
    tpc::key_from(&raw)
}

/// `url`'s CGI as the user gave it, without the client-only `xrdcl.*`:
/// `k=v&k=v`, `None` when there is none.
fn user_cgi(url: &Url) -> Option<String> {
    let items: Vec<String> = url
        .cgi
        .iter()
        .filter(|(k, _)| !k.starts_with("xrdcl."))
        .map(|(k, v)| match v.is_empty() {
            true => k.clone(),
            false => format!("{k}={v}"),
        })
        .collect();
    (!items.is_empty()).then(|| items.join("&"))
}

/// `url` on a TPC channel with `extra` CGI after its own (a key of its own
/// given again is replaced).
fn with_cgi(url: &Url, extra: &[(&str, &str)]) -> Url {
    let mut out = url.clone();
    out.cgi
        .retain(|(k, _)| k != INTENT.0 && !extra.iter().any(|(e, _)| e == k));
    out.cgi
        .extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    out.cgi.push((INTENT.0.to_string(), INTENT.1.to_string()));
    out
}

fn borrowed(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fresh_hex() {
        let (a, b) = (new_key(), new_key());
        assert_eq!(a.len(), 24);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn tpc_urls_keep_the_users_cgi_and_take_the_tpc_channel() {
        let u = Url::parse("root://h:1//f?authz=t&xrdcl.intent=x&tpc.key=old").unwrap();
        let at = with_cgi(&u, &[(tpc::KEY, "new")]);
        assert_eq!(at.path_with_cgi(), "/f?authz=t&tpc.key=new");
        assert_eq!(at.cgi_value("xrdcl.intent"), Some("tpc"));
        assert_eq!(user_cgi(&u).as_deref(), Some("authz=t&tpc.key=old"));
        let none = Url::parse("root://h//f?xrdcl.intent=x").unwrap();
        assert_eq!(user_cgi(&none), None);
    }
}
