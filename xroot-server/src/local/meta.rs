//! Stat text for a local file, computed as the stock server computes it
//! (`XrdXrootdProtocol::StatGen` in xrootd 5.5.3, PROTOCOL.md §7.1): the id
//! from device and inode, the access flags for the server's user, and the
//! owner and group names looked up in `/etc/passwd` and `/etc/group`.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use xroot_proto::response::{StatExtended, StatFlags, StatInfo};

/// The user whose access the `kXR_readable`, `kXR_writable` and `kXR_xset`
/// flags describe: the reference uses its own effective uid and gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl User {
    /// This process's effective uid and gid, from `/proc/self/status`
    /// (std has no `geteuid`). Where that cannot be read, an id no file has
    /// (`u32::MAX`), so only the "other" permission bits count.
    pub(crate) fn current() -> User {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        User {
            uid: effective_id(&status, "Uid:").unwrap_or(u32::MAX),
            gid: effective_id(&status, "Gid:").unwrap_or(u32::MAX),
        }
    }
}

/// The effective id (the second number) of the `Uid:` or `Gid:` line of
/// `/proc/<pid>/status`.
fn effective_id(status: &str, key: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Names of uids and gids, each looked up once and kept for the life of
/// the file system.
#[derive(Debug)]
struct Names {
    passwd: PathBuf,
    group: PathBuf,
    users: Mutex<HashMap<u32, Bytes>>,
    groups: Mutex<HashMap<u32, Bytes>>,
}

impl Names {
    fn lookup(file: &Path, cache: &Mutex<HashMap<u32, Bytes>>, id: u32) -> Bytes {
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(id)
            .or_insert_with(|| {
                let text = std::fs::read_to_string(file).unwrap_or_default();
                match name_of(&text, id) {
                    Some(name) => Bytes::copy_from_slice(name.as_bytes()),
                    None => Bytes::from(id.to_string()),
                }
            })
            .clone()
    }
}

/// The name whose id (third `:` field, as in both `/etc/passwd` and
/// `/etc/group`) is `id`; the first such line wins. Names that would break
/// the space-separated stat text are passed over.
fn name_of(text: &str, id: u32) -> Option<&str> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let n: u32 = fields.nth(1)?.parse().ok()?;
        let usable = n == id && !name.is_empty() && !name.contains(char::is_whitespace);
        usable.then_some(name)
    })
}

/// What a stat needs besides the metadata: the server's user and the name
/// lookups. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) user: User,
    names: Arc<Names>,
}

impl Meta {
    /// Flags for `user`; names from `/etc/passwd` and `/etc/group`.
    pub(crate) fn new(user: User) -> Meta {
        Meta::with_files(user, "/etc/passwd".into(), "/etc/group".into())
    }

    fn with_files(user: User, passwd: PathBuf, group: PathBuf) -> Meta {
        Meta {
            user,
            names: Arc::new(Names {
                passwd,
                group,
                users: Mutex::default(),
                groups: Mutex::default(),
            }),
        }
    }

    /// The stat text fields for `md` (metadata that followed symlinks).
    ///
    /// - `id`: the reference overlays `struct {int hi; int lo;}` with
    ///   `hi = st_dev`, `lo = st_ino` on a `long long`, so on a
    ///   little-endian machine it prints `(ino << 32) | dev` (each truncated
    ///   to 32 bits); on a big-endian one `(dev << 32) | ino`. Zero also
    ///   sets `kXR_offline`.
    /// - `kXR_readable` / `kXR_writable` / `kXR_xset`: the owner bit counts
    ///   when the user's uid owns the file, the group bit when the user's
    ///   gid is the file's group, the other bit always; for any file type.
    /// - `kXR_isDir` for a directory, `kXR_other` for anything but a
    ///   directory or regular file.
    /// - owner and group: names, or the number when there is none (the
    ///   reference prints `<uid>d` for an unknown uid and drops the extended
    ///   fields for an unknown gid; we send the plain number instead).
    pub(crate) fn stat_info(&self, md: &Metadata) -> StatInfo {
        let mode = md.mode();
        let may = |owner: u32, group: u32, other: u32| {
            (mode & owner != 0 && md.uid() == self.user.uid)
                || (mode & group != 0 && md.gid() == self.user.gid)
                || mode & other != 0
        };
        let id = stat_id(md.dev(), md.ino());
        let mut flags = StatFlags::FILE;
        for (set, flag) in [
            (may(0o400, 0o040, 0o004), StatFlags::READABLE),
            (may(0o200, 0o020, 0o002), StatFlags::WRITABLE),
            (may(0o100, 0o010, 0o001), StatFlags::XSET),
            (id == 0, StatFlags::OFFLINE),
            (md.is_dir(), StatFlags::IS_DIR),
            (!md.is_dir() && !md.is_file(), StatFlags::OTHER),
        ] {
            if set {
                flags |= flag;
            }
        }
        let names = &*self.names;
        StatInfo {
            id,
            size: md.size(),
            flags,
            mtime: md.mtime(),
            extended: Some(StatExtended {
                ctime: md.ctime(),
                atime: md.atime(),
                mode: mode & 0o7777,
                owner: Names::lookup(&names.passwd, &names.users, md.uid()),
                group: Names::lookup(&names.group, &names.groups, md.gid()),
            }),
        }
    }
}

