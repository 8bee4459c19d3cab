//! Native third-party copy (TPC): the CGI a client adds to its opens to
//! make a destination pull a file straight from a source, and the
//! rendezvous key both sides share (PROTOCOL.md §18).
//!
//! The keys and their values are the stock client's, as `xrdcp --tpc only`
//! 5.5.3 sends them (seen in its `XRD_LOGLEVEL=Dump` log and the stock
//! servers' `xrootd.trace all` against two `ofs.tpc` servers; upstream
//! `src/XrdCl/XrdClThirdPartyCopyJob.cc`, `src/XrdOfs/XrdOfsTPC.cc`):
//!
//! - to the **source**, first `tpc.stage=placement` (an open for reading
//!   that only learns the size, closed at once), then the rendezvous:
//!   `tpc.dst=HOST&tpc.key=KEY&tpc.stage=copy` ([`SourceCgi`]); the
//!   destination's own open of the source carries `tpc.key=KEY&tpc.org=
//!   USER.PID@HOST` (the client that asked, as the source saw it).
//! - to the **destination**, an open for writing with `oss.asize=SIZE&
//!   tpc.dlg=SRC&tpc.dlgon=0|1&tpc.key=KEY&tpc.lfn=PATH[&tpc.scgi=...]&
//!   tpc.spr=root&tpc.src=SRC&tpc.stage=copy&tpc.str=N&tpc.tpr=root`
//!   ([`DestinationCgi`]), the keys in that (sorted) order, SRC the
//!   source's `host:port` as the client named it.
//!
//! Everything here is text in, typed values out and back; no I/O.

use crate::error::DecodeError;

/// `tpc.key`: the rendezvous key, the same in the source's and the
/// destination's open.
pub const KEY: &str = "tpc.key";
/// `tpc.dst`: (to the source) the host name of the destination that will
/// present the key, without port.
pub const DST: &str = "tpc.dst";
/// `tpc.org`: (to the source, from the destination) who asked for the
/// copy, `USER.PID@HOST`.
pub const ORG: &str = "tpc.org";
/// `tpc.stage`: `placement` (the client's first look at the source) or
/// `copy`.
pub const STAGE: &str = "tpc.stage";
/// `tpc.src`: (to the destination) the source's `host:port`.
pub const SRC: &str = "tpc.src";
/// `tpc.lfn`: (to the destination) the path to read at the source.
pub const LFN: &str = "tpc.lfn";
/// `tpc.str`: (to the destination) the TCP streams to read the source with.
pub const STR: &str = "tpc.str";
/// `tpc.dlg`: (to the destination) the `host:port` the delegated
/// credential is for (the source's).
pub const DLG: &str = "tpc.dlg";
/// `tpc.dlgon`: (to the destination) `1` when the client delegates its
/// credential (`xrdcp --tpc delegate`), else `0`.
pub const DLGON: &str = "tpc.dlgon";
/// `tpc.scgi`: (to the destination, with delegation) the CGI the client
/// gave the source (a token's `authz=` among them), its `&` written as
/// tabs ([`encode_scgi`]).
pub const SCGI: &str = "tpc.scgi";
/// `tpc.spr`: (to the destination) the source's protocol, `root`.
pub const SPR: &str = "tpc.spr";
/// `tpc.tpr`: (to the destination) the target's protocol, `root`.
pub const TPR: &str = "tpc.tpr";
/// `tpc.cks`: (to the destination) `ALG` or `ALG:VALUE` to verify the
/// copy with (the stock 5.5.3 `xrdcp` does not send it: it compares the
/// two servers' `kXR_Qcksum` answers itself after the copy).
pub const CKS: &str = "tpc.cks";
/// `oss.asize`: (to the destination) the size to expect, in bytes.
pub const ASIZE: &str = "oss.asize";

/// The longest rendezvous key accepted ([`valid_key`]); the stock client's
/// are 24 hex digits.
pub const MAX_KEY_LEN: usize = 64;

/// Whether `key` may be a rendezvous key: 1 to [`MAX_KEY_LEN`] ASCII
/// letters and digits (so it never needs escaping in a CGI).
pub fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY_LEN).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A key made of `random` (12 bytes give the stock client's 24 hex
/// digits): lower-case hex, two digits a byte. The bytes must come from an
/// unpredictable source: whoever can guess the key can read the file at
/// the source within its time to live.
pub fn key_from(random: &[u8]) -> String {
    random.iter().map(|b| format!("{b:02x}")).collect()
}

/// `tpc.stage`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `placement`: the client asks the source where and how big the file
    /// is; no rendezvous.
    Placement,
    /// `copy`: the rendezvous (at the source) or the copy (at the
    /// destination).
    Copy,
}

