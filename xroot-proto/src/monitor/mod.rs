//! The XRootD monitoring streams, sans-IO: the UDP packets a server sends
//! its collectors (`xrootd.monitor` and `xrd.report`), decoded and
//! encoded.
//!
//! - [`header`]: the 8-byte header of every binary packet and the packet
//!   codes;
//! - [`map`]: dictionary maps: the server's identification (`=`), user
//!   logins (`u`), paths (`d`), application info (`i`);
//! - [`fstat`]: the file stream (`f`): opens, closes with their byte and
//!   operation counts, transfers, disconnects;
//! - [`trace`]: the trace stream (`t`): each session's I/O, opens,
//!   closes and disconnect;
//! - [`redir`]: the redirect stream (`r`);
//! - [`gstream`]: the plug-in stream (`g`): the cache's file records;
//! - [`summary`]: the summary XML (`xrd.report`).
//!
//! [`Packet::decode`] tells them apart by their first byte (`<` for a
//! summary document). Every decoder checks each length against the bytes
//! it has; a datagram is at most 65,535 bytes, so no decoder holds more
//! than a few entries per byte of input.
//!
//! Sources: `src/XrdXrootd/XrdXrootdMonData.hh` (the layouts),
//! `XrdXrootdMonitor.cc`, `XrdXrootdMonFile.cc`, `XrdXrootdGSReal.cc`,
//! `src/Xrd/XrdStats.cc` of xrootd 5.5.3, and the stock server's packets
//! seen on loopback; PROTOCOL.md §17 has the layouts and what the stock
//! server counts.
//!
//! ```
//! use xroot_proto::monitor::{Packet, header::{MonHeader, code}, fstat::*};
//! let packet = FstatPacket {
//!     header: MonHeader { code: code::FSTAT, pseq: 0, plen: 0, stod: 1_700_000_000 },
//!     tod: FileTod { xfr_records: 0, total_records: 1, t_begin: 1, t_end: 2, sid: 42 },
//!     records: vec![FileRecord::Disc { user: 7 }],
//! };
//! let mut out = Vec::new();
//! packet.encode(&mut out).unwrap();
//! assert_eq!(out.len(), 8 + 24 + 8);
//! match Packet::decode(&out).unwrap() {
//!     Packet::Fstat(f) => assert_eq!(f.records, vec![FileRecord::Disc { user: 7 }]),
//!     _ => unreachable!(),
//! }
//! ```

pub mod fstat;
pub mod gstream;
pub mod header;
pub mod map;
mod packet;
pub mod redir;
pub mod summary;
pub mod trace;

pub use packet::Packet;
