//! The `ztn` security protocol: a WLCG bearer token (a JWT, but the
//! protocol does not look inside) carried in `kXR_auth` over a TLS link.
//!
//! Wire facts (XrdSecProtocolztn.cc of xrootd 5.5.3, SECURITY.md):
//!
//! - The server's login reply offers `&P=ztn,<opts+ver>:<maxtsz>:`, by
//!   default `&P=ztn,0:4096:` ([`LoginParams`]).
//! - The `kXR_auth` credential is an 8-byte header — `"ztn\0"`, version
//!   `0`, the operation `'T'` (a token follows), two zero bytes — then the
//!   token length plus one as a big-endian u16, the token and a NUL
//!   ([`encode_credential`], [`decode_credential`]). The stock client's
//!   buffer is `sizeof(TokenResp)` (12, with alignment) plus the token and
//!   its NUL, so it sends 2 bytes more than that; a decoder accepts
//!   trailing bytes and [`encode_credential`] sends the same 2 (zero)
//!   bytes.
//! - The server answers `kXR_ok` or `kXR_error`; there is no second round.
//!   Both ends refuse `ztn` on a link without TLS.
//!
//! The client finds its token as the WLCG Bearer Token Discovery profile
//! and the stock client do ([`discover`]): `BEARER_TOKEN`,
//! `BEARER_TOKEN_FILE`, `$XDG_RUNTIME_DIR/bt_u<euid>`, `/tmp/bt_u<euid>`.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bytes::{BufMut, Bytes, BytesMut};

/// The protocol id (`credtype` of `kXR_auth`, name in the login reply).
pub const PROTOCOL: &str = "ztn";

/// The credential version this implementation speaks (`ztnVersion`).
pub const VERSION: u8 = 0;

/// The largest token (without its NUL) a 5.5.3 server accepts unless
/// configured otherwise (`MaxTokSize`, its `-maxsz` default), in bytes.
pub const DEFAULT_MAX_TOKEN_SIZE: usize = 4096;

/// The operation byte of a credential carrying a token (`TokenHdr::IsTkn`).
const OP_TOKEN: u8 = b'T';
/// The operation byte of a request for the list of issuers
/// (`TokenHdr::SndAI`), which 5.5.3 servers refuse.
const OP_SEND_ISSUERS: u8 = b'S';
/// Header (8) plus the length field (2).
const PREFIX_LEN: usize = 10;
/// What the stock client sends after the token's NUL (see the module doc).
const STOCK_PAD: usize = 2;

/// The parameters a server offers for `ztn` in its login reply: the text
/// after `ztn,` in `&P=ztn,<opts+ver>:<maxtsz>:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginParams {
    /// The option bits and, in the low byte, the server's version
    /// (`ztnInfo`; 5.5.3 sends 0).
    pub options: u64,
    /// The largest token the server takes, in bytes without the NUL; the
    /// client refuses to send a token of this length or more.
    pub max_token_size: usize,
}

impl Default for LoginParams {
    /// `0:4096:`, what a 5.5.3 server offers by default.
    fn default() -> LoginParams {
        LoginParams {
            options: u64::from(VERSION),
            max_token_size: DEFAULT_MAX_TOKEN_SIZE,
        }
    }
}

impl fmt::Display for LoginParams {
    /// `<options>:<max_token_size>:`, e.g. `0:4096:`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:", self.options, self.max_token_size)
    }
}

impl LoginParams {
    /// Parses `<opts+ver>:<maxtsz>:` as the stock client does (a decimal,
    /// `:`, a positive decimal, `:`; anything after that is ignored). A
    /// `TLS:` prefix, which the stock server strips before sending, is
    /// accepted too.
    ///
    /// Errors: [`ZtnError::LoginParams`] naming what is wrong.
    pub fn parse(params: &[u8]) -> Result<LoginParams, ZtnError> {
        let bad = |why: &'static str| ZtnError::LoginParams {
            params: String::from_utf8_lossy(params).into_owned(),
            why,
        };
        let text = std::str::from_utf8(params).map_err(|_| bad("not text"))?;
        let text = text.strip_prefix("TLS:").unwrap_or(text);
        let mut fields = text.splitn(3, ':');
        let options = fields
            .next()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or(bad("malformed client parameters"))?;
        let max = fields
            .next()
            .filter(|_| text.matches(':').count() >= 2)
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or(bad("invalid or missing maxtsz parameter"))?;
        Ok(LoginParams {
            options,
            max_token_size: max,
        })
    }
}

