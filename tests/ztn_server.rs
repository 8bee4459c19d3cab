//! `ZtnAuth` in our server over plain links: the `ztn` offer at login, the
//! refusal of `ztn` without TLS (server and client side), and — with the
//! link declared TLS by a test wrapper, since the TLS layer is not in this
//! build — the scopes of an accepted token enforced on every request
//! before it reaches the backend; and `xcache --origin-token-file`.

use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use xroot::client::{Client, Error as ClientError, OpenFlags};
use xroot::proto::request::{
    Auth, Dirlist, Mkdir, Mode, Mv, OpenOptions, Prepare, PrepareOptions, Rm, Stat,
};
use xroot::proto::response::{LoginResponse, Response};
use xroot::proto::ErrorCode;
use xroot::sec::ztn;
use xroot::server::auth::NON_TLS_REFUSAL;
use xroot::server::{
    AuthContext, AuthOutcome, Authenticator, Config, LocalFs, Server, TokenConfig, TokenValidator,
    ZtnAuth,
};
use xroot_testkit::raw::{login_request, open_request, Raw};
use xroot_testkit::tokens::{TestIssuer, AUDIENCE, ISSUER};
use xroot_tools::xcache;

fn ztn_auth(iss: &TestIssuer) -> ZtnAuth {
    let mut config = TokenConfig::new(vec![iss.arg().parse().unwrap()]);
    config.audiences = vec![AUDIENCE.into()];
    ZtnAuth::new(TokenValidator::new(config).unwrap())
}

/// `ZtnAuth` told that every link runs TLS: lets the scope checks be tested
/// over plain TCP.
struct AssumeTls(ZtnAuth);

impl Authenticator for AssumeTls {
    fn protocols(&self) -> Vec<xroot::proto::response::SecProtocol> {
        self.0.protocols()
    }
    fn authenticate(&self, ctx: &AuthContext<'_>, credtype: &str, cred: &[u8]) -> AuthOutcome {
        let tls = AuthContext {
            tls: true,
            ..ctx.clone()
        };
        self.0.authenticate(&tls, credtype, cred)
    }
}

async fn serve(dir: &std::path::Path, auth: Arc<dyn Authenticator>) -> std::net::SocketAddr {
    let config = Config {
        authenticator: Some(auth),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(dir).unwrap(), config)
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// Logs in, checks the `ztn` offer, and sends `token`; the answer.
async fn login_with(addr: std::net::SocketAddr, token: &str) -> (Raw, Response) {
    let mut r = Raw::hello(addr, 3).await;
    r.send(0, login_request()).await;
    let (_, Response::Ok(body)) = r.expect().await else {
        panic!("login reply")
    };
    let reply = LoginResponse::decode(body).unwrap();
    assert_eq!(reply.sec.as_deref(), Some(&b"&P=ztn,0:4096:"[..]));
    let auth = Auth {
        credtype: *b"ztn\0",
        credentials: ztn::encode_credential(token, 4096).unwrap(),
    };
    r.send(1, auth).await;
    let answer = r.expect().await.1;
    (r, answer)
}

async fn session(addr: std::net::SocketAddr, token: &str) -> Raw {
    let (r, answer) = login_with(addr, token).await;
    assert!(matches!(answer, Response::Ok(_)), "{answer:?}");
    r
}

/// Sends `req` and expects `kXR_NotAuthorized` naming `scope`.
async fn refused(r: &mut Raw, req: impl Into<xroot::proto::request::Request>, scope: &str) {
    r.send(5, req).await;
    let msg = r.expect_error(ErrorCode::NOT_AUTHORIZED).await;
    assert_eq!(msg, format!("missing scope {scope}"));
}

async fn ok(r: &mut Raw, req: impl Into<xroot::proto::request::Request>) -> Bytes {
    r.send(6, req).await;
    match r.expect().await.1 {
        Response::Ok(b) => b,
        other => panic!("expected ok, got {other:?}"),
    }
}

fn stat(path: &str) -> Stat {
    Stat {
        path: Bytes::copy_from_slice(path.as_bytes()),
        ..Default::default()
    }
}

#[tokio::test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn ztn_is_refused_without_tls() {
    let iss = TestIssuer::new(ISSUER);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let addr = serve(dir.path(), Arc::new(ztn_auth(&iss))).await;
    let token = iss.es256(&iss.claims("storage.read:/"));
    let (_, answer) = login_with(addr, &token).await;
    match answer {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::AUTH_FAILED);
            assert_eq!(e.message_lossy(), NON_TLS_REFUSAL);
        }
        other => panic!("expected the non-TLS refusal, got {other:?}"),
    }

    // our client does not even send its token over a plain link
    let client = Client::with_config(xroot::client::Config {
        bearer_token: Some(ztn::BearerToken::new(&token)),
        ..Default::default()
    });
    let e = client
        .open(&format!("root://{addr}//f"), OpenFlags::READ)
        .await
        .unwrap_err();
    match &e {
        ClientError::Credential {
            protocol, reason, ..
        } => {
            assert_eq!(protocol, "ztn");
            assert!(reason.contains("TLS"), "{e}");
        }
        other => panic!("expected a ztn credential error, got {other}"),
    }
}

