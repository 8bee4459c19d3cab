//! Purge: keeps the cache's disk usage between two watermarks by removing
//! whole cached files (data + sidecar), least recently accessed first.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::store::{read_atime, Store, SIDECAR_SUFFIX, TEMP_SUFFIX};

/// Disk-usage watermarks of the cache, in bytes of disk allocated to its
/// files: purging starts above `high` and stops at or below `low`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watermarks {
    /// Usage (bytes) to purge down to.
    pub low: u64,
    /// Usage (bytes) above which a purge removes files.
    pub high: u64,
}

/// What one [`purge`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PurgeReport {
    /// Disk usage in bytes before.
    pub before: u64,
    /// Disk usage in bytes after: `before` less what the removed files used.
    pub after: u64,
    /// Logical paths removed (`"/a/b.root"`), in removal order.
    pub removed: Vec<String>,
}

/// Disk usage of the cache in bytes: the allocated size (`st_blocks` × 512)
/// of every regular file under the store's root (data files are sparse, so
/// this counts cached blocks, not file sizes). Errors: those of reading the
/// directories.
pub fn disk_usage(store: &Store) -> io::Result<u64> {
    Ok(scan(store.root())?.usage)
}

/// When the cache's disk usage (see [`disk_usage`]) is above `marks.high`,
/// removes whole cached files — the sidecar first, then the data file —
/// least recently accessed first (the access time in the sidecar; a data file
/// without a readable sidecar counts as oldest; ties in path order), skipping
/// every logical path (`"/a/b.root"`, always with a leading `/`) for which
/// `in_use(path)` is true, until usage is at most `marks.low`. Directories
/// left empty are removed. Files that appear or change during the call are
/// the caller's to avoid (report them as in use).
///
/// Errors: those of reading the directories or removing a file.
pub fn purge(
    store: &Store,
    marks: Watermarks,
    in_use: impl Fn(&str) -> bool,
) -> io::Result<PurgeReport> {
    let root = store.root();
    let Scan { usage, files } = scan(root)?;
    let mut report = PurgeReport {
        before: usage,
        after: usage,
        removed: Vec::new(),
    };
    if usage <= marks.high {
        return Ok(report);
    }
    let mut order: Vec<(String, Cached)> = files.into_iter().collect();
    order.sort_by_key(|(path, cached)| (cached.atime.unwrap_or(i64::MIN), path.clone()));
    for (path, cached) in order {
        if report.after <= marks.low {
            break;
        }
        if in_use(&path) {
            continue;
        }
        cached.remove(root)?;
        report.after = report.after.saturating_sub(cached.bytes);
        report.removed.push(path);
    }
    Ok(report)
}

/// The files of one logical path.
#[derive(Debug, Default)]
struct Cached {
    /// The sidecar's access time, nanoseconds since the Unix epoch.
    atime: Option<i64>,
    /// Disk bytes of all its files.
    bytes: u64,
    sidecar: Option<PathBuf>,
    temp: Option<PathBuf>,
    data: Option<PathBuf>,
}

impl Cached {
    /// Removes the sidecar first (so no bit outlives its data), then the
    /// temporary sidecar and the data, then the directories this emptied.
    fn remove(&self, root: &Path) -> io::Result<()> {
        for path in [&self.sidecar, &self.temp, &self.data]
            .into_iter()
            .flatten()
        {
            match fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let any = [&self.sidecar, &self.temp, &self.data]
            .into_iter()
            .flatten()
            .next();
        let mut dir = any.and_then(|p| p.parent());
        while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
            if fs::remove_dir(d).is_err() {
                break; // not empty (or gone): stop climbing
            }
            dir = d.parent();
        }
        Ok(())
    }
}

struct Scan {
    /// Disk bytes of every regular file.
    usage: u64,
    files: BTreeMap<String, Cached>,
}

/// Walks `root` (without following symbolic links), adding up disk usage and
/// grouping the files by logical path.
fn scan(root: &Path) -> io::Result<Scan> {
    let mut scan = Scan {
        usage: 0,
        files: BTreeMap::new(),
    };
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = match fs::read_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir != root => continue,
            other => other?,
        };
        for entry in entries {
            let entry = entry?;
            let meta = match entry.metadata() {
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                other => other?,
            };
            let path = entry.path();
            if meta.is_dir() {
                dirs.push(path);
            } else if meta.is_file() {
                let bytes = meta.blocks().saturating_mul(512);
                scan.usage = scan.usage.saturating_add(bytes);
                scan.add(root, path, bytes);
            }
        }
    }
    Ok(scan)
}

