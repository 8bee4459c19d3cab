//! The `gsi` protocol on the server (XrdSecProtocolgsi): X509
//! certificates and proxies, the handshake of [`xroot_sec::gsi`] run over
//! the rounds of one login.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use xroot_proto::response::SecProtocol;
use xroot_sec::gsi::{Gridmap, GsiError, ServerConfig, ServerHandshake, ServerStep};

use super::authenticate::{wrong_protocol, AuthContext, AuthOutcome, AuthState, Authenticator};
use super::identity::Identity;

/// The `gsi` protocol: offers `&P=gsi,v:10600,c:ssl,ca:<hash>.0` at login
/// and accepts a client whose end-entity certificate, or RFC 3820 proxy
/// (or the older GSI 3 and GSI 2 proxy forms the stock accepts), chains to
/// a CA of the hashed CA directory, valid now, not revoked by a CRL found
/// there, and who proves it holds the key.
///
/// The identity is `gsi` with the gridmap's name for the DN, or the DN
/// itself without a mapping; [`Identity::dn`] is the DN either way. VOMS
/// attributes are not read (the stock 5.5.3 exposes them only through a
/// VOMS plug-in, `-vomsfun`). A refusal carries the stock's wording
/// (`Secgsi: ErrParseBuffer: certificate chain verification failed:
/// Proxy: certificate expired: kXGC_cert`, ...). Proxy delegation is not offered (the stock
/// `-dlgpxy:0`).
#[derive(Debug, Clone)]
pub struct GsiAuth {
    cfg: Arc<ServerConfig>,
}

impl GsiAuth {
    /// With a configuration already made.
    pub fn new(cfg: ServerConfig) -> GsiAuth {
        GsiAuth { cfg: Arc::new(cfg) }
    }

    /// Reads the host certificate and key (PEM), the hashed CA directory
    /// and, when given, the grid-mapfile; with `require_mapping` a DN the
    /// gridmap does not name is refused (the stock's `-gmapopt:2`).
    ///
    /// Errors: [`GsiError`] naming the file or what is wrong with it (a
    /// certificate that is not valid now or not issued by a CA of the
    /// directory, a key that is not the certificate's...).
    pub fn load(
        cert: &Path,
        key: &Path,
        ca_dir: &Path,
        gridmap: Option<&Path>,
        require_mapping: bool,
    ) -> Result<GsiAuth, GsiError> {
        let mut cfg = ServerConfig::load(cert, key, ca_dir)?;
        if let Some(path) = gridmap {
            cfg = cfg.gridmap(Gridmap::load(path)?, require_mapping);
        }
        Ok(GsiAuth::new(cfg))
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Authenticator for GsiAuth {
    fn protocols(&self) -> Vec<SecProtocol> {
        vec![SecProtocol {
            name: Bytes::from_static(b"gsi"),
            params: Bytes::from(self.cfg.offer()),
        }]
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        self.authenticate_round(ctx, credtype, cred, &mut None)
    }

    fn authenticate_round(
        &self,
        ctx: &AuthContext<'_>,
        credtype: &str,
        cred: &[u8],
        state: &mut AuthState,
    ) -> AuthOutcome {
        if credtype != "gsi" {
            return wrong_protocol("gsi", credtype);
        }
        let mut hs = match state.take().map(|s| s.downcast::<ServerHandshake>()) {
            Some(Ok(hs)) => hs,
            _ => Box::new(self.cfg.handshake()),
        };
        let expecting = hs.expecting();
        match hs.step(&self.cfg, cred, now()) {
            Ok(ServerStep::More(parms)) => {
                *state = Some(hs);
                AuthOutcome::More(Bytes::from(parms))
            }
            Ok(ServerStep::Done(id)) => {
                tracing::debug!(peer = %ctx.peer, dn = %id.dn, name = id.name(), "gsi: authenticated");
                AuthOutcome::Accepted(Identity {
                    dn: Some(id.dn.clone()),
                    ..Identity::new("gsi", id.name())
                })
            }
            Err(e) => {
                tracing::info!(peer = %ctx.peer, error = %e, "gsi credential refused");
                AuthOutcome::Refused(format!("Secgsi: ErrParseBuffer: {e}: {expecting}"))
            }
        }
    }
}
