//! The `--raw` engine: each session its own connection driven by one task
//! that speaks just enough of the protocol (handshake, `kXR_protocol`,
//! `kXR_login` without authentication, `kXR_open` with `kXR_retstat`), then
//! keeps D `kXR_read`s outstanding on streamids `1..=D` (0 is the
//! unsolicited `kXR_attn`'s), pipelined: the new
//! requests of a round go out in one write, and every answer is read into
//! one buffer per worker thread, frame by frame, each byte copied once
//! from the socket and then dropped.
//!
//! Why: through [`xroot::client`] (the default engine) a read costs
//! `xrdload` a request object, a waiter, two task hand-offs and a buffer of
//! its own, and on two shared cores that made `xrdload` use more CPU per
//! GB than the server it measured, so the load generator, not the server,
//! set the throughput (`benches/server_load.rs`, issue 31). Here a read
//! costs its share of one `write` and one `read` and no allocation.
//!
//! Limits: plain `root://` only (no TLS), a server that asks for no
//! authentication at login, no redirects and no `kXR_wait`: those answers
//! count as errors.

use std::cell::RefCell;
use std::time::Instant;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use xroot::proto::codes::Status;
use xroot::proto::request::{
    Capver, Expect, Login, Open, OpenOptions, Protocol, ProtocolFlags, Read, Request,
};
use xroot::proto::response::{LoginResponse, OpenResponse, Response};
use xroot::proto::url::Url;
use xroot::proto::{ClientHandshake, FHandle, ResponseDecoder, ResponseHeader, StreamId};

use super::{Res, Rng, Tally};

/// Bytes each worker thread reads the sockets into: 8 answers of 64 KiB,
/// about what one session has in its socket when its task runs.
const SCRATCH: usize = 512 << 10;

/// Bytes of an error answer's message kept, for the report.
const MESSAGE_MAX: usize = 4096;

thread_local! {
    /// Where answers land before they are dropped: one per worker thread,
    /// warm in its cache, instead of one per session.
    static SCRATCH_BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; SCRATCH]);
}

/// One logged-in connection with the file open.
pub(crate) struct Session {
    stream: TcpStream,
    fhandle: FHandle,
    /// The file's size, bytes, from the open's stat.
    pub(crate) size: u64,
}

/// Connects to `url`'s server, logs in and opens its path for reading.
/// Errors: the connection's, an answer that is not what the step expects
/// (a `kXR_error`, a redirect, a login asking for authentication).
pub(crate) async fn open(url: &Url) -> Res<Session> {
    let mut stream = TcpStream::connect((url.host.as_str(), url.port)).await?;
    stream.set_nodelay(true)?;
    let mut dec = ResponseDecoder::new();
    let mut buf = BytesMut::new();
    let mut out = BytesMut::new();
    ClientHandshake.encode(&mut out);
    let protocol = Protocol {
        clientpv: xroot::proto::codes::version::CURRENT,
        flags: ProtocolFlags::default(),
        expect: Expect::LOGIN,
    };
    Request::from(protocol).encode(StreamId::ZERO, &mut out);
    stream.write_all(&out).await?;
    // the handshake's answer, then kXR_protocol's
    ok(next(&mut stream, &mut dec, &mut buf).await?, "handshake")?;
    ok(next(&mut stream, &mut dec, &mut buf).await?, "kXR_protocol")?;
    let login = Login {
        pid: std::process::id() as i32,
        username: Login::pack_username("xrdload"),
        capver: Capver::new(5, true),
        ..Default::default()
    };
    send(&mut stream, Request::from(login)).await?;
    let body = ok(next(&mut stream, &mut dec, &mut buf).await?, "kXR_login")?;
    if LoginResponse::decode(body)?.sec.is_some() {
        return Err("the server asks for authentication: run without --raw".into());
    }
    let open = Open {
        options: OpenOptions::READ | OpenOptions::RETSTAT,
        path: url.path_with_cgi().into_bytes().into(),
        ..Default::default()
    };
    send(&mut stream, Request::from(open)).await?;
    let body = ok(next(&mut stream, &mut dec, &mut buf).await?, "kXR_open")?;
    let opened = OpenResponse::decode(body)?;
    let size = opened.stat.ok_or("kXR_open: no stat in the answer")?.size;
    Ok(Session {
        stream,
        fhandle: opened.fhandle,
        size,
    })
}

async fn send(stream: &mut TcpStream, request: Request) -> Res<()> {
    let mut out = BytesMut::new();
    request.encode(StreamId::ZERO, &mut out);
    Ok(stream.write_all(&out).await?)
}

/// The next whole frame, typed.
async fn next(
    stream: &mut TcpStream,
    dec: &mut ResponseDecoder,
    buf: &mut BytesMut,
) -> Res<Response> {
    use tokio::io::AsyncReadExt;
    loop {
        if let Some(frame) = dec.decode(buf)? {
            return Ok(Response::decode(frame)?);
        }
        if stream.read_buf(buf).await? == 0 {
            return Err("the server closed the connection".into());
        }
    }
}

/// The body of a `kXR_ok`; anything else is an error of `step`.
fn ok(response: Response, step: &str) -> Res<bytes::Bytes> {
    match response {
        Response::Ok(body) => Ok(body),
        Response::Error(e) => Err(format!("{step}: {e}").into()),
        other => Err(format!("{step}: unexpected answer {other:?}").into()),
    }
}

