//! The `sss` protocol against the stock xrootd 5.5.3, with keytabs the real
//! `xrdsssadmin` writes: (a) the stock `xrdcp`/`xrdfs` authenticate to our
//! server ([`SssAuth`]) and read and write, the identity deciding what
//! `LocalFs`'s `AccessPolicy` allows; (b) our client authenticates to
//! the stock server (`sec.protocol sss -s FILE`, `sec.protbind * only sss`)
//! and reads and writes; (c) credentials sealed with a wrong key, stale, or
//! naming another address are refused with the stock messages and the
//! link serves nothing, while another session keeps working.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use xroot::client::{Client, Config as ClientConfig, Error, OpenFlags};
use xroot::proto::request::{Auth, Expect, OpenOptions, Protocol};
use xroot::proto::response::SecProtocol;
use xroot::proto::response::{LoginResponse, Response};
use xroot::proto::{ClientHandshake, ErrorCode};
use xroot::sec::sss::{self, Key, Keytab, Params};
use xroot::server::local::{Access, AccessPolicy};
use xroot::server::{AuthContext, AuthOutcome, Authenticator, Config, Identity, LocalFs, SssAuth};
use xroot_testkit::raw::{login_request, open_request, Raw};
use xroot_testkit::sss::{admin_add, stock_server, tools_available};
use xroot_testkit::stock::StockServer;

/// The line of `keytab` for key `name`, written alone to `out` (mode 0600).
fn one_key(keytab: &Path, name: &str, out: &Path) -> PathBuf {
    let text = std::fs::read_to_string(keytab).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!(" n:{name} ")))
        .unwrap_or_else(|| panic!("no key {name} in {text}"));
    write_keytab(out, line)
}

fn write_keytab(out: &Path, text: &str) -> PathBuf {
    std::fs::write(out, text).unwrap();
    std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o600)).unwrap();
    out.to_path_buf()
}

/// Keytabs made by `xrdsssadmin` in a temp dir: `all.kt` with `open`
/// (user `anybody`, group `users`) and `bob` (user `bob`, group `wheel`),
/// and `open.kt`, `bob.kt` with one key each.
struct Keytabs {
    dir: tempfile::TempDir,
    all: PathBuf,
    open: PathBuf,
    bob: PathBuf,
}

fn keytabs() -> Keytabs {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all.kt");
    admin_add(&all, "open", "anybody", "users");
    admin_add(&all, "bob", "bob", "wheel");
    let open = one_key(&all, "open", &dir.path().join("open.kt"));
    let bob = one_key(&all, "bob", &dir.path().join("bob.kt"));
    Keytabs {
        dir,
        all,
        open,
        bob,
    }
}

/// [`SssAuth`] that records the identities it accepts.
#[derive(Clone)]
struct Recording {
    inner: Arc<SssAuth>,
    seen: Arc<Mutex<Vec<Identity>>>,
}

impl Authenticator for Recording {
    fn protocols(&self) -> Vec<SecProtocol> {
        self.inner.protocols()
    }

    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        let out = self.inner.authenticate(ctx, credtype, cred);
        if let AuthOutcome::Accepted(id) = &out {
            self.seen.lock().unwrap().push(id.clone());
        }
        out
    }
}

/// Our server on `dir` with `sss` from `keytab`; its address and the
/// identities it accepted.
async fn our_server(dir: &Path, keytab: &Path) -> (SocketAddr, Arc<Mutex<Vec<Identity>>>) {
    our_server_with(LocalFs::new(dir).unwrap(), keytab).await
}

/// As [`our_server`], serving `fs`.
async fn our_server_with(fs: LocalFs, keytab: &Path) -> (SocketAddr, Arc<Mutex<Vec<Identity>>>) {
    let auth = Recording {
        inner: Arc::new(SssAuth::load(keytab).unwrap()),
        seen: Arc::default(),
    };
    let seen = auth.seen.clone();
    let config = Config {
        authenticator: Some(Arc::new(auth)),
        ..Config::default()
    };
    let addr = xroot_testkit::ours::serve_with(fs, config).await;
    (addr, seen)
}

