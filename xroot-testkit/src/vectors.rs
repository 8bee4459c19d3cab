//! Loading and splitting the golden vectors of `tests/vectors` (real exchanges
//! between the stock xrootd 5.5.3 clients and server, see its README.md).
//!
//! Each scenario `NAME` is a pair of files: `NAME.c2s` (client to server: the
//! 20-byte handshake, then requests) and `NAME.s2c` (server to client: the
//! 16-byte handshake reply, then responses).
//!
//! Also: [`Exchange::replies`] pairs responses with requests (through
//! [`xroot_proto::exchange::Conversation`]),
//! [`parse_script`] reads the expected request/status sequences, the
//! `request!`/`response!` macros pick a typed variant, and small helpers
//! build expected bytes ([`pattern`], [`text`], [`encoded`], [`wire`],
//! [`adler32`]).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use xroot_proto::exchange::{Conversation, Event};
use xroot_proto::request::Request;
use xroot_proto::response::{Attn, Response};
use xroot_proto::{
    ClientMessage, RequestDecoder, RequestFrame, RequestId, ResponseDecoder, ResponseFrame, Status,
    StreamId,
};

/// The directory holding the vectors.
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors"))
}

/// Every scenario name (a `.c2s` file's stem), sorted. Panics if a `.c2s` has
/// no `.s2c` partner or the other way round.
pub fn names() -> Vec<String> {
    let mut c2s = Vec::new();
    let mut s2c = Vec::new();
    for entry in std::fs::read_dir(vectors_dir()).expect("tests/vectors") {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        match path.extension().and_then(|e| e.to_str()) {
            Some("c2s") => c2s.push(stem),
            Some("s2c") => s2c.push(stem),
            _ => {}
        }
    }
    c2s.sort();
    s2c.sort();
    assert_eq!(
        c2s, s2c,
        "every .c2s needs its .s2c and the other way round"
    );
    c2s
}

/// The two byte streams of scenario `name`: (client to server, server to client).
pub fn load(name: &str) -> (Bytes, Bytes) {
    let read = |ext: &str| {
        let path = vectors_dir().join(format!("{name}.{ext}"));
        Bytes::from(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    };
    (read("c2s"), read("s2c"))
}

/// Feeds `stream` to `decode` in pieces of `chunk` bytes (the whole stream
/// when `chunk` is 0), collecting every message, then checks with `decode_eof`
/// that nothing is left over. Panics on any decode error.
fn split<T>(
    name: &str,
    stream: &Bytes,
    chunk: usize,
    mut decode: impl FnMut(&mut BytesMut, bool) -> Result<Option<T>, xroot_proto::DecodeError>,
) -> Vec<T> {
    let chunk = if chunk == 0 {
        stream.len().max(1)
    } else {
        chunk
    };
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        while let Some(m) = decode(&mut buf, false)
            .unwrap_or_else(|e| panic!("{name}: decode error after {} messages: {e}", out.len()))
        {
            out.push(m);
        }
    }
    let last = decode(&mut buf, true)
        .unwrap_or_else(|e| panic!("{name}: {} bytes left over: {e}", buf.len()));
    assert!(last.is_none() && buf.is_empty(), "{name}: bytes left over");
    out
}

/// Splits a client-to-server stream with a fresh [`RequestDecoder`], in pieces
/// of `chunk` bytes (the whole stream when 0); panics on a decode error or
/// bytes left over.
pub fn split_requests(name: &str, stream: &Bytes, chunk: usize) -> Vec<ClientMessage> {
    let mut dec = RequestDecoder::new();
    split(name, stream, chunk, |buf, eof| {
        if eof {
            dec.decode_eof(buf)
        } else {
            dec.decode(buf)
        }
    })
}

/// Splits a server-to-client stream with a fresh [`ResponseDecoder`], as
/// [`split_requests`] does.
pub fn split_responses(name: &str, stream: &Bytes, chunk: usize) -> Vec<ResponseFrame> {
    let mut dec = ResponseDecoder::new();
    split(name, stream, chunk, |buf, eof| {
        if eof {
            dec.decode_eof(buf)
        } else {
            dec.decode(buf)
        }
    })
}

