//! Our cache with its own token in front of a TLS origin that requires
//! tokens: the origin is our `serve` example with `--tls login --auth ztn`;
//! the `xcache` example (in-process) reaches it over `roots://` with
//! `--origin-token-file` and itself serves clients with TLS required at
//! login and `ztn` with the same issuer. The stock `xrdcp`, with its own
//! read token, reads a file through the cache over `roots://` cold (fetched
//! from the origin) and warm (from the cache's disk), bytes equal; a client
//! token without the read scope is refused by the cache with
//! `kXR_NotAuthorized` (the cache authorizes its clients as the server
//! does); a cache whose origin token is expired answers its client with a
//! clear error, not a hang.
//!
//! The cache's client trusts the CAs of `X509_CERT_DIR` (`Config::tls`
//! defaults to `ClientTls::from_env`), which this test sets for its own
//! process: it is alone in this test binary for that reason.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use clap::Parser;
use xroot::cache::origin::RemoteOrigin;
use xroot::cache::CacheFs;
use xroot::client::tls::{ClientTls, TrustStore};
use xroot::client::{Client, Config, OpenFlags};
use xroot::proto::ErrorCode;
use xroot::sec::ztn::BearerToken;
use xroot_testkit::pki::TestPki;
use xroot_testkit::tokens::{output_text, secured_args, token_env, token_file, TestIssuer, ISSUER};
use xroot_tools::{serve, xcache};

/// How long a read through the cache may take before the test calls it a
/// hang.
const HANG: Duration = Duration::from_secs(120);

