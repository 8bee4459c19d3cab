//! The start-up summary `serve` and `xcache` log at INFO once their port is
//! bound: what they listen on, the TLS level in force, the authentication
//! protocols offered (in the order of the login reply) and whether clients
//! may write; and a WARN when clients may write without authenticating on
//! an address beyond loopback.
//!
//! ```text
//! INFO serve::summary: listening on 0.0.0.0:1094; TLS off; authentication none; read-write
//! WARN serve::summary: clients may write without authentication on 0.0.0.0:1094, beyond loopback: ...
//! ```

use std::net::SocketAddr;

use xroot_server::{Config, TlsRequirement};

/// Whether clients may change what is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every change refused (`serve --read-only`, a cache).
    ReadOnly,
    /// Opens for writing, mkdir, rm, mv... served.
    ReadWrite,
    /// A redirector: it holds no data; clients are sent to data servers,
    /// which decide.
    Redirects,
}

/// A server's start-up summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The address bound.
    pub addr: SocketAddr,
    /// The TLS level in force (`Config::tls_requirement`: `capable` made
    /// `login` when every protocol offered needs TLS), `None` without TLS.
    pub tls: Option<TlsRequirement>,
    /// Whether `tls` was raised from `capable` to `login` for the
    /// protocols offered.
    pub tls_raised: bool,
    /// The authentication protocols offered, in order; empty for none.
    pub auth: Vec<String>,
    /// What clients may do.
    pub access: Access,
}

/// The name of a TLS level, as `--tls` takes it.
pub fn level_name(level: TlsRequirement) -> &'static str {
    match level {
        TlsRequirement::Capable => "capable",
        TlsRequirement::Login => "login",
        TlsRequirement::Session => "session",
        TlsRequirement::Data => "data",
        TlsRequirement::All => "all",
    }
}

impl Summary {
    /// The summary of a server bound at `addr` with `config`.
    pub fn new(addr: SocketAddr, config: &Config, access: Access) -> Summary {
        let tls = config.tls_requirement();
        let tls_raised = config.tls.as_ref().map(|t| t.requirement) != tls;
        let auth = config
            .authenticator
            .as_ref()
            .map(|a| {
                a.protocols()
                    .iter()
                    .map(|p| String::from_utf8_lossy(&p.name).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        Summary {
            addr,
            tls,
            tls_raised,
            auth,
            access,
        }
    }

    /// `listening on ADDR; TLS LEVEL; authentication P1,P2; ACCESS`:
    /// LEVEL is `off` without TLS (`login (capable raised: ...)` when
    /// raised), the protocols `none` when none, ACCESS `read-only`,
    /// `read-write` or `redirects`.
    pub fn line(&self) -> String {
        let tls = match self.tls {
            None => "off".to_string(),
            Some(level) if self.tls_raised => format!(
                "{} (raised from capable: every protocol offered needs TLS)",
                level_name(level)
            ),
            Some(level) => level_name(level).to_string(),
        };
        let auth = match self.auth.is_empty() {
            true => "none".to_string(),
            false => self.auth.join(","),
        };
        let access = match self.access {
            Access::ReadOnly => "read-only",
            Access::ReadWrite => "read-write",
            Access::Redirects => "redirects",
        };
        format!(
            "listening on {}; TLS {tls}; authentication {auth}; {access}",
            self.addr
        )
    }

    /// The warning for clients that may write without authenticating on
    /// an address beyond loopback (`0.0.0.0`, `::` or another host's
    /// interface); `None` otherwise.
    pub fn warning(&self) -> Option<String> {
        let open = self.access == Access::ReadWrite && self.auth.is_empty();
        (open && !self.addr.ip().is_loopback()).then(|| {
            format!(
                "clients may write without authentication on {}, beyond loopback: anyone who \
                 can connect may change or remove what is served; give --read-only or --auth",
                self.addr
            )
        })
    }

    /// Logs the line at INFO and the warning, if any, at WARN, under the
    /// target `TOOL::summary` (`tool`: `"serve"` or `"xcache"`).
    pub fn log(&self, tool: &'static str) {
        crate::tool_event!(tool, "summary", info, "{}", self.line());
        if let Some(w) = self.warning() {
            crate::tool_event!(tool, "summary", warn, "{w}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(addr: &str, auth: &[&str], access: Access) -> Summary {
        Summary {
            addr: addr.parse().unwrap(),
            tls: None,
            tls_raised: false,
            auth: auth.iter().map(|s| s.to_string()).collect(),
            access,
        }
    }

    #[test]
    fn the_line_names_address_tls_protocols_and_access() {
        let s = summary("127.0.0.1:1094", &[], Access::ReadWrite);
        assert_eq!(
            s.line(),
            "listening on 127.0.0.1:1094; TLS off; authentication none; read-write"
        );
        let s = Summary {
            tls: Some(TlsRequirement::Login),
            tls_raised: true,
            ..summary("[::]:1095", &["ztn"], Access::ReadOnly)
        };
        assert_eq!(
            s.line(),
            "listening on [::]:1095; TLS login (raised from capable: every protocol offered \
             needs TLS); authentication ztn; read-only"
        );
        let s = Summary {
            tls: Some(TlsRequirement::Capable),
            ..summary("127.0.0.1:1", &["sss", "unix"], Access::Redirects)
        };
        assert!(s
            .line()
            .ends_with("TLS capable; authentication sss,unix; redirects"));
    }

    #[test]
    fn only_unauthenticated_writes_beyond_loopback_are_warned_of() {
        let warned = |addr: &str, auth: &[&str], access| summary(addr, auth, access).warning();
        let w = warned("0.0.0.0:1094", &[], Access::ReadWrite).expect("warned");
        assert!(w.contains("on 0.0.0.0:1094, beyond loopback"), "{w}");
        assert!(warned("[::]:1094", &[], Access::ReadWrite).is_some());
        assert!(warned("192.0.2.7:1094", &[], Access::ReadWrite).is_some());
        assert!(warned("127.0.0.1:1094", &[], Access::ReadWrite).is_none());
        assert!(warned("[::1]:1094", &[], Access::ReadWrite).is_none());
        assert!(warned("0.0.0.0:1094", &["sss"], Access::ReadWrite).is_none());
        assert!(warned("0.0.0.0:1094", &[], Access::ReadOnly).is_none());
        assert!(warned("0.0.0.0:1094", &[], Access::Redirects).is_none());
    }
}
