//! uproot reading through our server over TLS with a bearer token: the
//! `serve` example (in-process) with `--tls login --auth ztn` and a token
//! issuer, and uproot (`tests/uproot/check.py`) reading the NanoAOD-like
//! files with a read-scoped token in `BEARER_TOKEN_FILE` (mode 0600) and
//! the test CA in `X509_CERT_DIR`, once with its `XRootDSource` on the
//! venv's PyPI XRootD bindings over `roots://`, once with its
//! `FSSpecSource` (fsspec-xrootd); every figure equals the local read. A
//! read without a token, or with an expired one, fails.
//!
//! fsspec-xrootd (0.5) knows only `root://` (it registers that protocol
//! and builds every URL as `root://HOST/…`), so its read asks for
//! `root://`: the bindings announce `kXR_ableTLS`, and the server, which
//! requires TLS before login, switches the link to TLS (SECURITY.md);
//! the server refuses `ztn` on a link without TLS, so a successful read
//! went over TLS.
//!
//! Ignored without the venv of `tests/uproot_stock.rs` (or without
//! `openssl`), a failure under `CI=true`.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;

use clap::Parser;
use xroot_testkit::pki::TestPki;
use xroot_testkit::tokens::{secured_args, token_file, TestIssuer, ISSUER};
use xroot_testkit::uproot::{check, python, read, run, Env};
use xroot_tools::serve;

/// Our `serve` (in-process) on `dir`, [`secured_args`].
async fn start(pki: &TestPki, iss: &TestIssuer, dir: &Path) -> SocketAddr {
    let mut argv = vec!["serve".to_string(), "--port".into(), "0".into()];
    argv.extend(secured_args(pki, iss));
    argv.push(dir.to_str().unwrap().into());
    let cli = serve::Cli::try_parse_from(argv).unwrap();
    let server = serve::start(&cli).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// The Python's environment: the test CA, `token` (or none) as
/// `BEARER_TOKEN_FILE`, and no other place a token or proxy could come
/// from (`$XDG_RUNTIME_DIR` an empty directory).
fn env(pki: &TestPki, token: &Path, runtime: &Path) -> Env {
    let set = |k: &str, v: &Path| (k.to_string(), Some(OsString::from(v)));
    vec![
        set("X509_CERT_DIR", &pki.ca_dir),
        set("BEARER_TOKEN_FILE", token),
        set("XDG_RUNTIME_DIR", runtime),
        ("BEARER_TOKEN".to_string(), None),
        ("X509_USER_PROXY".to_string(), None),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_uproot,
    ignore = "needs the uproot venv (/opt/xroot-uproot or $XROOT_UPROOT_PYTHON; scripts/test as root makes it)"
)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn uproot_reads_over_tls_with_a_bearer_token() {
    let Some(python) = python() else { return };
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    check(&python, &Env::new(), &["write", dir]).await;
    let (source, local) = read(&python, &Env::new(), dir, "file").await;
    assert_eq!(source, "MemmapSource");

    let pki = TestPki::new();
    let iss = TestIssuer::new(ISSUER);
    let addr = start(&pki, &iss, data.path()).await;
    let work = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let good = token_file(
        work.path(),
        "read.tok",
        &iss.es256(&iss.claims("storage.read:/")),
    );
    let roots = format!("roots://localhost:{}//", addr.port());
    let root = format!("root://localhost:{}//", addr.port());

    // the venv's bindings over roots://, then fsspec-xrootd
    let readers: [(&str, &str, &str); 2] = [
        (&roots, "xrootd", "XRootDSource /"),
        (&root, "fsspec", "FSSpecSource/XRootDFileSystem /"),
    ];
    for (url, handler, source) in readers {
        let (used, figures) = read(&python, &env(&pki, &good, runtime.path()), url, handler).await;
        assert!(used.starts_with(source), "{url} {handler}: source {used}");
        assert!(
            figures == local,
            "{url} with {handler} differs from the local read:\n remote {figures}\n local  {local}"
        );
    }

    // no token, then an expired one: the read fails, with either source
    let none = work.path().join("none.tok");
    let mut old = iss.claims("storage.read:/");
    old["exp"] = serde_json::json!(xroot_testkit::tokens::now() - 3600);
    let expired = token_file(work.path(), "old.tok", &iss.es256(&old));
    for token in [&none, &expired] {
        for (url, handler) in [(&roots, "xrootd"), (&root, "fsspec")] {
            let e = run(
                &python,
                &env(&pki, token, runtime.path()),
                &["read", url, handler],
            )
            .await
            .expect_err("a read without a valid token");
            // the bindings' own report of the refused login
            assert!(e.contains("Auth failed"), "{}: {e}", token.display());
        }
    }
}