/// Our `serve` (in-process) on `dir`, [`secured_args`].
async fn start_origin(pki: &TestPki, iss: &TestIssuer, dir: &Path) -> SocketAddr {
    let mut argv = vec!["serve".to_string(), "--port".into(), "0".into()];
    argv.extend(secured_args(pki, iss));
    argv.push(dir.to_str().unwrap().into());
    let server = serve::start(&serve::Cli::try_parse_from(argv).unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// Our `xcache` (in-process), [`secured_args`], in front of `roots://origin`
/// with `token` as its origin token; its address and `CacheFs`.
async fn start_cache(
    pki: &TestPki,
    iss: &TestIssuer,
    origin: SocketAddr,
    token: &Path,
    store: &Path,
) -> (SocketAddr, CacheFs<RemoteOrigin>) {
    let origin = format!("roots://localhost:{}", origin.port());
    let mut argv: Vec<String> = [
        "xcache",
        "--origin",
        &origin,
        "--origin-token-file",
        token.to_str().unwrap(),
        "--cache-dir",
        store.to_str().unwrap(),
        "--port",
        "0",
    ]
    .map(String::from)
    .into();
    argv.extend(secured_args(pki, iss));
    let server = xcache::start(&xcache::Cli::try_parse_from(argv).unwrap())
        .await
        .unwrap();
    let (addr, fs) = (server.local_addr(), server.fs().clone());
    tokio::spawn(server.serve());
    (addr, fs)
}

/// The stock `xrdcp -f -s URL DEST` with the PKI's CA directory and the
/// token in `token`, killed after [`HANG`] (by `timeout`), off the
/// runtime's threads.
async fn xrdcp(pki: &TestPki, token: &Path, url: &str, dest: &Path) -> Output {
    let (ca, token) = (pki.ca_dir.clone(), token.to_path_buf());
    let (url, dest) = (url.to_string(), dest.to_path_buf());
    tokio::task::spawn_blocking(move || {
        token_env(&mut Command::new("timeout"), &ca, &token)
            .arg(HANG.as_secs().to_string())
            .args(["xrdcp", "-f", "-s", &url])
            .arg(dest)
            .output()
            .expect("run xrdcp")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn xcache_with_its_own_token_in_front_of_a_tls_origin() {
    if !xroot_testkit::stock::xrootd_client_available() {
        return;
    }
    let pki = TestPki::new();
    // the cache's client (Config::default) trusts X509_CERT_DIR
    std::env::set_var("X509_CERT_DIR", &pki.ca_dir);
    let iss = TestIssuer::new(ISSUER);
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join("data")).unwrap();
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i % 249) as u8).collect();
    std::fs::write(data.path().join("data/f.bin"), &content).unwrap();
    let origin = start_origin(&pki, &iss, data.path()).await;

    let work = tempfile::tempdir().unwrap();
    let token =
        |name: &str, claims: &serde_json::Value| token_file(work.path(), name, &iss.es256(claims));
    let cache_token = token("cache.tok", &iss.claims("storage.read:/data"));
    let store = tempfile::tempdir().unwrap();
    let (cache, fs) = start_cache(&pki, &iss, origin, &cache_token, store.path()).await;
    let url = format!("roots://localhost:{}//data/f.bin", cache.port());

    // the stock xrdcp with its own read token: cold, then warm
    let reader = token("reader.tok", &iss.claims("storage.read:/data"));
    let got = work.path().join("got.bin");
    let o = xrdcp(&pki, &reader, &url, &got).await;
    assert!(o.status.success(), "cold: {}", output_text(&o));
    assert!(
        std::fs::read(&got).unwrap() == content,
        "cold: bytes differ"
    );
    let cold = fs.stats();
    assert!(
        cold.bytes_fetched >= content.len() as u64,
        "cold read fetched {cold:?}"
    );
    std::fs::remove_file(&got).unwrap();
    let o = xrdcp(&pki, &reader, &url, &got).await;
    assert!(o.status.success(), "warm: {}", output_text(&o));
    assert!(
        std::fs::read(&got).unwrap() == content,
        "warm: bytes differ"
    );
    let warm = fs.stats();
    assert_eq!(warm.bytes_fetched, cold.bytes_fetched, "warm: {warm:?}");
    assert!(
        warm.bytes_from_disk - cold.bytes_from_disk >= content.len() as u64,
        "warm: {warm:?}"
    );

    // a client token without the read scope: refused by the cache
    let writer = token("writer.tok", &iss.claims("storage.create:/data"));
    let o = xrdcp(&pki, &writer, &url, &work.path().join("no.bin")).await;
    assert!(!o.status.success(), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("missing scope storage.read:/data/f.bin"),
        "{}",
        output_text(&o)
    );
    let trust = TrustStore::from_ca_dir(&pki.ca_dir).unwrap();
    let client = |token: &Path| {
        let token = std::fs::read_to_string(token).unwrap();
        Client::with_config(Config {
            bearer_token: Some(BearerToken::new(token.trim())),
            ..Config::default().with_tls(ClientTls::new(trust.clone()).unwrap())
        })
    };
    let e = client(&writer)
        .open(&url, OpenFlags::READ)
        .await
        .unwrap_err();
    assert_eq!(e.server_code(), Some(ErrorCode::NOT_AUTHORIZED), "{e}");
    assert_eq!(fs.stats().bytes_fetched, cold.bytes_fetched);

    // a cache whose own token has expired: its client gets an error, soon
    let mut old = iss.claims("storage.read:/data");
    old["exp"] = serde_json::json!(xroot_testkit::tokens::now() - 3600);
    let expired = token("expired.tok", &old);
    let store = tempfile::tempdir().unwrap();
    let (bad, _) = start_cache(&pki, &iss, origin, &expired, store.path()).await;
    let url = format!("roots://localhost:{}//data/f.bin", bad.port());
    let e = tokio::time::timeout(HANG, client(&reader).open(&url, OpenFlags::READ))
        .await
        .expect("the cache answers")
        .unwrap_err();
    // the client's own token is fine: the failure is the cache's, named
    // as the origin's (not a kXR_AuthFailed the client would take for its
    // own token's)
    let origin_name = format!("origin localhost:{}", origin.port());
    assert_eq!(e.server_code(), Some(ErrorCode::SERVER_ERROR), "{e}");
    assert!(
        e.to_string().contains(&origin_name) && e.to_string().contains("token expired"),
        "{e}"
    );
    let o = xrdcp(&pki, &reader, &url, &work.path().join("no.bin")).await;
    assert!(!o.status.success(), "{}", output_text(&o));
    assert_ne!(
        o.status.code(),
        Some(124),
        "xrdcp hung: {}",
        output_text(&o)
    );
    assert!(
        output_text(&o).contains(&origin_name) && output_text(&o).contains("token expired"),
        "{}",
        output_text(&o)
    );
}
