//! Hostile `sss` credentials against our server (in-process, keys made
//! here): a huge key-name size, truncated ciphertext, nothing at all, a
//! 1 MiB credential within `max_login_dlen`, another protocol's name, all
//! refused with `kXR_AuthFailed` while an authenticated session keeps
//! reading; and a replay: a valid credential sent again on another
//! connection is refused for a key that checks the host (the host item
//! names the first connection's port) and accepted within the lifetime
//! for a `+` key, as the stock server does (XrdSecProtocolsss.cc keeps no
//! record of credentials seen).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use xroot::proto::request::{Auth, Expect, Protocol};
use xroot::proto::response::Response;
use xroot::proto::{ClientHandshake, ErrorCode};
use xroot::sec::sss::{self, Key, Keytab};
use xroot::server::{Config, LocalFs, SssAuth};

use xroot_testkit::raw::{login_request, Raw};

const SECRET: &[u8] = b"0123456789abcdef0123";

async fn server(data: &std::path::Path) -> SocketAddr {
    let keytab = Keytab::from_keys(vec![
        Key::new(1, "host", "anybody", "users", SECRET),
        Key::new(2, "nohost+", "anybody", "users", SECRET),
    ]);
    let config = Config {
        authenticator: Some(Arc::new(SssAuth::new(keytab))),
        max_login_dlen: 2 << 20,
        ..Config::default()
    };
    xroot_testkit::ours::serve_with(LocalFs::new(data).unwrap(), config).await
}

/// Handshake, protocol, login: a raw session waiting for `kXR_auth`.
async fn raw_login(addr: SocketAddr) -> Raw {
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
        assert!(matches!(r.expect().await.1, Response::Ok(_)));
    }
    r.send(1, login_request()).await;
    assert!(matches!(r.expect().await.1, Response::Ok(_)), "login");
    r
}

async fn send_auth(r: &mut Raw, credtype: &[u8; 4], cred: Vec<u8>) -> Response {
    r.send(
        2,
        Auth {
            credtype: *credtype,
            credentials: Bytes::from(cred),
        },
    )
    .await;
    r.expect().await.1
}

fn refused(answer: Response) -> String {
    match answer {
        Response::Error(e) if e.code == ErrorCode::AUTH_FAILED => e.message_lossy().into_owned(),
        other => panic!("expected kXR_AuthFailed, got {other:?}"),
    }
}

fn sealed(key: &Key, host: SocketAddr) -> Vec<u8> {
    let me = sss::Entity {
        host: Some(sss::address_item(host)),
        name: Some("carol".into()),
        ..sss::Entity::default()
    };
    sss::seal(key, &me, SystemTime::now(), true).unwrap()
}

async fn stat_ok(r: &mut Raw) {
    r.send(
        3,
        xroot::proto::request::Stat {
            path: Bytes::from_static(b"/f"),
            ..Default::default()
        },
    )
    .await;
    match r.expect().await.1 {
        Response::Ok(_) => {}
        other => panic!("stat: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_credentials_are_refused_and_others_served() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"data").unwrap();
    let addr = server(data.path()).await;
    let key = Key::new(1, "host", "anybody", "users", SECRET);

    let mut good = raw_login(addr).await;
    let local = good.s.local_addr().unwrap();
    assert!(matches!(
        send_auth(&mut good, b"sss\0", sealed(&key, local)).await,
        Response::Ok(_)
    ));
    stat_ok(&mut good).await;

    let mut hostile: Vec<(&str, Vec<u8>)> = Vec::new();
    let valid = sealed(&key, local);
    let mut huge_kn = valid.clone();
    huge_kn[6] = 0xff;
    hostile.push(("key name size 255", huge_kn));
    let mut kn_past_end = valid[..16].to_vec();
    kn_past_end[6] = 192;
    kn_past_end.extend_from_slice(&[b'k'; 60]);
    hostile.push(("key name past the end", kn_past_end));
    hostile.push(("truncated", valid[..valid.len() / 2].to_vec()));
    hostile.push(("header only", valid[..16].to_vec()));
    let mut short = valid.clone();
    short.truncate(valid.len() - 1);
    hostile.push(("one byte short", short));
    let mut flipped = valid.clone();
    let last = flipped.len() - 10;
    flipped[last] ^= 0x40;
    hostile.push(("a flipped bit", flipped));
    hostile.push(("empty", Vec::new()));
    let mut mb = valid.clone();
    mb.resize(1 << 20, 0x41);
    hostile.push(("1 MiB", mb));
    for (what, cred) in hostile {
        let mut bad = raw_login(addr).await;
        let text = refused(send_auth(&mut bad, b"sss\0", cred).await);
        assert!(!text.is_empty(), "{what}");
        stat_ok(&mut good).await;
    }
    // another protocol's name over an sss credential
    let mut bad = raw_login(addr).await;
    refused(send_auth(&mut bad, b"ztn\0", valid.clone()).await);
    stat_ok(&mut good).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_credential_is_accepted_only_where_the_host_is_not_checked() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"data").unwrap();
    let addr = server(data.path()).await;
    for (key, replay_ok) in [
        (Key::new(1, "host", "anybody", "users", SECRET), false),
        (Key::new(2, "nohost+", "anybody", "users", SECRET), true),
    ] {
        let mut first = raw_login(addr).await;
        let cred = sealed(&key, first.s.local_addr().unwrap());
        assert!(matches!(
            send_auth(&mut first, b"sss\0", cred.clone()).await,
            Response::Ok(_)
        ));
        let mut second = raw_login(addr).await;
        let answer = send_auth(&mut second, b"sss\0", cred).await;
        if replay_ok {
            assert!(matches!(answer, Response::Ok(_)), "{answer:?}");
            stat_ok(&mut second).await;
        } else {
            assert_eq!(refused(answer), "IP address mismatch.");
        }
        stat_ok(&mut first).await;
    }
}