#[tokio::test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn bad_tokens_are_refused_at_auth() {
    let iss = TestIssuer::new(ISSUER);
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), Arc::new(AssumeTls(ztn_auth(&iss)))).await;
    let mut expired = iss.claims("storage.read:/");
    expired["exp"] = serde_json::json!(xroot_testkit::tokens::now() - 3600);
    let mut wrong_aud = iss.claims("storage.read:/");
    wrong_aud["aud"] = serde_json::json!("https://elsewhere.test");
    let forger = TestIssuer::new(ISSUER);
    for (token, why) in [
        (iss.es256(&expired), "token expired"),
        (iss.rs256(&wrong_aud), "token audience not accepted"),
        (
            forger.es256(&iss.claims("storage.read:/")),
            "token signature invalid",
        ),
        (
            xroot_testkit::tokens::unsigned(&iss.claims("storage.read:/")),
            "token algorithm \"none\" refused (RS256 and ES256 only)",
        ),
    ] {
        let (_, answer) = login_with(addr, &token).await;
        match answer {
            Response::Error(e) => {
                assert_eq!(e.code, ErrorCode::AUTH_FAILED);
                assert_eq!(e.message_lossy(), why);
            }
            other => panic!("{why}: got {other:?}"),
        }
    }
}

#[tokio::test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn scopes_are_enforced_on_every_request() {
    let iss = TestIssuer::new(ISSUER);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data/out")).unwrap();
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    std::fs::write(dir.path().join("data/f"), b"data").unwrap();
    std::fs::write(dir.path().join("other/g"), b"other").unwrap();
    let addr = serve(dir.path(), Arc::new(AssumeTls(ztn_auth(&iss)))).await;

    // a read-only token for /data
    let mut r = session(addr, &iss.es256(&iss.claims("storage.read:/data"))).await;
    ok(&mut r, stat("/data/f")).await;
    let h = r.open("/data/f").await;
    r.send(
        7,
        xroot::proto::request::Read {
            fhandle: h,
            offset: 0,
            rlen: 4,
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(r.expect().await.1, Response::Ok(b) if &b[..] == b"data"));
    ok(
        &mut r,
        Dirlist {
            path: Bytes::from_static(b"/data"),
            ..Default::default()
        },
    )
    .await;
    // a scope for another path
    refused(&mut r, stat("/other/g"), "storage.read:/other/g").await;
    refused(
        &mut r,
        open_request("/other/g", OpenOptions::READ),
        "storage.read:/other/g",
    )
    .await;
    refused(
        &mut r,
        Dirlist {
            path: Bytes::from_static(b"/"),
            ..Default::default()
        },
        "storage.read:/",
    )
    .await;
    // writes with a read scope
    refused(
        &mut r,
        open_request("/data/new", OpenOptions::NEW),
        "storage.create:/data/new",
    )
    .await;
    refused(
        &mut r,
        open_request("/data/f", OpenOptions::DELETE),
        "storage.modify:/data/f",
    )
    .await;
    refused(
        &mut r,
        open_request("/data/f", OpenOptions::UPDATE),
        "storage.modify:/data/f",
    )
    .await;
    // an append-only open writes (the backend opens it for appending)
    refused(
        &mut r,
        open_request("/data/f", OpenOptions::APPEND),
        "storage.modify:/data/f",
    )
    .await;
    refused(
        &mut r,
        Rm {
            path: Bytes::from_static(b"/data/f"),
        },
        "storage.modify:/data/f",
    )
    .await;
    refused(
        &mut r,
        Mkdir {
            path: Bytes::from_static(b"/data/d"),
            mode: Mode(0o755),
            ..Default::default()
        },
        "storage.create:/data/d",
    )
    .await;
    refused(
        &mut r,
        Mv::new(b"/data/f", b"/data/g"),
        "storage.modify:/data/f",
    )
    .await;
    refused(
        &mut r,
        Prepare {
            options: PrepareOptions::STAGE,
            paths: Bytes::from_static(b"/data/f"),
            ..Default::default()
        },
        "storage.stage:/data/f",
    )
    .await;
    assert_eq!(std::fs::read(dir.path().join("data/f")).unwrap(), b"data");
    assert!(!dir.path().join("data/new").exists());
    assert!(!dir.path().join("data/d").exists());

    // create in /data/out: new files yes, overwriting no
    let create = iss.rs256(&iss.claims("storage.read:/data storage.create:/data/out"));
    let mut c = session(addr, &create).await;
    let h = c
        .open_with("/data/out/x", OpenOptions::NEW | OpenOptions::MKPATH)
        .await;
    c.send(8, xroot::proto::request::Close { fhandle: h }).await;
    assert!(matches!(c.expect().await.1, Response::Ok(_)));
    assert!(dir.path().join("data/out/x").exists());
    refused(
        &mut c,
        open_request("/data/out/x", OpenOptions::DELETE),
        "storage.modify:/data/out/x",
    )
    .await;
    // kXR_delete on a file that does not exist is a create
    let h = c.open_with("/data/out/y", OpenOptions::DELETE).await;
    c.send(8, xroot::proto::request::Close { fhandle: h }).await;
    assert!(matches!(c.expect().await.1, Response::Ok(_)));
    ok(
        &mut c,
        Mkdir {
            path: Bytes::from_static(b"/data/out/d"),
            mode: Mode(0o755),
            ..Default::default()
        },
    )
    .await;
    refused(
        &mut c,
        Mv::new(b"/data/out/x", b"/data/out/z"),
        "storage.modify:/data/out/x",
    )
    .await;

    // modify: overwrite, rename (both paths in scope), remove
    let modify = iss.es256(&iss.claims("storage.modify:/data/out"));
    let mut m = session(addr, &modify).await;
    let _ = m.open_with("/data/out/x", OpenOptions::DELETE).await;
    refused(
        &mut m,
        Mv::new(b"/data/out/y", b"/other/y"),
        "storage.modify:/other/y",
    )
    .await;
    ok(&mut m, Mv::new(b"/data/out/y", b"/data/out/z")).await;
    ok(
        &mut m,
        Rm {
            path: Bytes::from_static(b"/data/out/z"),
        },
    )
    .await;
    assert!(!dir.path().join("data/out/z").exists());
    // the read-only session is still served
    ok(&mut r, stat("/data/f")).await;
}

