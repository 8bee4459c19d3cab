//! Where a `kXR_redirect` sends a request: [`Redirect::target`] reads the
//! host field by the sign of the port (PROTOCOL.md §8.3, from XProtocol.hh's
//! `ServerResponseBody_Redirect`) as XrdCl does (XrdClXRootDMsgHandler.cc
//! `HandleResponse`, XrdClURL.cc `ParseHostInfo`), and makes the URL the
//! request goes to next from the URL it was sent to (PROTOCOL.md §8.3,
//! §12.1, §12.2).

use std::net::{Ipv4Addr, Ipv6Addr};

use super::redirect::{Redirect, RedirectMode};
use crate::error::DecodeError;
use crate::url::{parse_cgi, Url, DEFAULT_PORT};

/// Why a [`Redirect`] names no place to go ([`Redirect::target`]).
///
/// The host field is given as the redirect carried it (before its first
/// `?`), bytes that are not UTF-8 replaced by U+FFFD. Every variant but
/// [`RedirectError::Foreign`] is a malformed redirect, and its message says
/// what is wrong with the field.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
    /// A port field above 65535 (`port > 0` names a TCP port).
    #[error("port {port} is not 1..65535")]
    PortField {
        /// The port field.
        port: u32,
    },
    /// A `[` that no `]` closes.
    #[error("{field:?}: '[' without ']'")]
    UnclosedBracket {
        /// The host field.
        field: String,
    },
    /// Brackets around something that is not an IPv6 address.
    #[error("{field:?}: {host:?} is not an IPv6 address")]
    NotIpv6 {
        /// The host field.
        field: String,
        /// What the brackets hold.
        host: String,
    },
    /// Something other than `:port` after the `]`.
    #[error("{field:?}: {after:?} after ']'")]
    AfterBracket {
        /// The host field.
        field: String,
        /// What follows the `]`.
        after: String,
    },
    /// More than one `:` outside brackets, and not an IPv6 address.
    #[error("{field:?} is neither host:port nor an IPv6 address")]
    Colons {
        /// The host field.
        field: String,
    },
    /// An empty host, or one with white space, a control character, `/`,
    /// `?`, `@`, `[` or `]`.
    #[error("{field:?}: {host:?} is not a host")]
    NotAHost {
        /// The host field.
        field: String,
        /// The host it names.
        host: String,
    },
    /// A `:port` in the host field when the port field gives one too.
    #[error("{field:?} has a port and the port field another")]
    TwoPorts {
        /// The host field.
        field: String,
    },
    /// A `:port` in the host field that is not a number in 1..65535.
    #[error("{field:?}: port {port:?} is not 1..65535")]
    Port {
        /// The host field.
        field: String,
        /// What follows the `:`.
        port: String,
    },
    /// A `root://` (`roots://`, `xroot://`, `xroots://`) URL that does not
    /// parse ([`Url::parse`]'s error).
    #[error(transparent)]
    Url(DecodeError),
    /// A URL of another scheme (`http://…`), which XrdCl does not follow
    /// but hands back to its caller as the answer (PROTOCOL.md §8.3).
    #[error("a URL of another scheme: {url}")]
    Foreign {
        /// The URL, as the host field gave it.
        url: String,
    },
}

