//! Our server as a data server of a cluster (issue 13): against a scripted
//! manager that sends what a stock one does and worse, and against a stock
//! manager (`xrootd` + `cmsd`, 5.5.3) beside a stock data server, with stock
//! clients going through the manager.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xroot::client::{Client, OpenFlags};
use xroot::proto::cms::{CmsDecoder, CmsFrame, CmsRequest, LoginMode, RrCode, State};
use xroot::server::{ClusterConfig, Config, LocalFs, Server};

use xroot_testkit::cluster::Cluster;

/// A manager's end of one node link, scripted by the test.
struct FakeManager {
    stream: TcpStream,
    buf: BytesMut,
}

impl FakeManager {
    async fn accept(listener: &TcpListener) -> FakeManager {
        let (stream, _) = tokio::time::timeout(Duration::from_secs(20), listener.accept())
            .await
            .expect("the node connects")
            .unwrap();
        FakeManager {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// The next frame the node sends, within 10 s.
    async fn frame(&mut self) -> CmsFrame {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(f) = CmsDecoder::new().decode(&mut self.buf).unwrap() {
                    return f;
                }
                let n = self.stream.read_buf(&mut self.buf).await.unwrap();
                assert!(n > 0, "the node closed the link");
            }
        })
        .await
        .expect("a frame from the node")
    }

    async fn request(&mut self) -> (u32, CmsRequest) {
        let f = self.frame().await;
        (f.header.streamid, CmsRequest::decode(&f).unwrap())
    }

    async fn send(&mut self, streamid: u32, req: CmsRequest) {
        let mut out = BytesMut::new();
        req.encode(streamid, &mut out).unwrap();
        self.stream.write_all(&out).await.unwrap();
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Reads the node's login and checks what it must say.
    async fn login(&mut self, data_port: u16) {
        let (id, req) = self.request().await;
        let CmsRequest::Login(l) = req else {
            panic!("first frame is not a login: {req:?}")
        };
        assert_eq!(id, 0);
        assert_eq!(l.version, 3);
        assert!(l.mode.contains(LoginMode::SERVER), "{:?}", l.mode);
        assert!(!l.mode.contains(LoginMode::SUSPEND));
        assert_eq!(l.data_port, data_port);
        assert_eq!(l.paths.as_deref(), Some(&b"w /"[..]));
        assert!(l.env_cgi.as_deref().unwrap().starts_with(b"myHN="));
    }
}

fn quick(managers: Vec<String>) -> ClusterConfig {
    ClusterConfig {
        reconnect_min: Duration::from_millis(20),
        reconnect_max: Duration::from_millis(100),
        ..ClusterConfig::data_server(managers)
    }
}

