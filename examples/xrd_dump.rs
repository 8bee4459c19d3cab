//! Prints the frames of recorded XRootD byte streams, decoded with xroot-proto.
//!
//! ```text
//! cargo run --example xrd_dump -- tests/vectors/readv.c2s tests/vectors/readv.s2c
//! ```
//!
//! A `.c2s` file is what a client sent (the 20-byte handshake, then
//! requests); a `.s2c` file is what a server sent (the 16-byte handshake
//! reply, then responses). `tests/vectors/` holds such pairs recorded between
//! the stock xrootd 5.5.3 clients and server. Exits non-zero at the first
//! byte that does not decode, naming what was wrong.

use std::fmt::Debug;
use std::process::ExitCode;

use bytes::BytesMut;
use xroot::proto::frame::{ClientMessage, RequestDecoder, ResponseDecoder};
use xroot::proto::response::{PgReadFrame, Response};
use xroot::proto::{request::Request, DecodeError, ServerHandshake};

/// Longest line printed for one frame, in characters.
const WIDTH: usize = 150;

fn main() -> ExitCode {
    const USAGE: &str = "usage: xrd_dump FILE.c2s|FILE.s2c ...\n\
        Decodes captured XRootD exchanges frame by frame: a .c2s file holds what a client \
        sent (handshake, then requests), a .s2c file what the server answered (e.g. \
        tests/vectors/readv.c2s tests/vectors/readv.s2c).";
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.iter().any(|f| f == "-h" || f == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if files.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    for file in files {
        let bytes = match std::fs::read(&file) {
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
