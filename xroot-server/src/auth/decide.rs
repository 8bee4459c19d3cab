//! The one authorization decision: may this caller do this to this path?
//!
//! Two things can restrict a request, and both are judged here, in this
//! order:
//! 1. the caller's bearer-token scopes ([`Identity::scopes`], a `ztn`
//!    token's; `None` for every other protocol): the [`Want`] of the
//!    operation must be granted on the path ([`scope::grants`]);
//! 2. a backend's path policy ([`AccessPolicy`], e.g.
//!    [`LocalFs::with_policy`]): read-only for a look or a read, read-write
//!    for everything else.
//!
//! The server asks before a request reaches the backend, on the path the
//! client sent (`handle/scope_check.rs`, scopes only: the server does not
//! know a backend's policy); [`LocalFs`] asks again, with its policy, on the
//! path as resolved on disk, so a symlink leading out of a scope or into a
//! read-only area gives no more than where it leads. A backend of one's own
//! that resolves paths can do the same.
//!
//! [`Identity::scopes`]: super::Identity::scopes
//! [`LocalFs`]: crate::LocalFs
//! [`LocalFs::with_policy`]: crate::LocalFs::with_policy

use xroot_proto::ErrorCode;

use super::identity::Caller;
use super::policy::{Access, AccessPolicy};
use super::scope::{self, Action, Want};
use crate::fs::FsError;

/// `Ok` when `caller` may do `want` on `path` (absolute, normalized: as
/// resolved, where the backend resolves paths), under its token scopes and
/// `policy` (if any); `shown` is the path to name in a refusal (the
/// client's).
///
/// Errors: `kXR_NotAuthorized`, "missing scope `storage.read`:`<shown>`"
/// (the action the scopes lack) or "`<user>` is not allowed to read
/// `<shown>`" (the policy's refusal, "write" for anything but a look or a
/// read).
///
/// ```
/// use xroot_server::auth::{authorize, Caller, Identity};
/// use xroot_server::authz::{Action, Scope, Want};
/// let mut identity = Identity::new("ztn", "alice");
/// identity.scopes = Some(Scope::parse_claim("storage.read:/data"));
/// let alice = Caller { identity, ..Caller::local("alice") };
/// assert!(authorize(&alice, Want::Act(Action::Read), "/data/f", "/data/f", None).is_ok());
/// assert!(authorize(&alice, Want::Act(Action::Read), "/other", "/link/f", None).is_err());
/// ```
pub fn authorize(
    caller: &Caller,
    want: Want,
    path: &str,
    shown: &str,
    policy: Option<&AccessPolicy>,
) -> Result<(), FsError> {
    if let Some(scopes) = &caller.identity.scopes {
        scope::grants(scopes, want, path).map_err(|action| {
            FsError::new(
                ErrorCode::NOT_AUTHORIZED,
                format!("missing scope {}:{shown}", action.wlcg_name()),
            )
        })?;
    }
    if let Some(policy) = policy {
        let need = match want {
            Want::Look | Want::Act(Action::Read) => Access::ReadOnly,
            _ => Access::ReadWrite,
        };
        policy.check_resolved(caller, shown, path, need)?;
    }
    Ok(())
}