#[tokio::test]
async fn a_node_answers_a_manager_and_survives_a_hostile_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.dat"), b"data").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let manager = listener.local_addr().unwrap().to_string();
    let config = Config {
        cluster: Some(quick(vec![manager])),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(dir.path()).unwrap(), config)
        .await
        .unwrap();
    let (addr, handle) = (server.local_addr(), server.handle());
    let serving = tokio::spawn(server.serve());
    let port = addr.port();

    // hostile login replies: each ends the link, the node logs in again
    let hostile: [&[u8]; 5] = [
        // a login reply cut off mid-frame
        &[0, 0, 0, 0, 0, 0, 0, 40, 0x80, 0],
        // a datalen of 65535 and then nothing
        &[0, 0, 0, 0, 0, 0, 0xff, 0xff],
        // a login reply whose fields are of the wrong kinds
        &[0, 0, 0, 0, 0, 0, 0, 3, 0xa0, 0, 3],
        // an unknown code
        &[0, 0, 0, 9, 99, 0, 0, 0],
        // an error: refused
        &[
            0, 0, 0, 0, 1, 0, 0, 9, 0, 0, 0, 2, b'n', b'o', b'p', b'e', 0,
        ],
    ];
    for bytes in hostile {
        let mut m = FakeManager::accept(&listener).await;
        m.login(port).await;
        m.send_raw(bytes).await;
        drop(m);
    }

    // a good login; then requests, good and bad
    let mut m = FakeManager::accept(&listener).await;
    m.login(port).await;
    m.send(
        0,
        CmsRequest::Login(xroot::proto::cms::Login::new(LoginMode::EMPTY)),
    )
    .await;
    // an unknown code and a malformed state are ignored; the link stays
    m.send_raw(&[0, 0, 0, 1, 77, 0, 0, 2, 1, 2]).await;
    m.send_raw(&[0, 0, 0, 2, RrCode::STATE.0, 0, 0, 5, 0xa0, 0, 0, 0, 1])
        .await;
    m.send(0, CmsRequest::Ping).await;
    assert_eq!(m.request().await.1, CmsRequest::Pong);
    // state of a file here: have, with the streamid; of one not here: silence
    m.send(0x77, CmsRequest::State(State::new("/missing.dat")))
        .await;
    m.send(0x55, CmsRequest::State(State::new("/here.dat")))
        .await;
    let (id, have) = m.request().await;
    assert_eq!(id, 0x55);
    let CmsRequest::Have(have) = have else {
        panic!("{have:?}")
    };
    assert_eq!((&have.path[..], have.pending), (&b"/here.dat"[..], false));
    m.send(0, CmsRequest::Ping).await;
    assert_eq!(
        m.request().await.1,
        CmsRequest::Pong,
        "no answer for a missing file"
    );
    m.send(0, CmsRequest::Usage).await;
    assert!(
        matches!(m.request().await.1, CmsRequest::Load(l) if l.loads.iter().all(|&p| p <= 100))
    );
    m.send(0, CmsRequest::Space).await;
    let CmsRequest::Avail(avail) = m.request().await.1 else {
        panic!("no avail")
    };
    assert!(avail.free_mb > 0 && avail.util <= 100, "{avail:?}");

    // the server kept serving clients all along; files created and
    // removed here are announced
    let client = Client::new();
    let url = |p: &str| format!("root://{addr}/{p}");
    let f = client.open(&url("/new.dat"), OpenFlags::NEW).await.unwrap();
    f.write_at(0, Bytes::from_static(b"x")).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(
        m.request().await.1,
        CmsRequest::Have(xroot::proto::cms::Have::online("/new.dat"))
    );
    client.fs(&url("")).unwrap().rm("/new.dat").await.unwrap();
    assert_eq!(m.request().await.1, CmsRequest::Gone("/new.dat".into()));

    // disc: the node closes and logs in again
    m.send(0, CmsRequest::Disc).await;
    let mut m2 = FakeManager::accept(&listener).await;
    m2.login(port).await;
    m2.send(
        0,
        CmsRequest::Login(xroot::proto::cms::Login::new(LoginMode::EMPTY)),
    )
    .await;

    // a graceful shutdown suspends the node first
    handle.shutdown();
    let (_, req) = m2.request().await;
    assert_eq!(
        req,
        CmsRequest::Status(xroot::proto::cms::Status {
            modifier: xroot::proto::cms::codes::status::SUSPEND
        })
    );
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn try_sends_the_node_to_the_managers_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let first = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let second = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = Config {
        cluster: Some(quick(vec![first.local_addr().unwrap().to_string()])),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(dir.path()).unwrap(), config)
        .await
        .unwrap();
    let port = server.local_addr().port();
    tokio::spawn(server.serve());
    let mut m = FakeManager::accept(&first).await;
    m.login(port).await;
    let hosts = format!("{}", second.local_addr().unwrap());
    m.send(
        0,
        CmsRequest::Try(xroot::proto::cms::Try {
            hosts: hosts.into(),
            permanent: false,
        }),
    )
    .await;
    let mut m2 = FakeManager::accept(&second).await;
    m2.login(port).await;
}

