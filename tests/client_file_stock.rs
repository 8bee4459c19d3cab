//! xroot-client's `File` I/O against a live stock xrootd 5.5.3: readv,
//! pgread, pgreadv (fallback), pgwrite and the AsyncRead + AsyncSeek
//! adapter, every byte compared with the file on disk; pgread / pgwrite
//! through a relay that spoils page data (xroot-testkit/src/corrupt_proxy.rs);
//! and a write whose answer a relay loses (xroot-testkit/src/cut_proxy.rs).

use std::io::SeekFrom;
use std::path::Path;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use xroot::client::{Client, Config, Error, File, FileReader, OpenFlags};
use xroot::proto::request::Request;
use xroot::proto::{ErrorCode, RequestId};
use xroot_testkit::corrupt_proxy::{CorruptProxy, Spoil};
use xroot_testkit::stock::StockServer;

/// Byte `i` of every test file is `(i * 7) % 251`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// `content[offset..offset + len]`, cut at the end.
fn slice(content: &[u8], offset: u64, len: usize) -> &[u8] {
    let start = (offset as usize).min(content.len());
    &content[start..(start + len).min(content.len())]
}

/// A stock server exporting a fresh directory holding `name` with `len`
/// pattern bytes, and that content; `None` when xrootd is missing outside CI.
fn serve(name: &str, len: usize) -> Option<(StockServer, Vec<u8>, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(len);
    std::fs::write(dir.path().join(name), &content).unwrap();
    StockServer::start(dir.path(), &[]).map(|s| (s, content, dir))
}

async fn open(client: &Client, port: u16, path: &str, flags: OpenFlags) -> File {
    client
        .open(&format!("root://127.0.0.1:{port}/{path}"), flags)
        .await
        .unwrap()
}

