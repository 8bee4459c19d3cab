//! Plain `kXR_read` answers from `LocalFs` go out with `sendfile(2)` where
//! the page cache holds the bytes (handles opened for reading, plain
//! links): pipelined reads of every shape answer the file's bytes, framed
//! as with the buffered path (`Config::sendfile_max` 0), and a file that
//! shrinks before or while its answers wait is answered short or padded,
//! and never kills the link.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use xroot::proto::request::{Ping, Read};
use xroot::proto::response::Response;
use xroot::proto::{FHandle, Status, StreamId};
use xroot::server::{Config, LocalFs};

use xroot_testkit::ours::serve_with;
use xroot_testkit::raw::Raw;
use xroot_testkit::vectors::pattern;

const SIZE: usize = 5 << 20;

fn read(fhandle: FHandle, offset: i64, rlen: i32) -> Read {
    Read {
        fhandle,
        offset,
        rlen,
        args: None,
    }
}

/// Every frame answering each streamid, in order, until each has had its
/// final frame: `(status, data)` per frame.
async fn answers(r: &mut Raw, sids: usize) -> HashMap<u16, Vec<(Status, Bytes)>> {
    let mut got: HashMap<u16, Vec<(Status, Bytes)>> = HashMap::new();
    let mut finished = 0;
    while finished < sids {
        let (sid, resp) = r.expect().await;
        let frame = match resp {
            Response::OkSoFar(b) => (Status::OKSOFAR, b),
            Response::Ok(b) => (Status::OK, b),
            other => panic!("answer to {sid:?}: {other:?}"),
        };
        finished += usize::from(frame.0 == Status::OK);
        got.entry(u16::from_be_bytes(sid.0))
            .or_default()
            .push(frame);
    }
    got
}

/// 300 reads sent without waiting, of random lengths at random offsets,
/// some across or past the end of the file and some longer than a
/// `kXR_oksofar` chunk: with sendfile and without, the same frames, and
/// their data is the file's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_reads_answer_alike_with_sendfile_or_without() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.bin"), pattern(0, SIZE)).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let reads: Vec<(i64, i32)> = (0..300)
        .map(|_| {
            let len = match next(4) {
                0 => next(100) + 1,
                1 => next(70_000) + 1,
                2 => next(5 << 20) + 1,
                _ => 65_536,
            };
            (next(SIZE as u64 + 100_000) as i64, len as i32)
        })
        .collect();
    let mut frames = Vec::new();
    for sendfile in [true, false] {
        let config = Config {
            sendfile_max: if sendfile { usize::MAX } else { 0 },
            ..Config::default()
        };
        let addr = serve_with(LocalFs::new(dir.path()).unwrap(), config).await;
        let (mut r, _) = Raw::login(addr).await;
        let fh = r.open("/f.bin").await;
        for (i, &(offset, rlen)) in reads.iter().enumerate() {
            r.send(100 + i as u16, read(fh, offset, rlen)).await;
        }
        let got = answers(&mut r, reads.len()).await;
        for (i, &(offset, rlen)) in reads.iter().enumerate() {
            let data: Vec<u8> = got[&(100 + i as u16)]
                .iter()
                .flat_map(|(_, d)| d.iter().copied())
                .collect();
            let end = (offset as usize + rlen as usize).min(SIZE);
            let want = pattern(offset as u64, end.saturating_sub(offset as usize));
            assert!(
                data == want,
                "sendfile {sendfile}: read {rlen}@{offset}: {} bytes, {} due",
                data.len(),
                want.len()
            );
        }
        let shapes: Vec<Vec<(Status, usize)>> = (0..reads.len())
            .map(|i| {
                got[&(100 + i as u16)]
                    .iter()
                    .map(|(s, d)| (*s, d.len()))
                    .collect()
            })
            .collect();
        frames.push(shapes);
    }
    assert!(frames[0] == frames[1], "frames differ with sendfile");
}

/// A `kXR_read` of a local file on a plain link goes out in 512 KiB
/// `kXR_oksofar` frames (`File::read_chunk` of `LocalFs`), not the
/// server's 2 MiB `read_chunk`, with sendfile and without; the data is the
/// file's. (A backend without the hint keeps 2 MiB: `server_core`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_reads_go_out_in_512_kib_frames_on_a_plain_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.bin"), pattern(0, SIZE)).unwrap();
    let (at, len) = (1000, (3 << 20) + 7);
    for sendfile_max in [usize::MAX, 0] {
        let config = Config {
            sendfile_max,
            ..Config::default()
        };
        let addr = serve_with(LocalFs::new(dir.path()).unwrap(), config).await;
        let (mut r, _) = Raw::login(addr).await;
        let fh = r.open("/f.bin").await;
        r.send(1, read(fh, at, len as i32)).await;
        let got = answers(&mut r, 1).await.remove(&1).unwrap();
        let shape: Vec<(Status, usize)> = got.iter().map(|(s, d)| (*s, d.len())).collect();
        let mut want = vec![(Status::OKSOFAR, 512 << 10); 6];
        want.push((Status::OK, 7));
        assert_eq!(shape, want, "sendfile_max {sendfile_max}");
        let data: Vec<u8> = got.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        assert!(
            data == pattern(at as u64, len),
            "sendfile_max {sendfile_max}"
        );
    }
}

fn shrink(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// A file truncated under an open handle answers short; one truncated
/// while 64 MiB of its answers wait for a client that does not read has
/// every promised frame whole (the file's bytes, or zeros where it no
/// longer has them), and the link answers the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_shrinks_under_its_reads_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bin");
    let big = 64 << 20;
    let data = pattern(0, big);
    std::fs::write(&path, &data).unwrap();
    let config = Config {
        sendfile_max: usize::MAX,
        ..Config::default()
    };
    let addr = serve_with(LocalFs::new(dir.path()).unwrap(), config).await;
    let (mut r, _) = Raw::login(addr).await;
    let fh = r.open("/f.bin").await;
    // nobody reads: the answers fill the socket and wait in the server
    r.send(1, read(fh, 0, big as i32)).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    shrink(&path, 1 << 20);
    let got = answers(&mut r, 1).await.remove(&1).unwrap();
    let mut at = 0;
    for (_, d) in &got {
        for (i, &b) in d.iter().enumerate() {
            assert!(
                b == data[at + i] || (at + i >= 1 << 20 && b == 0),
                "byte {} is {b}",
                at + i
            );
        }
        at += d.len();
    }
    assert!(at <= big, "{at} bytes answered");
    r.send(2, Ping::default()).await;
    assert!(matches!(r.expect().await, (s, Response::Ok(_)) if s == StreamId::from_u16(2)));
    // shrunk before the read: a short answer
    shrink(&path, 100_000);
    r.send(3, read(fh, 50_000, 100_000)).await;
    let got = answers(&mut r, 1).await.remove(&3).unwrap();
    let data_len: usize = got.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(data_len, 50_000);
    assert!(got
        .iter()
        .flat_map(|(_, d)| d.iter())
        .eq(&data[50_000..100_000]));
}
