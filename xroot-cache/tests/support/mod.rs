//! A local origin whose opens and reads the test can hold back, fail and
//! count, and the cache set-up shared by the `CacheFs` tests.

#![allow(dead_code)] // each test crate uses its own part of it

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use xroot_cache::{
    CacheConfig, CacheFs, CacheHandle, Fetched, LocalOrigin, LocalOriginFile, Origin, OriginError,
    OriginFs, Store,
};
use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_server::{Caller, DirEntry, File, FileSystem, FsError, OpenMode};

/// Hang guard for every wait in these tests.
pub const GUARD: Duration = Duration::from_secs(30);

/// What the test sees of the origin, and how it misbehaves.
#[derive(Default)]
pub struct Probe {
    /// `read_runs` calls started.
    pub calls: AtomicUsize,
    /// Every run asked, in call order.
    pub runs: Mutex<Vec<(u64, usize)>>,
    /// The runs of each `read_runs` call (one origin request each).
    pub requests: Mutex<Vec<Vec<(u64, usize)>>>,
    /// When set, the data of every run answered is kept in `answered`.
    pub keep_answers: AtomicBool,
    /// The data answered (see `keep_answers`), to tell whether the cache
    /// copied it.
    pub answered: Mutex<Vec<bytes::Bytes>>,
    /// When set, the next `read_runs` calls fail.
    pub fail: AtomicBool,
    /// When set, each `open` takes one permit of the gate first.
    pub hold_opens: AtomicBool,
    /// `open` calls started.
    pub opening: AtomicUsize,
    /// Origin files opened and not closed.
    pub open_files: AtomicUsize,
}

/// A [`LocalOrigin`] whose `read_runs` each take one permit of `gate`
/// first (so the test decides when a fill completes) and are recorded.
pub struct Gated {
    local: LocalOrigin,
    gate: Arc<Semaphore>,
    probe: Arc<Probe>,
}

/// A file of [`Gated`].
pub struct GatedFile {
    file: LocalOriginFile,
    gate: Arc<Semaphore>,
    probe: Arc<Probe>,
}

impl Origin for GatedFile {
    async fn stat(&self) -> Result<StatInfo, OriginError> {
        self.file.stat().await
    }

    async fn read_runs(&self, runs: &[(u64, usize)]) -> Result<Fetched, OriginError> {
        self.probe.calls.fetch_add(1, Ordering::SeqCst);
        self.probe.runs.lock().unwrap().extend_from_slice(runs);
        self.probe.requests.lock().unwrap().push(runs.to_vec());
        self.gate.acquire().await.unwrap().forget();
        if self.probe.fail.load(Ordering::SeqCst) {
            return Err(OriginError::Io(std::io::Error::other("origin went away")));
        }
        let fetched = self.file.read_runs(runs).await?;
        if self.probe.keep_answers.load(Ordering::SeqCst) {
            let mut answered = self.probe.answered.lock().unwrap();
            answered.extend(fetched.data.iter().cloned());
        }
        Ok(fetched)
    }

    async fn close(&self) -> Result<(), OriginError> {
        self.probe.open_files.fetch_sub(1, Ordering::SeqCst);
        self.file.close().await
    }
}

impl OriginFs for Gated {
    type File = GatedFile;

    async fn open(&self, path: &str) -> Result<GatedFile, OriginError> {
        self.probe.opening.fetch_add(1, Ordering::SeqCst);
        if self.probe.hold_opens.load(Ordering::SeqCst) {
            self.gate.acquire().await.unwrap().forget();
        }
        let file = self.local.open(path).await?;
        self.probe.open_files.fetch_add(1, Ordering::SeqCst);
        Ok(GatedFile {
            file,
            gate: self.gate.clone(),
            probe: self.probe.clone(),
        })
    }

    async fn stat(&self, path: &str) -> Result<StatInfo, OriginError> {
        self.local.stat(path).await
    }

    async fn dirlist(&self, path: &str, with_stat: bool) -> Result<Vec<DirEntry>, OriginError> {
        self.local.dirlist(path, with_stat).await
    }

    async fn checksum(&self, path: &str, alg: Option<&str>) -> Result<ChecksumAnswer, OriginError> {
        self.local.checksum(path, alg).await
    }
}

/// Deterministic file content: a byte pattern no 4 kB block repeats.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// An origin directory, a cache directory and the origin's gate and probe.
pub struct Setup {
    pub origin_dir: tempfile::TempDir,
    pub cache_dir: tempfile::TempDir,
    pub gate: Arc<Semaphore>,
    pub probe: Arc<Probe>,
    /// The content of `/f.bin`.
    pub data: Vec<u8>,
}