/// The reference's stat id for `dev` and `ino` (see [`Meta::stat_info`]).
fn stat_id(dev: u64, ino: u64) -> i64 {
    let (hi, lo) = (dev as u32 as u64, ino as u32 as u64);
    let id = if cfg!(target_endian = "little") {
        lo << 32 | hi
    } else {
        hi << 32 | lo
    };
    id as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\n\
                          bad line\n\
                          two words:x:7:7::/:/bin/sh\n\
                          alice:x:1000:100:Alice:/home/alice:/bin/sh\n\
                          alias:x:1000:100::/:/bin/sh\n";

    #[test]
    fn names_come_from_the_third_field() {
        assert_eq!(name_of(PASSWD, 0), Some("root"));
        assert_eq!(name_of(PASSWD, 1000), Some("alice"), "the first line wins");
        assert_eq!(name_of(PASSWD, 7), None, "a name with a space is unusable");
        assert_eq!(name_of(PASSWD, 100), None, "the gid field is not the id");
        assert_eq!(name_of("users:x:100:alice,bob\n", 100), Some("users"));
    }

    #[test]
    fn unknown_ids_fall_back_to_the_number() {
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        std::fs::write(&passwd, PASSWD).unwrap();
        let meta = Meta::with_files(
            User { uid: 0, gid: 0 },
            passwd,
            dir.path().join("no-such-group-file"),
        );
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let md = std::fs::metadata(&file).unwrap();
        let x = meta.stat_info(&md).extended.unwrap();
        let owner = name_of(PASSWD, md.uid()).map_or(md.uid().to_string(), str::to_string);
        assert_eq!(&x.owner[..], owner.as_bytes());
        assert_eq!(&x.group[..], md.gid().to_string().as_bytes());
    }

    #[test]
    fn effective_ids_from_proc_status() {
        let status = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t50\t51\t52\t53\n";
        assert_eq!(effective_id(status, "Uid:"), Some(1001));
        assert_eq!(effective_id(status, "Gid:"), Some(51));
        assert_eq!(effective_id("Uid:\t1\n", "Uid:"), None);
        assert_eq!(effective_id("", "Gid:"), None);
    }

    #[test]
    fn id_overlays_dev_and_ino_like_the_reference() {
        // seen from the stock server on this (little-endian) machine:
        // ino 10012728 on dev 65024 printed as 43004339303808512
        if cfg!(target_endian = "little") {
            assert_eq!(stat_id(65024, 10_012_728), 43_004_339_303_808_512);
        }
        assert_eq!(stat_id(0, 0), 0);
        assert!(stat_id(1, 0x8000_0000) < 0 || cfg!(target_endian = "big"));
        assert_eq!(
            stat_id(0x1_0000_0001, 0x2_0000_0002),
            stat_id(1, 2),
            "each half is truncated to 32 bits"
        );
    }

    /// The flags of a fresh file with `mode` for the user `user` picks
    /// (given the file's metadata).
    fn flags_for(mode: u32, user: impl Fn(&Metadata) -> User) -> StatFlags {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        let perms = std::os::unix::fs::PermissionsExt::from_mode(mode);
        std::fs::set_permissions(&file, perms).unwrap();
        let md = std::fs::metadata(&file).unwrap();
        Meta::new(user(&md)).stat_info(&md).flags
    }

    #[test]
    fn access_flags_follow_the_users_class() {
        use StatFlags as F;
        const NOBODY: u32 = 4_000_000_001;
        let owner = |md: &Metadata| User {
            uid: md.uid(),
            gid: md.gid(),
        };
        let stranger = |_: &Metadata| User {
            uid: NOBODY,
            gid: NOBODY,
        };
        let member = |md: &Metadata| User {
            uid: NOBODY,
            gid: md.gid(),
        };
        assert_eq!(flags_for(0o644, owner), F::READABLE | F::WRITABLE);
        assert_eq!(flags_for(0o644, stranger), F::READABLE);
        assert_eq!(flags_for(0o700, stranger), F::FILE);
        assert_eq!(flags_for(0o755, owner), F::READABLE | F::WRITABLE | F::XSET);
        assert_eq!(flags_for(0o001, stranger), F::XSET);
        assert_eq!(
            flags_for(0o070, member),
            F::READABLE | F::WRITABLE | F::XSET
        );
        assert_eq!(flags_for(0o070, stranger), F::FILE);
        assert_eq!(flags_for(0o007, owner), F::READABLE | F::WRITABLE | F::XSET);
    }

    #[test]
    fn types_and_fields() {
        let dir = tempfile::tempdir().unwrap();
        let meta = Meta::new(User::current());
        let md = std::fs::metadata(dir.path()).unwrap();
        let st = meta.stat_info(&md);
        assert!(st.is_dir());
        assert!(!st.flags.contains(StatFlags::OTHER));
        assert_eq!(st.mtime, md.mtime());
        let x = st.extended.unwrap();
        assert_eq!(
            (x.ctime, x.atime, x.mode),
            (md.ctime(), md.atime(), md.mode() & 0o7777)
        );
        let null = std::fs::metadata("/dev/null").unwrap();
        let st = meta.stat_info(&null);
        assert!(st.flags.contains(StatFlags::OTHER) && !st.is_dir());
    }
}
