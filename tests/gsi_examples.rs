//! `gsi` through the examples, run as processes, with the stock 5.5.3 on
//! the other side (the test kit's throw-away CA and a proxy from the stock
//! `xrdgsiproxy`): the stock `xrdcp` and `xrdfs` read, write and list
//! through our `serve --auth gsi --gsi-cert --gsi-key --gsi-ca-dir
//! --gsi-gridmap`, bytes compared, and a client without a proxy is refused
//! unless a later protocol of `--auth` takes it; the same keys in a
//! `--config` file, whose `gsi-gridmap-required` refuses a DN the gridmap
//! does not name; our `xcache --origin-proxy` in front of a stock `gsi`
//! origin, read through by the stock `xrdcp` with its own proxy, cold and
//! warm, bytes compared; an `--origin-proxy` that is no proxy stops the
//! cache at start, naming the flag.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use xroot_testkit::example::example_bin;
use xroot_testkit::our_cache::{content, CacheProcess};
use xroot_testkit::ours::ServeProcess;
use xroot_testkit::pki::GsiPki;
use xroot_testkit::stock::{program_available, xrootd_client_available, StockServer};
use xroot_testkit::tools::{code, run_off_workers, stderr, stdout};

/// Whether the stock clients, `xrdgsiproxy` and `openssl` are there
/// (panics under `CI=true` when not).
fn clients_available() -> bool {
    xrootd_client_available()
        && program_available("xrdgsiproxy", &["-h"], "xrdgsiproxy is not installed")
        && program_available("openssl", &["version"], "openssl is not installed")
}

/// `--gsi-cert ... --gsi-key ... --gsi-ca-dir ... --gsi-gridmap ...` of
/// `pki`.
fn gsi_flags(pki: &GsiPki) -> Vec<String> {
    let p = &pki.pki;
    [
        ("--gsi-cert", &p.host_cert),
        ("--gsi-key", &p.host_key),
        ("--gsi-ca-dir", &p.ca_dir),
        ("--gsi-gridmap", &pki.gridmap),
    ]
    .iter()
    .flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()])
    .collect()
}

/// `serve --port 0 ARGS DIR` (the example's process).
fn serve(dir: &Path, args: &[String]) -> ServeProcess {
    ServeProcess::start_with(dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A stock tool with the PKI's client environment and `proxy`.
async fn stock(pki: &GsiPki, tool: &str, proxy: Option<&Path>, args: &[String]) -> Output {
    let mut cmd = pki.client_command(tool, proxy);
    cmd.args(args);
    run_off_workers(cmd).await
}

fn ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: exit {}\n{}{}",
        code(out),
        stdout(out),
        stderr(out)
    );
}

/// The stock xrdcp and xrdfs with a proxy against `serve --auth gsi`:
/// a download and an upload (bytes compared on both sides) and a listing;
/// without a proxy the stock xrdcp is refused (exit 52, "Auth failed"),
/// and with `--auth gsi,unix` it falls back to `unix` and reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn stock_clients_to_the_serve_example_with_gsi() {
    if !clients_available() {
        return;
    }
    let pki = GsiPki::new();
    let proxy = pki.xrdgsiproxy("proxy.pem", "1:00");
    let data = tempfile::tempdir().unwrap();
    let bytes = content(28, 3 << 20);
    std::fs::write(data.path().join("in.bin"), &bytes).unwrap();
    let mut args = vec!["--auth".to_string(), "gsi".into()];
    args.extend(gsi_flags(&pki));
    let server = serve(data.path(), &args);
    let url = format!("root://localhost:{}", server.addr.port());

    let down = pki.path("down.bin");
    let out = stock(
        &pki,
        "xrdcp",
        Some(&proxy),
        &[format!("{url}//in.bin"), down.display().to_string()],
    )
    .await;
    ok("xrdcp down", &out);
    assert!(
        std::fs::read(&down).unwrap() == bytes,
        "downloaded bytes differ"
    );
    let up = content(29, 1 << 20);
    let local = pki.path("up.bin");
    std::fs::write(&local, &up).unwrap();
    let out = stock(
        &pki,
        "xrdcp",
        Some(&proxy),
        &[local.display().to_string(), format!("{url}//up.bin")],
    )
    .await;
    ok("xrdcp up", &out);
    assert!(
        std::fs::read(data.path().join("up.bin")).unwrap() == up,
        "uploaded bytes differ"
    );
    let out = stock(
        &pki,
        "xrdfs",
        Some(&proxy),
        &[url.clone(), "ls".into(), "/".into()],
    )
    .await;
    ok("xrdfs ls", &out);
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        ["/in.bin", "/up.bin"]
    );

    // no proxy: gsi alone refuses the login
    let again = pki.path("again.bin");
    let out = stock(
        &pki,
        "xrdcp",
        None,
        &[format!("{url}//in.bin"), again.display().to_string()],
    )
    .await;
    assert_eq!(
        code(&out),
        52,
        "xrdcp without a proxy: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("Auth failed"), "{}", stderr(&out));
    assert!(!again.exists());
    drop(server);

    // gsi, then unix: the client without a proxy logs in with unix
    args[1] = "gsi,unix".into();
    let server = serve(data.path(), &args);
    let url = format!("root://localhost:{}", server.addr.port());
    let out = stock(
        &pki,
        "xrdcp",
        None,
        &[format!("{url}//in.bin"), again.display().to_string()],
    )
    .await;
    ok("xrdcp by unix", &out);
    assert!(
        std::fs::read(&again).unwrap() == bytes,
        "bytes read by unix differ"
    );
}