/// One scenario split into frames.
#[derive(Debug)]
pub struct Exchange {
    /// The scenario name.
    pub name: String,
    /// The requests after the client handshake, in the order sent.
    pub requests: Vec<RequestFrame>,
    /// Every server frame, the 16-byte handshake reply first.
    pub responses: Vec<ResponseFrame>,
}

impl Exchange {
    /// Loads and splits scenario `name`, the whole stream at once. Panics if
    /// the client stream does not start with the handshake or has a second one.
    pub fn load(name: &str) -> Exchange {
        let (c2s, s2c) = load(name);
        let mut msgs = split_requests(name, &c2s, 0).into_iter();
        assert!(
            matches!(msgs.next(), Some(ClientMessage::Handshake(_))),
            "{name}: the client handshake comes first"
        );
        let requests = msgs
            .map(|m| match m {
                ClientMessage::Request(r) => r,
                ClientMessage::Handshake(_) => panic!("{name}: a second handshake"),
            })
            .collect();
        Exchange {
            name: name.to_owned(),
            requests,
            responses: split_responses(name, &s2c, 0),
        }
    }

    /// The first request with id `id` and the frames that answered it.
    pub fn reply(&self, id: RequestId) -> Reply {
        self.replies()
            .into_iter()
            .find(|r| r.request.header.requestid == id)
            .unwrap_or_else(|| panic!("{}: no {id}", self.name))
    }

    /// Pairs every request with the frames that answered it (see [`Reply`]),
    /// in the order the requests were sent: the requests and then the
    /// responses go through an [`xroot_proto::exchange::Conversation`],
    /// which ties each frame to the request outstanding on its streamid (a
    /// `kXR_attn` asynresp to the streamid of the response it carries) and
    /// says when a request's answer is complete. Panics on a frame that
    /// does not decode or pair (a response nobody asked for, an answer that
    /// does not fit its request), a request never completed or an
    /// unsolicited `kXR_attn`.
    pub fn replies(&self) -> Vec<Reply> {
        let name = &self.name;
        let mut replies: Vec<Reply> = self
            .requests
            .iter()
            .map(|r| Reply {
                request: r.clone(),
                responses: Vec::new(),
            })
            .collect();
        let mut talk = Conversation::new();
        // the requests on each streamid, in the order the conversation
        // answers them
        let mut waiting: HashMap<StreamId, VecDeque<usize>> = HashMap::new();
        for (i, r) in self.requests.iter().enumerate() {
            talk.push_request_frame(r.clone())
                .unwrap_or_else(|e| panic!("{name}: {:?}: {e}", r.header));
            waiting.entry(r.header.streamid).or_default().push_back(i);
        }
        for f in &self.responses[1..] {
            let event = talk
                .push_response(f.clone())
                .unwrap_or_else(|e| panic!("{name}: {:?}: {e}", f.header));
            let (sid, done) = match event {
                Some(Event::Exchange(x)) => (x.streamid, true),
                Some(Event::Deferred { streamid, .. }) => (streamid, false),
                Some(Event::Unsolicited(a)) => panic!("{name}: unsolicited {a:?}"),
                // a partial answer, held: on the frame's streamid, or the
                // one an asynresp carries
                None => match Response::decode(f.clone()) {
                    Ok(Response::Attn(Attn::AsynResp { streamid, .. })) => (streamid, false),
                    _ => (f.header.streamid, false),
                },
            };
            let queue = waiting.get_mut(&sid).expect("the conversation paired it");
            let i = *queue.front().expect("the conversation paired it");
            replies[i].responses.push(f.clone());
            if done {
                queue.pop_front();
            }
        }
        talk.finish()
            .unwrap_or_else(|e| panic!("{name}: unanswered requests: {e}"));
        replies
    }
}

/// A request and the frames that answered it, in arrival order.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The request.
    pub request: RequestFrame,
    /// Its responses (for an asynresp, the `kXR_attn` frame itself).
    pub responses: Vec<ResponseFrame>,
}