impl Stage {
    /// Its CGI value.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Placement => "placement",
            Stage::Copy => "copy",
        }
    }

    /// Parses a CGI value. Errors: [`DecodeError::Malformed`] for another.
    pub fn parse(s: &str) -> Result<Stage, DecodeError> {
        match s {
            "placement" => Ok(Stage::Placement),
            "copy" => Ok(Stage::Copy),
            _ => Err(DecodeError::malformed(STAGE, format!("{s:?}"))),
        }
    }
}

/// What an open of the **source** says about a TPC: the client's
/// rendezvous (`tpc.key`, `tpc.dst`, `tpc.stage=copy`) or the
/// destination's read (`tpc.key`, `tpc.org`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceCgi {
    /// `tpc.key`.
    pub key: String,
    /// `tpc.dst`: the destination's host (the client's open).
    pub dst: Option<String>,
    /// `tpc.org`: who asked (the destination's open).
    pub org: Option<String>,
    /// `tpc.stage`, when given.
    pub stage: Option<Stage>,
}

impl SourceCgi {
    /// The client's rendezvous at the source: `tpc.dst`, `tpc.key`,
    /// `tpc.stage=copy`, in that order.
    pub fn rendezvous(key: &str, dst_host: &str) -> SourceCgi {
        SourceCgi {
            key: key.to_string(),
            dst: Some(dst_host.to_string()),
            org: None,
            stage: Some(Stage::Copy),
        }
    }

    /// The CGI pairs, keys sorted as the stock client sends them.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::with_capacity(4);
        let mut put = |k: &str, v: &str| out.push((k.to_string(), v.to_string()));
        if let Some(d) = &self.dst {
            put(DST, d);
        }
        put(KEY, &self.key);
        if let Some(o) = &self.org {
            put(ORG, o);
        }
        if let Some(s) = self.stage {
            put(STAGE, s.as_str());
        }
        out
    }

    /// The TPC part of an open's CGI at the source: `None` without
    /// `tpc.key` (a plain open, or `tpc.stage=placement` alone).
    /// Errors: [`DecodeError::Malformed`] for a key that is not
    /// [`valid_key`] or an unknown stage.
    pub fn from_cgi(cgi: &[(String, String)]) -> Result<Option<SourceCgi>, DecodeError> {
        let Some(key) = value(cgi, KEY) else {
            return Ok(None);
        };
        if !valid_key(key) {
            return Err(DecodeError::malformed(KEY, "not 1-64 letters or digits"));
        }
        Ok(Some(SourceCgi {
            key: key.to_string(),
            dst: value(cgi, DST).map(str::to_string),
            org: value(cgi, ORG).map(str::to_string),
            stage: value(cgi, STAGE).map(Stage::parse).transpose()?,
        }))
    }
}

/// What the client's open of the **destination** says: pull `lfn` from
/// `src` with `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationCgi {
    /// `tpc.src`: the source's `host:port`.
    pub src: String,
    /// `tpc.key`.
    pub key: String,
    /// `tpc.lfn`: the path at the source.
    pub lfn: String,
    /// `tpc.str`: streams to read with (1 or more).
    pub streams: u16,
    /// `tpc.dlgon=1`: the client delegated its credential.
    pub delegate: bool,
    /// `tpc.dlg`: the `host:port` the delegation is for (the source).
    pub dlg: Option<String>,
    /// `tpc.scgi`, decoded: the CGI the client gave the source.
    pub scgi: Vec<(String, String)>,
    /// `tpc.spr`: the source's protocol (`root`).
    pub spr: Option<String>,
    /// `tpc.tpr`: the target's protocol (`root`).
    pub tpr: Option<String>,
    /// `tpc.cks`: `ALG` or `ALG:VALUE` to verify with.
    pub cks: Option<String>,
    /// `oss.asize`: the size to expect, in bytes.
    pub asize: Option<u64>,
}

impl DestinationCgi {
    /// What the stock client sends for a copy of `lfn` at `src`
    /// (`host:port`): `tpc.dlg` the source, `tpc.spr`/`tpc.tpr` `root`,
    /// one stream, no delegation, no checksum, no size.
    pub fn new(src: &str, lfn: &str, key: &str) -> DestinationCgi {
        DestinationCgi {
            src: src.to_string(),
            key: key.to_string(),
            lfn: lfn.to_string(),
            streams: 1,
            delegate: false,
            dlg: Some(src.to_string()),
            scgi: Vec::new(),
            spr: Some("root".into()),
            tpr: Some("root".into()),
            cks: None,
            asize: None,
        }
    }

