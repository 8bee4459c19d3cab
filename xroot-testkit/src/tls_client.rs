//! Our client over TLS: a client trusting a CA directory, and one round of
//! reads, writes, stat and dirlist checked against the data on disk.

use std::path::Path;

use bytes::Bytes;
use xroot_client::tls::{ClientTls, TrustStore};
use xroot_client::{Client, Config, OpenFlags};

/// `len` bytes of the test pattern these tests write and read.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 % 251) as u8).collect()
}

/// A client trusting `ca_dir`, with `substreams` streams per channel and
/// plain data streams when `no_data`.
pub fn client(ca_dir: &Path, substreams: usize, no_data: bool) -> Client {
    let trust = TrustStore::from_ca_dir(ca_dir).unwrap();
    Client::with_config(Config {
        substreams,
        tls_no_data: no_data,
        ..Config::default().with_tls(ClientTls::new(trust).unwrap())
    })
}

/// Reads `f.bin` whole and in 24 concurrent pieces of 40 000 bytes,
/// writes `out/<tag>.bin` (`write_len` pattern bytes, then `tail`), stats
/// and lists `/sub` (holding `a` and `b`) over `base`; checks against
/// `content` and the disk under `data`.
pub async fn read_write_stat_list(
    client: &Client,
    base: &str,
    tag: &str,
    content: &[u8],
    data: &Path,
    write_len: usize,
) {
    let fs = client.fs(base).unwrap();
    assert_eq!(fs.stat("/f.bin").await.unwrap().size, content.len() as u64);
    let mut names: Vec<String> = fs
        .dirlist("/sub", true)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"], "{tag}");

    let f = client
        .open(&format!("{base}//f.bin"), OpenFlags::READ)
        .await
        .unwrap();
    let whole = f.read_at(0, content.len()).await.unwrap();
    assert!(whole[..] == content[..], "{tag}: whole read differs");
    // many reads at once, over the substreams when there are some
    let reads = (0..24u64).map(|i| f.read_at(i * 40_000, 40_000));
    for (i, r) in futures::future::join_all(reads)
        .await
        .into_iter()
        .enumerate()
    {
        let at = i * 40_000;
        assert!(
            r.unwrap()[..] == content[at..at + 40_000],
            "{tag}: read {i} differs"
        );
    }
    f.close().await.unwrap();

    let out = format!("out/{tag}.bin");
    let w = client
        .open(&format!("{base}//{out}"), OpenFlags::NEW.mkpath())
        .await
        .unwrap();
    let body = Bytes::from(pattern(write_len));
    w.write_at(0, body.clone()).await.unwrap();
    w.write_at(write_len as u64, Bytes::from_static(b"tail"))
        .await
        .unwrap();
    w.close().await.unwrap();
    let on_disk = std::fs::read(data.join(&out)).unwrap();
    assert_eq!(on_disk.len(), write_len + 4, "{tag}");
    assert!(on_disk[..write_len] == body[..] && &on_disk[write_len..] == b"tail");
}
