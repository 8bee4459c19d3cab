//! Purge: keeps the cache's disk usage between two watermarks by removing
//! whole cached files (data + sidecar), least recently accessed first.
//!
//! Two ways to say the watermarks: [`purge`] takes them in bytes of the
//! cache's own files ([`Watermarks`]); [`purge_disk`] takes them as the
//! stock XCache's `pfc.diskusage` does ([`Level`]: a fraction of the file
//! system holding the cache, or bytes) and compares them with what is in
//! use on that file system, every file counted (XrdPfc's purge: `Total −
//! Free` from statvfs). [`PurgeConfig`] is what a
//! [`CacheFs`](crate::CacheFs) runs in the background: on by default,
//! between 0.90 and 0.95 of the disk, the stock defaults.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use crate::store::{read_atime, Store, LIVE_SUFFIX, SIDECAR_SUFFIX, TEMP_SUFFIX};

/// A disk-usage watermark as the stock XCache's `pfc.diskusage` takes it:
/// a fraction of the size of the file system holding the cache, or bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// This fraction (0 to 1) of the file system's size.
    Fraction(f64),
    /// This many bytes.
    Bytes(u64),
}

impl Level {
    /// The level in bytes on a file system of `total` bytes: a fraction is
    /// rounded to the nearest byte (as XrdPfc's `cfg2bytes`).
    pub fn bytes(self, total: u64) -> u64 {
        match self {
            Level::Bytes(b) => b,
            Level::Fraction(f) => (total as f64 * f.clamp(0.0, 1.0) + 0.5) as u64,
        }
    }
}

/// A string that is not a [`Level`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a disk-usage level: a fraction of the disk (0.9 or 90%) \
     or a size (4096, 500g; k, m, g, t are powers of 1024)"
)]
pub struct BadLevel(pub String);

impl FromStr for Level {
    type Err = BadLevel;

    /// `0.9` or `90%`: a fraction of the disk (0 to 1, 0% to 100%); `500g`,
    /// `100m`, `4096k`, `1t`, `1048576`: bytes (suffixes are powers of
    /// 1024). Unlike the stock XCache, which reads a plain number as a
    /// fraction, a plain integer is bytes (as this cache's byte
    /// watermarks always were): write `1.0` for the whole disk.
    ///
    /// Errors: [`BadLevel`] for anything else (a fraction over 1, a
    /// negative number, an unknown suffix, an overflow).
    fn from_str(s: &str) -> Result<Level, BadLevel> {
        let bad = || BadLevel(s.to_string());
        let t = s.trim().to_ascii_lowercase();
        let fraction = |f: f64| match (0.0..=1.0).contains(&f) {
            true => Ok(Level::Fraction(f)),
            false => Err(bad()),
        };
        if let Some(percent) = t.strip_suffix('%') {
            let p: f64 = percent.trim().parse().map_err(|_| bad())?;
            return fraction(p / 100.0);
        }
        if t.contains('.') {
            return fraction(t.parse().map_err(|_| bad())?);
        }
        let (digits, unit) = match t.char_indices().last() {
            Some((i, 'k')) => (&t[..i], 1u64 << 10),
            Some((i, 'm')) => (&t[..i], 1 << 20),
            Some((i, 'g')) => (&t[..i], 1 << 30),
            Some((i, 't')) => (&t[..i], 1 << 40),
            _ => (&t[..], 1),
        };
        digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .map(Level::Bytes)
            .ok_or_else(bad)
    }
}

impl fmt::Display for Level {
    /// A fraction as `0.9`, bytes as an integer: what [`Level::from_str`]
    /// reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Fraction(x) if x.fract() == 0.0 => write!(f, "{x:.1}"),
            Level::Fraction(x) => write!(f, "{x}"),
            Level::Bytes(b) => write!(f, "{b}"),
        }
    }
}

