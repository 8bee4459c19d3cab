//! `ztn` against the stock tools, over TLS:
//!
//! - the stock `xrdcp` (token from `BEARER_TOKEN_FILE`, mode 0600) against
//!   our `serve` example with `--tls login --auth ztn --token-issuer …`:
//!   reads with a read token, is refused writing with it (the file is not
//!   created), writes with a create token;
//! - our client against the stock xrootd with the SciTokens plugin
//!   (`sec.protocol ztn` + `ofs.authlib libXrdAccSciTokens`), the issuer's
//!   keys put in scitokens-cpp's cache offline (SECURITY-FACTS.md).

mod support;

use std::path::Path;
use std::process::{Command, Output};

use clap::Parser;
use support::tls::TestPki;
use support::tokens::{token_file, TestIssuer, AUDIENCE, ISSUER};

#[path = "../examples/serve.rs"]
#[allow(dead_code)]
mod serve;

/// Our `serve` (in-process) on `dir`, TLS required for login, `ztn` only.
async fn start(pki: &TestPki, iss: &TestIssuer, dir: &Path) -> std::net::SocketAddr {
    let argv = [
        "serve",
        "--port",
        "0",
        "--tls-cert",
        pki.host_cert.to_str().unwrap(),
        "--tls-key",
        pki.host_key.to_str().unwrap(),
        "--tls",
        "login",
        "--auth",
        "ztn",
        "--token-issuer",
        &iss.arg(),
        "--token-audience",
        AUDIENCE,
        dir.to_str().unwrap(),
    ];
    let cli = serve::Cli::try_parse_from(argv).unwrap();
    let server = serve::start(&cli).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// The stock `xrdcp -f -s ARGS` with the PKI's CA directory and the token
/// in `token`, off the runtime's threads.
async fn xrdcp(pki: &TestPki, token: &Path, args: &[&str]) -> Output {
    let (ca, token) = (pki.ca_dir.clone(), token.to_path_buf());
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new("xrdcp")
            .args(["-f", "-s"])
            .args(&args)
            .env("X509_CERT_DIR", ca)
            .env("BEARER_TOKEN_FILE", token)
            .env_remove("BEARER_TOKEN")
            .env_remove("X509_USER_PROXY")
            .output()
            .expect("run xrdcp")
    })
    .await
    .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_xrdcp_with_a_bearer_token_against_our_server() {
    if !support::stock::xrootd_available() {
        return;
    }
    let pki = TestPki::new();
    let iss = TestIssuer::new(ISSUER);
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join("data/out")).unwrap();
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(data.path().join("data/f.bin"), &content).unwrap();
    let addr = start(&pki, &iss, data.path()).await;
    let url = |p: &str| format!("roots://localhost:{}/{p}", addr.port());
    let work = tempfile::tempdir().unwrap();

    // read with a read token
    let read = token_file(
        work.path(),
        "read.tok",
        &iss.es256(&iss.claims("storage.read:/data")),
    );
    let got = work.path().join("got.bin");
    let o = xrdcp(&pki, &read, &[&url("/data/f.bin"), got.to_str().unwrap()]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&got).unwrap(), content);

    // a write with the read token is refused, naming the scope
    let o = xrdcp(
        &pki,
        &read,
        &[got.to_str().unwrap(), &url("/data/out/new.bin")],
    )
    .await;
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("missing scope storage.create:/data/out/new.bin"),
        "{}",
        text(&o)
    );
    assert!(!data.path().join("data/out/new.bin").exists());

    // a file outside the token's path
    let o = xrdcp(&pki, &read, &[&url("/elsewhere.bin"), "/dev/null"]).await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains("missing scope storage.read:/elsewhere.bin"),
        "{}",
        text(&o)
    );

    // an RS256 token that may create writes
    let create = token_file(
        work.path(),
        "create.tok",
        &iss.rs256(&iss.claims("storage.create:/data/out")),
    );
    let o = xrdcp(
        &pki,
        &create,
        &[got.to_str().unwrap(), &url("/data/out/new.bin")],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read(data.path().join("data/out/new.bin")).unwrap(),
        content
    );

    // an expired token is refused at authentication (the stock client
    // reports its own "Auth failed", not the server's reason)
    let mut old = iss.claims("storage.read:/data");
    old["exp"] = serde_json::json!(support::tokens::now() - 3600);
    let expired = token_file(work.path(), "old.tok", &iss.es256(&old));
    let o = xrdcp(&pki, &expired, &[&url("/data/f.bin"), "/dev/null"]).await;
    assert!(!o.status.success());
    assert!(text(&o).contains("Auth failed"), "{}", text(&o));
}
