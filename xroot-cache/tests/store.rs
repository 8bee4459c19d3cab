//! The disk store: round trips, crash and damage recovery, validators, bounds.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use xroot_cache::{Entry, Store, StoreError, Validators};

/// Deterministic content of the origin file: byte `i` of a file.
fn content(size: u64) -> Vec<u8> {
    (0..size)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn v(size: u64) -> Validators {
    Validators {
        size,
        mtime: 1_700_000_000,
    }
}

fn fixture() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("cache")).unwrap();
    (dir, store)
}

fn data_path(store: &Store, path: &str) -> PathBuf {
    store.root().join(path.trim_start_matches('/'))
}

fn sidecar_path(store: &Store, path: &str) -> PathBuf {
    let mut s = data_path(store, path).into_os_string();
    s.push(".cinfo");
    s.into()
}

/// Writes block `block` of `file` (clipped at EOF).
fn put(e: &Entry, file: &[u8], block: u64) -> u64 {
    let bs = e.block_size() as usize;
    let start = block as usize * bs;
    let end = (start + bs).min(file.len());
    e.write_blocks(start as u64, &file[start..end]).unwrap()
}

fn missing(r: Result<bytes::Bytes, StoreError>) -> u64 {
    match r {
        Err(StoreError::Missing { block }) => block,
        other => panic!("expected Missing, got {other:?}"),
    }
}

#[test]
fn round_trip_write_flush_reopen_read() {
    let (_d, store) = fixture();
    let file = content(5 * 8192);
    let e = store
        .entry("/a/b.root", v(file.len() as u64), 8192)
        .unwrap();
    assert_eq!(e.write_blocks(8192, &file[8192..3 * 8192]).unwrap(), 2);
    assert_eq!(&e.read(8192 + 100, 9000).unwrap()[..], &file[8292..17292]);
    e.flush().unwrap();
    drop(e);

    let e = store
        .entry("/a/b.root", v(file.len() as u64), 8192)
        .unwrap();
    assert_eq!(
        (e.block_size(), e.validators()),
        (8192, v(file.len() as u64))
    );
    assert!(!e.is_cached(0) && e.is_cached(1) && e.is_cached(2) && !e.is_cached(3));
    assert_eq!(e.cached_bytes(), 2 * 8192);
    assert_eq!(&e.read(8192, 2 * 8192).unwrap()[..], &file[8192..3 * 8192]);
    assert_eq!(
        &e.read(3 * 8192 - 1, 1).unwrap()[..],
        &file[3 * 8192 - 1..3 * 8192]
    );
    assert_eq!(missing(e.read(8000, 500)), 0);
    assert_eq!(missing(e.read(3 * 8192 - 1, 2)), 3);
}

/// A process that dies without a flush leaves what it wrote in the live
/// file: the next entry serves it (checked by crc32c like any block). With
/// the live file gone too (the machine crashed), only what a flush
/// committed is cached.
#[test]
fn written_but_not_flushed_is_cached_after_a_process_crash_only_through_the_live_file() {
    let (_d, store) = fixture();
    let file = content(4 * 4096);
    let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
    put(&e, &file, 0);
    e.flush().unwrap();
    put(&e, &file, 1);
    assert!(e.is_cached(1));
    drop(e); // the process dies: no flush

    let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
    assert!(e.is_cached(0) && e.is_cached(1));
    assert_eq!(&e.read(0, 8192).unwrap()[..], &file[..8192]);
    drop(e);

    let mut live = sidecar_path(&store, "/f").into_os_string();
    live.push(".live");
    fs::remove_file(live).unwrap();
    let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
    assert!(e.is_cached(0) && !e.is_cached(1));
    assert_eq!(missing(e.read(4096, 10)), 1);
    assert_eq!(&e.read(0, 4096).unwrap()[..], &file[..4096]);
}