fn on_disk(server: &StockServer, path: &str) -> Vec<u8> {
    std::fs::read(Path::new(&server.data).join(path.trim_start_matches('/'))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn readv_splits_and_reassembles() {
    const SIZE: usize = 6_000_000;
    let Some((server, content, _dir)) = serve("v.bin", SIZE) else {
        return;
    };
    // through a plain relay that counts the requests
    let relay = CorruptProxy::start(server.port, Spoil::Nothing).await;
    let client = Client::new();
    let f = open(&client, relay.port, "/v.bin", OpenFlags::READ).await;

    // empty input: nothing sent, not even the Qconfig
    assert!(f.readv(&[]).await.unwrap().is_empty());
    assert_eq!(relay.requests(RequestId::QUERY), 0);
    assert_eq!(
        f.readv(&[(5, 0), (6, 0)]).await.unwrap(),
        [Bytes::new(), Bytes::new()]
    );
    assert_eq!(relay.requests(RequestId::READV), 0);

    // 2500 small ranges: more than readv_iov_max (1024) per request
    let many: Vec<(u64, usize)> = (0..2500u64)
        .map(|i| ((i * 7919) % (SIZE as u64 - 200), 1 + (i as usize % 150)))
        .collect();
    let got = f.readv(&many).await.unwrap();
    assert_eq!(got.len(), many.len());
    for (&(o, l), g) in many.iter().zip(&got) {
        assert_eq!(&g[..], slice(&content, o, l), "range ({o}, {l})");
    }
    assert_eq!(relay.requests(RequestId::READV), 3, "1024 + 1024 + 452");

    // an element over readv_ior_max (2,097,136), duplicates, overlaps, an
    // empty range among them, and the last byte of the file
    let mixed = [
        (100u64, 5_000_000usize),
        (0, 100),
        (0, 100),
        (50, 100),
        (10, 0),
        (3_900_000, 2_097_137),
        (SIZE as u64 - 1, 1),
    ];
    let got = f.readv(&mixed).await.unwrap();
    for (&(o, l), g) in mixed.iter().zip(&got) {
        assert_eq!(g.len(), l);
        assert_eq!(&g[..], slice(&content, o, l), "range ({o}, {l})");
    }
    assert_eq!(relay.requests(RequestId::READV), 4, "one more request");
    assert_eq!(
        relay.requests(RequestId::QUERY),
        1,
        "readv limits asked once for the connection"
    );

    // an element past the end of the file fails the readv, as the reference
    let err = f
        .readv(&[(0, 10), (SIZE as u64 - 5, 10)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { .. }), "{err:?}");
    assert_eq!(err.server_code(), Some(ErrorCode::FS_ERROR));
    f.close().await.unwrap();

    // another file opened on the same connection shares its answer: a
    // cache opening many files of one origin asks once
    let g = open(&client, relay.port, "/v.bin", OpenFlags::READ).await;
    let got = g.readv(&[(0, 10), (SIZE as u64 - 10, 10)]).await.unwrap();
    assert_eq!(&got[1][..], slice(&content, SIZE as u64 - 10, 10));
    assert_eq!(relay.requests(RequestId::QUERY), 1, "once per connection");
    g.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn pgread_and_pgreadv_fallback() {
    const SIZE: usize = 20_000_000;
    let Some((server, content, _dir)) = serve("p.bin", SIZE) else {
        return;
    };
    let relay = CorruptProxy::start(server.port, Spoil::Nothing).await;
    let client = Client::new();
    let f = open(&client, relay.port, "/p.bin", OpenFlags::READ).await;

    let size = SIZE as u64;
    let cases = [
        (0u64, 65_536usize),   // aligned
        (1000, 10_000),        // unaligned: pages of 3096, 4096, 2808
        (4095, 2),             // two pages, one byte each
        (size - 5000, 10_000), // crossing end of file: 5000 bytes
        (size, 100),           // at end of file: nothing
        (size + 4096, 100),    // past it: nothing
        (0, SIZE),             // the whole file: three concurrent pieces
        (12_345, 17_000_000),  // large and unaligned
        (7, 0),                // nothing asked, nothing sent
    ];
    for &(o, l) in &cases {
        let got = f.pgread(o, l).await.unwrap();
        assert_eq!(got.len(), slice(&content, o, l).len(), "pgread({o}, {l})");
        assert!(got[..] == *slice(&content, o, l), "pgread({o}, {l})");
    }
    assert!(relay.requests(RequestId::PGREAD) >= 8 + 2 + 2);
    assert_eq!(
        relay.requests(RequestId::READ),
        0,
        "the stock server has pgread"
    );

    // pgreadv: the stock server does not advertise it, so one pgread per
    // range with the same answers
    let pgreads = relay.requests(RequestId::PGREAD);
    let ranges = [
        (1000u64, 10_000usize),
        (1000, 10_000),
        (5000, 9000),
        (size - 100, 4096),
        (size + 1, 10),
        (3, 0),
    ];
    let got = f.pgreadv(&ranges).await.unwrap();
    for (&(o, l), g) in ranges.iter().zip(&got) {
        assert_eq!(&g[..], slice(&content, o, l), "pgreadv range ({o}, {l})");
        assert_eq!(g, &f.pgread(o, l).await.unwrap(), "same as pgread");
    }
    assert_eq!(relay.requests(RequestId::PGREADV), 0);
    assert_eq!(
        relay.requests(RequestId::QUERY),
        1,
        "the extension was asked for"
    );
    assert_eq!(
        relay.requests(RequestId::PGREAD) - pgreads,
        5 + 5,
        "one pgread per non-empty range, then the comparison's"
    );
    assert!(f.pgreadv(&[]).await.unwrap().is_empty());
    f.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn pgwrite_lands_on_disk() {
    let Some((server, _, _dir)) = serve("unused", 0) else {
        return;
    };
    let client = Client::new();
    let w = open(&client, server.port, "/w/new.bin", OpenFlags::NEW.mkpath()).await;
    let data = Bytes::from(pattern(18_000_000));
    w.pgwrite(0, data.clone()).await.unwrap(); // three pieces
    let patch = Bytes::from(vec![0xAB; 10_000]);
    w.pgwrite(1000, patch.clone()).await.unwrap(); // unaligned, over 3 pages
    w.pgwrite(17_999_990, Bytes::from_static(b"tail past the end"))
        .await
        .unwrap();
    w.pgwrite(5, Bytes::new()).await.unwrap();
    w.close().await.unwrap();
    let mut want = data.to_vec();
    want[1000..11_000].copy_from_slice(&patch);
    want.truncate(17_999_990);
    want.extend_from_slice(b"tail past the end");
    assert!(on_disk(&server, "/w/new.bin") == want);

    // the first pgwrite's first page is spoiled on the way: the server
    // names it and it is sent again alone with kXR_pgRetry
    let relay = CorruptProxy::start(server.port, Spoil::FirstPgwrite).await;
    let w = open(&client, relay.port, "/w/retry.bin", OpenFlags::NEW).await;
    let data = Bytes::from(pattern(100_000));
    w.pgwrite(0, data.clone()).await.unwrap();
    w.close().await.unwrap();
    assert_eq!(relay.spoiled(), 1);
    assert_eq!(relay.pgwrite_retries(), 1);
    assert!(on_disk(&server, "/w/retry.bin") == data);
    // a page spoiled every time: the retries are bounded and the call fails
    let relay = CorruptProxy::start(server.port, Spoil::EveryPgwrite).await;
    let client = Client::with_config(Config {
        pgread_retries: 2,
        ..Config::default()
    });
    let w = open(&client, relay.port, "/w/bad.bin", OpenFlags::NEW).await;
    match w.pgwrite(4096, Bytes::from(pattern(10_000))).await {
        Err(Error::PageChecksum { offsets, attempts }) => {
            assert_eq!((offsets, attempts), (vec![4096], 2));
        }
        other => panic!("expected PageChecksum, got {other:?}"),
    }
    assert_eq!(relay.pgwrite_retries(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn async_read_and_seek() {
    const SIZE: usize = 3_000_123;
    let Some((server, content, _dir)) = serve("r.bin", SIZE) else {
        return;
    };
    let client = Client::new();
    let f = open(&client, server.port, "/r.bin", OpenFlags::READ).await;
    let mut r = FileReader::new(f).with_block_size(64 * 1024);

    let mut all = Vec::new();
    r.read_to_end(&mut all).await.unwrap();
    assert!(all == content, "the whole file in order");
    assert_eq!(r.position(), SIZE as u64);

    let mut buf = vec![0; 5000];
    assert_eq!(r.seek(SeekFrom::Start(1000)).await.unwrap(), 1000);
    r.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf[..], &content[1000..6000]);
    assert_eq!(r.seek(SeekFrom::Current(-500)).await.unwrap(), 5500);
    r.read_exact(&mut buf[..100]).await.unwrap();
    assert_eq!(&buf[..100], &content[5500..5600]);
    // across a block boundary, with a read larger than a block
    let mut big = vec![0; 200_000];
    r.seek(SeekFrom::Start(65_000)).await.unwrap();
    r.read_exact(&mut big).await.unwrap();
    assert!(big[..] == content[65_000..265_000]);

    assert_eq!(
        r.seek(SeekFrom::End(-100)).await.unwrap(),
        SIZE as u64 - 100
    );
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).await.unwrap();
    assert_eq!(&tail[..], &content[SIZE - 100..]);

    assert_eq!(r.seek(SeekFrom::End(10)).await.unwrap(), SIZE as u64 + 10);
    assert_eq!(r.read(&mut buf).await.unwrap(), 0, "past the end");
    let err = r.seek(SeekFrom::Current(-(SIZE as i64) - 11)).await;
    assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);

    // backwards in small steps, each checked
    for at in (0..SIZE as u64).rev().step_by(333_333) {
        r.seek(SeekFrom::Start(at)).await.unwrap();
        let n = r.read(&mut buf).await.unwrap();
        assert!(n > 0);
        assert_eq!(&buf[..n], slice(&content, at, n));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn pgread_refetches_a_spoiled_page() {
    let Some((server, content, _dir)) = serve("c.bin", 1_000_000) else {
        return;
    };
    let proxy = CorruptProxy::start(server.port, Spoil::FirstPgread).await;
    let client = Client::new();
    let f = open(&client, proxy.port, "/c.bin", OpenFlags::READ).await;
    let got = f.pgread(1000, 300_000).await.unwrap();
    assert!(got[..] == content[1000..301_000], "the data is right");
    assert_eq!(proxy.spoiled(), 1);
    assert_eq!(
        proxy.pgread_retries(),
        1,
        "one kXR_pgRetry for the bad page"
    );
    // nothing spoiled any more: no further retries
    let again = f.pgread(0, 1_000_000).await.unwrap();
    assert!(again[..] == content[..]);
    assert_eq!(proxy.pgread_retries(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn pgread_gives_up_on_a_page_that_stays_bad() {
    let Some((server, content, _dir)) = serve("c.bin", 100_000) else {
        return;
    };
    let proxy = CorruptProxy::start(server.port, Spoil::EveryPgread).await;
    let client = Client::with_config(Config {
        pgread_retries: 2,
        ..Config::default()
    });
    let f = open(&client, proxy.port, "/c.bin", OpenFlags::READ).await;
    match f.pgread(1000, 10_000).await {
        Err(Error::PageChecksum { offsets, attempts }) => {
            assert_eq!((offsets, attempts), (vec![1000], 2));
        }
        other => panic!("expected PageChecksum, got {other:?}"),
    }
    assert_eq!(proxy.pgread_retries(), 2);
    // plain reads are not touched by the proxy
    assert_eq!(
        &f.read_at(1000, 10_000).await.unwrap()[..],
        &content[1000..11_000]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_write_whose_answer_is_lost_is_redone_after_ending_the_old_session() {
    use xroot_testkit::cut_proxy::CutProxy;
    let Some((server, _, _dir)) = serve("other.bin", 1) else {
        return;
    };
    // the first write reaches the server, its answer never comes back and
    // the client's connection closes; the server keeps the session, with
    // the file open for writing
    let proxy = CutProxy::start(server.port, RequestId::WRITE).await;
    let client = Client::new();
    let f = open(&client, proxy.port, "/up.bin", OpenFlags::NEW).await;
    let data = Bytes::from(pattern(3 << 20));
    for at in [0, 1 << 20, 2 << 20] {
        f.write_at(at as u64, data.slice(at..at + (1 << 20)))
            .await
            .unwrap_or_else(|e| panic!("write at {at}: {e}\n{}", server.log_tail()));
    }
    f.close().await.unwrap();
    assert_eq!(proxy.cuts(), 1);
    assert!(on_disk(&server, "/up.bin") == data, "the bytes on disk");

    // the new connection ended the old session before it opened again
    let ids: Vec<RequestId> = proxy.requests(1).iter().map(Request::id).collect();
    let endsess = ids.iter().position(|&id| id == RequestId::ENDSESS);
    let reopen = ids.iter().position(|&id| id == RequestId::OPEN);
    assert!(
        matches!((endsess, reopen), (Some(e), Some(o)) if e < o),
        "{ids:?}"
    );
    assert_eq!(&ids[..2], [RequestId::PROTOCOL, RequestId::LOGIN]);
    // (the stock server answers kXR_wait "session still active" first:
    // the request is sent again after the wait, before the open)
    let ended: Vec<[u8; 16]> = proxy
        .requests(1)
        .iter()
        .filter_map(|r| match r {
            Request::Endsess(e) => Some(e.sessid),
            _ => None,
        })
        .collect();
    assert!(
        ended.iter().all(|&id| id == ended[0] && id != [0; 16]),
        "{ended:?}"
    );
}
