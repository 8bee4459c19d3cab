//! What a data server says about its vector-read limits and this project's
//! `kXR_pgreadv` extension in its answer to one `kXR_query` `kXR_Qconfig`
//! (PROTOCOL.md §7.7, [`xroot_proto::ext`]): the request and the parsed
//! answer, kept on the [`Link`](super::Link) it was asked on, so that it is
//! asked once per connection whatever the number of files opened on it.

use bytes::Bytes;
use tokio::sync::OnceCell;
use xroot_proto::ext::{config_says_supported, PGREADV_CONFIG_KEY};
use xroot_proto::limits::{MAX_READV_ELEMENT, MAX_READV_ELEMENTS, MAX_READV_TOTAL, READ_LIST_LEN};
use xroot_proto::request::{Query, QueryCode, Request};
use xroot_proto::response::QconfigAnswer;

/// The keys asked, in this order.
const KEYS: [&str; 3] = ["readv_iov_max", "readv_ior_max", PGREADV_CONFIG_KEY];

/// A data server's answer to [`KEYS`]; a value that is missing or unusable
/// is the stock default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerConfig {
    /// Most elements in one `kXR_readv` (`readv_iov_max`; 1024).
    pub(crate) readv_iov_max: usize,
    /// Most bytes in one `kXR_readv` element (`readv_ior_max`; 2,097,136).
    pub(crate) readv_ior_max: usize,
    /// Whether the server serves `kXR_pgreadv` (it answered
    /// [`PGREADV_CONFIG_KEY`] with `1`).
    pub(crate) pgreadv: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            readv_iov_max: MAX_READV_ELEMENTS,
            readv_ior_max: MAX_READV_ELEMENT as usize,
            pgreadv: false,
        }
    }
}

impl ServerConfig {
    /// The `kXR_Qconfig` asking for [`KEYS`], NUL-terminated as XrdCl sends it.
    pub(crate) fn request() -> Request {
        Query {
            infotype: QueryCode::CONFIG,
            args: Bytes::from(format!("{}\0", KEYS.join(" "))),
            ..Default::default()
        }
        .into()
    }

    /// Reads the answer. `readv_iov_max` must be an integer in 1..=1024 and
    /// `readv_ior_max` one in 1..=`0x7fffffff − 16`; anything else (an
    /// echoed key, a wrong number of lines) keeps the default.
    pub(crate) fn parse(body: &Bytes) -> ServerConfig {
        let mut config = ServerConfig::default();
        let Some(values) = QconfigAnswer::decode(body.clone())
            .ok()
            .and_then(|a| a.with_keys(&KEYS).ok())
        else {
            return config;
        };
        let number = |v: &Bytes, max: usize| {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .filter(|n| (1..=max).contains(n))
        };
        let ior_cap = (MAX_READV_TOTAL - READ_LIST_LEN as u64) as usize;
        for (key, value) in values {
            match key {
                "readv_iov_max" => {
                    if let Some(n) = number(&value, MAX_READV_ELEMENTS) {
                        config.readv_iov_max = n;
                    }
                }
                "readv_ior_max" => {
                    if let Some(n) = number(&value, ior_cap) {
                        config.readv_ior_max = n;
                    }
                }
                _ => config.pgreadv = config_says_supported(&String::from_utf8_lossy(&value)),
            }
        }
        config
    }
}

/// A connection's [`ServerConfig`], once asked (concurrent askers wait for
/// the one query).
pub(crate) type ConfigCell = OnceCell<ServerConfig>;