/// A token's scope holds for what a request reaches, not only for the path
/// it names: a symlink inside the scope `/a` leading to `/b` (a directory
/// link and a file link) gives a session scoped to `/a` nothing in `/b`,
/// for reading and for every modification, and nothing changes on disk.
/// (The stock 5.5.3 with its SciTokens plugin checks the client's path
/// only: its reads through such a link succeed.)
#[tokio::test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn scopes_hold_for_what_a_symlink_leads_to() {
    use std::os::unix::fs::symlink;
    use xroot::proto::request::{Close, Read, Truncate};
    let iss = TestIssuer::new(ISSUER);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(b.join("sub")).unwrap();
    std::fs::write(b.join("secret.bin"), b"secret").unwrap();
    std::fs::write(a.join("mine"), b"mine").unwrap();
    symlink("../b", a.join("lnk")).unwrap();
    symlink("../b/secret.bin", a.join("flnk")).unwrap();
    let addr = serve(dir.path(), Arc::new(AssumeTls(ztn_auth(&iss)))).await;
    let path = |p: &str| Bytes::copy_from_slice(p.as_bytes());

    // storage.read:/a reads nothing of /b through the links
    let mut r = session(addr, &iss.es256(&iss.claims("storage.read:/a"))).await;
    for p in ["/a/lnk/secret.bin", "/a/flnk"] {
        let need = format!("storage.read:{p}");
        refused(&mut r, open_request(p, OpenOptions::READ), &need).await;
        refused(&mut r, stat(p), &need).await;
    }
    for p in ["/a/lnk", "/a/lnk/sub"] {
        let list = Dirlist {
            path: path(p),
            ..Default::default()
        };
        refused(&mut r, list, &format!("storage.read:{p}")).await;
    }
    // a listing of /a names the links but tells nothing of where they lead
    let listed = ok(
        &mut r,
        Dirlist {
            path: path("/a"),
            options: xroot::proto::request::DirlistOptions::DSTAT,
        },
    )
    .await;
    let listed = String::from_utf8_lossy(&listed).into_owned();
    assert!(listed.contains("mine"), "{listed:?}");
    assert!(!listed.contains("lnk"), "{listed:?}");
    // what lies inside the scope still reads
    let h = r.open("/a/mine").await;
    r.send(
        7,
        Read {
            fhandle: h,
            offset: 0,
            rlen: 4,
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(r.expect().await.1, Response::Ok(b) if &b[..] == b"mine"));

    // storage.modify:/a changes nothing in /b through the links
    let mut m = session(addr, &iss.es256(&iss.claims("storage.modify:/a"))).await;
    for p in ["/a/lnk/secret.bin", "/a/flnk"] {
        let need = format!("storage.modify:{p}");
        for options in [
            OpenOptions::DELETE,
            OpenOptions::UPDATE,
            OpenOptions::APPEND,
        ] {
            refused(&mut m, open_request(p, options), &need).await;
        }
        let truncate = Truncate {
            path: path(p),
            ..Default::default()
        };
        refused(&mut m, truncate, &need).await;
        refused(
            &mut m,
            xroot::proto::request::Chmod {
                path: path(p),
                mode: Mode(0o777),
            },
            &need,
        )
        .await;
    }
    refused(
        &mut m,
        Rm {
            path: path("/a/lnk/secret.bin"),
        },
        "storage.modify:/a/lnk/secret.bin",
    )
    .await;
    refused(
        &mut m,
        Mv::new(b"/a/lnk/secret.bin", b"/a/stolen"),
        "storage.modify:/a/lnk/secret.bin",
    )
    .await;
    refused(
        &mut m,
        Mv::new(b"/a/mine", b"/a/lnk/planted"),
        "storage.modify:/a/lnk/planted",
    )
    .await;
    refused(
        &mut m,
        open_request("/a/lnk/new", OpenOptions::NEW),
        "storage.create:/a/lnk/new",
    )
    .await;
    refused(
        &mut m,
        Mkdir {
            path: path("/a/lnk/d"),
            mode: Mode(0o755),
            ..Default::default()
        },
        "storage.create:/a/lnk/d",
    )
    .await;
    refused(
        &mut m,
        xroot::proto::request::Rmdir {
            path: path("/a/lnk/sub"),
        },
        "storage.modify:/a/lnk/sub",
    )
    .await;
    assert_eq!(std::fs::read(b.join("secret.bin")).unwrap(), b"secret");
    let mut in_b: Vec<_> = std::fs::read_dir(&b)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    in_b.sort();
    assert_eq!(in_b, ["secret.bin", "sub"]);
    assert_eq!(std::fs::read(a.join("mine")).unwrap(), b"mine");

    // the links themselves lie in the scope: removing one removes only it
    ok(
        &mut m,
        Rm {
            path: path("/a/flnk"),
        },
    )
    .await;
    assert!(!a.join("flnk").exists() && b.join("secret.bin").exists());
    let h = m.open_with("/a/new", OpenOptions::NEW).await;
    m.send(8, Close { fhandle: h }).await;
    assert!(matches!(m.expect().await.1, Response::Ok(_)));
}

#[tokio::test]
async fn xcache_origin_token_file_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let token = xroot_testkit::tokens::token_file(work.path(), "origin.tok", "abc.def.ghi");
    let cache = work.path().join("cache");
    let argv = |file: &std::path::Path| {
        xcache::Cli::try_parse_from([
            "xcache",
            "--origin",
            "root://127.0.0.1:1",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--port",
            "0",
            "--origin-token-file",
            file.to_str().unwrap(),
        ])
        .unwrap()
    };
    assert!(xcache::start(&argv(&token)).await.is_ok());
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o640)).unwrap();
    let e = xcache::start(&argv(&token)).await.err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("--origin-token-file") && e.to_string().contains("group or others"),
        "{e}"
    );
    let e = xcache::start(&argv(&work.path().join("none")))
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("does not exist"), "{e}");
}
