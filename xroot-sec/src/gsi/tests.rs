//! Our client against our server, sans IO, with a throw-away PKI made by
//! `openssl` at test time; and the refusals of bad credentials.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use super::*;

/// A throw-away PKI in a temp dir: a CA (hashed directory `certs/`),
/// another CA not in it, a host certificate for localhost, a user
/// certificate and an RFC 3820 proxy signed with SHA-1 (as `xrdgsiproxy`
/// signs them).
pub(crate) struct Pki {
    pub dir: tempfile::TempDir,
}

fn run(dir: &Path, args: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(args)
        .current_dir(dir)
        .output()
        .expect("sh");
    assert!(out.status.success(), "{args}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        run(d, "mkdir certs && \
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj '/C=CH/O=xroot-test/CN=Test CA' -addext basicConstraints=critical,CA:TRUE 2>/dev/null && \
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem -days 30 -subj '/C=CH/O=elsewhere/CN=Other CA' -addext basicConstraints=critical,CA:TRUE 2>/dev/null && \
            cp ca.pem certs/ && openssl rehash certs && \
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > host.ext && \
            printf 'basicConstraints=CA:FALSE\\n' > user.ext && \
            printf 'proxyCertInfo=critical,language:id-ppl-inheritAll\\nbasicConstraints=CA:FALSE\\n' > proxy.ext && \
            openssl req -newkey rsa:2048 -nodes -keyout host.key -out host.csr -subj '/C=CH/O=xroot-test/CN=localhost' 2>/dev/null && \
            openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -set_serial 2 -out host.pem -days 30 -extfile host.ext 2>/dev/null && \
            openssl req -newkey rsa:2048 -nodes -keyout user.key -out user.csr -subj '/C=CH/O=xroot-test/CN=Alice User' 2>/dev/null && \
            openssl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 3 -out user.pem -days 30 -extfile user.ext 2>/dev/null && \
            openssl req -newkey rsa:2048 -nodes -keyout other.key -out other.csr -subj '/C=CH/O=elsewhere/CN=Bob' 2>/dev/null && \
            openssl x509 -req -in other.csr -CA ca2.pem -CAkey ca2.key -set_serial 4 -out other.pem -days 30 -extfile user.ext 2>/dev/null && \
            openssl req -newkey rsa:2048 -nodes -keyout pxy.key -out pxy.csr -subj '/C=CH/O=xroot-test/CN=Alice User/CN=1234567' 2>/dev/null && \
            openssl x509 -req -sha1 -in pxy.csr -CA user.pem -CAkey user.key -set_serial 1234567 -out pxy.pem -days 1 -extfile proxy.ext 2>/dev/null && \
            cat pxy.pem pxy.key user.pem > proxy && \
            cat pxy.pem user.key user.pem > proxy-wrongkey");
        // a proxy whose signature is altered (its last byte)
        let pxy = &x509::pem_blocks(&std::fs::read(d.join("pxy.pem")).unwrap()).unwrap()[0].1;
        let mut bad = pxy.clone();
        *bad.last_mut().unwrap() ^= 1;
        let mut file = pem_rfc7468::encode_string("CERTIFICATE", pem_rfc7468::LineEnding::LF, &bad).unwrap();
        file.push_str(&std::fs::read_to_string(d.join("pxy.key")).unwrap());
        file.push_str(&std::fs::read_to_string(d.join("user.pem")).unwrap());
        std::fs::write(d.join("proxy-badsig"), file).unwrap();
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn server(&self) -> ServerConfig {
        ServerConfig::load(&self.path("host.pem"), &self.path("host.key"), &self.path("certs")).unwrap()
    }

    pub fn store(&self) -> Arc<CaStore> {
        Arc::new(CaStore::load(&self.path("certs")).unwrap())
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Runs the whole handshake; the server's answer to the last message.
fn login(pki: &Pki, server: &ServerConfig, creds: Credentials, at: i64) -> Result<GsiIdentity, GsiError> {
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

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn hashes_and_names_are_openssls() {
    let pki = Pki::new();
    let ca = &x509::pem_certs(&std::fs::read(pki.path("ca.pem")).unwrap()).unwrap()[0];
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-subject_hash", "-in"])
        .arg(pki.path("ca.pem"))
        .output()
        .unwrap();
    assert_eq!(ca.subject_hash(), String::from_utf8_lossy(&out.stdout).trim());
    assert_eq!(ca.subject, "/C=CH/O=xroot-test/CN=Test CA");
    assert_eq!(ca.kind, x509::CertKind::Ca);
    let creds = Credentials::load_proxy(&pki.path("proxy")).unwrap();
    assert!(creds.is_proxy());
    assert_eq!(creds.chain.len(), 2);
    assert_eq!(creds.chain[0].kind, x509::CertKind::Proxy(x509::ProxyForm::Rfc3820));
    assert_eq!(creds.chain[1].kind, x509::CertKind::Eec);
    // the public key PEM is OpenSSL's, byte for byte
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-pubkey", "-in"])
        .arg(pki.path("pxy.pem"))
        .output()
        .unwrap();
    assert_eq!(crypto::public_key_pem(&creds.chain[0].spki_der()).as_bytes(), &out.stdout[..]);
    assert!(matches!(
        Credentials::load_proxy(&pki.path("proxy-wrongkey")),
        Err(GsiError::BadKey(_))
    ));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn ours_to_ours_with_a_proxy_and_with_the_certificate() {
    let pki = Pki::new();
    let server = pki.server().gridmap(Gridmap::parse("\"/C=CH/O=xroot-test/CN=Alice User\" alice\n"), true);
    let id = login(&pki, &server, Credentials::load_proxy(&pki.path("proxy")).unwrap(), now()).unwrap();
    assert_eq!(id.dn, "/C=CH/O=xroot-test/CN=Alice User");
    assert_eq!((id.name(), id.proxies), ("alice", 1));
    let creds = Credentials::load_cert_key(&pki.path("user.pem"), &pki.path("user.key")).unwrap();
    let id = login(&pki, &server, creds, now()).unwrap();
    assert_eq!((id.name(), id.proxies), ("alice", 0));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn bad_credentials_are_refused() {
    let pki = Pki::new();
    let server = pki.server();
    let proxy = || Credentials::load_proxy(&pki.path("proxy")).unwrap();
    // expired, and not yet valid (the clock moved, not the certificates)
    let later = now() + 3 * 86400;
    let err = login(&pki, &server, proxy(), later).unwrap_err();
    assert!(err.to_string().contains("Proxy: certificate expired"), "{err}");
    let earlier = now() - 86400;
    let err = login(&pki, &server, proxy(), earlier).unwrap_err();
    assert!(err.to_string().contains("certificate expired"), "{err}");
    // wrong CA: the client's issuer is unknown to the server
    let other = Credentials::load_cert_key(&pki.path("other.pem"), &pki.path("other.key")).unwrap();
    let err = login(&pki, &server, other, now()).unwrap_err();
    assert!(matches!(err, GsiError::UnknownCa(_)), "{err}");
    // badly signed proxy
    let bad = Credentials::load_proxy(&pki.path("proxy-badsig")).unwrap();
    let err = login(&pki, &server, bad, now()).unwrap_err();
    assert!(err.to_string().contains("Proxy: signature verification failed"), "{err}");
    // a key that is not the proxy's: the client signs with the user key
    let mut wrong = proxy();
    wrong.key = Credentials::load_cert_key(&pki.path("user.pem"), &pki.path("user.key")).unwrap().key;
    let err = login(&pki, &server, wrong, now()).unwrap_err();
    assert_eq!(err, GsiError::KeyMismatch);
    // the gridmap required and silent
    let strict = pki.server().gridmap(Gridmap::parse(""), true);
    let err = login(&pki, &strict, proxy(), now()).unwrap_err();
    assert!(matches!(err, GsiError::NotMapped(_)), "{err}");
    // the server's certificate checked by the client: a wrong host
    let mut client = ClientHandshake::new(Arc::new(proxy()), pki.store(), "elsewhere.example");
    let mut srv = server.handshake();
    let ServerStep::More(reply) = srv.step(&server, &client.first(server.offer().as_bytes()).unwrap(), now()).unwrap() else {
        panic!()
    };
    assert!(matches!(client.next(&reply, now()), Err(GsiError::ServerName(_))));
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
fn revoked_certificates_are_refused() {
    let pki = Pki::new();
    let d = pki.dir.path();
    run(d, "mkdir -p demoCA && touch demoCA/index.txt && echo 01 > demoCA/crlnumber && \
        printf '[ca]\\ndefault_ca=c\\n[c]\\ndatabase=demoCA/index.txt\\ncrlnumber=demoCA/crlnumber\\ndefault_md=sha256\\ndefault_crl_days=30\\n' > ca.cnf && \
        openssl ca -config ca.cnf -keyfile ca.key -cert ca.pem -revoke user.pem 2>/dev/null && \
        openssl ca -config ca.cnf -keyfile ca.key -cert ca.pem -gencrl -out crl.pem 2>/dev/null && \
        cp crl.pem certs/$(openssl x509 -noout -subject_hash -in ca.pem).r0");
    let server = pki.server();
    let err = login(&pki, &server, Credentials::load_proxy(&pki.path("proxy")).unwrap(), now()).unwrap_err();
    assert!(matches!(err, GsiError::Revoked(_)), "{err}");
}
