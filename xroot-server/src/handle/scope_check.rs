//! Scope enforcement: every request of a session whose [`Identity`] carries
//! scopes (a `ztn` token's) is checked against them before it reaches the
//! backend, as the stock server's SciTokens authorization plugin checks
//! each operation (XrdSciTokensAccess; WLCG Common JWT Profiles §3.3):
//!
//! | request | needs |
//! |---|---|
//! | open for reading, dirlist, query checksum / space, fattr get / list | `storage.read` |
//! | stat, statx, locate | `storage.read`, `storage.create` or `storage.modify` |
//! | open with `kXR_new`, mkdir | `storage.create` |
//! | open with `kXR_delete` | `storage.create` if the file does not exist, else `storage.modify` |
//! | open for update, write-only or append, truncate by path, rm, rmdir, mv (both paths), chmod, fattr set / delete | `storage.modify` |
//! | prepare (every path) | `storage.stage` |
//!
//! `storage.modify` includes `storage.create` (the profile: "a strict
//! superset"). As the SciTokens plugin does ("to comply with WLCG token
//! specs"), a stat or mkdir of a parent directory of a scope's path is
//! allowed too (stat: any of the three scopes; mkdir: create or modify), so
//! that `xrdcp` may look at and make the path down to its target. Requests on an open handle were authorized by its open.
//! A request that lacks its scope is answered `kXR_NotAuthorized` "missing
//! scope storage.read:/path". A session without scopes (`None`: `host`,
//! `unix`, `sss`, or no authentication) is not checked here.
//!
//! [`Identity`]: crate::Identity

use xroot_proto::request::{FattrSubcode, PrepareOptions, QueryCode, Request};
use xroot_proto::ErrorCode;

use super::kit::open_mode;
use super::path;
use crate::auth::authorize;
use crate::auth::scope::{allowed, Action, Want};
use crate::fs::{FileSystem, FsError};
use crate::handle::kit::Ctx;

/// What one request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// `action` on `path`.
    To(Action, String),
    /// Create `path` if it does not exist, else modify it.
    Write(String),
    /// Look at `path`'s metadata.
    Stat(String),
    /// Make directory `path`.
    Mkdir(String),
}

/// Whether the session may run `request`; the `kXR_NotAuthorized` refusal
/// when it may not. Only an open with `kXR_delete` under a token without
/// `storage.modify` asks the backend anything (whether the file exists).
pub(crate) async fn check<F: FileSystem>(ctx: &Ctx<F>, request: &Request) -> Result<(), FsError> {
    let Some(scopes) = &ctx.caller().identity.scopes else {
        return Ok(());
    };
    for need in needs(request) {
        let (want, path) = match need {
            Need::To(action, path) => (Want::Act(action), path),
            Need::Stat(path) => (Want::Look, path),
            Need::Mkdir(path) => (Want::Mkdir, path),
            Need::Write(path) if allowed(scopes, Action::Modify, &path) => continue,
            Need::Write(path) => match ctx.fs().stat(ctx.caller(), &path).await {
                Err(FsError::Error { code, .. }) if code == ErrorCode::NOT_FOUND => {
                    (Want::Act(Action::Create), path)
                }
                _ => (Want::Act(Action::Modify), path),
            },
        };
        authorize(ctx.caller(), want, &path, &path, None)?;
    }
    Ok(())
}

