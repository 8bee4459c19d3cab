//! Native third-party copy (TPC): the `tpc.*` CGI of a `kXR_open`
//! (PROTOCOL.md "Third-party copy"). Sans IO: the CGI text in, what the open
//! asks for out, and the CGI of the destination's own open at the source
//! back.
//!
//! Four opens carry it, each told apart by its keys (XrdOucTPC's key names,
//! the stock 5.5.3 `xrdcp --tpc` as seen at both servers with
//! `xrootd.trace all`):
//!
//! | open | at | keys | [`TpcOpen`] |
//! |---|---|---|---|
//! | the client looks the file up | source | `tpc.stage=placement` | [`TpcOpen::Placement`] |
//! | the client orders the pull (write) | destination | `tpc.key`, `tpc.src`, `tpc.lfn`, `tpc.str`, `tpc.spr`, `tpc.tpr`, `tpc.dlg`, `tpc.dlgon`, `tpc.stage=copy`, maybe `tpc.scgi`, `tpc.cks`, `tpc.ttl`, `oss.asize` | [`TpcOpen::Pull`] |
//! | the client grants the read | source | `tpc.key`, `tpc.dst`, `tpc.stage=copy`, maybe `tpc.ttl` | [`TpcOpen::Grant`] |
//! | the destination reads | source | `tpc.key`, `tpc.org` | [`TpcOpen::Claim`] |
//!
//! The client side builds the same CGI: [`PullOrder::to_pairs`] (the
//! destination open, keys sorted as the stock client sends them),
//! [`grant_pairs`] (the grant), with a key from [`key_from`]; and reads a
//! source's `kXR_Qconfig tpc` answer with [`supported`].
//!
//! Errors are [`TpcCgiError`], whose texts are the stock server's
//! (`XrdOfsTPC.cc`: "conflicting tpc cgi", "tpc source not specified", "tpc
//! streams value is invalid").

use std::fmt;

/// The rendezvous key: `tpc.key`.
pub const KEY: &str = "tpc.key";
/// The source `host[:port]` (destination open): `tpc.src`.
pub const SRC: &str = "tpc.src";
/// The destination host (grant at the source): `tpc.dst`.
pub const DST: &str = "tpc.dst";
/// Who ordered the copy, `user.pid@host` (claim at the source): `tpc.org`.
pub const ORG: &str = "tpc.org";
/// The path at the source (destination open): `tpc.lfn`.
pub const LFN: &str = "tpc.lfn";
/// `placement` or `copy`: `tpc.stage`.
pub const STAGE: &str = "tpc.stage";
/// Streams the pull may use: `tpc.str`.
pub const STR: &str = "tpc.str";
/// The source's protocol (`root`): `tpc.spr`.
pub const SPR: &str = "tpc.spr";
/// The destination's protocol (`root`): `tpc.tpr`.
pub const TPR: &str = "tpc.tpr";
/// The host holding delegated credentials: `tpc.dlg`.
pub const DLG: &str = "tpc.dlg";
/// Whether credentials were delegated (`0`/`1`): `tpc.dlgon`.
pub const DLGON: &str = "tpc.dlgon";
/// The CGI to add to the source open (tokens): `tpc.scgi`.
pub const SCGI: &str = "tpc.scgi";
/// The checksum to verify, `type` or `type:hex`: `tpc.cks`.
pub const CKS: &str = "tpc.cks";
/// Seconds the grant lives: `tpc.ttl`.
pub const TTL: &str = "tpc.ttl";
/// The size the client announces (destination open): `oss.asize`.
pub const ASIZE: &str = "oss.asize";

/// Most streams `tpc.str` may ask for (the stock's `tpc streams` maximum,
/// 15, the substreams a channel may bind).
pub const MAX_STREAMS: u8 = 15;
/// Longest `tpc.key` accepted, bytes (the stock client's keys are 24 hex
/// digits).
pub const MAX_KEY_LEN: usize = 128;

/// What a TPC open asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TpcOpen {
    /// `tpc.stage=placement` alone: the client checks that the source has
    /// the file; an ordinary read open.
    Placement,
    /// The client's open at the source: readers presenting `key` from host
    /// `dst` on behalf of this client may open the file for `ttl`.
    Grant {
        /// `tpc.key`.
        key: String,
        /// `tpc.dst`: the destination's host name as the client wrote it.
        dst: String,
        /// `tpc.ttl`, seconds, when given.
        ttl: Option<u32>,
    },
    /// The destination's open at the source, presenting the key the client
    /// granted.
    Claim {
        /// `tpc.key`.
        key: String,
        /// `tpc.org`: the client that ordered the copy.
        org: Origin,
    },
    /// The client's open at the destination: pull the file from `src`.
    Pull(PullOrder),
}

