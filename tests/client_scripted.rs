//! xroot-client against a scripted peer (xroot-testkit/src/scripted.rs) for the
//! server behaviours the stock xrootd cannot be made to show on demand:
//! `kXR_wait`, `kXR_waitresp` + `kXR_attn`, redirect loops, a redirect to
//! the same endpoint under another user, errors, authentication, dropped
//! connections and timeouts. Each ends in success or a typed error; the
//! 30 s timeout around each call is only a hang guard.

use std::future::Future;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use xroot::client::{Client, Config, Error, File, OpenFlags};
use xroot::proto::request::{OpenOptions, Request};
use xroot::proto::response::{ProtocolFlags, Redirect, RedirectFlags, Response};
use xroot::proto::{ErrorCode, RequestId};
use xroot_testkit::scripted::{Options, Peer, Step};

/// Awaits `f`, failing the test if it takes more than 30 s (a hang).
async fn guard<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("hang: no answer within 30 s")
}

/// Opens `url` for reading; panics on an error or a hang.
async fn open(client: &Client, url: &str) -> File {
    guard(client.open(url, OpenFlags::READ)).await.unwrap()
}

/// Waits until `done()` holds, failing the test after 30 s.
async fn eventually(done: impl Fn() -> bool) {
    guard(async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn content(len: usize) -> Bytes {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn is_open(r: &Request) -> bool {
    matches!(r, Request::Open(_))
}

/// Panics unless `err` is the client's timeout of kind `what` (`request`
/// or `stream`).
fn assert_timed_out(err: &Error, what: &str) {
    assert!(
        matches!(err, Error::Timeout { what: w, .. } if *w == what),
        "expected a {what} timeout: {err:?}"
    );
}

fn config(f: impl FnOnce(&mut Config)) -> Client {
    let mut c = Config::default();
    f(&mut c);
    Client::with_config(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_then_ok_resends_with_the_same_streamid() {
    let peer = Peer::start(|call| match &call.request {
        r if is_open(r) && call.nth == 0 => vec![Step::wait(1)],
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    let opens = peer.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 2, "sent, then resent after the wait");
    assert_eq!(opens[0].streamid, opens[1].streamid, "same streamid");
    assert_eq!(opens[0].conn, opens[1].conn, "same connection");
    assert_eq!(opens[0].request, opens[1].request, "same request");
    guard(f.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waitresp_then_attn_asynresp_carries_the_answer() {
    let peer = Peer::start_with(Options::serving(content(1000)), |call| {
        match &call.request {
            Request::Read(r) => vec![
                Step::waitresp(10),
                Step::Sleep(Duration::from_millis(300)),
                Step::Attn(Response::Ok(call.slice(r.offset, r.rlen as i64))),
            ],
            _ => call.serve(),
        }
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    let data = guard(f.read_at(100, 50)).await.unwrap();
    assert_eq!(data, content(1000).slice(100..150));
    // the streamid is free again: the next read gets its answer too
    let data = guard(f.read_at(0, 10)).await.unwrap();
    assert_eq!(data, content(1000).slice(..10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asynchronous_redirect_lands_at_the_second_peer() {
    let data = content(5000);
    let b = Peer::start_with(Options::serving(data.clone()), |call| call.serve()).await;
    let b_port = b.port;
    let a = Peer::start(move |call| match &call.request {
        r if is_open(r) => vec![
            Step::waitresp(10),
            Step::Sleep(Duration::from_millis(200)),
            Step::Attn(Response::Redirect(
                Redirect::to_host("127.0.0.1", b_port).with_opaque("org=a"),
            )),
        ],
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &a.url(None, "/store/f")).await;
    assert_eq!(f.server_url().unwrap().port, b.port);
    let opens = b.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 1);
    let Request::Open(o) = &opens[0].request else {
        unreachable!()
    };
    assert_eq!(
        &o.path[..],
        b"/store/f?org=a",
        "opaque merged into the path"
    );
    assert_eq!(
        guard(f.read_at(4000, 2000)).await.unwrap(),
        data.slice(4000..)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_itself_stops_at_the_limit() {
    let me = Arc::new(AtomicU16::new(0));
    let port = Arc::clone(&me);
    let peer = Peer::start(move |call| match &call.request {
        r if is_open(r) => vec![Step::Reply(Response::Redirect(Redirect::to_host(
            "127.0.0.1",
            port.load(Ordering::SeqCst),
        )))],
        _ => call.serve(),
    })
    .await;
    me.store(peer.port, Ordering::SeqCst);
    let client = config(|c| c.redirect_limit = 3);
    let err = guard(client.open(&peer.url(None, "/f"), OpenFlags::READ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::RedirectLimit { limit: 3, .. }),
        "{err:?}"
    );
    assert_eq!(peer.requests_of(RequestId::OPEN).len(), 4, "3 followed");
    assert_eq!(peer.logins().len(), 1, "one channel all along");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_ping_pong_between_two_peers_stops_at_the_limit() {
    let ports = Arc::new([AtomicU16::new(0), AtomicU16::new(0)]);
    let start = |other: usize| {
        let ports = Arc::clone(&ports);
        Peer::start(move |call| match &call.request {
            r if is_open(r) => vec![Step::Reply(Response::Redirect(Redirect::to_url(
                format!(
                    "root://127.0.0.1:{}//f",
                    ports[other].load(Ordering::SeqCst)
                ),
                RedirectFlags::default(),
            )))],
            _ => call.serve(),
        })
    };
    let a = start(1).await;
    let b = start(0).await;
    ports[0].store(a.port, Ordering::SeqCst);
    ports[1].store(b.port, Ordering::SeqCst);
    let client = config(|c| c.redirect_limit = 5);
    let err = guard(client.open(&a.url(None, "/f"), OpenFlags::READ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::RedirectLimit { limit: 5, .. }),
        "{err:?}"
    );
    let (na, nb) = (
        a.requests_of(RequestId::OPEN).len(),
        b.requests_of(RequestId::OPEN).len(),
    );
    assert_eq!((na, nb), (3, 3), "A B A B A B: 5 redirects followed");
    assert_eq!(
        (a.logins().len(), b.logins().len()),
        (1, 1),
        "channels reused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_at_the_data_server_is_retried_at_the_manager_with_tried() {
    let data = content(1000);
    // the data server does not find the file the first time
    let ds = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        r if is_open(r) && call.nth == 0 => vec![Step::error(ErrorCode::NOT_FOUND, "not yet")],
        _ => call.serve(),
    })
    .await;
    let ds_port = ds.port;
    let manager = Peer::start_with(
        Options {
            flags: ProtocolFlags::IS_MANAGER,
            ..Default::default()
        },
        move |call| match &call.request {
            r if is_open(r) => vec![Step::Reply(Response::Redirect(Redirect::to_host(
                "127.0.0.1",
                ds_port,
            )))],
            _ => call.serve(),
        },
    )
    .await;
    let client = Client::new();
    let f = open(&client, &manager.url(None, "/f?a=1")).await;
    assert_eq!(f.server_url().unwrap().port, ds.port);
    let opens = manager.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 2, "asked the manager again");
    let Request::Open(again) = &opens[1].request else {
        unreachable!()
    };
    assert_eq!(
        &again.path[..],
        b"/f?a=1&tried=127.0.0.1&triedrc=enoent",
        "the host tried and why (XrdCl's UpdateTriedCGI)"
    );
    assert!(
        again.options.contains(OpenOptions::REFRESH),
        "{:?}",
        again.options
    );
    assert_eq!(guard(f.read_at(0, 1000)).await.unwrap(), data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_the_same_endpoint_as_another_user_uses_a_new_channel() {
    let data = content(3000);
    let me = Arc::new(AtomicU16::new(0));
    let port = Arc::clone(&me);
    let peer = Peer::start_with(Options::serving(data.clone()), move |call| {
        match &call.request {
            r if is_open(r) && call.user != "other" => {
                vec![Step::Reply(Response::Redirect(Redirect::to_url(
                    format!(
                        "root://other@127.0.0.1:{}//data.bin",
                        port.load(Ordering::SeqCst)
                    ),
                    RedirectFlags::default(),
                )))]
            }
            _ => call.serve(),
        }
    })
    .await;
    me.store(peer.port, Ordering::SeqCst);
    let client = config(|c| c.redirect_limit = 4);
    let f = open(&client, &peer.url(Some("first"), "/data.bin")).await;
    assert_eq!(peer.logins(), ["first", "other"], "a second login as other");
    let opens = peer.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 2, "one redirect, no loop");
    assert_ne!(opens[0].conn, opens[1].conn, "on a new connection");
    let mut keys: Vec<_> = client.channels().iter().map(|c| c.key().clone()).collect();
    keys.sort();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
    assert_eq!(f.server_url().unwrap().user.as_deref(), Some("other"));
    assert_eq!(guard(f.read_at(0, 3000)).await.unwrap(), data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_dropped_mid_readv_fails_promptly_then_reconnects() {
    let data = content(1 << 20);
    // connections 0 and 1 send the first oksofar frame of a readv, then close
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Readv(r) if call.conn < 2 => {
            vec![Step::Raw(call.readv_first_frame(&r.list)), Step::Close]
        }
        _ => call.serve(),
    })
    .await;
    let ranges: Vec<(u64, usize)> = (0..16).map(|i| (i * 60_000 + 7, 16_384)).collect();
    let want: Vec<Bytes> = ranges
        .iter()
        .map(|&(o, l)| data.slice(o as usize..o as usize + l))
        .collect();
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    // the readv is retried once on a new connection (re-opening the file),
    // which drops too
    let err = guard(f.readv(&ranges)).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err:?}");
    assert_eq!(peer.logins().len(), 2);
    assert_eq!(peer.client_closes(), 0, "the peer closed them");
    // the next call connects, logs in, re-opens and reads
    assert_eq!(guard(f.readv(&ranges)).await.unwrap(), want);
    assert_eq!(peer.logins().len(), 3, "logged in again");
    assert_eq!(peer.requests_of(RequestId::OPEN).len(), 3);
    let readvs = peer.requests_of(RequestId::READV);
    assert!(readvs
        .iter()
        .all(|s| matches!(&s.request, Request::Readv(r) if r.list.len() == 16)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_dropped_mid_answer_fails_promptly_then_reconnects() {
    let data = content(200_000);
    // connections 0 and 1 send the first part of a read, then close
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Read(r) if call.conn < 2 => vec![
            Step::Reply(Response::OkSoFar(call.slice(r.offset, 1000))),
            Step::Close,
        ],
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    // the read is retried once on a new connection (re-opening the file),
    // which drops too
    let err = guard(f.read_at(0, 100_000)).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::ConnectionAborted);
    assert_eq!(peer.logins().len(), 2);
    // the next call connects, logs in and re-opens again
    let got = guard(f.read_at(50_000, 100_000)).await.unwrap();
    assert_eq!(got, data.slice(50_000..150_000));
    assert_eq!(peer.logins().len(), 3, "logged in again");
    assert_eq!(peer.requests_of(RequestId::OPEN).len(), 3);
}

/// Bodies of 128 KiB and more are read into buffers of their own (reused
/// from the link's pool): answers made of such frames, small ones, and a
/// frame whose body is cut off by the server closing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_answer_frames_arrive_whole_and_as_they_came() {
    let data = content(3 << 20);
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        // at 0: 300 KB + 10 bytes + 300 KB in kXR_oksofar, then the rest
        Request::Read(r) if r.offset == 0 => vec![
            Step::Reply(Response::OkSoFar(call.slice(0, 300_000))),
            Step::Reply(Response::OkSoFar(call.slice(300_000, 10))),
            Step::Reply(Response::OkSoFar(call.slice(300_010, 300_000))),
            Step::ok(call.slice(600_010, r.rlen as i64 - 600_010)),
        ],
        // at 1: the header and half of a 1 MiB body, then the end
        Request::Read(r) if r.offset == 1 && call.conn == 0 => {
            let mut frame = bytes::BytesMut::new();
            Response::Ok(call.slice(1, 1 << 20)).encode(call.streamid, &mut frame);
            vec![Step::Raw(frame.freeze().slice(..(1 << 19))), Step::Close]
        }
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    for _ in 0..3 {
        let parts = guard(f.read_parts_at(0, 2 << 20)).await.unwrap();
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [300_000, 10, 300_000, (2 << 20) - 600_010]);
        assert_eq!(parts.concat(), data.slice(..2 << 20));
        assert_eq!(
            guard(f.read_at(0, 2 << 20)).await.unwrap(),
            data.slice(..2 << 20)
        );
    }
    // one whole frame of 2 MiB, then one the server cuts off: the read is
    // retried once on a new connection, where it is answered
    assert_eq!(
        guard(f.read_at(5, 2 << 20)).await.unwrap(),
        data.slice(5..(2 << 20) + 5)
    );
    let got = guard(f.read_at(1, 1 << 20)).await.unwrap();
    assert_eq!(got, data.slice(1..(1 << 20) + 1));
    assert_eq!(peer.logins().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_frame_fails_the_link_with_a_protocol_error() {
    let peer = Peer::start_with(Options::serving(content(5000)), |call| call.serve()).await;
    // frames over 4000 bytes are refused by the client's decoder
    let client = config(|c| c.max_response_dlen = 4000);
    let f = open(&client, &peer.url(None, "/f")).await;
    let err = guard(f.read_at(0, 5000)).await.unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    eventually(|| peer.client_closes() > 0).await;
    // the next call reconnects and re-opens; a small read works
    assert_eq!(guard(f.read_at(0, 100)).await.unwrap(), content(100));
    assert_eq!(peer.logins().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_error_keeps_code_and_message() {
    let peer = Peer::start(|call| match &call.request {
        Request::Stat(s) if &s.path[..] == b"/missing" => {
            vec![Step::error(ErrorCode::NOT_FOUND, "no such file /missing")]
        }
        Request::Stat(_) => vec![Step::error(ErrorCode::NOT_AUTHORIZED, "go away")],
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    let err = guard(fs.stat("/missing")).await.unwrap_err();
    match &err {
        Error::Server { code, message } => {
            assert_eq!(*code, ErrorCode::NOT_FOUND);
            assert_eq!(message, "no such file /missing");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.server_code(), Some(ErrorCode::NOT_FOUND));
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), ErrorKind::NotFound);
    let err = guard(fs.stat("/secret")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert_eq!(err.server_code(), Some(ErrorCode::NOT_AUTHORIZED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_authentication_when_the_login_asks_for_it() {
    let peer = Peer::start_with(
        Options {
            security: vec!["gsi".into(), "unix".into()],
            ..Default::default()
        },
        |call| call.serve(),
    )
    .await;
    let client = Client::new();
    let fs = client.fs(&peer.url(Some("alice"), "/")).unwrap();
    guard(fs.stat("/f")).await.unwrap();
    let auths = peer.requests_of(RequestId::AUTH);
    assert_eq!(auths.len(), 1);
    let Request::Auth(a) = &auths[0].request else {
        unreachable!()
    };
    assert_eq!(a.credtype_name(), b"unix");
    assert!(
        a.credentials.starts_with(b"unix\0alice"),
        "{:?}",
        a.credentials
    );
    // the auth came right after the login, before any other request
    let ids: Vec<_> = peer.requests().iter().map(|s| s.request.id()).collect();
    assert_eq!(
        ids,
        [
            RequestId::PROTOCOL,
            RequestId::LOGIN,
            RequestId::AUTH,
            RequestId::STAT
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_authentication_is_a_typed_error_naming_the_protocols() {
    // the login of user "many" is answered only once the gate opens, so
    // that every caller below has joined the one attempt before it fails
    let (gate, held) = tokio::sync::watch::channel(false);
    let peer = Peer::start_with(
        Options {
            security: vec!["krb5".into()],
            ..Default::default()
        },
        move |call| match &call.request {
            Request::Login(l) if l.username() == b"many" => {
                let mut steps = vec![Step::Gate(held.clone())];
                steps.extend(call.serve());
                steps
            }
            _ => call.serve(),
        },
    )
    .await;
    let client = Client::new();
    let err = guard(client.open(&peer.url(None, "/f"), OpenFlags::READ))
        .await
        .unwrap_err();
    match &err {
        Error::AuthUnsupported { offered, .. } => assert_eq!(offered, &["krb5"]),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("krb5"), "{err}");
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert!(peer.requests_of(RequestId::AUTH).is_empty());

    // callers that waited on the same connection attempt get the same error
    let url = peer.url(Some("many"), "/f");
    let mut opens = Box::pin(futures::future::join_all(
        (0..3).map(|_| client.open(&url, OpenFlags::READ)),
    ));
    // one poll: the first caller connects (its login held at the gate),
    // the other two wait on its attempt
    assert!(futures::poll!(opens.as_mut()).is_pending());
    gate.send(true).unwrap();
    for r in guard(opens).await {
        let err = r.unwrap_err();
        assert!(
            matches!(&err, Error::AuthUnsupported { offered, .. } if offered == &["krb5"]),
            "{err:?}"
        );
    }
    assert_eq!(
        peer.logins(),
        [peer.logins()[0].as_str(), "many"],
        "one attempt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_trips_the_stream_timeout() {
    let peer = Peer::start(|call| match &call.request {
        Request::Stat(_) => vec![], // never answered
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.stream_timeout = Duration::from_secs(1));
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    let err = guard(fs.stat("/f")).await.unwrap_err();
    assert_timed_out(&err, "stream");
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    // the dead connection is closed, and the next request reconnects
    eventually(|| peer.client_closes() > 0).await;
    let f = guard(client.open(&peer.url(None, "/f"), OpenFlags::READ)).await;
    assert!(f.is_ok(), "{f:?}");
    assert_eq!(peer.logins().len(), 2, "logged in again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_timeout_counts_from_the_request_not_from_the_idle_time_before() {
    // answers a stat 1.5 s late: within the 3 s stream timeout counted from
    // the request, past it counted from the last traffic before (the open)
    let peer = Peer::start(|call| match &call.request {
        Request::Stat(_) => {
            let mut steps = vec![Step::Sleep(Duration::from_millis(1500))];
            steps.extend(call.serve());
            steps
        }
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.stream_timeout = Duration::from_secs(3));
    let f = open(&client, &peer.url(None, "/f")).await;
    tokio::time::sleep(Duration::from_secs(2)).await; // idle, nothing outstanding
    let st = guard(f.stat()).await;
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(peer.connections(), 1, "no reconnection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_substream_stays_open() {
    let peer = Peer::start_with(Options::serving(content(100)), |call| call.serve()).await;
    let client = config(|c| {
        c.substreams = 2;
        c.stream_timeout = Duration::from_secs(1); // how often idle readers look
    });
    let f = open(&client, &peer.url(None, "/f")).await;
    let binds = peer.requests_of(RequestId::BIND);
    assert_eq!(binds.len(), 1);
    assert_eq!(binds[0].conn, 1, "on a second connection");
    let Request::Bind(b) = &binds[0].request else {
        unreachable!()
    };
    assert_eq!(
        b.sessid[..8],
        1u64.to_be_bytes(),
        "the main stream's sessid"
    );
    assert_eq!(guard(f.read_at(0, 100)).await.unwrap(), content(100));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        peer.client_closes(),
        0,
        "no connection closed by the client"
    );
    // once nothing uses the link, both its connections close
    drop((f, client));
    eventually(|| peer.client_closes() >= 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_deadline_passes_then_the_channel_still_works() {
    let peer = Peer::start(|call| match &call.request {
        Request::Stat(_) if call.nth == 0 => vec![], // never answered
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(1));
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    let err = guard(fs.stat("/f")).await.unwrap_err();
    assert_timed_out(&err, "request");
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    guard(fs.stat("/f")).await.unwrap();
    assert_eq!(peer.logins().len(), 1, "same connection");
    let sids: Vec<_> = peer
        .requests_of(RequestId::STAT)
        .iter()
        .map(|s| s.streamid)
        .collect();
    assert_ne!(sids[0], sids[1], "the abandoned streamid is not reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_abandoned_at_the_request_deadline_does_not_block_the_channel() {
    // the first connection never gets its kXR_protocol answer
    let peer = Peer::start(|call| match &call.request {
        Request::Protocol(_) if call.conn == 0 => vec![],
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(1));
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    let err = guard(fs.stat("/f")).await.unwrap_err();
    assert_timed_out(&err, "request");
    let st = guard(fs.stat("/f")).await;
    assert!(st.is_ok(), "the next request connects again: {st:?}");
    assert_eq!(peer.connections(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_share_a_connection_iff_their_channel_keys_are_equal() {
    let peer = Peer::start(|call| call.serve()).await;
    let client = Client::new();
    let stat = |url: String| {
        let client = client.clone();
        async move {
            guard(client.fs(&url).unwrap().stat("/f")).await.unwrap();
        }
    };
    stat(peer.url(None, "/a")).await;
    stat(peer.url(None, "/b?x=1&y=2")).await;
    stat(format!(
        "root://127.0.0.1:{}//c?xrd.wantprot=unix",
        peer.port
    ))
    .await;
    assert_eq!(peer.logins().len(), 1, "path and other CGI share");
    stat(peer.url(Some("u1"), "/a")).await;
    assert_eq!(peer.logins().len(), 2, "another user, another connection");
    stat(peer.url(Some("u1"), "/a?xrdcl.intent=7")).await;
    assert_eq!(peer.logins().len(), 3, "another intent, another connection");
    stat(peer.url(Some("u1"), "/z?xrdcl.intent=7&q=1")).await;
    stat(peer.url(Some("u1"), "/z")).await;
    assert_eq!(peer.logins().len(), 3, "same keys share again");
    assert_eq!(peer.connections(), 3);
    assert_eq!(client.channels().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_ipv6, ignore = "needs an IPv6 loopback")]
async fn redirects_reach_an_ipv6_host_in_each_form() {
    let data = content(3000);
    let v6 = Peer::start_with(
        Options {
            ip: std::net::Ipv6Addr::LOCALHOST.into(),
            ..Options::serving(data.clone())
        },
        |call| call.serve(),
    )
    .await;
    let port = v6.port;
    // the host field of each path's redirect, and its port field
    let forms = move |path: &[u8]| -> Option<(String, u16)> {
        Some(match path {
            b"/zero-bracketed" => (format!("[::1]:{port}"), 0),
            b"/bare" => ("::1".to_string(), port),
            b"/bracketed" => ("[::1]".to_string(), port),
            _ => return None,
        })
    };
    let redirector = Peer::start(move |call| match &call.request {
        Request::Open(o) => match forms(&o.path) {
            Some((host, port)) => vec![Step::Reply(Response::Redirect(Redirect::to_host(
                host, port,
            )))],
            None => call.serve(),
        },
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    for path in ["/zero-bracketed", "/bare", "/bracketed"] {
        let f = open(&client, &redirector.url(None, path)).await;
        let at = f.server_url().unwrap();
        assert_eq!((at.host.as_str(), at.port), ("::1", v6.port), "{path}");
        assert_eq!(guard(f.read_at(0, 3000)).await.unwrap(), data, "{path}");
    }
    assert_eq!(v6.requests_of(RequestId::OPEN).len(), 3);
    assert_eq!(v6.logins().len(), 1, "one channel to [::1]:{}", v6.port);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readv_answer_for_another_file_handle_is_refused() {
    use xroot::proto::FHandle;
    let data = content(100_000);
    // the first readv is answered with the elements of handle 9, not 7
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Readv(r) if call.nth == 0 => {
            let mut list = r.list.clone();
            for e in &mut list {
                e.fhandle = FHandle([0, 0, 0, 9]);
            }
            vec![Step::Raw(call.readv_frames(&list))]
        }
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    let ranges = [(10u64, 100usize), (5000, 300)];
    let err = guard(f.readv(&ranges)).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnexpectedResponse { request: "kXR_readv", detail } if detail.contains("handle")),
        "{err:?}"
    );
    // the same readv answered right
    let got = guard(f.readv(&ranges)).await.unwrap();
    assert_eq!(got, [data.slice(10..110), data.slice(5000..5300)]);
}

/// `n` copies of `response` on the streamid of `call`, as one raw step.
fn repeated(call: &xroot_testkit::scripted::Call, response: Response, n: usize) -> Step {
    let mut one = bytes::BytesMut::new();
    response.encode(call.streamid, &mut one);
    Step::Raw(one.repeat(n).into())
}

/// Panics unless `result` is the client's refusal of an answer to
/// `request` that does not fit it.
fn assert_refused<T>(result: Result<T, Error>, request: &str) {
    match result {
        Err(Error::UnexpectedResponse { request: r, .. }) if r == request => {}
        Err(e) => panic!("expected {request}'s answer refused: {e:?}"),
        Ok(_) => panic!("{request}'s answer was taken"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_answered_with_more_than_asked_is_refused() {
    let data = content(1000);
    // /one: one kXR_ok of 150 bytes; /two: 60 + 60; /exact: the 100 asked
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Read(r) => match call.nth {
            0 => vec![Step::ok(call.slice(r.offset, 150))],
            1 => vec![
                Step::Reply(Response::OkSoFar(call.slice(r.offset, 60))),
                Step::ok(call.slice(r.offset + 60, 60)),
            ],
            _ => call.serve(),
        },
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(10));
    let f = open(&client, &peer.url(None, "/f")).await;
    assert_refused(guard(f.read_at(0, 100)).await, "kXR_read");
    assert_refused(guard(f.read_at(0, 100)).await, "kXR_read");
    assert_eq!(guard(f.read_at(0, 100)).await.unwrap(), data.slice(..100));
    assert_eq!(peer.logins().len(), 1, "the connection stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_answers_are_refused_at_once() {
    use xroot::proto::codes::ResponseType;
    use xroot::proto::response::StatusResponse;

    let data = content(100_000);
    let page = {
        let mut b = bytes::BytesMut::new();
        xroot::proto::page::encode_pages(0, &data[..4096], &mut b);
        b.freeze()
    };
    // answers that never end: each runs past what its request can get,
    // and no final frame ever follows
    let peer = Peer::start_with(Options::serving(data.clone()), move |call| {
        let frames = match &call.request {
            // 1.25 MiB of 64-byte chunks for a read of 1 MiB
            Request::Read(_) if call.nth == 0 => {
                repeated(call, Response::OkSoFar(Bytes::from(vec![7u8; 64])), 20_480)
            }
            // empty chunks
            Request::Read(_) => repeated(call, Response::OkSoFar(Bytes::new()), 100_000),
            // the first element again and again, in kXR_oksofar frames
            Request::Readv(r) => {
                let mut one = bytes::BytesMut::from(&call.readv_frames(&r.list[..1])[..]);
                let frame = xroot::proto::ResponseDecoder::new()
                    .decode(&mut one)
                    .unwrap()
                    .unwrap();
                repeated(call, Response::OkSoFar(frame.body), 5000)
            }
            // the first page again and again, then empty partial frames
            Request::Pgread(_) => {
                let status = |data: Bytes| {
                    Response::Status(StatusResponse::with_offset(
                        xroot::proto::RequestId::PGREAD,
                        ResponseType::PARTIAL,
                        0,
                        data,
                    ))
                };
                match call.nth {
                    0 => repeated(call, status(page.clone()), 1000),
                    _ => repeated(call, status(Bytes::new()), 100_000),
                }
            }
            _ => return call.serve(),
        };
        vec![frames]
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(10));
    let f = open(&client, &peer.url(None, "/f")).await;
    assert_refused(guard(f.read_at(0, 1 << 20)).await, "kXR_read");
    assert_refused(guard(f.read_at(0, 1 << 20)).await, "kXR_read");
    let ranges: Vec<(u64, usize)> = (0..4).map(|i| (i * 20_000, 10_000)).collect();
    assert_refused(guard(f.readv(&ranges)).await, "kXR_readv");
    assert_refused(guard(f.pgread(0, 8192)).await, "kXR_pgread");
    assert_refused(guard(f.pgread(0, 8192)).await, "kXR_pgread");
    // the connection is still good for answers that end
    assert_eq!(guard(f.stat()).await.unwrap().size, 100_000);
    assert_eq!(peer.logins().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_and_queries_are_bounded() {
    use xroot::proto::request::QueryCode;
    let names = |n: usize| -> Bytes {
        (0..n)
            .map(|i| format!("name-{i:05}\n"))
            .collect::<String>()
            .into()
    };
    let peer = Peer::start(move |call| {
        let endless = |body: Bytes| vec![repeated(call, Response::OkSoFar(body), 10_000)];
        match &call.request {
            // /big: 200 kB of names in 100-name chunks, then the end
            Request::Dirlist(d) if &d.path[..] == b"/big" => {
                let mut steps = vec![repeated(call, Response::OkSoFar(names(100)), 180)];
                steps.push(Step::ok(Bytes::from_static(b"last\0")));
                steps
            }
            // /many: 5000 chunks of one name, then the end
            Request::Dirlist(d) if &d.path[..] == b"/many" => {
                let mut steps = vec![repeated(call, Response::OkSoFar(names(1)), 5000)];
                steps.push(Step::ok(Bytes::from_static(b"last\0")));
                steps
            }
            Request::Dirlist(d) if &d.path[..] == b"/small" => {
                vec![
                    Step::Reply(Response::OkSoFar(names(3))),
                    Step::ok(Bytes::from_static(b"last\0")),
                ]
            }
            Request::Dirlist(_) => endless(names(10)),
            Request::Query(q) if q.infotype == QueryCode::CKSUM => endless(Bytes::new()),
            Request::Query(_) => endless(Bytes::from_static(b"0123456789")),
            _ => call.serve(),
        }
    })
    .await;
    let client = config(|c| {
        c.request_timeout = Duration::from_secs(10);
        c.max_answer_len = 100_000;
        c.max_answer_frames = 1000;
    });
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    // over the byte bound, over the frame bound, endless
    assert_refused(guard(fs.dirlist("/big", false)).await, "kXR_dirlist");
    assert_refused(guard(fs.dirlist("/many", false)).await, "kXR_dirlist");
    assert_refused(guard(fs.dirlist("/endless", false)).await, "kXR_dirlist");
    assert_refused(guard(fs.query_checksum("/f", None)).await, "kXR_query");
    assert_refused(guard(fs.query_config(&["version"])).await, "kXR_query");
    // within the bounds
    let listed = guard(fs.dirlist("/small", false)).await.unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!(peer.logins().len(), 1);
}

/// On tokio's paused clock: virtual time, no wall-clock dependence.
#[tokio::test]
async fn a_silent_connection_is_dead_at_the_stream_timeout_after_the_request() {
    let peer = Peer::start(|call| match &call.request {
        Request::Stat(_) => vec![], // never answered
        _ => call.serve(),
    })
    .await;
    let timeout = Duration::from_secs(60);
    let client = config(|c| c.stream_timeout = timeout);
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    fs.ping().await.unwrap(); // connected, logged in, answered
    tokio::time::pause();
    // idle with nothing outstanding a little past the timeout, so that the
    // request goes out just after a check that found nothing to time out
    tokio::time::sleep(timeout + Duration::from_millis(500)).await;
    let sent = tokio::time::Instant::now();
    let err = fs.stat("/f").await.unwrap_err();
    let after = sent.elapsed();
    assert_timed_out(&err, "stream");
    // the timer wheel rounds a deadline up to its millisecond
    assert!(
        after >= timeout && after <= timeout + Duration::from_millis(10),
        "declared dead {after:?} after the request, not the stream timeout ({timeout:?})"
    );
    assert_eq!(peer.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnection_ends_the_old_session_first_and_obeys_its_wait() {
    let data = content(1000);
    // connection 0 drops at the first read; connection 1's endsess is
    // answered with a wait, then ok
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Read(_) if call.conn == 0 => vec![Step::Close],
        Request::Endsess(_) if call.nth == 0 => vec![Step::wait(0)],
        _ => call.serve(),
    })
    .await;
    let client = Client::new();
    let f = open(&client, &peer.url(None, "/f")).await;
    assert_eq!(guard(f.read_at(0, 1000)).await.unwrap(), data);
    let on_second: Vec<_> = peer
        .requests()
        .into_iter()
        .filter(|s| s.conn == 1)
        .map(|s| s.request)
        .collect();
    let ids: Vec<RequestId> = on_second.iter().map(Request::id).collect();
    assert_eq!(
        ids,
        [
            RequestId::PROTOCOL,
            RequestId::LOGIN,
            RequestId::ENDSESS,
            RequestId::ENDSESS,
            RequestId::OPEN,
            RequestId::READ
        ],
        "the old session ended (after the wait) before the re-open"
    );
    // the scripted peer's session ids are the connection's index + 1
    let Request::Endsess(e) = &on_second[2] else {
        unreachable!()
    };
    assert_eq!(e.sessid[..8], 1u64.to_be_bytes(), "connection 0's session");
    // no endsess on the first connection of a channel
    assert!(peer
        .requests_of(RequestId::ENDSESS)
        .iter()
        .all(|s| s.conn == 1));
}

/// A redirector that sends every open to the data server on `port`, with
/// `org=a` for it; a manager when `manager`.
async fn redirector(port: Arc<AtomicU16>, manager: bool) -> Peer {
    let flags = match manager {
        true => ProtocolFlags::IS_MANAGER,
        false => ProtocolFlags::IS_SERVER,
    };
    Peer::start_with(
        Options {
            flags,
            ..Default::default()
        },
        move |call| match &call.request {
            r if is_open(r) => vec![Step::Reply(Response::Redirect(
                Redirect::to_host("127.0.0.1", port.load(Ordering::SeqCst)).with_opaque("org=a"),
            ))],
            _ => call.serve(),
        },
    )
    .await
}

/// A data server serving `data` that drops its first connection at the
/// first read.
async fn dropping_data_server(data: Bytes) -> Peer {
    Peer::start_with(Options::serving(data), |call| match &call.request {
        Request::Read(_) if call.conn == 0 => vec![Step::Close],
        _ => call.serve(),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_reopens_at_the_data_server_when_the_redirector_is_gone() {
    let data = content(5000);
    let ds = dropping_data_server(data.clone()).await;
    let to = Arc::new(AtomicU16::new(ds.port));
    let rdr = redirector(to, false).await;
    let client = Client::new();
    let f = open(&client, &rdr.url(None, "/store/f")).await;
    assert_eq!(f.server_url().unwrap().port, ds.port);
    drop(rdr); // the redirector is gone; the data server stays
               // the read's connection drops; the file is opened again where it was
               // (the last URL: the redirect's CGI kept), and the read done there
    assert_eq!(
        guard(f.read_at(100, 1000)).await.unwrap(),
        data.slice(100..1100)
    );
    let opens = ds.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 2, "opened again at the data server");
    assert_eq!(opens[1].conn, 1);
    let Request::Open(o) = &opens[1].request else {
        unreachable!()
    };
    assert_eq!(&o.path[..], b"/store/f?org=a");
    assert_eq!(f.server_url().unwrap().port, ds.port);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_goes_back_to_the_load_balancer_when_its_server_is_gone() {
    let data = content(5000);
    let first = Peer::start_with(Options::serving(data.clone()), |call| call.serve()).await;
    let second = Peer::start_with(Options::serving(data.clone()), |call| call.serve()).await;
    let to = Arc::new(AtomicU16::new(first.port));
    let manager = redirector(Arc::clone(&to), true).await;
    let client = Client::new();
    let f = open(&client, &manager.url(None, "/store/f")).await;
    let w = guard(client.open(&manager.url(None, "/store/w"), OpenFlags::UPDATE))
        .await
        .unwrap();
    assert_eq!(f.server_url().unwrap().port, first.port);
    assert_eq!(w.server_url().unwrap().port, first.port);
    // the data server goes; the manager sends opens to another one now
    to.store(second.port, Ordering::SeqCst);
    drop(first);
    // the read-only file cannot be opened again where it was: the manager
    // is asked, told which host failed and why (a connection error is
    // XrdCl's srverr)
    assert_eq!(
        guard(f.read_at(100, 1000)).await.unwrap(),
        data.slice(100..1100)
    );
    assert_eq!(f.server_url().unwrap().port, second.port);
    let opens = manager.requests_of(RequestId::OPEN);
    assert_eq!(opens.len(), 3, "f, w, then f again");
    let Request::Open(again) = &opens[2].request else {
        unreachable!()
    };
    assert_eq!(&again.path[..], b"/store/f?tried=127.0.0.1&triedrc=srverr");
    // a file open for writing is opened again only where it was (XrdCl's
    // recovery), not on whatever server the manager picks now
    let err = guard(w.write_at(0, Bytes::from_static(b"x")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Io { .. } | Error::ConnectionLost { .. }),
        "{err:?}"
    );
    assert_eq!(manager.requests_of(RequestId::OPEN).len(), 3);
    assert!(second.requests_of(RequestId::WRITE).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_the_calls_in_flight_and_refuses_later_ones() {
    use std::sync::atomic::AtomicBool;
    let data = content(10_000);
    // reads are answered once the test opens the gate; a close that comes
    // while the gate is shut would leave a read to be answered on a handle
    // the server may reuse
    let (gate, shut) = tokio::sync::watch::channel(false);
    let early_close = Arc::new(AtomicBool::new(false));
    let early = Arc::clone(&early_close);
    let peer = Peer::start_with(Options::serving(data.clone()), move |call| {
        match &call.request {
            Request::Read(r) => vec![
                Step::Gate(shut.clone()),
                Step::ok(call.slice(r.offset, r.rlen as i64)),
            ],
            Request::Close(_) => {
                if !*shut.borrow() {
                    early.store(true, Ordering::SeqCst);
                }
                call.serve()
            }
            _ => call.serve(),
        }
    })
    .await;
    let client = Client::new();
    let f = Arc::new(open(&client, &peer.url(None, "/f")).await);
    let f2 = Arc::clone(&f);
    let reading = tokio::spawn(async move { f2.read_at(100, 5000).await });
    eventually(|| peer.requests_of(RequestId::READ).len() == 1).await;
    let f2 = Arc::clone(&f);
    let closing = tokio::spawn(async move { f2.close().await });
    // once close has begun, new calls fail at once, with nothing sent
    guard(async {
        loop {
            match f.stat().await {
                Err(Error::NotOpen) => break,
                Ok(_) => tokio::task::yield_now().await,
                Err(e) => panic!("{e:?}"),
            }
        }
    })
    .await;
    assert!(matches!(guard(f.read_at(0, 10)).await, Err(Error::NotOpen)));
    assert!(matches!(guard(f.close()).await, Err(Error::NotOpen)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!closing.is_finished(), "close waits for the read");
    gate.send_replace(true);
    assert_eq!(
        guard(reading).await.unwrap().unwrap(),
        data.slice(100..5100)
    );
    guard(closing).await.unwrap().unwrap();
    assert!(
        !early_close.load(Ordering::SeqCst),
        "kXR_close went before the read in flight was answered"
    );
    assert_eq!(peer.requests_of(RequestId::CLOSE).len(), 1);
    assert_eq!(peer.requests_of(RequestId::READ).len(), 1);
    assert!(matches!(guard(f.read_at(0, 10)).await, Err(Error::NotOpen)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_abandoned_while_it_waits_leaves_the_file_open() {
    let data = content(1000);
    let (gate, shut) = tokio::sync::watch::channel(false);
    let peer = Peer::start_with(Options::serving(data.clone()), move |call| {
        match &call.request {
            Request::Read(r) => vec![
                Step::Gate(shut.clone()),
                Step::ok(call.slice(r.offset, r.rlen as i64)),
            ],
            _ => call.serve(),
        }
    })
    .await;
    let client = Client::new();
    let f = Arc::new(open(&client, &peer.url(None, "/f")).await);
    let f2 = Arc::clone(&f);
    let reading = tokio::spawn(async move { f2.read_at(0, 1000).await });
    eventually(|| peer.requests_of(RequestId::READ).len() == 1).await;
    // the read cannot end while the gate is shut: the close waits, and
    // is dropped
    let gave_up = tokio::time::timeout(Duration::from_millis(100), f.close()).await;
    assert!(gave_up.is_err(), "{gave_up:?}");
    assert_eq!(guard(f.stat()).await.unwrap().size, 1000, "still open");
    gate.send_replace(true);
    assert_eq!(guard(reading).await.unwrap().unwrap(), data);
    guard(f.close()).await.unwrap();
    assert_eq!(peer.requests_of(RequestId::CLOSE).len(), 1);
}

/// Awaits `f`, failing the test unless it ends within a second: the bound
/// on the call after a link the client had to drop, which it must answer
/// on a new connection at once (on the link left as it was, it waited for
/// its whole request deadline, or longer). Prints how long it took.
async fn within_a_second<T>(what: &str, f: impl Future<Output = T>) -> T {
    let started = std::time::Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(1), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 1 s"));
    eprintln!("{what}: {:?}", started.elapsed());
    out
}

/// The first `n` bytes of the frame answering `call` with `response`.
fn cut_frame(call: &xroot_testkit::scripted::Call, response: Response, n: usize) -> Step {
    let mut frame = bytes::BytesMut::new();
    response.encode(call.streamid, &mut frame);
    Step::Raw(frame.freeze().slice(..n))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_longer_than_its_request_can_get_drops_the_link() {
    use xroot::proto::header::ResponseHeader;
    use xroot::proto::Status;
    let data = content(1000);
    // on the first connection, a read of 100 bytes is answered with a
    // kXR_ok announcing 1 MiB, of which the 100 bytes come and then nothing
    // (the connection stays open); later connections answer as they should
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Read(r) if call.conn == 0 => {
            let mut frame = bytes::BytesMut::new();
            ResponseHeader {
                streamid: call.streamid,
                status: Status::OK,
                dlen: 1 << 20,
            }
            .encode(&mut frame);
            frame.extend_from_slice(&call.slice(r.offset, r.rlen as i64));
            vec![Step::Raw(frame.freeze())]
        }
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(5));
    let f = open(&client, &peer.url(None, "/f")).await;
    // refused at the frame's header, not after its deadline
    let err = within_a_second("the over-long read", f.read_at(0, 100))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Protocol { source, .. } if source.to_string().contains("1048576")),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    // the link is dropped: the next read reconnects, re-opens and is answered
    let got = within_a_second("the next read", f.read_at(0, 100)).await;
    assert_eq!(got.unwrap(), data.slice(..100));
    assert_eq!(peer.logins().len(), 2, "logged in again");
    eventually(|| peer.client_closes() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_deadline_inside_a_frame_drops_the_link() {
    let data = content(10_000);
    // the first read gets half the frame answering it, then nothing (the
    // connection stays open); the peer answers every later request as it
    // should, on this connection or another
    let peer = Peer::start_with(Options::serving(data.clone()), |call| match &call.request {
        Request::Read(r) if call.nth == 0 => {
            let answer = Response::Ok(call.slice(r.offset, r.rlen as i64));
            vec![cut_frame(call, answer, 8 + r.rlen as usize / 2)]
        }
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(2));
    let f = open(&client, &peer.url(None, "/f")).await;
    let err = guard(f.read_at(0, 5000)).await.unwrap_err();
    assert_timed_out(&err, "request");
    // the frame cannot end: the link is dropped at the deadline, and the
    // next read reconnects, re-opens and is answered
    let got = within_a_second("the read after the stalled frame", f.read_at(0, 5000)).await;
    assert_eq!(got.unwrap(), data.slice(..5000));
    assert_eq!(peer.logins().len(), 2, "logged in again");
    eventually(|| peer.client_closes() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_behind_an_abandoned_requests_stalled_frame_drops_the_link() {
    use std::sync::Mutex;
    // on the first connection, the first stat is not answered; the second
    // is answered with half a frame for the first one's streamid, then
    // nothing
    let first = Arc::new(Mutex::new(None));
    let peer = Peer::start(move |call| match &call.request {
        Request::Stat(_) if call.conn == 0 && call.nth == 0 => {
            *first.lock().unwrap() = Some(call.streamid);
            vec![]
        }
        Request::Stat(_) if call.conn == 0 => {
            let mut frame = bytes::BytesMut::new();
            let sid = first.lock().unwrap().expect("the first stat came first");
            Response::Ok(Bytes::from_static(b"42 100 0 1700000000\0")).encode(sid, &mut frame);
            vec![Step::Raw(frame.freeze().slice(..12))]
        }
        _ => call.serve(),
    })
    .await;
    let client = config(|c| c.request_timeout = Duration::from_secs(2));
    let fs = client.fs(&peer.url(None, "/")).unwrap();
    // no byte of an answer: the link's framing is intact and it stays
    let err = guard(fs.stat("/f")).await.unwrap_err();
    assert_timed_out(&err, "request");
    // the second stat's deadline passes inside the abandoned stat's frame,
    // which nothing waits for: the link is dropped then
    let err = guard(fs.stat("/f")).await.unwrap_err();
    assert_timed_out(&err, "request");
    assert_eq!(peer.logins().len(), 1);
    let st = within_a_second("the stat after the stalled frame", fs.stat("/f")).await;
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(peer.logins().len(), 2, "logged in again");
    eventually(|| peer.client_closes() == 1).await;
}