/// What can go wrong with `ztn` credentials and tokens.
#[derive(Debug, thiserror::Error)]
pub enum ZtnError {
    /// The login reply's `ztn` parameters are not `<opts>:<maxtsz>:`.
    #[error("server's ztn parameters {params:?}: {why}")]
    LoginParams {
        /// The parameters as received.
        params: String,
        /// What is wrong with them.
        why: &'static str,
    },
    /// A token of `len` bytes is not below the server's maximum.
    #[error("bearer token is too big: {len} bytes, the server takes fewer than {max}")]
    TokenTooBig {
        /// The token's length.
        len: usize,
        /// The server's limit ([`LoginParams::max_token_size`]).
        max: usize,
    },
    /// A token that is empty or contains a NUL or whitespace cannot be sent.
    #[error("bearer token is empty or contains a NUL or whitespace")]
    TokenInvalid,
    /// A `kXR_auth` credential that is not a well-formed `ztn` token
    /// credential; the text is the stock server's reason (`'ztn' token
    /// malformed; …`, `Invalid ztn credentials`, …).
    #[error("{0}")]
    Malformed(&'static str),
    /// The credential is not for `ztn` (its first 4 bytes).
    #[error("Authentication protocol id mismatch ('ztn' != '{0}').")]
    NotZtn(String),
    /// The client asked for the list of token issuers (operation `'S'`),
    /// which a 5.5.3 server does not support either.
    #[error("Authorized issuer request not supported")]
    IssuerRequest,
}

/// The `kXR_auth` credential carrying `token`: header, length, token, NUL
/// and the stock client's 2 pad bytes (zeros).
///
/// Errors: [`ZtnError::TokenTooBig`] when `token.len() >= max_token_size`
/// (the stock client's check), [`ZtnError::TokenInvalid`] when it is empty
/// or has a NUL or whitespace in it.
pub fn encode_credential(token: &str, max_token_size: usize) -> Result<Bytes, ZtnError> {
    if token.is_empty() || token.bytes().any(|b| b == 0 || b.is_ascii_whitespace()) {
        return Err(ZtnError::TokenInvalid);
    }
    if token.len() >= max_token_size || token.len() + 1 > usize::from(u16::MAX) {
        return Err(ZtnError::TokenTooBig {
            len: token.len(),
            max: max_token_size.min(usize::from(u16::MAX)),
        });
    }
    let mut b = BytesMut::with_capacity(PREFIX_LEN + token.len() + 1 + STOCK_PAD);
    b.put_slice(b"ztn\0");
    b.put_u8(VERSION);
    b.put_u8(OP_TOKEN);
    b.put_bytes(0, 2);
    b.put_u16(token.len() as u16 + 1);
    b.put_slice(token.as_bytes());
    b.put_u8(0);
    b.put_bytes(0, STOCK_PAD);
    Ok(b.freeze())
}

/// The token of a `kXR_auth` credential, checked as the stock server
/// checks it (XrdSecProtocolztn::Authenticate); bytes after the token's
/// NUL are ignored.
///
/// Errors: [`ZtnError::NotZtn`] when the id is not `"ztn\0"`,
/// [`ZtnError::IssuerRequest`] for operation `'S'`, and
/// [`ZtnError::Malformed`] for: fewer than 8 bytes ("Invalid ztn
/// credentials"), another operation ("Invalid ztn response code"), and —
/// as "'ztn' token malformed; …" — another version, a length below 1, a
/// length past the end, an empty token, no NUL at the end, or a token
/// that is not UTF-8.
pub fn decode_credential(cred: &[u8]) -> Result<&str, ZtnError> {
    if cred.len() < 8 {
        return Err(ZtnError::Malformed("Invalid ztn credentials"));
    }
    if &cred[..4] != b"ztn\0" {
        let id = cred[..4].split(|&b| b == 0).next().unwrap_or_default();
        return Err(ZtnError::NotZtn(String::from_utf8_lossy(id).into_owned()));
    }
    match cred[5] {
        OP_TOKEN => {}
        OP_SEND_ISSUERS => return Err(ZtnError::IssuerRequest),
        _ => return Err(ZtnError::Malformed("Invalid ztn response code")),
    }
    if cred[4] != VERSION {
        return Err(ZtnError::Malformed(
            "'ztn' token malformed; version mismatch",
        ));
    }
    let Some(len) = cred
        .get(8..10)
        .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
    else {
        return Err(ZtnError::Malformed(
            "'ztn' token malformed; respdata > credsize",
        ));
    };
    if len < 1 {
        return Err(ZtnError::Malformed(
            "'ztn' token malformed; token length < 1",
        ));
    }
    let Some(token) = cred.get(PREFIX_LEN..PREFIX_LEN + len) else {
        return Err(ZtnError::Malformed(
            "'ztn' token malformed; respdata > credsize",
        ));
    };
    if token[0] == 0 {
        return Err(ZtnError::Malformed("'ztn' token malformed; null token"));
    }
    let Some((0, token)) = token.split_last().map(|(l, t)| (*l, t)) else {
        return Err(ZtnError::Malformed(
            "'ztn' token malformed; missing null byte",
        ));
    };
    // The stock server reads the token as a C string: it ends at a NUL.
    let token = token.split(|&b| b == 0).next().unwrap_or_default();
    std::str::from_utf8(token).map_err(|_| ZtnError::Malformed("'ztn' token malformed; not UTF-8"))
}

/// Where [`discover`] found a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// Given by the application ([`BearerToken::new`]).
    Given,
    /// The `BEARER_TOKEN` environment variable.
    Env,
    /// A file: `BEARER_TOKEN_FILE`, `$XDG_RUNTIME_DIR/bt_u<euid>` or
    /// `/tmp/bt_u<euid>`.
    File(PathBuf),
}

