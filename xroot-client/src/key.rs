//! Channel identity: which URLs share a connection.

use core::fmt;

use xroot_proto::url::Url;

/// The CGI keys that select credentials and so take part in the channel id,
/// in the order the reference appends them (`URL::GetChannelId`, PROTOCOL.md §12.1).
const KEY_CGI: [&str; 6] = [
    "xrdcl.intent",
    "xrd.gsiusrpxy",
    "xrd.gsiusrcrt",
    "xrd.gsiusrkey",
    "xrd.sss",
    "xrd.k5ccname",
];

/// What identifies a channel: scheme, user (and password), host, port, the
/// `xrdcl.intent` value and the credential-selecting CGI, exactly as XrdCl
/// composes its channel id. Two URLs share a connection iff their keys are
/// equal, so a distinct user or intent gives a distinct connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelKey {
    /// `root` or `roots` (`xroot`/`xroots` are folded into these).
    pub scheme: String,
    /// URL user, if any.
    pub user: Option<String>,
    /// URL password, if any.
    pub password: Option<String>,
    /// Host as written in the URL (not resolved).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The channel-selecting CGI present in the URL (`xrdcl.intent`,
    /// `xrd.gsiusrpxy`, `xrd.gsiusrcrt`, `xrd.gsiusrkey`, `xrd.sss`,
    /// `xrd.k5ccname`), in that order.
    pub cgi: Vec<(String, String)>,
}

impl ChannelKey {
    /// The key of `url`.
    pub fn of(url: &Url) -> ChannelKey {
        let scheme = match url.scheme.as_str() {
            "xroot" => "root",
            "xroots" => "roots",
            s => s,
        };
        ChannelKey {
            scheme: scheme.to_string(),
            user: url.user.clone(),
            password: url.password.clone(),
            host: url.host.to_ascii_lowercase(),
            port: url.port,
            cgi: KEY_CGI
                .iter()
                .filter_map(|k| url.cgi_value(k).map(|v| (k.to_string(), v.to_string())))
                .collect(),
        }
    }

    /// `host:port` (brackets around an IPv6 host), for connecting and messages.
    pub fn endpoint(&self) -> String {
        xroot_proto::url::host_port(&self.host, self.port)
    }

    /// The `xrdcl.intent` value, if any.
    pub fn intent(&self) -> Option<&str> {
        self.cgi
            .iter()
            .find(|(k, _)| k == "xrdcl.intent")
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for ChannelKey {
    /// The reference's channel id: `scheme://[user[:password]@]host:port/[?k=v&...]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        if let Some(u) = &self.user {
            f.write_str(u)?;
            if let Some(p) = &self.password {
                write!(f, ":{p}")?;
            }
            f.write_str("@")?;
        }
        write!(f, "{}/", self.endpoint())?;
        for (i, (k, v)) in self.cgi.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { '?' } else { '&' })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ChannelKey {
        ChannelKey::of(&Url::parse(s).unwrap())
    }

    #[test]
    fn user_and_intent_select_the_channel() {
        assert_eq!(key("root://h:1094//a"), key("root://h//b?x=1"));
        assert_ne!(key("root://h//a"), key("root://u@h//a"));
        assert_ne!(key("root://h//a?xrdcl.intent=1"), key("root://h//a"));
        assert_ne!(
            key("root://h//a?xrdcl.intent=1"),
            key("root://h//a?xrdcl.intent=2")
        );
        assert_ne!(key("root://h//a"), key("roots://h//a"));
        assert_eq!(key("xroot://h//a"), key("root://h//a"));
        assert_eq!(
            key("root://u@h//a?xrd.sss=/k&xrdcl.intent=tpc&z=1").to_string(),
            "root://u@h:1094/?xrdcl.intent=tpc&xrd.sss=/k"
        );
    }

    #[test]
    fn tls_and_plain_urls_never_share_a_channel() {
        let (plain, tls) = (key("root://h:1094//a"), key("roots://h:1094//a"));
        assert_ne!(plain, tls);
        assert_eq!(key("xroots://h//b"), tls);
        assert_eq!(tls.scheme, "roots");
        assert_eq!(tls.to_string(), "roots://h:1094/");
        // the channel map of a client keeps both
        let mut map = std::collections::HashMap::new();
        map.insert(plain.clone(), 1);
        map.insert(tls.clone(), 2);
        assert_eq!((map[&plain], map[&tls]), (1, 2));
    }
}