/// A stock tool with `XrdSecPROTOCOL=sss` and `XrdSecSSSKT=keytab` (or
/// none), `HOME` a fresh dir (no `~/.xrd/sss.keytab`).
async fn stock(tool: &str, keytab: Option<&Path>, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(tool);
    cmd.args(args)
        .env("XrdSecPROTOCOL", "sss")
        .env("HOME", home.path())
        .env_remove("XrdSecSSSKT")
        .env_remove("XrdSecsssKT")
        .stdin(Stdio::null());
    if let Some(kt) = keytab {
        cmd.env("XrdSecSSSKT", kt);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .expect("run the stock tool");
    drop(home);
    out
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// (a) The stock xrdcp and xrdfs authenticate to our server with keytabs
/// `xrdsssadmin` wrote: they read and write, under the identity the key
/// gives (the stock client sends the name `nobody`, which a key of user
/// `anybody` takes, as the stock server does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn stock_clients_authenticate_to_our_server() {
    if !tools_available() {
        return;
    }
    let kt = keytabs();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(300_000)).unwrap();
    let (addr, seen) = our_server(data.path(), &kt.all).await;
    let url = |p: &str| format!("root://{addr}/{p}");
    let out_dir = tempfile::tempdir().unwrap();

    // read with the `anybody` key
    let dest = out_dir.path().join("read.bin");
    let out = stock(
        "xrdcp",
        Some(&kt.open),
        &["-f", &url("/in.bin"), dest.to_str().unwrap()],
    )
    .await;
    assert!(out.status.success(), "xrdcp read: {out:?}");
    assert_eq!(std::fs::read(&dest).unwrap(), pattern(300_000));
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&Identity {
            group: Some("users".into()),
            ..Identity::new("sss", "nobody")
        })
    );

    // write with bob's key
    let src = out_dir.path().join("up.bin");
    std::fs::write(&src, pattern(70_000)).unwrap();
    let out = stock(
        "xrdcp",
        Some(&kt.bob),
        &["-f", src.to_str().unwrap(), &url("/up.bin")],
    )
    .await;
    assert!(out.status.success(), "xrdcp write: {out:?}");
    assert_eq!(
        std::fs::read(data.path().join("up.bin")).unwrap(),
        pattern(70_000)
    );
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&Identity {
            group: Some("wheel".into()),
            ..Identity::new("sss", "bob")
        })
    );

    // xrdfs
    let out = stock("xrdfs", Some(&kt.open), &[&addr.to_string(), "ls", "/"]).await;
    assert!(out.status.success(), "xrdfs ls: {out:?}");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("/in.bin") && listing.contains("/up.bin"),
        "{listing}"
    );
    let accepted = seen.lock().unwrap().len();
    assert_eq!(accepted, 3);

    // the identity decides what the backend allows: only bob may write
    let policy = AccessPolicy::new(Access::ReadOnly).allow_user("bob", "/", Access::ReadWrite);
    let fs = LocalFs::new(data.path()).unwrap().with_policy(policy);
    let (guarded, _) = our_server_with(fs, &kt.all).await;
    let to = |name: &str| format!("root://{guarded}//{name}");
    let out = stock(
        "xrdcp",
        Some(&kt.open),
        &["-f", src.to_str().unwrap(), &to("nobody.bin")],
    )
    .await;
    assert!(!out.status.success(), "nobody wrote: {out:?}");
    assert!(!data.path().join("nobody.bin").exists());
    let out = stock(
        "xrdcp",
        Some(&kt.bob),
        &["-f", src.to_str().unwrap(), &to("bob.bin")],
    )
    .await;
    assert!(out.status.success(), "bob's write: {out:?}");
    assert_eq!(
        std::fs::read(data.path().join("bob.bin")).unwrap(),
        pattern(70_000)
    );

    // without a keytab the stock client has no credential: nothing served
    let dest = out_dir.path().join("none.bin");
    let out = stock(
        "xrdcp",
        None,
        &["-f", &url("/in.bin"), dest.to_str().unwrap()],
    )
    .await;
    assert!(!out.status.success(), "xrdcp without a keytab: {out:?}");
    assert!(!dest.exists());
    // a keytab whose key the server does not have
    let stranger = tempfile::tempdir().unwrap();
    let other = stranger.path().join("other.kt");
    admin_add(&other, "stranger", "anybody", "users");
    let out = stock(
        "xrdcp",
        Some(&other),
        &["-f", &url("/in.bin"), dest.to_str().unwrap()],
    )
    .await;
    // (it reports "No protocols left to try" after the refusal)
    assert!(!out.status.success(), "xrdcp with an unknown key: {out:?}");
    assert!(!dest.exists());
    assert_eq!(seen.lock().unwrap().len(), accepted);
}