    /// The CGI pairs, keys sorted as the stock client sends them
    /// (`oss.asize`, `tpc.cks`, `tpc.dlg`, `tpc.dlgon`, `tpc.key`,
    /// `tpc.lfn`, `tpc.scgi`, `tpc.spr`, `tpc.src`, `tpc.stage=copy`,
    /// `tpc.str`, `tpc.tpr`); `tpc.scgi` only with delegation and CGI to
    /// pass.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::with_capacity(12);
        let mut put = |k: &str, v: String| out.push((k.to_string(), v));
        if let Some(n) = self.asize {
            put(ASIZE, n.to_string());
        }
        if let Some(c) = &self.cks {
            put(CKS, c.clone());
        }
        if let Some(d) = &self.dlg {
            put(DLG, d.clone());
        }
        put(DLGON, u8::from(self.delegate).to_string());
        put(KEY, self.key.clone());
        put(LFN, self.lfn.clone());
        if self.delegate && !self.scgi.is_empty() {
            put(SCGI, encode_scgi(&self.scgi));
        }
        if let Some(p) = &self.spr {
            put(SPR, p.clone());
        }
        put(SRC, self.src.clone());
        put(STAGE, Stage::Copy.as_str().to_string());
        put(STR, self.streams.to_string());
        if let Some(p) = &self.tpr {
            put(TPR, p.clone());
        }
        out
    }

    /// The TPC part of an open's CGI at the destination: `None` without
    /// `tpc.src` (not a TPC).
    /// Errors: [`DecodeError::Malformed`] for `tpc.src` without `tpc.key`
    /// or `tpc.lfn`, a key that is not [`valid_key`], a `tpc.str` that is
    /// not 1..=65535, a `tpc.dlgon` not `0` or `1`, an `oss.asize` that is
    /// not a number, a `tpc.stage` other than `copy`.
    pub fn from_cgi(cgi: &[(String, String)]) -> Result<Option<DestinationCgi>, DecodeError> {
        let Some(src) = value(cgi, SRC) else {
            return Ok(None);
        };
        let need = |k: &'static str| {
            value(cgi, k).ok_or_else(|| DecodeError::malformed(k, "missing beside tpc.src"))
        };
        let key = need(KEY)?;
        if !valid_key(key) {
            return Err(DecodeError::malformed(KEY, "not 1-64 letters or digits"));
        }
        let lfn = need(LFN)?;
        let streams = match value(cgi, STR) {
            None => 1,
            Some(s) => s
                .parse::<u16>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| DecodeError::malformed(STR, format!("{s:?} is not 1..65535")))?,
        };
        let delegate = match value(cgi, DLGON) {
            None | Some("0") => false,
            Some("1") => true,
            Some(s) => return Err(DecodeError::malformed(DLGON, format!("{s:?}"))),
        };
        if let Some(s) = value(cgi, STAGE) {
            if Stage::parse(s)? != Stage::Copy {
                return Err(DecodeError::malformed(STAGE, "not copy at the destination"));
            }
        }
        let asize = value(cgi, ASIZE)
            .map(|s| {
                s.parse::<u64>()
                    .map_err(|_| DecodeError::malformed(ASIZE, format!("{s:?}")))
            })
            .transpose()?;
        let owned = |k| value(cgi, k).map(str::to_string);
        Ok(Some(DestinationCgi {
            src: src.to_string(),
            key: key.to_string(),
            lfn: lfn.to_string(),
            streams,
            delegate,
            dlg: owned(DLG),
            scgi: value(cgi, SCGI).map(decode_scgi).unwrap_or_default(),
            spr: owned(SPR),
            tpr: owned(TPR),
            cks: owned(CKS),
            asize,
        }))
    }
}

/// `tpc.scgi`'s value: `pairs` as a CGI with tabs for `&` (the stock
/// client's form, so that it stays one CGI value).
pub fn encode_scgi(pairs: &[(String, String)]) -> String {
    let items: Vec<String> = pairs
        .iter()
        .map(|(k, v)| match v.is_empty() {
            true => k.clone(),
            false => format!("{k}={v}"),
        })
        .collect();
    items.join("\t")
}

