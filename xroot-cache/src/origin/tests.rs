use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use bytes::Bytes;
use xroot_client::Url;
use xroot_proto::page::crc32c;
use xroot_proto::ErrorCode;
use xroot_server::FsError;

use super::*;

/// Deterministic content: a 64-bit LCG's high bytes.
fn content(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

/// A directory holding `/d/f.bin` of `len` content bytes, and the content.
fn origin_dir(len: usize) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let data = content(len);
    std::fs::write(dir.path().join("d/f.bin"), &data).unwrap();
    (dir, data)
}

/// The `kXR_error` code a cache client would get for `e`.
fn code(e: OriginError) -> ErrorCode {
    code_of(FsError::from(e))
}

#[tokio::test]
async fn local_reads_every_run_exactly() {
    let (dir, data) = origin_dir(100_000);
    let origin = LocalOrigin::new(dir.path()).unwrap();
    let f = origin.open("/d/f.bin").await.unwrap();
    let runs = [
        (0, 4096),
        (8192, 12_288),
        (50_001, 3),
        (99_000, 1000),
        (5, 7),
    ];
    let got = f.read_runs(&runs).await.unwrap();
    assert_eq!((got.requests, got.checksummed), (1, false));
    assert_eq!(got.data.len(), runs.len());
    for (&(o, l), d) in runs.iter().zip(&got.data) {
        assert_eq!(&d[..], &data[o as usize..o as usize + l], "run ({o}, {l})");
    }
    let one = f.read_runs(&[(4096, 100_000 - 4096)]).await.unwrap();
    assert_eq!(&one.data[0][..], &data[4096..]);
    assert_eq!(one.requests, 1);
    assert_eq!(f.read_runs(&[]).await.unwrap(), Fetched::nothing());

    let md = std::fs::metadata(dir.path().join("d/f.bin")).unwrap();
    let st = f.stat().await.unwrap();
    assert_eq!((st.size, st.mtime), (100_000, md.mtime()));
    f.close().await.unwrap();
}

#[tokio::test]
async fn local_run_past_the_end_fails_the_call() {
    let (dir, _) = origin_dir(10_000);
    let f = LocalOrigin::new(dir.path())
        .unwrap()
        .open("/d/f.bin")
        .await
        .unwrap();
    let err = f.read_runs(&[(0, 10), (9_000, 1_001)]).await.unwrap_err();
    assert!(matches!(err, OriginError::Fs(_)), "{err:?}");
    assert_eq!(code(err), ErrorCode::FS_ERROR);
}

#[tokio::test]
async fn local_namespace_is_confined_and_passes_codes() {
    let (dir, data) = origin_dir(5000);
    let origin = LocalOrigin::new(dir.path()).unwrap();
    let missing = origin.open("/d/nothing").await.unwrap_err();
    assert_eq!(code(missing), ErrorCode::NOT_FOUND);
    let outside = origin.open("/../etc/passwd").await.unwrap_err();
    assert_eq!(code(outside), ErrorCode::NOT_AUTHORIZED);
    assert!(origin.stat("/d/../../x").await.is_err());

    assert_eq!(origin.stat("/d/f.bin").await.unwrap().size, 5000);
    assert!(origin.stat("/d").await.unwrap().is_dir());
    let list = origin.dirlist("/d", true).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name, "f.bin");
    assert_eq!(list[0].stat.as_ref().map(|s| s.size), Some(5000));
    let sum = origin.checksum("/d/f.bin", Some("crc32c")).await.unwrap();
    assert_eq!(&sum.alg[..], b"crc32c");
    assert_eq!(sum.value, format!("{:08x}", crc32c(&data)).as_bytes());
}

