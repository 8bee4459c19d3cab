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
use std::process::Output;
use std::sync::{Arc, Mutex};

use xroot::client::{Client, Config as ClientConfig, Error};
use xroot::proto::response::SecProtocol;
use xroot::proto::ErrorCode;
use xroot::sec::gsi::{bucket::kind, Credentials, SutBuffer};
use xroot::server::{
    AuthContext, AuthOutcome, AuthState, Authenticator, Config, GsiAuth, Identity, LocalFs,
};
use xroot_testkit::pki::{GsiPki, TestPki};
use xroot_testkit::stock::{program_available, xrootd_available, StockServer};

/// The test kit's `gsi` PKI (`xroot_testkit::pki::GsiPki`: a CA made by
/// `openssl`, its hashed directory, the host certificate for localhost,
/// the user `/CN=Alice User`, a gridmap naming it `alice`) with a proxy of
/// the user from the stock `xrdgsiproxy`.
struct Pki {
    gsi: GsiPki,
    proxy: PathBuf,
}

impl Pki {
    fn new() -> Pki {
        let gsi = GsiPki::new();
        let proxy = gsi.xrdgsiproxy("proxy.pem", "1:00");
        Pki { gsi, proxy }
    }

    /// `name` in the PKI's directory.
    fn path(&self, name: &str) -> PathBuf {
        self.gsi.path(name)
    }

    fn ca_dir(&self) -> PathBuf {
        self.gsi.pki.ca_dir.clone()
    }

    fn auth(&self) -> GsiAuth {
        GsiAuth::load(
            &self.gsi.pki.host_cert,
            &self.gsi.pki.host_key,
            &self.gsi.pki.ca_dir,
            Some(&self.gsi.gridmap),
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
    /// Every kXR_auth payload, in order.
    creds: Arc<Mutex<Vec<Vec<u8>>>>,
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
        self.creds.lock().unwrap().push(cred.to_vec());
        let out = self.inner.authenticate_round(ctx, credtype, cred, state);
        if let AuthOutcome::Accepted(id) = &out {
            self.seen.lock().unwrap().push(id.clone());
        }
        out
    }
}

/// Our server on `dir` with [`GsiAuth`] of `pki`.
async fn our_server(pki: &Pki, dir: &Path) -> (SocketAddr, Arc<Mutex<Vec<Identity>>>) {
    let (addr, seen, _) = our_recording_server(pki, dir).await;
    (addr, seen)
}

/// Our server on `dir`; the identities it accepted and the payloads of
/// every kXR_auth it got.
#[allow(clippy::type_complexity)]
async fn our_recording_server(
    pki: &Pki,
    dir: &Path,
) -> (
    SocketAddr,
    Arc<Mutex<Vec<Identity>>>,
    Arc<Mutex<Vec<Vec<u8>>>>,
) {
    let auth = Recording {
        inner: Arc::new(pki.auth()),
        seen: Arc::default(),
        creds: Arc::default(),
    };
    let seen = auth.seen.clone();
    let creds = auth.creds.clone();
    let config = Config {
        authenticator: Some(Arc::new(auth)),
        ..Config::default()
    };
    let addr = xroot_testkit::ours::serve_with(LocalFs::new(dir).unwrap(), config).await;
    (addr, seen, creds)
}

/// A stock tool with the PKI's client environment
/// ([`GsiPki::client_command`]: `X509_USER_PROXY` pointing nowhere),
/// `XrdSecPROTOCOL=gsi`, and `env` on top.
async fn stock(pki: &Pki, tool: &str, env: &[(&str, PathBuf)], args: &[String]) -> Output {
    let mut cmd = pki.gsi.client_command(tool, None);
    cmd.args(args).env("XrdSecPROTOCOL", "gsi");
    for (k, v) in env {
        cmd.env(k, v);
    }
    xroot_testkit::tools::run_off_workers(cmd).await
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
    let proxy = [("X509_USER_PROXY", pki.proxy.clone())];
    let out = stock(
        &pki,
        "xrdfs",
        &proxy,
        &[
            format!("root://localhost:{}", addr.port()),
            "ls".into(),
            "/".into(),
        ],
    )
    .await;
    assert!(out.status.success(), "xrdfs ls: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/in.bin");
    let dest = pki.path("read.bin");
    let out = stock(
        &pki,
        "xrdcp",
        &proxy,
        &[
            "-f".into(),
            format!("root://localhost:{}//in.bin", addr.port()),
            dest.display().to_string(),
        ],
    )
    .await;
    assert!(out.status.success(), "xrdcp: {out:?}");
    assert_eq!(std::fs::read(&dest).unwrap(), pattern(300_000));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0],
        Identity {
            dn: Some(pki.gsi.user_dn.clone()),
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
        ("X509_USER_CERT", pki.gsi.user_cert.clone()),
        ("X509_USER_KEY", pki.gsi.user_key.clone()),
        ("XrdSecGSICREATEPROXY", PathBuf::from("0")),
    ];
    let out = stock(
        &pki,
        "xrdfs",
        &env,
        &[
            format!("root://localhost:{}", addr.port()),
            "ls".into(),
            "/".into(),
        ],
    )
    .await;
    assert!(out.status.success(), "xrdfs ls: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/f");
    assert_eq!(seen.lock().unwrap()[0].name, "alice");
}