/// The client's order to the destination (the CGI of its write open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullOrder {
    /// `tpc.key`.
    pub key: String,
    /// `tpc.src`: the source's `host[:port]` (may be `user@host:port`).
    pub src: String,
    /// `tpc.lfn`: the path at the source; `None` means the destination's
    /// own path.
    pub lfn: Option<String>,
    /// `tpc.str`: streams to pull with, 1 when absent.
    pub streams: u8,
    /// `tpc.spr`: the source's protocol, `root` when absent.
    pub spr: String,
    /// `tpc.tpr`: the destination's protocol, `root` when absent.
    pub tpr: String,
    /// `tpc.dlg`: where delegated credentials are, when given.
    pub dlg: Option<String>,
    /// `tpc.dlgon=1`: credentials were delegated.
    pub delegated: bool,
    /// `tpc.scgi`, its tabs back to `&`: the CGI the pull adds to its
    /// source open (a token's `authz=Bearer%20...`).
    pub scgi: Option<String>,
    /// `tpc.cks`: the checksum to verify after the pull.
    pub cks: Option<Checksum>,
    /// `tpc.ttl`, seconds.
    pub ttl: Option<u32>,
    /// `oss.asize`: the size announced, bytes.
    pub size: Option<u64>,
}

/// A `tpc.cks` value: `type` (compare with the source's) or `type:hex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    /// The algorithm, lower case (`adler32`, `crc32c`, `md5`...).
    pub kind: String,
    /// The expected value in hex, lower case, when given.
    pub value: Option<String>,
}

/// Who ordered a copy, `user.pid@host`, as the destination tells the source
/// in `tpc.org` (XrdOfsTPC `genOrg`: the client's login user name, the pid
/// of its `kXR_login`, its host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The login user name.
    pub user: String,
    /// The `kXR_login` pid.
    pub pid: i32,
    /// The client's host, as its server names it.
    pub host: String,
}

/// A TPC CGI that cannot be acted on. Each `Display` is the stock server's
/// message, sent with `kXR_ArgInvalid`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TpcCgiError {
    /// Keys of two roles in one open (`tpc.src` with `tpc.dst` or
    /// `tpc.org`, or `tpc.dst` with `tpc.org`).
    #[error("conflicting tpc cgi")]
    Conflicting,
    /// `tpc.key` is missing, empty, too long or not printable.
    #[error("tpc key not specified")]
    Key,
    /// A pull order without `tpc.src`.
    #[error("tpc source not specified")]
    Source,
    /// `tpc.str` is not 1..=[`MAX_STREAMS`].
    #[error("tpc streams value is invalid")]
    Streams,
    /// `tpc.org` is not `user.pid@host`.
    #[error("tpc origin is invalid")]
    Origin,
    /// `tpc.ttl` or `oss.asize` is not a number.
    #[error("invalid {0} value")]
    Number(&'static str),
    /// `tpc.cks` is empty or its value not hex.
    #[error("tpc checksum is invalid")]
    Checksum,
}

