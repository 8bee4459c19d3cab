//! Authorization scopes: what a credential that carries authorization
//! (a `ztn` bearer token) allows, and the check of one operation on one
//! path against them.
//!
//! The scope strings are those of the WLCG Common JWT Profiles (§3.3:
//! `storage.read:/p`, `storage.create:/p`, `storage.modify:/p`,
//! `storage.stage:/p`) and of SciTokens (`read:/p`, `write:/p`; `write`
//! allows creating and modifying). A scope's path covers that path and
//! everything below it; a scope without a path covers `/`.

use std::fmt;

/// What an operation does to the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Read data or metadata (`storage.read`, `read`).
    Read,
    /// Create new files or directories (`storage.create`, `write`).
    Create,
    /// Change or remove existing ones (`storage.modify`, `write`).
    Modify,
    /// Bring files online from tape (`storage.stage`).
    Stage,
}

impl Action {
    /// The WLCG scope name of the action (`storage.read`, ...).
    pub fn wlcg_name(self) -> &'static str {
        match self {
            Action::Read => "storage.read",
            Action::Create => "storage.create",
            Action::Modify => "storage.modify",
            Action::Stage => "storage.stage",
        }
    }
}

/// One scope: an action allowed on a subtree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The allowed action.
    pub action: Action,
    /// The subtree, absolute, without a trailing `/` (except `/` itself).
    pub path: String,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.action.wlcg_name(), self.path)
    }
}

impl Scope {
    /// The scopes one scope string grants: none for a scope this server
    /// does not know (`openid`, `compute.read`, ...), two for SciTokens'
    /// `write`.
    pub fn parse(scope: &str) -> Vec<Scope> {
        let (name, path) = scope.split_once(':').unwrap_or((scope, "/"));
        let actions: &[Action] = match name {
            "storage.read" | "read" => &[Action::Read],
            "storage.create" => &[Action::Create],
            "storage.modify" => &[Action::Modify],
            "storage.stage" => &[Action::Stage],
            "write" => &[Action::Create, Action::Modify],
            _ => &[],
        };
        let Some(path) = normalize(path) else {
            return Vec::new();
        };
        actions
            .iter()
            .map(|&action| Scope {
                action,
                path: path.clone(),
            })
            .collect()
    }

    /// Every scope of a space-separated `scope` claim.
    pub fn parse_claim(claim: &str) -> Vec<Scope> {
        claim
            .split_ascii_whitespace()
            .flat_map(Scope::parse)
            .collect()
    }

    /// Whether this scope allows `action` on `path` (absolute, normalized by
    /// the server: no `..`, no `//`). `storage.modify` allows creating too:
    /// the WLCG profile (§3.3) makes it "a strict superset of
    /// storage.create".
    pub fn allows(&self, action: Action, path: &str) -> bool {
        let grants =
            self.action == action || (self.action == Action::Modify && action == Action::Create);
        grants && covers(&self.path, path)
    }
}

/// Whether any of `scopes` allows `action` on `path`.
pub fn allowed(scopes: &[Scope], action: Action, path: &str) -> bool {
    scopes.iter().any(|s| s.allows(action, path))
}

/// What one operation asks of a token's scopes on one path, as the stock
/// server's SciTokens plugin decides it (the table in the server's
/// `handle/scope_check.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// `action` on the path.
    Act(Action),
    /// A look at its metadata (stat, locate): any of read, create or
    /// modify on it, or a scope of one of them beneath it.
    Look,
    /// Making it a directory: create on it, or a create or modify scope
    /// beneath it.
    Mkdir,
}

/// The actions that let a session look at a path's metadata.
const LOOK: [Action; 3] = [Action::Read, Action::Create, Action::Modify];