/// How a [`CacheFs`](crate::CacheFs) keeps its disk from filling up: a
/// background task checks the file system holding the store every
/// `interval` (and at once when the disk fills up, or a file closes while
/// it is full) and, with `enabled`, purges it as [`purge_disk`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct PurgeConfig {
    /// Whether files are removed (on by default). Off, the checks still
    /// run: a cache that stopped storing because its disk filled up stores
    /// again once something else made room.
    pub enabled: bool,
    /// Usage to purge down to: 0.90 of the disk by default.
    pub low: Level,
    /// Usage above which files are removed: 0.95 of the disk by default.
    /// A cache that stopped storing stores again once usage is at most
    /// this.
    pub high: Level,
    /// Time between two checks: 10 s by default (the stock XCache's
    /// `purgeinterval` is 300 s).
    pub interval: Duration,
}

impl Default for PurgeConfig {
    fn default() -> PurgeConfig {
        PurgeConfig {
            enabled: true,
            low: Level::Fraction(0.90),
            high: Level::Fraction(0.95),
            interval: Duration::from_secs(10),
        }
    }
}

/// The size of a file system and the bytes in use on it, every file
/// counted (`f_blocks` and `f_blocks − f_bfree` of statvfs, in `f_frsize`
/// units: what `df` shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskSpace {
    /// Size in bytes.
    pub total: u64,
    /// Bytes in use.
    pub used: u64,
}

/// The [`DiskSpace`] of the file system holding `path`. Errors: those of
/// statvfs.
pub fn disk_space(path: &Path) -> io::Result<DiskSpace> {
    let st = rustix::fs::statvfs(path)?;
    let unit = if st.f_frsize > 0 {
        st.f_frsize
    } else {
        st.f_bsize
    };
    Ok(DiskSpace {
        total: st.f_blocks.saturating_mul(unit),
        used: st.f_blocks.saturating_sub(st.f_bfree).saturating_mul(unit),
    })
}

/// What one [`purge_disk`] found and did, in bytes of the file system
/// holding the cache.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskPurge {
    /// The file system's size.
    pub total: u64,
    /// The low watermark, resolved against `total`.
    pub low: u64,
    /// The high watermark, resolved against `total`.
    pub high: u64,
    /// Bytes in use on it before (every file, the cache's and others').
    pub used_before: u64,
    /// Bytes in use on it after: `used_before` less what the removed files
    /// used.
    pub used_after: u64,
    /// Logical paths removed (`"/a/b.root"`), in removal order.
    pub removed: Vec<String>,
}

/// Keeps the file system holding the store between the watermarks `low`
/// and `high` ([`Level`]s of its size), as the stock XCache's purge does:
/// when the bytes in use on it (every file counted, [`disk_space`]) are
/// above `high`, removes least recently used whole cached files as
/// [`purge`] does — never one for which `in_use(path)` is true — until
/// usage is at most `low` (what other files use cannot be removed, so it
/// may stay above). With `remove` false only measures.
///
/// Errors: those of statvfs, reading the directories or removing a file.
pub fn purge_disk(
    store: &Store,
    low: Level,
    high: Level,
    remove: bool,
    in_use: impl Fn(&str) -> bool,
) -> io::Result<DiskPurge> {
    let root = store.root();
    let space = disk_space(root)?;
    let mut out = DiskPurge {
        total: space.total,
        low: low.bytes(space.total),
        high: high.bytes(space.total),
        used_before: space.used,
        used_after: space.used,
        removed: Vec::new(),
    };
    if !remove || space.used <= out.high {
        return Ok(out);
    }
    let scanned = scan(root)?;
    // in the cache's own bytes: the disk's marks less what other files use
    let other = space.used.saturating_sub(scanned.usage);
    let marks = Watermarks {
        low: out.low.saturating_sub(other),
        high: out.high.saturating_sub(other),
    };
    let report = purge_scanned(root, scanned, marks, in_use)?;
    // what the removed files used counts as freed, even while a descriptor
    // still open on one of them holds its blocks a little longer
    let freed = report.before.saturating_sub(report.after);
    out.used_after = space.used.saturating_sub(freed);
    out.removed = report.removed;
    Ok(out)
}

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
    purge_scanned(root, scan(root)?, marks, in_use)
}

/// [`purge`] of what `scan` found under `root`.
fn purge_scanned(
    root: &Path,
    Scan { usage, files }: Scan,
    marks: Watermarks,
    in_use: impl Fn(&str) -> bool,
) -> io::Result<PurgeReport> {
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
    live: Option<PathBuf>,
    data: Option<PathBuf>,
}

