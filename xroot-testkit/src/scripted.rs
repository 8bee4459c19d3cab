//! A scripted XRootD peer for client tests: a tokio server on 127.0.0.1
//! built from `xroot_proto` (a [`RequestDecoder`] in, [`Response::encode`]
//! out) that answers each request as a per-test script says.
//!
//! The peer always answers the client handshake. Every request after it
//! (including `kXR_protocol`, `kXR_login` and `kXR_auth`) is handed to the
//! script as a [`Call`]; the script returns the [`Step`]s to take, and
//! [`Call::serve`] gives the default answer: a no-auth data server (16-byte
//! sessid; with [`Options::security`] the login asks for authentication)
//! exporting one file of [`Options::content`] under every path. Steps run
//! in a task of their own per request, so one request's sleeps do not hold
//! up another's answer.
//!
//! Everything the peer saw is recorded ([`Peer::requests`],
//! [`Peer::logins`], [`Peer::connections`], [`Peer::client_closes`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::AbortHandle;
use xroot_proto::codes::version;
use xroot_proto::request::{OpenOptions, Request};
use xroot_proto::response::{
    Attn, BindResponse, LoginResponse, OpenResponse, ProtocolFlags, ProtocolResponse, ReadvEncoder,
    Response, SecProtocol, ServerError, StatFlags, StatInfo,
};
use xroot_proto::{
    ClientMessage, ErrorCode, FHandle, ReadListEntry, RequestDecoder, RequestId, ResponseDecoder,
    ServerHandshake, ServerType, StreamId,
};

/// What to do for one request, in order.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send this response on the request's streamid.
    Reply(Response),
    /// Send a `kXR_attn` asynresp (outer streamid 0) carrying this response
    /// for the request's streamid.
    Attn(Response),
    /// Send these bytes as they are.
    Raw(Bytes),
    /// Wait before the next step.
    Sleep(Duration),
    /// Wait until the test sets this gate to `true`.
    Gate(watch::Receiver<bool>),
    /// Close the connection (both directions).
    Close,
}

impl Step {
    /// `kXR_ok` with `body`.
    pub fn ok(body: impl Into<Bytes>) -> Step {
        Step::Reply(Response::Ok(body.into()))
    }

    /// `kXR_error` with `code` and `message`.
    pub fn error(code: ErrorCode, message: &str) -> Step {
        Step::Reply(Response::Error(ServerError::new(
            code,
            Bytes::copy_from_slice(message.as_bytes()),
        )))
    }

    /// `kXR_wait` for `seconds`.
    pub fn wait(seconds: i32) -> Step {
        Step::Reply(Response::Wait(xroot_proto::response::Wait {
            seconds,
            message: Bytes::new(),
        }))
    }

    /// `kXR_waitresp` for `seconds`.
    pub fn waitresp(seconds: i32) -> Step {
        Step::Reply(Response::WaitResp(xroot_proto::response::WaitResp {
            seconds,
            message: Bytes::new(),
        }))
    }
}

/// How the peer presents itself.
#[derive(Debug, Clone)]
pub struct Options {
    /// The file every path names (reads and readv are served from it).
    pub content: Bytes,
    /// Security protocols offered in the login answer (`unix`, `gsi`, …);
    /// empty for none (no authentication).
    pub security: Vec<String>,
    /// `kXR_protocol` flags: a data server by default.
    pub flags: ProtocolFlags,
    /// The loopback address to listen on: 127.0.0.1 by default.
    pub ip: IpAddr,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            content: Bytes::new(),
            security: Vec::new(),
            flags: ProtocolFlags::IS_SERVER | ProtocolFlags::SUPPGRW,
            ip: Ipv4Addr::LOCALHOST.into(),
        }
    }
}

impl Options {
    /// The defaults, serving `content` under every path.
    pub fn serving(content: Bytes) -> Options {
        Options {
            content,
            ..Default::default()
        }
    }
}

/// One request as the script sees it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Index of the connection at this peer, from 0.
    pub conn: usize,
    /// The user this connection logged in as (empty before login).
    pub user: String,
    /// How many requests with the same request id this peer saw before.
    pub nth: usize,
    /// The request's streamid.
    pub streamid: StreamId,
    /// The request.
    pub request: Request,
    options: Arc<Options>,
}

/// The handle the default answers hand out.
pub const FHANDLE: FHandle = FHandle([0, 0, 0, 7]);