/// A bearer token, given or found by [`discover`]: trimmed of surrounding
/// whitespace. Its `Debug` shows only its length.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken {
    /// The token text.
    pub token: String,
    /// Where it came from.
    pub source: TokenSource,
}

impl BearerToken {
    /// A token the application has: trimmed, [`TokenSource::Given`].
    pub fn new(token: impl AsRef<str>) -> BearerToken {
        BearerToken {
            token: token.as_ref().trim().to_string(),
            source: TokenSource::Given,
        }
    }
}

impl fmt::Debug for BearerToken {
    /// The token itself is a secret: only its length is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken")
            .field("token", &format_args!("<{} bytes>", self.token.len()))
            .field("source", &self.source)
            .finish()
    }
}

/// Why a token file could not be used. Discovery stops at such a file, as
/// the stock client does, rather than fall back to the next location.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The file exists but could not be read.
    #[error("unable to read bearer token file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
    /// The file grants access to its group or to others (the stock
    /// client's check: `mode & 077`, "excessive permissions").
    #[error(
        "bearer token file {path} is accessible to group or others (mode {mode:o}); chmod 600 it"
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is larger than the token size limit.
    #[error("bearer token file {path} is too big: {size} bytes, at most {max}")]
    TooBig {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        max: usize,
    },
    /// The token is not UTF-8 text.
    #[error("bearer token from {0} is not text")]
    NotText(String),
}

/// Finds the client's bearer token as the WLCG Bearer Token Discovery
/// profile (§2) and the stock client (`getCredentials`) do, first hit
/// wins:
///
/// 1. `BEARER_TOKEN`, if set and not blank;
/// 2. the file named by `BEARER_TOKEN_FILE`, if set;
/// 3. `$XDG_RUNTIME_DIR/bt_u<euid>`, if `XDG_RUNTIME_DIR` is set;
/// 4. `/tmp/bt_u<euid>`.
///
/// A file that does not exist or holds only whitespace is skipped. The
/// token is trimmed. Files larger than `max_size` bytes are refused.
///
/// Errors: a [`DiscoveryError`] for the first file that exists but cannot
/// be used (unreadable, group/other permission bits set, too big, not
/// text); `Ok(None)` when nothing is found.
pub fn discover(max_size: usize) -> Result<Option<BearerToken>, DiscoveryError> {
    discover_in(
        |name| std::env::var_os(name),
        rustix::process::geteuid().as_raw(),
        max_size,
    )
}

