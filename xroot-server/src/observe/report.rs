//! The summary documents: [`summary`], what the summary stream
//! (`xrd.report`) sends each interval, and the server's own answer to
//! `kXR_query` `kXR_QStats` (`xrdfs HOST query
//! stats WHAT`) when its backend has none
//! ([`FileSystem::stats_report`](crate::FileSystem::stats_report) answers
//! `kXR_Unsupported`): the stock server's XML shape, with the figures this
//! server keeps.
//!
//! As the stock xrootd 5.5.3 answers, one `<statistics>` element whose
//! attributes are the time of day (`tod`, seconds since the epoch), the
//! version, the address (`src`), the start time (`tos`), `pgm`, `ins`,
//! `pid` and `site`, holding a `<stats id="...">` element per letter of
//! WHAT (`a`: all):
//!
//! - `i`: `info`: `host`, `port`, `name` (`anon`).
//! - `l`: `link`: `num` (TCP links open now) and `tot` (connections
//!   accepted). The stock server also counts bytes in and out, peaks,
//!   connection time and stalls; those are not kept here.
//! - `p`: `xrootd`: `num` (links open now) and `ops`: requests started by
//!   kind: `open`, `rd` (`kXR_read` and `kXR_pgread`), `rv` (`kXR_readv`
//!   and `kXR_pgreadv`), `wr` (`kXR_write` and `kXR_pgwrite`), `wv`
//!   (`kXR_writev`), `sync`, and `misc` (every other kind).
//!
//! The stock server's other letters (`b` buffers, `d` poll, `s` scheduler,
//! `u` process times) describe its own machinery and are left out; WHAT
//! without a letter this server knows gets an empty answer, as the stock
//! server gives for an unknown one.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use xroot_proto::RequestId;

use crate::observe::stats::ServerStats;

/// The report for `what` (the query's letters).
pub(crate) fn report(
    what: &str,
    stats: &ServerStats,
    version: &str,
    addr: std::net::SocketAddr,
    started: SystemTime,
) -> String {
    let all = what.contains('a');
    let wants = |letter: char| all || what.contains(letter);
    let mut body = String::new();
    let (host, port) = (addr.ip(), addr.port());
    let links = stats.open_links;
    if wants('i') {
        let _ = write!(
            body,
            "<stats id=\"info\"><host>{host}</host><port>{port}</port><name>anon</name></stats>"
        );
    }
    if wants('l') {
        let _ = write!(
            body,
            "<stats id=\"link\"><num>{links}</num><tot>{}</tot></stats>",
            stats.connections
        );
    }
    if wants('p') {
        let total = |ids: &[RequestId]| -> u64 {
            ids.iter().map(|id| stats.in_flight.kind(*id).total).sum()
        };
        let groups: [(&str, &[RequestId]); 6] = [
            ("open", &[RequestId::OPEN]),
            ("rd", &[RequestId::READ, RequestId::PGREAD]),
            ("rv", &[RequestId::READV, RequestId::PGREADV]),
            ("wr", &[RequestId::WRITE, RequestId::PGWRITE]),
            ("wv", &[RequestId::WRITEV]),
            ("sync", &[RequestId::SYNC]),
        ];
        let counted: u64 = groups.iter().map(|(_, ids)| total(ids)).sum();
        let _ = write!(body, "<stats id=\"xrootd\"><num>{links}</num><ops>");
        for (name, ids) in groups {
            let _ = write!(body, "<{name}>{}</{name}>", total(ids));
        }
        let misc = stats.in_flight.all.total.saturating_sub(counted);
        let _ = write!(body, "<misc>{misc}</misc></ops></stats>");
    }
    if body.is_empty() {
        return body;
    }
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!(
        "<statistics tod=\"{}\" ver=\"{}\" src=\"{host}:{port}\" tos=\"{}\" pgm=\"xrootd\" \
         ins=\"anon\" pid=\"{}\" site=\"\">{body}</statistics>",
        secs(SystemTime::now()),
        xml_escape(version),
        secs(started),
        std::process::id()
    )
}

/// Who a summary document says sent it (the `<statistics>` attributes and
/// the `info` section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryInfo {
    /// The host name (`src`, `info/host`).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The instance name (`ins`, `info/name`; the stock's `-n`, `anon`).
    pub instance: String,
    /// The program (`pgm`: `xrootd`).
    pub program: String,
    /// The version (`ver`).
    pub version: String,
    /// The site (`site`, `XRDSITE`).
    pub site: String,
}