impl Call {
    /// The default answer of a no-auth data server exporting
    /// [`Options::content`] under every path: protocol, login (with the
    /// security token of [`Options::security`]), auth, bind (pathid 1), open
    /// (with retstat),
    /// stat, read, readv (frames of 64 kB at most), close, sync, write,
    /// truncate, endsess and ping succeed; anything else is `kXR_Unsupported`.
    pub fn serve(&self) -> Vec<Step> {
        let o = &self.options;
        let mut body = BytesMut::new();
        match &self.request {
            Request::Protocol(_) => ProtocolResponse {
                pval: version::CURRENT,
                flags: o.flags,
                bifinfo: None,
                security: None,
            }
            .encode(&mut body),
            Request::Login(_) => {
                let offered: Vec<SecProtocol> = o
                    .security
                    .iter()
                    .map(|name| SecProtocol {
                        name: Bytes::copy_from_slice(name.as_bytes()),
                        params: Bytes::new(),
                    })
                    .collect();
                let mut sessid = [0u8; 16];
                sessid[..8].copy_from_slice(&(self.conn as u64 + 1).to_be_bytes());
                LoginResponse {
                    sessid,
                    sec: LoginResponse::token(&offered),
                }
                .encode(&mut body)
            }
            Request::Open(open) => OpenResponse {
                fhandle: FHANDLE,
                compression: None,
                stat: open
                    .options
                    .contains(OpenOptions::RETSTAT)
                    .then(|| self.stat()),
            }
            .encode(&mut body),
            Request::Stat(_) => self.stat().encode(&mut body),
            Request::Bind(_) => BindResponse { pathid: 1 }.encode(&mut body),
            Request::Read(r) => return vec![Step::ok(self.slice(r.offset, r.rlen as i64))],
            Request::Readv(r) => return vec![Step::Raw(self.readv_frames(&r.list))],
            Request::Auth(_)
            | Request::Close(_)
            | Request::Sync(_)
            | Request::Write(_)
            | Request::Truncate(_)
            | Request::Endsess(_)
            | Request::Ping(_) => {}
            other => {
                return vec![Step::error(
                    ErrorCode::UNSUPPORTED,
                    &format!("scripted peer: no default for {:?}", other.id()),
                )]
            }
        }
        vec![Step::ok(body.freeze())]
    }

    /// The stat of the served file.
    pub fn stat(&self) -> StatInfo {
        StatInfo {
            id: 42,
            size: self.options.content.len() as u64,
            flags: StatFlags::READABLE,
            mtime: 1_700_000_000,
            extended: None,
        }
    }

    /// Bytes `offset..offset + len` of the content, cut at its end.
    pub fn slice(&self, offset: i64, len: i64) -> Bytes {
        let c = &self.options.content;
        let start = (offset.max(0) as usize).min(c.len());
        let end = (start + len.max(0) as usize).min(c.len());
        c.slice(start..end)
    }

    /// The frames answering a readv of `list`: `kXR_oksofar` frames of at
    /// most 64 kB and a final `kXR_ok`, as the stock server splits them.
    pub fn readv_frames(&self, list: &[ReadListEntry]) -> Bytes {
        let elements: Vec<(ReadListEntry, Bytes)> = list
            .iter()
            .map(|e| (*e, self.slice(e.offset, e.rlen as i64)))
            .collect();
        let mut out = BytesMut::new();
        ReadvEncoder::new()
            .with_quantum(64 * 1024)
            .encode(self.streamid, &elements, &mut out);
        out.freeze()
    }

    /// Only the first frame of the readv answer: a `kXR_oksofar` when the
    /// answer takes more than one frame.
    pub fn readv_first_frame(&self, list: &[ReadListEntry]) -> Bytes {
        let mut all = BytesMut::from(&self.readv_frames(list)[..]);
        let frame = ResponseDecoder::new()
            .decode(&mut all)
            .expect("own frames decode")
            .expect("a whole frame");
        let mut out = BytesMut::new();
        frame.encode(&mut out);
        out.freeze()
    }
}

/// The script: the steps answering one request.
pub type Script = dyn Fn(&Call) -> Vec<Step> + Send + Sync;

/// A request the peer received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Connection index.
    pub conn: usize,
    /// The request's streamid.
    pub streamid: StreamId,
    /// The request.
    pub request: Request,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Seen>>,
    connections: AtomicUsize,
    client_closes: AtomicUsize,
    tasks: Mutex<Vec<AbortHandle>>,
}

/// A running scripted peer; stopped (every connection closed) on drop.
pub struct Peer {
    /// TCP port on [`Options::ip`] (127.0.0.1 unless set).
    pub port: u16,
    ip: IpAddr,
    shared: Arc<Shared>,
}

impl Peer {
    /// Starts a peer with default [`Options`] answering as `script` says.
    pub async fn start(script: impl Fn(&Call) -> Vec<Step> + Send + Sync + 'static) -> Peer {
        Peer::start_with(Options::default(), script).await
    }

