//! `--report` and `--monitor`: the XRootD monitoring streams over UDP, as
//! the stock server sends them (PROTOCOL.md §17), for `serve` and
//! `xcache`.
//!
//! - `--report HOST:PORT[,HOST:PORT] [--report-every SECS]`: the summary
//!   stream, as the stock's `xrd.report DEST every SECS all`: one
//!   `<statistics>` document per interval (600 s by default, as the
//!   stock's), a cache's `cache` section in it.
//! - `--monitor HOST:PORT[,HOST:PORT] [--monitor-flush SECS]`: the
//!   detailed stream, as the stock's `xrootd.monitor all flush SECS fstat
//!   SECS lfn ops xfr 5 ident 5m dest fstat info user files io redir DEST`
//!   (60 s by default): the server's identification, user logins (with
//!   the authenticated identity when the server authenticates, as the
//!   stock's `auth`), path maps, each session's trace, the file stream
//!   with its opens, transfers, closes and disconnects; for `xcache` also
//!   the cache's g-stream (`pfc`: a record per file closed).
//!
//! The same keys in `--config` (`report = "collector:9931"`,
//! `monitor-flush = 30`). A destination that does not resolve stops the
//! start-up with an error naming it. Sends never wait: a full queue or a
//! failed send (a collector down, an ICMP error) drops the packet, and
//! both are counted (`--metrics`: `xroot_monitor_packets_total`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use xroot_proto::monitor::summary::Element;
use xroot_server::observe::report::SummaryInfo;
use xroot_server::observe::udp::{
    host_name, MonitorCounts, SummaryReporter, UdpMonitor, UdpMonitorConfig,
};
use xroot_server::ServerHandle;

use crate::metrics::Metrics;

/// The monitoring flags of `serve` and `xcache`.
#[derive(Debug, Clone, clap::Args)]
pub struct MonitorArgs {
    /// Send the summary stream (the stock's `xrd.report ... all`: one XML
    /// document per interval) over UDP to one or two collectors.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT]", value_delimiter = ',')]
    pub report: Vec<String>,
    /// Seconds between two summary documents.
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub report_every: u64,
    /// Send the detailed stream (the stock's `xrootd.monitor all ... dest
    /// fstat info user files io redir`: logins, opens, closes with their
    /// bytes and counts, disconnects) over UDP to one or two collectors.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT]", value_delimiter = ',')]
    pub monitor: Vec<String>,
    /// Seconds between two flushes of the detailed stream's file records
    /// (the stock's `flush` and `fstat`).
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub monitor_flush: u64,
}

/// An `InvalidInput` error saying which flag's destination failed.
fn failed(flag: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{flag}: {e}"))
}

impl MonitorArgs {
    /// The detailed stream's sender for a server on `port` (0: named by
    /// the port it is bound to), to set in `Config::monitor`; `None`
    /// without `--monitor`. `auth`: user maps carry the authenticated
    /// identity. Must run in a tokio runtime.
    ///
    /// Errors: a destination that does not resolve (named), more than
    /// two, no UDP socket.
    pub fn detailed(&self, port: u16, auth: bool) -> io::Result<Option<Arc<UdpMonitor>>> {
        if self.monitor.is_empty() {
            return Ok(None);
        }
        let mut cfg = UdpMonitorConfig::new(
            self.monitor.clone(),
            port,
            Duration::from_secs(self.monitor_flush),
        );
        cfg.auth = auth;
        cfg.site = site();
        UdpMonitor::start(cfg)
            .map(Some)
            .map_err(|e| failed("--monitor", e))
    }

    /// Starts the summary stream about `server` (`None` without
    /// `--report`): every `--report-every` seconds a document with the
    /// sections of [`xroot_server::observe::report::summary`] and those
    /// `extra` gives then (a cache's). Must run in a tokio runtime.
    ///
    /// Errors: a destination that does not resolve (named), more than
    /// two, no UDP socket.
    pub fn summary(
        &self,
        server: ServerHandle,
        extra: impl Fn() -> Vec<Element<'static>> + Send + Sync + 'static,
    ) -> io::Result<Option<SummaryReporter>> {
        if self.report.is_empty() {
            return Ok(None);
        }
        let info = summary_info(server.local_addr());
        SummaryReporter::start(
            &self.report,
            Duration::from_secs(self.report_every),
            move || server.summary(&info, extra()),
        )
        .map(Some)
        .map_err(|e| failed("--report", e))
    }
}

