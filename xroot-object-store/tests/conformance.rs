//! object_store's own conformance cases (its `integration` module) against
//! `XrootStore`, over our server (`LocalFs`) and over the stock xrootd
//! 5.5.3, each on a fresh directory; and the cases object_store does not
//! cover that this store promises (suffix reads, `get_ranges` as vector
//! reads, both URL forms).

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use object_store::integration;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions};
use xroot_object_store::XrootStore;
use xroot_server::{Config, LocalFs, Server};
use xroot_testkit::{delay_proxy, pki, stock};

/// Our server on `dir`, on this runtime; its `root://` URL.
async fn ours(dir: &std::path::Path) -> String {
    let server = Server::bind("127.0.0.1:0", LocalFs::new(dir).unwrap(), Config::default())
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    format!("root://{addr}/")
}

/// A store on `url` reading through a cache in `cache`.
fn cached(url: &str, cache: &std::path::Path) -> XrootStore {
    let client = xroot_client::Client::new();
    XrootStore::with_cache(client, url, cache, xroot_cache::CacheConfig::default()).unwrap()
}

/// The conformance cases that apply to a store without versions, tags,
/// attributes or pagination.
async fn conformance(store: &XrootStore) {
    integration::put_get_delete_list(store).await;
    integration::get_opts(store).await;
    integration::put_opts(store, false).await;
    integration::list_uses_directories_correctly(store).await;
    integration::list_with_delimiter(store).await;
    integration::rename_and_copy(store).await;
    integration::copy_if_not_exists(store).await;
    integration::copy_rename_nonexistent_object(store).await;
    integration::stream_get(store).await;
    integration::multipart_out_of_order(store).await;
    integration::list_with_offset_exclusivity(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_store_conformance_over_our_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = XrootStore::new(&ours(dir.path()).await).unwrap();
    conformance(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn object_store_conformance_over_the_stock_server() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    let store = XrootStore::new(&format!("root://127.0.0.1:{}//", server.port)).unwrap();
    conformance(&store).await;
}

/// A client trusting the CA of `pki` (its hashed CA directory).
fn tls_client(pki: &pki::TestPki) -> xroot_client::Client {
    let trust = xroot_client::tls::TrustStore::from_ca_dir(&pki.ca_dir).unwrap();
    let tls = xroot_client::tls::ClientTls::new(trust).unwrap();
    xroot_client::Client::with_config(xroot_client::Config::default().with_tls(tls))
}

/// Our server on `dir` requiring TLS for everything, with the host
/// certificate of `pki`; its `roots://` URL.
async fn ours_over_tls(pki: &pki::TestPki, dir: &std::path::Path) -> String {
    use xroot_server::{ServerTls, ServerTlsFiles, TlsConfig, TlsRequirement};
    let files = ServerTlsFiles::new(&pki.host_cert, &pki.host_key).with_ca_dir(&pki.ca_dir);
    let config = Config {
        tls: Some(TlsConfig {
            server: Arc::new(ServerTls::load(files).unwrap()),
            requirement: TlsRequirement::All,
        }),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(dir).unwrap(), config)
        .await
        .unwrap();
    let url = format!("roots://localhost:{}/", server.local_addr().port());
    tokio::spawn(server.serve());
    url
}

/// The same cases over `roots://`: our server requiring TLS for
/// everything, with and without a cache directory; each on a fresh
/// directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn object_store_conformance_over_roots() {
    let pki = pki::TestPki::new();
    let dir = tempfile::tempdir().unwrap();
    let url = ours_over_tls(&pki, dir.path()).await;
    let store = XrootStore::with_client(tls_client(&pki), &url).unwrap();
    conformance(&store).await;
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let url = ours_over_tls(&pki, dir.path()).await;
    let cfg = xroot_cache::CacheConfig::default();
    let store = XrootStore::with_cache(tls_client(&pki), &url, cache.path(), cfg).unwrap();
    conformance(&store).await;
}

/// The same cases over `roots://` on the stock server with `xrd.tls` (TLS
/// from the start, as `roots://` asks), on a fresh directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn object_store_conformance_over_roots_on_the_stock_server() {
    let pki = pki::TestPki::new();
    let dir = tempfile::tempdir().unwrap();
    let key = pki::TestPki::stock_server_key(&pki.host_key);
    let lines = [
        format!("xrd.tls {} {}", pki.host_cert.display(), key.display()),
        format!("xrd.tlsca certdir {}", pki.ca_dir.display()),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let Some(stock) = stock::StockServer::start(dir.path(), &lines) else {
        return;
    };
    let url = format!("roots://localhost:{}//", stock.port);
    let store = XrootStore::with_client(tls_client(&pki), &url).unwrap();
    conformance(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suffix_reads_vector_reads_and_url_forms() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("base/sub")).unwrap();
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.path().join("base/sub/f.bin"), &data).unwrap();
    let url = ours(dir.path()).await;
    let stores: Vec<Arc<XrootStore>> = [format!("{url}/base"), format!("{url}base")]
        .iter()
        .map(|u| Arc::new(XrootStore::new(u).unwrap()))
        .collect();
    let path = Path::from("sub/f.bin");
    for store in &stores {
        // parquet reads its footer as a suffix
        let got = store
            .get_opts(
                &path,
                GetOptions {
                    range: Some(GetRange::Suffix(8)),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(got.range, data.len() as u64 - 8..data.len() as u64);
        assert_eq!(&got.bytes().await.unwrap()[..], &data[data.len() - 8..]);
        let got = store
            .get_opts(
                &path,
                GetOptions {
                    range: Some(GetRange::Offset(4_999_990)),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(&got.bytes().await.unwrap()[..], &data[4_999_990..]);
        // the whole file comes in several reads
        let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(whole, Bytes::from(data.clone()));
        // many ranges, one larger than a readv element, some empty
        let ranges = [
            0..10,
            3_000_000..5_000_000,
            7..7,
            100..4_500_000,
            4_999_999..5_000_000,
        ];
        let got = store.get_ranges(&path, &ranges).await.unwrap();
        for (r, g) in ranges.iter().zip(&got) {
            assert_eq!(&g[..], &data[r.start as usize..r.end as usize], "{r:?}");
        }
        // past the end: an error, not a short answer
        let past_end = [Range {
            start: 4_999_999,
            end: 5_000_001,
        }];
        assert!(store.get_ranges(&path, &past_end).await.is_err());
        let meta = store.head(&path).await.unwrap();
        assert_eq!((meta.size, meta.location), (5_000_000, path.clone()));
    }
    // a conditional create of an existing object is refused
    let e = stores[0]
        .put_opts(
            &path,
            Bytes::from_static(b"x").into(),
            PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::AlreadyExists { .. }),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("base/sub/f.bin")).unwrap(),
        data
    );
}

/// The files (names) the server holds in `dir`, temporary ones included.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Waits (at most 10 s) until `dir` holds exactly `want`.
async fn wait_for_names(dir: &std::path::Path, want: &[&str]) {
    for _ in 0..1000 {
        if names(dir) == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(names(dir), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_after_writes_and_what_the_store_refuses_or_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = XrootStore::new(&ours(dir.path()).await).unwrap();
    let path = Path::from("f.bin");
    let head4 = [Range { start: 0, end: 4 }];
    // one payload chunk larger than a write request: split on the wire
    let big: Vec<u8> = (0..20_000_000u32).map(|i| (i % 253) as u8).collect();
    store
        .put(&path, Bytes::from(big.clone()).into())
        .await
        .unwrap();
    assert_eq!(std::fs::read(dir.path().join("f.bin")).unwrap(), big);
    // a kept read handle does not outlive a write through the store
    let first = store.get_ranges(&path, &head4).await.unwrap();
    assert_eq!(&first[0][..], &big[..4]);
    let etag = store.head(&path).await.unwrap().e_tag;
    store
        .put(&path, Bytes::from(vec![7u8; big.len()]).into())
        .await
        .unwrap();
    let again = store.get_ranges(&path, &head4).await.unwrap();
    assert_eq!(&again[0][..], &[7u8; 4]);
    let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert!(whole.iter().all(|&b| b == 7));
    // same size, maybe the same second: still another ETag
    assert_ne!(store.head(&path).await.unwrap().e_tag, etag);
    store.delete(&path).await.unwrap();
    let gone = store.get_ranges(&path, &head4).await.unwrap_err();
    assert!(
        matches!(gone, object_store::Error::NotFound { .. }),
        "{gone}"
    );

    // a `?` would address another file: refused, nothing touched
    std::fs::write(dir.path().join("a"), b"keep").unwrap();
    let odd = Path::parse("a?b").unwrap();
    assert!(store
        .put(&odd, Bytes::from_static(b"x").into())
        .await
        .is_err());
    assert!(store.delete(&odd).await.is_err());
    assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"keep");
    // names no object path can hold are left out of listings
    std::fs::write(dir.path().join("q?r"), b"").unwrap();
    std::fs::write(dir.path().join("tab\tname"), b"").unwrap();
    let listed: Vec<String> = store
        .list(None)
        .map(|m| m.unwrap().location.to_string())
        .collect()
        .await;
    assert_eq!(listed, ["a"]);

    // an upload dropped unfinished leaves no file
    let mut upload = store.put_multipart(&Path::from("m.bin")).await.unwrap();
    upload
        .put_part(Bytes::from_static(b"part").into())
        .await
        .unwrap();
    drop(upload);
    wait_for_names(dir.path(), &["a", "q?r", "tab\tname"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_store_conformance_through_a_cache_directory() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = cached(&ours(dir.path()).await, cache.path());
    conformance(&store).await;
}

/// The same through a cache directory that trusts what it holds for an
/// hour (a cache below a client): what the store writes, renames or
/// deletes is read back at once, never the copy cached before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_store_conformance_through_a_trusting_cache_directory() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let url = ours(dir.path()).await;
    let client = xroot_client::Client::new();
    let config = xroot_cache::CacheConfig::below_client();
    let store = XrootStore::with_cache(client, &url, cache.path(), config).unwrap();
    conformance(&store).await;
    // a file read whole (so cached and confirmed), then replaced by the
    // store: the next read is of the new content
    let path = Path::from("again.bin");
    store
        .put(&path, Bytes::from(vec![1u8; 10_000]).into())
        .await
        .unwrap();
    let got = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(got, vec![1u8; 10_000]);
    store.flush_cache().await.unwrap();
    store
        .put(&path, Bytes::from(vec![2u8; 7_000]).into())
        .await
        .unwrap();
    let got = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(got, vec![2u8; 7_000]);
    let meta = store.head(&path).await.unwrap();
    assert_eq!(meta.size, 7_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_directory_serves_vector_reads_from_disk_and_survives_damage() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 13 % 241) as u8).collect();
    std::fs::write(dir.path().join("f.bin"), &data).unwrap();
    let store = cached(&ours(dir.path()).await, cache.path());
    let path = Path::from("f.bin");
    let ranges = [0..5000, 100_000..100_010, 2_999_000..3_000_000];
    let check = |got: &[Bytes]| {
        for (r, g) in ranges.iter().zip(got) {
            assert_eq!(&g[..], &data[r.start as usize..r.end as usize], "{r:?}");
        }
    };
    // cold: one server request for the vector read's missing blocks
    check(&store.get_ranges(&path, &ranges).await.unwrap());
    let cold = store.cache_stats().unwrap();
    assert_eq!(cold.origin_request_count, 1, "{cold:?}");
    assert!(cold.bytes_fetched >= 6010, "{cold:?}");
    // warm, once the fill is stored (until then a read takes the fill's
    // own data): nothing fetched, the bytes come from disk
    store.flush_cache().await.unwrap();
    check(&store.get_ranges(&path, &ranges).await.unwrap());
    let warm = store.cache_stats().unwrap();
    assert_eq!(warm.bytes_fetched, cold.bytes_fetched, "{warm:?}");
    assert!(warm.bytes_from_disk > cold.bytes_from_disk, "{warm:?}");
    let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(&whole[..], &data[..]);

    // damaged cached bytes fail their page crc32c and are fetched again
    let cached = cache.path().join("f.bin");
    let mut bytes = std::fs::read(&cached).unwrap();
    bytes[..5000].fill(0xee);
    std::fs::write(&cached, &bytes).unwrap();
    check(&store.get_ranges(&path, &ranges).await.unwrap());
    // a cache directory gone from under the store: reads go to the server
    drop(std::fs::remove_dir_all(cache.path()));
    std::fs::write(cache.path(), b"not a directory").unwrap();
    let other = Path::from("g.bin");
    std::fs::write(dir.path().join("g.bin"), &data).unwrap();
    check(&store.get_ranges(&other, &ranges).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_go_out_as_pgwrites_with_page_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let url = ours(dir.path()).await;
    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let relay = delay_proxy::DelayProxy::start(port, std::time::Duration::ZERO).await;
    let store = XrootStore::new(&format!("root://127.0.0.1:{}/", relay.port)).unwrap();
    let data: Vec<u8> = (0..10_000_000u32).map(|i| (i % 249) as u8).collect();
    store
        .put(&Path::from("f.bin"), Bytes::from(data.clone()).into())
        .await
        .unwrap();
    assert_eq!(std::fs::read(dir.path().join("f.bin")).unwrap(), data);
    let sent = relay.traffic();
    let count = |id| sent.count(id);
    // 10 MB in pieces of at most 8 MiB
    assert_eq!(count(xroot_proto::RequestId::PGWRITE), 2, "{sent:?}");
    assert_eq!(count(xroot_proto::RequestId::WRITE), 0, "{sent:?}");
}

/// The stock server shares one open file per path: a new open of a path
/// replaced by a rename while a handle on the old file is still open gets
/// the old file. A put therefore closes the read handle the store keeps
/// on its target before it returns, so that the next get reads what was
/// put.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_get_after_a_put_reads_the_new_object_from_the_stock_server() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = stock::StockServer::start(dir.path(), &[]) else {
        return;
    };
    let store = XrootStore::new(&format!("root://127.0.0.1:{}//", server.port)).unwrap();
    let path = Path::from("over/written.bin");
    for round in 0..5u8 {
        let data = Bytes::from(vec![round; 1000 + round as usize]);
        store.put(&path, data.clone().into()).await.unwrap();
        // read it twice: the second get shares the handle the first kept
        for _ in 0..2 {
            let got = store.get(&path).await.unwrap().bytes().await.unwrap();
            assert_eq!(got, data, "round {round}");
        }
    }
}
