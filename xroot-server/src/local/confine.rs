//! Keeping every path beneath the export root, and the reference's words
//! for each operation in its error messages.
//!
//! A request path is checked in two steps:
//! 1. lexically: it must start with `/`, have no `..` component and no NUL
//!    byte (the reference refuses `..` with `kXR_NotAuthorized`
//!    "`<Op>` relative path '`<path>`' is disallowed.", `rpCheck`/`rpEmsg`
//!    in XrdXrootdXeq.cc; it lets a trailing `/..` through, we do not);
//! 2. on disk: the path (or, for an operation that does not follow a final
//!    symlink, its parent) is canonicalized, symlinks resolved, and must
//!    still lie beneath the canonical root; when it does not exist yet, its
//!    deepest existing ancestor is checked instead, and an operation that
//!    creates refuses a dangling symlink on the way (creating through it
//!    would land wherever it points).
//!
//! The check guards against what clients send. It does not guard against a
//! local user who swaps a directory for a symlink between the check and the
//! use.

use std::io;
use std::path::{Path, PathBuf};

use xroot_proto::ErrorCode;

use crate::fs::{FsError, FsResult};

/// A namespace operation, as the reference names it in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Stat,
    Open,
    /// An open that creates or truncates.
    Create,
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
            Op::Open | Op::Create => "Opening",
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
            Op::Create => "create",
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

    /// Whether the operation may create something.
    fn creates(self) -> bool {
        matches!(self, Op::Create | Op::Mkdir | Op::RenameTo)
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

/// Where `path` (a client path) is on disk beneath `root` (canonical), for
/// `op`. See the module docs. Blocking.
///
/// Errors: `kXR_NotAuthorized` for a relative path or one that leads
/// outside the root (and for changing the root itself with an operation
/// that acts on the final component), `kXR_ArgInvalid` for a NUL byte, and
/// the OS error of a lookup that fails other than with "not found"
/// (e.g. `kXR_FSError` "not a directory").
pub(crate) fn resolve(root: &Path, path: &str, op: Op) -> FsResult<PathBuf> {
    let parts = components(path, op)?;
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
/// joined with the rest.
fn confined(root: &Path, path: &str, op: Op, parts: &[&str]) -> FsResult<PathBuf> {
    let mut n = parts.len();
    loop {
        let candidate: PathBuf = std::iter::once(root)
            .chain(parts[..n].iter().map(Path::new))
            .collect();
        match std::fs::canonicalize(&candidate) {
            Ok(real) if real.starts_with(root) => {
                return Ok(parts[n..].iter().fold(real, |p, c| p.join(c)));
            }
            Ok(_) => return Err(outside(op, path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound && n > 0 => {
                // it exists but cannot be resolved: a dangling symlink
                if op.creates() && std::fs::symlink_metadata(&candidate).is_ok() {
                    return Err(outside(op, path));
                }
                n -= 1;
            }
            Err(e) => return Err(os_error(op.action(), path, &e)),
        }
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