impl Redirect {
    /// The URL a request sent to `from` goes to next, after this redirect.
    ///
    /// The host field is read by the sign of the port (PROTOCOL.md §8.3):
    /// - `port > 0` ([`RedirectMode::HostPort`]): a host name, an IPv4
    ///   address, or an IPv6 address bare or in brackets, at that port;
    /// - `port == 0` ([`RedirectMode::HostAsIs`]): any of them, followed
    ///   by `:port` except the bare IPv6 address; port 1094 when none;
    /// - `port < 0` ([`RedirectMode::Url`], [`RedirectMode::Flags`]): a
    ///   `root://`, `roots://`, `xroot://` or `xroots://` URL, or, without
    ///   a `scheme://`, a host read as with port 0 (XrdCl's URL parser
    ///   takes it as `root://`).
    ///
    /// As XrdCl's URL parser reads hosts, `[::a.b.c.d]` and `::a.b.c.d`
    /// (IPv4 in IPv6 notation, not `::ffff:`) are the IPv4 address
    /// `a.b.c.d`, and the host comes without brackets.
    ///
    /// The new URL keeps the rest of `from`: its scheme, user, password,
    /// path and CGI for a host; for a URL, `from`'s user when it names
    /// none, `from`'s path when it names none (`/`), and `roots` when it
    /// says `root` but `from` is TLS (XrdCl stays on TLS). In both, the
    /// `xrdcl.*` CGI of `from` that the new URL lacks is kept (it selects
    /// the channel, PROTOCOL.md §12.1), then the redirect's opaque part and
    /// token are merged into the CGI (PROTOCOL.md §12.2): a key the URL has
    /// already takes the redirect's value, so that hop after hop a key is
    /// sent once, with its latest value, as XrdCl keeps CGI in a map.
    ///
    /// Errors: [`RedirectError::Foreign`] for a URL of another scheme; every
    /// other variant of [`RedirectError`] for a host field of none of the
    /// forms above (a port field above 65535, unbalanced brackets, two
    /// ports, a port not in 1..65535, a host with a character no host has,
    /// a `root://` URL that does not parse).
    ///
    /// ```
    /// use xroot_proto::response::Redirect;
    /// use xroot_proto::url::Url;
    ///
    /// let from = Url::parse("roots://alice@mgr//store/f?xrdcl.intent=a").unwrap();
    /// let to = Redirect::to_host("[::127.0.0.1]", 2094).with_opaque("tried=mgr");
    /// assert_eq!(
    ///     to.target(&from).unwrap().to_string(),
    ///     "roots://alice@127.0.0.1:2094//store/f?xrdcl.intent=a&tried=mgr"
    /// );
    /// ```
    pub fn target(&self, from: &Url) -> Result<Url, RedirectError> {
        let field = String::from_utf8_lossy(&self.host).into_owned();
        let at = |(host, port): (String, u16)| Url {
            host,
            port,
            ..from.clone()
        };
        let mut url = match self.mode() {
            RedirectMode::HostPort(port) => {
                let port = u16::try_from(port).map_err(|_| RedirectError::PortField { port })?;
                at(host_and_port(&field, Some(port))?)
            }
            RedirectMode::HostAsIs => at(host_and_port(&field, None)?),
            RedirectMode::Url | RedirectMode::Flags(_) => {
                let scheme = field.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                let mut u = match scheme.as_deref() {
                    // no scheme: XrdCl's URL reads it as root://
                    None => at(host_and_port(&field, None)?),
                    Some("root" | "roots" | "xroot" | "xroots") => {
                        Url::parse(&field).map_err(RedirectError::Url)?
                    }
                    Some(_) => return Err(RedirectError::Foreign { url: field }),
                };
                if from.is_tls() && !u.is_tls() {
                    u.scheme = "roots".into();
                }
                if u.user.is_none() {
                    u.user = from.user.clone();
                }
                if u.path == "/" {
                    u.path = from.path.clone();
                }
                u
            }
        };
        for (k, v) in from.cgi.iter().filter(|(k, _)| k.starts_with("xrdcl.")) {
            if url.cgi_value(k).is_none() {
                url.cgi.push((k.clone(), v.clone()));
            }
        }
        for part in [&self.opaque, &self.token].into_iter().flatten() {
            for (k, v) in parse_cgi(&String::from_utf8_lossy(part)) {
                match url.cgi.iter_mut().find(|(key, _)| *key == k) {
                    Some(kv) => kv.1 = v,
                    None => url.cgi.push((k, v)),
                }
            }
        }
        Ok(url)
    }
}

