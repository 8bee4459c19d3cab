//! What the `serve` and `xcache` examples log at their default level (no
//! `-v`), run as processes (`xroot_testkit::example::Daemon`):
//!
//! - the start-up summary (`xroot_tools::summary`): the address, the TLS
//!   level in force, the authentication protocols in order, read-only or
//!   read-write; a warning when clients may write without authentication
//!   on an address beyond loopback, and none when they may not (loopback,
//!   `--read-only`, `--auth`, a cache);
//! - a refused credential, at INFO: the peer, the protocol and why
//!   (`xroot_server::observe::Throttle` limits how many).

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;

use xroot::client::tls::{ClientTls, TrustStore};
use xroot::client::{Client, Config, OpenFlags};
use xroot::proto::ErrorCode;
use xroot::sec::ztn::BearerToken;
use xroot_testkit::example::Daemon;
use xroot_testkit::pki::TestPki;
use xroot_testkit::tokens::{secured_args, TestIssuer, ISSUER};

/// `serve --port 0 ARGS... DIR`, up: the daemon, its port and its log so
/// far (the summary is logged before the listening line is printed).
fn serve(dir: &Path, args: &[&str]) -> (Daemon, u16, String) {
    let mut all = vec!["--port", "0"];
    all.extend_from_slice(args);
    all.push(dir.to_str().unwrap());
    let mut d = Daemon::start("serve", &all);
    let port = d.line("serve listening on ").port();
    let log = d.log();
    (d, port, log)
}

/// The lines of `log` at `level` (`INFO`, `WARN`) of target
/// `TOOL::summary`.
fn summary_lines(log: &str, level: &str, tool: &str) -> Vec<String> {
    let tag = format!("{level} {tool}::summary: ");
    log.lines()
        .filter_map(|l| l.split_once(&tag).map(|(_, rest)| rest.to_string()))
        .collect()
}

#[test]
fn serve_says_what_it_serves_and_how() {
    let data = tempfile::tempdir().unwrap();

    // loopback, no authentication, writable: said, not warned of
    let (_d, port, log) = serve(data.path(), &[]);
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 127.0.0.1:{port}; TLS off; authentication none; read-write"
        )],
        "{log}"
    );
    assert!(summary_lines(&log, "WARN", "serve").is_empty(), "{log}");

    // every interface, no authentication, writable: warned of
    let (_d, port, log) = serve(data.path(), &["--bind", "0.0.0.0"]);
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 0.0.0.0:{port}; TLS off; authentication none; read-write"
        )],
        "{log}"
    );
    let warned = summary_lines(&log, "WARN", "serve");
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].starts_with(&format!(
            "clients may write without authentication on 0.0.0.0:{port}, beyond loopback"
        )),
        "{log}"
    );

    // every interface, read-only: not warned of
    let (_d, port, log) = serve(data.path(), &["--bind", "0.0.0.0", "--read-only"]);
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 0.0.0.0:{port}; TLS off; authentication none; read-only"
        )],
        "{log}"
    );
    assert!(summary_lines(&log, "WARN", "serve").is_empty(), "{log}");

    // every interface, writable with authentication: the protocols in the
    // order given, not warned of
    let (_d, port, log) = serve(data.path(), &["--bind", "0.0.0.0", "--auth", "unix,host"]);
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 0.0.0.0:{port}; TLS off; authentication unix,host; read-write"
        )],
        "{log}"
    );
    assert!(summary_lines(&log, "WARN", "serve").is_empty(), "{log}");
}

#[test]
fn xcache_says_what_it_serves_and_how() {
    let cache = tempfile::tempdir().unwrap();
    // the origin is not asked until a client comes
    let mut d = Daemon::start(
        "xcache",
        &[
            "--origin",
            "root://127.0.0.1:1",
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--port",
            "0",
            "--bind",
            "0.0.0.0",
        ],
    );
    let port = d.line("xcache listening on ").port();
    let log = d.log();
    assert_eq!(
        summary_lines(&log, "INFO", "xcache"),
        [format!(
            "listening on 0.0.0.0:{port}; TLS off; authentication none; read-only"
        )],
        "{log}"
    );
    // a cache refuses writes: nothing to warn of
    assert!(summary_lines(&log, "WARN", "xcache").is_empty(), "{log}");
}

/// With TLS: the level given, or `login` for a server whose only protocol
/// needs TLS; and a token refused at login is logged at INFO, naming the
/// protocol and the reason, without `-v`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn tls_levels_and_refused_credentials_are_logged() {
    let pki = TestPki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), b"data").unwrap();
    let cert = pki.host_cert.to_str().unwrap();
    let key = pki.host_key.to_str().unwrap();

    let tls = ["--tls-cert", cert, "--tls-key", key];
    let (_d, port, log) = serve(
        data.path(),
        &[&tls[..], &["--tls", "session", "--auth", "unix"]].concat(),
    );
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 127.0.0.1:{port}; TLS session; authentication unix; read-write"
        )],
        "{log}"
    );

    // ztn only, at the default level capable: raised to login
    let iss = TestIssuer::new(ISSUER);
    // secured_args less its `--tls login`
    let args = secured_args(&pki, &iss);
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !["--tls", "login"].contains(a))
        .collect();
    let (d, port, log) = serve(data.path(), &args);
    assert_eq!(
        summary_lines(&log, "INFO", "serve"),
        [format!(
            "listening on 127.0.0.1:{port}; TLS login (raised from capable: every protocol \
             offered needs TLS); authentication ztn; read-write"
        )],
        "{log}"
    );

    // a token that expired a minute ago: refused, and logged
    let mut claims = iss.claims("storage.read:/");
    claims["exp"] = serde_json::json!(xroot_testkit::tokens::now() - 60);
    let client = Client::with_config(Config {
        bearer_token: Some(BearerToken::new(iss.es256(&claims))),
        ..Config::default()
            .with_tls(ClientTls::new(TrustStore::from_ca_dir(&pki.ca_dir).unwrap()).unwrap())
    });
    let e = client
        .open(&format!("roots://localhost:{port}//f.bin"), OpenFlags::READ)
        .await
        .unwrap_err();
    assert_eq!(e.server_code(), Some(ErrorCode::AUTH_FAILED), "{e}");
    let log = d.log();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("credential refused"))
        .collect();
    assert_eq!(refused.len(), 1, "{log}");
    let line = refused[0];
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains("protocol=ztn"), "{line}");
    assert!(line.contains("peer=127.0.0.1:"), "{line}");
    assert!(line.contains("credential refused: token expired"), "{line}");
}