fn client_with(keytab: Option<&Path>) -> Client {
    Client::with_config(ClientConfig {
        sss_keytab: keytab.map(Path::to_path_buf),
        sec_protocols: None,
        ..ClientConfig::default()
    })
}

/// The stock server's log.
fn stock_log(server: &StockServer) -> String {
    let log = server.state.path().join("test/xrootd.log");
    std::fs::read_to_string(&log).unwrap_or_default()
}

/// (b) Our client authenticates to the stock xrootd configured with
/// `sec.protocol sss -s FILE` and `sec.protbind * only sss`: it reads and
/// writes, and the stock server names it by the name it sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn our_client_authenticates_to_the_stock_server() {
    if !tools_available() {
        return;
    }
    let kt = keytabs();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(200_000)).unwrap();
    let Some((server, _ktdir)) = stock_server(data.path(), &kt.all) else {
        return;
    };
    let base = format!("root://alice@127.0.0.1:{}/", server.port);
    let client = client_with(Some(&kt.open));
    let f = client
        .open(&format!("{base}/in.bin"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(f.read_at(0, 200_000).await.unwrap(), pattern(200_000));
    f.close().await.unwrap();
    let f = client
        .open(&format!("{base}/out.bin"), OpenFlags::NEW)
        .await
        .unwrap();
    f.write_at(0, Bytes::from(pattern(50_000))).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(
        std::fs::read(data.path().join("out.bin")).unwrap(),
        pattern(50_000)
    );
    let log = stock_log(&server);
    assert!(
        log.contains("Protocol 'sss'") && log.contains("Name 'alice'"),
        "the stock server's log:\n{log}"
    );

    // bob's key: the stock server names the key's user
    let client = client_with(Some(&kt.bob));
    let fs = client
        .fs(&format!("root://carol@127.0.0.1:{}/", server.port))
        .unwrap();
    assert_eq!(fs.stat("/out.bin").await.unwrap().size, 50_000);
    assert!(
        stock_log(&server).contains("login as bob"),
        "{}",
        stock_log(&server)
    );

    // XrdSecPROTOCOL without sss: no protocol left to answer with
    let client = Client::with_config(ClientConfig {
        sss_keytab: Some(kt.open.clone()),
        sec_protocols: Some(vec!["unix".into()]),
        ..ClientConfig::default()
    });
    let err = client
        .open(&format!("{base}/in.bin"), OpenFlags::READ)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AuthUnsupported { .. }), "{err:?}");

    // a keytab others may read is refused, naming the file
    let loose = kt.dir.path().join("loose.kt");
    std::fs::copy(&kt.open, &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = client_with(Some(&loose))
        .open(&format!("{base}/in.bin"), OpenFlags::READ)
        .await
        .unwrap_err();
    match &err {
        Error::Credential {
            protocol, reason, ..
        } => {
            assert_eq!(protocol, "sss");
            assert!(
                reason.contains("loose.kt") && reason.contains("not secure"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A raw session logged in to `addr` (our server or the stock one): the
/// connection and the `sss` parameters of its login reply.
async fn raw_login(addr: SocketAddr) -> (Raw, Params) {
    let mut r = Raw::connect(addr).await;
    let mut b = BytesMut::new();
    ClientHandshake.encode(&mut b);
    r.write(&b).await;
    let proto = Protocol {
        clientpv: 0x511,
        expect: Expect(3),
        ..Default::default()
    };
    r.send(0, proto).await;
    for _ in 0..2 {
        assert!(
            matches!(r.expect().await.1, Response::Ok(_)),
            "handshake, protocol"
        );
    }
    r.send(1, login_request()).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("login reply")
    };
    let login = LoginResponse::decode(body).unwrap();
    let protocols = login.protocols().unwrap();
    let sss = protocols
        .iter()
        .find(|p| &p.name[..] == b"sss")
        .expect("sss offered");
    (r, Params::parse(&sss.params).unwrap())
}

/// Sends `cred` as the `sss` credential of `r`; the server's answer.
async fn send_auth(r: &mut Raw, cred: Vec<u8>) -> Response {
    r.send(
        2,
        Auth {
            credtype: *b"sss\0",
            credentials: Bytes::from(cred),
        },
    )
    .await;
    r.expect().await.1
}

/// The refusal message of `answer`, which must be `kXR_AuthFailed`.
fn auth_failed(answer: Response) -> String {
    match answer {
        Response::Error(e) if e.code == ErrorCode::AUTH_FAILED => e.message_lossy().into_owned(),
        other => panic!("expected kXR_AuthFailed, got {other:?}"),
    }
}

/// The credentials of (c), sealed for a raw session whose local address is
/// `local`, and the stock message each is refused with.
fn bad_credentials(good: &Key, local: SocketAddr) -> Vec<(&'static str, Vec<u8>)> {
    let now = SystemTime::now();
    let me = sss::Entity {
        host: Some(sss::address_item(local)),
        name: Some("mallory".into()),
        ..sss::Entity::default()
    };
    let wrong_key = Key::new(
        good.id,
        &good.name,
        "anybody",
        "users",
        b"not the shared secret",
    );
    let unknown = Key::new(12345, "open", "anybody", "users", good.value());
    let elsewhere = sss::Entity {
        host: Some(sss::address_item(SocketAddr::new(
            local.ip(),
            local.port() ^ 1,
        ))),
        ..me.clone()
    };
    vec![
        (
            "Unable to decrypt credentials.",
            sss::seal(&wrong_key, &me, now, true).unwrap(),
        ),
        (
            "Decryption key not found.",
            sss::seal(&unknown, &me, now, true).unwrap(),
        ),
        (
            "Credentials expired (check for clock skew).",
            sss::seal(good, &me, now - Duration::from_secs(60), true).unwrap(),
        ),
        (
            "IP address mismatch.",
            sss::seal(good, &elsewhere, now, true).unwrap(),
        ),
    ]
}

/// (c) Against our server: credentials sealed with a wrong key, for an
/// unknown key, too old, or naming another address are refused with
/// `kXR_AuthFailed` and the stock message, and the link then serves
/// nothing; a session authenticated before keeps reading meanwhile, and
/// our client reports a wrong key as the server's typed refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn bad_credentials_are_refused_by_our_server() {
    if !tools_available() {
        return;
    }
    let kt = keytabs();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(100_000)).unwrap();
    let (addr, seen) = our_server(data.path(), &kt.all).await;
    let url = format!("root://{addr}//in.bin");

    // a good session, open across the refusals
    let good = client_with(Some(&kt.open));
    let kept = good.open(&url, OpenFlags::READ).await.unwrap();
    assert_eq!(kept.read_at(0, 10).await.unwrap(), pattern(10));

    let keys = Keytab::load(&kt.open, SystemTime::now()).unwrap();
    let key = &keys.keys()[0];
    for i in 0..4 {
        let (mut r, params) = raw_login(addr).await;
        assert_eq!(params, Params::default(), "0.+13:");
        let local = r.s.local_addr().unwrap();
        let (message, cred) = bad_credentials(key, local).swap_remove(i);
        assert_eq!(auth_failed(send_auth(&mut r, cred).await), message);
        // nothing is served on that link
        r.send(3, open_request("/in.bin", OpenOptions::READ)).await;
        match r.next().await {
            None => {}
            Some((_, Response::Error(e))) => {
                assert_eq!(e.code, ErrorCode::INVALID_REQUEST, "{e:?}");
                r.expect_closed().await;
            }
            Some(other) => panic!("served after a refused credential: {other:?}"),
        }
        assert_eq!(kept.read_at(1000, 10).await.unwrap(), pattern(1010)[1000..]);
    }
    // the same raw path with a good credential works
    let (mut r, _) = raw_login(addr).await;
    let me = sss::Entity {
        host: Some(sss::address_item(r.s.local_addr().unwrap())),
        name: Some("mallory".into()),
        ..sss::Entity::default()
    };
    let cred = sss::seal(key, &me, SystemTime::now(), true).unwrap();
    assert!(matches!(send_auth(&mut r, cred).await, Response::Ok(_)));
    // served now
    r.send(3, open_request("/nope", OpenOptions::READ)).await;
    r.expect_error(ErrorCode::NOT_FOUND).await;
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&Identity {
            group: Some("users".into()),
            ..Identity::new("sss", "mallory")
        })
    );

    // our client with a keytab whose key has the right id but another value
    let text = std::fs::read_to_string(&kt.open).unwrap();
    let (head, _) = text.rsplit_once("k:").unwrap();
    let forged = write_keytab(
        &kt.dir.path().join("forged.kt"),
        &format!("{head}k:{}", "ab".repeat(32)),
    );
    let err = client_with(Some(&forged))
        .open(&url, OpenFlags::READ)
        .await
        .unwrap_err();
    match &err {
        Error::Server { code, message } => {
            assert_eq!(*code, ErrorCode::AUTH_FAILED);
            assert_eq!(message, "Unable to decrypt credentials.");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(kept.read_at(0, 100_000).await.unwrap(), pattern(100_000));
    kept.close().await.unwrap();
}

/// The stock server refuses the same bad credentials with the same
/// messages (the reference for (c)).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn bad_credentials_are_refused_alike_by_the_stock_server() {
    if !tools_available() {
        return;
    }
    let kt = keytabs();
    let data = tempfile::tempdir().unwrap();
    let Some((server, _ktdir)) = stock_server(data.path(), &kt.all) else {
        return;
    };
    let addr: SocketAddr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let keys = Keytab::load(&kt.open, SystemTime::now()).unwrap();
    let key = &keys.keys()[0];
    for i in 0..4 {
        let (mut r, params) = raw_login(addr).await;
        assert_eq!(params, Params::default(), "the stock server's 0.+13:");
        let local = r.s.local_addr().unwrap();
        let (message, cred) = bad_credentials(key, local).swap_remove(i);
        assert_eq!(auth_failed(send_auth(&mut r, cred).await), message);
    }
    let (mut r, _) = raw_login(addr).await;
    let me = sss::Entity {
        host: Some(sss::address_item(r.s.local_addr().unwrap())),
        name: Some("mallory".into()),
        ..sss::Entity::default()
    };
    let cred = sss::seal(key, &me, SystemTime::now(), true).unwrap();
    assert!(matches!(send_auth(&mut r, cred).await, Response::Ok(_)));
    // served now
    r.send(3, open_request("/nope", OpenOptions::READ)).await;
    r.expect_error(ErrorCode::NOT_FOUND).await;
    assert!(stock_log(&server).contains("Name 'mallory'"));
}

/// `serve` and `xcache` with `--auth` and `--sss-keytab`: a missing or
/// unusable keytab stops them at startup with a message naming the flag
/// or the file; `ztn` is refused; `--auth unix,sss` serves the stock
/// `xrdcp` forced to `sss`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn serve_and_xcache_auth_flags() {
    use std::io::{BufRead, BufReader};
    use xroot_testkit::example::example_bin;
    if !tools_available() {
        return;
    }
    let kt = keytabs();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(5000)).unwrap();
    let dir = data.path().to_str().unwrap();
    let loose = kt.dir.path().join("loose.kt");
    std::fs::copy(&kt.all, &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let missing = kt.dir.path().join("missing.kt");
    let cache = tempfile::tempdir().unwrap();
    let xcache = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "--origin",
            "root://127.0.0.1:1",
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--port",
            "0",
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let serve = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["--port".to_string(), "0".to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(dir.to_string());
        args
    };
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        ("serve", serve(&["--auth", "sss"]), "--sss-keytab".into()),
        (
            "serve",
            serve(&["--auth", "sss", "--sss-keytab", missing.to_str().unwrap()]),
            missing.display().to_string(),
        ),
        (
            "serve",
            serve(&[
                "--auth",
                "unix,sss",
                "--sss-keytab",
                loose.to_str().unwrap(),
            ]),
            format!("{} is not secure", loose.display()),
        ),
        ("serve", serve(&["--auth", "ztn"]), "ztn".into()),
        ("serve", serve(&["--auth", "krb5"]), "krb5".into()),
        (
            "xcache",
            xcache(&["--auth", "host,sss"]),
            "--sss-keytab".into(),
        ),
        (
            "xcache",
            xcache(&["--auth", "sss", "--sss-keytab", missing.to_str().unwrap()]),
            missing.display().to_string(),
        ),
    ];
    for (bin, args, says) in cases {
        let out = Command::new(example_bin(bin))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bin} {args:?} started");
        assert!(stderr.contains(&says), "{bin} {args:?}: {stderr}");
    }

    let mut child = Command::new(example_bin("serve"))
        .args(serve(&[
            "--auth",
            "unix,sss",
            "--sss-keytab",
            kt.all.to_str().unwrap(),
        ]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("serve listening on ")
        .unwrap()
        .to_string();
    let dest = kt.dir.path().join("got.bin");
    let out = stock(
        "xrdcp",
        Some(&kt.open),
        &[
            "-f",
            &format!("root://{addr}//in.bin"),
            dest.to_str().unwrap(),
        ],
    )
    .await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(&dest).unwrap(), pattern(5000));
}

