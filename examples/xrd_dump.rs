//! Prints the frames of recorded XRootD byte streams, decoded with xroot-proto.
//!
//! ```text
//! cargo run --example xrd_dump -- tests/vectors/readv.c2s tests/vectors/readv.s2c
//! cargo run --example xrd_dump -- tests/vectors/pgread.s2c
//! ```
//!
//! A `.c2s` file is what a client sent (the 20-byte handshake, then
//! requests); a `.s2c` file is what a server sent (the 16-byte handshake
//! reply, then responses). `tests/vectors/` holds such pairs recorded between
//! the stock xrootd 5.5.3 clients and server.
//!
//! When both halves of one capture are given (`NAME.c2s` and `NAME.s2c`),
//! they are paired: each request is printed with its typed answer, the
//! frames of multi-frame answers assembled (`xroot_proto::exchange`). A
//! file given without its other half is printed frame by frame. Exits
//! non-zero at the first byte that does not decode or the first response
//! that does not pair, naming what was wrong.

use std::fmt::Debug;
use std::process::ExitCode;

use bytes::BytesMut;
use xroot::proto::exchange::{Answer, Conversation, Event, Exchange, PairError};
use xroot::proto::frame::{ClientMessage, RequestDecoder, ResponseDecoder};
use xroot::proto::response::{DirList, PgReadFrame, Response};
use xroot::proto::{request::Request, DecodeError, ServerHandshake};

/// Longest line printed for one frame, in characters.
const WIDTH: usize = 150;