/// What the `tpc.*` keys of `cgi` (`k=v&k=v...`, without the `?`) ask
/// for; `None` when it has none.
///
/// Errors: [`TpcCgiError`], for keys of two roles, a missing or bad key,
/// source, stream count, origin, number or checksum.
pub fn parse(cgi: &str) -> Result<Option<TpcOpen>, TpcCgiError> {
    let get = |k: &str| crate::url::cgi_value_of(cgi, k);
    let has = |k: &str| get(k).is_some();
    if !cgi.split('&').any(|kv| kv.starts_with("tpc.")) {
        return Ok(None);
    }
    let roles = [has(SRC), has(DST), has(ORG)];
    if roles.iter().filter(|&&r| r).count() > 1 {
        return Err(TpcCgiError::Conflicting);
    }
    if get(STAGE) == Some("placement") && !has(KEY) {
        return Ok(Some(TpcOpen::Placement));
    }
    let key = get(KEY)
        .filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN)
        .filter(|k| k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or(TpcCgiError::Key)?
        .to_string();
    let ttl = number(get(TTL), "tpc.ttl")?;
    if let Some(org) = get(ORG) {
        let org = org.parse().map_err(|()| TpcCgiError::Origin)?;
        return Ok(Some(TpcOpen::Claim { key, org }));
    }
    if let Some(dst) = get(DST) {
        let dst = dst.to_string();
        return Ok(Some(TpcOpen::Grant { key, dst, ttl }));
    }
    let src = get(SRC)
        .filter(|s| !s.is_empty())
        .ok_or(TpcCgiError::Source)?;
    let streams = match get(STR) {
        None => 1,
        Some(s) => s
            .parse::<u8>()
            .ok()
            .filter(|n| (1..=MAX_STREAMS).contains(n))
            .ok_or(TpcCgiError::Streams)?,
    };
    let text = |k: &str, dflt: &str| get(k).unwrap_or(dflt).to_string();
    Ok(Some(TpcOpen::Pull(PullOrder {
        key,
        src: src.to_string(),
        lfn: get(LFN).filter(|l| !l.is_empty()).map(str::to_string),
        streams,
        spr: text(SPR, "root"),
        tpr: text(TPR, "root"),
        dlg: get(DLG).map(str::to_string),
        delegated: get(DLGON) == Some("1"),
        scgi: get(SCGI).filter(|s| !s.is_empty()).map(decode_scgi),
        cks: get(CKS).map(str::parse).transpose()?,
        ttl,
        size: number(get(ASIZE), "oss.asize")?,
    })))
}

fn number<T: std::str::FromStr>(
    v: Option<&str>,
    what: &'static str,
) -> Result<Option<T>, TpcCgiError> {
    v.map(|v| v.parse().map_err(|_| TpcCgiError::Number(what)))
        .transpose()
}

/// `tpc.scgi` is the source URL's CGI as the client had it (the stock
/// 5.5.3 `xrdcp --tpc delegate` sends `tpc.scgi=authz=Bearer%20...`), its
/// `&` as tabs (XrdOucTPC): back to `k=v&k=v`, left percent-encoded for
/// the source open it is added to.
fn decode_scgi(s: &str) -> String {
    s.replace('\t', "&")
}

/// The CGI of the destination's open at the source: `tpc.key`, `tpc.org`,
/// then the client's `scgi` (its token) when it gave one.
pub fn claim_cgi(key: &str, org: &Origin, scgi: Option<&str>) -> String {
    let mut cgi = format!("{KEY}={key}&{ORG}={org}");
    if let Some(s) = scgi.filter(|s| !s.is_empty()) {
        cgi.push('&');
        cgi.push_str(s);
    }
    cgi
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}@{}", self.user, self.pid, self.host)
    }
}

impl std::str::FromStr for Origin {
    type Err = ();
    /// `user.pid@host`: the user is everything before the last `.` ahead of
    /// the `@`.
    fn from_str(s: &str) -> Result<Origin, ()> {
        let (who, host) = s.rsplit_once('@').ok_or(())?;
        let (user, pid) = who.rsplit_once('.').ok_or(())?;
        let pid = pid.parse().map_err(|_| ())?;
        if host.is_empty() {
            return Err(());
        }
        Ok(Origin {
            user: user.to_string(),
            pid,
            host: host.to_string(),
        })
    }
}

impl std::str::FromStr for Checksum {
    type Err = TpcCgiError;
    fn from_str(s: &str) -> Result<Checksum, TpcCgiError> {
        let (kind, value) = match s.split_once(':') {
            Some((k, v)) => (k, Some(v)),
            None => (s, None),
        };
        let hex = |v: &&str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_hexdigit());
        if kind.is_empty() || value.is_some_and(|v| !hex(&v)) {
            return Err(TpcCgiError::Checksum);
        }
        Ok(Checksum {
            kind: kind.to_ascii_lowercase(),
            value: value.map(str::to_ascii_lowercase),
        })
    }
}

impl PullOrder {
    /// What the stock client orders for a copy of `lfn` at `src`
    /// (`host:port`) with `key`: one stream, `tpc.dlg` the source,
    /// `root` both ways, no delegation, checksum, ttl or size.
    pub fn new(src: &str, lfn: &str, key: &str) -> PullOrder {
        PullOrder {
            key: key.to_string(),
            src: src.to_string(),
            lfn: Some(lfn.to_string()),
            streams: 1,
            spr: "root".into(),
            tpr: "root".into(),
            dlg: Some(src.to_string()),
            delegated: false,
            scgi: None,
            cks: None,
            ttl: None,
            size: None,
        }
    }

