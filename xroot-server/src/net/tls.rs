//! TLS requirement levels: what the `kXR_protocol` answer advertises and
//! where a link switches to TLS, as the stock server's `xrootd.tls`
//! directive sets them up (XrdXrootdConfig.cc `xtls`, `CheckTLS`;
//! XrdXrootdXeq.cc `do_Protocol`, `do_Login`, `logLogin`, `do_Bind`;
//! SECURITY.md "TLS").
//!
//! Switch points on our side, all on the same TCP connection, right after
//! the answer that announces them has been flushed:
//!
//! - after the `kXR_protocol` answer carrying `kXR_gotoTLS`: the client
//!   sent `kXR_wantTLS` (`roots://`), or is `kXR_ableTLS` and announced
//!   (`expect`) a login when login needs TLS, or a bind when data does;
//! - after the `kXR_login` answer (or the final `kXR_auth` `kXR_ok` when
//!   authentication is pending) when the session needs TLS.
//!
//! A client that did not say `kXR_ableTLS` (or sent no `kXR_protocol`) is
//! held to the same requirements (the directive without `capable`): login
//! `kXR_TLSRequired` "login requires TLS support" (the link stays open);
//! session: the login is answered, then `kXR_TLSRequired` "session
//! requires TLS support" and the link is closed; a plain `kXR_bind` when
//! data needs TLS: `kXR_TLSRequired` "bind requires TLS".

use std::sync::Arc;

use xroot_proto::response::ProtocolFlags;
use xroot_sec::tls::server::ServerTls;

/// How much of a session must run TLS (`xrootd.tls` of the stock server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsRequirement {
    /// TLS is offered (`kXR_haveTLS`) and used when the client asks for it
    /// (`kXR_wantTLS`, `roots://`); nothing requires it.
    #[default]
    Capable,
    /// Login and everything after it (`kXR_tlsLogin`): the switch happens
    /// before `kXR_login`.
    Login,
    /// Everything after login (`kXR_tlsSess`): the switch happens after
    /// the login answer (after authentication, when it is required).
    Session,
    /// Bound substreams (`kXR_tlsData`) — and the session too: the
    /// reference documents `data` as implying `session`, and advertises
    /// `kXR_tlsSess`, but 5.5.3 never switches the session (its capable
    /// mask test compares a response flag with a request bit), so every
    /// client fails. Here `data` advertises `kXR_tlsData | kXR_tlsSess` and
    /// does switch the session after login.
    Data,
    /// Login, data, third-party copy and gpfile (`kXR_tlsAny` less
    /// `kXR_tlsSess`, which login makes moot): the switch happens before
    /// `kXR_login` and before every `kXR_bind`. The TPC and gpfile flags
    /// are advertised as the reference does; this server does neither.
    All,
}

impl TlsRequirement {
    /// Parses `capable`, `login`, `session`, `data` or `all`.
    pub fn parse(s: &str) -> Option<TlsRequirement> {
        Some(match s {
            "capable" => TlsRequirement::Capable,
            "login" => TlsRequirement::Login,
            "session" => TlsRequirement::Session,
            "data" => TlsRequirement::Data,
            "all" => TlsRequirement::All,
            _ => return None,
        })
    }

    /// The `kXR_tls*` flags of every `kXR_protocol` answer (with
    /// `kXR_haveTLS`), as the reference computes its `myRole`.
    pub fn advertised(self) -> ProtocolFlags {
        use ProtocolFlags as P;
        P::HAVE_TLS
            | match self {
                TlsRequirement::Capable => P(0),
                TlsRequirement::Login => P::TLS_LOGIN,
                TlsRequirement::Session => P::TLS_SESS,
                TlsRequirement::Data => P::TLS_DATA | P::TLS_SESS,
                TlsRequirement::All => P::TLS_DATA | P::TLS_GPF | P::TLS_LOGIN | P::TLS_TPC,
            }
    }

    /// Login needs TLS (`Req_TLSLogin`).
    pub(crate) fn login(self) -> bool {
        matches!(self, TlsRequirement::Login | TlsRequirement::All)
    }

    /// The session switches after login (`Req_TLSSess`).
    pub(crate) fn session(self) -> bool {
        matches!(self, TlsRequirement::Session | TlsRequirement::Data)
    }

    /// Bound substreams need TLS (`Req_TLSData`).
    pub(crate) fn data(self) -> bool {
        matches!(self, TlsRequirement::Data | TlsRequirement::All)
    }
}

/// TLS for a [`crate::Server`]: the (reloadable) certificate and the
/// requirement level.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// The certificate, key and client CA; [`ServerTls::reload`] (or
    /// [`crate::ServerHandle::reload_tls`]) swaps them for new handshakes.
    pub server: Arc<ServerTls>,
    /// What must run TLS.
    pub requirement: TlsRequirement,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_as_the_reference_advertises_them() {
        let f = |r: TlsRequirement| r.advertised().0;
        assert_eq!(f(TlsRequirement::Capable), 0x8000_0000);
        assert_eq!(f(TlsRequirement::Login), 0x8400_0000);
        assert_eq!(f(TlsRequirement::Session), 0x8800_0000);
        // the reference: tlsData | tlsSess (it then never switches; we do)
        assert_eq!(f(TlsRequirement::Data), 0x8900_0000);
        // kXR_tlsAny (0x1f000000) less kXR_tlsSess
        assert_eq!(f(TlsRequirement::All), 0x9700_0000);
    }
}
