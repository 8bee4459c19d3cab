//! [`Walk`]: resolving a path one component at a time from a directory
//! descriptor, symlinks followed, in time linear in the path's length.
//!
//! `realpath(3)` (and `std::fs::canonicalize`) looks up every component
//! with an `lstat` of the whole prefix, so the kernel walks the path again
//! for each component: quadratic in the depth, and cubic for a caller that
//! canonicalizes every prefix. A walk instead holds an `O_PATH` descriptor
//! of the directory it has reached and opens only the next name beneath it
//! (`openat(2)` with `O_NOFOLLOW`), so each component costs a constant
//! number of system calls whatever the depth. A symlink's target is read
//! (`readlinkat(2)`) and walked in its place, from `/` when it is
//! absolute; `..` in a target goes to the real parent of where the walk
//! stands. At most [`MAX_LINKS`] symlinks are followed in one walk, as the
//! kernel's own limit (`ELOOP` past it).
//!
//! The walk knows the canonical path of where it stands ([`Walk::real`]):
//! no symlink, `.` or `..` in it.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

/// Symlinks followed in one walk before it fails with `ELOOP`: Linux's
/// `MAXSYMLINKS`.
pub(crate) const MAX_LINKS: u32 = 40;

/// Where a walk stands: an open `O_PATH` descriptor and its canonical path.
#[derive(Debug)]
pub(crate) struct Walk {
    fd: OwnedFd,
    real: PathBuf,
    /// Symlinks followed so far.
    links: u32,
}

/// `O_PATH` (no access to the data, no side effects of opening), never
/// following a final symlink.
fn flags() -> OFlags {
    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

#[cfg(test)]
thread_local! {
    /// Lookups (`openat(2)`) walks made on this thread: what a test of
    /// their cost counts.
    pub(crate) static LOOKUPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `openat(2)` of `name` beneath `dir` with `flags`: one lookup.
fn lookup(dir: &OwnedFd, name: &OsStr, flags: OFlags) -> io::Result<OwnedFd> {
    #[cfg(test)]
    LOOKUPS.with(|n| n.set(n.get() + 1));
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

impl Walk {
    /// A walk standing at `dir`, which must be canonical (absolute, no
    /// symlinks). Errors: those of opening it.
    pub(crate) fn at(dir: &Path) -> io::Result<Walk> {
        let fd = rustix::fs::open(dir, flags() | OFlags::DIRECTORY, Mode::empty())?;
        Ok(Walk {
            fd,
            real: dir.to_path_buf(),
            links: 0,
        })
    }

    /// The canonical path of where the walk stands.
    pub(crate) fn real(&self) -> &Path {
        &self.real
    }

    /// The walk's canonical path, consuming it.
    pub(crate) fn into_real(self) -> PathBuf {
        self.real
    }

    /// A second walk standing where this one does, with its own descriptor
    /// and the links this one has followed counted. Errors: those of
    /// `dup(2)`.
    pub(crate) fn try_clone(&self) -> io::Result<Walk> {
        Ok(Walk {
            fd: self.fd.try_clone()?,
            real: self.real.clone(),
            links: self.links,
        })
    }

    /// The type of the entry `name` where the walk stands, without
    /// following it (`fstatat` with `AT_SYMLINK_NOFOLLOW`). Errors: the OS
    /// error (`NotFound` when there is none).
    pub(crate) fn entry_type(&self, name: &OsStr) -> io::Result<FileType> {
        let st = rustix::fs::statat(&self.fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(FileType::from_raw_mode(st.st_mode))
    }

    /// Steps into `name` (one component: no `/`), following it if it is a
    /// symlink. On an error the walk stands where it stood before (the
    /// links it counted while trying stay counted).
    ///
    /// Errors: the OS error of the first lookup that fails: `NotFound` for
    /// a missing component (also inside a symlink's target), `ENOTDIR`
    /// for a name beneath something that is not a directory, `ELOOP` past
    /// [`MAX_LINKS`] symlinks, `ENAMETOOLONG` for a name over 255 bytes.
    pub(crate) fn enter(&mut self, name: &OsStr) -> io::Result<()> {
        let fd = lookup(&self.fd, name, flags())?;
        if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) != FileType::Symlink {
            self.fd = fd;
            self.real.push(name);
            return Ok(());
        }
        // a symlink: walk its target on a copy, kept only if it succeeds
        // (at most MAX_LINKS copies of the path in one walk)
        let mut through = self.try_clone()?;
        let result = through.follow(name);
        self.links = through.links;
        if result.is_ok() {
            *self = through;
        }
        result
    }

    /// Walks the target of the symlink `name` where the walk stands. On an
    /// error the walk stands anywhere: the caller drops it.
    fn follow(&mut self, name: &OsStr) -> io::Result<()> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(rustix::io::Errno::LOOP.into());
        }
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        let target = OsStr::from_bytes(target.as_bytes());
        if Path::new(target).is_absolute() {
            *self = Walk {
                links: self.links,
                ..Walk::at(Path::new("/"))?
            };
        }
        for part in target.as_bytes().split(|&b| b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => self.up()?,
                part => self.step(OsStr::from_bytes(part))?,
            }
        }
        Ok(())
    }

    /// [`Walk::enter`] without restoring where the walk stood on an error.
    fn step(&mut self, name: &OsStr) -> io::Result<()> {
        let fd = lookup(&self.fd, name, flags())?;
        if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) == FileType::Symlink {
            return self.follow(name);
        }
        self.fd = fd;
        self.real.push(name);
        Ok(())
    }

    /// Steps to the real parent (`..`; at `/`, stays there). Errors:
    /// `ENOTDIR` where the walk stands on something that is not a
    /// directory.
    fn up(&mut self) -> io::Result<()> {
        let fd = lookup(&self.fd, OsStr::new(".."), flags() | OFlags::DIRECTORY)?;
        self.fd = fd;
        self.real.pop();
        Ok(())
    }

    /// The metadata of what the walk stands on (`fstat(2)` of its
    /// descriptor). Errors: the OS error.
    pub(crate) fn metadata(&self) -> io::Result<std::fs::Metadata> {
        std::fs::File::from(self.fd.try_clone()?).metadata()
    }
}