impl Setup {
    /// An origin directory holding `/f.bin` of `len` bytes.
    pub fn new(len: usize) -> Setup {
        let origin_dir = tempfile::tempdir().unwrap();
        let data = pattern(len);
        std::fs::write(origin_dir.path().join("f.bin"), &data).unwrap();
        Setup {
            origin_dir,
            cache_dir: tempfile::tempdir().unwrap(),
            gate: Arc::new(Semaphore::new(0)),
            probe: Arc::default(),
            data,
        }
    }

    /// A cache over the origin with `config`, on the shared cache dir.
    pub fn cache(&self, config: CacheConfig) -> CacheFs<Gated> {
        self.cache_in(self.cache_dir.path(), config)
    }

    /// A cache over the origin with `config`, storing in `dir`.
    pub fn cache_in(&self, dir: &std::path::Path, config: CacheConfig) -> CacheFs<Gated> {
        let origin = Gated {
            local: LocalOrigin::new(self.origin_dir.path()).unwrap(),
            gate: self.gate.clone(),
            probe: self.probe.clone(),
        };
        CacheFs::new(origin, Store::open(dir).unwrap(), config)
    }

    /// `read_runs` calls so far.
    pub fn calls(&self) -> usize {
        self.probe.calls.load(Ordering::SeqCst)
    }

    /// Origin files open now.
    pub fn open_files(&self) -> usize {
        self.probe.open_files.load(Ordering::SeqCst)
    }

    /// Lets every origin open and read through from now on.
    pub fn open_gate(&self) {
        self.gate.add_permits(1 << 20);
    }

    /// The bytes of `/f.bin` at each extent.
    pub fn expect(&self, extents: &[(u64, usize)]) -> Vec<Vec<u8>> {
        extents
            .iter()
            .map(|&(o, l)| self.data[o as usize..o as usize + l].to_vec())
            .collect()
    }
}

/// Whether `data` lies inside one of the buffers the origin answered
/// (kept with `Probe::keep_answers`): the cache handed it on uncopied.
pub fn from_origin(probe: &Probe, data: &[u8]) -> bool {
    let range = data.as_ptr_range();
    probe
        .answered
        .lock()
        .unwrap()
        .iter()
        .any(|b| b.as_ptr_range().start <= range.start && range.end <= b.as_ptr_range().end)
}

/// Opens `/f.bin` for reading.
pub async fn open(fs: &CacheFs<Gated>) -> CacheHandle<Gated> {
    fs.open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
        .await
        .unwrap()
}

/// A vector read, under the hang guard.
pub async fn readv(
    f: &CacheHandle<Gated>,
    extents: &[(u64, usize)],
) -> Result<Vec<Vec<u8>>, FsError> {
    let got = tokio::time::timeout(GUARD, f.readv(extents.to_vec()))
        .await
        .expect("readv hung")?;
    Ok(got.into_iter().map(|b| b.to_vec()).collect())
}

/// Reads block 0 with `prefetch_blocks` of read-ahead, letting only the
/// read's own fill through the gate, and checks that the read-ahead it
/// starts, held at the origin, is the origin call number `call` (from 1)
/// and asks for the next `prefetch_blocks` blocks of 4 KiB.
pub async fn read_first_block_ahead_held(
    s: &Setup,
    f: &CacheHandle<Gated>,
    prefetch_blocks: usize,
    call: usize,
) {
    let first = [(0u64, 4096)];
    s.gate.add_permits(1);
    assert_eq!(readv(f, &first).await.unwrap(), s.expect(&first));
    calls_reach(s, call).await;
    let ahead = s.probe.runs.lock().unwrap()[call - 1];
    assert_eq!(ahead, (4096, prefetch_blocks * 4096), "the read-ahead");
}

/// Two reads of `fs`'s file on two handles in flight at once: `first`
/// held at the origin (origin call 1), then `second` asked while it is
/// (call 2); the gate is then opened and both answers checked.
pub async fn two_reads_in_flight(
    s: &Setup,
    fs: &CacheFs<Gated>,
    first: [(u64, usize); 1],
    second: [(u64, usize); 1],
) {
    let (a, b) = (open(fs).await, open(fs).await);
    let ra = tokio::spawn(async move { readv(&a, &first).await });
    calls_reach(s, 1).await;
    let rb = tokio::spawn(async move { readv(&b, &second).await });
    calls_reach(s, 2).await;
    s.open_gate();
    assert_eq!(ra.await.unwrap().unwrap(), s.expect(&first));
    assert_eq!(rb.await.unwrap().unwrap(), s.expect(&second));
}

/// Waits (under the hang guard) until `done()` holds.
pub async fn until(what: &str, done: impl Fn() -> bool) {
    tokio::time::timeout(GUARD, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: never happened"));
}

/// Waits until `n` origin reads have started.
pub async fn calls_reach(s: &Setup, n: usize) {
    until("origin reads started", || s.calls() >= n).await;
}