impl Reply {
    /// The request, typed. Panics if it does not decode.
    pub fn typed(&self) -> Request {
        Request::decode(self.request.clone())
            .unwrap_or_else(|e| panic!("{:?}: {e}", self.request.header))
    }

    /// The statuses of the responses, in order.
    pub fn statuses(&self) -> Vec<Status> {
        self.responses.iter().map(|f| f.header.status).collect()
    }

    /// The response with status `status` (the only one, or panics).
    pub fn only(&self, status: Status) -> &ResponseFrame {
        let found: Vec<_> = self
            .responses
            .iter()
            .filter(|f| f.header.status == status)
            .collect();
        assert_eq!(found.len(), 1, "{:?}: one {status}", self.request.header);
        found[0]
    }

    /// The body of the only `kXR_ok`.
    pub fn ok_body(&self) -> Bytes {
        self.only(Status::OK).body.clone()
    }

    /// The only response with `status`, typed. Panics if it does not decode.
    pub fn typed_response(&self, status: Status) -> Response {
        let f = self.only(status);
        Response::decode(f.clone()).unwrap_or_else(|e| panic!("{:?}: {e}", f.header))
    }
}

/// Parses a script of requests and the statuses answering them:
/// space-separated `request:status+status…`, each name the C name without
/// its `kXR_` prefix (`"open:ok read:oksofar+ok"`). Panics on an unknown name.
pub fn parse_script(script: &str) -> Vec<(RequestId, Vec<Status>)> {
    fn named<T: Copy>(all: &[T], name: fn(T) -> Option<&'static str>, short: &str) -> T {
        let want = format!("kXR_{short}");
        *all.iter()
            .find(|&&c| name(c) == Some(want.as_str()))
            .unwrap_or_else(|| panic!("no {want}"))
    }
    script
        .split(' ')
        .map(|step| {
            let (id, statuses) = step.split_once(':').expect("request:status");
            let id = named(RequestId::ALL, RequestId::protocol_name, id);
            let statuses = statuses
                .split('+')
                .map(|s| named(Status::ALL, Status::protocol_name, s))
                .collect();
            (id, statuses)
        })
        .collect()
}

/// The typed request of `reply` (a [`Reply`](crate::vectors::Reply)), which must be
/// `Request::$variant`.
#[macro_export]
macro_rules! request {
    ($reply:expr, $variant:ident) => {
        match $reply.typed() {
            $crate::xroot_proto::request::Request::$variant(r) => r,
            other => panic!("expected {}, got {other:?}", stringify!($variant)),
        }
    };
}

/// The only response of `reply` with status `$status`, typed, which must be
/// `Response::$variant`.
#[macro_export]
macro_rules! response {
    ($reply:expr, $status:expr, $variant:ident) => {
        match $reply.typed_response($status) {
            $crate::xroot_proto::response::Response::$variant(r) => r,
            other => panic!("expected {}, got {other:?}", stringify!($variant)),
        }
    };
}

/// Every scenario, loaded and split ([`Exchange::load`]).
pub fn all() -> Vec<Exchange> {
    names().iter().map(|n| Exchange::load(n)).collect()
}

/// `Bytes` of a `&str`, for comparing bodies and payloads.
pub fn text(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// What `encode` appends to an empty buffer.
pub fn encoded(encode: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let mut buf = BytesMut::new();
    encode(&mut buf);
    buf
}

/// The bytes a request frame occupied on the wire.
pub fn wire(f: &RequestFrame) -> BytesMut {
    encoded(|b| {
        f.header.encode(b);
        b.extend_from_slice(&f.payload);
        b.extend_from_slice(&f.data);
    })
}

/// adler32 (RFC 1950), to check the server's checksums.
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// The content of every data file in the vectors: byte `i` of a file is
/// `(i * 7) % 251`. Returns bytes `offset..offset + len`.
pub fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (offset..offset + len as u64)
        .map(|i| (i * 7 % 251) as u8)
        .collect()
}
