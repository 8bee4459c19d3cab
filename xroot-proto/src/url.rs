//! `root://` URLs: `scheme://[user[:password]@]host[:port]//path[?cgi]`.
//!
//! Parsing is pure (no DNS, no I/O) so that the client, the server (for
//! redirect targets) and the fuzzers share one parser. Facts from XrdClURL.cc
//! (PROTOCOL.md §12.1): the default port is 1094; `roots://` and `xroots://`
//! mean TLS; `xrdcl.*` CGI selects the channel and is never sent to the server.
//! IPv6 hosts are written in brackets (`root://[::1]:1094//f`).

use core::fmt;

use crate::error::DecodeError;

/// The port a `root://` URL without one means.
pub const DEFAULT_PORT: u16 = 1094;

/// A parsed `root://` (or `roots://`, `xroot://`, `xroots://`) URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Url {
    /// Lower-cased scheme: `root`, `roots`, `xroot` or `xroots`.
    pub scheme: String,
    /// User name before `@`, if any.
    pub user: Option<String>,
    /// Password after `user:`, if any.
    pub password: Option<String>,
    /// Host name, IPv4 address, or IPv6 address without brackets.
    pub host: String,
    /// TCP port ([`DEFAULT_PORT`] when the URL gives none).
    pub port: u16,
    /// Absolute path, starting with `/` (`/` when the URL has no path).
    pub path: String,
    /// CGI parameters in order, without the leading `?`.
    pub cgi: Vec<(String, String)>,
}

impl Url {
    /// Parses `s`. Errors: [`DecodeError::Malformed`] naming the part that is
    /// wrong (scheme, host, port, ...).
    pub fn parse(s: &str) -> Result<Url, DecodeError> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| DecodeError::malformed("URL", "no scheme:// prefix"))?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "root" | "roots" | "xroot" | "xroots") {
            return Err(DecodeError::malformed(
                "URL scheme",
                format!("{scheme:?} is not root, roots, xroot or xroots"),
            ));
        }
        let (authority, path_cgi) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => match rest.find('?') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            },
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => match u.split_once(':') {
                Some((u, p)) => (Some(u.to_string()), Some(p.to_string())),
                None => (Some(u.to_string()), None),
            },
        };
        if user.as_deref() == Some("") {
            return Err(DecodeError::malformed("URL user", "empty user before '@'"));
        }
        let (host, port) = split_host_port(hostport)?;
        // root://host//abs/path: the first '/' separates, the path keeps one.
        let path_cgi = path_cgi.strip_prefix('/').unwrap_or(path_cgi);
        let (path, query) = match path_cgi.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_cgi, None),
        };
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let cgi = query.map(parse_cgi).unwrap_or_default();
        Ok(Url {
            scheme,
            user,
            password,
            host,
            port,
            path,
            cgi,
        })
    }

    /// Whether the scheme asks for TLS (`roots`, `xroots`).
    pub fn is_tls(&self) -> bool {
        self.scheme.ends_with('s')
    }

    /// The value of CGI key `key`, if present (the first one).
    pub fn cgi_value(&self, key: &str) -> Option<&str> {
        self.cgi
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The path with the CGI a server should see: every parameter except the
    /// client-only `xrdcl.*` ones, e.g. `/data/f.root?authz=x`.
    pub fn path_with_cgi(&self) -> String {
        let mut out = self.path.clone();
        let mut sep = '?';
        for (k, v) in self.cgi.iter().filter(|(k, _)| !k.starts_with("xrdcl.")) {
            out.push(sep);
            out.push_str(k);
            if !v.is_empty() {
                out.push('=');
                out.push_str(v);
            }
            sep = '&';
        }
        out
    }

    /// `host:port`, with brackets around an IPv6 host.
    pub fn host_port(&self) -> String {
        host_port(&self.host, self.port)
    }
}

/// `host:port`, with brackets around an IPv6 `host` (`[::1]:1094`).
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        if let Some(u) = &self.user {
            f.write_str(u)?;
            if let Some(p) = &self.password {
                write!(f, ":{p}")?;
            }
            f.write_str("@")?;
        }
        write!(f, "{}/{}", self.host_port(), self.path)?;
        let mut sep = '?';
        for (k, v) in &self.cgi {
            write!(f, "{sep}{k}")?;
            if !v.is_empty() {
                write!(f, "={v}")?;
            }
            sep = '&';
        }
        Ok(())
    }
}

fn split_host_port(hostport: &str) -> Result<(String, u16), DecodeError> {
    let bracketed = hostport.starts_with('[');
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| DecodeError::malformed("URL host", "'[' without ']'"))?;
        match after {
            "" => (h, None),
            p => (
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| DecodeError::malformed("URL host", "junk after ']'"))?,
                ),
            ),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err(DecodeError::malformed("URL host", "empty host"));
    }
    // ':' only inside brackets (IPv6); brackets only around the host
    if host.chars().any(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '/' | '?' | '@' | '[' | ']')
            || (c == ':' && !bracketed)
    }) {
        return Err(DecodeError::malformed(
            "URL host",
            format!("{host:?} holds a character not allowed in a host"),
        ));
    }
    let port =
        match port {
            None | Some("") => DEFAULT_PORT,
            Some(p) => p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(|| {
                DecodeError::malformed("URL port", format!("{p:?} is not 1..65535"))
            })?,
        };
    Ok((host.to_string(), port))
}

/// The value of `key` in `q` (`a=1&b&c=3`, without the `?`), the first
/// one; a key without `=` has the empty value.
pub fn cgi_value_of<'a>(q: &'a str, key: &str) -> Option<&'a str> {
    q.split('&')
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// Splits `a=1&b&c=3` into pairs; items with an empty key (`&&`, `&=x`)
/// are skipped.
pub fn parse_cgi(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let u =
            Url::parse("root://alice:pw@eos.example.org:2094//eos/f.root?xrdcl.intent=a&authz=t")
                .unwrap();
        assert_eq!(u.scheme, "root");
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.password.as_deref(), Some("pw"));
        assert_eq!(u.host, "eos.example.org");
        assert_eq!(u.port, 2094);
        assert_eq!(u.path, "/eos/f.root");
        assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(u.path_with_cgi(), "/eos/f.root?authz=t");
        assert_eq!(Url::parse(&u.to_string()).unwrap(), u);
        assert_eq!(
            parse_cgi("a=1&&=x&b"),
            [("a".into(), "1".into()), ("b".into(), String::new())]
        );
    }

    #[test]
    fn defaults_and_ipv6() {
        let u = Url::parse("roots://[::1]//tmp/x").unwrap();
        assert!(u.is_tls());
        assert_eq!(u.host, "::1");
        assert_eq!(u.port, DEFAULT_PORT);
        assert_eq!(u.host_port(), "[::1]:1094");
        let u = Url::parse("root://h").unwrap();
        assert_eq!(u.path, "/");
        let u = Url::parse("root://h:1/rel").unwrap();
        assert_eq!(u.path, "/rel");
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "http://h//x",
            "root//h",
            "root://:1094//x",
            "root://h:0//x",
            "root://h:99999//x",
            "root://[::1//x",
            "root://@h//x",
            "root://a:b:1094//x",
            "root://[:]:]:1094//x",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }
}
