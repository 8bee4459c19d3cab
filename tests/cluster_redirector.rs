//! Our server as a cluster's redirector (issue 13): in front of a stock
//! manager `cmsd` (5.5.3), with a stock data server and ours behind it,
//! stock `xrdcp`/`xrdfs` through our redirector work as through the stock
//! manager `xrootd`; and against a scripted manager, the deferred answers
//! and the `tried=` hosts.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::process::{Command, Output};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use xroot::client::{Client, OpenFlags};
use xroot::proto::cms::{
    CmsDecoder, CmsRequest, CmsResponse, Login, LoginMode, SelectOpts, YError,
};
use xroot::server::cluster::Redirector;
use xroot::server::{ClusterConfig, Config, LocalFs, Server};

use xroot_testkit::cluster::Cluster;

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect()
}

fn run(cmd: &mut Command) -> Output {
    cmd.env("XRD_REQUESTTIMEOUT", "60")
        .env("XRD_CONNECTIONRETRY", "1")
        .output()
        .unwrap()
}

/// `xrdfs HOST ARGS...`: exit success and stdout.
fn xrdfs(port: u16, args: &[&str]) -> (bool, String) {
    let out = run(Command::new("xrdfs")
        .arg(format!("127.0.0.1:{port}"))
        .args(args));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn stock_clients_through_our_redirector_as_through_the_stock_manager() {
    let Some(cluster) = Cluster::start(1, |_, dir| {
        std::fs::write(dir.join("stock.dat"), pattern(300_000, 1)).unwrap();
    }) else {
        return;
    };
    let cms = format!("127.0.0.1:{}", cluster.cms_port);
    // our data server beside the stock one
    let ours = tempfile::tempdir().unwrap();
    std::fs::write(ours.path().join("ours.dat"), pattern(400_000, 2)).unwrap();
    let node = Server::bind(
        "127.0.0.1:0",
        LocalFs::new(ours.path()).unwrap(),
        Config {
            cluster: Some(ClusterConfig::data_server([cms.clone()])),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    let node_port = node.local_addr().port();
    tokio::spawn(node.serve());
    // and a read-only member holding a copy of a file the stock data
    // server also holds (issue 28, item 2)
    std::fs::write(cluster.servers[0].data.join("shared.dat"), b"rw copy").unwrap();
    let ro = tempfile::tempdir().unwrap();
    std::fs::write(ro.path().join("shared.dat"), b"r/o copy").unwrap();
    let ro_node = Server::bind(
        "127.0.0.1:0",
        LocalFs::new(ro.path()).unwrap(),
        Config {
            cluster: Some(ClusterConfig {
                paths: vec!["r /".into()],
                ..ClusterConfig::data_server([cms.clone()])
            }),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    tokio::spawn(ro_node.serve());
    cluster.wait_logins(3);

    // our redirector in front of the same manager cmsd
    let redirector = Redirector::start(&ClusterConfig::data_server([cms]));
    let server = Server::bind("127.0.0.1:0", redirector.clone(), Config::default())
        .await
        .unwrap();
    let rdr = server.local_addr().port();
    tokio::spawn(server.serve());
    for _ in 0..200 {
        if redirector.ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        redirector.ready(),
        "logged into the manager cmsd: {}",
        cluster.logs()
    );

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    tokio::task::block_in_place(|| {
        for (name, want) in [
            ("stock.dat", pattern(300_000, 1)),
            ("ours.dat", pattern(400_000, 2)),
        ] {
            for port in [rdr, cluster.port] {
                let got = run(Command::new("xrdcp")
                    .args(["-f", "-s", &format!("root://127.0.0.1:{port}//{name}")])
                    .arg(&out));
                assert!(got.status.success(), "xrdcp {name} via {port}: {got:?}");
                assert_eq!(std::fs::read(&out).unwrap(), want, "{name} via {port}");
            }
        }

        // stat, locate, ls, a missing file: the same answers both ways
        for port in [rdr, cluster.port] {
            let (ok, text) = xrdfs(port, &["stat", "/ours.dat"]);
            assert!(
                ok && text.contains("Size:   400000"),
                "stat via {port}: {text}"
            );
            let (ok, text) = xrdfs(port, &["locate", "/ours.dat"]);
            assert!(
                ok && text.contains(&format!(":{node_port}")),
                "locate via {port}: {text}"
            );
        }
        let missing: Vec<_> = [rdr, cluster.port]
            .iter()
            .map(|&port| xrdfs(port, &["stat", "/missing.dat"]))
            .collect();
        assert!(missing.iter().all(|(ok, _)| !ok));
        assert_eq!(missing[0].1, missing[1].1, "the same error both ways");

        // a new file through our redirector lands on one node; rm through
        // it removes it
        let src = tmp.path().join("src");
        std::fs::write(&src, pattern(100_000, 3)).unwrap();
        let put = run(Command::new("xrdcp")
            .arg("-s")
            .arg(&src)
            .arg(format!("root://127.0.0.1:{rdr}//new.dat")));
        assert!(put.status.success(), "{put:?}");
        let dirs = [ours.path(), cluster.servers[0].data.as_path()];
        let landed: Vec<_> = dirs
            .iter()
            .filter_map(|d| std::fs::read(d.join("new.dat")).ok())
            .collect();
        assert_eq!(landed, vec![pattern(100_000, 3)]);
        let (ok, text) = xrdfs(rdr, &["rm", "/new.dat"]);
        assert!(ok, "rm: {text}");
        assert!(dirs.iter().all(|d| !d.join("new.dat").exists()));

        // rm of a file a read-only member also holds: the manager's
        // kYR_RWConflict, which the stock manager answers with 3018
        // (kXR_ItExists, through EEXIST); ours said 3003 (kXR_FileLocked)
        let refused: Vec<_> = [rdr, cluster.port]
            .iter()
            .map(|&port| xrdfs(port, &["rm", "/shared.dat"]))
            .collect();
        assert!(refused.iter().all(|(ok, _)| !ok), "{refused:?}");
        assert!(refused[1].1.contains("[3018]"), "stock: {}", refused[1].1);
        assert_eq!(refused[0].1, refused[1].1, "the same error both ways");
        assert!(cluster.servers[0].data.join("shared.dat").exists());

        // the same role from the command line: serve --role manager
        let child = Command::new(xroot_testkit::example::example_bin("serve"))
            .args(["--port", "0", "--role", "manager", "--manager"])
            .arg(format!("127.0.0.1:{}", cluster.cms_port))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let example = xroot_testkit::ours::ServeProcess::listening(child);
        let got = run(Command::new("xrdcp")
            .args(["-f", "-s", &format!("root://{}//ours.dat", example.addr)])
            .arg(&out));
        assert!(
            got.status.success(),
            "xrdcp via serve --role manager: {got:?}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), pattern(400_000, 2));
    });
}

/// A scripted manager cmsd: takes the director login, then answers each
/// `select` as `script` says.
async fn scripted_manager(
    listener: TcpListener,
    selects: tokio::sync::mpsc::UnboundedSender<xroot::proto::cms::Select>,
    answers: Vec<Vec<(bool, CmsResponse)>>,
) {
    let (mut s, _) = listener.accept().await.unwrap();
    let mut buf = BytesMut::new();
    let mut dec = CmsDecoder::new();
    let mut answers = answers.into_iter();
    loop {
        let frame = loop {
            if let Some(f) = dec.decode(&mut buf).unwrap() {
                break f;
            }
            if s.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                return;
            }
        };
        let mut out = BytesMut::new();
        match CmsRequest::decode(&frame).unwrap() {
            CmsRequest::Login(l) => {
                assert!(l.mode.contains(LoginMode::DIRECTOR));
                CmsRequest::Login(Login::new(LoginMode::EMPTY))
                    .encode(0, &mut out)
                    .unwrap();
            }
            CmsRequest::Select(sel) => {
                selects.send(sel).unwrap();
                for (asynchronous, answer) in answers.next().unwrap() {
                    // a deferred answer comes with the id its waitresp gave
                    let id = if asynchronous {
                        900
                    } else {
                        frame.header.streamid
                    };
                    answer.encode(id, asynchronous, &mut out).unwrap();
                }
            }
            other => panic!("unexpected {other:?}"),
        }
        s.write_all(&out).await.unwrap();
    }
}

#[tokio::test]
async fn deferred_answers_errors_and_tried_hosts() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cms = listener.local_addr().unwrap().to_string();
    let (tx, mut selects) = tokio::sync::mpsc::unbounded_channel();
    // the "data server" the manager sends clients to
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.dat"), b"payload").unwrap();
    let data = xroot_testkit::ours::serve(LocalFs::new(dir.path()).unwrap()).await;
    let redirect = CmsResponse::Redirect {
        port: data.port().into(),
        host: Bytes::from("127.0.0.1"),
    };
    tokio::spawn(scripted_manager(
        listener,
        tx,
        vec![
            // deferred, then the redirect
            vec![
                (false, CmsResponse::WaitResp(900)),
                (true, redirect.clone()),
            ],
            // an error
            vec![(
                false,
                CmsResponse::Error {
                    code: YError::ENOENT,
                    message: Bytes::from("No servers have the file"),
                },
            )],
            // a retry naming a tried host, then the redirect
            vec![(false, redirect)],
        ],
    ));
    let redirector = Redirector::start(&ClusterConfig::data_server([cms]));
    let addr = xroot_testkit::ours::serve_with(redirector.clone(), Config::default()).await;
    while !redirector.ready() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client = Client::new();
    let f = client
        .open(&format!("root://{addr}//f.dat"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(&f.read_at(0, 100).await.unwrap()[..], b"payload");
    let sel = selects.recv().await.unwrap();
    assert_eq!(&sel.path[..], b"/f.dat");
    assert!(sel.opts.contains(SelectOpts::READ));

    let e = client
        .open(&format!("root://{addr}//nope.dat"), OpenFlags::READ)
        .await
        .unwrap_err();
    assert_eq!(
        e.server_code(),
        Some(xroot::proto::ErrorCode::NOT_FOUND),
        "{e}"
    );
    assert!(selects.recv().await.is_some());

    client
        .open(
            &format!("root://{addr}//f.dat?tried=badhost&triedrc=ioerr"),
            OpenFlags::NEW,
        )
        .await
        .ok();
    let sel = selects.recv().await.unwrap();
    assert_eq!(sel.avoid.as_deref(), Some(&b"badhost"[..]));
    assert!(sel
        .opts
        .contains(SelectOpts::TRY_IOER | SelectOpts::WRITE | SelectOpts::CREATE));
}
