//! The redirect stream (`r`) of our redirector (`serve --role manager
//! --monitor`) against the stock 5.5.3 manager's (`xrootd.monitor all
//! flush 1s window 1s dest redir user HOST:PORT`), both in front of the same
//! stock manager `cmsd` with one stock data server: the same stock `xrdfs`
//! and `xrdcp` requests through each give the same redirect records
//! (operation, target host, path, the user's dictionary id from the user
//! map), decoded by our codec and by the third-party `xrootdlib`. Where they
//! differ by design: our records carry the port the client was sent to
//! (the data server's), the stock's its own port.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;
use xroot_proto::monitor::header::code;
use xroot_proto::monitor::redir::{op, RedirEntry};
use xroot_proto::monitor::Packet;
use xroot_testkit::cluster::Cluster;
use xroot_testkit::collector::{xrootdlib_python, Collector};
use xroot_testkit::stock;
use xroot_testkit::tools::{run_ok, run_tool};
use xroot_tools::serve;

/// One redirect as a collector reads it, without what differs between
/// runs and servers (ids, times, ports).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    op: u8,
    host: String,
    path: String,
    /// The user's id is one a user map (`u`) of the same stream named.
    mapped_user: bool,
}

/// The redirects of a stream, sorted, and the ports they name. Every
/// packet must decode; every `r` packet starts and ends with a time mark.
fn redirects(packets: &[Vec<u8>]) -> (Vec<Seen>, Vec<u16>) {
    let mut users = HashSet::new();
    let mut seen = Vec::new();
    let mut ports = Vec::new();
    for p in packets {
        match Packet::decode(p).unwrap_or_else(|e| panic!("{e}: {p:02x?}")) {
            Packet::Map(m) if m.header.code == code::USER => {
                users.insert(m.dictid);
            }
            Packet::Redirect(r) => {
                assert!(matches!(r.entries.first(), Some(RedirEntry::Time { .. })));
                assert!(matches!(r.entries.last(), Some(RedirEntry::Time { .. })));
                for e in &r.entries {
                    if let RedirEntry::Redirect {
                        op,
                        local,
                        port,
                        user,
                        host,
                        path,
                    } = e
                    {
                        assert!(!local);
                        ports.push(*port);
                        seen.push(Seen {
                            op: *op,
                            host: String::from_utf8_lossy(host).into_owned(),
                            path: String::from_utf8_lossy(path).into_owned(),
                            mapped_user: users.contains(user),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    seen.sort();
    (seen, ports)
}

/// The requests, through the redirector on `port`: a download, a stat, an
/// upload over a file (`kXR_delete`) and one of a new file (`kXR_new`), a
/// mkdir and an rm; the paths it makes carry `tag` (a letter neither the host nor the other paths have).
async fn workload(port: u16, tag: char, scratch: &Path) {
    let url = format!("root://127.0.0.1:{port}");
    let host = format!("127.0.0.1:{port}");
    let to = scratch.join(format!("{tag}.dat"));
    let xrdcp = |from: String, to: String| async move {
        run_ok("xrdcp", &["-f".into(), "-s".into(), from, to]).await
    };
    xrdcp(format!("{url}//f.dat"), to.display().to_string()).await;
    let xrdfs = |args: &[&str]| {
        let mut all = vec![host.clone()];
        all.extend(args.iter().map(|a| a.to_string()));
        async move { run_ok("xrdfs", &all).await }
    };
    xrdfs(&["stat", "/f.dat"]).await;
    xrdcp(to.display().to_string(), format!("{url}//up{tag}.dat")).await;
    run_ok(
        "xrdcp",
        &[
            "-s".into(),
            to.display().to_string(),
            format!("{url}//new{tag}.dat"),
        ],
    )
    .await;
    xrdfs(&["mkdir", &format!("/d{tag}")]).await;
    xrdfs(&["rm", &format!("/up{tag}.dat")]).await;
}

/// Waits until `n` redirects were collected (at most 20 s).
async fn settle(c: &Collector, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while redirects(&c.packets()).0.len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_xrootd,
    ignore = "needs the stock xrootd (apt-get install xrootd-server)"
)]
#[cfg_attr(
    missing_xrootd_client,
    ignore = "needs the stock xrdcp and xrdfs (apt-get install xrootd-client)"
)]
async fn our_redirectors_redirect_stream_equals_the_stock_managers() {
    if !stock::xrootd_client_available() {
        return;
    }
    let stock_collector = Collector::start().await;
    let directive = format!(
        "xrootd.monitor all flush 1s window 1s dest redir user {}",
        stock_collector.addr
    );
    let Some(cluster) = Cluster::start_with(1, &[&directive], |_, dir| {
        std::fs::write(dir.join("f.dat"), vec![7u8; 100_000]).unwrap();
    }) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    workload(cluster.port, 'x', scratch.path()).await;

    let our_collector = Collector::start().await;
    let dest = our_collector.addr.to_string();
    let cms = format!("127.0.0.1:{}", cluster.cms_port);
    let cli = serve::Cli::try_parse_from([
        "serve",
        "--port",
        "0",
        "--role",
        "manager",
        "--manager",
        &cms,
        "--monitor",
        &dest,
        "--monitor-flush",
        "1",
    ])
    .unwrap();
    let server = serve::start_redirector(&cli, None).await.unwrap();
    let (port, handle) = (server.local_addr().port(), server.handle());
    tokio::spawn(server.serve());
    // the manager link logs in first
    let deadline = Instant::now() + Duration::from_secs(20);
    while !run_tool(
        "xrdfs",
        &[format!("127.0.0.1:{port}"), "stat".into(), "/f.dat".into()],
    )
    .await
    .status
    .success()
    {
        assert!(
            Instant::now() < deadline,
            "our redirector never became ready"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // that stat is one more redirect of ours
    workload(port, 'y', scratch.path()).await;

    settle(&stock_collector, 6).await;
    let (theirs, their_ports) = redirects(&stock_collector.packets());
    settle(&our_collector, 7).await;
    handle.shutdown();
    let (mut ours, our_ports) = redirects(&our_collector.packets());
    eprintln!("stock: {theirs:#?} ports {their_ports:?}\nours: {ours:#?} ports {our_ports:?}");
    // the readiness stat
    let first_stat = ours.iter().position(|s| s.op == op::STAT).unwrap();
    ours.remove(first_stat);
    // the paths carry the workload's tag: name them alike
    let alike = |v: Vec<Seen>, tag: &str| -> Vec<Seen> {
        let mut v: Vec<Seen> = v
            .into_iter()
            .map(|s| Seen {
                path: s.path.replace(tag, "T"),
                ..s
            })
            .collect();
        v.sort();
        v
    };
    let (theirs, ours) = (alike(theirs, "x"), alike(ours, "y"));
    assert!(theirs.len() >= 2, "{theirs:#?}");
    assert!(theirs.iter().all(|s| s.mapped_user), "{theirs:#?}");
    assert_eq!(ours, theirs);
    let ds = cluster.servers[0].port;
    assert!(our_ports.iter().all(|p| *p == ds), "{our_ports:?} not {ds}");

    xrootdlib_agrees(&stock_collector.packets(), &our_collector.packets()).await;
}

/// Both streams decoded by xrootdlib (`tests/monitor/xrootdlib_redirects.py`)
/// give the same redirects (ours with the readiness stat).
async fn xrootdlib_agrees(theirs: &[Vec<u8>], ours: &[Vec<u8>]) {
    let Some(python) = xrootdlib_python() else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitor/xrootdlib_redirects.py");
    let dir = tempfile::tempdir().unwrap();
    let mut views = Vec::new();
    for (name, packets, tag) in [("theirs", theirs, "x"), ("ours", ours, "y")] {
        let hex: String = packets
            .iter()
            .filter(|p| p.first() == Some(&code::REDIRECT))
            .map(|p| p.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
            .collect();
        let file = dir.path().join(name);
        std::fs::write(&file, hex).unwrap();
        let out = run_tool(
            &python.display().to_string(),
            &[script.display().to_string(), file.display().to_string()],
        )
        .await;
        assert!(
            out.status.success(),
            "xrootdlib_redirects.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `redirect OP HOST PATH user=B`: the path's tag named alike
        let view: String = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let mut f: Vec<String> = l.split(' ').map(String::from).collect();
                if let Some(path) = f.get_mut(3) {
                    *path = path.replace(tag, "T");
                }
                f.join(" ") + "\n"
            })
            .collect();
        views.push(view);
    }
    eprintln!(
        "xrootdlib, stock:\n{}\nxrootdlib, ours:\n{}",
        views[0], views[1]
    );
    let mut ours: Vec<&str> = views[1].lines().collect();
    let stat = ours
        .iter()
        .position(|l| l.starts_with("redirect STAT "))
        .unwrap();
    ours.remove(stat);
    let theirs: Vec<&str> = views[0].lines().collect();
    assert!(theirs.len() >= 2, "{theirs:?}");
    assert_eq!(ours, theirs);
}
