//! What a data server says about its vector-read limits and this project's
//! `kXR_pgreadv` extension, in one `kXR_query` `kXR_Qconfig` (PROTOCOL.md
//! §7.7, [`xroot_proto::ext`]), asked at most once per connection.

use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::OnceCell;
use xroot_proto::ext::{config_says_supported, PGREADV_CONFIG_KEY};
use xroot_proto::limits::{MAX_READV_ELEMENT, MAX_READV_ELEMENTS, MAX_READV_TOTAL, READ_LIST_LEN};
use xroot_proto::request::{Query, QueryCode, Request};
use xroot_proto::response::QconfigAnswer;
use xroot_proto::RequestId;

use crate::channel::Link;
use crate::client::Client;
use crate::driver;
use crate::error::{Error, Result};
use crate::file::Handle;
use crate::piece::VectorLimits;

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
        let Some(values) = QconfigAnswer::parse(body)
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

    /// The limits of one `kXR_readv` toward this server: its element count
    /// and size, and at most `0x7fffffff` bytes with 16 per element.
    pub(crate) fn readv_limits(&self) -> VectorLimits {
        VectorLimits {
            elements: self.readv_iov_max,
            element_len: self.readv_ior_max,
            total: MAX_READV_TOTAL,
            element_overhead: READ_LIST_LEN as u64,
        }
    }
}

/// A file's cached [`ServerConfig`], for the connection that holds its
/// handle: asked once per connection (concurrent callers wait for the one
/// query), asked again after the file moved to another connection.
#[derive(Debug, Default)]
pub(crate) struct ConfigSlot {
    slot: Mutex<Option<ForLink>>,
}

/// The connection an answer is for, and the answer once it came.
type ForLink = (Weak<Link>, Arc<OnceCell<ServerConfig>>);

impl ConfigSlot {
    /// The configuration of the server behind `h`. A server that refuses
    /// the query ([`Error::Server`]) gets the defaults, kept; other errors
    /// (a lost connection, a timeout) are returned and the query is asked
    /// again next time.
    pub(crate) async fn get(&self, client: &Client, h: &Handle) -> Result<ServerConfig> {
        let cell = {
            let mut slot = self.slot.lock().unwrap();
            match &*slot {
                Some((link, cell)) if Weak::as_ptr(link) == Arc::as_ptr(&h.link) => {
                    Arc::clone(cell)
                }
                _ => {
                    let cell = Arc::new(OnceCell::new());
                    *slot = Some((Arc::downgrade(&h.link), Arc::clone(&cell)));
                    cell
                }
            }
        };
        cell.get_or_try_init(|| ask(client, h)).await.copied()
    }
}

async fn ask(client: &Client, h: &Handle) -> Result<ServerConfig> {
    let reply = driver::execute_on(client, &h.link, &h.url, &ServerConfig::request()).await;
    match reply {
        Ok(reply) => Ok(ServerConfig::parse(&reply.into_bytes(RequestId::QUERY)?)),
        Err(e @ Error::Server { .. }) => {
            tracing::debug!(endpoint = %h.link.endpoint, error = %e, "kXR_Qconfig refused: stock limits");
            Ok(ServerConfig::default())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use xroot_proto::StreamId;

    #[test]
    fn request_asks_the_three_keys() {
        let mut buf = BytesMut::new();
        ServerConfig::request().encode(StreamId::from_u16(1), &mut buf);
        assert_eq!(&buf[24..], b"readv_iov_max readv_ior_max xroot.pgreadv\0");
        assert_eq!(u16::from_be_bytes([buf[4], buf[5]]), 7, "kXR_Qconfig");
    }

    #[test]
    fn answers() {
        let parse = |s: &'static str| ServerConfig::parse(&Bytes::from_static(s.as_bytes()));
        // the stock server: an unknown key comes back unchanged
        assert_eq!(
            parse("1024\n2097136\nxroot.pgreadv\n"),
            ServerConfig::default()
        );
        assert_eq!(
            parse("100\n65536\n1\n"),
            ServerConfig {
                readv_iov_max: 100,
                readv_ior_max: 65536,
                pgreadv: true
            }
        );
        // unusable values keep the defaults, one by one
        assert_eq!(
            parse("0\nlots\n1\n"),
            ServerConfig {
                pgreadv: true,
                ..ServerConfig::default()
            }
        );
        assert_eq!(parse("5000\n-1\n0\n"), ServerConfig::default());
        // wrong number of lines, or `xrootd` alone
        assert_eq!(parse("100\n"), ServerConfig::default());
        assert_eq!(parse("\n\0"), ServerConfig::default());
    }
}