fn main() -> ExitCode {
    const USAGE: &str = "usage: xrd_dump FILE.c2s|FILE.s2c ...\n\
        Decodes captured XRootD exchanges: a .c2s file holds what a client sent (handshake, \
        then requests), a .s2c file what the server answered. Both halves of one capture \
        (e.g. tests/vectors/readv.c2s tests/vectors/readv.s2c) are paired: each request is \
        printed with its typed answer. A file without its other half is printed frame by frame.";
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.iter().any(|f| f == "-h" || f == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if files.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    // the other half of `file` when it was given too
    let other_half = |file: &str| {
        let other = match file.rsplit_once('.') {
            Some((stem, "c2s")) => format!("{stem}.s2c"),
            Some((stem, "s2c")) => format!("{stem}.c2s"),
            _ => return None,
        };
        files.contains(&other).then_some(other)
    };
    for file in &files {
        match other_half(file) {
            Some(_) if file.ends_with(".s2c") => continue, // printed with its .c2s
            Some(s2c) => {
                if let Err(e) = dump_pair(file, &s2c) {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
                continue;
            }
            None => {}
        }
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{file}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("== {file} ({} bytes)", bytes.len());
        let mut buf = BytesMut::from(&bytes[..]);
        let result = if file.ends_with(".s2c") {
            dump_responses(&mut buf)
        } else {
            dump_requests(&mut buf)
        };
        if let Err(e) = result {
            eprintln!("{file}: at byte {}: {e}", bytes.len() - buf.len());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn dump_requests(buf: &mut BytesMut) -> Result<(), DecodeError> {
    let mut dec = RequestDecoder::new();
    while let Some(msg) = dec.decode_eof(buf)? {
        match msg {
            ClientMessage::Handshake(_) => println!("   handshake (20 bytes)"),
            ClientMessage::Request(frame) => {
                let head = format!(
                    "sid={:04x} {:?} dlen={}",
                    frame.header.streamid.to_u16(),
                    frame.header.requestid,
                    frame.header.dlen
                );
                let req = Request::decode(frame)?;
                line(&head, &req);
            }
        }
    }
    Ok(())
}

fn dump_responses(buf: &mut BytesMut) -> Result<(), DecodeError> {
    let mut dec = ResponseDecoder::new();
    // the 16-byte handshake reply decodes as a frame with an 8-byte body
    if let Some(frame) = dec.decode_eof(buf)? {
        let hs = ServerHandshake::from_body(&frame.body)?;
        println!(
            "   handshake reply (16 bytes): protover {:#x}, {:?}",
            hs.protover, hs.server_type
        );
    }
    while let Some(frame) = dec.decode_eof(buf)? {
        let head = format!(
            "sid={:04x} {:?} dlen={}",
            frame.header.streamid.to_u16(),
            frame.header.status,
            frame.header.dlen
        );
        match Response::decode(frame)? {
            Response::Status(status) => match PgReadFrame::from_status(&status) {
                Ok(pg) => {
                    let bad = pg.bad_pages()?;
                    let summary = format!(
                        "{:?} {:?} offset={} data={} bytes in {} pages, bad pages: {:?}",
                        status.requestid,
                        status.resptype,
                        pg.offset,
                        pg.data_len()?,
                        pg.pages().count(),
                        bad
                    );
                    println!("   {head}  {summary}");
                }
                Err(_) => line(&head, &status),
            },
            other => line(&head, &other),
        }
    }
    Ok(())
}

fn line(head: &str, value: &impl Debug) {
    let text = format!("{value:?}");
    let shown: String = text.chars().take(WIDTH).collect();
    let more = if shown.len() < text.len() { " …" } else { "" };
    println!("   {head}  {shown}{more}");
}

/// Reads a whole file.
fn read(file: &str) -> Result<Vec<u8>, String> {
    std::fs::read(file).map_err(|e| format!("{file}: {e}"))
}

/// Prints each request of a capture with its paired, typed answer, in the
/// order the answers completed.
fn dump_pair(c2s: &str, s2c: &str) -> Result<(), String> {
    let (requests, responses) = (read(c2s)?, read(s2c)?);
    println!(
        "== {c2s} ({} bytes) + {s2c} ({} bytes), paired",
        requests.len(),
        responses.len()
    );
    let mut talk = Conversation::new();
    // the two directions are stored apart: push every request first
    let mut buf = BytesMut::from(&requests[..]);
    let mut dec = RequestDecoder::new();
    let at = |buf: &BytesMut| requests.len() - buf.len();
    loop {
        match dec.decode_eof(&mut buf) {
            Ok(None) => break,
            Ok(Some(ClientMessage::Handshake(_))) => {}
            Ok(Some(ClientMessage::Request(frame))) => talk
                .push_request_frame(frame)
                .map_err(|e| format!("{c2s}: at byte {}: {e}", at(&buf)))?,
            Err(e) => return Err(format!("{c2s}: at byte {}: {e}", at(&buf))),
        }
    }
    let mut buf = BytesMut::from(&responses[..]);
    let mut dec = ResponseDecoder::new();
    let at = |buf: &BytesMut| responses.len() - buf.len();
    let fail =
        |buf: &BytesMut, e: &dyn std::fmt::Display| format!("{s2c}: at byte {}: {e}", at(buf));
    let frame = dec.decode_eof(&mut buf).map_err(|e| fail(&buf, &e))?;
    if let Some(frame) = frame {
        let hs = ServerHandshake::from_body(&frame.body).map_err(|e| fail(&buf, &e))?;
        println!(
            "   handshake reply: protover {:#x}, {:?}",
            hs.protover, hs.server_type
        );
    }
    while let Some(frame) = dec.decode_eof(&mut buf).map_err(|e| fail(&buf, &e))? {
        let event = talk
            .push_response(frame)
            .map_err(|e: PairError| fail(&buf, &e))?;
        match event {
            None => {}
            Some(Event::Exchange(ex)) => print_exchange(&ex),
            Some(Event::Deferred {
                streamid,
                request,
                waitresp,
            }) => println!(
                "   sid={:04x} {request:?}  deferred: kXR_waitresp {} s",
                streamid.to_u16(),
                waitresp.seconds
            ),
            Some(Event::Unsolicited(attn)) => line("unsolicited kXR_attn", &attn),
        }
    }
    talk.finish().map_err(|e| format!("{s2c}: {e}"))
}

fn print_exchange(ex: &Exchange) {
    let head = format!("sid={:04x} {:?}", ex.streamid.to_u16(), ex.request.id());
    line(&head, &ex.request);
    let via = match (&ex.deferred, ex.frames) {
        (Some(_), _) => " (kXR_asynresp)".to_owned(),
        (None, 1) => String::new(),
        (None, n) => format!(" ({n} frames)"),
    };
    let arrow = format!("  -> {:?}{via}", ex.request.id());
    match &ex.answer {
        Answer::Dirlist(DirList::Stat(entries)) => {
            println!("   {arrow}  {} entries with stat", entries.len());
            for e in entries {
                let s = &e.stat;
                let name = String::from_utf8_lossy(&e.name);
                let kind = if s.is_dir() { "dir" } else { "file" };
                println!(
                    "        {name}  {kind} size={} mtime={} flags={:?}",
                    s.size, s.mtime, s.flags
                );
            }
        }
        Answer::Dirlist(DirList::Plain(names)) => {
            let names: Vec<_> = names.iter().map(|n| String::from_utf8_lossy(n)).collect();
            line(&arrow, &format_args!("{} names {names:?}", names.len()));
        }
        Answer::Read(data) => println!("   {arrow}  {} bytes", data.len()),
        Answer::Readv(segments) => {
            let list: Vec<_> = segments.iter().map(|(h, _)| (h.offset, h.rlen)).collect();
            line(
                &arrow,
                &format_args!("{} segments (offset, bytes): {list:?}", segments.len()),
            );
        }
        Answer::Pgread(pg) => {
            let crc = match &pg.bad_pages[..] {
                [] => "crc32c ok on every page".to_owned(),
                bad => format!("crc32c mismatch at offsets {bad:?}"),
            };
            let first = pg.pages.first().map_or(0, |p| p.offset);
            println!(
                "   {arrow}  {} status frames, {} pages, {} bytes from offset {first}, {crc}",
                pg.frames.len(),
                pg.pages.len(),
                pg.data_len()
            );
        }
        other => line(&arrow, other),
    }
}