/// [`discover`] with the environment given by `env` and the effective
/// user id `euid` (for tests and for callers that keep their own
/// environment). Errors: as [`discover`].
pub fn discover_in(
    env: impl Fn(&str) -> Option<OsString>,
    euid: u32,
    max_size: usize,
) -> Result<Option<BearerToken>, DiscoveryError> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(value) = set("BEARER_TOKEN") {
        let text = value
            .into_string()
            .map_err(|_| DiscoveryError::NotText("BEARER_TOKEN".into()))?;
        let token = text.trim();
        if !token.is_empty() {
            return Ok(Some(BearerToken {
                token: token.to_string(),
                source: TokenSource::Env,
            }));
        }
    }
    let mut files = Vec::with_capacity(3);
    if let Some(file) = set("BEARER_TOKEN_FILE") {
        files.push(PathBuf::from(file));
    }
    if let Some(dir) = set("XDG_RUNTIME_DIR") {
        files.push(Path::new(&dir).join(format!("bt_u{euid}")));
    }
    files.push(PathBuf::from(format!("/tmp/bt_u{euid}")));
    for path in files {
        if let Some(token) = read_token_file(&path, max_size)? {
            return Ok(Some(BearerToken {
                token,
                source: TokenSource::File(path),
            }));
        }
    }
    Ok(None)
}