/// Keys of other lengths than the default 32 bytes (`xrdsssadmin -l`):
/// OpenSSL's Blowfish takes 1 to 72 key bytes (ignoring the rest), which
/// our cipher matches both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn keys_of_every_length_interoperate() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all.kt");
    let lengths = [2usize, 8, 56, 64, 72, 100, 128];
    for len in lengths {
        let mut child = Command::new("xrdsssadmin")
            .args(["-k", &format!("len{len}"), "-u", "anybody", "-g", "users"])
            .args(["-l", &len.to_string(), "add"])
            .arg(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"y\n").unwrap();
        assert!(child.wait().unwrap().success());
    }
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(3000)).unwrap();
    let Some((server, _ktdir)) = stock_server(data.path(), &all) else {
        return;
    };
    let (ours, _) = our_server(data.path(), &all).await;
    for len in lengths {
        let kt = one_key(
            &all,
            &format!("len{len}"),
            &dir.path().join(format!("{len}.kt")),
        );
        assert_eq!(
            Keytab::load(&kt, SystemTime::now()).unwrap().keys()[0]
                .value()
                .len(),
            (len / 4 * 4).max(4),
            "xrdsssadmin makes keys of a multiple of 4 bytes, at least 4"
        );
        // our client, the stock server
        let url = format!("root://127.0.0.1:{}//in.bin", server.port);
        let f = client_with(Some(&kt))
            .open(&url, OpenFlags::READ)
            .await
            .unwrap_or_else(|e| panic!("{len}-byte key, stock server: {e}"));
        assert_eq!(f.read_at(0, 3000).await.unwrap(), pattern(3000));
        // the stock client, our server
        let dest = dir.path().join(format!("{len}.bin"));
        let out = stock(
            "xrdcp",
            Some(&kt),
            &[
                "-f",
                &format!("root://{ours}//in.bin"),
                dest.to_str().unwrap(),
            ],
        )
        .await;
        assert!(out.status.success(), "{len}-byte key, our server: {out:?}");
    }
}

