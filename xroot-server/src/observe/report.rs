//! The server's own answer to `kXR_query` `kXR_QStats` (`xrdfs HOST query
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
    let links = stats.links.len();
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
            in_flight: Default::default(),
            links: Vec::new(),
            connections: 3,
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
}