#[test]
fn origin_errors_become_server_errors() {
    use xroot_client::Error as E;
    let url = Url::parse("root://origin.example:1094").unwrap();
    let remote = |e| FsError::from(OriginError::client(&url, e));
    // the origin's own kXR_error passes through verbatim
    assert_eq!(
        remote(E::Server {
            code: ErrorCode::NOT_FOUND,
            message: "Unable to locate /x; no such file or directory".into(),
        }),
        FsError::new(
            ErrorCode::NOT_FOUND,
            "Unable to locate /x; no such file or directory"
        )
    );
    // except a failed authentication of the cache itself: not the
    // client's, so a server error naming the origin
    let FsError::Error { code, message } = remote(E::Server {
        code: ErrorCode::AUTH_FAILED,
        message: "token expired".into(),
    }) else {
        panic!("not an error")
    };
    assert_eq!(code, ErrorCode::SERVER_ERROR);
    assert_eq!(
        message,
        "origin origin.example:1094 refused the cache's credential: token expired"
    );
    // so is a credential the cache cannot even send
    let FsError::Error { code, message } = remote(E::Credential {
        protocol: "ztn".into(),
        endpoint: "origin.example:1094".into(),
        reason: "token file /t is readable by others".into(),
    }) else {
        panic!("not an error")
    };
    assert_eq!(code, ErrorCode::SERVER_ERROR);
    assert!(
        message.starts_with("origin origin.example:1094 refused the cache's credential: "),
        "{message}"
    );
    // failures to talk to it are I/O errors naming it
    let io_errors = [
        E::ConnectionLost {
            endpoint: "origin.example:1094".into(),
        },
        E::Timeout {
            what: "request",
            after: Duration::from_secs(60),
        },
        E::PageChecksum {
            offsets: vec![4096],
            attempts: 1,
        },
    ];
    for e in io_errors {
        let FsError::Error { code, message } = remote(e) else {
            panic!("not an error")
        };
        assert_eq!(code, ErrorCode::IO_ERROR);
        assert!(message.contains("origin origin.example:1094"), "{message}");
    }
    let FsError::Error { code, message } = remote(E::NotOpen) else {
        panic!("not an error")
    };
    assert_eq!(code, ErrorCode::SERVER_ERROR);
    assert!(message.contains("origin.example:1094"), "{message}");

    let short = OriginError::Short {
        offset: 8192,
        expected: 4096,
        got: 100,
    };
    let FsError::Error { code, message } = FsError::from(short) else {
        panic!("not an error")
    };
    assert_eq!(code, ErrorCode::IO_ERROR);
    assert!(message.contains("100 of the 4096 bytes at offset 8192"));

    let fs = FsError::new(ErrorCode::NOT_AUTHORIZED, "no");
    assert_eq!(FsError::from(OriginError::Fs(fs.clone())), fs);
    let io = io::Error::from(io::ErrorKind::NotFound);
    assert_eq!(
        code_of(FsError::from(OriginError::Io(io))),
        ErrorCode::NOT_FOUND
    );
}

fn code_of(e: FsError) -> ErrorCode {
    match e {
        FsError::Error { code, .. } => code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn fetched_checks_every_length() {
    let runs = [(0, 3), (10, 2)];
    let data = |d: &[&'static [u8]]| d.iter().map(|&b| Bytes::from_static(b)).collect();
    let ok = Fetched::checked(&runs, data(&[b"abc", b"de"]), 1, true).unwrap();
    assert_eq!((ok.data.len(), ok.requests, ok.checksummed), (2, 1, true));
    for (answer, got) in [
        (data(&[b"abc", b"d"]), 1),   // short
        (data(&[b"abc", b"def"]), 3), // long
        (data(&[b"abc"]), 0),         // missing
    ] {
        match Fetched::checked(&runs, answer, 1, false) {
            Err(OriginError::Short {
                offset: 10,
                expected: 2,
                got: g,
            }) => assert_eq!(g, got),
            other => panic!("{other:?}"),
        }
    }
    // one piece more than runs
    match Fetched::checked(&runs, data(&[b"abc", b"de", b"xyz"]), 1, false) {
        Err(OriginError::Short {
            expected: 0,
            got: 3,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}
