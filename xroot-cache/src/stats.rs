//! Cache statistics: client reads and origin requests in flight (now, peak
//! and time-weighted mean, from [`TimeGauge`]s), bytes asked, fetched and
//! served from disk, origin requests per client request, block writes.
//!
//! A [`CacheStats`] is shared through an `Arc` by everything that counts;
//! [`CacheStats::snapshot`] reads it at once into a [`CacheStatsSnapshot`],
//! whose `Display` is a human table.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use xroot_server::{GaugeGuard, GaugeStats, TimeGauge};

/// The live counters of one cache. All methods take `&self`; counters are
/// atomics, the two gauges [`TimeGauge`]s.
#[derive(Debug, Default)]
pub struct CacheStats {
    client_reads: TimeGauge,
    origin_requests: TimeGauge,
    client_requests: AtomicU64,
    origin_request_count: AtomicU64,
    bytes_asked: AtomicU64,
    bytes_fetched: AtomicU64,
    bytes_from_disk: AtomicU64,
    block_writes: AtomicU64,
    bytes_not_stored: AtomicU64,
    trusted_opens: AtomicU64,
    bytes_from_peers: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

impl CacheStats {
    /// Counters at zero, gauges measuring from now.
    pub fn new() -> Arc<CacheStats> {
        Arc::new(CacheStats::default())
    }

    /// Counts one client read or vector read in flight until the guard
    /// drops.
    pub fn client_read(&self) -> GaugeGuard {
        self.client_reads.enter()
    }

    /// Counts one origin request in flight until the guard drops.
    pub fn origin_request(&self) -> GaugeGuard {
        self.origin_requests.enter()
    }

    /// Adds `bytes` that clients asked for.
    pub fn add_asked(&self, bytes: u64) {
        add(&self.bytes_asked, bytes);
    }

    /// Adds `bytes` fetched from the origin in `requests` wire requests.
    pub fn add_fetched(&self, bytes: u64, requests: u64) {
        add(&self.bytes_fetched, bytes);
        add(&self.origin_request_count, requests);
    }

    /// Adds `bytes` served from blocks that were already cached.
    pub fn add_from_disk(&self, bytes: u64) {
        add(&self.bytes_from_disk, bytes);
    }

    /// Adds `blocks` written to the store.
    pub fn add_block_writes(&self, blocks: u64) {
        add(&self.block_writes, blocks);
    }

    /// Adds `bytes` fetched from the origin and not stored (the disk was
    /// full, or the store failed).
    pub fn add_not_stored(&self, bytes: u64) {
        add(&self.bytes_not_stored, bytes);
    }

    /// Counts one open answered on trust, without asking the origin
    /// ([`CacheConfig::trust_window`](crate::CacheConfig::trust_window)).
    pub fn add_trusted_open(&self) {
        add(&self.trusted_opens, 1);
    }

    /// Adds `bytes` a fill did not fetch because another process sharing
    /// the cache directory had just written them.
    pub fn add_from_peers(&self, bytes: u64) {
        add(&self.bytes_from_peers, bytes);
    }

    /// Counts one client read or vector read finished.
    pub fn add_client_request(&self) {
        add(&self.client_requests, 1);
    }

