//! Any monitoring packet, told apart by its first byte.

use crate::error::DecodeError;

use super::fstat::FstatPacket;
use super::gstream::GStreamPacket;
use super::header::{code, MonHeader};
use super::map::MapPacket;
use super::redir::RedirPacket;
use super::summary::Element;
use super::trace::TracePacket;

/// One datagram of a monitoring stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Packet<'a> {
    /// A map (`=`, `d`, `i`, `p`, `T`, `u`, `U`, `x`).
    Map(MapPacket<'a>),
    /// The file stream (`f`).
    Fstat(FstatPacket<'a>),
    /// The trace stream (`t`).
    Trace(TracePacket),
    /// The redirect stream (`r`).
    Redirect(RedirPacket<'a>),
    /// The plug-in stream (`g`).
    GStream(GStreamPacket<'a>),
    /// A summary document (`xrd.report`): the `<statistics>` element.
    Summary(Element<'a>),
}

impl<'a> Packet<'a> {
    /// Decodes a datagram: a summary document when it starts with `<`
    /// (its text must be UTF-8), else a binary packet by its code.
    /// Errors: an unknown code ([`DecodeError::InvalidValue`]) and those
    /// of each packet's decoder.
    pub fn decode(datagram: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
        if datagram.first() == Some(&b'<') {
            let text = std::str::from_utf8(datagram)
                .map_err(|e| DecodeError::malformed("summary XML", e.to_string()))?;
            return Element::parse(text).map(Packet::Summary);
        }
        let header = MonHeader::decode(datagram)?;
        Ok(match header.code {
            code::FSTAT => Packet::Fstat(FstatPacket::decode(datagram)?),
            code::TRACE => Packet::Trace(TracePacket::decode(datagram)?),
            code::REDIRECT => Packet::Redirect(RedirPacket::decode(datagram)?),
            code::GSTREAM => Packet::GStream(GStreamPacket::decode(datagram)?),
            code::IDENT
            | code::PATH
            | code::INFO
            | code::PURGE
            | code::TOKEN
            | code::USER
            | code::USER_EA
            | code::XFER => Packet::Map(MapPacket::decode(datagram)?),
            other => {
                return Err(DecodeError::InvalidValue {
                    what: "monitoring packet code",
                    expected: "one of = d f g i p r t T u U x",
                    got: i64::from(other),
                })
            }
        })
    }

    /// The packet's bytes (a summary written as [`Element::write`] does).
    /// Errors: those of each packet's encoder.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        match self {
            Packet::Map(p) => p.encode(out),
            Packet::Fstat(p) => p.encode(out),
            Packet::Trace(p) => p.encode(out),
            Packet::Redirect(p) => p.encode(out),
            Packet::GStream(p) => p.encode(out),
            Packet::Summary(e) => {
                out.extend_from_slice(e.to_xml().as_bytes());
                Ok(())
            }
        }
    }
}