impl Cached {
    /// Removes the sidecar first (so no bit outlives its data), then the
    /// temporary sidecar, the live file and the data, then the directories this emptied;
    /// holding the entry's cross-process lock, so that another process
    /// sharing the directory is not committing a sidecar meanwhile (its
    /// next commit finds the entry gone and writes none).
    fn remove(&self, root: &Path) -> io::Result<()> {
        let _locked = match &self.data {
            Some(data) => crate::store::lock_data(data)?,
            None => None,
        };
        for path in [&self.sidecar, &self.temp, &self.live, &self.data]
            .into_iter()
            .flatten()
        {
            match fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let any = [&self.sidecar, &self.temp, &self.live, &self.data]
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
        } else if let Some(l) = rel.strip_suffix(LIVE_SUFFIX) {
            (l, Kind::Live)
        } else if let Some(l) = rel.strip_suffix(SIDECAR_SUFFIX) {
            (l, Kind::Sidecar)
        } else {
            (rel, Kind::Data)
        };
        let cached = self.files.entry(format!("/{logical}")).or_default();
        cached.bytes = cached.bytes.saturating_add(bytes);
        match kind {
            Kind::Temp => cached.temp = Some(path),
            Kind::Live => cached.live = Some(path),
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
    Live,
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

    /// Disk bytes of the files of `path`: data, sidecar and the space set
    /// aside for its next version.
    fn usage_of(store: &Store, path: &str) -> u64 {
        let data = store.root().join(path.trim_start_matches('/'));
        let with = |suffix: &str| {
            let mut p = data.clone().into_os_string();
            p.push(suffix);
            PathBuf::from(p)
        };
        [
            data.clone(),
            with(SIDECAR_SUFFIX),
            with(TEMP_SUFFIX),
            with(LIVE_SUFFIX),
        ]
        .iter()
        .map(|p| fs::metadata(p).map_or(0, |m| m.blocks() * 512))
        .sum()
    }

    #[test]
    fn levels_read_as_the_stock_diskusage_and_as_sizes() {
        let parse = |s: &str| s.parse::<Level>();
        assert_eq!(parse("0.9"), Ok(Level::Fraction(0.9)));
        assert_eq!(parse("0.95"), Ok(Level::Fraction(0.95)));
        assert_eq!(parse("90%"), Ok(Level::Fraction(0.9)));
        assert_eq!(parse("1.0"), Ok(Level::Fraction(1.0)));
        assert_eq!(parse("500g"), Ok(Level::Bytes(500 << 30)));
        assert_eq!(parse("2T"), Ok(Level::Bytes(2 << 40)));
        assert_eq!(parse("4096"), Ok(Level::Bytes(4096)));
        for bad in [
            "",
            "1.5",
            "101%",
            "-0.1",
            "x",
            "5q",
            "0.9g",
            "99999999999999t",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // the stock rounding: total × fraction + 0.5
        assert_eq!(Level::Fraction(0.9).bytes(1000), 900);
        assert_eq!(Level::Fraction(0.95).bytes(8 << 20), 7_969_178);
        assert_eq!(Level::Bytes(7).bytes(1000), 7);
        for l in [Level::Fraction(0.9), Level::Fraction(1.0), Level::Bytes(12)] {
            assert_eq!(l.to_string().parse::<Level>(), Ok(l));
        }
        let d = PurgeConfig::default();
        assert!(d.enabled);
        assert_eq!(
            (d.low, d.high),
            (Level::Fraction(0.90), Level::Fraction(0.95))
        );
    }

    #[test]
    fn the_disk_is_measured_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let space = disk_space(dir.path()).unwrap();
        assert!(space.total > 0 && space.used <= space.total);
        // nothing to remove below the high watermark, or when only measuring
        for (high, remove) in [(Level::Fraction(1.0), true), (Level::Bytes(0), false)] {
            let r = purge_disk(&store, Level::Bytes(0), high, remove, |_| false).unwrap();
            assert_eq!((r.total, r.removed.len()), (space.total, 0));
            assert!(r.used_after == r.used_before && r.used_before > 0);
        }
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