    /// The CGI pairs of the client's open at the destination, keys sorted
    /// as the stock 5.5.3 client sends them (`oss.asize`, `tpc.cks`,
    /// `tpc.dlg`, `tpc.dlgon`, `tpc.key`, `tpc.lfn`, `tpc.scgi`, `tpc.spr`,
    /// `tpc.src`, `tpc.stage=copy`, `tpc.str`, `tpc.tpr`, `tpc.ttl`), the
    /// optional ones only when set; `tpc.scgi` with its `&` as tabs, only
    /// when delegated. [`parse`] reads them back.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::with_capacity(13);
        let mut put = |k: &str, v: String| out.push((k.to_string(), v));
        if let Some(n) = self.size {
            put(ASIZE, n.to_string());
        }
        if let Some(c) = &self.cks {
            put(CKS, c.to_string());
        }
        if let Some(d) = &self.dlg {
            put(DLG, d.clone());
        }
        put(DLGON, u8::from(self.delegated).to_string());
        put(KEY, self.key.clone());
        if let Some(l) = &self.lfn {
            put(LFN, l.clone());
        }
        if let Some(s) = self
            .scgi
            .as_ref()
            .filter(|s| self.delegated && !s.is_empty())
        {
            put(SCGI, s.replace('&', "\t"));
        }
        put(SPR, self.spr.clone());
        put(SRC, self.src.clone());
        put(STAGE, "copy".into());
        put(STR, self.streams.to_string());
        put(TPR, self.tpr.clone());
        if let Some(t) = self.ttl {
            put(TTL, t.to_string());
        }
        out
    }
}

impl fmt::Display for Checksum {
    /// `type` or `type:hex`, as in `tpc.cks`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}:{v}", self.kind),
            None => f.write_str(&self.kind),
        }
    }
}

