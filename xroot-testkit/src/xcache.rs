//! Starts the stock XCache (xrootd with the proxy storage plugin
//! `libXrdPss.so` and the file cache `libXrdPfc.so`) on loopback in front of
//! an origin, for tests and benches comparing with it. Built on
//! [`StockServer`]: the cache directory is the server's `oss.localroot`.
//!
//! The cache has no prefetching (`pfc.prefetch 0`), so it fetches from the
//! origin exactly the blocks a client asks for, and `pfc.ram 1g` (the stock
//! 5.5.3 XCache does not start with less: seen on loopback).

use std::path::Path;

use crate::stock::StockServer;

/// A running stock XCache; stopped (by PID) and its cache directory removed
/// on drop.
pub struct StockCache {
    /// The xrootd process; its `port` is the cache's port on 127.0.0.1.
    pub server: StockServer,
    /// The cache's storage (`oss.localroot`), dropped after the server.
    pub cache: tempfile::TempDir,
}

impl StockCache {
    /// Starts an XCache whose origin is `root://127.0.0.1:origin_port`,
    /// caching in blocks of `blocksize` (an xrootd size such as `"4k"`,
    /// `"1m"`). Returns `None` when xrootd is missing outside CI; panics if
    /// it does not come up.
    pub fn start(origin_port: u16, blocksize: &str) -> Option<StockCache> {
        StockCache::start_with(origin_port, blocksize, &[])
    }

    /// As [`StockCache::start`], with `extra` config lines appended (a
    /// test's `xrootd.monitor`, say).
    pub fn start_with(origin_port: u16, blocksize: &str, extra: &[&str]) -> Option<StockCache> {
        let cache = tempfile::tempdir().expect("temp dir");
        let lines = [
            "ofs.osslib libXrdPss.so".to_string(),
            "pss.cachelib libXrdPfc.so".to_string(),
            format!("pss.origin 127.0.0.1:{origin_port}"),
            format!("pfc.blocksize {blocksize}"),
            "pfc.prefetch 0".to_string(),
            "pfc.ram 1g".to_string(),
        ];
        let mut all: Vec<&str> = lines.iter().map(String::as_str).collect();
        all.extend_from_slice(extra);
        let server = StockServer::start(cache.path(), &all)?;
        Some(StockCache { server, cache })
    }

    /// The cache's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// Where the cache keeps its data.
    pub fn dir(&self) -> &Path {
        self.cache.path()
    }
}
