//! Keeping every path beneath the export root, and the reference's words
//! for each operation in its error messages.
//!
//! A request path is checked in two steps:
//! 1. lexically: it must start with `/`, have no `..` component and no NUL
//!    byte (the reference refuses `..` with `kXR_NotAuthorized`
//!    "`<Op>` relative path '`<path>`' is disallowed.", `rpCheck`/`rpEmsg`
//!    in XrdXrootdXeq.cc; it lets a trailing `/..` through, we do not);
//! 2. on disk: the path (or, for an operation that does not follow a final
//!    symlink, its parent) is walked from the root one component at a time
//!    (`walk.rs`: linear in the path's length, symlinks resolved) and its
//!    canonical form must still lie beneath the canonical root; when it
//!    does not exist yet, its deepest existing ancestor is checked instead,
//!    and an operation that creates refuses a dangling symlink on the way
//!    (creating through it would land wherever it points). The root and
//!    the path together may be no longer than the kernel takes
//!    ([`MAX_LOCAL_PATH`]), as for the stock server.
//!
//! The check guards against what clients send. It does not guard against a
//! local user who swaps a directory for a symlink between the check and the
//! use.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use xroot_proto::ErrorCode;

use super::walk::Walk;
use crate::auth::scope::{Action, Want};
use crate::fs::{FsError, FsResult};

/// A namespace operation, as the reference names it in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Stat,
    Open,
    /// An open that creates or truncates (`kXR_delete`).
    Create,
    /// An open that creates and fails where the file exists (`kXR_new`).
    CreateNew,
    List,
    Mkdir,
    Remove,
    Rename,
    RenameTo,
    Chmod,
    Truncate,
    Checksum,
}

impl Op {
    /// The verb of the refusal of a relative path (`rpEmsg`).
    fn refusal(self) -> &'static str {
        match self {
            Op::Stat => "Stating",
            Op::Open | Op::Create | Op::CreateNew => "Opening",
            Op::List => "Listing",
            Op::Mkdir => "Creating",
            Op::Remove => "Removing",
            Op::Rename => "Renaming",
            Op::RenameTo => "Renaming to",
            Op::Chmod => "Modifying",
            Op::Truncate => "Truncating",
            Op::Checksum => "Check summing",
        }
    }

    /// The action in "Unable to `<action>` `<path>`; `<reason>`" (XrdOfs).
    pub(crate) fn action(self) -> &'static str {
        match self {
            Op::Stat => "locate",
            Op::Open => "open",
            Op::Create | Op::CreateNew => "create",
            Op::List => "open directory",
            Op::Mkdir => "mkdir",
            Op::Remove => "remove",
            Op::Rename | Op::RenameTo => "rename",
            Op::Chmod => "change",
            Op::Truncate => "trunc",
            Op::Checksum => "checksum",
        }
    }

    /// Whether the operation acts on a final symlink itself rather than on
    /// what it points to (mkdir, unlink, rmdir, rename).
    fn keeps_last(self) -> bool {
        matches!(self, Op::Mkdir | Op::Remove | Op::Rename | Op::RenameTo)
    }

    /// What the operation needs of an access policy: reading for stat,
    /// open, list and checksum, writing for everything else (an open that
    /// writes without creating asks for writing itself).
    pub(crate) fn need(self) -> super::Access {
        match self {
            Op::Stat | Op::Open | Op::List | Op::Checksum => super::Access::ReadOnly,
            _ => super::Access::ReadWrite,
        }
    }

    /// What the operation asks of a token's scopes on the path it acts on
    /// (`handle/scope_check.rs` has the table): `need` tells a read-only open from one
    /// that writes, `exists` whether a truncating open finds a file.
    pub(crate) fn want(self, need: super::Access, exists: impl FnOnce() -> bool) -> Want {
        match self {
            Op::Stat => Want::Look,
            Op::Mkdir => Want::Mkdir,
            Op::Open | Op::List | Op::Checksum if need == super::Access::ReadOnly => {
                Want::Act(Action::Read)
            }
            Op::CreateNew => Want::Act(Action::Create),
            Op::Create if !exists() => Want::Act(Action::Create),
            _ => Want::Act(Action::Modify),
        }
    }

    /// Whether the operation may create something.
    fn creates(self) -> bool {
        matches!(self, Op::Create | Op::CreateNew | Op::Mkdir | Op::RenameTo)
    }
}