/// `xrdcp` a file out of the cluster through its manager; its bytes.
fn xrdcp_from(url: &str, to: &Path) -> Result<Vec<u8>, String> {
    let out = Command::new("xrdcp")
        .args(["-f", "-s", url])
        .arg(to)
        .env("XRD_REQUESTTIMEOUT", "30")
        .env("XRD_CONNECTIONRETRY", "1")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(std::fs::read(to).unwrap())
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn our_data_server_beside_a_stock_one_behind_a_stock_manager() {
    let Some(cluster) = Cluster::start(1, |_, dir| {
        std::fs::write(dir.join("stock.dat"), pattern(300_000, 1)).unwrap();
    }) else {
        return;
    };
    let ours = tempfile::tempdir().unwrap();
    std::fs::write(ours.path().join("ours.dat"), pattern(500_000, 2)).unwrap();
    let start = |port: u16| {
        let dir = ours.path().to_path_buf();
        let cms = cluster.cms_port;
        async move {
            let config = Config {
                cluster: Some(ClusterConfig::data_server([format!("127.0.0.1:{cms}")])),
                ..Config::default()
            };
            Server::bind(("127.0.0.1", port), LocalFs::new(&dir).unwrap(), config)
                .await
                .unwrap()
        }
    };
    let server = start(0).await;
    let port = server.local_addr().port();
    let handle = server.handle();
    let serving = tokio::spawn(server.serve());
    cluster.wait_logins(2);

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let got = tokio::task::block_in_place(|| xrdcp_from(&cluster.url("/ours.dat"), &out));
    assert_eq!(got.unwrap(), pattern(500_000, 2), "{}", cluster.logs());
    let got = tokio::task::block_in_place(|| xrdcp_from(&cluster.url("/stock.dat"), &out));
    assert_eq!(got.unwrap(), pattern(300_000, 1));

    // xrdfs locate at the manager names our node for our file
    let located = Command::new("xrdfs")
        .args([
            &format!("127.0.0.1:{}", cluster.port),
            "locate",
            "/ours.dat",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&located.stdout);
    assert!(
        text.contains(&format!(":{port}")),
        "locate: {text} {}",
        String::from_utf8_lossy(&located.stderr)
    );

    // a new file written through the manager lands on a writable node whole
    let src = tmp.path().join("src");
    std::fs::write(&src, pattern(200_000, 3)).unwrap();
    let put = Command::new("xrdcp")
        .arg("-s")
        .arg(&src)
        .arg(cluster.url("/written.dat"))
        .output()
        .unwrap();
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let landed: Vec<Vec<u8>> = [ours.path(), cluster.servers[0].data.as_path()]
        .iter()
        .filter_map(|d| std::fs::read(d.join("written.dat")).ok())
        .collect();
    assert_eq!(landed, vec![pattern(200_000, 3)], "on exactly one node");

    // our node stopped: the manager stops sending clients to it, and the
    // client gets an error, not a hang
    handle.shutdown();
    serving.await.unwrap().unwrap();
    let failed = tokio::task::block_in_place(|| xrdcp_from(&cluster.url("/ours.dat"), &out));
    assert!(failed.is_err(), "read a file from a stopped node");

    // restarted on the same port: it logs in again and serves again
    let logins = cluster.logins();
    let server = start(port).await;
    tokio::spawn(server.serve());
    cluster.wait_logins(logins + 1);
    let got = tokio::task::block_in_place(|| xrdcp_from(&cluster.url("/ours.dat"), &out));
    assert_eq!(got.unwrap(), pattern(500_000, 2), "{}", cluster.logs());
}

/// `serve --port PORT --role server --manager CMS DIR` as its own process.
fn serve_node(port: u16, cms: u16, dir: &Path) -> xroot_testkit::ours::ServeProcess {
    let child = Command::new(xroot_testkit::example::example_bin("serve"))
        .args(["--port", &port.to_string(), "--role", "server", "--manager"])
        .arg(format!("127.0.0.1:{cms}"))
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn serve");
    xroot_testkit::ours::ServeProcess::listening(child)
}

#[test]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
fn a_killed_node_is_dropped_by_the_manager_and_rejoins_when_restarted() {
    let Some(cluster) = Cluster::start(0, |_, _| {}) else {
        return;
    };
    let ours = tempfile::tempdir().unwrap();
    std::fs::write(ours.path().join("f.dat"), pattern(100_000, 5)).unwrap();
    let node = serve_node(0, cluster.cms_port, ours.path());
    let port = node.addr.port();
    cluster.wait_logins(1);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let url = cluster.url("/f.dat");
    assert_eq!(xrdcp_from(&url, &out).unwrap(), pattern(100_000, 5));

    // kill -9: no suspend is sent; the manager sees the link drop and,
    // within its drop delay (20 s here), answers clients with an error
    drop(node);
    let failed = xrdcp_from(&url, &out);
    assert!(failed.is_err(), "read from a killed node");

    let node = serve_node(port, cluster.cms_port, ours.path());
    cluster.wait_logins(2);
    assert_eq!(
        xrdcp_from(&url, &out).unwrap(),
        pattern(100_000, 5),
        "{}",
        cluster.logs()
    );
    drop(node);
}

#[test]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
fn two_of_our_caches_share_the_clients_of_a_stock_manager() {
    let origin_dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..24).map(|i| format!("f{i}.dat")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(origin_dir.path().join(n), pattern(50_000 + i, i as u8)).unwrap();
    }
    let Some(origin) = xroot_testkit::stock::StockServer::start(origin_dir.path(), &[]) else {
        return;
    };
    let Some(cluster) = Cluster::start(0, |_, _| {}) else {
        return;
    };
    let origin_url = format!("root://127.0.0.1:{}", origin.port);
    let manager = format!("127.0.0.1:{}", cluster.cms_port);
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let caches: Vec<_> = dirs
        .iter()
        .map(|d| {
            xroot_testkit::our_cache::CacheProcess::start(
                &origin_url,
                d.path(),
                &["--role", "server", "--manager", &manager],
            )
        })
        .collect();
    cluster.wait_logins(2);

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for (i, n) in names.iter().enumerate() {
        let got = xrdcp_from(&cluster.url(&format!("/{n}")), &out);
        assert_eq!(got.unwrap(), pattern(50_000 + i, i as u8), "{n}");
    }
    // each cache served some of the files: it holds them now
    let held: Vec<usize> = dirs
        .iter()
        .map(|d| {
            names
                .iter()
                .filter(|n| {
                    walk(d.path())
                        .iter()
                        .any(|p| p.file_name().is_some_and(|f| f.to_string_lossy() == **n))
                })
                .count()
        })
        .collect();
    assert!(
        held.iter().all(|&h| h > 0) && held.iter().sum::<usize>() >= names.len(),
        "files held by each cache: {held:?}\n{}",
        cluster.logs()
    );
    drop(caches);
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn a_stock_cmsd_beside_our_server_monitors_it_and_the_cluster_reaches_it() {
    let Some(mut cluster) = Cluster::start(0, |_, _| {}) else {
        return;
    };
    let ours = tempfile::tempdir().unwrap();
    std::fs::write(ours.path().join("alt.dat"), pattern(70_000, 9)).unwrap();
    // the stock cmsd runs unprivileged and stats our files itself
    let mut perms = std::fs::metadata(ours.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(ours.path(), perms).unwrap();
    let server = Server::bind(
        "127.0.0.1:0",
        LocalFs::new(ours.path()).unwrap(),
        Config {
            // a short login deadline: the monitor connection must outlive it
            login_timeout: Duration::from_secs(2),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    let port = server.local_addr().port();
    let handle = server.handle();
    tokio::spawn(server.serve());
    cluster.spawn_extra(
        "cmsd",
        "alt",
        &format!(
            "all.role server\nall.export /\noss.localroot {}\ncms.altds xroot {port} monitor",
            ours.path().display()
        ),
    );
    tokio::task::block_in_place(|| cluster.wait_logins(1));
    // the cmsd's monitor link: a bare handshake and a login, then held
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while handle.stats().links.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the cmsd never connected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let got = tokio::task::block_in_place(|| xrdcp_from(&cluster.url("/alt.dat"), &out));
    assert_eq!(got.unwrap(), pattern(70_000, 9), "{}", cluster.logs());
    // past our login deadline the monitor link is still there, and the
    // cmsd did not suspend the node
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !handle.stats().links.is_empty(),
        "the monitor link was closed"
    );
    let alt_log =
        std::fs::read_to_string(cluster.state.path().join("logs/alt/cmsd.log")).unwrap_or_default();
    assert!(!alt_log.contains("suspend"), "{alt_log}");
}