/// A summary document (`xrd.report DEST every SECS all`, PROTOCOL.md
/// §17.7) from a server's statistics: the stock's `<statistics>` element
/// and, in its order, the sections `info`, `buff`, `link`, `poll`,
/// `proc`, `xrootd`, `ofs`, then `extra` (where the stock puts its
/// storage layer's: `oss`, or an XCache's `pss` and `cache`), `sched` and
/// `sgen`. Figures this server does not keep are sent as 0: the
/// buffer pool's (`buff`: its buffers are per request), the bytes in and
/// out and connect time of links, the poller's, the scheduler's
/// (`sched`: tokio's), the signatures and async I/O counts; `proc` is the
/// process's user and system time (`/proc/self/stat`, in clock ticks of
/// 10 ms). Counters are totals since start, as the stock's.
pub fn summary(
    stats: &ServerStats,
    info: &SummaryInfo,
    started: SystemTime,
    extra: Vec<xroot_proto::monitor::summary::Element<'static>>,
) -> String {
    use xroot_proto::monitor::summary::Element as E;
    let t0 = std::time::Instant::now();
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let total =
        |ids: &[RequestId]| -> u64 { ids.iter().map(|id| stats.in_flight.kind(*id).total).sum() };
    let section = |id: &'static str| E::new("stats").attr("id", id);
    let links = stats.open_links;
    let (utime, stime) = cpu_times();
    let split = |us: u64| {
        E::new("")
            .leaf("s", us / 1_000_000)
            .leaf("u", us % 1_000_000)
    };
    let mut usr = split(utime);
    usr.name = "usr".into();
    let mut sys = split(stime);
    sys.name = "sys".into();
    let groups: [(&'static str, &[RequestId]); 12] = [
        ("open", &[RequestId::OPEN]),
        ("rf", &[]),
        ("rd", &[RequestId::READ, RequestId::PGREAD]),
        ("pr", &[]),
        ("rv", &[RequestId::READV, RequestId::PGREADV]),
        ("rs", &[]),
        ("wv", &[RequestId::WRITEV]),
        ("ws", &[]),
        ("wr", &[RequestId::WRITE, RequestId::PGWRITE]),
        ("sync", &[RequestId::SYNC]),
        ("getf", &[]),
        ("putf", &[]),
    ];
    let mut ops = E::new("ops");
    let mut counted = 0;
    for (name, ids) in groups {
        let n = total(ids);
        counted += n;
        ops = ops.leaf(name, n);
    }
    ops = ops.leaf("misc", stats.in_flight.all.total.saturating_sub(counted));
    let zeros = |name: &'static str, keys: &[&'static str]| {
        keys.iter().fold(E::new(name), |e, k| e.leaf(k, 0))
    };
    let mut doc = E::new("statistics")
        .attr("tod", secs(SystemTime::now()).to_string())
        .attr("ver", info.version.clone())
        .attr("src", format!("{}:{}", info.host, info.port))
        .attr("tos", secs(started).to_string())
        .attr("pgm", info.program.clone())
        .attr("ins", info.instance.clone())
        .attr("pid", std::process::id().to_string())
        .attr("site", info.site.clone())
        .child(
            section("info")
                .leaf("host", &info.host)
                .leaf("port", info.port)
                .leaf("name", &info.instance),
        )
        .child(
            ["reqs", "mem", "buffs", "adj", "xlreqs", "xlmem", "xlbuffs"]
                .iter()
                .fold(section("buff"), |e, k| e.leaf(k, 0)),
        )
        .child(
            section("link")
                .leaf("num", links)
                .leaf("maxn", stats.peak_links)
                .leaf("tot", stats.connections)
                .leaf("in", stats.bytes_in)
                .leaf("out", stats.bytes_out)
                .leaf("ctime", 0)
                .leaf("tmo", 0)
                .leaf("stall", 0)
                .leaf("sfps", 0),
        )
        .child(
            ["att", "en", "ev", "int"]
                .iter()
                .fold(section("poll"), |e, k| e.leaf(k, 0)),
        )
        .child(section("proc").child(usr).child(sys))
        .child(
            section("xrootd")
                .leaf("num", stats.logins)
                .child(ops)
                .child(zeros("sig", &["ok", "bad", "ign"]))
                .child(zeros("aio", &["num", "max", "rej"]))
                .leaf("err", stats.errors)
                .leaf("rdr", stats.redirects)
                .leaf("dly", stats.waits)
                .child(
                    E::new("lgn")
                        .leaf("num", stats.logins)
                        .leaf("af", stats.auth_failures)
                        .leaf("au", stats.authenticated)
                        .leaf("ua", stats.unauthenticated),
                ),
        )
        .child(
            [
                "opr", "opw", "opp", "ups", "han", "rdr", "bxq", "rep", "err", "dly", "sok", "ser",
            ]
            .iter()
            .fold(section("ofs").leaf("role", "server"), |e, k| e.leaf(k, 0))
            .child(zeros("tpc", &["grnt", "deny", "err", "exp"])),
        );
    // the storage layer's sections (the stock's oss, or an XCache's pss
    // and cache) come between ofs and sched
    for e in extra {
        doc = doc.child(e);
    }
    doc = doc.child(
        [
            "jobs", "inq", "maxinq", "threads", "idle", "tcr", "tde", "tlimr",
        ]
        .iter()
        .fold(section("sched"), |e, k| e.leaf(k, 0)),
    );
    let et = t0.elapsed().as_millis() as u64;
    doc = doc.child(
        section("sgen")
            .leaf("as", 0)
            .leaf("et", et)
            .leaf("toe", secs(SystemTime::now())),
    );
    doc.to_xml()
}