/// The stock server with the kit's gsi (`-gmapopt:2 -crl:0 -dlgpxy:0`,
/// gsi only).
fn stock_server(pki: &Pki, data: &Path) -> Option<StockServer> {
    let lines = pki.gsi.stock_server_lines();
    StockServer::start(data, &lines.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Our client with `creds` (sent as they are) and the PKI's CAs.
fn our_client(pki: &Pki, creds: Credentials) -> Client {
    Client::with_config(ClientConfig {
        x509_credentials: Some(Arc::new(creds)),
        x509_cert_dir: Some(pki.ca_dir()),
        sec_protocols: Some(vec!["gsi".into()]),
        ..ClientConfig::default()
    })
}

async fn ls(client: &Client, port: u16) -> Result<Vec<String>, Error> {
    let entries = client
        .fs(&format!("root://localhost:{port}"))?
        .dirlist("/", false)
        .await?;
    Ok(entries.into_iter().map(|e| e.name).collect())
}

fn proxy(pki: &Pki) -> Credentials {
    Credentials::load_proxy(&pki.proxy.clone()).unwrap()
}

/// Our client logs in to the stock server with the stock `xrdgsiproxy`'s
/// proxy and with the user certificate, and lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn our_client_to_the_stock_server() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let Some(server) = stock_server(&pki, data.path()) else {
        return;
    };
    let names = ls(&our_client(&pki, proxy(&pki)), server.port)
        .await
        .unwrap();
    assert_eq!(names, ["f"]);
    let cert = Credentials::load_cert_key(&pki.gsi.user_cert, &pki.gsi.user_key).unwrap();
    let names = ls(&our_client(&pki, cert), server.port).await.unwrap();
    assert_eq!(names, ["f"]);
    assert!(
        server.log_tail().contains("login as alice"),
        "{}",
        server.log_tail()
    );
}

