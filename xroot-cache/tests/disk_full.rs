//! A cache whose disk fills up during a cold read: it stops storing, keeps
//! serving (from the origin), keeps indexed every block it stored (so a
//! restart serves them) and frees what it could not index; with purge on
//! (the default) the disk is brought back under the low watermark once the
//! file is closed, and the cache stores again.
//!
//! The full disk is a real one: a tmpfs of a few MiB mounted for the test,
//! so the store's writes fail with the kernel's own ENOSPC wherever they
//! hit it (data, sidecar, a new entry) — no mock of the condition. Mounting
//! needs root (CI runs as root); elsewhere the tests are skipped with a
//! message, and under `CI=true` a missing mount is a failure.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use support::{open, readv, until, Gated, Setup};
use xroot_cache::{CacheConfig, CacheHandle, Geometry, PurgeConfig, Store, Validators};
use xroot_server::{Caller, File, FileSystem, OpenMode};

/// A tmpfs of a given size on a temporary directory, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `bytes`; `None` (the test is skipped) when that
    /// is not possible here. Panics instead under `CI=true`.
    fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let why = if !running_as_root() {
            "not running as root".to_string()
        } else {
            match Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
                .arg(dir.path())
                .output()
            {
                Ok(out) if out.status.success() => return Some(SmallDisk { dir }),
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            }
        };
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but a tmpfs for the full-disk test cannot be mounted: {why}");
        }
        eprintln!("skipping: a tmpfs for the full-disk test cannot be mounted ({why})");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes in use on the disk (what `df` calls used).
    fn used(&self) -> u64 {
        xroot_cache::disk_space(self.path()).unwrap().used
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uids = s.lines().find_map(|l| l.strip_prefix("Uid:"))?.to_string();
            Some(uids.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

const MIB: usize = 1 << 20;

/// Reads the whole of `/f.bin` (`len` bytes) in 1 MiB extents through
/// `a` and, at the same time, `b` (they share every fill), checking every
/// byte.
async fn read_all(s: &Setup, a: &CacheHandle<Gated>, b: Option<&CacheHandle<Gated>>, len: usize) {
    for at in (0..len).step_by(MIB) {
        let e = [(at as u64, MIB.min(len - at))];
        let second = async {
            match b {
                Some(b) => Some(readv(b, &e).await),
                None => None,
            }
        };
        let (first, second) = tokio::join!(readv(a, &e), second);
        assert_eq!(first.unwrap(), s.expect(&e), "extent at {at}");
        if let Some(got) = second {
            assert_eq!(got.unwrap(), s.expect(&e), "extent at {at}, second reader");
        }
    }
}

/// The bytes the data file of `path` holds on disk, and the bytes its
/// sidecar says are cached.
fn on_disk_and_indexed(dir: &Path, path: &str, size: u64, mtime: i64) -> (u64, u64) {
    let data =
        std::fs::metadata(dir.join(path.trim_start_matches('/'))).map_or(0, |m| m.blocks() * 512);
    let entry = Store::open(dir)
        .unwrap()
        .entry(path, Validators { size, mtime }, 4096)
        .unwrap();
    (data, entry.cached_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_storing_keeps_serving_and_keeps_what_it_indexed() {
    let Some(disk) = SmallDisk::mount(8 << 20) else {
        return;
    };
    let len = 24 * MIB;
    let s = Setup::new(len);
    std::fs::write(s.origin_dir.path().join("g.bin"), &s.data[..4 * MIB]).unwrap();
    s.open_gate();
    // purge off: what the full disk keeps stays for the restart
    let config = CacheConfig {
        purge: PurgeConfig {
            enabled: false,
            ..PurgeConfig::default()
        },
        ..CacheConfig::default()
    };
    let fs = s.cache_in(disk.path(), config.clone());
    let (a, b) = (open(&fs).await, open(&fs).await);
    let stat = a.stat().await.unwrap();
    read_all(&s, &a, Some(&b), len).await;
    // a file opened once the disk is full is served too
    let g = fs
        .open(&Caller::local("test"), "/g.bin", OpenMode::default(), "")
        .await
        .unwrap();
    let e = [(0u64, 4 * MIB)];
    assert!(g.readv(e.to_vec()).await.unwrap()[0] == s.data[..4 * MIB]);
    let st = fs.stats();
    assert!(st.disk_full && st.bytes_not_stored > 0, "{st}");
    drop((a, b, g));
    fs.flush_all().await.unwrap();
    until("the files closed", || s.open_files() == 0).await;
    drop(fs);

    // every block on disk is indexed by the sidecar
    let (data, indexed) = on_disk_and_indexed(disk.path(), "/f.bin", stat.size, stat.mtime);
    assert!(indexed >= 4 * MIB as u64, "only {indexed} bytes stored");
    assert!(data <= indexed, "{data} bytes on disk, {indexed} indexed");

    // a restart serves them from disk
    let fs = s.cache_in(disk.path(), config);
    let f = open(&fs).await;
    read_all(&s, &f, None, len).await;
    assert_eq!(fs.stats().bytes_from_disk, indexed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_full_disk_is_purged_once_its_files_close_and_stores_again() {
    let Some(disk) = SmallDisk::mount(8 << 20) else {
        return;
    };
    let len = 12 * MIB;
    let s = Setup::new(len);
    s.open_gate();
    // runs of 64 KiB: the disk fills up to its last 64 KiB, above the high
    // watermark (0.95 of 8 MiB leaves 400 KiB)
    let config = CacheConfig {
        geometry: Geometry::new(4096, 64 << 10, 0).unwrap(),
        ..CacheConfig::default()
    };
    let fs = s.cache_in(disk.path(), config);
    let f = open(&fs).await;
    read_all(&s, &f, None, len).await;
    let high = (8 << 20) * 95 / 100;
    assert!(disk.used() > high, "the disk did not fill up");
    assert!(fs.stats().disk_full);
    // the file in use is not purged: the disk stays full while it is open
    fs.check_disk().await.unwrap();
    assert!(fs.stats().disk_full && disk.used() > high);
    drop(f);
    // the closed file is purged: usage goes down to the low watermark
    // (0.90 of the disk)
    let low = (8 << 20) * 9 / 10;
    until("the disk purged", || {
        disk.used() <= low && !fs.stats().disk_full
    })
    .await;
    // and the cache stores again
    let writes = fs.stats().block_writes;
    let f = open(&fs).await;
    let e = [(0u64, MIB)];
    assert_eq!(readv(&f, &e).await.unwrap(), s.expect(&e));
    // (a read is answered before its fill's store write ends)
    fs.flush_all().await.unwrap();
    assert_eq!(fs.stats().block_writes, writes + 256);
    assert!(!fs.stats().disk_full);
}

/// Fills the disk at `dir` with a file of zeros until a write fails.
fn fill_up(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let zeros = vec![0u8; 4096];
    while f.write_all(&zeros).is_ok() {}
}

/// Where the space of the next sidecar cannot be found at a flush (a file
/// system that does not overwrite in place), the blocks no sidecar on disk
/// indexes are dropped and their space freed; those it indexes stay. And
/// an entry reset on a full disk frees its old blocks for its new sidecar.
#[test]
fn a_flush_on_a_full_disk_drops_what_it_cannot_index() {
    let Some(disk) = SmallDisk::mount(4 << 20) else {
        return;
    };
    let store = Store::open(disk.path()).unwrap();
    let v = Validators {
        size: 1 << 20,
        mtime: 1,
    };
    let data = support::pattern(1 << 20);
    let entry = store.entry("/a", v, 4096).unwrap();
    entry.write_blocks(0, &data[..256 << 10]).unwrap();
    entry.flush().unwrap();
    entry
        .write_blocks(256 << 10, &data[256 << 10..512 << 10])
        .unwrap();
    // the space set aside for the sidecar is gone, and so is the rest
    std::fs::remove_file(disk.path().join("a.cinfo.tmp")).unwrap();
    fill_up(disk.path());
    let err = entry.flush().unwrap_err();
    assert!(xroot_cache::is_full(&err), "{err}");
    assert!(
        (0..64).all(|b| entry.is_cached(b)),
        "indexed blocks dropped"
    );
    assert!(
        (64..128).all(|b| !entry.is_cached(b)),
        "unindexed blocks kept"
    );
    let (on_disk, indexed) = on_disk_and_indexed(disk.path(), "/a", v.size, v.mtime);
    assert_eq!((on_disk, indexed), (256 << 10, 256 << 10));
    assert!(entry.read(0, 256 << 10).unwrap() == data[..256 << 10]);
    drop(entry);
    // another version of the file: reset, on a disk with no room for its
    // new sidecar until its old blocks are freed
    for name in ["a.cinfo", "a.cinfo.tmp"] {
        let _ = std::fs::remove_file(disk.path().join(name));
    }
    fill_up(disk.path());
    let v2 = Validators { mtime: 2, ..v };
    let entry = store.entry("/a", v2, 4096).unwrap();
    assert_eq!(entry.cached_bytes(), 0);
    let meta = std::fs::metadata(disk.path().join("a")).unwrap();
    assert_eq!((meta.len(), meta.blocks()), (0, 0));
}
