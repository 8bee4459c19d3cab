//! LocalFs through the FileSystem and File traits, on temp directories.

use super::*;
use std::os::unix::fs::symlink;
use xroot_proto::response::StatFlags;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// A temp dir holding the export root `root` and a sibling `outside`.
struct Tree {
    top: tempfile::TempDir,
    fs: LocalFs,
}

impl Tree {
    fn new() -> Tree {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(root.join("dir/sub")).unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::create_dir_all(top.path().join("outside")).unwrap();
        std::fs::write(top.path().join("outside/secret"), b"secret").unwrap();
        std::fs::write(root.join("nine"), b"123456789").unwrap();
        std::fs::write(root.join("big"), pattern(300_000)).unwrap();
        std::fs::write(root.join("dir/a"), b"a").unwrap();
        let fs = LocalFs::new(&root).unwrap();
        Tree { top, fs }
    }

    fn root(&self) -> &Path {
        self.fs.root()
    }

    fn outside(&self) -> PathBuf {
        self.top.path().join("outside")
    }
}

#[track_caller]
fn assert_code<T: std::fmt::Debug>(r: FsResult<T>, code: ErrorCode) {
    match r {
        Err(FsError::Error { code: c, message }) => assert_eq!(c, code, "{message}"),
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

#[track_caller]
fn assert_error<T: std::fmt::Debug>(r: FsResult<T>, code: ErrorCode, message: &str) {
    assert_eq!(r.unwrap_err(), FsError::new(code, message));
}

const READ: OpenMode = OpenMode {
    write: false,
    create_new: false,
    truncate: false,
    make_path: false,
    append: false,
    mode: 0o644,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dotdot_absolute_and_nul_paths_are_refused() {
    let t = Tree::new();
    let fs = &t.fs;
    assert_error(
        fs.stat(&Caller::local("test"), "/dir/../nine").await,
        ErrorCode::NOT_AUTHORIZED,
        "Stating relative path '/dir/../nine' is disallowed.",
    );
    assert_code(
        fs.stat(&Caller::local("test"), "/..").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.stat(&Caller::local("test"), "/dir/..").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.stat(&Caller::local("test"), "nine").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.open(&Caller::local("test"), "/../root/nine", READ, "")
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.dirlist(&Caller::local("test"), "/..", false).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/../x", 0o755, true).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.rm(&Caller::local("test"), "/../outside/secret").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_error(
        fs.mv(&Caller::local("test"), "/nine", "/../stolen").await,
        ErrorCode::NOT_AUTHORIZED,
        "Renaming to relative path '/../stolen' is disallowed.",
    );
    assert_code(
        fs.checksum(&Caller::local("test"), "/../outside/secret", None)
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.stat(&Caller::local("test"), "/nine\0/../..").await,
        ErrorCode::ARG_INVALID,
    );
    assert_code(
        fs.open(&Caller::local("test"), "/nine\0", READ, "").await,
        ErrorCode::ARG_INVALID,
    );
    // an absolute path is a path beneath the root, never the host's
    let st = fs.stat(&Caller::local("test"), "//nine").await.unwrap();
    assert_eq!(st.size, 9);
    assert_code(
        fs.stat(&Caller::local("test"), "/etc/passwd").await,
        ErrorCode::NOT_FOUND,
    );
    assert_code(
        fs.stat(&Caller::local("test"), "//etc//passwd").await,
        ErrorCode::NOT_FOUND,
    );
    assert!(t.outside().join("secret").exists() && t.root().join("nine").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_out_are_refused_and_symlinks_in_followed() {
    let t = Tree::new();
    let (fs, root) = (&t.fs, t.root());
    symlink(t.outside(), root.join("out")).unwrap();
    symlink(t.outside().join("secret"), root.join("out_file")).unwrap();
    symlink(t.outside().join("new"), root.join("dangling_out")).unwrap();
    symlink("nine", root.join("in_file")).unwrap();
    symlink("dir", root.join("in_dir")).unwrap();

    assert_code(
        fs.stat(&Caller::local("test"), "/out_file").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.stat(&Caller::local("test"), "/out/secret").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.open(&Caller::local("test"), "/out_file", READ, "").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.dirlist(&Caller::local("test"), "/out", false).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.checksum(&Caller::local("test"), "/out_file", None).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.chmod(&Caller::local("test"), "/out_file", 0o777).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.truncate(&Caller::local("test"), "/out_file", 0).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/out/made", 0o755, false)
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/out/a/b", 0o755, true)
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.rm(&Caller::local("test"), "/out/secret").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mv(&Caller::local("test"), "/nine", "/out/nine").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    let create = OpenMode {
        write: true,
        create_new: true,
        ..READ
    };
    assert_code(
        fs.open(&Caller::local("test"), "/out/new", create, "")
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.open(&Caller::local("test"), "/dangling_out", create, "")
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    let make_path = OpenMode {
        truncate: true,
        make_path: true,
        ..create
    };
    assert_code(
        fs.open(&Caller::local("test"), "/out/x/y", make_path, "")
            .await,
        ErrorCode::NOT_AUTHORIZED,
    );
    let outside: Vec<_> = std::fs::read_dir(t.outside()).unwrap().collect();
    assert_eq!(outside.len(), 1, "nothing was made outside");
    assert_eq!(
        std::fs::read(t.outside().join("secret")).unwrap(),
        b"secret"
    );

    // inside: followed
    assert_eq!(
        fs.stat(&Caller::local("test"), "/in_file")
            .await
            .unwrap()
            .size,
        9
    );
    let f = fs
        .open(&Caller::local("test"), "/in_file", READ, "")
        .await
        .unwrap();
    assert_eq!(&f.read_at(0, 100).await.unwrap()[..], b"123456789");
    let names: Vec<_> = fs
        .dirlist(&Caller::local("test"), "/in_dir", false)
        .await
        .unwrap();
    assert_eq!(names.len(), 2);
    fs.mkdir(&Caller::local("test"), "/in_dir/made", 0o755, false)
        .await
        .unwrap();
    assert!(root.join("dir/made").is_dir());
    // a link pointing out can itself be removed (its target stays)
    fs.rm(&Caller::local("test"), "/out_file").await.unwrap();
    assert!(!root.join("out_file").exists());
    assert!(t.outside().join("secret").exists());

    // a listing names every entry; with stat, a link leading out (or
    // nowhere) is left out, as the reference leaves out what it cannot stat
    let plain: Vec<_> = fs
        .dirlist(&Caller::local("test"), "/", false)
        .await
        .unwrap();
    assert!(plain.iter().any(|e| e.name == "out"));
    let with_stat = fs.dirlist(&Caller::local("test"), "/", true).await.unwrap();
    let names: Vec<&str> = with_stat.iter().map(|e| e.name.as_str()).collect();
    assert!(
        !names.contains(&"out") && !names.contains(&"dangling_out"),
        "{names:?}"
    );
    assert!(
        names.contains(&"in_file") && names.contains(&"nine"),
        "{names:?}"
    );
    assert_eq!(plain.len(), with_stat.len() + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_positional_reads_and_writes_share_one_handle() {
    let t = Tree::new();
    let data = pattern(300_000);
    let f = Arc::new(
        t.fs.open(&Caller::local("test"), "/big", READ, "")
            .await
            .unwrap(),
    );
    let mut tasks = Vec::new();
    for i in 0..64u64 {
        let f = f.clone();
        let (offset, len) = (i * 4_567 % 290_000, 1 + (i as usize * 131) % 9_000);
        tasks.push(tokio::spawn(async move {
            (offset, len, f.read_at(offset, len).await.unwrap())
        }));
    }
    for task in tasks {
        let (offset, len, got) = task.await.unwrap();
        let offset = offset as usize;
        assert_eq!(&got[..], &data[offset..offset + len], "at {offset}");
    }
    // short only at the end; nothing past it
    assert_eq!(f.read_at(299_990, 100).await.unwrap().len(), 10);
    assert!(f.read_at(300_000, 100).await.unwrap().is_empty());
    assert!(f.read_at(u64::MAX, usize::MAX).await.unwrap().is_empty());
    assert_eq!(f.read_at(0, 0).await.unwrap().len(), 0);
    // a read handle cannot write: EBADF, which the reference maps to
    // kXR_FileNotOpen
    assert_code(
        f.write_at(0, Bytes::from_static(b"x")).await,
        ErrorCode::FILE_NOT_OPEN,
    );

    let update = OpenMode {
        write: true,
        ..READ
    };
    let w = Arc::new(
        t.fs.open(&Caller::local("test"), "/big", update, "")
            .await
            .unwrap(),
    );
    let mut tasks = Vec::new();
    for i in 0..32u64 {
        let w = w.clone();
        tasks.push(tokio::spawn(async move {
            w.write_at(i * 1000, Bytes::from(vec![i as u8; 1000])).await
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    w.sync().await.unwrap();
    let disk = std::fs::read(t.root().join("big")).unwrap();
    for i in 0..32usize {
        assert!(disk[i * 1000..(i + 1) * 1000].iter().all(|&b| b == i as u8));
    }
    assert_eq!(&disk[32_000..], &data[32_000..]);
}

/// Read-only opens of one file share a descriptor while one is open; a
/// write open, another file, or the same path replaced gets its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_opens_share_a_descriptor() {
    let t = Tree::new();
    let caller = Caller::local("test");
    let a = t.fs.open(&caller, "/big", READ, "").await.unwrap();
    let b = t.fs.open(&caller, "/big", READ, "").await.unwrap();
    assert!(Arc::ptr_eq(&a.file, &b.file), "one descriptor for both");
    let other = t.fs.open(&caller, "/nine", READ, "").await.unwrap();
    assert!(!Arc::ptr_eq(&a.file, &other.file));
    let update = OpenMode {
        write: true,
        ..READ
    };
    let w = t.fs.open(&caller, "/big", update, "").await.unwrap();
    assert!(!Arc::ptr_eq(&a.file, &w.file), "a write open has its own");
    // the path replaced: a new file, a new descriptor; the old one reads on
    std::fs::write(t.root().join("big.new"), b"new").unwrap();
    std::fs::rename(t.root().join("big.new"), t.root().join("big")).unwrap();
    let c = t.fs.open(&caller, "/big", READ, "").await.unwrap();
    assert!(!Arc::ptr_eq(&a.file, &c.file));
    assert_eq!(&c.read_at(0, 10).await.unwrap()[..], b"new");
    assert_eq!(&b.read_at(0, 3).await.unwrap()[..], &pattern(3)[..]);
    // closed by its last holder
    let weak = Arc::downgrade(&a.file);
    drop((a, b));
    assert!(weak.upgrade().is_none());
}

/// Whether the file system of `file` answers `RWF_NOWAIT` reads.
fn nowait_supported(file: &std::fs::File) -> bool {
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let nowait = rustix::io::ReadWriteFlags::NOWAIT;
    rustix::io::preadv2(file, &mut iov, 0, nowait) != Err(rustix::io::Errno::OPNOTSUPP)
}

/// A read is served from the page cache on the calling task, or from the
/// disk on the blocking pool when the pages are not cached (evicted here
/// with `POSIX_FADV_DONTNEED`, which a file system may ignore): the same
/// bytes either way, in pooled buffers for large reads, and short where
/// the file has shrunk since it was opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_cached_or_not_give_the_file_bytes() {
    let t = Tree::new();
    let data = pattern(3 << 20);
    std::fs::write(t.root().join("large"), &data).unwrap();
    let evict = || {
        let f = std::fs::File::open(t.root().join("large")).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    };
    let f =
        t.fs.open(&Caller::local("test"), "/large", READ, "")
            .await
            .unwrap();
    for (offset, len) in [(0, 2 << 20), (1, 200_000), (3_000_000, 1 << 20), (7, 1000)] {
        let want = &data[offset as usize..(offset as usize + len).min(data.len())];
        evict();
        assert_eq!(
            &f.read_at(offset, len).await.unwrap()[..],
            want,
            "at {offset}"
        );
        // cached now: read without the blocking pool, where the file
        // system can say so (overlayfs on older kernels cannot)
        match read_cached(&f.file, offset, len, &f.buffers) {
            Some(cached) => assert_eq!(&cached.unwrap()[..], want, "at {offset}, cached"),
            None => assert!(
                !nowait_supported(&f.file),
                "at {offset}: not read from the cache"
            ),
        }
    }
    // pooled buffers came back for reuse once their data was dropped
    assert!(f.buffers.idle_bytes() >= 2 << 20);
    // the file shrinks under the open handle: the read is short
    shrink(&t.root().join("large"), 1_000_000);
    let got = f.read_at(500_000, 2 << 20).await.unwrap();
    assert_eq!(&got[..], &data[500_000..1_000_000]);
    assert!(f.read_at(1_000_000, 10).await.unwrap().is_empty());
}

/// Truncates the file at `path` to `len` bytes, through a handle of its
/// own.
fn shrink(path: &Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// A region for `sendfile` is offered only for bytes the page cache holds,
/// clamped to the file's current size, and names the file's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regions_are_offered_for_cached_bytes_only() {
    let t = Tree::new();
    let data = pattern(3 << 20);
    std::fs::write(t.root().join("large"), &data).unwrap();
    let f =
        t.fs.open(&Caller::local("test"), "/large", READ, "")
            .await
            .unwrap();
    f.file.sync_all().unwrap();
    rustix::fs::fadvise(&*f.file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    let Some(false) = resident::resident(&f.file, 0, 1 << 20) else {
        // no cachestat (Linux before 6.5): never a region
        assert!(f.region(0, 1 << 20).unwrap().is_none());
        return;
    };
    assert!(f.region(0, 1 << 20).unwrap().is_none(), "evicted");
    // no read-ahead: only pages read are cached
    rustix::fs::fadvise(&*f.file, 0, None, rustix::fs::Advice::Random).unwrap();
    f.read_at(0, 1 << 20).await.unwrap();
    assert!(
        f.region(1, 1 << 20).unwrap().is_none(),
        "one page not cached"
    );
    let bytes = |r: &FileRegion| {
        let mut buf = vec![0; r.len];
        r.file.read_exact_at(&mut buf, r.offset).unwrap();
        buf
    };
    let r = f.region(4095, 100_000).unwrap().unwrap();
    assert_eq!((r.offset, r.len), (4095, 100_000));
    assert_eq!(bytes(&r), &data[4095..104_095]);
    f.read_at(3 << 20, 1).await.unwrap();
    f.read_at((3 << 20) - 10, 10).await.unwrap();
    let r = f.region((3 << 20) - 10, 1 << 20).unwrap().unwrap();
    assert_eq!(r.len, 10, "clamped to the end of the file");
    assert_eq!(f.region(3 << 20, 10).unwrap().unwrap().len, 0);
    assert_eq!(f.region(5 << 20, 10).unwrap().unwrap().len, 0);
    // the file shrinks under the open handle: the region shrinks too
    shrink(&t.root().join("large"), 50_000);
    let r = f.region(4095, 100_000).unwrap().unwrap();
    assert_eq!(bytes(&r), &data[4095..50_000]);
}

/// Residency remembered per chunk answers as `cachestat` does for the
/// bytes asked: a wholly cached chunk at once, a partly cached one page by
/// page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn residency_by_chunk_answers_for_the_bytes_asked() {
    let t = Tree::new();
    let size = 12u64 << 20;
    std::fs::write(t.root().join("f"), pattern(size as usize)).unwrap();
    let f = std::fs::File::open(t.root().join("f")).unwrap();
    f.sync_all().unwrap();
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::Random).unwrap();
    if resident::resident(&f, 0, 4096).is_none() {
        return; // no cachestat (Linux before 6.5)
    }
    let read = |at: u64, len: usize| {
        let mut buf = vec![0; len];
        f.read_exact_at(&mut buf, at).unwrap();
    };
    read(0, 4 << 20);
    read(5 << 20, 4096);
    let r = Residency::default();
    let mib = 1u64 << 20;
    assert_eq!(r.check(&f, 100, 1000, size), Some(true), "wholly cached");
    assert_eq!(r.check(&f, 4 * mib - 100, 90, size), Some(true));
    assert_eq!(r.check(&f, 5 * mib, 1000, size), Some(true), "its page");
    assert_eq!(r.check(&f, 5 * mib + 8192, 10, size), Some(false));
    assert_eq!(r.check(&f, 4 * mib - 100, 200, size), Some(false), "across");
    assert_eq!(r.check(&f, 0, 12 << 20, size), Some(false), "many chunks");
    assert_eq!(r.check(&f, 0, 4 << 20, size), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readv_reads_every_extent_or_fails_past_eof() {
    let t = Tree::new();
    let data = pattern(300_000);
    let f =
        t.fs.open(&Caller::local("test"), "/big", READ, "")
            .await
            .unwrap();
    let extents = vec![(0, 10), (299_000, 1000), (5, 0), (100_000, 65_536), (7, 3)];
    let got = f.readv(extents.clone()).await.unwrap();
    for ((offset, len), got) in extents.into_iter().zip(got) {
        assert_eq!(&got[..], &data[offset as usize..offset as usize + len]);
    }
    assert_error(
        f.readv(vec![(0, 10), (299_999, 2)]).await,
        ErrorCode::FS_ERROR,
        "Unable to readv /big; illegal seek",
    );
    assert_eq!(f.readv_concurrency(), ReadvConcurrency::Parallel(8));
    let serial = t.fs.clone().readv_concurrency(ReadvConcurrency::Serial);
    let f = serial
        .open(&Caller::local("test"), "/big", READ, "")
        .await
        .unwrap();
    assert_eq!(f.readv_concurrency(), ReadvConcurrency::Serial);
    let one =
        t.fs.clone()
            .readv_concurrency(ReadvConcurrency::Parallel(0));
    let f = one
        .open(&Caller::local("test"), "/big", READ, "")
        .await
        .unwrap();
    assert_eq!(f.readv_concurrency(), ReadvConcurrency::Parallel(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksums_on_request() {
    let t = Tree::new();
    let fs = &t.fs;
    let value = |a: ChecksumAnswer| {
        (
            String::from_utf8(a.alg.to_vec()).unwrap(),
            String::from_utf8(a.value.to_vec()).unwrap(),
        )
    };
    let cases = [
        (None, "adler32", "091e01de"),
        (Some("adler32"), "adler32", "091e01de"),
        (Some("ADLER32"), "adler32", "091e01de"),
        (Some("crc32c"), "crc32c", "e3069283"),
        (Some("md5"), "md5", "25f9e794323b453885f5181f1b624d0b"),
    ];
    for (asked, alg, hex) in cases {
        let got = value(
            fs.checksum(&Caller::local("test"), "/nine", asked)
                .await
                .unwrap(),
        );
        assert_eq!(got, (alg.to_string(), hex.to_string()), "{asked:?}");
    }
    let big = value(
        fs.checksum(&Caller::local("test"), "/big", Some("crc32c"))
            .await
            .unwrap(),
    );
    let crc = xroot_proto::page::crc32c(&pattern(300_000));
    assert_eq!(big.1, format!("{crc:08x}"));
    assert_eq!(fs.checksum_algorithms(), ["adler32", "crc32c", "md5"]);
    assert_error(
        fs.checksum(&Caller::local("test"), "/nine", Some("foo"))
            .await,
        ErrorCode::SERVER_ERROR,
        "foo checksum not supported.",
    );
    assert_error(
        fs.checksum(&Caller::local("test"), "/dir", None).await,
        ErrorCode::IS_DIRECTORY,
        "Unable to checksum /dir; is a directory",
    );
    assert_error(
        fs.checksum(&Caller::local("test"), "/missing", None).await,
        ErrorCode::NOT_FOUND,
        "Unable to checksum /missing; no such file or directory",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stat_and_dirlist() {
    let t = Tree::new();
    let fs = &t.fs;
    let st = fs.stat(&Caller::local("test"), "/nine").await.unwrap();
    let md = std::fs::metadata(t.root().join("nine")).unwrap();
    assert_eq!((st.size, st.mtime), (9, md.mtime()));
    assert_eq!(st.extended.as_ref().unwrap().mode, md.mode() & 0o7777);
    let f = fs
        .open(&Caller::local("test"), "/nine", READ, "")
        .await
        .unwrap();
    assert_eq!(f.stat().await.unwrap(), st);
    assert!(fs
        .stat(&Caller::local("test"), "/dir")
        .await
        .unwrap()
        .is_dir());
    assert_error(
        fs.stat(&Caller::local("test"), "/missing").await,
        ErrorCode::NOT_FOUND,
        "Unable to locate /missing; no such file or directory",
    );
    assert_error(
        fs.stat(&Caller::local("test"), "/nine/x").await,
        ErrorCode::FS_ERROR,
        "Unable to locate /nine/x; not a directory",
    );

    let mut names: Vec<_> = fs
        .dirlist(&Caller::local("test"), "/", false)
        .await
        .unwrap();
    names.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<_> = names.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["big", "dir", "empty", "nine"]);
    let listed = fs
        .dirlist(&Caller::local("test"), "/dir", true)
        .await
        .unwrap();
    for e in &listed {
        let want = fs
            .stat(&Caller::local("test"), &format!("/dir/{}", e.name))
            .await
            .unwrap();
        assert_eq!(e.stat.as_ref(), Some(&want), "{}", e.name);
    }
    assert_eq!(listed.len(), 2);
    assert!(fs
        .dirlist(&Caller::local("test"), "/empty", true)
        .await
        .unwrap()
        .is_empty());
    assert_error(
        fs.dirlist(&Caller::local("test"), "/missing", false).await,
        ErrorCode::NOT_FOUND,
        "Unable to open directory /missing; no such file or directory",
    );
    assert_code(
        fs.dirlist(&Caller::local("test"), "/nine", true).await,
        ErrorCode::FS_ERROR,
    );
    // xattrs are not available without libc; vfs and space come from statvfs
    assert_code(
        fs.get_xattr(&Caller::local("test"), "/nine", "a").await,
        ErrorCode::UNSUPPORTED,
    );
    let space = fs.space(&Caller::local("test"), "/").await.unwrap();
    assert!(
        space.space > 0 && space.used + space.free == space.space,
        "{space:?}"
    );
    assert_eq!(
        fs.stat_vfs(&Caller::local("test"), "/")
            .await
            .unwrap()
            .nodes_rw,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_modes() {
    let t = Tree::new();
    let (fs, root) = (&t.fs, t.root());
    let create = OpenMode {
        write: true,
        create_new: true,
        mode: 0o640,
        ..READ
    };
    let f = fs
        .open(&Caller::local("test"), "/new", create, "")
        .await
        .unwrap();
    f.write_at(0, Bytes::from_static(b"hello")).await.unwrap();
    f.close().await.unwrap();
    let md = std::fs::metadata(root.join("new")).unwrap();
    assert_eq!((md.len(), md.mode() & 0o777), (5, 0o640));
    assert_error(
        fs.open(&Caller::local("test"), "/new", create, "").await,
        ErrorCode::ITEM_EXISTS,
        "Unable to create /new; file exists",
    );
    assert_code(
        fs.open(&Caller::local("test"), "/a/b/c", create, "").await,
        ErrorCode::NOT_FOUND,
    );
    let deep = OpenMode {
        make_path: true,
        mode: 0,
        ..create
    };
    fs.open(&Caller::local("test"), "/a/b/c", deep, "")
        .await
        .unwrap();
    let md = std::fs::metadata(root.join("a/b/c")).unwrap();
    assert_eq!(
        md.mode() & 0o777,
        0o600,
        "owner read and write always granted"
    );
    let truncate = OpenMode {
        write: true,
        truncate: true,
        ..READ
    };
    let f = fs
        .open(&Caller::local("test"), "/new", truncate, "")
        .await
        .unwrap();
    assert_eq!(f.stat().await.unwrap().size, 0);
    f.write_at(3, Bytes::from_static(b"xy")).await.unwrap();
    f.truncate(4).await.unwrap();
    assert_eq!(std::fs::read(root.join("new")).unwrap(), b"\0\0\0x");
    let append = OpenMode {
        write: true,
        append: true,
        ..READ
    };
    let f = fs
        .open(&Caller::local("test"), "/new", append, "")
        .await
        .unwrap();
    f.write_at(0, Bytes::from_static(b"!")).await.unwrap();
    assert_eq!(std::fs::read(root.join("new")).unwrap(), b"\0\0\0x!");

    assert_error(
        fs.open(&Caller::local("test"), "/dir", READ, "").await,
        ErrorCode::IS_DIRECTORY,
        "Unable to open /dir; is a directory",
    );
    assert_error(
        fs.open(&Caller::local("test"), "/missing", READ, "").await,
        ErrorCode::NOT_FOUND,
        "Unable to open /missing; no such file or directory",
    );
    assert_code(
        fs.open(&Caller::local("test"), "/nine/x", READ, "").await,
        ErrorCode::FS_ERROR,
    );
    let fifo = root.join("fifo");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        // opening would block until a writer came: refused instead
        assert_code(
            fs.open(&Caller::local("test"), "/fifo", READ, "").await,
            ErrorCode::NOT_FILE,
        );
        assert_code(
            fs.checksum(&Caller::local("test"), "/fifo", None).await,
            ErrorCode::NOT_FILE,
        );
        let st = fs.stat(&Caller::local("test"), "/fifo").await.unwrap();
        assert!(st.flags.contains(StatFlags::OTHER));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_changes() {
    let t = Tree::new();
    let (fs, root) = (&t.fs, t.root());
    std::fs::create_dir_all(root.join("full/inner")).unwrap();

    fs.mkdir(&Caller::local("test"), "/made", 0o750, false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::metadata(root.join("made")).unwrap().mode() & 0o777,
        0o750
    );
    // the reference passes a repeat with the same bits and owner rwx is added
    fs.mkdir(&Caller::local("test"), "/made", 0o050, false)
        .await
        .unwrap();
    assert_error(
        fs.mkdir(&Caller::local("test"), "/made", 0o755, false)
            .await,
        ErrorCode::ITEM_EXISTS,
        "Unable to mkdir /made; file exists",
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/nine", 0o755, true).await,
        ErrorCode::ITEM_EXISTS,
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/p/q/r", 0o755, false)
            .await,
        ErrorCode::NOT_FOUND,
    );
    assert_code(
        fs.mkdir(&Caller::local("test"), "/nine/x", 0o755, true)
            .await,
        ErrorCode::FS_ERROR,
    );
    fs.mkdir(&Caller::local("test"), "/p/q/r", 0o700, true)
        .await
        .unwrap();
    assert!(root.join("p/q/r").is_dir());
    fs.mkdir(&Caller::local("test"), "/p/q/r", 0o700, true)
        .await
        .unwrap();

    fs.rmdir(&Caller::local("test"), "/p/q/r").await.unwrap();
    assert!(!root.join("p/q/r").exists());
    fs.rmdir(&Caller::local("test"), "/p/q/r")
        .await
        .expect("the reference passes a missing rmdir");
    assert_error(
        fs.rmdir(&Caller::local("test"), "/nine").await,
        ErrorCode::FS_ERROR,
        "Unable to remove /nine; not a directory",
    );
    assert_error(
        fs.rmdir(&Caller::local("test"), "/full").await,
        ErrorCode::FS_ERROR,
        "Unable to remove /full; directory not empty",
    );
    assert_code(
        fs.rmdir(&Caller::local("test"), "/").await,
        ErrorCode::NOT_AUTHORIZED,
    );

    fs.rm(&Caller::local("test"), "/dir/a").await.unwrap();
    assert!(!root.join("dir/a").exists());
    assert_code(
        fs.rm(&Caller::local("test"), "/dir/a").await,
        ErrorCode::NOT_FOUND,
    );
    fs.rm(&Caller::local("test"), "/empty")
        .await
        .expect("rm removes an empty directory");
    assert!(!root.join("empty").exists());
    assert_code(
        fs.rm(&Caller::local("test"), "/full").await,
        ErrorCode::FS_ERROR,
    );
    assert!(root.join("full/inner").is_dir());

    fs.mv(&Caller::local("test"), "/nine", "/dir/nine")
        .await
        .unwrap();
    assert_eq!(std::fs::read(root.join("dir/nine")).unwrap(), b"123456789");
    assert_error(
        fs.mv(&Caller::local("test"), "/nine", "/x").await,
        ErrorCode::NOT_FOUND,
        "Unable to rename /nine; no such file or directory",
    );
    assert_code(
        fs.mv(&Caller::local("test"), "/big", "/dir").await,
        ErrorCode::IS_DIRECTORY,
    );
    assert_code(
        fs.mv(&Caller::local("test"), "/dir", "/full").await,
        ErrorCode::FS_ERROR,
    );

    fs.chmod(&Caller::local("test"), "/big", 0o4640)
        .await
        .unwrap();
    assert_eq!(
        std::fs::metadata(root.join("big")).unwrap().mode() & 0o7777,
        0o640
    );
    assert_code(
        fs.chmod(&Caller::local("test"), "/missing", 0o644).await,
        ErrorCode::NOT_FOUND,
    );

    fs.truncate(&Caller::local("test"), "/big", 100)
        .await
        .unwrap();
    assert_eq!(std::fs::read(root.join("big")).unwrap(), pattern(100));
    fs.truncate(&Caller::local("test"), "/big", 200)
        .await
        .unwrap();
    assert_eq!(std::fs::metadata(root.join("big")).unwrap().len(), 200);
    assert_error(
        fs.truncate(&Caller::local("test"), "/dir", 5).await,
        ErrorCode::IS_DIRECTORY,
        "Unable to trunc /dir; is a directory",
    );
    assert_code(
        fs.truncate(&Caller::local("test"), "/missing", 1).await,
        ErrorCode::NOT_FOUND,
    );
}

#[test]
fn root_must_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"").unwrap();
    let e = LocalFs::new(dir.path().join("f")).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotADirectory);
    let e = LocalFs::new(dir.path().join("missing")).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_policy_refuses_before_touching_the_disk() {
    let t = Tree::new();
    let fs = t.fs.clone().with_policy(
        AccessPolicy::new(Access::ReadOnly)
            .allow("/dir", Access::None)
            .allow_user("alice", "/dir", Access::ReadWrite),
    );
    let (alice, bob) = (Caller::local("alice"), Caller::local("bob"));
    let write = OpenMode {
        write: true,
        create_new: true,
        ..READ
    };
    // everyone reads outside /dir; nobody but alice writes
    assert_eq!(fs.stat(&bob, "/nine").await.unwrap().size, 9);
    assert!(fs.open(&bob, "/nine", READ, "").await.is_ok());
    assert_error(
        fs.open(&bob, "/new", write, "").await,
        ErrorCode::NOT_AUTHORIZED,
        "bob is not allowed to write /new",
    );
    assert!(!t.root().join("new").exists());
    assert_code(fs.rm(&alice, "/nine").await, ErrorCode::NOT_AUTHORIZED);
    assert_code(
        fs.mv(&alice, "/dir/a", "/a").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert!(t.root().join("nine").exists() && t.root().join("dir/a").exists());
    // /dir is alice's alone
    assert_error(
        fs.dirlist(&bob, "/dir", false).await,
        ErrorCode::NOT_AUTHORIZED,
        "bob is not allowed to read /dir",
    );
    assert_code(fs.stat(&bob, "/dir/a").await, ErrorCode::NOT_AUTHORIZED);
    assert!(fs.open(&alice, "/dir/new", write, "").await.is_ok());
    fs.mv(&alice, "/dir/new", "/dir/sub/new").await.unwrap();
    assert!(t.root().join("dir/sub/new").exists());
}

/// The policy judges the path the server resolves, not the client's
/// spelling of it: doubled slashes, `.` components, and symlinks inside a
/// writable area that lead into a read-only or forbidden one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_policy_judges_the_resolved_path() {
    let t = Tree::new();
    let root = t.root().to_path_buf();
    std::fs::create_dir_all(root.join("scratch")).unwrap();
    std::fs::create_dir_all(root.join("ro")).unwrap();
    std::fs::write(root.join("ro/f"), b"ro").unwrap();
    symlink("../nine", root.join("scratch/to_nine")).unwrap();
    symlink("../dir", root.join("scratch/to_dir")).unwrap();
    symlink("../ro", root.join("scratch/to_ro")).unwrap();
    std::fs::write(root.join("scratch/mine"), b"mine").unwrap();
    let fs = t.fs.clone().with_policy(
        AccessPolicy::new(Access::ReadOnly)
            .allow("/dir", Access::None)
            .allow("/scratch", Access::ReadWrite),
    );
    let bob = Caller::local("bob");
    let write = OpenMode {
        write: true,
        ..READ
    };
    let create = OpenMode {
        write: true,
        create_new: true,
        ..READ
    };
    // other spellings of /dir/a
    for p in ["//dir/a", "/./dir/a", "/dir//a", "/scratch/to_dir/a"] {
        assert_code(fs.stat(&bob, p).await, ErrorCode::NOT_AUTHORIZED);
        assert_code(fs.open(&bob, p, READ, "").await, ErrorCode::NOT_AUTHORIZED);
    }
    for p in ["//dir", "/dir/", "/./dir/.", "/scratch/to_dir"] {
        assert_code(fs.dirlist(&bob, p, false).await, ErrorCode::NOT_AUTHORIZED);
    }
    // listing with stat shows no stat of what a symlink leads to there
    let listed = fs.dirlist(&bob, "/scratch", true).await.unwrap();
    let mut names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["mine", "to_nine", "to_ro"]);
    // writing through a symlink in the read-write area into read-only ones
    assert_code(
        fs.open(&bob, "/scratch/to_nine", write, "").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.open(&bob, "/scratch/to_ro/new", create, "").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.truncate(&bob, "/scratch/to_nine", 0).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.chmod(&bob, "/scratch/to_nine", 0o600).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mkdir(&bob, "/scratch/to_ro/d", 0o755, false).await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.rm(&bob, "/scratch/to_ro/f").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    // mv out of the read-write area into a read-only one
    assert_code(
        fs.mv(&bob, "/scratch/mine", "/scratch/to_ro/mine").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mv(&bob, "/scratch/mine", "//ro/mine").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_code(
        fs.mv(&bob, "/scratch/to_ro/f", "/scratch/f").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    // appending is writing
    let append = OpenMode {
        append: true,
        ..READ
    };
    assert_code(
        fs.open(&bob, "/nine", append, "").await,
        ErrorCode::NOT_AUTHORIZED,
    );
    assert_eq!(std::fs::read(root.join("nine")).unwrap(), b"123456789");
    assert!(root.join("scratch/mine").exists() && root.join("ro/f").exists());
    assert!(!root.join("ro/new").exists() && !root.join("ro/d").exists());
    // what the policy allows still works: the symlink itself may go, the
    // read-only file be read through it, the own area be written
    assert!(fs.open(&bob, "/scratch/to_nine", READ, "").await.is_ok());
    assert!(fs.open(&bob, "//scratch/./new", create, "").await.is_ok());
    fs.mv(&bob, "/scratch/new", "/scratch//newer")
        .await
        .unwrap();
    fs.rm(&bob, "/scratch/to_ro").await.unwrap();
    assert!(root.join("scratch/newer").exists() && root.join("ro/f").exists());
}
