//! The `ztn` protocol's server side: a bearer token in `kXR_auth`, over TLS
//! only, checked by a [`TokenValidator`] (XrdSecProtocolztn.cc; the wire
//! format is [`xroot_sec::ztn`]).

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::ztn::{self, LoginParams};

use super::authenticate::{AuthContext, AuthOutcome, Authenticator};
use super::identity::Identity;
use crate::auth::token::TokenValidator;

/// The stock server's refusal of `ztn` on a link without TLS
/// (XrdSecProtocolztnObject).
pub const NON_TLS_REFUSAL: &str = "security protocol 'ztn' disallowed for non-TLS connections.";

/// The `ztn` protocol: offers `&P=ztn,0:4096:` at login, accepts a
/// `kXR_auth` credential whose token the validator accepts, and only on a
/// TLS link. The identity is named after the token's name claim (`sub`)
/// and carries its scopes, which the server then enforces on every
/// request of the session.
#[derive(Debug, Clone)]
pub struct ZtnAuth {
    validator: TokenValidator,
    params: LoginParams,
}

impl ZtnAuth {
    /// `ztn` with `validator` and the default parameters (`0:4096:`).
    pub fn new(validator: TokenValidator) -> ZtnAuth {
        ZtnAuth {
            validator,
            params: LoginParams::default(),
        }
    }

    /// The largest token accepted (and announced), in bytes without the
    /// NUL (4096 by default; the stock `-maxsz`).
    pub fn max_token_size(mut self, bytes: usize) -> ZtnAuth {
        self.params.max_token_size = bytes;
        self
    }
}

impl Authenticator for ZtnAuth {
    fn protocols(&self) -> Vec<SecProtocol> {
        vec![SecProtocol {
            name: Bytes::from_static(ztn::PROTOCOL.as_bytes()),
            params: Bytes::from(self.params.to_string()),
        }]
    }

    /// Yes: a token travels over TLS only.
    fn requires_tls(&self) -> bool {
        true
    }

    /// Refusals (answered `kXR_AuthFailed`): another protocol, a plain
    /// link ([`NON_TLS_REFUSAL`]), a malformed credential (the stock
    /// server's texts, [`ztn::ZtnError`]), a token over the size limit,
    /// and every [`crate::auth::token::TokenError`].
    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        if credtype != ztn::PROTOCOL {
            return AuthOutcome::Refused(format!(
                "Authentication protocol {credtype:?} is not supported; use ztn."
            ));
        }
        if !ctx.tls {
            return AuthOutcome::Refused(NON_TLS_REFUSAL.into());
        }
        let token = match ztn::decode_credential(cred) {
            Ok(t) => t,
            Err(e) => return AuthOutcome::Refused(e.to_string()),
        };
        if token.len() >= self.params.max_token_size {
            return AuthOutcome::Refused(format!(
                "'ztn' token too big: {} bytes, at most {}",
                token.len(),
                self.params.max_token_size - 1
            ));
        }
        match self.validator.validate(token) {
            Ok(valid) => {
                tracing::debug!(peer = %ctx.peer, issuer = %valid.issuer, name = %valid.name,
                    scopes = valid.scopes.len(), "ztn token accepted");
                AuthOutcome::Accepted(Identity {
                    scopes: Some(valid.scopes),
                    ..Identity::new(ztn::PROTOCOL, valid.name)
                })
            }
            Err(e) => {
                tracing::debug!(peer = %ctx.peer, error = %e, "ztn token refused");
                AuthOutcome::Refused(e.to_string())
            }
        }
    }
}