    /// Starts a peer with `options` answering as `script` says.
    pub async fn start_with(
        options: Options,
        script: impl Fn(&Call) -> Vec<Step> + Send + Sync + 'static,
    ) -> Peer {
        let listener = TcpListener::bind((options.ip, 0)).await.expect("bind");
        let ip = options.ip;
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let script: Arc<Script> = Arc::new(script);
        let options = Arc::new(options);
        let s = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let conn = s.connections.fetch_add(1, Ordering::SeqCst);
                let task = tokio::spawn(connection(
                    sock,
                    conn,
                    Arc::clone(&s),
                    Arc::clone(&script),
                    Arc::clone(&options),
                ));
                s.tasks.lock().unwrap().push(task.abort_handle());
            }
        });
        shared.tasks.lock().unwrap().push(accept.abort_handle());
        Peer { port, ip, shared }
    }

    /// `root://[user@]127.0.0.1:PORT//path` (`[::1]` for a peer on the
    /// IPv6 loopback).
    pub fn url(&self, user: Option<&str>, path: &str) -> String {
        let user = user.map(|u| format!("{u}@")).unwrap_or_default();
        format!(
            "root://{user}{}/{path}",
            SocketAddr::new(self.ip, self.port)
        )
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests with id `id`, in arrival order.
    pub fn requests_of(&self, id: RequestId) -> Vec<Seen> {
        self.requests()
            .into_iter()
            .filter(|s| s.request.id() == id)
            .collect()
    }

    /// The user name of every `kXR_login` received, in order.
    pub fn logins(&self) -> Vec<String> {
        self.requests_of(RequestId::LOGIN)
            .into_iter()
            .map(|s| match s.request {
                Request::Login(l) => String::from_utf8_lossy(l.username()).into_owned(),
                _ => unreachable!(),
            })
            .collect()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Connections the client closed (end of stream seen by the peer).
    pub fn client_closes(&self) -> usize {
        self.shared.client_closes.load(Ordering::SeqCst)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        for t in self.shared.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

enum Out {
    Frame(Bytes),
    Close,
}

async fn connection(
    sock: TcpStream,
    conn: usize,
    shared: Arc<Shared>,
    script: Arc<Script>,
    options: Arc<Options>,
) {
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
    let stop = Arc::new(Notify::new());
    let stop_reader = Arc::clone(&stop);
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Out::Frame(b) => {
                    if wr.write_all(&b).await.is_err() {
                        break;
                    }
                }
                Out::Close => break,
            }
        }
        stop.notify_one();
        // dropping `wr` (and the reader dropping `rd`) closes the socket
    });
    let mut dec = RequestDecoder::new();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut user = String::new();
    'read: loop {
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(ClientMessage::Handshake(_))) => {
                    let mut out = BytesMut::new();
                    ServerHandshake {
                        protover: version::CURRENT,
                        server_type: ServerType::DATA_SERVER,
                    }
                    .encode(&mut out);
                    let _ = tx.send(Out::Frame(out.freeze()));
                }
                Ok(Some(ClientMessage::Request(frame))) => {
                    let streamid = frame.header.streamid;
                    let request = Request::decode(frame).expect("a request that decodes");
                    if let Request::Login(l) = &request {
                        user = String::from_utf8_lossy(l.username()).into_owned();
                    }
                    let nth = {
                        let mut seen = shared.requests.lock().unwrap();
                        let nth = seen
                            .iter()
                            .filter(|s| s.request.id() == request.id())
                            .count();
                        seen.push(Seen {
                            conn,
                            streamid,
                            request: request.clone(),
                        });
                        nth
                    };
                    let call = Call {
                        conn,
                        user: user.clone(),
                        nth,
                        streamid,
                        request,
                        options: Arc::clone(&options),
                    };
                    let steps = script(&call);
                    let tx = tx.clone();
                    let task = tokio::spawn(run_steps(streamid, steps, tx));
                    shared.tasks.lock().unwrap().push(task.abort_handle());
                }
                Ok(None) => break,
                Err(e) => panic!("scripted peer: undecodable request: {e}"),
            }
        }
        tokio::select! {
            // the peer's own close first: it is signalled before the
            // socket closes, so the client's end of stream that follows
            // is not counted as the client closing
            biased;
            _ = stop_reader.notified() => break 'read,
            n = rd.read_buf(&mut buf) => match n {
                Ok(0) | Err(_) => {
                    shared.client_closes.fetch_add(1, Ordering::SeqCst);
                    break 'read;
                }
                Ok(_) => {}
            },
        }
    }
    let _ = tx.send(Out::Close);
    let _ = writer.await;
}

async fn run_steps(streamid: StreamId, steps: Vec<Step>, tx: mpsc::UnboundedSender<Out>) {
    for step in steps {
        let mut out = BytesMut::new();
        match step {
            Step::Reply(r) => r.encode(streamid, &mut out),
            Step::Attn(r) => Response::Attn(Attn::AsynResp {
                streamid,
                response: Box::new(r),
            })
            .encode(StreamId::ZERO, &mut out),
            Step::Raw(b) => out.extend_from_slice(&b),
            Step::Sleep(d) => {
                tokio::time::sleep(d).await;
                continue;
            }
            Step::Gate(mut open) => {
                let _ = open.wait_for(|o| *o).await;
                continue;
            }
            Step::Close => {
                let _ = tx.send(Out::Close);
                return;
            }
        }
        if tx.send(Out::Frame(out.freeze())).is_err() {
            return;
        }
    }
}