/// The CGI pairs of the client's grant at the source (the rendezvous):
/// `tpc.dst=DSTHOST&tpc.key=KEY&tpc.stage=copy`, DSTHOST the destination's
/// host as the client names it, without port.
pub fn grant_pairs(key: &str, dst_host: &str) -> Vec<(String, String)> {
    [(DST, dst_host), (KEY, key), (STAGE, "copy")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A key made of `random` (12 bytes give the stock client's 24 hex
/// digits), lower-case hex. The bytes must be unpredictable: whoever
/// guesses the key may read the file at the source while the grant lives.
pub fn key_from(random: &[u8]) -> String {
    random.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a server's answer to `kXR_Qconfig tpc` says it takes part in
/// TPC: a number of 1 or more (a stock `ofs.tpc` server answers `1`; one
/// without echoes the key, `tpc`).
pub fn supported(qconfig_tpc: &str) -> bool {
    qconfig_tpc.trim().parse::<u32>().is_ok_and(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CGI the stock 5.5.3 `xrdcp --tpc only --streams 3` sent to the
    /// destination, and the two opens it and the destination's copy program
    /// sent to the source (from `xrootd.trace all`).
    const STOCK_PULL: &str = "oss.asize=3000000&tpc.dlg=localhost:31094&tpc.dlgon=0\
        &tpc.key=2263c078380338756b16c22a&tpc.lfn=/f&tpc.spr=root&tpc.src=localhost:31094\
        &tpc.stage=copy&tpc.str=4&tpc.tpr=root";

    #[test]
    fn the_stock_clients_opens() {
        let Some(TpcOpen::Pull(p)) = parse(STOCK_PULL).unwrap() else {
            panic!("a pull order")
        };
        assert_eq!(p.key, "2263c078380338756b16c22a");
        assert_eq!(p.src, "localhost:31094");
        assert_eq!(p.lfn.as_deref(), Some("/f"));
        assert_eq!(
            (p.streams, p.size, p.delegated),
            (4, Some(3_000_000), false)
        );
        assert_eq!(
            parse("tpc.dst=localhost&tpc.key=k1&tpc.stage=copy").unwrap(),
            Some(TpcOpen::Grant {
                key: "k1".into(),
                dst: "localhost".into(),
                ttl: None
            })
        );
        let org = Origin {
            user: "root".into(),
            pid: 14453,
            host: "localhost".into(),
        };
        assert_eq!(
            parse("tpc.key=k1&tpc.org=root.14453@localhost").unwrap(),
            Some(TpcOpen::Claim {
                key: "k1".into(),
                org: org.clone()
            })
        );
        assert_eq!(
            claim_cgi("k1", &org, None),
            "tpc.key=k1&tpc.org=root.14453@localhost"
        );
        assert_eq!(
            parse("tpc.stage=placement").unwrap(),
            Some(TpcOpen::Placement)
        );
        assert_eq!(parse("oss.asize=3").unwrap(), None);
    }

    #[test]
    fn bad_cgi_is_a_typed_error() {
        let e = |cgi| parse(cgi).unwrap_err();
        assert_eq!(e("tpc.key=k&tpc.src=h&tpc.dst=h"), TpcCgiError::Conflicting);
        assert_eq!(e("tpc.dst=h&tpc.stage=copy"), TpcCgiError::Key);
        assert_eq!(e("tpc.key=k&tpc.lfn=/f"), TpcCgiError::Source);
        assert_eq!(e("tpc.key=k&tpc.src=h&tpc.str=16"), TpcCgiError::Streams);
        assert_eq!(e("tpc.key=k&tpc.src=h&tpc.str=0"), TpcCgiError::Streams);
        assert_eq!(e("tpc.key=k&tpc.org=nobody"), TpcCgiError::Origin);
        assert_eq!(
            e("tpc.key=k&tpc.src=h&tpc.cks=adler32:xyz"),
            TpcCgiError::Checksum
        );
        assert_eq!(
            e("tpc.key=k&tpc.dst=h&tpc.ttl=-1"),
            TpcCgiError::Number("tpc.ttl")
        );
        assert_eq!(
            e(&format!("tpc.dst=h&tpc.key={}", "k".repeat(129))),
            TpcCgiError::Key
        );
    }

    #[test]
    fn scgi_and_checksum() {
        let Some(TpcOpen::Pull(p)) =
            parse("tpc.key=k&tpc.src=h:1&tpc.scgi=authz=Bearer%20t\tx=1&tpc.cks=ADLER32:0A")
                .unwrap()
        else {
            panic!("a pull order")
        };
        assert_eq!(p.scgi.as_deref(), Some("authz=Bearer%20t&x=1"));
        let cks = p.cks.unwrap();
        assert_eq!(
            (cks.kind.as_str(), cks.value.as_deref()),
            ("adler32", Some("0a"))
        );
        assert_eq!("u.a.7@h".parse::<Origin>().unwrap().user, "u.a");
    }

    #[test]
    fn the_client_builds_the_stock_clients_cgi() {
        use crate::url::parse_cgi;
        // xrdcp 5.5.3 --tpc only root://localhost:41731//f root://localhost:41732//f
        let stock = "oss.asize=3000000&tpc.dlg=localhost:41731&tpc.dlgon=0&\
                     tpc.key=2bf42da03e3c3e926b16c24a&tpc.lfn=/f&tpc.spr=root&\
                     tpc.src=localhost:41731&tpc.stage=copy&tpc.str=1&tpc.tpr=root";
        let mut ours = PullOrder::new("localhost:41731", "/f", "2bf42da03e3c3e926b16c24a");
        ours.size = Some(3_000_000);
        assert_eq!(ours.to_pairs(), parse_cgi(stock));
        assert_eq!(parse(stock).unwrap(), Some(TpcOpen::Pull(ours)));
        // --tpc delegate only "root://localhost:41731//f?authz=Bearer%20abc&foo=1"
        let stock = "tpc.dlg=localhost:41731&tpc.dlgon=1&tpc.key=170b67b5479247946b16c280&\
                     tpc.lfn=/f&tpc.scgi=authz=Bearer%20abc\tfoo=1&\
                     tpc.spr=root&tpc.src=localhost:41731&tpc.stage=copy&tpc.str=1&tpc.tpr=root";
        let Some(TpcOpen::Pull(p)) = parse(stock).unwrap() else {
            panic!("a pull order")
        };
        assert_eq!(p.scgi.as_deref(), Some("authz=Bearer%20abc&foo=1"));
        assert_eq!(p.to_pairs(), parse_cgi(stock));
        // the grant
        let grant = grant_pairs("2bf42da03e3c3e926b16c24a", "localhost");
        let stock = "tpc.dst=localhost&tpc.key=2bf42da03e3c3e926b16c24a&tpc.stage=copy";
        assert_eq!(grant, parse_cgi(stock));
        assert!(matches!(parse(stock).unwrap(), Some(TpcOpen::Grant { .. })));
        assert_eq!(key_from(&[0x0f, 0xa0, 0x01]), "0fa001");
        assert!(supported("1") && supported("1\n"));
        assert!(!supported("tpc") && !supported("0") && !supported(""));
    }
}
