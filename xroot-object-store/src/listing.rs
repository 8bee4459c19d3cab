//! Directory listings kept beside a store's block cache, so that within
//! the cache's trust window a directory table is listed, opened and read
//! without the server (with it stopped, too).
//!
//! One file per directory listed, in `DIR.listings/` beside the cache
//! directory `DIR` (the cache's purge treats every file below `DIR` as its
//! own), named by a hash of the server path and holding it, so a collision
//! is read as a miss:
//!
//! ```text
//! xroot-listing 1
//! <server path of the directory>
//! <Unix seconds when the server answered>
//! f <size> <mtime> <id> <name>      (a file)
//! d <size> <mtime> <id> <name>      (a directory)
//! ```
//!
//! A listing is written after each answer of the server (atomically: a
//! temporary file renamed into place), read only while younger than the
//! trust window; a path or name with a line break is not kept. Files of at
//! most [`MAX_BYTES`] are read; a longer or malformed one is a miss.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use xroot_proto::response::{StatFlags, StatInfo};

/// The largest listing file read back: 64 MiB (a directory of about a
/// million entries).
pub(crate) const MAX_BYTES: u64 = 64 << 20;

const MAGIC: &str = "xroot-listing 1";

/// The listings of one store's cache.
#[derive(Debug, Clone)]
pub(crate) struct Listings {
    dir: PathBuf,
    window: Duration,
}

impl Listings {
    /// Listings in `dir` (created when first written), trusted for
    /// `window` after the server's answer.
    pub(crate) fn new(dir: PathBuf, window: Duration) -> Listings {
        Listings { dir, window }
    }

    fn file(&self, server_dir: &str) -> PathBuf {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        server_dir.hash(&mut h);
        self.dir.join(format!("{:016x}", h.finish()))
    }

    /// The entries of `server_dir` (names and stats) as the server last
    /// listed them, if that was within the trust window.
    pub(crate) fn load(&self, server_dir: &str) -> Option<Vec<(String, StatInfo)>> {
        if self.window.is_zero() {
            return None;
        }
        let path = self.file(server_dir);
        if std::fs::metadata(&path).ok()?.len() > MAX_BYTES {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let mut lines = text.split('\n');
        if lines.next()? != MAGIC || lines.next()? != server_dir {
            return None;
        }
        let saved: u64 = lines.next()?.parse().ok()?;
        let age = now().checked_sub(saved)?;
        if Duration::from_secs(age) >= self.window {
            return None;
        }
        let mut entries = Vec::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let mut f = line.splitn(5, ' ');
            let flags = match f.next()? {
                "f" => StatFlags::FILE,
                "d" => StatFlags::IS_DIR,
                _ => return None,
            };
            let size = f.next()?.parse().ok()?;
            let mtime = f.next()?.parse().ok()?;
            let id = f.next()?.parse().ok()?;
            let name = f.next()?.to_string();
            let stat = StatInfo {
                id,
                size,
                flags,
                mtime,
                extended: None,
            };
            entries.push((name, stat));
        }
        Some(entries)
    }

    /// Keeps `entries` as the listing of `server_dir` the server gave
    /// now. A failure is logged and otherwise ignored: the listing is then
    /// asked of the server next time.
    pub(crate) fn save(&self, server_dir: &str, entries: &[(String, StatInfo)]) {
        if self.window.is_zero() {
            return;
        }
        let bad = |s: &str| s.contains('\n') || s.contains('\r');
        if bad(server_dir) || entries.iter().any(|(n, _)| bad(n)) {
            return;
        }
        let mut text = format!("{MAGIC}\n{server_dir}\n{}\n", now());
        for (name, s) in entries {
            let kind = if s.is_dir() { 'd' } else { 'f' };
            let _ = writeln!(text, "{kind} {} {} {} {name}", s.size, s.mtime, s.id);
        }
        if let Err(e) = self.write(server_dir, text.as_bytes()) {
            tracing::debug!("keeping the listing of {server_dir}: {e}");
        }
    }

    /// The store changed the file at `server_path`: the listings of every
    /// directory above it are dropped (a put may also have made the
    /// directories between).
    pub(crate) fn forget(&self, server_path: &str) {
        let mut dir = server_path;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            let parent = if parent.is_empty() { "/" } else { parent };
            let _ = std::fs::remove_file(self.file(parent));
            if parent == "/" {
                break;
            }
            dir = parent;
        }
    }

    fn write(&self, server_dir: &str, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let target = self.file(server_dir);
        let temp = target.with_extension(format!("tmp{}", std::process::id()));
        let mut f = std::fs::File::create(&temp)?;
        f.write_all(bytes)?;
        drop(f);
        std::fs::rename(&temp, &target)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(size: u64, dir: bool) -> StatInfo {
        StatInfo {
            id: 7,
            size,
            flags: if dir {
                StatFlags::IS_DIR
            } else {
                StatFlags::FILE
            },
            mtime: 1_700_000_000,
            extended: None,
        }
    }

    #[test]
    fn a_listing_is_read_back_within_the_window_only() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Listings::new(dir.path().join("l"), Duration::from_secs(60));
        let entries = vec![
            ("a b.parquet".to_string(), stat(10, false)),
            ("sub".to_string(), stat(0, true)),
        ];
        assert!(kept.load("/data").is_none());
        kept.save("/data", &entries);
        assert_eq!(kept.load("/data").unwrap(), entries);
        assert!(kept.load("/other").is_none());
        // no window: neither kept nor read
        let none = Listings::new(dir.path().join("l"), Duration::ZERO);
        assert!(none.load("/data").is_none());
        // a name with a line break is not kept
        kept.save("/x", &[("a\nf 1 1 1 b".to_string(), stat(1, false))]);
        assert!(kept.load("/x").is_none());
        // a change below a directory drops its listing and its parents'
        kept.save("/", &entries);
        kept.forget("/data/sub/new.parquet");
        assert!(kept.load("/data").is_none() && kept.load("/").is_none());
        kept.save("/data", &entries);
        // a malformed file is a miss
        std::fs::write(kept.file("/data"), "xroot-listing 1\n/data\nsoon\n").unwrap();
        assert!(kept.load("/data").is_none());
    }
}
