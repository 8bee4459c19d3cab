//! The `xrdtoken` example (`xroot_tools::xrdtoken`) with our daemons, each
//! run as a process: the issuer it makes is trusted by `serve --auth ztn
//! --token-issuer URL=DIR/jwks.json`, a token it mints reads within its
//! scope and is refused past it (another path, a write) and past its
//! lifetime; `--token-leeway SECS` (and `token-leeway` in `--config`) lets a
//! token that expired seconds ago in, on `serve` and on `xcache`, which
//! refuse it without. The stock server's side is in `tests/ztn_stock.rs`.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;

use xroot::client::tls::{ClientTls, TrustStore};
use xroot::client::{Client, Config, Error, OpenFlags};
use xroot::proto::ErrorCode;
use xroot::sec::ztn::BearerToken;
use xroot_testkit::example::{example_bin, Daemon};
use xroot_testkit::pki::TestPki;
use xroot_testkit::tools::{command, run, stderr, stdout};

/// The audience the servers here accept.
const AUD: &str = "https://xroot.test";

/// What `xrdtoken ARGS` prints; it must exit 0.
fn xrdtoken(args: &[&str]) -> String {
    let o = run(command(example_bin("xrdtoken"), args, &[]));
    assert!(o.status.success(), "xrdtoken {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// An issuer made by `xrdtoken issuer` in `dir`; the `--token-issuer`
/// value it printed.
fn issuer(dir: &Path) -> String {
    let out = xrdtoken(&[
        "issuer",
        "--dir",
        dir.to_str().unwrap(),
        "--issuer",
        "https://localhost/xrdtoken-test",
    ]);
    let flags = out
        .lines()
        .find_map(|l| l.strip_prefix("serve flags: --auth ztn --token-issuer "))
        .unwrap_or_else(|| panic!("no serve flags in {out:?}"));
    assert_eq!(
        flags,
        format!(
            "https://localhost/xrdtoken-test={}",
            dir.join("jwks.json").display()
        )
    );
    flags.to_string()
}

/// `xrdtoken mint --dir DIR --scope SCOPE MORE...`.
fn mint(dir: &Path, scope: &str, more: &[&str]) -> String {
    let mut args = vec!["mint", "--dir", dir.to_str().unwrap(), "--scope", scope];
    args.extend_from_slice(more);
    xrdtoken(&args).trim().to_string()
}

/// The flags of a ztn-only daemon over TLS trusting `token_issuer` for
/// [`AUD`].
fn ztn_args(pki: &TestPki, token_issuer: &str) -> Vec<String> {
    [
        "--tls-cert",
        pki.host_cert.to_str().unwrap(),
        "--tls-key",
        pki.host_key.to_str().unwrap(),
        "--auth",
        "ztn",
        "--token-issuer",
        token_issuer,
        "--token-audience",
        AUD,
    ]
    .map(String::from)
    .into()
}

/// `serve --port 0 ARGS... DIR`, up; its port.
fn serve(dir: &Path, args: &[String]) -> (Daemon, u16) {
    let mut all: Vec<String> = vec!["--port".into(), "0".into()];
    all.extend_from_slice(args);
    all.push(dir.to_str().unwrap().into());
    let mut d = Daemon::start("serve", &all);
    let port = d.line("serve listening on ").port();
    (d, port)
}

/// A client presenting `token`, trusting the PKI's CA.
fn client(pki: &TestPki, token: &str) -> Client {
    Client::with_config(Config {
        bearer_token: Some(BearerToken::new(token)),
        ..Config::default()
            .with_tls(ClientTls::new(TrustStore::from_ca_dir(&pki.ca_dir).unwrap()).unwrap())
    })
}

/// The whole of `path` read over `roots://localhost:PORT`.
async fn read(c: &Client, port: u16, path: &str) -> Result<Vec<u8>, Error> {
    let f = c
        .open(&format!("roots://localhost:{port}/{path}"), OpenFlags::READ)
        .await?;
    let data = f.read_at(0, 1 << 20).await?;
    f.close().await?;
    Ok(data.to_vec())
}

fn server_code<T>(r: Result<T, Error>) -> (ErrorCode, String) {
    match r {
        Err(Error::Server { code, message }) => (code, message),
        Err(e) => panic!("not a server error: {e}"),
        Ok(_) => panic!("not refused"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_minted_token_reads_within_its_scope_and_lifetime_only() {
    let pki = TestPki::new();
    let work = tempfile::tempdir().unwrap();
    let iss_dir = work.path().join("issuer");
    let trusted = issuer(&iss_dir);
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join("data")).unwrap();
    std::fs::write(data.path().join("data/f.bin"), b"within").unwrap();
    std::fs::write(data.path().join("other.bin"), b"without").unwrap();
    let (_d, port) = serve(data.path(), &ztn_args(&pki, &trusted));

    // the default audience (WLCG's "any") is accepted too
    for token in [
        mint(&iss_dir, "storage.read:/data", &[]),
        mint(
            &iss_dir,
            "storage.read:/data",
            &["--aud", AUD, "--sub", "carol"],
        ),
    ] {
        let c = client(&pki, &token);
        assert_eq!(read(&c, port, "/data/f.bin").await.unwrap(), b"within");
        // past its scope: another path, a write
        let (code, message) = server_code(read(&c, port, "/other.bin").await);
        assert_eq!(code, ErrorCode::NOT_AUTHORIZED, "{message}");
        assert!(
            message.contains("missing scope storage.read:/other.bin"),
            "{message}"
        );
        let (code, _) = server_code(
            c.open(
                &format!("roots://localhost:{port}//data/new.bin"),
                OpenFlags::NEW,
            )
            .await,
        );
        assert_eq!(code, ErrorCode::NOT_AUTHORIZED);
        assert!(!data.path().join("data/new.bin").exists());
    }
    // a token for another audience
    let elsewhere = mint(&iss_dir, "storage.read:/", &["--aud", "https://elsewhere"]);
    let (code, message) = server_code(read(&client(&pki, &elsewhere), port, "/data/f.bin").await);
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::AUTH_FAILED, "token audience not accepted")
    );
    // past its lifetime
    let old = mint(
        &iss_dir,
        "storage.read:/",
        &["--lifetime", "60", "--age", "120"],
    );
    let (code, message) = server_code(read(&client(&pki, &old), port, "/data/f.bin").await);
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::AUTH_FAILED, "token expired")
    );
    // a token of another issuer (same URL, another key)
    let forger = work.path().join("forger");
    issuer(&forger);
    let forged = mint(&forger, "storage.read:/", &[]);
    let (code, _) = server_code(read(&client(&pki, &forged), port, "/data/f.bin").await);
    assert_eq!(code, ErrorCode::AUTH_FAILED);
}