/// The pairs of a `tpc.scgi` value ([`encode_scgi`]'s inverse); items
/// with an empty key are skipped.
pub fn decode_scgi(s: &str) -> Vec<(String, String)> {
    s.split('\t')
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether a server's answer to `kXR_Qconfig` `tpc` says it takes part in
/// TPC: a number of 1 or more (the stock `ofs.tpc` server answers `1`; one
/// without it echoes the key, `tpc`).
pub fn supported(qconfig_tpc: &str) -> bool {
    qconfig_tpc.trim().parse::<u32>().is_ok_and(|n| n > 0)
}

fn value<'a>(cgi: &'a [(String, String)], key: &str) -> Option<&'a str> {
    cgi.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url::parse_cgi;

    #[test]
    fn the_destination_cgi_is_the_stock_clients() {
        // xrdcp 5.5.3 --tpc only root://localhost:41731//f root://localhost:41732//f
        let stock = "oss.asize=3000000&tpc.dlg=localhost:41731&tpc.dlgon=0&\
                     tpc.key=2bf42da03e3c3e926b16c24a&tpc.lfn=/f&tpc.spr=root&\
                     tpc.src=localhost:41731&tpc.stage=copy&tpc.str=1&tpc.tpr=root";
        let mut ours = DestinationCgi::new("localhost:41731", "/f", "2bf42da03e3c3e926b16c24a");
        ours.asize = Some(3_000_000);
        assert_eq!(ours.to_pairs(), parse_cgi(stock));
        assert_eq!(
            DestinationCgi::from_cgi(&parse_cgi(stock)).unwrap(),
            Some(ours)
        );
    }

    #[test]
    fn delegation_passes_the_source_cgi_with_tabs() {
        // xrdcp 5.5.3 --tpc delegate only "root://localhost:41731//f?authz=Bearer%20abc&foo=1" ...
        let stock = "tpc.dlg=localhost:41731&tpc.dlgon=1&tpc.key=170b67b5479247946b16c280&\
                     tpc.lfn=/f&tpc.scgi=authz=Bearer%20abc\tfoo=1\ttpc.stage=placement&\
                     tpc.spr=root&tpc.src=localhost:41731&tpc.stage=copy&tpc.str=1&tpc.tpr=root";
        let parsed = DestinationCgi::from_cgi(&parse_cgi(stock))
            .unwrap()
            .unwrap();
        assert!(parsed.delegate);
        assert_eq!(
            parsed.scgi,
            parse_cgi("authz=Bearer%20abc&foo=1&tpc.stage=placement")
        );
        assert_eq!(parsed.to_pairs(), parse_cgi(stock));
    }

    #[test]
    fn the_source_rendezvous_is_the_stock_clients() {
        let stock = "tpc.dst=localhost&tpc.key=2bf42da03e3c3e926b16c24a&tpc.stage=copy";
        let ours = SourceCgi::rendezvous("2bf42da03e3c3e926b16c24a", "localhost");
        assert_eq!(ours.to_pairs(), parse_cgi(stock));
        assert_eq!(SourceCgi::from_cgi(&parse_cgi(stock)).unwrap(), Some(ours));
        // the destination's read, as the stock copy program sends it
        let read = parse_cgi("tpc.key=170b67b5479247946b16c280&tpc.org=root.18324@localhost");
        let read = SourceCgi::from_cgi(&read).unwrap().unwrap();
        assert_eq!(read.org.as_deref(), Some("root.18324@localhost"));
        assert_eq!((read.dst, read.stage), (None, None));
        // placement alone is no rendezvous
        assert_eq!(
            SourceCgi::from_cgi(&parse_cgi("tpc.stage=placement")).unwrap(),
            None
        );
    }

    #[test]
    fn bad_tpc_cgi_is_a_typed_error() {
        for bad in [
            "tpc.src=h:1&tpc.lfn=/f",
            "tpc.src=h:1&tpc.key=k",
            "tpc.src=h:1&tpc.key=a%26b&tpc.lfn=/f",
            "tpc.src=h:1&tpc.key=k&tpc.lfn=/f&tpc.str=0",
            "tpc.src=h:1&tpc.key=k&tpc.lfn=/f&tpc.str=x",
            "tpc.src=h:1&tpc.key=k&tpc.lfn=/f&tpc.dlgon=2",
            "tpc.src=h:1&tpc.key=k&tpc.lfn=/f&oss.asize=-1",
            "tpc.src=h:1&tpc.key=k&tpc.lfn=/f&tpc.stage=placement",
        ] {
            assert!(DestinationCgi::from_cgi(&parse_cgi(bad)).is_err(), "{bad}");
        }
        let long = format!("tpc.key={}", "a".repeat(MAX_KEY_LEN + 1));
        assert!(SourceCgi::from_cgi(&parse_cgi(&long)).is_err());
        assert!(SourceCgi::from_cgi(&parse_cgi("tpc.key=k&tpc.stage=x")).is_err());
        assert_eq!(DestinationCgi::from_cgi(&parse_cgi("a=1")).unwrap(), None);
    }

    #[test]
    fn keys_and_the_config_answer() {
        assert_eq!(key_from(&[0x0f, 0xa0, 0x01]), "0fa001");
        assert!(valid_key(&key_from(&[7; 12])));
        assert!(!valid_key(""));
        assert!(supported("1") && supported("1\n"));
        assert!(!supported("tpc") && !supported("0") && !supported(""));
    }
}
