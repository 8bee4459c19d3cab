//! Our client against our server over TLS (each side was tested against the
//! stock peer only): every requirement level, `roots://` and `root://`,
//! with data substreams (TLS, or plain with `tls_no_data`), reading,
//! writing, stating and listing, bytes compared with the disk.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;
use std::sync::Arc;

use xroot::server::{
    Config, LocalFs, Server, ServerTls, ServerTlsFiles, TlsConfig, TlsRequirement,
};
use xroot_testkit::pki::TestPki;
use xroot_testkit::tls_client::{client, pattern, read_write_stat_list};

const SIZE: usize = 1_000_000;

/// Our server on `data` with the PKI's host certificate at `level`.
async fn serve(pki: &TestPki, data: &Path, level: TlsRequirement) -> std::net::SocketAddr {
    let files = ServerTlsFiles::new(&pki.host_cert, &pki.host_key).with_ca_dir(&pki.ca_dir);
    let config = Config {
        tls: Some(TlsConfig {
            server: Arc::new(ServerTls::load(files).unwrap()),
            requirement: level,
        }),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(data).unwrap(), config)
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

fn data_dir(content: &[u8]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f.bin"), content).unwrap();
    std::fs::create_dir_all(d.path().join("sub")).unwrap();
    std::fs::write(d.path().join("sub/a"), b"a").unwrap();
    std::fs::write(d.path().join("sub/b"), b"b").unwrap();
    d
}

const LEVELS: [TlsRequirement; 5] = [
    TlsRequirement::Capable,
    TlsRequirement::Login,
    TlsRequirement::Session,
    TlsRequirement::Data,
    TlsRequirement::All,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn our_client_and_server_over_roots_at_every_level() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    for level in LEVELS {
        let data = data_dir(&content);
        let addr = serve(&pki, data.path(), level).await;
        for (substreams, no_data) in [(1, false), (3, false), (2, true)] {
            let client = client(&pki.ca_dir, substreams, no_data);
            let tag = format!("roots-{level:?}-{substreams}-{no_data}");
            let base = format!("roots://localhost:{}", addr.port());
            read_write_stat_list(&client, &base, &tag, &content, data.path(), 300_000).await;
            let ch = &client.channels()[0];
            let info = ch.server_info().unwrap();
            assert!(info.tls, "{tag}: {info:?}");
            let subs = ch.substreams();
            // a server requiring TLS for data gets TLS substreams anyway
            let data_tls = !no_data || matches!(level, TlsRequirement::Data | TlsRequirement::All);
            assert!(
                subs.iter().all(|&(_, tls)| tls == data_tls),
                "{tag}: {subs:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn our_client_and_server_over_root_at_every_level() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    for level in LEVELS {
        let data = data_dir(&content);
        let addr = serve(&pki, data.path(), level).await;
        for substreams in [1, 3] {
            let client = client(&pki.ca_dir, substreams, false);
            let tag = format!("root-{level:?}-{substreams}");
            let base = format!("root://localhost:{}", addr.port());
            read_write_stat_list(&client, &base, &tag, &content, data.path(), 300_000).await;
            let ch = &client.channels()[0];
            let info = ch.server_info().unwrap();
            // capable: nothing asks for TLS, the channel stays plain
            let switched = level != TlsRequirement::Capable;
            assert_eq!(info.tls, switched, "{tag}: {info:?}");
            let subs = ch.substreams();
            // the data stream of a switched channel asks for TLS too
            let data_tls = switched;
            assert!(
                subs.iter().all(|&(_, tls)| tls == data_tls),
                "{tag}: {subs:?}"
            );
        }
    }
}

/// Whether the stock `xrdcp` is installed (required under `CI=true`).
fn xrdcp_available() -> bool {
    let found = std::process::Command::new("xrdcp")
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but the stock xrdcp is not installed"
        );
        eprintln!("skipping: the stock xrdcp is not installed");
    }
    found
}

/// Our cache (the `xcache` example, its own process, trusting the PKI's CA
/// through `X509_CERT_DIR`) in front of our server over `roots://`, itself
/// serving TLS (`--tls all`) to the stock `xrdcp` over `roots://`: the bytes
/// arrive whole, twice (the second time from the cache).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn our_cache_over_roots_serves_the_stock_xrdcp_over_roots() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    if !xrdcp_available() {
        return;
    }
    let pki = TestPki::new();
    let content = pattern(3_000_000);
    let data = data_dir(&content);
    let origin = serve(&pki, data.path(), TlsRequirement::All).await;
    let cache_dir = tempfile::tempdir().unwrap();
    let ca_dir = pki.ca_dir.display().to_string();
    let mut child = Command::new(xroot_testkit::example::example_bin("xcache"))
        .arg("--origin")
        .arg(format!("roots://localhost:{}", origin.port()))
        .args(["--port", "0", "--bind", "127.0.0.1", "--cache-dir"])
        .arg(cache_dir.path())
        .arg("--tls-cert")
        .arg(&pki.host_cert)
        .arg("--tls-key")
        .arg(&pki.host_key)
        .args(["--tls", "all", "--tls-ca-dir", &ca_dir])
        .env("X509_CERT_DIR", &ca_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn xcache");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: std::net::SocketAddr = line
        .trim()
        .strip_prefix("xcache listening on ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("xcache did not start: {line:?}"));
    let out = tempfile::tempdir().unwrap();
    for round in 0..2 {
        let dest = out.path().join(format!("copy{round}"));
        let mut cmd = Command::new("timeout");
        cmd.args(["300", "xrdcp", "-f", "-s"])
            .arg(format!("roots://localhost:{}//f.bin", addr.port()))
            .arg(&dest)
            .env("X509_CERT_DIR", &ca_dir);
        let res = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            res.status.success(),
            "xrdcp round {round}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        assert!(std::fs::read(&dest).unwrap() == content, "round {round}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
