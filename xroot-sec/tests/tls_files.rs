//! The TLS configurations loaded from files that `openssl` made: the
//! client's trust store from a grid CA directory and its client
//! certificate, the server's chain, key and CA directory, and their
//! reload. The files come from the workspace's test kit
//! (`xroot_testkit::pki`, its one PKI recipe), which is not published:
//! this file is left out of the published package (`exclude` in
//! Cargo.toml).

use std::fs;
use std::sync::Arc;

use xroot_sec::tls::client::{ClientTls, TrustStore};
use xroot_sec::tls::server::{ServerTls, ServerTlsError, ServerTlsFiles};
use xroot_testkit::pki::TestPki;

/// The test kit's PKI (`xroot_testkit::pki`, made by `openssl`) with
/// what these tests name in its directory: `a.pem`/`a.key` (its host
/// certificate) and `b.pem`/`b.key` (another leaf of its CA), both for
/// `localhost`, and the CA in `cas/` beside a signing policy.
fn pki() -> TestPki {
    let pki = TestPki::new();
    let d = pki.dir.path();
    fs::copy(&pki.host_cert, d.join("a.pem")).unwrap();
    fs::copy(&pki.host_key, d.join("a.key")).unwrap();
    pki.leaf("b", "localhost", "DNS:localhost", 1);
    fs::create_dir(d.join("cas")).unwrap();
    fs::copy(&pki.ca_cert, d.join("cas/ca.pem")).unwrap();
    fs::write(
        d.join("cas/ca.signing_policy"),
        "access_id_CA X509 '/CN=xroot test CA'\n",
    )
    .unwrap();
    pki
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn a_grid_dir_loads_each_ca_once_and_skips_the_rest() {
    let d = tempfile::tempdir().unwrap();
    // two CAs: the test kit's PKI (`xroot_testkit::pki`) twice
    let (pki_a, pki_b) = (TestPki::new(), TestPki::new());
    let (a, b) = (&pki_a.ca_cert, &pki_b.ca_cert);
    let dir = d.path().join("certificates");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(a, dir.join("a.pem")).unwrap();
    std::fs::copy(b, dir.join("b.pem")).unwrap();
    // the hash links of `openssl rehash`, a policy file, a DER blob, a subdir
    std::os::unix::fs::symlink(dir.join("a.pem"), dir.join("1a2b3c4d.0")).unwrap();
    std::os::unix::fs::symlink(dir.join("b.pem"), dir.join("5e6f7a8b.0")).unwrap();
    std::fs::write(
        dir.join("1a2b3c4d.signing_policy"),
        "access_id_CA X509 '/CN=a'\n",
    )
    .unwrap();
    std::fs::write(dir.join("1a2b3c4d.r0"), [0x30u8, 0x82, 0x01, 0x00, 0xff]).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    // a bundle with both, in one file
    let mut bundle = std::fs::read(a).unwrap();
    bundle.extend(std::fs::read(b).unwrap());
    std::fs::write(dir.join("bundle.pem"), bundle).unwrap();

    let store = TrustStore::from_ca_dir(&dir).unwrap();
    assert_eq!(store.len(), 2, "{store:?}");
    // the same again adds nothing
    let mut store = store;
    assert_eq!(store.add_ca_dir(&dir).unwrap(), 0);
    assert_eq!(store.add_ca_file(a).unwrap(), 0);
    assert_eq!(store.len(), 2);
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn the_config_trusts_the_store_and_sends_no_sni() {
    let pki = TestPki::new();
    let mut trust = TrustStore::new();
    assert_eq!(trust.add_ca_file(&pki.ca_cert).unwrap(), 1);
    let tls = ClientTls::new(trust).unwrap();
    assert_eq!(tls.trusted(), 1);
    assert!(!tls.rustls_config().enable_sni);
    // with a client certificate: the CA's own pair will do
    let with = ClientTls::with_client_cert(TrustStore::new(), &pki.ca_cert, &pki.ca_key).unwrap();
    assert!(with.rustls_config().client_auth_cert_resolver.has_certs());
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn loads_a_chain_and_key_with_or_without_a_ca_dir() {
    let t = pki();
    let d = t.dir.path();
    ServerTlsFiles::new(d.join("a.pem"), d.join("a.key"))
        .load()
        .unwrap();
    ServerTlsFiles::new(d.join("a.pem"), d.join("a.key"))
        .with_ca_dir(d.join("cas"))
        .load()
        .unwrap();
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn errors_name_the_file_and_cause() {
    let t = pki();
    let d = t.dir.path();
    fs::write(d.join("empty"), "nothing here\n").unwrap();
    fs::create_dir(d.join("nocas")).unwrap();
    let load = |c: &str, k: &str| ServerTlsFiles::new(d.join(c), d.join(k)).load();

    let e = load("missing.pem", "a.key").unwrap_err();
    assert!(matches!(&e, ServerTlsError::Read { path, .. } if path.ends_with("missing.pem")));
    assert!(e.to_string().contains("missing.pem"), "{e}");

    let e = load("empty", "a.key").unwrap_err();
    assert!(matches!(&e, ServerTlsError::NoCertificate { path } if path.ends_with("empty")));

    let e = load("a.pem", "a.pem").unwrap_err();
    assert!(matches!(&e, ServerTlsError::NoKey { path } if path.ends_with("a.pem")));

    let e = load("a.pem", "b.key").unwrap_err();
    assert!(
        matches!(&e, ServerTlsError::KeyMismatch { cert, key } if cert.ends_with("a.pem") && key.ends_with("b.key")),
        "{e:?}"
    );
    assert!(e.to_string().contains("b.key"), "{e}");

    let e = ServerTlsFiles::new(d.join("a.pem"), d.join("a.key"))
        .with_ca_dir(d.join("nocas"))
        .load()
        .unwrap_err();
    assert!(matches!(&e, ServerTlsError::NoCaCertificate { path } if path.ends_with("nocas")));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn reload_swaps_the_config_and_keeps_the_old_one_on_error() {
    let t = pki();
    let d = t.dir.path();
    fs::copy(d.join("a.pem"), d.join("host.pem")).unwrap();
    fs::copy(d.join("a.key"), d.join("host.key")).unwrap();
    let tls = ServerTls::load(ServerTlsFiles::new(d.join("host.pem"), d.join("host.key"))).unwrap();
    let first = tls.config();

    // a half-replaced pair: the new certificate, the old key
    fs::copy(d.join("b.pem"), d.join("host.pem")).unwrap();
    let e = tls.reload().unwrap_err();
    assert!(matches!(e, ServerTlsError::KeyMismatch { .. }), "{e:?}");
    assert!(Arc::ptr_eq(&first, &tls.config()));

    fs::copy(d.join("b.key"), d.join("host.key")).unwrap();
    tls.reload().unwrap();
    assert!(!Arc::ptr_eq(&first, &tls.config()));
}
