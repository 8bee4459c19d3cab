//! A raw client connection for tests: requests encoded by xroot-proto and
//! written as they are (pipelined, partial, hostile), every response frame
//! decoded as it arrives ([`Raw::next`]), or paired with the requests sent
//! through `xroot_proto::exchange` ([`Raw::answers`]). Works against our
//! server and the stock one.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xroot_proto::exchange::{Conversation, Event, Exchange};
use xroot_proto::request::{Login, Open, OpenOptions, Protocol, Readv, Request};
use xroot_proto::response::{LoginResponse, ProtocolResponse, Response};
use xroot_proto::{
    ClientHandshake, ErrorCode, FHandle, ReadListEntry, ResponseDecoder, ResponseFrame,
    ServerHandshake, StreamId,
};

/// Hang guard for every wait on the network.
pub const GUARD: Duration = Duration::from_secs(20);

/// A raw client connection: requests encoded by xroot-proto, every response
/// frame decoded as it arrives.
pub struct Raw {
    /// The socket, for writes and shutdowns the methods do not make.
    pub s: TcpStream,
    buf: BytesMut,
    dec: ResponseDecoder,
}

impl Raw {
    /// Connects to `addr`; nothing is sent yet (not even the handshake).
    pub async fn connect(addr: SocketAddr) -> Raw {
        let s = TcpStream::connect(addr).await.unwrap();
        Raw {
            s,
            buf: BytesMut::new(),
            dec: ResponseDecoder::new(),
        }
    }

    /// Writes `bytes` as they are.
    pub async fn write(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.unwrap();
    }

    /// Writes `req`, encoded, on streamid `sid`.
    pub async fn send(&mut self, sid: u16, req: impl Into<Request>) {
        let mut b = BytesMut::new();
        req.into().encode(StreamId::from_u16(sid), &mut b);
        self.write(&b).await;
    }

    /// The next frame, typed, or `None` once the server closed the link.
    pub async fn next(&mut self) -> Option<(StreamId, Response)> {
        let f = self.next_frame().await?;
        Some((f.header.streamid, Response::decode(f).unwrap()))
    }

    /// The next frame, typed; panics if the server closed the link.
    pub async fn expect(&mut self) -> (StreamId, Response) {
        self.next().await.expect("a response, not a closed link")
    }

    /// Expects a `kXR_error` with `code`, and returns its message.
    pub async fn expect_error(&mut self, code: ErrorCode) -> String {
        match self.expect().await.1 {
            Response::Error(e) if e.code == code => e.message_lossy().into_owned(),
            other => panic!("expected {code}, got {other:?}"),
        }
    }

    /// Panics unless the server closes the link before another frame.
    pub async fn expect_closed(&mut self) {
        assert!(
            self.next().await.is_none(),
            "the server should close the link"
        );
    }

    /// Handshake and `kXR_protocol` with `expect`.
    pub async fn hello(addr: SocketAddr, expect: u8) -> Raw {
        let mut r = Raw::connect(addr).await;
        let mut b = BytesMut::new();
        ClientHandshake.encode(&mut b);
        r.write(&b).await;
        let proto = Protocol {
            clientpv: 0x511,
            expect: xroot_proto::request::Expect(expect),
            ..Default::default()
        };
        r.send(0, proto).await;
        let (_, Response::Ok(hs)) = r.expect().await else {
            panic!("handshake reply")
        };
        let hs = ServerHandshake::from_body(&hs).unwrap();
        assert_eq!((hs.protover, hs.server_type.0), (0x511, 1));
        let (_, Response::Ok(p)) = r.expect().await else {
            panic!("protocol reply")
        };
        let p = ProtocolResponse::decode(p).unwrap();
        assert_eq!((p.pval, p.flags.0), (0x511, 0x0030_0001));
        r
    }

    /// A logged-in session; returns it with its session id.
    pub async fn login(addr: SocketAddr) -> (Raw, [u8; 16]) {
        let mut r = Raw::hello(addr, 3).await;
        r.send(0, login_request()).await;
        let (_, Response::Ok(body)) = r.expect().await else {
            panic!("login reply")
        };
        let reply = LoginResponse::decode(body).unwrap();
        assert_eq!(reply.sec, None);
        (r, reply.sessid)
    }

    /// Opens `path` for reading; returns the handle.
    pub async fn open(&mut self, path: &str) -> FHandle {
        self.open_with(path, OpenOptions::READ).await
    }

    /// Opens `path` with `options`; returns the handle.
    pub async fn open_with(&mut self, path: &str, options: OpenOptions) -> FHandle {
        self.send(9, open_request(path, options)).await;
        match self.expect().await {
            (_, Response::Ok(b)) => FHandle(b[..4].try_into().unwrap()),
            other => panic!("open: {other:?}"),
        }
    }

    /// Reads until each request of `sent` (written by the test, on its
    /// streamid) is answered in full, the frames paired with the requests
    /// by an [`xroot_proto::exchange::Conversation`]: the exchanges, in the
    /// order they completed. Panics on a frame that does not pair (an
    /// answer nobody asked for, one that does not fit its request), an
    /// unsolicited `kXR_attn`, or a link closed first.
    pub async fn answers(
        &mut self,
        sent: impl IntoIterator<Item = (StreamId, Request)>,
    ) -> Vec<Exchange> {
        let mut talk = Conversation::new();
        for (sid, request) in sent {
            talk.push_request(sid, request).expect("a request to pair");
        }
        let mut out = Vec::new();
        while talk.outstanding() > 0 {
            let frame = self
                .next_frame()
                .await
                .expect("a response, not a closed link");
            let header = frame.header;
            match talk.push_response(frame) {
                Ok(Some(Event::Exchange(x))) => out.push(x),
                Ok(Some(Event::Deferred { .. }) | None) => {}
                Ok(Some(Event::Unsolicited(a))) => panic!("unsolicited {a:?}"),
                Err(e) => panic!("{header:?}: {e}"),
            }
        }
        out
    }

    /// The next frame as it came, or `None` once the server closed the link.
    async fn next_frame(&mut self) -> Option<ResponseFrame> {
        loop {
            if let Some(f) = self.dec.decode(&mut self.buf).unwrap() {
                return Some(f);
            }
            let n = tokio::time::timeout(GUARD, self.s.read_buf(&mut self.buf))
                .await
                .expect("server answers within the guard")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
        }
    }
}

/// A `kXR_readv` of `list`, `(offset, length)` pairs, all on `fhandle`.
pub fn readv_request(fhandle: FHandle, list: impl IntoIterator<Item = (u64, usize)>) -> Readv {
    Readv {
        list: list
            .into_iter()
            .map(|(offset, len)| ReadListEntry {
                fhandle,
                rlen: len as i32,
                offset: offset as i64,
            })
            .collect(),
        ..Default::default()
    }
}

/// A `kXR_open` of `path` with `options`.
pub fn open_request(path: &str, options: OpenOptions) -> Open {
    Open {
        options,
        mode: xroot_proto::request::Mode(0o644),
        path: Bytes::copy_from_slice(path.as_bytes()),
        ..Default::default()
    }
}

/// A `kXR_login` as user `tester` (pid 1, capver 0x85).
pub fn login_request() -> Login {
    Login {
        pid: 1,
        username: Login::pack_username("tester"),
        capver: xroot_proto::request::Capver(0x85),
        ..Default::default()
    }
}
