//! `gsi` sans IO: our client handshake against our server handshake with
//! the test kit's throw-away PKI (`xroot_testkit::pki`, made by `openssl`
//! at test time: a CA, its hashed directory, a host certificate for
//! localhost, a user certificate and an RFC 3820 proxy signed with SHA-1
//! as `xrdgsiproxy` signs them); OpenSSL's names and hashes; and the
//! refusals of bad credentials. The test kit is not published: this file
//! is left out of the published package (`exclude` in Cargo.toml).

#![cfg(feature = "gsi")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use xroot_sec::gsi::{
    crypto, x509, CaStore, ClientHandshake, Credentials, Gridmap, GsiError, GsiIdentity,
    ServerConfig, ServerStep,
};
use xroot_testkit::pki::{GsiPki, OpensslProxy, TestPki};

/// The kit's gsi PKI with a proxy made by `openssl` (`proxy`).
struct Pki {
    gsi: GsiPki,
    proxy: OpensslProxy,
}

impl Pki {
    fn new() -> Pki {
        let gsi = GsiPki::new();
        let proxy = gsi.openssl_proxy("proxy");
        Pki { gsi, proxy }
    }

    fn server(&self) -> ServerConfig {
        let p = &self.gsi.pki;
        ServerConfig::load(&p.host_cert, &p.host_key, &p.ca_dir).unwrap()
    }

    fn store(&self) -> Arc<CaStore> {
        Arc::new(CaStore::load(&self.gsi.pki.ca_dir).unwrap())
    }

    fn proxy(&self) -> Credentials {
        Credentials::load_proxy(&self.proxy.file).unwrap()
    }

    fn user(&self) -> Credentials {
        Credentials::load_cert_key(&self.gsi.user_cert, &self.gsi.user_key).unwrap()
    }

