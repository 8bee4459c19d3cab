//! Directory listings kept beside a store's block cache, so that within
//! the cache's trust window a directory table is listed, opened and read
//! without the server (with it stopped, too).
//!
//! One file per directory listed, in `DIR.listings/` beside the cache
//! directory `DIR` (the cache's purge treats every file below `DIR` as its
//! own), named `<crc32c>-<length>` of the server path (8 and at least 1
//! lower-case hex digits: a name that stays the same across Rust releases
//! and processes, which share the directory) and holding the path, so a
//! collision is read as a miss:
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
//!
//! Bounds: the directory is pruned at a store's first save and then every
//! [`PRUNE_EVERY`] saves: files (listings, and temporary files a crashed
//! writer left) last written a trust window or more ago are removed (no
//! process of the same window would read them), and of the rest the oldest
//! go until at most [`MAX_LISTINGS`] are left. Another process sharing the
//! directory with a longer window may see its older listings removed: it
//! then asks the server again.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use xroot_proto::page::crc32c;
use xroot_proto::response::{StatFlags, StatInfo};

/// The largest listing file read back: 64 MiB (a directory of about a
/// million entries).
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// The most files `DIR.listings/` keeps after a prune (listings and
/// temporary files): 4096.
pub(crate) const MAX_LISTINGS: usize = 4096;

/// A store prunes the directory at its first save and then once every
/// this many saves: 256 (so it holds at most [`MAX_LISTINGS`] + 256 files
/// of this process between prunes).
pub(crate) const PRUNE_EVERY: u64 = 256;

const MAGIC: &str = "xroot-listing 1";

/// The listings of one store's cache (shared by the store's clones).
#[derive(Debug, Clone)]
pub(crate) struct Listings {
    dir: PathBuf,
    window: Duration,
    /// Saves so far: a prune at the first and every [`PRUNE_EVERY`]th.
    saves: Arc<AtomicU64>,
    /// At most this many files left by a prune.
    max_files: usize,
}

impl Listings {
    /// Listings in `dir` (created when first written), trusted for
    /// `window` after the server's answer.
    pub(crate) fn new(dir: PathBuf, window: Duration) -> Listings {
        Listings {
            dir,
            window,
            saves: Arc::default(),
            max_files: MAX_LISTINGS,
        }
    }

    /// The file name of `server_dir`'s listing: `<crc32c>-<length>` of
    /// the path's bytes in lower-case hex, the crc32c in 8 digits (the
    /// Castagnoli crc32c of xroot-proto, which does not change with the
    /// Rust release as `DefaultHasher` may).
    fn name(server_dir: &str) -> String {
        format!(
            "{:08x}-{:x}",
            crc32c(server_dir.as_bytes()),
            server_dir.len()
        )
    }

    fn file(&self, server_dir: &str) -> PathBuf {
        self.dir.join(Listings::name(server_dir))
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
        if self
            .saves
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
        {
            self.prune();
        }
    }

    /// Removes the files last written a trust window or more ago, then the
    /// oldest of the rest until at most `max_files` are left. A file that
    /// cannot be read or removed is left (another process may be renaming
    /// or pruning it).
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut kept = Vec::new();
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let written = meta.modified().unwrap_or(UNIX_EPOCH);
            let age = now.duration_since(written).unwrap_or_default();
            if age >= self.window {
                let _ = std::fs::remove_file(entry.path());
            } else {
                kept.push((written, entry.path()));
            }
        }
        if kept.len() > self.max_files {
            kept.sort();
            let extra = kept.len() - self.max_files;
            for (_, path) in &kept[..extra] {
                let _ = std::fs::remove_file(path);
            }
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

    #[test]
    fn a_listing_file_name_is_pinned() {
        // crc32c("/data") = 0xd574f0a1 (computed apart from this code), 5
        // bytes: the same name in every process and Rust release
        assert_eq!(Listings::name("/data"), "d574f0a1-5");
        assert_eq!(Listings::name("/store/run1"), "c49944f7-b");
        let dir = tempfile::tempdir().unwrap();
        let kept = Listings::new(dir.path().join("l"), Duration::from_secs(60));
        kept.save("/data", &[("f".to_string(), stat(1, false))]);
        assert!(dir.path().join("l/d574f0a1-5").is_file());
    }

    /// Sets the modification time of `path` to `ago` before now.
    fn written_ago(path: &std::path::Path, ago: Duration) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - ago).unwrap();
    }

    #[test]
    fn the_listings_are_pruned_by_age_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let window = Duration::from_secs(600);
        let mut kept = Listings::new(dir.path().join("l"), window);
        kept.max_files = 3;
        let entries = [("f".to_string(), stat(1, false))];
        // as an earlier process left them: 5 listings written 1 to 5
        // minutes ago, one a window ago, a crashed writer's temporary file
        // and a file of the old (DefaultHasher) naming, both stale
        std::fs::create_dir_all(dir.path().join("l")).unwrap();
        for i in 1..=5u64 {
            let d = format!("/d{i}");
            kept.write(&d, format!("{MAGIC}\n{d}\n{}\n", now()).as_bytes())
                .unwrap();
            written_ago(&kept.file(&d), Duration::from_secs(60 * i));
        }
        kept.write("/old", b"x").unwrap();
        written_ago(&kept.file("/old"), window);
        for name in ["0123456789abcdef.tmp42", "0123456789abcdef"] {
            let path = dir.path().join("l").join(name);
            std::fs::write(&path, "x").unwrap();
            written_ago(&path, window + Duration::from_secs(1));
        }
        // the first save prunes: the stale ones go, then the oldest of the
        // rest down to 3 files (this save's among them)
        kept.save("/new", &entries);
        let mut left: Vec<String> = std::fs::read_dir(dir.path().join("l"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![
            Listings::name("/new"),
            Listings::name("/d1"),
            Listings::name("/d2"),
        ];
        want.sort();
        assert_eq!(left, want);
        assert!(kept.load("/new").is_some() && kept.load("/d1").is_some());
        // the next saves do not prune until the PRUNE_EVERY-th
        for i in 1..PRUNE_EVERY {
            let d = format!("/n{i}");
            kept.save(&d, &entries);
            // older than the next save's, whatever the clock's grain
            written_ago(&kept.file(&d), Duration::from_secs(10));
        }
        let count = || std::fs::read_dir(dir.path().join("l")).unwrap().count();
        assert_eq!(count(), 3 + PRUNE_EVERY as usize - 1);
        kept.save("/last", &entries);
        assert_eq!(count(), 3);
        assert!(kept.load("/last").is_some(), "the newest is kept");
    }
}
