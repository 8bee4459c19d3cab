//! When a connection switches to TLS, decided as the reference client
//! decides it (XrdClXRootDTransport.cc: `InitProtocolReq`,
//! `ProcessProtocolResp`, `NeedEncryption`, `StreamNumber`; flags from
//! XProtocol.hh, SECURITY.md):
//!
//! - The `kXR_protocol` request offers `kXR_ableTLS` when the client has a
//!   TLS configuration, and adds `kXR_wantTLS` when the connection must be
//!   encrypted — a `roots://` URL, or a data stream of a channel whose main
//!   stream runs TLS — unless it is a data stream and plain data streams are
//!   asked for (`XRD_TLSNODATA`).
//! - A `roots://` connection fails when the answer lacks `kXR_haveTLS` (or
//!   the server's protocol is older than TLS, `kXR_PROTTLSVERSION`): it never
//!   goes on in plain text.
//! - The main stream switches right after the answer when it carries
//!   `kXR_gotoTLS` or `kXR_tlsLogin` (before `kXR_login`), after the login
//!   (and authentication) when it carries `kXR_tlsSess`. A data stream
//!   switches before `kXR_bind` on `kXR_gotoTLS`, or when the main stream's
//!   answer carried `kXR_tlsData`.
//! - A client without a TLS configuration told to switch fails with
//!   [`TlsCause::Required`] before it sends anything more — no plain-text
//!   login. (The flags do not tell `xrootd.tls capable login`, which lets
//!   an incapable client log in in plain text, from `xrootd.tls login`,
//!   which does not: both are refused.)

use xroot_proto::codes::version;
use xroot_proto::request::{Expect, ProtocolFlags};
use xroot_proto::response::ProtocolFlags as Srv;

use crate::error::TlsCause;

/// What a client wants of one stream's TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Want {
    /// The stream must run TLS: `roots://`, or a data stream of a channel
    /// whose main stream does (XrdCl's `info->encrypted`).
    pub(crate) encrypted: bool,
    /// The client has a TLS configuration (it sends `kXR_ableTLS`).
    pub(crate) able: bool,
    /// Data streams in plain text (`XRD_TLSNODATA`).
    pub(crate) no_data: bool,
}

/// When a stream switches to TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switch {
    /// It stays plain.
    Never,
    /// Now: right after the `kXR_protocol` answer.
    Now,
    /// After the login (and authentication) reply: `kXR_tlsSess`.
    AfterLogin,
}

impl Want {
    /// The TLS flags (with `kXR_secreqs` and `kXR_bifreqs`, which the
    /// reference client always sends) for a `kXR_protocol` request that
    /// expects `expect`.
    pub(crate) fn request_flags(&self, expect: Expect) -> ProtocolFlags {
        let mut f = ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS;
        if self.able || self.encrypted {
            f |= ProtocolFlags::ABLE_TLS;
        }
        let plain_data = expect == Expect::BIND && self.no_data;
        if self.encrypted && !plain_data {
            f |= ProtocolFlags::WANT_TLS;
        }
        f
    }

    /// What the main stream does on the `kXR_protocol` answer (`pval`,
    /// `flags`). Errors: [`TlsCause::ServerWithoutTls`] for an encrypted
    /// stream to a server that does not (or will not) run TLS,
    /// [`TlsCause::Required`] when the server asks for TLS from a client
    /// without it.
    pub(crate) fn main_stream(&self, pval: u32, flags: Srv) -> Result<Switch, TlsCause> {
        if self.encrypted && pval < version::TLS {
            return Err(TlsCause::ServerWithoutTls {
                detail: "its protocol version predates TLS",
            });
        }
        if self.encrypted && !flags.contains(Srv::HAVE_TLS) {
            return Err(TlsCause::ServerWithoutTls {
                detail: "no kXR_haveTLS in its kXR_protocol answer",
            });
        }
        let able = self.able || self.encrypted;
        let asked = [
            (Srv::GOTO_TLS, "kXR_gotoTLS", Switch::Now),
            (Srv::TLS_LOGIN, "kXR_tlsLogin", Switch::Now),
            (Srv::TLS_SESS, "kXR_tlsSess", Switch::AfterLogin),
        ]
        .into_iter()
        .find(|(flag, ..)| flags.contains(*flag));
        match asked {
            Some((_, _, switch)) if able => Ok(switch),
            Some((_, asked, _)) => Err(TlsCause::Required { asked }),
            // kXR_wantTLS to a server with TLS always gets kXR_gotoTLS
            None if self.encrypted => Err(TlsCause::ServerWithoutTls {
                detail: "it did not answer kXR_wantTLS with kXR_gotoTLS",
            }),
            None => Ok(Switch::Never),
        }
    }

    /// What a data stream does (before `kXR_bind`) on its own `kXR_protocol`
    /// answer `flags`, the main stream's having been `main`. Errors: as
    /// [`Want::main_stream`].
    pub(crate) fn data_stream(&self, flags: Srv, main: Srv) -> Result<Switch, TlsCause> {
        let able = self.able || self.encrypted;
        let asked = if flags.contains(Srv::GOTO_TLS) {
            Some("kXR_gotoTLS")
        } else if main.contains(Srv::TLS_DATA) {
            Some("kXR_tlsData")
        } else {
            None
        };
        match asked {
            Some(_) if able => Ok(Switch::Now),
            Some(asked) => Err(TlsCause::Required { asked }),
            None if self.encrypted && !self.no_data => Err(TlsCause::ServerWithoutTls {
                detail: "it did not answer kXR_wantTLS with kXR_gotoTLS on a data stream",
            }),
            None => Ok(Switch::Never),
        }
    }
}