/// A token that expired five seconds before it was minted: refused by
/// default, read with `--token-leeway 60` on the command line or in the
/// `--config` file, on `serve` and on `xcache`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn the_token_leeway_lets_a_just_expired_token_in() {
    let pki = TestPki::new();
    let work = tempfile::tempdir().unwrap();
    let iss_dir = work.path().join("issuer");
    let trusted = issuer(&iss_dir);
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), b"late").unwrap();
    let args = ztn_args(&pki, &trusted);
    let late = mint(
        &iss_dir,
        "storage.read:/",
        &["--aud", AUD, "--lifetime", "600", "--age", "605"],
    );
    let c = client(&pki, &late);

    // serve: refused by default
    let (_strict, port) = serve(data.path(), &args);
    let (code, message) = server_code(read(&c, port, "/f.bin").await);
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::AUTH_FAILED, "token expired")
    );
    // --token-leeway 60
    let mut lenient = args.clone();
    lenient.extend(["--token-leeway".into(), "60".into()]);
    let (_lenient, port) = serve(data.path(), &lenient);
    assert_eq!(read(&c, port, "/f.bin").await.unwrap(), b"late");
    // token-leeway in the config file
    let config = work.path().join("serve.toml");
    std::fs::write(&config, "token-leeway = 60\n").unwrap();
    let mut from_file = args.clone();
    from_file.extend(["--config".into(), config.to_str().unwrap().into()]);
    let (_from_file, port) = serve(data.path(), &from_file);
    assert_eq!(read(&c, port, "/f.bin").await.unwrap(), b"late");

    // xcache in front of a plain serve: the same
    let (_origin, origin_port) = serve(data.path(), &[]);
    let xcache = |leeway: &[&str]| {
        let cache = tempfile::tempdir().unwrap();
        let mut all: Vec<String> = [
            "--origin",
            &format!("root://127.0.0.1:{origin_port}"),
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--port",
            "0",
        ]
        .map(String::from)
        .into();
        all.extend(args.iter().cloned());
        all.extend(leeway.iter().map(|s| s.to_string()));
        let mut d = Daemon::start("xcache", &all);
        let port = d.line("xcache listening on ").port();
        (d, cache, port)
    };
    let (_strict, _dir, port) = xcache(&[]);
    let (code, message) = server_code(read(&c, port, "/f.bin").await);
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::AUTH_FAILED, "token expired")
    );
    let (_lenient, _dir, port) = xcache(&["--token-leeway", "60"]);
    assert_eq!(read(&c, port, "/f.bin").await.unwrap(), b"late");
}