/// What `request` needs (see the module doc). A path that does not parse
/// needs nothing here: its handler refuses it without the backend.
pub(crate) fn needs(request: &Request) -> Vec<Need> {
    let one = |action: Action, payload: &[u8]| -> Vec<Need> {
        path::payload_target("", payload)
            .map(|t| vec![Need::To(action, t.path)])
            .unwrap_or_default()
    };
    let stat = |payload: &[u8]| -> Vec<Need> {
        path::payload_target("", payload)
            .map(|t| vec![Need::Stat(t.path)])
            .unwrap_or_default()
    };
    match request {
        Request::Open(r) => {
            let Ok(t) = path::payload_target("", &r.path) else {
                return Vec::new();
            };
            // what the open will ask of the backend, as the handler derives it
            let mode = open_mode(r.options, r.mode.0);
            if mode.create_new {
                vec![Need::To(Action::Create, t.path)]
            } else if mode.truncate {
                vec![Need::Write(t.path)]
            } else if mode.write || mode.append {
                vec![Need::To(Action::Modify, t.path)]
            } else {
                vec![Need::To(Action::Read, t.path)]
            }
        }
        Request::Stat(r) if !r.path.is_empty() => stat(&r.path),
        Request::Statx(r) => r.path_list().flat_map(|p| stat(&p)).collect(),
        Request::Dirlist(r) => one(Action::Read, &r.path),
        Request::Locate(r) => match path::text(&r.path) {
            Ok("*") | Err(_) => Vec::new(),
            Ok(arg) => stat(arg.strip_prefix('*').unwrap_or(arg).as_bytes()),
        },
        Request::Query(r) if !r.args.is_empty() => match r.infotype {
            QueryCode::CKSUM | QueryCode::CKSCAN | QueryCode::SPACE => one(Action::Read, &r.args),
            _ => Vec::new(),
        },
        Request::Fattr(r) if !r.path.is_empty() => {
            let read = r.subcode == FattrSubcode::GET || r.subcode == FattrSubcode::LIST;
            let action = if read { Action::Read } else { Action::Modify };
            one(action, &r.path)
        }
        Request::Mkdir(r) => path::payload_target("", &r.path)
            .map(|t| vec![Need::Mkdir(t.path)])
            .unwrap_or_default(),
        Request::Rm(r) => one(Action::Modify, &r.path),
        Request::Rmdir(r) => one(Action::Modify, &r.path),
        Request::Chmod(r) => one(Action::Modify, &r.path),
        Request::Truncate(r) if !r.path.is_empty() => one(Action::Modify, &r.path),
        Request::Mv(r) => match r.paths() {
            Ok((from, to)) => [from, to]
                .iter()
                .flat_map(|p| one(Action::Modify, p))
                .collect(),
            Err(_) => Vec::new(),
        },
        Request::Prepare(r) => {
            // a cancel's first line is the request id, not a path
            let skip = usize::from(r.options.contains(PrepareOptions::CANCEL));
            r.path_list()
                .skip(skip)
                .flat_map(|p| one(Action::Stage, &p))
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use xroot_proto::request::{Mkdir, Mv, Open, OpenOptions, Prepare, Rm, Stat};

    use super::*;

    fn to(action: Action, path: &str) -> Need {
        Need::To(action, path.into())
    }

    #[test]
    fn requests_map_to_scopes() {
        let open = |options: OpenOptions| {
            Request::Open(Open {
                options,
                path: Bytes::from_static(b"/d/f?x=1"),
                ..Default::default()
            })
        };
        assert_eq!(needs(&open(OpenOptions::READ)), [to(Action::Read, "/d/f")]);
        assert_eq!(
            needs(&open(OpenOptions::NEW | OpenOptions::UPDATE)),
            [to(Action::Create, "/d/f")]
        );
        assert_eq!(
            needs(&open(OpenOptions::DELETE | OpenOptions::UPDATE)),
            [Need::Write("/d/f".into())]
        );
        assert_eq!(
            needs(&open(OpenOptions::UPDATE)),
            [to(Action::Modify, "/d/f")]
        );
        let stat = Request::Stat(Stat {
            path: Bytes::from_static(b"/a//b/"),
            ..Default::default()
        });
        assert_eq!(needs(&stat), [Need::Stat("/a/b".into())]);
        let mv = Request::Mv(Mv::new(b"/a", b"/b"));
        assert_eq!(
            needs(&mv),
            [to(Action::Modify, "/a"), to(Action::Modify, "/b")]
        );
        let mkdir = Request::Mkdir(Mkdir {
            path: Bytes::from_static(b"/n"),
            ..Default::default()
        });
        assert_eq!(needs(&mkdir), [Need::Mkdir("/n".into())]);
        let rm = Request::Rm(Rm {
            path: Bytes::from_static(b"/n"),
        });
        assert_eq!(needs(&rm), [to(Action::Modify, "/n")]);
        let prep = Request::Prepare(Prepare {
            options: PrepareOptions::STAGE,
            paths: Bytes::from_static(b"/t/1\n/t/2"),
            ..Default::default()
        });
        assert_eq!(
            needs(&prep),
            [to(Action::Stage, "/t/1"), to(Action::Stage, "/t/2")]
        );
        // a relative path is left to its handler
        let bad = Request::Rm(Rm {
            path: Bytes::from_static(b"rel"),
        });
        assert!(needs(&bad).is_empty());
    }
}
