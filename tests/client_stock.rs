//! xroot-client against a live stock xrootd 5.5.3 data server: every call
//! checked against the files on disk.

use bytes::Bytes;
use xroot::client::{Client, OpenFlags};
use xroot_testkit::stock::StockServer;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn open_read_write_stat_close() {
    let data = tempfile::tempdir().unwrap();
    let content = pattern(300_000);
    std::fs::write(data.path().join("big.bin"), &content).unwrap();
    let Some(server) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let base = format!("root://127.0.0.1:{}", server.port);
    let client = Client::new();

    let fs = client.fs(&base).unwrap();
    let st = fs.stat("/big.bin").await.unwrap();
    assert_eq!(st.size, 300_000);
    let err = fs.stat("/missing").await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);

    let f = client
        .open(&format!("{base}//big.bin"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(f.cached_stat().unwrap().size, 300_000);
    let head = f.read_at(0, 1000).await.unwrap();
    assert_eq!(&head[..], &content[..1000]);
    let tail = f.read_at(299_500, 4096).await.unwrap();
    assert_eq!(&tail[..], &content[299_500..], "short read at EOF");
    // many reads in flight on one channel at once
    let reads = (0..32u64).map(|i| f.read_at(i * 9000, 9000));
    let results = futures::future::join_all(reads).await;
    for (i, r) in results.into_iter().enumerate() {
        let at = i * 9000;
        assert_eq!(&r.unwrap()[..], &content[at..at + 9000]);
    }
    assert_eq!(f.stat().await.unwrap().size, 300_000);
    f.close().await.unwrap();
    assert!(f.close().await.is_err(), "second close");

    let w = client
        .open(&format!("{base}//out/new.bin"), OpenFlags::NEW.mkpath())
        .await
        .unwrap();
    w.write_at(0, Bytes::from_static(b"hello ")).await.unwrap();
    w.write_at(6, Bytes::from_static(b"world")).await.unwrap();
    w.sync().await.unwrap();
    w.truncate(8).await.unwrap();
    w.close().await.unwrap();
    assert_eq!(
        std::fs::read(server.data.join("out/new.bin")).unwrap(),
        b"hello wo"
    );

    assert_eq!(client.channels().len(), 1, "one channel for one key");
    let stats = client.channels()[0].stats();
    assert!(stats.in_flight_peak >= 2, "requests overlapped: {stats:?}");
}

#[tokio::test]
async fn a_tls_url_without_tls_configured_is_refused_not_sent_in_plain_text() {
    // nothing listens on this port: the refusal must come before any connect
    let client = Client::with_config(xroot::client::Config::default().without_tls());
    let err = client
        .open("roots://127.0.0.1:9//f", OpenFlags::READ)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            xroot::client::Error::Tls {
                cause: xroot::client::TlsCause::NotConfigured,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), std::io::ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("TLS"), "{err}");
}