/// Makes the directory `path` (absolute) and every missing one above it,
/// with `mode` (less the umask), from `/` one component at a time: linear
/// in the depth, where `DirBuilder::recursive` makes each level by its
/// whole path (quadratic). Directories on the way, and symlinks to them,
/// are entered; an existing `path` is a success.
///
/// Errors: the OS error of the first step that fails (`ENOTDIR` where a
/// file is in the way, `EACCES`, `ENOSPC`, …), `InvalidInput` for a
/// relative path or one with `..`.
pub(crate) fn create_dir_all(path: &Path, mode: u32) -> io::Result<()> {
    let not_canonical = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a canonical path", path.display()),
        )
    };
    if !path.is_absolute() {
        return Err(not_canonical());
    }
    let mut walk = Walk::at(Path::new("/"))?;
    for part in path.components() {
        let name = match part {
            Component::RootDir | Component::CurDir => continue,
            Component::Normal(name) => name,
            Component::ParentDir | Component::Prefix(_) => return Err(not_canonical()),
        };
        match walk.enter(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&walk.fd, name, Mode::from_raw_mode(mode)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                walk.enter(name)?;
            }
            other => other?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn walk(root: &Path, parts: &[&str]) -> io::Result<PathBuf> {
        let mut w = Walk::at(root)?;
        for p in parts {
            w.enter(OsStr::new(p))?;
        }
        Ok(w.into_real())
    }

    #[test]
    fn follows_links_like_the_kernel() {
        let top = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/f"), b"f").unwrap();
        symlink("b/c", root.join("a/rel")).unwrap();
        symlink(root.join("a/b"), root.join("abs")).unwrap();
        symlink("../../a/b/../rel", root.join("a/b/up")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        symlink("missing/x", root.join("dangling")).unwrap();
        for (parts, want) in [
            (&["a", "rel", "f"][..], "a/b/c/f"),
            (&["abs", "c"], "a/b/c"),
            (&["a", "b", "up", "f"], "a/b/c/f"),
            (&["abs", "up"], "a/b/c"),
        ] {
            let got = walk(&root, parts).unwrap();
            assert_eq!(got, root.join(want), "{parts:?}");
            assert_eq!(
                got,
                std::fs::canonicalize(root.join(parts.join("/"))).unwrap()
            );
        }
        let e = walk(&root, &["loop"]).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
        let e = walk(&root, &["a", "b", "c", "f", "x"]).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );
        assert_eq!(
            walk(&root, &["dangling"]).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn makes_missing_directories_through_links() {
        let top = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("file"), b"f").unwrap();
        symlink("a", root.join("to_a")).unwrap();
        create_dir_all(&root.join("to_a/b/c"), 0o755).unwrap();
        assert!(root.join("a/b/c").is_dir());
        create_dir_all(&root.join("a/b/c"), 0o755).unwrap();
        let e = create_dir_all(&root.join("file/x"), 0o755).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );
        let e = create_dir_all(Path::new("rel/x"), 0o755).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_failed_step_leaves_the_walk_where_it_stood() {
        let top = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        symlink("e/missing", root.join("d/half")).unwrap();
        let mut w = Walk::at(&root).unwrap();
        w.enter(OsStr::new("d")).unwrap();
        assert!(w.enter(OsStr::new("half")).is_err());
        assert_eq!(w.real(), root.join("d"));
        // the descriptor too
        assert_eq!(w.entry_type(OsStr::new("e")).unwrap(), FileType::Directory);
        assert_eq!(w.entry_type(OsStr::new("half")).unwrap(), FileType::Symlink);
    }
}