/// The process's user and system CPU time, microseconds
/// (`/proc/self/stat` fields 14 and 15, clock ticks of 10 ms); zeros
/// where it cannot be read.
fn cpu_times() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0, 0);
    };
    let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
        return (0, 0);
    };
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) * 10_000;
    (tick(11), tick(12))
}

/// `text` with XML's five special characters escaped.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_pick_sections() {
        let stats = ServerStats {
            connections: 3,
            ..ServerStats::default()
        };
        let addr = "127.0.0.1:1094".parse().unwrap();
        let r = report("l", &stats, "v<1>", addr, UNIX_EPOCH);
        assert!(r.starts_with("<statistics tod=\""), "{r}");
        assert!(r.contains("ver=\"v&lt;1&gt;\" src=\"127.0.0.1:1094\" tos=\"0\""));
        assert!(r.contains("<stats id=\"link\"><num>0</num><tot>3</tot></stats>"));
        assert!(!r.contains("id=\"info\"") && !r.contains("id=\"xrootd\""));
        let a = report("a", &stats, "v", addr, UNIX_EPOCH);
        assert!(a.contains("id=\"info\"") && a.contains("id=\"xrootd\""));
        assert_eq!(report("z", &stats, "v", addr, UNIX_EPOCH), "");
    }

    #[test]
    fn summary_has_the_stock_sections_in_order() {
        use xroot_proto::monitor::summary::Element;
        let stats = ServerStats {
            connections: 6,
            logins: 5,
            authenticated: 3,
            auth_failures: 1,
            unauthenticated: 2,
            errors: 7,
            redirects: 8,
            waits: 9,
            bytes_in: 1000,
            bytes_out: 2000,
            peak_links: 2,
            ..ServerStats::default()
        };
        let info = SummaryInfo {
            host: "vm".into(),
            port: 1094,
            instance: "anon".into(),
            program: "xrootd".into(),
            version: "v1".into(),
            site: "S".into(),
        };
        let extra = vec![Element::new("stats").attr("id", "cache").leaf("files", 3)];
        let doc = summary(&stats, &info, UNIX_EPOCH, extra);
        let e = Element::parse(&doc).unwrap();
        assert_eq!(e.get_attr("src"), Some("vm:1094"));
        let ids: Vec<_> = e.children.iter().filter_map(|c| c.get_attr("id")).collect();
        let want = [
            "info", "buff", "link", "poll", "proc", "xrootd", "ofs", "cache", "sched", "sgen",
        ];
        assert_eq!(ids, want);
        let link = e.section("link").unwrap();
        assert_eq!(
            (link.number(&["tot"]), link.number(&["maxn"])),
            (Some(6), Some(2))
        );
        assert_eq!(
            (link.number(&["in"]), link.number(&["out"])),
            (Some(1000), Some(2000))
        );
        let x = e.section("xrootd").unwrap();
        let n = |path: &[&str]| x.number(path).unwrap();
        assert_eq!(
            [
                n(&["lgn", "num"]),
                n(&["lgn", "au"]),
                n(&["lgn", "af"]),
                n(&["lgn", "ua"])
            ],
            [5, 3, 1, 2]
        );
        assert_eq!([n(&["err"]), n(&["rdr"]), n(&["dly"])], [7, 8, 9]);
        assert_eq!(e.section("cache").unwrap().number(&["files"]), Some(3));
    }
}