/// How many streams (main plus bound) a channel to a data server opens:
/// `configured`, but at least 2 when the main stream runs TLS, plain data
/// streams are asked for and the server does not require TLS for data
/// (`main` lacks `kXR_tlsData`), so that the data has a plain stream to go
/// on (XrdCl's `StreamNumber`).
pub(crate) fn stream_count(configured: usize, main_tls: bool, no_data: bool, main: Srv) -> usize {
    if main_tls && no_data && !main.contains(Srv::TLS_DATA) {
        configured.max(2)
    } else {
        configured
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PV: u32 = 0x511;

    fn want(encrypted: bool, able: bool, no_data: bool) -> Want {
        Want {
            encrypted,
            able,
            no_data,
        }
    }

    #[test]
    fn request_flags_as_the_reference_client_sets_them() {
        let base = ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS;
        let able = base | ProtocolFlags::ABLE_TLS;
        let wants = able | ProtocolFlags::WANT_TLS;
        assert_eq!(want(false, false, false).request_flags(Expect::LOGIN), base);
        assert_eq!(want(false, true, false).request_flags(Expect::LOGIN), able);
        assert_eq!(want(true, true, false).request_flags(Expect::LOGIN), wants);
        assert_eq!(want(true, true, false).request_flags(Expect::BIND), wants);
        // XRD_TLSNODATA drops wantTLS on data streams only
        assert_eq!(want(true, true, true).request_flags(Expect::BIND), able);
        assert_eq!(want(true, true, true).request_flags(Expect::LOGIN), wants);
    }

    #[test]
    fn roots_never_goes_on_without_tls() {
        let roots = want(true, true, false);
        let e = roots.main_stream(PV, Srv::IS_SERVER).unwrap_err();
        assert!(matches!(e, TlsCause::ServerWithoutTls { .. }), "{e}");
        let old = roots
            .main_stream(0x400, Srv::IS_SERVER | Srv::HAVE_TLS | Srv::GOTO_TLS)
            .unwrap_err();
        assert!(matches!(old, TlsCause::ServerWithoutTls { .. }), "{old}");
        let no_goto = roots.main_stream(PV, Srv::HAVE_TLS).unwrap_err();
        assert!(matches!(no_goto, TlsCause::ServerWithoutTls { .. }));
        assert_eq!(
            roots.main_stream(PV, Srv::HAVE_TLS | Srv::GOTO_TLS),
            Ok(Switch::Now)
        );
    }

    #[test]
    fn root_switches_when_told_and_only_if_able() {
        let able = want(false, true, false);
        let unable = want(false, false, false);
        let have = Srv::IS_SERVER | Srv::HAVE_TLS;
        assert_eq!(able.main_stream(PV, have), Ok(Switch::Never));
        assert_eq!(unable.main_stream(PV, have), Ok(Switch::Never));
        assert_eq!(able.main_stream(PV, have | Srv::GOTO_TLS), Ok(Switch::Now));
        assert_eq!(able.main_stream(PV, have | Srv::TLS_LOGIN), Ok(Switch::Now));
        assert_eq!(
            able.main_stream(PV, have | Srv::TLS_SESS),
            Ok(Switch::AfterLogin)
        );
        for (flag, name) in [
            (Srv::GOTO_TLS, "kXR_gotoTLS"),
            (Srv::TLS_LOGIN, "kXR_tlsLogin"),
            (Srv::TLS_SESS, "kXR_tlsSess"),
        ] {
            assert_eq!(
                unable.main_stream(PV, have | flag),
                Err(TlsCause::Required { asked: name })
            );
        }
    }

    #[test]
    fn data_streams_switch_before_bind() {
        let tls_main = Srv::HAVE_TLS | Srv::TLS_LOGIN;
        // an encrypted channel wants TLS on its data streams
        let enc = want(true, true, false);
        assert_eq!(
            enc.data_stream(Srv::HAVE_TLS | Srv::GOTO_TLS, tls_main),
            Ok(Switch::Now)
        );
        assert!(enc.data_stream(Srv::HAVE_TLS, tls_main).is_err());
        // unless plain data streams are asked for, and the server allows them
        let nodata = want(true, true, true);
        assert_eq!(
            nodata.data_stream(Srv::HAVE_TLS, tls_main),
            Ok(Switch::Never)
        );
        assert_eq!(
            nodata.data_stream(Srv::HAVE_TLS, tls_main | Srv::TLS_DATA),
            Ok(Switch::Now)
        );
        assert_eq!(
            want(false, false, false).data_stream(Srv::HAVE_TLS, Srv::TLS_DATA),
            Err(TlsCause::Required {
                asked: "kXR_tlsData"
            })
        );
    }

    #[test]
    fn plain_data_streams_need_a_data_stream() {
        assert_eq!(stream_count(1, true, true, Srv::HAVE_TLS), 2);
        assert_eq!(stream_count(4, true, true, Srv::HAVE_TLS), 4);
        assert_eq!(stream_count(1, true, true, Srv::TLS_DATA), 1);
        assert_eq!(stream_count(1, true, false, Srv::HAVE_TLS), 1);
        assert_eq!(stream_count(1, false, true, Srv::HAVE_TLS), 1);
    }
}