    /// A file of PEM blocks `parts` put together, in the PKI's directory.
    fn concat(&self, name: &str, parts: &[&Path]) -> std::path::PathBuf {
        let mut file = Vec::new();
        for p in parts {
            file.extend(std::fs::read(p).unwrap());
        }
        let path = self.gsi.path(name);
        std::fs::write(&path, file).unwrap();
        path
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Runs the whole handshake; the server's answer to the last message.
fn login(
    pki: &Pki,
    server: &ServerConfig,
    creds: Credentials,
    at: i64,
) -> Result<GsiIdentity, GsiError> {
    let mut client = ClientHandshake::new(Arc::new(creds), pki.store(), "localhost");
    let mut srv = server.handshake();
    let first = client.first(server.offer().as_bytes())?;
    let ServerStep::More(reply) = srv.step(server, &first, at)? else {
        panic!("the server asked for nothing")
    };
    let second = client.next(&reply, at)?;
    match srv.step(server, &second, at)? {
        ServerStep::Done(id) => Ok(id),
        ServerStep::More(_) => panic!("a third round"),
    }
}

fn openssl_out(args: &[&str], file: &Path) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl {args:?}");
    out.stdout
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn hashes_and_names_are_openssls() {
    let pki = Pki::new();
    let ca_pem = &pki.gsi.pki.ca_cert;
    let ca = &x509::pem_certs(&std::fs::read(ca_pem).unwrap()).unwrap()[0];
    let hash = openssl_out(&["x509", "-noout", "-subject_hash", "-in"], ca_pem);
    assert_eq!(ca.subject_hash(), String::from_utf8_lossy(&hash).trim());
    assert_eq!(ca.subject, "/CN=xroot test CA");
    assert_eq!(ca.kind, x509::CertKind::Ca);
    let creds = pki.proxy();
    assert!(creds.is_proxy());
    assert_eq!(creds.chain.len(), 2);
    assert_eq!(
        creds.chain[0].kind,
        x509::CertKind::Proxy(x509::ProxyForm::Rfc3820)
    );
    assert_eq!(creds.chain[1].kind, x509::CertKind::Eec);
    assert_eq!(creds.chain[1].subject, pki.gsi.user_dn);
    // the public key PEM is OpenSSL's, byte for byte
    let pubkey = openssl_out(&["x509", "-noout", "-pubkey", "-in"], &pki.proxy.cert);
    assert_eq!(
        crypto::public_key_pem(&creds.chain[0].spki_der()).as_bytes(),
        &pubkey[..]
    );
    // a proxy file whose key is not the proxy's
    let wrongkey = pki.concat(
        "proxy-wrongkey",
        &[&pki.proxy.cert, &pki.gsi.user_key, &pki.gsi.user_cert],
    );
    assert!(matches!(
        Credentials::load_proxy(&wrongkey),
        Err(GsiError::BadKey(_))
    ));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn ours_to_ours_with_a_proxy_and_with_the_certificate() {
    let pki = Pki::new();
    let gridmap = Gridmap::load(&pki.gsi.gridmap).unwrap();
    let server = pki.server().gridmap(gridmap, true);
    let id = login(&pki, &server, pki.proxy(), now()).unwrap();
    assert_eq!(id.dn, pki.gsi.user_dn);
    assert_eq!((id.name(), id.proxies), (GsiPki::USER, 1));
    let id = login(&pki, &server, pki.user(), now()).unwrap();
    assert_eq!((id.name(), id.proxies), (GsiPki::USER, 0));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn bad_credentials_are_refused() {
    let pki = Pki::new();
    let server = pki.server();
    // expired, and not yet valid (the clock moved, not the certificates):
    // the proxy is valid for a day, the kit's CA for two; the kit's host
    // certificate for one, so the server has one of 30 days here
    let (host, host_key) = pki.gsi.pki.leaf("host30", "localhost", "DNS:localhost", 30);
    let lasting = ServerConfig::load(&host, &host_key, &pki.gsi.pki.ca_dir).unwrap();
    let later = now() + 36 * 3600;
    let err = login(&pki, &lasting, pki.proxy(), later).unwrap_err();
    assert!(
        err.to_string().contains("Proxy: certificate expired"),
        "{err}"
    );
    // the server's own certificate expired: the client refuses it
    let err = login(&pki, &server, pki.user(), later).unwrap_err();
    assert!(
        err.to_string().contains("EEC: certificate expired"),
        "{err}"
    );
    let earlier = now() - 86400;
    let err = login(&pki, &server, pki.proxy(), earlier).unwrap_err();
    assert!(err.to_string().contains("certificate expired"), "{err}");
    // wrong CA: the client's issuer is unknown to the server
    let elsewhere = TestPki::with_ca_name("elsewhere CA");
    let (cert, key) = elsewhere.user("other", "Bob", 30);
    let other = Credentials::load_cert_key(&cert, &key).unwrap();
    let err = login(&pki, &server, other, now()).unwrap_err();
    assert!(matches!(err, GsiError::UnknownCa(_)), "{err}");
    // a CA of the same name as the server's, but another key
    let impostor = TestPki::new();
    let (cert, key) = impostor.user("other", "Bob", 30);
    let other = Credentials::load_cert_key(&cert, &key).unwrap();
    let err = login(&pki, &server, other, now()).unwrap_err();
    assert!(
        err.to_string()
            .contains("EEC: signature verification failed"),
        "{err}"
    );
    // badly signed proxy: its signature's last byte altered
    let pxy = &x509::pem_blocks(&std::fs::read(&pki.proxy.cert).unwrap()).unwrap()[0].1;
    let mut bad = pxy.clone();
    *bad.last_mut().unwrap() ^= 1;
    let badsig = pki.gsi.path("proxy-badsig.cert.pem");
    std::fs::write(&badsig, x509::to_pem("CERTIFICATE", &bad)).unwrap();
    let file = pki.concat(
        "proxy-badsig",
        &[&badsig, &pki.proxy.key, &pki.gsi.user_cert],
    );
    let err = login(
        &pki,
        &server,
        Credentials::load_proxy(&file).unwrap(),
        now(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("Proxy: signature verification failed"),
        "{err}"
    );
    // a key that is not the proxy's: the client signs with the user key
    let mut wrong = pki.proxy();
    wrong.key = pki.user().key;
    let err = login(&pki, &server, wrong, now()).unwrap_err();
    assert_eq!(err, GsiError::KeyMismatch);
    // the gridmap required and silent
    let strict = pki.server().gridmap(Gridmap::parse(""), true);
    let err = login(&pki, &strict, pki.proxy(), now()).unwrap_err();
    assert!(matches!(err, GsiError::NotMapped(_)), "{err}");
    // the server's certificate checked by the client: a wrong host
    let mut client = ClientHandshake::new(Arc::new(pki.proxy()), pki.store(), "elsewhere.example");
    let mut srv = server.handshake();
    let first = client.first(server.offer().as_bytes()).unwrap();
    let ServerStep::More(reply) = srv.step(&server, &first, now()).unwrap() else {
        panic!("the server asked for nothing")
    };
    assert!(matches!(
        client.next(&reply, now()),
        Err(GsiError::ServerName(_))
    ));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn revoked_certificates_are_refused() {
    let pki = Pki::new();
    pki.gsi.pki.revoke(&pki.gsi.user_cert);
    let server = pki.server();
    let err = login(&pki, &server, pki.proxy(), now()).unwrap_err();
    assert!(matches!(err, GsiError::Revoked(_)), "{err}");
    // a certificate the CRL does not name still logs in
    let (cert, key) = pki.gsi.pki.user("bob", "Bob", 30);
    let id = login(
        &pki,
        &server,
        Credentials::load_cert_key(&cert, &key).unwrap(),
        now(),
    )
    .unwrap();
    assert_eq!(id.dn, "/CN=Bob");
}
