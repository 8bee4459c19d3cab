//! A vector read of exactly 2 GiB with its element headers (1024 elements
//! of 2,097,136 bytes), which a client that fills `readv_iov_max` ×
//! `readv_ior_max` sends (xrootd#2614): the stock Python client gets it
//! whole from our server and through our cache; one byte more is refused
//! with the reference's answer.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;

use xroot::cache::origin::RemoteOrigin;
use xroot::cache::{CacheConfig, CacheFs, Store};
use xroot::client::Client;
use xroot::proto::request::Readv;
use xroot::proto::{ErrorCode, ReadListEntry};
use xroot::server::LocalFs;

use xroot_testkit::ours::serve;
use xroot_testkit::raw::Raw;
use xroot_testkit::stock::stock_python_available;
use xroot_testkit::tools::run_ok;

const ELEMENT: u64 = 2_097_136;

/// Vector-reads the 1024 maximal elements of `URL/PATH` and prints the
/// status and the bytes read, or the first element that is not its index
/// followed by zeros (the data itself is 2 GiB).
const PYTHON: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, path = sys.argv[1:3]
f = client.File()
st, _ = f.open(url + "/" + path, OpenFlags.READ)
assert st.ok, st
chunks = [(i * 2097136, 2097136) for i in range(1024)]
st, v = f.vector_read(chunks)
if not st.ok:
    print("err %d %d %s" % (st.code, st.errno, st.message))
else:
    n, bad = 0, None
    for i, c in enumerate(v.chunks):
        b = c.buffer
        n += len(b)
        if bad is None and (b[:8] != i.to_bytes(8, "big") or b[8:].count(0) != len(b) - 8):
            bad = i
    print("ok %d" % n if bad is None else "bad element %d" % bad)
f.close()
"#;

/// A sparse file of 1024 elements, each starting with its index (so that
/// a misplaced element shows) and zeros after.
fn file(dir: &std::path::Path) {
    let f = std::fs::File::create(dir.join("max.bin")).unwrap();
    f.set_len(1024 * ELEMENT).unwrap();
    for i in 0..1024u64 {
        f.write_all_at(&i.to_be_bytes(), i * ELEMENT).unwrap();
    }
}

async fn python_readv(addr: SocketAddr) -> String {
    let args: Vec<String> = ["-c", PYTHON, &format!("root://{addr}/"), "/max.bin"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run_ok("/usr/bin/python3", &args).await;
    String::from_utf8_lossy(&out).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
async fn a_readv_of_exactly_2_gib_is_served_directly_and_through_the_cache() {
    if !stock_python_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    file(dir.path());
    let want = format!("ok {}", 1024 * ELEMENT);
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    assert_eq!(python_readv(ours).await, want, "from our server");

    let cache_dir = tempfile::tempdir().unwrap();
    let remote = RemoteOrigin::new(Client::new(), &format!("root://{ours}")).unwrap();
    let store = Store::open(cache_dir.path()).unwrap();
    let cache = serve(CacheFs::new(remote, store, CacheConfig::default())).await;
    assert_eq!(python_readv(cache).await, want, "through our cache");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    file(dir.path());
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    let (mut r, _) = Raw::login(ours).await;
    let fh = r.open("/max.bin").await;
    let mut list: Vec<ReadListEntry> = (0..1024)
        .map(|i| ReadListEntry {
            fhandle: fh,
            rlen: ELEMENT as i32,
            offset: i * ELEMENT as i64,
        })
        .collect();
    list[1023].rlen += 1;
    let readv = Readv {
        list,
        ..Default::default()
    };
    r.send(3, readv).await;
    assert_eq!(
        r.expect_error(ErrorCode::NO_MEMORY).await,
        "Single readv transfer is too large"
    );
}