#[test]
fn damaged_sidecars_reset_the_entry() {
    let file = content(3 * 4096 + 5);
    type Spoil = fn(&Path);
    let damage: [(&str, Spoil); 5] = [
        ("garbage", |p| {
            fs::write(p, b"not a sidecar at all").unwrap()
        }),
        ("truncated", |p| {
            let n = fs::metadata(p).unwrap().len();
            OpenOptions::new()
                .write(true)
                .open(p)
                .unwrap()
                .set_len(n - 1)
                .unwrap();
        }),
        ("torn", |p| {
            let f = OpenOptions::new().write(true).open(p).unwrap();
            f.write_all_at(&[0xff; 4], 60).unwrap();
        }),
        ("wrong version", |p| {
            let f = OpenOptions::new().write(true).open(p).unwrap();
            f.write_all_at(&1u32.to_le_bytes(), 8).unwrap();
        }),
        ("removed", |p| fs::remove_file(p).unwrap()),
    ];
    for (what, spoil) in damage {
        let (_d, store) = fixture();
        let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
        (0..4).for_each(|b| assert_eq!(put(&e, &file, b), 1));
        e.flush().unwrap();
        drop(e);
        spoil(&sidecar_path(&store, "/f"));

        let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
        assert_eq!(e.cached_bytes(), 0, "{what}");
        assert_eq!(missing(e.read(0, 1)), 0, "{what}");
        assert_eq!(
            fs::metadata(data_path(&store, "/f")).unwrap().len(),
            0,
            "{what}"
        );
        // The reset entry works as a fresh one.
        put(&e, &file, 3);
        e.flush().unwrap();
        drop(e);
        let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
        assert_eq!(
            &e.read(3 * 4096, 100).unwrap()[..],
            &file[3 * 4096..],
            "{what}"
        );
    }
}

#[test]
fn a_flipped_data_byte_is_not_served_and_its_bit_is_cleared() {
    let (_d, store) = fixture();
    let file = content(4 * 8192);
    let e = store.entry("/f", v(file.len() as u64), 8192).unwrap();
    e.write_blocks(0, &file).unwrap();
    e.flush().unwrap();
    // Flip a byte in the second page of block 2.
    let at = 2 * 8192 + 4096 + 17;
    let f = OpenOptions::new()
        .write(true)
        .open(data_path(&store, "/f"))
        .unwrap();
    f.write_all_at(&[file[at] ^ 1], at as u64).unwrap();

    assert_eq!(
        &e.read(2 * 8192, 4096).unwrap()[..],
        &file[2 * 8192..2 * 8192 + 4096]
    );
    assert_eq!(missing(e.read(0, file.len())), 2);
    assert!(!e.is_cached(2) && e.is_cached(1) && e.is_cached(3));
    assert_eq!(missing(e.read(at as u64, 1)), 2);
    e.flush().unwrap();
    drop(e);
    let e = store.entry("/f", v(file.len() as u64), 8192).unwrap();
    assert!(!e.is_cached(2), "the cleared bit is durable");
    assert_eq!(e.cached_bytes(), 3 * 8192);
    // Refetched, it is served again.
    e.write_blocks(2 * 8192, &file[2 * 8192..3 * 8192]).unwrap();
    assert_eq!(&e.read(0, file.len()).unwrap()[..], &file[..]);
}

#[test]
fn a_truncated_data_file_is_not_served() {
    let (_d, store) = fixture();
    let file = content(3 * 4096);
    let e = store.entry("/f", v(file.len() as u64), 4096).unwrap();
    e.write_blocks(0, &file).unwrap();
    e.flush().unwrap();
    OpenOptions::new()
        .write(true)
        .open(data_path(&store, "/f"))
        .unwrap()
        .set_len(4096 + 10)
        .unwrap();
    assert_eq!(missing(e.read(0, file.len())), 1);
    // that one read found both damaged blocks
    assert!(e.is_cached(0) && !e.is_cached(1) && !e.is_cached(2));
    assert_eq!(missing(e.read(2 * 4096, 1)), 2);
    assert_eq!(&e.read(0, 4096).unwrap()[..], &file[..4096]);
}

#[test]
fn changed_validators_or_block_size_reset_the_entry() {
    let (_d, store) = fixture();
    let file = content(2 * 8192);
    let changes = [
        (
            Validators {
                size: file.len() as u64,
                mtime: 2,
            },
            8192,
        ),
        (
            Validators {
                size: file.len() as u64 - 1,
                mtime: 1_700_000_000,
            },
            8192,
        ),
        (v(file.len() as u64), 4096),
    ];
    for (validators, block_size) in changes {
        let e = store.entry("/f", v(file.len() as u64), 8192).unwrap();
        e.write_blocks(0, &file).unwrap();
        e.flush().unwrap();
        drop(e);
        let e = store.entry("/f", validators, block_size).unwrap();
        assert_eq!(e.cached_bytes(), 0, "{validators:?} {block_size}");
        assert!(!e.is_cached(0));
        drop(e);
        let e = store.entry("/f", v(file.len() as u64), 8192).unwrap();
        assert_eq!(e.cached_bytes(), 0, "the reset is durable");
    }
}