/// The reference's error for a failed OS call: the code `mapError` gives
/// (xrootd 5.5.3 has no mapping for `ENOTEMPTY`, so that one is
/// `kXR_FSError`, PROTOCOL.md Appendix 4) and "Unable to `<action>`
/// `<path>`; `<reason>`" with the OS reason in lower case.
pub(crate) fn os_error(action: &str, path: &str, e: &io::Error) -> FsError {
    let code = if e.kind() == io::ErrorKind::DirectoryNotEmpty {
        ErrorCode::FS_ERROR
    } else {
        match FsError::from_io(e) {
            FsError::Error { code, .. } => code,
            _ => ErrorCode::FS_ERROR,
        }
    };
    let text = e.to_string();
    let reason = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = reason.chars();
    let reason: String = chars
        .next()
        .map(|c| c.to_ascii_lowercase())
        .into_iter()
        .chain(chars)
        .collect();
    fail(code, action, path, &reason)
}

/// "Unable to `<action>` `<path>`; `<reason>`" with `code`.
pub(crate) fn fail(code: ErrorCode, action: &str, path: &str, reason: &str) -> FsError {
    FsError::new(code, format!("Unable to {action} {path}; {reason}"))
}

fn outside(op: Op, path: &str) -> FsError {
    fail(
        ErrorCode::NOT_AUTHORIZED,
        op.action(),
        path,
        "it leads outside the exported directory",
    )
}

/// The components of `path` (`.` and empty ones dropped), or the refusal
/// of a path that is not absolute, has a `..` component or a NUL byte.
fn components(path: &str, op: Op) -> FsResult<Vec<&str>> {
    if path.contains('\0') {
        return Err(FsError::new(
            ErrorCode::ARG_INVALID,
            format!(
                "{} path '{}' with a NUL byte is disallowed.",
                op.refusal(),
                path.escape_default()
            ),
        ));
    }
    if !path.starts_with('/') || path.split('/').any(|c| c == "..") {
        return Err(FsError::new(
            ErrorCode::NOT_AUTHORIZED,
            format!("{} relative path '{path}' is disallowed.", op.refusal()),
        ));
    }
    Ok(path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect())
}

/// The longest local path the kernel takes, in bytes (`PATH_MAX` less its
/// NUL). The stock server's local path is its `oss.localroot` joined with
/// the client's path, and past this length its calls fail with
/// `ENAMETOOLONG`: `kXR_ArgTooLong` "Unable to locate `<path>`; file name
/// too long" (measured on 5.5.3).
pub(crate) const MAX_LOCAL_PATH: usize = 4095;

/// Where `path` (a client path) is on disk beneath `root` (canonical), for
/// `op`. See the module docs. Blocking; a constant number of system calls
/// per component of the path and of the symlinks it goes through.
///
/// Errors: `kXR_NotAuthorized` for a relative path or one that leads
/// outside the root (and for changing the root itself with an operation
/// that acts on the final component), `kXR_ArgInvalid` for a NUL byte,
/// `kXR_ArgTooLong` "file name too long" when `root` and `path` together
/// are longer than [`MAX_LOCAL_PATH`] (or a component than 255 bytes),
/// and the OS error of a lookup that fails other than with "not found"
/// (e.g. `kXR_FSError` "not a directory", "too many levels of symbolic
/// links").
pub(crate) fn resolve(root: &Path, path: &str, op: Op) -> FsResult<PathBuf> {
    let parts = components(path, op)?;
    let local_len = root.as_os_str().len() + parts.iter().map(|p| p.len() + 1).sum::<usize>();
    if local_len > MAX_LOCAL_PATH {
        let e = io::Error::from_raw_os_error(rustix::io::Errno::NAMETOOLONG.raw_os_error());
        return Err(os_error(op.action(), path, &e));
    }
    if !op.keeps_last() {
        return confined(root, path, op, &parts);
    }
    let Some((last, dir)) = parts.split_last() else {
        return Err(fail(
            ErrorCode::NOT_AUTHORIZED,
            op.action(),
            path,
            "the exported directory itself cannot be changed",
        ));
    };
    Ok(confined(root, path, op, dir)?.join(last))
}

