//! The client: a set of channels keyed by [`ChannelKey`], shared by every
//! [`File`] and [`FileSystem`] made from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use xroot_proto::url::Url;

use crate::channel::Channel;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::file::{File, OpenFlags};
use crate::fs::FileSystem;
use crate::key::ChannelKey;
use crate::spread::{Spread, SpreadEntry, Spreader};
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
    /// The spread entry of the file this handle was made for (see
    /// [`Client::open`]): a [`File`] keeps a clone of the `Client` it was
    /// opened with, so the entry stays pending until the file is dropped.
    _entry: Option<Arc<SpreadEntry>>,
}

#[derive(Debug)]
struct Inner {
    config: Arc<Config>,
    channels: Mutex<HashMap<ChannelKey, Arc<Channel>>>,
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
                config: Arc::new(config),
                channels: Mutex::new(HashMap::new()),
                spreader: Arc::default(),
            }),
            _entry: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The channel for `key`, created (not yet connected) if new.
    pub fn channel(&self, key: &ChannelKey) -> Arc<Channel> {
        let mut map = self.inner.channels.lock().unwrap();
        Arc::clone(map.entry(key.clone()).or_insert_with(|| {
            Arc::new(Channel::new(
                key.clone(),
                Arc::clone(&self.inner.config),
                self.inner.config.substreams,
            ))
        }))
    }

    /// Every channel made so far.
    pub fn channels(&self) -> Vec<Arc<Channel>> {
        self.inner
            .channels
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect()
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
        let holder = Client {
            inner: Arc::clone(&self.inner),
            _entry: Some(Arc::new(entry)),
        };
        File::open(&holder, &url, flags).await
    }

    /// Namespace and query calls against the server of `url` (its path is
    /// ignored). Errors: [`Error::Url`].
    pub fn fs(&self, url: &str) -> Result<FileSystem> {
        Ok(FileSystem::new(self.clone(), parse(url)?))
    }
}

pub(crate) fn parse(url: &str) -> Result<Url> {
    Url::parse(url).map_err(Error::Url)
}
