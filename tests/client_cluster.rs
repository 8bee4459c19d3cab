//! xroot-client against a stock cluster on loopback (xroot-testkit/src/cluster.rs):
//! a manager (xrootd + cmsd) and two data servers. Opens and stats at the
//! manager are redirected to the data server that holds the file, and the
//! bytes read there are those on its disk.

use std::future::Future;
use std::time::Duration;

use xroot::client::{Client, OpenFlags};
use xroot_testkit::cluster::Cluster;

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i + seed) * 7 % 251) as u8).collect()
}

/// Awaits `f`, failing the test if it takes more than 60 s (a hang).
async fn guard<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("hang: no answer within 60 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn open_at_the_manager_is_redirected_to_the_data_server_holding_the_file() {
    // ds1 holds /one.bin, ds2 holds /two.bin
    let files = [("one.bin", 1, 300_000), ("two.bin", 2, 70_000)];
    let Some(cluster) = Cluster::start(2, |i, dir| {
        let (name, seed, len) = files[i];
        std::fs::write(dir.join(name), pattern(seed, len)).unwrap();
    }) else {
        return;
    };
    let client = Client::new();

    for (i, (name, seed, len)) in files.into_iter().enumerate() {
        let url = cluster.url(&format!("/{name}"));
        let f = guard(client.open(&url, OpenFlags::READ))
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}\n{}", cluster.logs()));
        let at = f.server_url().unwrap();
        assert_eq!(at.port, cluster.servers[i].port, "{name} is on ds{}", i + 1);
        assert_eq!(f.cached_stat().unwrap().size, len as u64);
        let disk = std::fs::read(cluster.servers[i].data.join(name)).unwrap();
        assert_eq!(disk, pattern(seed, len));
        let all = guard(f.read_at(0, len + 100)).await.unwrap();
        assert_eq!(&all[..], &disk[..], "whole file, short read at EOF");
        let mid = guard(f.read_at(12_345, 4096)).await.unwrap();
        assert_eq!(&mid[..], &disk[12_345..12_345 + 4096]);
        guard(f.close()).await.unwrap();

        // a stat at the manager is redirected too
        let fs = client.fs(&cluster.url("/")).unwrap();
        let st = guard(fs.stat(&format!("/{name}"))).await.unwrap();
        assert_eq!(st.size, len as u64);
    }
    // a file on no data server: the manager makes the client wait, then
    // says it is not there
    let err = guard(client.open(&cluster.url("/none.bin"), OpenFlags::READ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err:?}");

    // one channel to the manager and one to each data server
    let mut ports: Vec<u16> = client.channels().iter().map(|c| c.key().port).collect();
    ports.sort();
    let mut want = vec![
        cluster.port,
        cluster.servers[0].port,
        cluster.servers[1].port,
    ];
    want.sort();
    assert_eq!(ports, want);
}