/// The trimmed token in file `path`: `Ok(None)` when the file does not
/// exist or holds only whitespace (the stock client's `readToken`).
///
/// Errors: [`DiscoveryError::Io`] when it exists but cannot be read,
/// [`DiscoveryError::TooBig`] when it has more than `max_size` bytes,
/// [`DiscoveryError::Permissions`] when its mode has any group or other
/// bit set, [`DiscoveryError::NotText`] when it is not UTF-8.
pub fn read_token_file(path: &Path, max_size: usize) -> Result<Option<String>, DiscoveryError> {
    let io_err = |source| DiscoveryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    if meta.len() > max_size as u64 {
        return Err(DiscoveryError::TooBig {
            path: path.to_path_buf(),
            size: meta.len(),
            max: max_size,
        });
    }
    let bytes = std::fs::read(path).map_err(io_err)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| DiscoveryError::NotText(path.display().to_string()))?;
    let token = text.trim();
    if token.is_empty() {
        return Ok(None);
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(DiscoveryError::Permissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(Some(token.to_string()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn credential_round_trip_and_layout() {
        let cred = encode_credential("abc.def.ghi", 4096).unwrap();
        let mut want = b"ztn\0\x00T\0\0\x00\x0cabc.def.ghi\0".to_vec();
        want.extend_from_slice(&[0, 0]);
        assert_eq!(&cred[..], &want[..]);
        assert_eq!(decode_credential(&cred).unwrap(), "abc.def.ghi");
        // without the stock pad
        assert_eq!(
            decode_credential(&cred[..cred.len() - 2]).unwrap(),
            "abc.def.ghi"
        );
    }

    #[test]
    fn credential_limits() {
        assert!(matches!(
            encode_credential(&"a".repeat(4096), 4096),
            Err(ZtnError::TokenTooBig { len: 4096, .. })
        ));
        assert!(encode_credential(&"a".repeat(4095), 4096).is_ok());
        assert!(matches!(
            encode_credential("", 4096),
            Err(ZtnError::TokenInvalid)
        ));
        assert!(matches!(
            encode_credential("a b", 4096),
            Err(ZtnError::TokenInvalid)
        ));
    }

    #[test]
    fn malformed_credentials_are_refused() {
        let good = encode_credential("tok", 4096).unwrap().to_vec();
        let msg = |c: &[u8]| decode_credential(c).unwrap_err().to_string();
        assert_eq!(msg(b"ztn\0"), "Invalid ztn credentials");
        let mut c = good.clone();
        c[..4].copy_from_slice(b"sss\0");
        assert_eq!(
            msg(&c),
            "Authentication protocol id mismatch ('ztn' != 'sss')."
        );
        let mut c = good.clone();
        c[5] = b'S';
        assert!(matches!(
            decode_credential(&c),
            Err(ZtnError::IssuerRequest)
        ));
        c[5] = b'X';
        assert_eq!(msg(&c), "Invalid ztn response code");
        let mut c = good.clone();
        c[4] = 1;
        assert_eq!(msg(&c), "'ztn' token malformed; version mismatch");
        let mut c = good.clone();
        c[8..10].copy_from_slice(&0u16.to_be_bytes());
        assert_eq!(msg(&c), "'ztn' token malformed; token length < 1");
        let mut c = good.clone();
        c[8..10].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(msg(&c), "'ztn' token malformed; respdata > credsize");
        assert_eq!(
            msg(&good[..9]),
            "'ztn' token malformed; respdata > credsize"
        );
        let mut c = good.clone();
        c[10] = 0;
        assert_eq!(msg(&c), "'ztn' token malformed; null token");
        let mut c = good.clone();
        c[13] = b'x';
        assert_eq!(msg(&c), "'ztn' token malformed; missing null byte");
    }

    #[test]
    fn login_params() {
        assert_eq!(LoginParams::default().to_string(), "0:4096:");
        assert_eq!(
            LoginParams::parse(b"0:4096:").unwrap(),
            LoginParams::default()
        );
        assert_eq!(
            LoginParams::parse(b"TLS:0:8192:").unwrap().max_token_size,
            8192
        );
        for bad in [&b""[..], b"0", b"x:4096:", b"0:0:", b"0:4096", b"0:-1:"] {
            assert!(LoginParams::parse(bad).is_err(), "{bad:?}");
        }
    }

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// An environment from pairs; the euid is picked so that
    /// `/tmp/bt_u<euid>` does not exist.
    fn discover_with(vars: &[(&str, &Path)]) -> Result<Option<BearerToken>, DiscoveryError> {
        let env: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        discover_in(|k| env.get(k).cloned(), 3_999_999_999, 4096)
    }

    #[test]
    fn discovery_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tok");
        write(&file, "  from-file\n", 0o600);
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        write(&runtime.join("bt_u3999999999"), "from-runtime\n", 0o400);

        let got = discover_with(&[
            ("BEARER_TOKEN", Path::new(" from-env \n")),
            ("BEARER_TOKEN_FILE", &file),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            (got.token.as_str(), got.source),
            ("from-env", TokenSource::Env)
        );

        // a blank BEARER_TOKEN is skipped
        let got = discover_with(&[
            ("BEARER_TOKEN", Path::new("  ")),
            ("BEARER_TOKEN_FILE", &file),
            ("XDG_RUNTIME_DIR", &runtime),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.token, "from-file");
        assert_eq!(got.source, TokenSource::File(file.clone()));

        // a missing file is skipped, then the runtime dir
        let got = discover_with(&[
            ("BEARER_TOKEN_FILE", &dir.path().join("none")),
            ("XDG_RUNTIME_DIR", &runtime),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.token, "from-runtime");

        // a blank file is skipped too
        let blank = dir.path().join("blank");
        write(&blank, "\n\t\n", 0o644);
        assert!(discover_with(&[("BEARER_TOKEN_FILE", &blank)])
            .unwrap()
            .is_none());
        assert!(discover_with(&[]).unwrap().is_none());
    }

    #[test]
    fn token_file_open_to_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o640, 0o604, 0o610] {
            let file = dir.path().join(format!("tok{mode:o}"));
            write(&file, "secret\n", mode);
            let err = discover_with(&[("BEARER_TOKEN_FILE", &file)]).unwrap_err();
            assert!(
                matches!(err, DiscoveryError::Permissions { mode: m, .. } if m == mode),
                "{err}"
            );
        }
        let big = dir.path().join("big");
        write(&big, &"a".repeat(5000), 0o600);
        assert!(matches!(
            discover_with(&[("BEARER_TOKEN_FILE", &big)]),
            Err(DiscoveryError::TooBig { size: 5000, .. })
        ));
        let not_text = dir.path().join("bin");
        std::fs::write(&not_text, [0xff, 0xfe]).unwrap();
        std::fs::set_permissions(&not_text, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            discover_with(&[("BEARER_TOKEN_FILE", &not_text)]),
            Err(DiscoveryError::NotText(_))
        ));
    }

    #[test]
    fn debug_hides_the_token() {
        let t = BearerToken {
            token: "secret".into(),
            source: TokenSource::Env,
        };
        assert!(!format!("{t:?}").contains("secret"));
    }
}
