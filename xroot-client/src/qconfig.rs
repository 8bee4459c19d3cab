//! What a data server says about its vector-read limits and this project's
//! `kXR_pgreadv` extension, in one `kXR_query` `kXR_Qconfig` (PROTOCOL.md
//! §7.7, [`xroot_proto::ext`]), asked at most once per connection; and
//! [`ReadSupport`], the public view of it (with `kXR_suppgrw`) that tells a
//! caller how many requests a read call sends.

use std::sync::Arc;

use xroot_proto::limits::{MAX_READV_TOTAL, READ_LIST_LEN};
use xroot_proto::RequestId;

use xroot_proto::url::Url;

use crate::channel::Link;
pub(crate) use crate::channel::ServerConfig;
use crate::dialer::Dialer;
use crate::driver;
use crate::error::{Error, Result};
use crate::piece::{plan_vectors, split, VectorLimits, MAX_PIECE, PGREADV_LIMITS};

impl ServerConfig {
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

/// What the server holding a [`File`](crate::File) offers for reads, and
/// how many requests the file's read calls send toward it
/// ([`File::read_support`](crate::File::read_support)). The counts are
/// those of the first attempt: a page fetched again after a crc32c
/// mismatch, or a request retried after a lost connection, adds to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSupport {
    pgrw: bool,
    config: ServerConfig,
}

impl ReadSupport {
    /// From whether the server serves `kXR_pgread` (`kXR_suppgrw`) and its
    /// `kXR_Qconfig` answer.
    pub(crate) fn new(pgrw: bool, config: &ServerConfig) -> ReadSupport {
        ReadSupport {
            pgrw,
            config: *config,
        }
    }

    /// Whether the server serves `kXR_pgread` (`kXR_suppgrw`, protocol 5.1
    /// or later), so that [`File::pgread`](crate::File::pgread) checks
    /// every page's crc32c (it is a plain read otherwise).
    #[doc(alias = "kXR_suppgrw")]
    pub fn pgread(&self) -> bool {
        self.pgrw
    }

    /// Whether [`File::pgreadv`](crate::File::pgreadv) sends `kXR_pgreadv`
    /// (the server serves pgread and advertises the extension); otherwise it
    /// sends one pgread per range.
    #[doc(alias = "kXR_pgreadv")]
    pub fn pgreadv(&self) -> bool {
        self.pgrw && self.config.pgreadv
    }

    /// Most elements in one `kXR_readv` (`readv_iov_max`; 1024 when the
    /// server did not say).
    pub fn readv_iov_max(&self) -> usize {
        self.config.readv_iov_max
    }

    /// Most bytes in one `kXR_readv` element (`readv_ior_max`; 2,097,136
    /// when the server did not say).
    pub fn readv_ior_max(&self) -> usize {
        self.config.readv_ior_max
    }

    /// `kXR_readv` requests [`File::readv`](crate::File::readv) sends for
    /// `ranges` (`(offset, len)` in bytes): one per `readv_iov_max`
    /// elements or 2 GiB, a range longer than `readv_ior_max` counting as
    /// several elements; none for empty ranges.
    pub fn readv_requests(&self, ranges: &[(u64, usize)]) -> usize {
        plan_vectors(ranges, &self.config.readv_limits()).len()
    }

    /// Requests [`File::pgreadv`](crate::File::pgreadv) sends for `ranges`:
    /// `kXR_pgreadv` requests of at most 1024 extents and 8 MiB when
    /// [`ReadSupport::pgreadv`], else the pgreads of every range (see
    /// [`ReadSupport::pgread_requests`]).
    pub fn pgreadv_requests(&self, ranges: &[(u64, usize)]) -> usize {
        if self.pgreadv() {
            plan_vectors(ranges, &PGREADV_LIMITS).len()
        } else {
            ranges
                .iter()
                .map(|&(offset, len)| self.pgread_requests(offset, len))
                .sum()
        }
    }

    /// Requests [`File::pgread`](crate::File::pgread) sends for `len` bytes
    /// at `offset`: one per 8 MiB-aligned piece of at most 8 MiB (pgreads,
    /// or plain reads without [`ReadSupport::pgread`]); none for `len == 0`.
    pub fn pgread_requests(&self, offset: u64, len: usize) -> usize {
        split(offset, len, MAX_PIECE).count()
    }
}

/// The configuration of the server `url` whose connection is `link`,
/// asked with one `kXR_Qconfig` per connection (every file opened on it
/// shares the answer; concurrent callers wait for the one query). A server
/// that refuses the query ([`Error::Server`]) gets the defaults, kept;
/// other errors (a lost connection, a timeout) are returned and the query
/// is asked again next time.
pub(crate) async fn server_config(
    dialer: &Dialer,
    link: &Arc<Link>,
    url: &Url,
) -> Result<ServerConfig> {
    link.server_config
        .get_or_try_init(|| ask(dialer, link, url))
        .await
        .copied()
}

async fn ask(dialer: &Dialer, link: &Arc<Link>, url: &Url) -> Result<ServerConfig> {
    let reply = driver::execute_on(dialer, link, url, &ServerConfig::request()).await;
    match reply {
        Ok(reply) => Ok(ServerConfig::parse(&reply.into_bytes(RequestId::QUERY)?)),
        Err(e @ Error::Server { .. }) => {
            tracing::debug!(endpoint = %link.endpoint, error = %e, "kXR_Qconfig refused: stock limits");
            Ok(ServerConfig::default())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
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

    #[test]
    fn request_counts() {
        let stock = ReadSupport::new(true, &ServerConfig::default());
        assert!(stock.pgread() && !stock.pgreadv());
        let ours = ReadSupport::new(
            true,
            &ServerConfig {
                pgreadv: true,
                ..ServerConfig::default()
            },
        );
        assert!(ours.pgreadv());
        let old = ReadSupport::new(false, &ours.config);
        assert!(!old.pgread() && !old.pgreadv(), "pgreadv needs pgread");

        let many: Vec<(u64, usize)> = (0..2500u64).map(|i| (i * 10_000, 100)).collect();
        assert_eq!(stock.readv_requests(&many), 3, "1024 + 1024 + 452");
        assert_eq!(stock.readv_requests(&[(0, 0), (5, 0)]), 0);
        assert_eq!(stock.readv_requests(&[(0, 2_097_137)]), 1, "two elements");
        let limited = ReadSupport::new(
            true,
            &ServerConfig {
                readv_iov_max: 2,
                ..ServerConfig::default()
            },
        );
        assert_eq!(limited.readv_requests(&[(0, 2_097_137), (0, 1)]), 2);

        assert_eq!(ours.pgreadv_requests(&many), 3);
        assert_eq!(ours.pgreadv_requests(&[(0, 5 << 20), (0, 5 << 20)]), 2);
        assert_eq!(stock.pgreadv_requests(&many[..300]), 300);
        assert_eq!(stock.pgread_requests(0, 0), 0);
        assert_eq!(
            stock.pgread_requests(4096, 8 << 20),
            2,
            "8 MiB aligned pieces"
        );
        assert_eq!(old.pgread_requests(0, 20 << 20), 3);
    }
}
