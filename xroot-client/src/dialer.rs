//! The channels of a [`Client`](crate::Client) and the settings they are
//! made with: all that the driver needs to reach a server, a redirect's
//! target included, and all that files and file systems keep of their
//! client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::channel::Channel;
use crate::config::Config;
use crate::key::ChannelKey;

/// One channel per [`ChannelKey`], made (not yet connected) on first use,
/// with the client's [`Config`]. Shared by a client, its clones and every
/// file and file system made from them.
#[derive(Debug)]
pub(crate) struct Dialer {
    config: Arc<Config>,
    channels: Mutex<HashMap<ChannelKey, Arc<Channel>>>,
}

impl Dialer {
    /// No channels yet; they will be made with `config`.
    pub(crate) fn new(config: Config) -> Dialer {
        Dialer {
            config: Arc::new(config),
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The channel for `key`, created (not yet connected) if new.
    pub(crate) fn channel(&self, key: &ChannelKey) -> Arc<Channel> {
        let mut map = self.channels.lock().unwrap();
        Arc::clone(map.entry(key.clone()).or_insert_with(|| {
            Arc::new(Channel::new(
                key.clone(),
                Arc::clone(&self.config),
                self.config.substreams,
            ))
        }))
    }

    /// Every channel made so far.
    pub(crate) fn channels(&self) -> Vec<Arc<Channel>> {
        self.channels.lock().unwrap().values().cloned().collect()
    }
}