    /// Everything counted so far. The counters are read one after the
    /// other, so under load they may be a few updates apart.
    pub fn snapshot(&self) -> CacheStatsSnapshot {
        CacheStatsSnapshot {
            client_reads: self.client_reads.snapshot(),
            origin_requests: self.origin_requests.snapshot(),
            client_requests: get(&self.client_requests),
            origin_request_count: get(&self.origin_request_count),
            bytes_asked: get(&self.bytes_asked),
            bytes_fetched: get(&self.bytes_fetched),
            bytes_from_disk: get(&self.bytes_from_disk),
            block_writes: get(&self.block_writes),
            bytes_not_stored: get(&self.bytes_not_stored),
            trusted_opens: get(&self.trusted_opens),
            bytes_from_peers: get(&self.bytes_from_peers),
            ram_held: 0,
            disk_full: false,
        }
    }
}

/// The figures of a [`CacheStats`] at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheStatsSnapshot {
    /// Client reads and vector reads in flight.
    pub client_reads: GaugeStats,
    /// Origin requests in flight.
    pub origin_requests: GaugeStats,
    /// Client reads and vector reads finished.
    pub client_requests: u64,
    /// Wire requests sent to the origin.
    pub origin_request_count: u64,
    /// Bytes clients asked for.
    pub bytes_asked: u64,
    /// Bytes fetched from the origin.
    pub bytes_fetched: u64,
    /// Bytes served from blocks already cached.
    pub bytes_from_disk: u64,
    /// Blocks written to the store.
    pub block_writes: u64,
    /// Bytes fetched from the origin and not stored (the disk was full, or
    /// the store failed).
    pub bytes_not_stored: u64,
    /// Opens answered on trust, without asking the origin.
    pub trusted_opens: u64,
    /// Bytes fills did not fetch because another process sharing the cache
    /// directory had just written them.
    pub bytes_from_peers: u64,
    /// Bytes of the RAM budget held now (KiB steps): fetched data not yet
    /// stored and answers the server has not dropped yet. Filled in by
    /// [`CacheFs::stats`](crate::CacheFs::stats); 0 from
    /// [`CacheStats::snapshot`], which does not see the budget.
    pub ram_held: u64,
    /// Whether storing is stopped now because the disk filled up (until a
    /// disk check finds room). Filled in by
    /// [`CacheFs::stats`](crate::CacheFs::stats); `false` from
    /// [`CacheStats::snapshot`].
    pub disk_full: bool,
}

/// `num / den`, 0 when `den` is 0.
fn ratio(num: u64, den: u64) -> f64 {
    match den {
        0 => 0.0,
        _ => num as f64 / den as f64,
    }
}

impl CacheStatsSnapshot {
    /// Origin requests sent per client request finished (the target is
    /// about 1 for cold vector reads); 0 before any client request.
    pub fn origin_requests_per_client_request(&self) -> f64 {
        ratio(self.origin_request_count, self.client_requests)
    }

    /// Bytes fetched from the origin per byte clients asked for (above 1
    /// means block and gap overhead, below 1 cache hits); 0 before any
    /// byte was asked.
    pub fn fetched_per_asked(&self) -> f64 {
        ratio(self.bytes_fetched, self.bytes_asked)
    }
}

/// One gauge as `now N, peak N, mean X.XX, N in all`.
struct Gauge<'a>(&'a GaugeStats);

impl fmt::Display for Gauge<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0;
        write!(
            f,
            "now {}, peak {}, mean {:.2}, {} in all",
            g.current, g.peak, g.mean, g.total
        )
    }
}

/// A byte count as `N bytes (X.X MiB)`.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.0 as f64 / f64::from(1u32 << 20);
        write!(f, "{} bytes ({mib:.1} MiB)", self.0)
    }
}

