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
    config: Arc<Config>,
    channels: Mutex<HashMap<ChannelKey, Arc<Channel>>>,
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
            }),
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

    /// Opens the file at `url` (`root://[user@]host[:port]//path[?cgi]`).
    /// Errors: [`Error::Url`], and those of [`File::open`].
    pub async fn open(&self, url: &str, flags: OpenFlags) -> Result<File> {
        File::open(self, &parse(url)?, flags).await
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
