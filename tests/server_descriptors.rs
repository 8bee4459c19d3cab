//! File descriptors of our `serve` (a process of its own, started under
//! `ulimit -n 48`): read-only opens of one file share a descriptor, and
//! once descriptors run out new connections are closed at once (not left
//! in the backlog) with one log line, while the sessions already open go
//! on; freed descriptors are used again.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use xroot::client::{Client, OpenFlags};
use xroot::proto::ClientHandshake;
use xroot_testkit::example::example_bin;
use xroot_testkit::ours::ServeProcess;
use xroot_testkit::raw::Raw;

/// The soft descriptor limit the server runs under.
const LIMIT: usize = 48;

/// `serve DIR` under `ulimit -n LIMIT`, its log in `log`.
fn start(dir: &Path, log: &Path) -> ServeProcess {
    let script = format!("ulimit -n {LIMIT} && exec \"$0\" --port 0 \"$1\" 2>\"$2\"");
    let child = Command::new("sh")
        .args(["-c", &script])
        .arg(example_bin("serve"))
        .arg(dir)
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    ServeProcess::listening(child)
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_are_shared_and_their_exhaustion_refuses_new_links() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("big"), vec![7u8; 1 << 20]).unwrap();
    let log = data.path().join("serve.log");
    let server = start(data.path(), &log);
    let (addr, pid) = (server.addr, server.pid());
    let url = format!("root://{addr}//big");

    // ten sessions with the file open: after the first, one socket each
    // and no file descriptor
    let mut files = Vec::new();
    let mut before = 0;
    for i in 0..10 {
        let client = Client::new();
        let f = client.open(&url, OpenFlags::READ).await.unwrap();
        assert_eq!(f.read_at(0, 10).await.unwrap().len(), 10);
        files.push((client, f));
        if i == 0 {
            before = descriptors(pid);
        }
    }
    assert_eq!(descriptors(pid), before + 9, "one shared file descriptor");

    // raw links until the descriptors run out: those past it are closed
    let started = Instant::now();
    let mut kept = Vec::new();
    let mut refused = 0;
    for _ in 0..2 * LIMIT {
        let mut r = Raw::connect(addr).await;
        let mut hello = BytesMut::new();
        ClientHandshake.encode(&mut hello);
        r.write(&hello).await;
        match r.next().await {
            Some(_) => kept.push(r),
            None => refused += 1,
        }
    }
    assert!(
        refused >= LIMIT / 2,
        "{refused} refused, {} kept",
        kept.len()
    );
    assert!(kept.len() < LIMIT, "{} links past the limit", kept.len());
    // the sessions already open go on
    for (_, f) in &files {
        assert_eq!(f.read_at(100, 1000).await.unwrap().len(), 1000);
    }
    // one log line per 10 s, not one per refusal
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("connections refused"))
        .count();
    let windows = started.elapsed().as_secs() / 10 + 1;
    assert!(
        (1..=windows as usize).contains(&lines),
        "{lines} log lines for {refused} refusals"
    );

    // descriptors freed: new links and opens work again
    drop(kept);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let client = Client::new();
        match client.open(&url, OpenFlags::READ).await {
            Ok(f) => {
                assert_eq!(f.read_at(0, 10).await.unwrap().len(), 10);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("no new session after the links closed: {e}"),
        }
    }
    drop(files);
}