/// Our client logs in to our server; its two messages have the stock
/// client's layout (steps, bucket types in order, and the bytes of the
/// buckets that are not random or keys: crypto module, version, options,
/// chosen cipher and digest, the public key's PEM length).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn ours_to_ours_and_the_bytes_beside_the_stock_clients() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let (addr, seen, creds) = our_recording_server(&pki, data.path()).await;
    assert_eq!(
        ls(&our_client(&pki, proxy(&pki)), addr.port())
            .await
            .unwrap(),
        ["f"]
    );
    assert_eq!(seen.lock().unwrap()[0].name, "alice");
    let ours: Vec<Vec<u8>> = creds.lock().unwrap().drain(..).collect();
    let out = stock(
        &pki,
        "xrdfs",
        &[("X509_USER_PROXY", pki.proxy.clone())],
        &[
            format!("root://localhost:{}", addr.port()),
            "ls".into(),
            "/".into(),
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let theirs: Vec<Vec<u8>> = creds.lock().unwrap().drain(..).collect();
    assert_eq!((ours.len(), theirs.len()), (2, 2));
    for (o, t) in ours.iter().zip(&theirs) {
        let (o, t) = (SutBuffer::decode(o).unwrap(), SutBuffer::decode(t).unwrap());
        assert_eq!((o.protocol.as_str(), o.step), (t.protocol.as_str(), t.step));
        let kinds = |b: &SutBuffer| b.buckets.iter().map(|b| b.kind).collect::<Vec<_>>();
        assert_eq!(kinds(&o), kinds(&t), "step {}", o.step);
        for k in [
            kind::CRYPTOMOD,
            kind::VERSION,
            kind::CLNT_OPTS,
            kind::CIPHER_ALG,
            kind::MD_ALG,
        ] {
            assert_eq!(o.get(k), t.get(k), "bucket {k} of step {}", o.step);
        }
        assert_eq!(
            o.get(kind::PUK).map(<[u8]>::len),
            t.get(kind::PUK).map(<[u8]>::len)
        );
    }
    // the stock client names both hashes of its CA (new and old), we the new
    let hash = |b: &Vec<u8>| {
        SutBuffer::decode(b)
            .unwrap()
            .get_str(kind::ISSUER_HASH)
            .unwrap()
    };
    assert!(
        hash(&theirs[0]).starts_with(&hash(&ours[0])),
        "{} vs {}",
        hash(&ours[0]),
        hash(&theirs[0])
    );
}

/// A credential gone bad, as our client sends it (it checks nothing it
/// sends here), to our server and to the stock server: both refuse with
/// kXR_AuthFailed and the same message (`Secgsi: ErrParseBuffer: ...:
/// kXGC_cert`; for a foreign CA ours also names the issuer's hash) and
/// list nothing. Each refusal's text is printed beside the stock's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn bad_credentials_are_refused_by_both_servers() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let (ours, seen) = our_server(&pki, data.path()).await;
    let Some(stock) = stock_server(&pki, data.path()) else {
        return;
    };
    let cert = |(c, k): (PathBuf, PathBuf)| Credentials::load_cert_key(&c, &k).unwrap();
    // certificates of our CA out of their dates (made by `openssl ca`),
    // and one of a CA the servers do not know
    let old = pki
        .gsi
        .pki
        .user_between("old", "Old User", "20200101000000Z", "20200102000000Z");
    let young =
        pki.gsi
            .pki
            .user_between("young", "Young User", "20991231000000Z", "21000101000000Z");
    let elsewhere = TestPki::with_ca_name("elsewhere CA");
    let other = elsewhere.user("other", "Bob", 30);
    // a proxy whose signature is altered
    let text = std::fs::read(&pki.proxy).unwrap();
    let blocks = xroot::sec::gsi::x509::pem_blocks(&text).unwrap();
    let mut bad = String::new();
    for (i, (label, der)) in blocks.iter().enumerate() {
        let mut der = der.clone();
        if i == 0 {
            *der.last_mut().unwrap() ^= 1;
        }
        bad.push_str(&xroot::sec::gsi::x509::to_pem(label, &der));
    }
    let badsig = Credentials::from_pem(bad.as_bytes(), None, "altered").unwrap();
    let mut wrongkey = proxy(&pki);
    wrongkey.key = cert((pki.gsi.user_cert.clone(), pki.gsi.user_key.clone())).key;
    let cases: Vec<(&str, Credentials, &str)> = vec![
        ("expired", cert(old), "EEC: certificate expired"),
        ("not yet valid", cert(young), "EEC: certificate expired"),
        ("wrong CA", cert(other), "unknown CA"),
        ("key mismatch", wrongkey, ""),
        (
            "badly signed",
            badsig,
            "Proxy: signature verification failed",
        ),
    ];
    for (what, creds, ours_says) in cases {
        let creds = Arc::new(creds);
        let mut answers = Vec::new();
        for port in [ours.port(), stock.port] {
            let client = Client::with_config(ClientConfig {
                x509_credentials: Some(creds.clone()),
                x509_cert_dir: Some(pki.ca_dir()),
                sec_protocols: Some(vec!["gsi".into()]),
                ..ClientConfig::default()
            });
            match ls(&client, port).await {
                Err(Error::Server { code, message }) => {
                    assert_eq!(
                        code,
                        ErrorCode::AUTH_FAILED,
                        "{what} on port {port}: {message}"
                    );
                    answers.push(message);
                }
                other => panic!("{what} on port {port}: {other:?}"),
            }
        }
        eprintln!("{what}:\n  ours:  {}\n  stock: {}", answers[0], answers[1]);
        assert!(answers[0].contains(ours_says), "{what}: {}", answers[0]);
        // the same words as the stock's, but for the issuer we name
        if what != "wrong CA" {
            assert_eq!(answers[0], answers[1], "{what}");
        }
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "our server accepted {:?}",
        seen.lock().unwrap()
    );
}

/// `Config::x509_proxy_file` is read at each login, not when the client
/// is made: a client whose proxy file is missing fails with no `gsi`
/// credential (naming the file), and a client of the same configuration
/// logs in once the proxy is there (a daemon's proxy renewed in place).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl")]
async fn our_client_reads_its_proxy_file_at_each_login() {
    if !peers_available() {
        return;
    }
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let (addr, seen) = our_server(&pki, data.path()).await;
    let file = pki.path("renewed-proxy.pem");
    let config = ClientConfig {
        x509_proxy_file: Some(file.clone()),
        x509_cert_dir: Some(pki.ca_dir()),
        sec_protocols: Some(vec!["gsi".into()]),
        ..ClientConfig::default()
    };
    let client = Client::with_config(config.clone());
    match ls(&client, addr.port()).await {
        Err(Error::Credential {
            protocol, reason, ..
        }) => {
            assert_eq!(protocol, "gsi");
            assert!(reason.contains("renewed-proxy.pem"), "{reason}");
        }
        other => panic!("no proxy yet: {other:?}"),
    }
    std::fs::copy(&pki.proxy, &file).unwrap();
    let client = Client::with_config(config);
    assert_eq!(ls(&client, addr.port()).await.unwrap(), ["f"]);
    assert_eq!(seen.lock().unwrap().len(), 1);
}