/// `root` joined with `parts`, canonical, checked to lie beneath `root`;
/// where that does not exist, the canonical deepest existing ancestor
/// joined with the rest. One [`Walk`] from the root: linear in the path.
fn confined(root: &Path, path: &str, op: Op, parts: &[&str]) -> FsResult<PathBuf> {
    let io_error = |e: io::Error| os_error(op.action(), path, &e);
    let mut walk = Walk::at(root).map_err(io_error)?;
    for (n, part) in parts.iter().enumerate() {
        let name = OsStr::new(part);
        match walk.enter(name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // it exists but cannot be resolved: a dangling symlink
                if op.creates() && walk.entry_type(name).is_ok() {
                    return Err(outside(op, path));
                }
                if !walk.real().starts_with(root) {
                    return Err(outside(op, path));
                }
                return Ok(parts[n..].iter().fold(walk.into_real(), |p, c| p.join(c)));
            }
            Err(e) => return Err(io_error(e)),
        }
    }
    match walk.into_real() {
        real if real.starts_with(root) => Ok(real),
        _ => Err(outside(op, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn code(r: FsResult<PathBuf>) -> ErrorCode {
        match r {
            Err(FsError::Error { code, .. }) => code,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// An export root `root` beside a directory `outside`, with a file, a
    /// directory, and symlinks inside, outside and dangling.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        let out = top.path().join("outside");
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(root.join("file"), b"in").unwrap();
        std::fs::write(out.join("secret"), b"out").unwrap();
        symlink(root.join("file"), root.join("in_abs")).unwrap();
        symlink("dir", root.join("in_rel")).unwrap();
        symlink(&out, root.join("out_dir")).unwrap();
        symlink("../outside/secret", root.join("out_file")).unwrap();
        symlink(out.join("nothing"), root.join("dangling_out")).unwrap();
        symlink("/", root.join("slash")).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        (top, root)
    }

    #[test]
    fn lexical_refusals() {
        let (_top, root) = tree();
        for p in [
            "/..",
            "/../root/file",
            "/dir/../file",
            "/dir/..",
            "..",
            "file",
            "",
        ] {
            let r = resolve(&root, p, Op::Stat);
            assert_eq!(code(r), ErrorCode::NOT_AUTHORIZED, "{p:?}");
        }
        let Err(FsError::Error { message, .. }) = resolve(&root, "/a/../b", Op::Stat) else {
            panic!()
        };
        assert_eq!(message, "Stating relative path '/a/../b' is disallowed.");
        let Err(FsError::Error { message, .. }) = resolve(&root, "/x/../y", Op::RenameTo) else {
            panic!()
        };
        assert_eq!(
            message,
            "Renaming to relative path '/x/../y' is disallowed."
        );
        for op in [Op::Stat, Op::Create, Op::Remove] {
            assert_eq!(
                code(resolve(&root, "/file\0/../../etc", op)),
                ErrorCode::ARG_INVALID
            );
        }
        // names that merely contain dots are fine
        assert!(resolve(&root, "/..file", Op::Stat).is_ok());
        assert!(resolve(&root, "/dir/...", Op::Create).is_ok());
    }

    #[test]
    fn absolute_forms_stay_inside() {
        let (_top, root) = tree();
        assert_eq!(resolve(&root, "/", Op::Stat).unwrap(), root);
        assert_eq!(
            resolve(&root, "//file", Op::Stat).unwrap(),
            root.join("file")
        );
        assert_eq!(
            resolve(&root, "/./dir//./", Op::List).unwrap(),
            root.join("dir")
        );
        // an absolute-looking component is only a name beneath the root
        let etc = resolve(&root, "//etc/passwd", Op::Stat).unwrap();
        assert_eq!(etc, root.join("etc/passwd"));
        assert_eq!(
            code(resolve(&root, "/", Op::Remove)),
            ErrorCode::NOT_AUTHORIZED
        );
    }

    #[test]
    fn symlinks_inside_are_followed() {
        let (_top, root) = tree();
        assert_eq!(
            resolve(&root, "/in_abs", Op::Stat).unwrap(),
            root.join("file")
        );
        assert_eq!(
            resolve(&root, "/in_rel", Op::List).unwrap(),
            root.join("dir")
        );
        assert_eq!(
            resolve(&root, "/in_rel/new", Op::Create).unwrap(),
            root.join("dir/new")
        );
        // the link itself for operations that act on it
        assert_eq!(
            resolve(&root, "/in_abs", Op::Remove).unwrap(),
            root.join("in_abs")
        );
    }

    #[test]
    fn symlinks_outside_are_refused() {
        let (_top, root) = tree();
        for (p, op) in [
            ("/out_file", Op::Stat),
            ("/out_file", Op::Open),
            ("/out_dir", Op::List),
            ("/out_dir/secret", Op::Stat),
            ("/out_dir/new", Op::Create),
            ("/out_dir/new", Op::Mkdir),
            ("/out_dir/a/b/c", Op::Mkdir),
            ("/out_dir/secret", Op::Remove),
            ("/out_dir/missing", Op::Stat),
            ("/slash/etc/passwd", Op::Stat),
            ("/dangling_out", Op::Create),
            ("/dangling_out/x", Op::Mkdir),
        ] {
            let r = resolve(&root, p, op);
            assert_eq!(code(r), ErrorCode::NOT_AUTHORIZED, "{op:?} {p}");
        }
        // a link pointing out can itself be removed or renamed: that does
        // not touch what it points to
        assert_eq!(
            resolve(&root, "/out_file", Op::Remove).unwrap(),
            root.join("out_file")
        );
        // stat of a dangling link follows it to nothing: "not found" later
        assert_eq!(
            resolve(&root, "/dangling_out", Op::Stat).unwrap(),
            root.join("dangling_out")
        );
    }

    #[test]
    fn missing_paths_resolve_beneath_their_deepest_ancestor() {
        let (_top, root) = tree();
        assert_eq!(
            resolve(&root, "/in_rel/a/b", Op::Mkdir).unwrap(),
            root.join("dir/a/b")
        );
        assert_eq!(
            resolve(&root, "/nope", Op::Stat).unwrap(),
            root.join("nope")
        );
        let r = resolve(&root, "/file/x", Op::Stat);
        assert_eq!(code(r), ErrorCode::FS_ERROR, "not a directory");
    }

    /// One lookup per component: a stat of 1,000 directories and 300
    /// missing components looks up 1,001 names, half of it half as many
    /// (when every prefix was canonicalized, about depth³ / 6 kernel
    /// lookups: 5.8 s of CPU for this one).
    #[test]
    fn resolution_is_linear_in_the_depth() {
        use super::super::walk::LOOKUPS;
        let top = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(top.path()).unwrap();
        let deep = |depth: usize, missing: usize| "/d".repeat(depth) + &"/m".repeat(missing);
        std::fs::create_dir_all(format!("{}{}", root.display(), deep(1000, 0))).unwrap();
        let cost = |depth: usize, missing: usize, op: Op| {
            let path = deep(depth, missing);
            LOOKUPS.with(|n| n.set(0));
            let real = resolve(&root, &path, op).unwrap();
            assert_eq!(real, root.join(&path[1..]));
            LOOKUPS.with(|n| n.get())
        };
        assert_eq!(cost(500, 150, Op::Stat), 501);
        assert_eq!(cost(1000, 300, Op::Stat), 1001);
        assert_eq!(cost(1000, 300, Op::Mkdir), 1001);
        assert_eq!(cost(1000, 0, Op::List), 1000);
        // a link costs the components of its target
        symlink(deep(1000, 0).trim_start_matches('/'), root.join("lnk")).unwrap();
        LOOKUPS.with(|n| n.set(0));
        let real = resolve(&root, "/lnk/m", Op::Stat).unwrap();
        assert_eq!(real, root.join(&deep(1000, 1)[1..]));
        assert_eq!(LOOKUPS.with(|n| n.get()), 1 + 1000 + 1);
    }

    #[test]
    fn os_error_reads_like_the_reference() {
        let e = io::Error::from(io::ErrorKind::NotFound);
        let FsError::Error { code, .. } = os_error("locate", "/x", &e) else {
            panic!()
        };
        assert_eq!(code, ErrorCode::NOT_FOUND);
        let e = std::fs::metadata("/definitely/not/here").unwrap_err();
        assert_eq!(
            os_error("locate", "/missing", &e),
            FsError::new(
                ErrorCode::NOT_FOUND,
                "Unable to locate /missing; no such file or directory"
            )
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"").unwrap();
        let e = std::fs::remove_dir(dir.path()).unwrap_err();
        assert_eq!(
            os_error("remove", "/full", &e),
            FsError::new(
                ErrorCode::FS_ERROR,
                "Unable to remove /full; directory not empty"
            )
        );
    }
}
