//! `gsi` (X509 certificates and proxies) against the stock xrootd 5.5.3,
//! with a throw-away CA made by `openssl` and proxies made by the stock
//! `xrdgsiproxy`: the stock clients log in to our server with a proxy and
//! with the user certificate itself; our client logs in to the stock
//! server and to ours; bad credentials are refused by our server and by
//! the stock server alike, and nothing is served to them.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use xroot_testkit::stock::{program_available, xrootd_available};
use xroot::proto::response::SecProtocol;
use xroot::server::{AuthContext, AuthOutcome, AuthState, Authenticator, Config, GsiAuth, Identity, LocalFs};

/// The throw-away PKI: `certs/` (the hashed CA directory), the host
/// certificate for localhost, the user certificate, a proxy from the stock
/// `xrdgsiproxy`, a gridmap naming the user `alice`, and credentials gone
/// bad (made by `openssl ca` with chosen dates, an altered signature, a
/// foreign CA, a key that is not the proxy's).
struct Pki {
    dir: tempfile::TempDir,
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sh(d, "set -e; mkdir certs; \
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj '/C=CH/O=xroot-test/CN=Test CA' -addext basicConstraints=critical,CA:TRUE 2>/dev/null; \
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem -days 30 -subj '/C=CH/O=elsewhere/CN=Other CA' -addext basicConstraints=critical,CA:TRUE 2>/dev/null; \
            cp ca.pem certs/; openssl rehash certs; \
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > host.ext; \
            printf 'basicConstraints=CA:FALSE\\n' > user.ext; \
            openssl req -newkey rsa:2048 -nodes -keyout host.key -out host.csr -subj '/C=CH/O=xroot-test/CN=localhost' 2>/dev/null; \
            openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -set_serial 2 -out host.pem -days 30 -extfile host.ext 2>/dev/null; \
            openssl req -newkey rsa:2048 -nodes -keyout user.key -out user.csr -subj '/C=CH/O=xroot-test/CN=Alice User' 2>/dev/null; \
            openssl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 3 -out user.pem -days 30 -extfile user.ext 2>/dev/null; \
            chmod 400 user.key host.key; \
            openssl req -newkey rsa:2048 -nodes -keyout other.key -out other.csr -subj '/C=CH/O=elsewhere/CN=Bob' 2>/dev/null; \
            openssl x509 -req -in other.csr -CA ca2.pem -CAkey ca2.key -set_serial 4 -out other.pem -days 30 -extfile user.ext 2>/dev/null; \
            chmod 400 other.key; \
            xrdgsiproxy init -cert user.pem -key user.key -certdir certs -out proxy.pem -valid 1:00 >/dev/null 2>&1; \
            printf '\"/C=CH/O=xroot-test/CN=Alice User\" alice\\n' > gridmap; \
            mkdir -p demoCA; touch demoCA/index.txt; echo 10 > demoCA/serial; \
            printf '[ca]\\ndefault_ca=c\\n[c]\\ndatabase=demoCA/index.txt\\nserial=demoCA/serial\\nnew_certs_dir=.\\ndefault_md=sha256\\npolicy=p\\nunique_subject=no\\n[p]\\ncommonName=supplied\\n' > ca.cnf; \
            openssl req -newkey rsa:2048 -nodes -keyout old.key -out old.csr -subj '/C=CH/O=xroot-test/CN=Old User' 2>/dev/null; \
            openssl ca -batch -config ca.cnf -keyfile ca.key -cert ca.pem -in old.csr -out old.pem -startdate 20200101000000Z -enddate 20200102000000Z -preserveDN -notext 2>/dev/null; \
            openssl req -newkey rsa:2048 -nodes -keyout young.key -out young.csr -subj '/C=CH/O=xroot-test/CN=Young User' 2>/dev/null; \
            openssl ca -batch -config ca.cnf -keyfile ca.key -cert ca.pem -in young.csr -out young.pem -startdate 20991231000000Z -enddate 21000101000000Z -preserveDN -notext 2>/dev/null; \
            chmod 400 old.key young.key");
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn auth(&self) -> GsiAuth {
        GsiAuth::load(
            &self.path("host.pem"),
            &self.path("host.key"),
            &self.path("certs"),
            Some(&self.path("gridmap")),
            true,
        )
        .unwrap()
    }
}

