//! `xrd_dump` over the golden captures (tests/vectors): one file alone is
//! printed frame by frame; both halves of a capture are paired, each request
//! with its typed answer.

use std::path::PathBuf;
use std::process::Command;
use xroot_testkit::example;

fn vector(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(name)
}

/// Runs xrd_dump on the vectors named; its stdout, after checking it exited 0.
fn dump(names: &[&str]) -> String {
    let out = Command::new(example::example_bin("xrd_dump"))
        .args(names.iter().map(|n| vector(n)))
        .output()
        .expect("run xrd_dump");
    assert!(
        out.status.success(),
        "xrd_dump {names:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn dirlist_with_stat_pairs_with_its_entries() {
    let out = dump(&["dirlist_stat.c2s", "dirlist_stat.s2c"]);
    assert!(out.contains("paired"), "{out}");
    assert!(
        out.contains("Dirlist(Dirlist { options: DirlistOptions(kXR_dstat), path: b\"/dir\" })"),
        "{out}"
    );
    assert!(
        out.contains("-> kXR_dirlist(3004)  3 entries with stat"),
        "{out}"
    );
    for entry in [
        "a.bin  file size=1000 mtime=1700000000",
        "b.bin  file size=5000 mtime=1700000000",
        "sub  dir size=4096",
    ] {
        assert!(out.contains(entry), "{entry}: {out}");
    }
}

#[test]
fn pgread_pairs_with_checked_pages() {
    let out = dump(&["pgread.c2s", "pgread.s2c"]);
    assert!(
        out.contains("-> kXR_pgread(3030)  1 status frames, 74 pages, 300000 bytes from offset 0, crc32c ok on every page"),
        "{out}"
    );
    let out = dump(&["pgread_unaligned.c2s", "pgread_unaligned.s2c"]);
    let answers: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("-> kXR_pgread"))
        .collect();
    assert!(!answers.is_empty(), "{out}");
    for a in answers {
        assert!(a.ends_with("crc32c ok on every page"), "{a}");
    }
}

#[test]
fn waitresp_answer_is_shown_as_asynresp() {
    let out = dump(&["query_checksum.c2s", "query_checksum.s2c"]);
    assert!(out.contains("deferred: kXR_waitresp"), "{out}");
    assert!(
        out.contains(
            "-> kXR_query(3001) (kXR_asynresp)  Checksum(ChecksumAnswer { alg: b\"adler32\""
        ),
        "{out}"
    );
}

#[test]
fn one_file_alone_is_printed_frame_by_frame() {
    let out = dump(&["readv.s2c"]);
    assert!(out.contains("handshake reply (16 bytes)"), "{out}");
    assert!(!out.contains("paired"), "{out}");
    let out = dump(&["readv.c2s"]);
    assert!(out.contains("handshake (20 bytes)"), "{out}");
}

#[test]
fn every_capture_pairs_in_xrd_dump() {
    let mut names: Vec<String> = std::fs::read_dir(vector(""))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "c2s").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    assert!(names.len() > 20);
    for n in names {
        let out = dump(&[&format!("{n}.c2s"), &format!("{n}.s2c")]);
        assert!(out.contains("paired"), "{n}: {out}");
    }
}