#[test]
fn last_short_block_at_eof() {
    let (_d, store) = fixture();
    let size = 2 * 8192 + 4096 + 100; // last block: one full page and 100 bytes
    let file = content(size);
    let e = store.entry("/f", v(size), 8192).unwrap();
    assert_eq!(e.write_blocks(2 * 8192, &file[2 * 8192..]).unwrap(), 1);
    assert_eq!(e.cached_bytes(), 4196);
    e.flush().unwrap();
    drop(e);
    let e = store.entry("/f", v(size), 8192).unwrap();
    assert_eq!(&e.read(2 * 8192, 1 << 20).unwrap()[..], &file[2 * 8192..]);
    assert_eq!(
        &e.read(size - 3, 3).unwrap()[..],
        &file[size as usize - 3..]
    );
    assert!(e.read(size, 10).unwrap().is_empty());
    // A short block anywhere but at EOF is refused.
    let err = e.write_blocks(0, &file[..8000]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[test]
fn out_of_range_arguments_are_errors() {
    let (_d, store) = fixture();
    let size = 3 * 4096 + 1;
    let file = content(size);
    let e = store.entry("/f", v(size), 4096).unwrap();
    e.write_blocks(0, &file).unwrap();
    for (offset, len) in [(size + 1, 1), (u64::MAX, 0), (u64::MAX, usize::MAX)] {
        match e.read(offset, len) {
            Err(StoreError::Io(err)) => assert_eq!(err.kind(), ErrorKind::InvalidInput),
            other => panic!("read({offset}, {len}) gave {other:?}"),
        }
    }
    assert_eq!(e.read(5, usize::MAX).unwrap().len() as u64, size - 5);
    assert!(e.read(0, 0).unwrap().is_empty());
    assert!(!e.is_cached(4) && !e.is_cached(u64::MAX));
    let bad_writes: [(u64, &[u8]); 4] = [
        (100, &file[..4096]),           // unaligned
        (4096 * 3, &file[..2]),         // past EOF
        (u64::MAX - 10, &file[..4096]), // overflow
        (4096 * 4, &file[..1]),         // starts past EOF
    ];
    for (offset, data) in bad_writes {
        let err = e.write_blocks(offset, data).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "write at {offset}");
    }
    assert_eq!(e.write_blocks(7, &[]).unwrap(), 0);
}

#[test]
fn bad_paths_and_geometry_are_invalid_input() {
    let (_d, store) = fixture();
    for path in [
        "/../escape",
        "/a/../../b",
        "/a//b",
        "/./a",
        "/a\0",
        "",
        "/x.cinfo",
    ] {
        let err = store.entry(path, v(10), 4096).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{path:?}");
    }
    for bs in [0, 512, 12288] {
        let err = store.entry("/f", v(10), bs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bs}");
    }
    let err = store.entry("/f", v(u64::MAX), 4096).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(!store.root().parent().unwrap().join("escape").exists());
}

#[test]
fn a_hostile_sidecar_causes_no_huge_allocation() {
    let (_d, store) = fixture();
    let e = store.entry("/f", v(4096), 4096).unwrap();
    e.flush().unwrap();
    drop(e);
    // A sidecar claiming a 1 TiB file, with huge garbage after the header.
    let mut bytes = fs::read(sidecar_path(&store, "/f")).unwrap();
    bytes[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    bytes.extend_from_slice(&[0xff; 4096]);
    fs::write(sidecar_path(&store, "/f"), &bytes).unwrap();
    let e = store.entry("/f", v(4096), 4096).unwrap();
    assert_eq!(e.cached_bytes(), 0);
}

#[test]
fn an_empty_origin_file_is_an_empty_entry() {
    let (_d, store) = fixture();
    let e = store.entry("/empty", v(0), 4096).unwrap();
    assert!(e.read(0, 100).unwrap().is_empty());
    assert_eq!(e.write_blocks(0, &[]).unwrap(), 0);
    e.flush().unwrap();
    drop(e);
    assert_eq!(store.entry("/empty", v(0), 4096).unwrap().cached_bytes(), 0);
}

#[derive(Debug, Clone)]
enum Op {
    Write(u64),
    Read(u64, usize),
    Flush,
    Crash,
    Corrupt(u64),
}

fn op(size: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..size.div_ceil(4096)).prop_map(Op::Write), // a page index
        4 => (0..size, 0..3 * 8192usize).prop_map(|(o, l)| Op::Read(o, l)),
        2 => Just(Op::Flush),
        1 => Just(Op::Crash),
        1 => (0..size).prop_map(Op::Corrupt),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever happens, a read never returns wrong bytes, and the bits follow
    /// a model: set by a write (and recorded in the live file), cleared for
    /// every damaged page a read touches (there too), made durable by a
    /// flush; after a process crash, those of the last flush and those the
    /// live file recorded.
    #[test]
    fn random_sequences_never_serve_wrong_bytes(
        (size, block_size, ops) in (1u64..40_000, prop_oneof![Just(4096u64), Just(8192)])
            .prop_flat_map(|(size, bs)| (Just(size), Just(bs), prop::collection::vec(op(size), 1..40)))
    ) {
        let (_d, store) = fixture();
        let file = content(size);
        let open = || store.entry("/p/f", v(size), block_size).unwrap();
        let mut e = open();
        // Blocks with their bit set in memory, on disk; pages with a damaged byte.
        let (mut mem, mut disk, mut damaged) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        let mut live = BTreeSet::new();
        for op in ops {
            match op {
                Op::Write(page) => {
                    let block = page * 4096 / block_size;
                    put(&e, &file, block);
                    mem.insert(block);
                    live.insert(block);
                    let pages = block_size / 4096;
                    (block * pages..(block + 1) * pages).for_each(|p| { damaged.remove(&p); });
                }
                Op::Read(offset, len) => match e.read(offset, len) {
                    Ok(got) => {
                        let end = (offset + len as u64).min(size) as usize;
                        prop_assert_eq!(&got[..], &file[offset as usize..end]);
                    }
                    Err(StoreError::Missing { block }) => {
                        let end = (offset + len as u64).min(size);
                        let blocks = offset / block_size..=(end - 1) / block_size;
                        let clear = blocks.clone().find(|b| !mem.contains(b));
                        if let Some(first) = clear {
                            prop_assert_eq!(block, first, "the first block not cached");
                        } else {
                            let bad: BTreeSet<u64> = (offset / 4096..=(end - 1) / 4096)
                                .filter(|p| damaged.contains(p))
                                .map(|p| p * 4096 / block_size)
                                .collect();
                            prop_assert_eq!(Some(&block), bad.first(), "the first damaged block");
                            bad.iter().for_each(|b| { mem.remove(b); live.remove(b); });
                        }
                    }
                    Err(StoreError::Io(err)) => prop_assert!(false, "io error {}", err),
                },
                Op::Flush => {
                    e.flush().unwrap();
                    disk.clone_from(&mem);
                }
                Op::Crash => {
                    drop(e);
                    e = open();
                    mem = disk.union(&live).copied().collect();
                }
                Op::Corrupt(at) => {
                    let f = OpenOptions::new().write(true).read(true)
                        .open(data_path(&store, "/p/f")).unwrap();
                    let mut byte = [0u8];
                    let n = f.read_at(&mut byte, at).unwrap();
                    f.write_all_at(&[if n == 1 { byte[0] ^ 0x5a } else { 1 }], at).unwrap();
                    damaged.insert(at / 4096);
                }
            }
            for b in 0..size.div_ceil(block_size) {
                prop_assert_eq!(e.is_cached(b), mem.contains(&b), "block {}", b);
            }
        }
    }
}

#[test]
fn concurrent_writers_readers_and_flushes_share_one_entry() {
    let (_d, store) = fixture();
    let blocks = 64u64;
    let file = content(blocks * 4096 - 7);
    let e = store.entry("/shared", v(file.len() as u64), 4096).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (e, file) = (&e, &file);
            s.spawn(move || {
                for b in (t..blocks).step_by(4) {
                    put(e, file, b);
                    let (at, n) = (b * 4096, 4096.min(file.len() - b as usize * 4096));
                    assert_eq!(&e.read(at, n).unwrap()[..], &file[at as usize..][..n]);
                    if b % 8 == t {
                        e.flush().unwrap();
                    }
                }
            });
        }
    });
    e.flush().unwrap();
    drop(e);
    let e = store.entry("/shared", v(file.len() as u64), 4096).unwrap();
    assert_eq!(e.cached_bytes(), file.len() as u64);
    assert_eq!(&e.read(0, file.len()).unwrap()[..], &file[..]);
}