/// Whether `path` is a directory above a scope of one of `actions`.
fn above(scopes: &[Scope], actions: &[Action], path: &str) -> bool {
    scopes.iter().any(|s| {
        actions.contains(&s.action)
            && (path == "/"
                || (s.path.starts_with(path) && s.path.as_bytes().get(path.len()) == Some(&b'/')))
    })
}

/// Whether `scopes` grant `want` on `path` (absolute, normalized); `Err`
/// with the action to name in the refusal when they do not.
pub fn grants(scopes: &[Scope], want: Want, path: &str) -> Result<(), Action> {
    let ok = match want {
        Want::Act(action) => allowed(scopes, action, path),
        Want::Look => LOOK.iter().any(|&a| allowed(scopes, a, path)) || above(scopes, &LOOK, path),
        Want::Mkdir => {
            allowed(scopes, Action::Create, path)
                || above(scopes, &[Action::Create, Action::Modify], path)
        }
    };
    match (ok, want) {
        (true, _) => Ok(()),
        (false, Want::Act(action)) => Err(action),
        (false, Want::Look) => Err(Action::Read),
        (false, Want::Mkdir) => Err(Action::Create),
    }
}

/// A scope path made absolute and without a trailing `/`; `None` when it
/// climbs with `..`.
fn normalize(path: &str) -> Option<String> {
    let mut out = String::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return None;
        }
        out.push('/');
        out.push_str(part);
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

/// Whether subtree `root` contains `path`, on component boundaries (both
/// absolute and normalized). Used by the token scopes and the local
/// access policy.
pub(crate) fn covers(root: &str, path: &str) -> bool {
    root == "/"
        || path == root
        || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wlcg_and_scitokens_scopes() {
        let s = Scope::parse_claim(
            "openid storage.read:/data storage.create:/data/out/ write:/tmp read",
        );
        let got: Vec<String> = s.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "storage.read:/data",
                "storage.create:/data/out",
                "storage.create:/tmp",
                "storage.modify:/tmp",
                "storage.read:/"
            ]
        );
        assert!(Scope::parse("storage.read:/a/../b").is_empty());
    }

    #[test]
    fn parents_of_a_scope() {
        let s = Scope::parse_claim("storage.create:/a/b/c storage.read:/r");
        assert!(above(&s, &[Action::Create], "/a/b"));
        assert!(above(&s, &[Action::Create], "/a"));
        assert!(above(&s, &[Action::Create], "/"));
        assert!(!above(&s, &[Action::Create], "/a/b/c"));
        assert!(!above(&s, &[Action::Create], "/a/bb"));
        assert!(!above(&s, &[Action::Create], "/r"));
        assert_eq!(grants(&s, Want::Mkdir, "/a/b"), Ok(()));
        assert_eq!(grants(&s, Want::Look, "/a"), Ok(()));
        assert_eq!(grants(&s, Want::Look, "/r/x"), Ok(()));
        assert_eq!(grants(&s, Want::Look, "/x"), Err(Action::Read));
        assert_eq!(grants(&s, Want::Mkdir, "/r/d"), Err(Action::Create));
        assert_eq!(
            grants(&s, Want::Act(Action::Modify), "/a/b/c/f"),
            Err(Action::Modify)
        );
    }

    #[test]
    fn a_scope_covers_its_subtree_only() {
        let s = Scope::parse("storage.read:/data");
        assert!(allowed(&s, Action::Read, "/data"));
        assert!(allowed(&s, Action::Read, "/data/f.root"));
        assert!(!allowed(&s, Action::Read, "/database"));
        assert!(!allowed(&s, Action::Read, "/"));
        assert!(!allowed(&s, Action::Modify, "/data/f.root"));
        let m = Scope::parse("storage.modify:/out");
        assert!(allowed(&m, Action::Create, "/out/new"));
        assert!(!allowed(
            &Scope::parse("storage.create:/out"),
            Action::Modify,
            "/out/f"
        ));
        assert!(allowed(&Scope::parse("read:/"), Action::Read, "/x/y"));
    }
}
