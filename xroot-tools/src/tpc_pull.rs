//! The destination's pull for `serve --tpc`: [`xroot_server::Puller`] over
//! `xroot-client`, wired here because `xroot-server` does not depend on
//! `xroot-client` (ARCHITECTURE.md "Third-party copy").
//!
//! One pull opens the source once (the key it presents is good for one
//! open), on a channel of its own with `tpc.str` streams (the main one plus
//! `kXR_bind` substreams, as the stock's copy program gets them), and reads
//! it with up to `tpc.str` pgreads of `chunk` bytes in flight (pgread with
//! crc32c where the source offers it, plain reads elsewhere), each written
//! at its offset as it arrives: at most `streams × chunk` bytes held.
//!
//! Credentials: a pull uses the source CGI the client delegated
//! (`tpc.scgi`); a bearer token in it (`authz=Bearer%20...` or
//! `authz=...`) is the one answered to a `ztn` source. Without one, `ztn`
//! is not offered: the server never presents a token of its own for a
//! client's copy.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::{try_join_all, BoxFuture};
use xroot_client::{Client, Config, Error, OpenFlags};
use xroot_proto::url::Url;
use xroot_server::tpc::{PullError, PullRequest, PullSink, Puller};
use xroot_server::ErrorCode;

/// Pulls with `xroot-client`, each pull on a client of its own built from
/// a base configuration (TLS trust, timeouts).
#[derive(Debug, Clone)]
pub struct ClientPuller {
    base: Config,
}

impl ClientPuller {
    /// Pulls whose clients start from `base`.
    pub fn new(base: Config) -> ClientPuller {
        ClientPuller { base }
    }

    /// The client of one pull: `streams` streams, the delegated token or
    /// no `ztn` at all.
    fn client(&self, url: &Url, streams: u8) -> Client {
        let mut config = self.base.clone();
        config.substreams = usize::from(streams.max(1));
        match delegated_token(url) {
            Some(token) => config.bearer_token = Some(xroot_sec::ztn::BearerToken::new(token)),
            None => {
                config.bearer_token = None;
                let all = ["host", "unix", "sss", "gsi"];
                let allowed = match &config.sec_protocols {
                    Some(p) => p.iter().filter(|p| *p != "ztn").cloned().collect(),
                    None => all.iter().map(|p| p.to_string()).collect(),
                };
                config.sec_protocols = Some(allowed);
            }
        }
        Client::with_config(config)
    }
}

/// The token in a URL's `authz` CGI, without its `Bearer ` prefix.
fn delegated_token(url: &Url) -> Option<String> {
    let authz = url.cgi_value("authz")?;
    let authz = authz.replace("%20", " ");
    let token = authz.strip_prefix("Bearer ").unwrap_or(&authz).trim();
    (!token.is_empty()).then(|| token.to_string())
}

fn parse(url: &str) -> Result<Url, PullError> {
    Url::parse(url)
        .map_err(|e| PullError::new(ErrorCode::ARG_INVALID, format!("tpc source {url}: {e}")))
}

/// A client error as the destination's: the source's own code when it
/// refused.
fn failed(what: &str, e: Error) -> PullError {
    let code = e.server_code().unwrap_or(ErrorCode::SERVER_ERROR);
    PullError::new(code, format!("tpc source {what}: {e}"))
}

impl Puller for ClientPuller {
    fn pull<'a>(
        &'a self,
        request: &'a PullRequest,
        sink: &'a dyn PullSink,
    ) -> BoxFuture<'a, Result<u64, PullError>> {
        Box::pin(async move {
            let url = parse(&request.url)?;
            let client = self.client(&url, request.streams);
            let file = client
                .open(&request.url, OpenFlags::READ)
                .await
                .map_err(|e| failed("open", e))?;
            let size = match file.cached_stat() {
                Some(s) => s.size,
                None => file.stat().await.map_err(|e| failed("stat", e))?.size,
            };
            let chunk = request.chunk.max(1) as u64;
            let next = AtomicU64::new(0);
            let worker = || async {
                loop {
                    let at = next.fetch_add(chunk, Ordering::Relaxed);
                    if at >= size {
                        return Ok::<(), PullError>(());
                    }
                    let want = chunk.min(size - at) as usize;
                    let data = file.pgread(at, want).await.map_err(|e| failed("read", e))?;
                    if data.len() != want {
                        return Err(PullError::new(
                            ErrorCode::IO_ERROR,
                            format!(
                                "tpc source read: {} bytes at {at}, expected {want}",
                                data.len()
                            ),
                        ));
                    }
                    sink.write_at(at, data).await.map_err(|e| {
                        PullError::new(ErrorCode::IO_ERROR, format!("tpc write: {e}"))
                    })?;
                }
            };
            let copied = try_join_all((0..request.streams.max(1)).map(|_| worker())).await;
            let _ = file.close().await;
            copied.map(|_| size)
        })
    }

    fn checksum<'a>(
        &'a self,
        request: &'a PullRequest,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<String, PullError>> {
        Box::pin(async move {
            let url = parse(&request.url)?;
            let client = self.client(&url, 1);
            let fs = client.fs(&request.url).map_err(|e| failed("checksum", e))?;
            let (_, value) = fs
                .query_checksum(&url.path, Some(kind))
                .await
                .map_err(|e| failed("checksum", e))?;
            Ok(value.to_ascii_lowercase())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delegated_token_and_nothing_else() {
        let url = |s| Url::parse(s).unwrap();
        let t = delegated_token(&url("root://h//f?tpc.key=k&authz=Bearer%20abc"));
        assert_eq!(t.as_deref(), Some("abc"));
        assert_eq!(
            delegated_token(&url("root://h//f?authz=abc")).as_deref(),
            Some("abc")
        );
        assert_eq!(delegated_token(&url("root://h//f?tpc.key=k")), None);
        let p = ClientPuller::new(Config::default());
        let c = p.client(&url("root://h//f?tpc.key=k"), 3);
        assert_eq!(c.config().substreams, 3);
        assert!(c.config().bearer_token.is_none());
        let protocols = c.config().sec_protocols.clone().unwrap();
        assert!(!protocols.iter().any(|p| p == "ztn"), "{protocols:?}");
    }
}