/// What the frame being read is, between reads of the socket.
struct Frame {
    /// Header bytes gathered so far (of [`ResponseHeader::LEN`]).
    head: [u8; ResponseHeader::LEN],
    have: usize,
    /// The header, once whole, and the body bytes still to come.
    header: Option<ResponseHeader>,
    left: usize,
    /// An error answer's message, gathered up to [`MESSAGE_MAX`].
    message: Vec<u8>,
}

/// One read outstanding, on streamid = its slot + 1.
#[derive(Clone, Copy)]
struct Slot {
    sent: Option<Instant>,
    /// Body bytes its answer brought so far.
    got: usize,
}

/// Keeps `depth` reads of `len` bytes outstanding at random `len`-aligned
/// offsets (from `rng`) until `end`, then waits for those in flight.
/// Returns the session too, still connected, so that the server's
/// descriptors are counted before it closes.
pub(crate) async fn reads(
    mut s: Session,
    depth: usize,
    len: usize,
    end: Instant,
    mut rng: Rng,
) -> (Tally, Session) {
    let mut tally = Tally::default();
    if let Err(e) = drive(&mut s, depth, len, end, &mut rng, &mut tally).await {
        tally.fail(e.to_string());
    }
    (tally, s)
}

async fn drive(
    s: &mut Session,
    depth: usize,
    len: usize,
    end: Instant,
    rng: &mut Rng,
    tally: &mut Tally,
) -> Res<()> {
    let slots_in_file = s.size / len as u64;
    let mut slots = vec![Slot { sent: None, got: 0 }; depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut out = BytesMut::with_capacity(depth * 24);
    let mut frame = Frame {
        head: [0; ResponseHeader::LEN],
        have: 0,
        header: None,
        left: 0,
        message: Vec::new(),
    };
    let mut now = Instant::now();
    loop {
        if now < end {
            while let Some(slot) = free.pop() {
                let offset = rng.below(slots_in_file) * len as u64;
                let read = Read {
                    fhandle: s.fhandle,
                    offset: offset as i64,
                    rlen: len as i32,
                    args: None,
                };
                Request::from(read).encode(StreamId::from_u16(slot as u16 + 1), &mut out);
                slots[slot] = Slot {
                    sent: Some(now),
                    got: 0,
                };
            }
        }
        if !out.is_empty() {
            s.stream.write_all(&out).await?;
            out.clear();
        }
        if free.len() == depth {
            return Ok(());
        }
        let n = loop {
            s.stream.readable().await?;
            let read = SCRATCH_BUF.with(|b| {
                let mut b = b.borrow_mut();
                let n = s.stream.try_read(&mut b)?;
                now = Instant::now();
                take(&b[..n], &mut frame, &mut slots, &mut free, len, now, tally)?;
                Ok::<_, std::io::Error>(n)
            });
            match read {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                other => break other?,
            }
        };
        if n == 0 {
            return Err("the server closed the connection".into());
        }
    }
}

/// Walks `data` frame by frame: headers decoded, bodies skipped; each
/// whole answer frees its slot and counts in `tally`.
fn take(
    mut data: &[u8],
    f: &mut Frame,
    slots: &mut [Slot],
    free: &mut Vec<usize>,
    len: usize,
    now: Instant,
    tally: &mut Tally,
) -> std::io::Result<()> {
    let bad = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    while !data.is_empty() || (f.header.is_some() && f.left == 0) {
        let Some(h) = f.header else {
            let n = (ResponseHeader::LEN - f.have).min(data.len());
            f.head[f.have..f.have + n].copy_from_slice(&data[..n]);
            f.have += n;
            data = &data[n..];
            if f.have == ResponseHeader::LEN {
                let h = ResponseHeader::decode(&f.head).map_err(|e| bad(e.to_string()))?;
                f.header = Some(h);
                f.left = usize::try_from(h.dlen).map_err(|_| bad(format!("{h:?}")))?;
                f.have = 0;
            }
            continue;
        };
        let n = f.left.min(data.len());
        if h.status != Status::OK && h.status != Status::OKSOFAR {
            let keep = n.min(MESSAGE_MAX.saturating_sub(f.message.len()));
            f.message.extend_from_slice(&data[..keep]);
        }
        data = &data[n..];
        f.left -= n;
        if f.left > 0 {
            continue;
        }
        f.header = None;
        let sid = (u16::from_be_bytes(h.streamid.0) as usize).wrapping_sub(1);
        let Some(slot) = slots.get_mut(sid).filter(|s| s.sent.is_some()) else {
            return Err(bad(format!("an answer to no read: {h:?}")));
        };
        let sent = slot.sent.expect("checked");
        match h.status {
            Status::OKSOFAR => {
                slot.got += h.dlen as usize;
                continue;
            }
            Status::OK => {
                slot.got += h.dlen as usize;
                if slot.got == len {
                    tally.done(len, now.saturating_duration_since(sent));
                } else {
                    tally.fail(format!("a read of {len} bytes got {}", slot.got));
                }
            }
            status => {
                let text = String::from_utf8_lossy(&f.message);
                tally.fail(format!(
                    "status {}: {}",
                    status.0,
                    text.trim_end_matches('\0')
                ));
                f.message.clear();
            }
        }
        *slot = Slot { sent: None, got: 0 };
        free.push(sid);
    }
    Ok(())
}