impl fmt::Display for CacheStatsSnapshot {
    /// One line per figure, label then value with its unit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let storing = match self.disk_full {
            true => "stopped: the disk is full",
            false => "storing",
        };
        let rows: [(&str, &dyn fmt::Display); 12] = [
            ("client reads in flight", &Gauge(&self.client_reads)),
            ("origin requests in flight", &Gauge(&self.origin_requests)),
            (
                "client requests",
                &format_args!("{} finished", self.client_requests),
            ),
            (
                "origin requests",
                &format_args!(
                    "{} sent ({:.2} per client request)",
                    self.origin_request_count,
                    self.origin_requests_per_client_request()
                ),
            ),
            ("asked by clients", &Bytes(self.bytes_asked)),
            (
                "fetched from origin",
                &format_args!(
                    "{}, {:.2} per byte asked",
                    Bytes(self.bytes_fetched),
                    self.fetched_per_asked()
                ),
            ),
            ("served from disk", &Bytes(self.bytes_from_disk)),
            (
                "block writes",
                &format_args!("{} blocks", self.block_writes),
            ),
            (
                "not stored",
                &format_args!("{}; {storing}", Bytes(self.bytes_not_stored)),
            ),
            ("RAM held", &Bytes(self.ram_held)),
            (
                "opens on trust",
                &format_args!("{} (the origin not asked)", self.trusted_opens),
            ),
            ("written by other processes", &Bytes(self.bytes_from_peers)),
        ];
        for (label, value) in rows {
            writeln!(f, "{label:<26} {value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up() {
        let stats = CacheStats::new();
        stats.add_asked(1000);
        stats.add_asked(24);
        stats.add_fetched(4096, 1);
        stats.add_fetched(8192, 2);
        stats.add_from_disk(512);
        stats.add_block_writes(3);
        stats.add_not_stored(4096);
        stats.add_client_request();
        stats.add_client_request();
        let s = stats.snapshot();
        assert_eq!((s.client_requests, s.origin_request_count), (2, 3), "{s:?}");
        assert_eq!(
            (
                s.bytes_asked,
                s.bytes_fetched,
                s.bytes_from_disk,
                s.block_writes
            ),
            (1024, 12_288, 512, 3)
        );
        assert_eq!(s.bytes_not_stored, 4096);
        assert_eq!(s.origin_requests_per_client_request(), 1.5);
        assert_eq!(s.fetched_per_asked(), 12.0);
    }

    #[test]
    fn ratios_are_zero_before_any_request() {
        let s = CacheStats::new().snapshot();
        assert_eq!(
            s,
            CacheStatsSnapshot {
                client_reads: s.client_reads,
                origin_requests: s.origin_requests,
                ..CacheStatsSnapshot::default()
            }
        );
        assert_eq!(s.origin_requests_per_client_request(), 0.0);
        assert_eq!(s.fetched_per_asked(), 0.0);
    }

    #[test]
    fn gauges_count_guards_across_threads() {
        let stats = CacheStats::new();
        let reads = [stats.client_read(), stats.client_read()];
        let origin = stats.origin_request();
        let s = stats.snapshot();
        assert_eq!((s.client_reads.current, s.client_reads.peak), (2, 2));
        assert_eq!(s.origin_requests.current, 1);
        // a guard owns its gauge: it may outlive the borrow and move threads
        std::thread::spawn(move || drop(origin)).join().unwrap();
        drop(reads);
        let s = stats.snapshot();
        assert_eq!((s.client_reads.current, s.client_reads.total), (0, 2));
        assert_eq!((s.origin_requests.current, s.origin_requests.peak), (0, 1));
    }

    #[test]
    fn display_is_a_table_with_units() {
        let stats = CacheStats::new();
        stats.add_asked(2 << 20);
        stats.add_fetched(3 << 20, 4);
        stats.add_block_writes(768);
        stats.add_client_request();
        let text = stats.snapshot().to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 12, "{text}");
        assert!(lines[0].starts_with("client reads in flight"), "{text}");
        assert!(
            lines[0].ends_with("now 0, peak 0, mean 0.00, 0 in all"),
            "{text}"
        );
        assert!(
            lines[3].ends_with("4 sent (4.00 per client request)"),
            "{text}"
        );
        assert!(lines[4].ends_with("2097152 bytes (2.0 MiB)"), "{text}");
        assert!(
            lines[5].ends_with("3145728 bytes (3.0 MiB), 1.50 per byte asked"),
            "{text}"
        );
        assert!(lines[7].ends_with("768 blocks"), "{text}");
        assert!(lines[8].ends_with("0 bytes (0.0 MiB); storing"), "{text}");
        assert!(lines[9].ends_with("0 bytes (0.0 MiB)"), "{text}");
        // the values line up in one column
        let column = |l: &str| l.len() - l[26..].trim_start().len();
        assert!(
            lines.iter().all(|l| column(l) == column(lines[0])),
            "{text}"
        );
    }
}