/// Who the summary says sent it: this host, the server's port, instance
/// `anon` and program `xrootd` as the stock's defaults, our version.
pub fn summary_info(addr: SocketAddr) -> SummaryInfo {
    SummaryInfo {
        host: host_name(),
        port: addr.port(),
        instance: "anon".into(),
        program: "xrootd".into(),
        version: format!("v{}-xroot", env!("CARGO_PKG_VERSION")),
        site: site(),
    }
}

/// The site name: `$XRDSITE`, as the stock reads it when `all.sitename`
/// is not set; empty without it.
fn site() -> String {
    std::env::var("XRDSITE").unwrap_or_default()
}

/// Starts the summary stream (`--report`) about `server`, counts both
/// streams into `metrics`, and keeps them running until the server stops
/// (the detailed stream's file records are flushed then).
///
/// Errors: those of [`MonitorArgs::summary`].
pub fn run_beside(
    args: &MonitorArgs,
    server: ServerHandle,
    detailed: Option<Arc<UdpMonitor>>,
    metrics: Option<&Arc<Metrics>>,
    extra: impl Fn() -> Vec<Element<'static>> + Send + Sync + 'static,
) -> io::Result<()> {
    let summary = args.summary(server.clone(), extra)?.map(Arc::new);
    if let Some(m) = metrics {
        let (d, s) = (detailed.clone(), summary.clone());
        m.set_monitoring(Box::new(move || counts(d.as_deref(), s.as_deref())));
    }
    if detailed.is_some() || summary.is_some() {
        tokio::spawn(async move {
            server.stopping().await;
            if let Some(d) = &detailed {
                d.flush();
            }
            drop(summary);
        });
    }
    Ok(())
}

/// The counts of each stream that runs: `("detailed", ...)`,
/// `("summary", ...)`.
fn counts(
    detailed: Option<&UdpMonitor>,
    summary: Option<&SummaryReporter>,
) -> Vec<(&'static str, MonitorCounts)> {
    let mut out = Vec::new();
    if let Some(d) = detailed {
        out.push(("detailed", d.counts()));
    }
    if let Some(s) = summary {
        out.push(("summary", s.counts()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        m: MonitorArgs,
    }

    #[test]
    fn flags_and_their_defaults() {
        let c = Cli::try_parse_from(["t"]).unwrap().m;
        assert!(c.report.is_empty() && c.monitor.is_empty());
        assert_eq!((c.report_every, c.monitor_flush), (600, 60));
        let c = Cli::try_parse_from([
            "t",
            "--report",
            "a:9931,b:9932",
            "--report-every",
            "5",
            "--monitor",
            "c:9930",
            "--monitor-flush",
            "2",
        ])
        .unwrap()
        .m;
        assert_eq!(c.report, ["a:9931", "b:9932"]);
        assert_eq!(c.monitor, ["c:9930"]);
        assert_eq!((c.report_every, c.monitor_flush), (5, 2));
        assert!(Cli::try_parse_from(["t", "--report-every", "0"]).is_err());
    }

    #[tokio::test]
    async fn a_destination_that_does_not_resolve_is_a_start_up_error_naming_it() {
        let c = Cli::try_parse_from(["t", "--monitor", "nowhere.invalid:9930"])
            .unwrap()
            .m;
        let e = c.detailed(0, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(
            e.to_string().starts_with("--monitor: ")
                && e.to_string().contains("nowhere.invalid:9930"),
            "{e}"
        );
        let c = Cli::try_parse_from(["t", "--monitor", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"])
            .unwrap()
            .m;
        assert!(c.detailed(0, false).is_err());
        let c = Cli::try_parse_from(["t"]).unwrap().m;
        assert!(c.detailed(0, false).unwrap().is_none());
    }
}