/// Whether the stock server, its clients, `xrdgsiproxy` and `openssl` are
/// there (panics under `CI=true` when not).
fn peers_available() -> bool {
    xrootd_available()
        && program_available("xrdgsiproxy", &["-h"], "xrdgsiproxy is not installed")
        && program_available("openssl", &["version"], "openssl is not installed")
}

/// [`GsiAuth`] that records the identities it accepts.
#[derive(Clone)]
struct Recording {
    inner: Arc<GsiAuth>,
    seen: Arc<Mutex<Vec<Identity>>>,
}

impl Authenticator for Recording {
    fn protocols(&self) -> Vec<SecProtocol> {
        self.inner.protocols()
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        self.authenticate_round(ctx, credtype, cred, &mut None)
    }

    fn authenticate_round(
        &self,
        ctx: &AuthContext<'_>,
        credtype: &str,
        cred: &[u8],
        state: &mut AuthState,
    ) -> AuthOutcome {
        let out = self.inner.authenticate_round(ctx, credtype, cred, state);
        if let AuthOutcome::Accepted(id) = &out {
            self.seen.lock().unwrap().push(id.clone());
        }
        out
    }
}

/// Our server on `dir` with [`GsiAuth`] of `pki`.
async fn our_server(pki: &Pki, dir: &Path) -> (SocketAddr, Arc<Mutex<Vec<Identity>>>) {
    let auth = Recording {
        inner: Arc::new(pki.auth()),
        seen: Arc::default(),
    };
    let seen = auth.seen.clone();
    let config = Config {
        authenticator: Some(Arc::new(auth)),
        ..Config::default()
    };
    let addr = xroot_testkit::ours::serve_with(LocalFs::new(dir).unwrap(), config).await;
    (addr, seen)
}

/// A stock tool with `X509_CERT_DIR` the PKI's and the environment `env`
/// (`X509_USER_PROXY` pointing nowhere unless given).
async fn stock(pki: &Pki, tool: &str, env: &[(&str, PathBuf)], args: &[String]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(tool);
    cmd.args(args)
        .env("HOME", home.path())
        .env("X509_CERT_DIR", pki.path("certs"))
        .env("X509_USER_PROXY", home.path().join("no-proxy"))
        .env("XrdSecPROTOCOL", "gsi")
        .env_remove("X509_USER_CERT")
        .env_remove("X509_USER_KEY")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output()).await.unwrap().expect("run the stock tool");
    drop(home);
    out
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// The stock xrdcp and xrdfs log in to our server with a proxy from
/// `xrdgsiproxy` (RFC 3820, signed with SHA-1), and read; the session is
/// the gridmap's `alice` with the DN beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn stock_client_to_our_server_with_a_proxy() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(300_000)).unwrap();
    let (addr, seen) = our_server(&pki, data.path()).await;
    let proxy = [("X509_USER_PROXY", pki.path("proxy.pem"))];
    let out = stock(&pki, "xrdfs", &proxy, &[format!("root://localhost:{}", addr.port()), "ls".into(), "/".into()]).await;
    assert!(out.status.success(), "xrdfs ls: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/in.bin");
    let dest = pki.path("read.bin");
    let out = stock(
        &pki,
        "xrdcp",
        &proxy,
        &["-f".into(), format!("root://localhost:{}//in.bin", addr.port()), dest.display().to_string()],
    )
    .await;
    assert!(out.status.success(), "xrdcp: {out:?}");
    assert_eq!(std::fs::read(&dest).unwrap(), pattern(300_000));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0],
        Identity {
            dn: Some("/C=CH/O=xroot-test/CN=Alice User".into()),
            ..Identity::new("gsi", "alice")
        }
    );
}

/// The stock xrdfs logs in to our server with the user certificate and
/// key themselves (no proxy: `XrdSecGSICREATEPROXY=0`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn stock_client_to_our_server_with_the_certificate() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let (addr, seen) = our_server(&pki, data.path()).await;
    let env = [
        ("X509_USER_CERT", pki.path("user.pem")),
        ("X509_USER_KEY", pki.path("user.key")),
        ("XrdSecGSICREATEPROXY", PathBuf::from("0")),
    ];
    let out = stock(&pki, "xrdfs", &env, &[format!("root://localhost:{}", addr.port()), "ls".into(), "/".into()]).await;
    assert!(out.status.success(), "xrdfs ls: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/f");
    assert_eq!(seen.lock().unwrap()[0].name, "alice");
}
