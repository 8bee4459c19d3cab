//! Request paths as the reference screens them before any backend call
//! (XrdXrootdProtocol `rpCheck`, `Squash`; PROTOCOL.md §4): the payload
//! ends at its first NUL, the CGI after the first `?` is split off, a path
//! must be absolute and may not hold a `..` component (`kXR_NotAuthorized`
//! "`<op>` relative path '…' is disallowed."), and repeated slashes and `.`
//! components are squashed.

use xroot_proto::ErrorCode;

use crate::fs::FsError;

/// A screened request path and its CGI (without the `?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `/`-rooted, without `//`, `.` or `..` components or a trailing slash.
    pub(crate) path: String,
    /// The CGI, possibly empty.
    pub(crate) cgi: String,
}

impl Target {
    /// The value of `key` in the CGI, if present.
    pub(crate) fn cgi_value(&self, key: &str) -> Option<&str> {
        cgi_value(&self.cgi, key)
    }
}

/// The value of `key` in `cgi` (`k=v&k=v…`).
pub(crate) fn cgi_value<'a>(cgi: &'a str, key: &str) -> Option<&'a str> {
    cgi.split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The payload up to its first NUL, as text. Errors: `kXR_ArgInvalid` for
/// text that is not UTF-8.
pub(crate) fn text(payload: &[u8]) -> Result<&str, FsError> {
    let end = payload
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(payload.len());
    std::str::from_utf8(&payload[..end])
        .map_err(|_| FsError::new(ErrorCode::ARG_INVALID, "request argument is not UTF-8"))
}

/// The longest path a request may name, in bytes once squashed: the
/// kernel's `PATH_MAX` less its NUL, which also bounds the stock server
/// (its local path, root and request path together, fails past it with
/// `kXR_ArgTooLong`). So about 2,000 components at most.
pub(crate) const MAX_PATH: usize = 4095;

/// Screens one path argument for the operation `op` ("Opening",
/// "Stating", …), in time linear in its length. Errors:
/// `kXR_NotAuthorized` for a relative path or a `..` component,
/// `kXR_ArgTooLong` for a path longer than [`MAX_PATH`] once squashed,
/// `kXR_ArgInvalid` for text that is not UTF-8.
pub(crate) fn target(op: &str, arg: &str) -> Result<Target, FsError> {
    let (path, cgi) = arg.split_once('?').unwrap_or((arg, ""));
    if !path.starts_with('/') || path.split('/').any(|c| c == "..") {
        return Err(FsError::new(
            ErrorCode::NOT_AUTHORIZED,
            format!("{op} relative path '{arg}' is disallowed."),
        ));
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let path = format!("/{}", parts.join("/"));
    if path.len() > MAX_PATH {
        return Err(FsError::new(
            ErrorCode::ARG_TOO_LONG,
            format!(
                "{op} path of {} bytes is too long; at most {MAX_PATH} are allowed.",
                path.len()
            ),
        ));
    }
    Ok(Target {
        path,
        cgi: cgi.to_string(),
    })
}

/// [`text`] then [`target`]: a payload that is one path.
pub(crate) fn payload_target(op: &str, payload: &[u8]) -> Result<Target, FsError> {
    target(op, text(payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screening() {
        let t = payload_target("Opening", b"//a/./b//c/?x=1&cks.type=md5\0junk").unwrap();
        assert_eq!(t.path, "/a/b/c");
        assert_eq!(t.cgi, "x=1&cks.type=md5");
        assert_eq!(t.cgi_value("cks.type"), Some("md5"));
        assert_eq!(t.cgi_value("y"), None);
        assert_eq!(payload_target("Stating", b"/").unwrap().path, "/");
        for bad in [&b"a/b"[..], b"/a/../b", b"/..", b"", b"?/x"] {
            let e = payload_target("Stating", bad).unwrap_err();
            let FsError::Error { code, message } = e else {
                panic!()
            };
            assert_eq!(code, ErrorCode::NOT_AUTHORIZED, "{bad:?}");
            assert!(message.starts_with("Stating relative path '"), "{message}");
        }
        // long paths: squashed first, then measured
        let longest = format!("/{}bc", "a/".repeat(2046)); // 4095 bytes
        assert_eq!(target("x", &longest).unwrap().path.len(), MAX_PATH);
        assert_eq!(
            target("x", &format!("{longest}////./")).unwrap().path.len(),
            MAX_PATH
        );
        let FsError::Error { code, message } =
            target("Stating", &format!("{longest}/d")).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(code, ErrorCode::ARG_TOO_LONG);
        assert_eq!(
            message,
            "Stating path of 4097 bytes is too long; at most 4095 are allowed."
        );
        // `..` inside a name is fine
        assert_eq!(target("x", "/a..b/c..").unwrap().path, "/a..b/c..");
        assert!(matches!(
            payload_target("x", b"/\xff"),
            Err(FsError::Error {
                code: ErrorCode::ARG_INVALID,
                ..
            })
        ));
    }
}