/// `serve --config FILE` with the gsi keys (`auth`, `gsi-cert`,
/// `gsi-key`, `gsi-ca-dir`, `gsi-gridmap`, `gsi-gridmap-required`): the
/// stock xrdcp with Alice's proxy reads (bytes compared); Bob, of the same
/// CA but not in the gridmap, is refused with his certificate (without
/// `gsi-gridmap-required` he would be known by his DN).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn the_gsi_keys_of_a_config_file() {
    if !clients_available() {
        return;
    }
    let pki = GsiPki::new();
    let proxy = pki.xrdgsiproxy("proxy.pem", "1:00");
    let data = tempfile::tempdir().unwrap();
    let bytes = content(30, 1 << 20);
    std::fs::write(data.path().join("in.bin"), &bytes).unwrap();
    let p = &pki.pki;
    let file = pki.path("serve.toml");
    std::fs::write(
        &file,
        format!(
            "auth = [\"gsi\"]\ngsi-cert = {:?}\ngsi-key = {:?}\ngsi-ca-dir = {:?}\ngsi-gridmap = {:?}\n\
             gsi-gridmap-required = true\n",
            p.host_cert, p.host_key, p.ca_dir, pki.gridmap
        ),
    )
    .unwrap();
    let server = serve(
        data.path(),
        &["--config".into(), file.display().to_string()],
    );
    let url = format!("root://localhost:{}//in.bin", server.addr.port());
    let down = pki.path("down.bin");
    let out = stock(
        &pki,
        "xrdcp",
        Some(&proxy),
        &[url.clone(), down.display().to_string()],
    )
    .await;
    ok("xrdcp with the proxy", &out);
    assert!(std::fs::read(&down).unwrap() == bytes, "bytes differ");

    let (bob, bob_key) = p.user("bob", "Bob", 30);
    let mut cmd = pki.client_command("xrdcp", None);
    cmd.env("X509_USER_CERT", &bob)
        .env("X509_USER_KEY", &bob_key)
        .env("XrdSecGSICREATEPROXY", "0")
        .args([url, pki.path("bob.bin").display().to_string()]);
    let out = run_off_workers(cmd).await;
    assert_eq!(code(&out), 52, "Bob: {}{}", stdout(&out), stderr(&out));
    assert!(!pki.path("bob.bin").exists());
}

/// `xcache --origin-proxy FILE` in front of a stock `gsi` origin, itself
/// serving `--auth gsi`: the stock xrdcp with its proxy reads through it
/// cold and warm, bytes compared, and the origin logged the cache in as
/// `alice`; a cache whose `--origin-proxy` is no proxy does not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn the_xcache_example_logs_in_to_a_stock_gsi_origin_with_its_proxy() {
    if !xroot_testkit::stock::xrootd_available() || !clients_available() {
        return;
    }
    let pki = GsiPki::new();
    let client_proxy = pki.xrdgsiproxy("proxy.pem", "1:00");
    let cache_proxy = pki.xrdgsiproxy("cache-proxy.pem", "1:00");
    let data = tempfile::tempdir().unwrap();
    let bytes = content(31, 5 << 20);
    std::fs::write(data.path().join("in.bin"), &bytes).unwrap();
    let lines = pki.stock_server_lines();
    let Some(origin) = StockServer::start(
        data.path(),
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    ) else {
        return;
    };
    let store = tempfile::tempdir().unwrap();
    let mut extra = vec![
        "--origin-proxy".to_string(),
        cache_proxy.display().to_string(),
        "--auth".into(),
        "gsi".into(),
    ];
    extra.extend(gsi_flags(&pki));
    let cache = CacheProcess::start(
        &format!("root://localhost:{}", origin.port),
        store.path(),
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let url = format!("root://localhost:{}//in.bin", cache.addr.port());
    for pass in ["cold", "warm"] {
        let dest = pki.path(&format!("{pass}.bin"));
        let out = stock(
            &pki,
            "xrdcp",
            Some(&client_proxy),
            &[url.clone(), dest.display().to_string()],
        )
        .await;
        ok(pass, &out);
        assert!(
            std::fs::read(&dest).unwrap() == bytes,
            "{pass}: bytes differ"
        );
    }
    assert!(
        origin.log_tail().contains("login as alice"),
        "{}",
        origin.log_tail()
    );

    // a proxy file that is none: the cache says so and exits 1
    let out = Command::new(example_bin("xcache"))
        .args([
            "--origin",
            &format!("root://localhost:{}", origin.port),
            "--port",
            "0",
        ])
        .arg("--cache-dir")
        .arg(store.path().join("other"))
        .arg("--origin-proxy")
        .arg(&pki.gridmap)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("--origin-proxy:"), "{}", stderr(&out));
}