/// Two keytabs `xrdsssadmin` made in the same second give their keys the
/// same id (`N:`, from the time; seen here) and a site concatenates them
/// (xrootd#1683, #591). Our server opens a credential with each key of
/// its id until one checks, so both keys' clients log in, each under its
/// own key's user; the stock 5.5.3 keeps only the last key of an id, so
/// the first key's client is refused there: both answers side by side.
/// The second key's line is given the first's id, so the test does not
/// depend on the second in which the keys are made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn keys_sharing_an_id_each_authenticate() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one.kt"), dir.path().join("two.kt"));
    admin_add(&one, "alice", "alice", "users");
    admin_add(&two, "bob", "bob", "wheel");
    let id = |line: &str| {
        let at = line.find(" N:").expect("an N: field") + 3;
        line[at..].split(' ').next().unwrap().to_string()
    };
    let first = std::fs::read_to_string(&one).unwrap().trim().to_string();
    let second = std::fs::read_to_string(&two).unwrap().trim().to_string();
    let second = second.replace(
        &format!(" N:{} ", id(&second)),
        &format!(" N:{} ", id(&first)),
    );
    assert_eq!(id(&first), id(&second));
    write_keytab(&one, &first);
    write_keytab(&two, &second);
    let both = write_keytab(&dir.path().join("both.kt"), &format!("{first}\n{second}\n"));

    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.bin"), pattern(1000)).unwrap();
    let (addr, seen) = our_server(data.path(), &both).await;
    for (kt, user) in [(&one, "alice"), (&two, "bob")] {
        let out = stock("xrdfs", Some(kt), &[&addr.to_string(), "ls", "/"]).await;
        assert!(out.status.success(), "our server, {user}'s key: {out:?}");
        assert_eq!(seen.lock().unwrap().last().unwrap().name, user);
    }

    let Some((server, _ktdir)) = stock_server(data.path(), &both) else {
        return;
    };
    let at = format!("127.0.0.1:{}", server.port);
    let out = stock("xrdfs", Some(&two), &[&at, "ls", "/"]).await;
    assert!(
        out.status.success(),
        "the stock server, the last key: {out:?}"
    );
    let out = stock("xrdfs", Some(&one), &[&at, "ls", "/"]).await;
    assert!(
        !out.status.success(),
        "the stock server keeps only the last key of an id: {out:?}"
    );
}
