//! The client: a set of channels keyed by [`ChannelKey`], shared by every
//! [`File`] and [`FileSystem`] made from it.

use std::sync::Arc;

use xroot_proto::url::Url;

use crate::channel::Channel;
use crate::config::Config;
use crate::dialer::Dialer;
use crate::error::{Error, Result};
use crate::file::{File, OpenFlags};
use crate::fs::FileSystem;
use crate::key::ChannelKey;
use crate::spread::{Spread, Spreader};
use crate::stats::ChannelStats;

/// The CGI key that selects a channel without changing what the server sees.
const INTENT: &str = "xrdcl.intent";

/// An XRootD client. Cheap to clone; clones share channels.
///
/// ```no_run
/// # async fn demo() -> Result<(), xroot_client::Error> {
/// use xroot_client::{Client, OpenFlags};
/// let client = Client::new();
/// let file = client.open("root://eos.example.org//store/f.root", OpenFlags::READ).await?;
/// let head = file.read_at(0, 1024).await?; // up to 1024 bytes at offset 0
/// file.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The channels and settings, which files and file systems share.
    dialer: Arc<Dialer>,
    spreader: Arc<Spreader>,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    /// A client with [`Config::default`] (the reference client's defaults).
    pub fn new() -> Client {
        Self::with_config(Config::default())
    }

    /// A client with `config`.
    pub fn with_config(config: Config) -> Client {
        Client {
            inner: Arc::new(Inner {
                dialer: Arc::new(Dialer::new(config)),
                spreader: Arc::default(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        self.inner.dialer.config()
    }

    /// The channel for `key`, created (not yet connected) if new.
    pub fn channel(&self, key: &ChannelKey) -> Arc<Channel> {
        self.inner.dialer.channel(key)
    }

    /// Every channel made so far.
    pub fn channels(&self) -> Vec<Arc<Channel>> {
        self.inner.dialer.channels()
    }

    /// Counters of every channel made so far, by key (in key order). See
    /// [`ChannelStats`] for their units.
    pub fn stats(&self) -> Vec<(ChannelKey, ChannelStats)> {
        let mut all: Vec<_> = self
            .channels()
            .iter()
            .map(|c| (c.key().clone(), c.stats()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Sets how [`Client::open`] spreads files over channels (off by
    /// default). Clones share the policy; files already open keep their
    /// channels.
    pub fn set_spread(&self, spread: Spread) {
        self.inner.spreader.set(spread);
    }

    /// The spreading policy in force.
    pub fn spread(&self) -> Spread {
        self.inner.spreader.policy()
    }

    /// Opens the file at `url` (`root://[user@]host[:port]//path[?cgi]`).
    ///
    /// With a [`Spread`] policy set and no `xrdcl.intent` in `url`, the
    /// file gets the policy's next entry `k` and is opened with
    /// `xrdcl.intent=k` added (none for entry 0), so on the channel of that
    /// key; [`File::url`] shows it. When every entry is full the file is
    /// opened as if spreading were off.
    ///
    /// Errors: [`Error::Url`], and those of [`File::open`].
    pub async fn open(&self, url: &str, flags: OpenFlags) -> Result<File> {
        let mut url = parse(url)?;
        let entry = match url.cgi_value(INTENT) {
            Some(_) => None,
            None => self.inner.spreader.take(),
        };
        let Some(entry) = entry else {
            return File::open(self, &url, flags).await;
        };
        if let Some(k) = entry.intent() {
            url.cgi.push((INTENT.to_string(), k));
        }
        // the file keeps the entry: pending until the file is dropped
        let entry = Some(Arc::new(entry));
        File::open_with(Arc::clone(&self.inner.dialer), entry, &url, flags).await
    }

    /// Namespace and query calls against the server of `url` (its path is
    /// ignored). Errors: [`Error::Url`].
    pub fn fs(&self, url: &str) -> Result<FileSystem> {
        Ok(FileSystem::new(Arc::clone(&self.inner.dialer), parse(url)?))
    }
}

// Here rather than in file.rs: a file knows nothing of its client but the
// dialer (and spread entry) it keeps.
impl File {
    /// Opens `url` with `flags` on `client`'s channels. Errors:
    /// [`Error::Server`] (e.g. `kXR_NotFound`), connection errors (among
    /// them [`Error::Tls`] when TLS is needed and fails),
    /// [`Error::RedirectLimit`], [`Error::Timeout`].
    pub async fn open(client: &Client, url: &Url, flags: OpenFlags) -> Result<File> {
        File::open_with(Arc::clone(&client.inner.dialer), None, url, flags).await
    }
}

pub(crate) fn parse(url: &str) -> Result<Url> {
    Url::parse(url).map_err(Error::Url)
}