impl Scan {
    /// Files whose path is not UTF-8 count in the usage only: the store
    /// never makes them.
    fn add(&mut self, root: &Path, path: PathBuf, bytes: u64) {
        let Some(rel) = path.strip_prefix(root).ok().and_then(Path::to_str) else {
            return;
        };
        let (logical, kind) = if let Some(l) = rel.strip_suffix(TEMP_SUFFIX) {
            (l, Kind::Temp)
        } else if let Some(l) = rel.strip_suffix(SIDECAR_SUFFIX) {
            (l, Kind::Sidecar)
        } else {
            (rel, Kind::Data)
        };
        let cached = self.files.entry(format!("/{logical}")).or_default();
        cached.bytes = cached.bytes.saturating_add(bytes);
        match kind {
            Kind::Temp => cached.temp = Some(path),
            Kind::Sidecar => {
                cached.atime = read_atime(&path).ok().flatten();
                cached.sidecar = Some(path);
            }
            Kind::Data => cached.data = Some(path),
        }
    }
}

enum Kind {
    Data,
    Sidecar,
    Temp,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Validators;

    const BS: u64 = 4096;

    /// A cached file of `blocks` blocks, accessed at `atime`, flushed.
    fn cached(store: &Store, path: &str, blocks: u64, atime: i64) {
        let v = Validators {
            size: blocks * BS,
            mtime: 1,
        };
        let e = store.entry(path, v, BS).unwrap();
        e.write_blocks(0, &vec![7u8; (blocks * BS) as usize])
            .unwrap();
        e.touch_at(atime);
        e.flush().unwrap();
    }

    fn usage_of(store: &Store, path: &str) -> u64 {
        let data = store.root().join(path.trim_start_matches('/'));
        let mut side = data.clone().into_os_string();
        side.push(SIDECAR_SUFFIX);
        [data, side.into()]
            .iter()
            .map(|p| fs::metadata(p).map_or(0, |m| m.blocks() * 512))
            .sum()
    }

    #[test]
    fn below_high_nothing_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        cached(&store, "/a", 4, 1);
        let usage = disk_usage(&store).unwrap();
        assert!(usage >= 4 * BS);
        let r = purge(
            &store,
            Watermarks {
                low: 0,
                high: usage,
            },
            |_| false,
        )
        .unwrap();
        assert_eq!(
            r,
            PurgeReport {
                before: usage,
                after: usage,
                removed: vec![]
            }
        );
    }

    #[test]
    fn removes_least_recently_used_first_and_skips_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        cached(&store, "/d/old", 4, 10);
        cached(&store, "/busy", 4, 5);
        cached(&store, "/mid", 4, 20);
        cached(&store, "/new", 4, 30);
        let total = disk_usage(&store).unwrap();
        let keep = usage_of(&store, "/new") + usage_of(&store, "/busy");
        let r = purge(
            &store,
            Watermarks {
                low: keep,
                high: keep,
            },
            |p| p == "/busy",
        )
        .unwrap();
        assert_eq!(r.removed, ["/d/old", "/mid"]);
        assert_eq!(r.before, total);
        assert_eq!(r.after, keep);
        assert_eq!(disk_usage(&store).unwrap(), keep);
        assert!(!dir.path().join("d").exists(), "emptied directory removed");
        assert!(dir.path().join("busy").exists() && dir.path().join("new.cinfo").exists());
    }

    #[test]
    fn orphans_go_first_and_stop_at_low() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        cached(&store, "/x/a", 2, 10);
        cached(&store, "/x/b", 2, 20);
        fs::write(dir.path().join("x/orphan"), vec![1u8; 8192]).unwrap();
        fs::write(dir.path().join("x/b.cinfo.tmp"), vec![1u8; 100]).unwrap();
        let total = disk_usage(&store).unwrap();
        let r = purge(
            &store,
            Watermarks {
                low: total - 1,
                high: 0,
            },
            |_| false,
        )
        .unwrap();
        assert_eq!(r.removed, ["/x/orphan"]);
        let r = purge(&store, Watermarks { low: 0, high: 0 }, |_| false).unwrap();
        assert_eq!(r.removed, ["/x/a", "/x/b"]);
        assert_eq!((r.after, disk_usage(&store).unwrap()), (0, 0));
        assert!(!dir.path().join("x").exists() && dir.path().exists());
    }
}
