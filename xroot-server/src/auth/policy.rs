//! [`AccessPolicy`]: which callers may read or write where in a
//! [`LocalFs`](crate::LocalFs).

use xroot_proto::ErrorCode;

use crate::auth::scope::covers;
use crate::auth::Caller;
use crate::fs::FsError;

/// What a rule grants on its subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Access {
    /// Nothing: every request is refused.
    None,
    /// Open for reading, stat, list, checksum.
    ReadOnly,
    /// Everything, also create, write, remove, rename, chmod, truncate.
    #[default]
    ReadWrite,
}

/// One rule: `access` on the subtree `path`, for one user or for all.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    path: String,
    user: Option<String>,
    access: Access,
}

/// A per-path read-only / read-write policy for a [`LocalFs`](crate::LocalFs),
/// by the [`Caller`]'s authenticated name.
///
/// The rule with the longest path that covers the request's path decides
/// (a path covers itself and everything below it); at equal length a rule
/// for the caller's user beats a rule for all. Where no rule covers a
/// path, the default applies. A refusal is `kXR_NotAuthorized`, naming the
/// user and the path.
///
/// ```
/// use xroot_server::local::{Access, AccessPolicy};
/// let policy = AccessPolicy::new(Access::ReadOnly)
///     .allow("/scratch", Access::ReadWrite)
///     .allow_user("alice", "/home/alice", Access::ReadWrite)
///     .allow("/private", Access::None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    default: Access,
    rules: Vec<Rule>,
}

impl Default for AccessPolicy {
    /// Read-write everywhere, for everyone (a `LocalFs` without a policy).
    fn default() -> Self {
        AccessPolicy::new(Access::ReadWrite)
    }
}

impl AccessPolicy {
    /// A policy granting `default` where no rule applies.
    pub fn new(default: Access) -> AccessPolicy {
        AccessPolicy {
            default,
            rules: Vec::new(),
        }
    }

    /// Grants `access` on the subtree `path` (absolute) to every caller.
    pub fn allow(mut self, path: &str, access: Access) -> AccessPolicy {
        self.rules.push(Rule {
            path: normalize(path),
            user: None,
            access,
        });
        self
    }

    /// Grants `access` on the subtree `path` to callers authenticated as
    /// `user`.
    pub fn allow_user(mut self, user: &str, path: &str, access: Access) -> AccessPolicy {
        self.rules.push(Rule {
            path: normalize(path),
            user: Some(user.to_string()),
            access,
        });
        self
    }

    /// What `caller` may do on `path` (absolute, as the server resolved it).
    pub fn access(&self, caller: &Caller, path: &str) -> Access {
        let name = caller.identity.name.as_str();
        self.rules
            .iter()
            .filter(|r| covers(&r.path, path))
            .filter(|r| r.user.as_deref().is_none_or(|u| u == name))
            .max_by_key(|r| (r.path.len(), r.user.is_some()))
            .map_or(self.default, |r| r.access)
    }

    /// `Ok` when `caller` has at least `need` on `resolved` (the request's
    /// `path` as the server resolved it beneath its root: symlinks
    /// followed), else `kXR_NotAuthorized` naming the caller and `path`.
    pub(crate) fn check_resolved(
        &self,
        caller: &Caller,
        path: &str,
        resolved: &str,
        need: Access,
    ) -> Result<(), FsError> {
        if self.access(caller, resolved) >= need {
            return Ok(());
        }
        let what = match need {
            Access::ReadWrite => "write",
            _ => "read",
        };
        Err(FsError::new(
            ErrorCode::NOT_AUTHORIZED,
            format!("{} is not allowed to {what} {path}", display_name(caller)),
        ))
    }
}

fn display_name(caller: &Caller) -> &str {
    match caller.identity.name.as_str() {
        "" => "anonymous",
        n => n,
    }
}

fn normalize(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    match trimmed {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    }
}

/// `path` with empty and `.` components dropped (as the server resolves
/// them); `..` is left alone (the resolver refuses it).
pub(crate) fn lexical(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Identity;

    fn who(name: &str) -> Caller {
        Caller {
            identity: Identity::new("sss", name),
            peer: "127.0.0.1:1".parse().unwrap(),
        }
    }

    #[test]
    fn longest_rule_wins_and_user_rules_beat_general_ones() {
        let p = AccessPolicy::new(Access::ReadOnly)
            .allow("/scratch/", Access::ReadWrite)
            .allow("/home", Access::None)
            .allow_user("alice", "/home", Access::ReadWrite)
            .allow("/scratch/frozen", Access::ReadOnly);
        let (alice, bob) = (who("alice"), who("bob"));
        assert_eq!(p.access(&bob, "/data/f"), Access::ReadOnly);
        assert_eq!(p.access(&bob, "/scratch"), Access::ReadWrite);
        assert_eq!(p.access(&bob, "/scratch/x/y"), Access::ReadWrite);
        assert_eq!(p.access(&bob, "/scratchy"), Access::ReadOnly);
        assert_eq!(p.access(&bob, "/scratch/frozen/z"), Access::ReadOnly);
        assert_eq!(p.access(&bob, "/home/f"), Access::None);
        assert_eq!(p.access(&alice, "/home/f"), Access::ReadWrite);
        assert_eq!(
            p.check_resolved(&bob, "/home/f", "/home/f", Access::ReadOnly),
            Err(FsError::new(
                ErrorCode::NOT_AUTHORIZED,
                "bob is not allowed to read /home/f"
            ))
        );
        assert!(p
            .check_resolved(&alice, "/home/f", "/home/f", Access::ReadWrite)
            .is_ok());
    }
}