/// The host and port a redirect's host `field` names: `host`, `[v6]` or a
/// bare IPv6 address, and when `port` (the port field) is `None`, any of
/// them but the bare IPv6 one followed by `:port`; the port is `port`, else
/// the field's, else 1094. The host comes without brackets, and
/// `::a.b.c.d` as `a.b.c.d`. Errors: the [`RedirectError`] saying what is
/// wrong, for any other form.
fn host_and_port(field: &str, port: Option<u16>) -> Result<(String, u16), RedirectError> {
    let field_owned = || field.to_string();
    let (host, field_port) = if let Some(rest) = field.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| RedirectError::UnclosedBracket {
                field: field_owned(),
            })?;
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(RedirectError::NotIpv6 {
                field: field_owned(),
                host: host.to_string(),
            });
        }
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => {
                    return Err(RedirectError::AfterBracket {
                        field: field_owned(),
                        after: after.to_string(),
                    })
                }
            },
        }
    } else if field.matches(':').count() > 1 {
        if field.parse::<Ipv6Addr>().is_err() {
            return Err(RedirectError::Colons {
                field: field_owned(),
            });
        }
        (field, None)
    } else {
        match field.split_once(':') {
            Some((host, p)) => (host, Some(p)),
            None => (field, None),
        }
    };
    if host.is_empty()
        || host.chars().any(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '/' | '?' | '@' | '[' | ']')
        })
    {
        return Err(RedirectError::NotAHost {
            field: field_owned(),
            host: host.to_string(),
        });
    }
    let port = match (port, field_port) {
        (Some(_), Some(_)) => {
            return Err(RedirectError::TwoPorts {
                field: field_owned(),
            })
        }
        (Some(p), None) => p,
        (None, None) => DEFAULT_PORT,
        (None, Some(p)) => {
            p.parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| RedirectError::Port {
                    field: field_owned(),
                    port: p.to_string(),
                })?
        }
    };
    let host = match host.strip_prefix("::") {
        Some(v4) if v4.parse::<Ipv4Addr>().is_ok() => v4,
        _ => host,
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::RedirectFlags;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn from() -> Url {
        Url::parse("root://alice@mgr:1094//store/f.root?xrdcl.intent=a&x=1").unwrap()
    }

    #[test]
    fn redirect_forms() {
        let r = Redirect::to_host("ds1", 2094).with_opaque("cms.tried=x");
        let u = r.target(&from()).unwrap();
        assert_eq!((u.host.as_str(), u.port), ("ds1", 2094));
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.path, "/store/f.root");
        assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(u.cgi_value("cms.tried"), Some("x"));

        let r = Redirect::to_url("root://bob@ds2:3000//other", Default::default());
        let u = r.target(&from()).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_deref()),
            ("ds2", 3000, Some("bob"))
        );
        assert_eq!(u.path, "/other");
        assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(u.cgi_value("x"), None, "a URL brings its own CGI");

        // a URL without user or path takes from's; root stays roots
        let tls = Url::parse("roots://alice@mgr//store/f").unwrap();
        let r = Redirect::to_url("root://ds3", RedirectFlags::RECOVER_WRTS);
        let u = r.target(&tls).unwrap();
        assert_eq!(u.to_string(), "roots://alice@ds3:1094//store/f");
        // without a scheme, a host
        let r = Redirect::to_url("ds4:5", Default::default());
        assert_eq!(r.target(&tls).unwrap().host_port(), "ds4:5");

        // a key the URL has already is replaced, not repeated
        let r = Redirect::to_host("ds1", 2094)
            .with_opaque("x=2&org=b")
            .with_token("authz=t");
        let u = r.target(&from()).unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=b&authz=t");
        let r = Redirect::to_host("ds2", 2094).with_opaque("org=c");
        let u = r.target(&u).unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=c&authz=t");

        let r = Redirect::to_url("http://web/x", Default::default());
        assert_eq!(
            r.target(&from()),
            Err(RedirectError::Foreign {
                url: "http://web/x".into()
            })
        );
    }

    /// `(host, port)` of the redirect with port field `port` and host
    /// field `field`, or the error.
    fn target(port: i32, field: &str) -> Result<(String, u16), RedirectError> {
        let r = Redirect::decode(Bytes::from(
            [&port.to_be_bytes()[..], field.as_bytes()].concat(),
        ))
        .unwrap();
        r.target(&from()).map(|u| (u.host, u.port))
    }

    #[test]
    fn every_host_form_of_a_redirect() {
        let ok = |host: &str, port| Ok::<_, ()>((host.to_string(), port));
        for (port, field, want) in [
            // a port in the port field: the field is a host
            (2094, "ds1", ok("ds1", 2094)),
            (2094, "[::1]", ok("::1", 2094)),
            (2094, "::1", ok("::1", 2094)),
            (2094, "fe80::1:2", ok("fe80::1:2", 2094)),
            (2094, "[::127.0.0.1]", ok("127.0.0.1", 2094)),
            (2094, "[::ffff:127.0.0.1]", ok("::ffff:127.0.0.1", 2094)),
            // port 0: the field as it is, the default port when it has none
            (0, "ds1", ok("ds1", 1094)),
            (0, "ds1:2000", ok("ds1", 2000)),
            (0, "[::1]", ok("::1", 1094)),
            (0, "[::1]:2000", ok("::1", 2000)),
            (0, "::1", ok("::1", 1094)),
            (0, "2001:db8::7", ok("2001:db8::7", 1094)),
            (0, "[::127.0.0.1]:2000", ok("127.0.0.1", 2000)),
            // -1: a URL
            (-1, "root://[::1]:2000//x", ok("::1", 2000)),
            (-1, "root://ds1//x", ok("ds1", 1094)),
        ] {
            assert_eq!(
                target(port, field).map_err(|_| ()),
                want,
                "port {port}, host field {field:?}"
            );
        }
        let field = |f: &str| f.to_string();
        for (port, f, want) in [
            (
                2094,
                "ds1:2000",
                RedirectError::TwoPorts {
                    field: field("ds1:2000"),
                },
            ),
            (
                2094,
                "[::1]:2000",
                RedirectError::TwoPorts {
                    field: field("[::1]:2000"),
                },
            ),
            (
                0,
                "ds1:0",
                RedirectError::Port {
                    field: field("ds1:0"),
                    port: field("0"),
                },
            ),
            (
                0,
                "ds1:99999",
                RedirectError::Port {
                    field: field("ds1:99999"),
                    port: field("99999"),
                },
            ),
            (
                0,
                "ds1:x",
                RedirectError::Port {
                    field: field("ds1:x"),
                    port: field("x"),
                },
            ),
            (
                0,
                "[::1",
                RedirectError::UnclosedBracket {
                    field: field("[::1"),
                },
            ),
            (
                0,
                "[::1]x",
                RedirectError::AfterBracket {
                    field: field("[::1]x"),
                    after: field("x"),
                },
            ),
            (
                0,
                "[]:2000",
                RedirectError::NotIpv6 {
                    field: field("[]:2000"),
                    host: field(""),
                },
            ),
            (
                0,
                ":2000",
                RedirectError::NotAHost {
                    field: field(":2000"),
                    host: field(""),
                },
            ),
            // neither an IPv6 address nor host:port
            (
                0,
                "a:b:c",
                RedirectError::Colons {
                    field: field("a:b:c"),
                },
            ),
            (70_000, "ds1", RedirectError::PortField { port: 70_000 }),
            (
                0,
                "d s",
                RedirectError::NotAHost {
                    field: field("d s"),
                    host: field("d s"),
                },
            ),
        ] {
            assert_eq!(target(port, f), Err(want), "port {port}, host field {f:?}");
        }
        assert!(matches!(
            target(-1, "root://[::1//x"),
            Err(RedirectError::Url(DecodeError::Malformed { .. }))
        ));
        // the messages the client has always given
        assert_eq!(
            target(0, "ds1:x").unwrap_err().to_string(),
            r#""ds1:x": port "x" is not 1..65535"#
        );
        assert_eq!(
            target(70_000, "ds1").unwrap_err().to_string(),
            "port 70000 is not 1..65535"
        );
    }

    proptest! {
        /// Any host field with any port field: a target is a URL that
        /// prints and parses back the same, at a port the port field allows,
        /// that keeps `from`'s `xrdcl.*` CGI and TLS.
        #[test]
        fn targets_are_urls(
            port in prop_oneof![Just(0i32), Just(-1), 1i32..70_000, any::<i32>()],
            field in "(root://|roots://|http://)?\\[?[a-z0-9.:]{1,12}\\]?(:[0-9]{1,6})?(//[a-z/]{0,6})?",
            opaque in proptest::option::of("[a-z.]{1,4}=[a-z]{0,3}(&[a-z]{1,3}=[a-z]{0,3})?"),
            tls in any::<bool>(),
        ) {
            let mut from = from();
            if tls {
                from.scheme = "roots".into();
            }
            let mut r = Redirect::decode(Bytes::from(
                [&port.to_be_bytes()[..], field.as_bytes()].concat(),
            ))
            .unwrap();
            r.opaque = opaque.map(Bytes::from);
            let Ok(u) = r.target(&from) else { return Ok(()) };
            prop_assert_eq!(Url::parse(&u.to_string()), Ok(u.clone()));
            prop_assert!(u.port != 0 && !u.host.is_empty());
            if port > 0 {
                prop_assert_eq!(i32::from(u.port), port);
            }
            prop_assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
            prop_assert!(!tls || u.is_tls());
        }
    }
}
