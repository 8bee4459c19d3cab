//! The monitoring codecs against packets the stock xrootd 5.5.3 sent on
//! loopback (`xrootd.monitor all flush 2s fstat 2s lfn ops xfr 5 ident 5m
//! dest fstat info user files io redir`, `xrd.report ... every 2s all`),
//! for `xrdfs query config version`, `xrdcp` of a 1,000,000-byte file, a
//! partial and a vector read from the Python bindings and an `xrdcp`
//! upload of 200,000 bytes: each decodes to what the stock meant and
//! encodes back to the same bytes.

use xroot_proto::monitor::fstat::{FileOps, FileRecord, FileXfr};
use xroot_proto::monitor::gstream::GStreamPacket;
use xroot_proto::monitor::header::code;
use xroot_proto::monitor::map::{cgi_pairs, MapPacket};
use xroot_proto::monitor::redir::{RedirEntry, RedirPacket};
use xroot_proto::monitor::summary::Element;
use xroot_proto::monitor::trace::{shift_total, TraceEntry, TracePacket};
use xroot_proto::monitor::Packet;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const IDENT: &str = "3d0000596b16595b000000003d2f726f6f742e383630353a333133353634383235313136313640766d0a26736974653d26706f72743d333431393426696e73743d73312670676d3d78726f6f7464267665723d76352e352e33";
const USER: &str = "7501004d6b16595b0000000178726f6f742f726f6f742e383632353a3331333536343832353131363136403132372e302e302e310a26523d76352e352e3326783d787264667326793d26493d34";
const TRACE_DISC: &str = "740200386b16595be0001c84c00063006b16595b6b16595bd0000000000000000000000000000001e0001c84c00063006b1659976b165997";
const PATH: &str = "640400406b16595b0000000378726f6f742f726f6f742e383633333a3331333536343832353131363136403132372e302e302e310a2f646174612f612e62696e";
const TRACE_PY: &str = "740e00786b16595be0001c84c00063006b16595b6b16595b80000000000f4240000000000000000900000000000003e80000138800000009900100030000000000000ce400000009c00000000000206c0000000000000009d0000000000000000000000000000008e0001c84c00063006b1659976b165997";
const TRACE_UPLOAD: &str = "741100686b16595be0001c84c00063006b16595b6b16595b8000000000000000000000000000000b0000000000000000fffcf1fc0000000bc00000000000000000030e040000000bd000000000000000000000000000000ae0001c84c00063006b1659976b165997";
const SID: u64 = 31_356_482_511_616;

fn roundtrip(bytes: &[u8]) -> Packet<'_> {
    let p = Packet::decode(bytes).unwrap();
    let mut out = Vec::new();
    p.encode(&mut out).unwrap();
    assert_eq!(out, bytes, "{p:?}");
    p
}

#[test]
fn ident_and_user_maps() {
    let b = hex(IDENT);
    let Packet::Map(m) = roundtrip(&b) else {
        panic!()
    };
    assert_eq!(
        (m.header.code, m.header.pseq, m.dictid),
        (code::IDENT, 0, 0)
    );
    let u = m.user().unwrap();
    assert_eq!(
        (u.prot, u.user, u.sid, u.host),
        (&b"="[..], &b"root"[..], &b"31356482511616"[..], &b"vm"[..])
    );
    let kv: Vec<_> = cgi_pairs(m.detail()).collect();
    assert_eq!(kv[1], (&b"port"[..], &b"34194"[..]));
    assert_eq!(kv[4], (&b"ver"[..], &b"v5.5.3"[..]));

    let b = hex(USER);
    let m = MapPacket::decode(&b).unwrap();
    assert_eq!((m.header.code, m.header.pseq, m.dictid), (code::USER, 1, 1));
    let u = m.user().unwrap();
    assert_eq!(
        (u.prot, u.user, u.pid, u.host),
        (&b"xroot"[..], &b"root"[..], &b"8625"[..], &b"127.0.0.1"[..])
    );
    assert_eq!(m.detail(), b"&R=v5.5.3&x=xrdfs&y=&I=4");
    roundtrip(&b);

    let b = hex(PATH);
    let m = MapPacket::decode(&b).unwrap();
    assert_eq!(
        (m.header.code, m.dictid, m.detail()),
        (code::PATH, 3, &b"/data/a.bin"[..])
    );
    roundtrip(&b);
}

#[test]
fn trace_packets() {
    let b = hex(TRACE_DISC);
    let Packet::Trace(t) = roundtrip(&b) else {
        panic!()
    };
    assert_eq!(t.entries.len(), 3);
    assert_eq!(
        t.entries[1],
        TraceEntry::Disc {
            user: 1,
            flags: 0,
            secs: 0
        }
    );
    let TraceEntry::Window { sid, end, start } = t.entries[0] else {
        panic!()
    };
    assert_eq!((sid, end, start), (SID, t.header.stod, t.header.stod));
    assert!(
        matches!(t.entries[2], TraceEntry::Window { end, start, .. } if end == start && end == t.header.stod + 60)
    );

    let b = hex(TRACE_PY);
    let t = TracePacket::decode(&b).unwrap();
    roundtrip(&b);
    assert_eq!(
        t.entries[1],
        TraceEntry::Open {
            file: 9,
            size: 1_000_000
        }
    );
    assert_eq!(
        t.entries[2],
        TraceEntry::Read {
            file: 9,
            offset: 1000,
            len: 5000
        }
    );
    assert_eq!(
        t.entries[3],
        TraceEntry::Readv {
            file: 9,
            unwound: false,
            seq: 1,
            count: 3,
            len: 3300
        }
    );
    let (s, v) = shift_total(8300);
    assert_eq!(
        t.entries[4],
        TraceEntry::Close {
            file: 9,
            read_shift: s,
            read_val: v,
            write_shift: 0,
            write_val: 0
        }
    );

    let b = hex(TRACE_UPLOAD);
    let t = TracePacket::decode(&b).unwrap();
    roundtrip(&b);
    assert_eq!(
        t.entries[2],
        TraceEntry::Write {
            file: 11,
            offset: 0,
            len: 200_196
        }
    );
}

#[test]
fn shifts() {
    assert_eq!(shift_total(5), (0, 5));
    assert_eq!(shift_total(1 << 31), (0, 1 << 31));
    assert_eq!(shift_total(1 << 32), (1, 1 << 31));
    let (s, v) = shift_total(u64::MAX);
    assert_eq!((u64::from(v) << s) >> 62, 1);
}

#[test]
fn fstat_packet() {
    let b = hex(include_str!("monitor/stock_fstat.hex").trim());
    let Packet::Fstat(f) = roundtrip(&b) else {
        panic!()
    };
    assert_eq!(
        (f.tod.xfr_records, f.tod.total_records, f.tod.sid),
        (0, 16, SID)
    );
    assert_eq!(f.records.len(), 16);
    assert_eq!(f.records[0], FileRecord::Disc { user: 1 });
    assert_eq!(
        f.records[1],
        FileRecord::Open {
            file: 3,
            size: 1_000_000,
            rw: false,
            lfn: Some((2, &b"/data/a.bin"[..]))
        }
    );
    // xrdcp's pgread: counted as reads, its sizes not measured
    let FileRecord::Close {
        file: 3,
        forced: false,
        xfr,
        ops: Some(ops),
        ssq: None,
    } = f.records[2]
    else {
        panic!()
    };
    assert_eq!(
        xfr,
        FileXfr {
            read: 1_000_000,
            readv: 0,
            write: 0
        }
    );
    assert_eq!((ops.read, ops.rd_min, ops.rd_max), (1, 0x7fff_ffff, 0));
    // the partial read and the vector read of the Python bindings
    let FileRecord::Close {
        file: 9,
        xfr,
        ops: Some(ops),
        ..
    } = f.records[11]
    else {
        panic!()
    };
    assert_eq!(
        xfr,
        FileXfr {
            read: 5000,
            readv: 3300,
            write: 0
        }
    );
    assert_eq!(
        ops,
        FileOps {
            read: 1,
            readv: 1,
            write: 0,
            rs_min: 3,
            rs_max: 3,
            rsegs: 3,
            rd_min: 5000,
            rd_max: 5000,
            rv_min: 3300,
            rv_max: 3300,
            wr_min: 0,
            wr_max: 0
        }
    );
    // the upload by pgwrite: opened read-write, its crc32c counted
    assert!(matches!(
        f.records[13],
        FileRecord::Open {
            file: 11,
            size: 0,
            rw: true,
            ..
        }
    ));
    let FileRecord::Close { xfr, .. } = f.records[14] else {
        panic!()
    };
    assert_eq!(xfr.write, 200_196);
}

#[test]
fn summary_document() {
    let text = include_str!("monitor/stock_summary.xml");
    let Packet::Summary(s) = roundtrip(text.as_bytes()) else {
        panic!()
    };
    assert_eq!(s.name, "statistics");
    assert_eq!(s.get_attr("ver"), Some("v5.5.3"));
    assert_eq!(s.section("link").unwrap().number(&["tot"]), Some(6));
    assert_eq!(
        s.section("xrootd").unwrap().number(&["ops", "open"]),
        Some(5)
    );
    assert_eq!(
        s.section("xrootd").unwrap().number(&["lgn", "num"]),
        Some(6)
    );
    assert!(s.section("sgen").is_some() && s.section("proc").is_some());
    for bad in [
        "<a>",
        "<a></b>",
        "<a x=1></a>",
        "<a>&bogus;</a>",
        "<a></a><b></b>",
    ] {
        assert!(Element::parse(bad).is_err(), "{bad}");
    }
    let deep = "<a>".repeat(100) + &"</a>".repeat(100);
    assert!(Element::parse(&deep).is_err());
}

#[test]
fn redirect_and_gstream_roundtrip() {
    let p = RedirPacket {
        header: xroot_proto::monitor::header::MonHeader {
            code: code::REDIRECT,
            pseq: 3,
            plen: 72,
            stod: 100,
        },
        sid: SID,
        entries: vec![
            RedirEntry::Time {
                window: 60,
                time: 1000,
            },
            RedirEntry::Redirect {
                op: 5,
                local: false,
                port: 1094,
                user: 7,
                host: b"ds1.example",
                path: b"/data/f.root",
            },
            RedirEntry::Time {
                window: 60,
                time: 1001,
            },
        ],
    };
    let mut out = Vec::new();
    p.encode(&mut out).unwrap();
    assert_eq!(out.len(), 8 + 8 + 8 + (8 + 32) + 8);
    assert_eq!(RedirPacket::decode(&out).unwrap(), p);

    let g = GStreamPacket {
        header: xroot_proto::monitor::header::MonHeader {
            code: code::GSTREAM,
            pseq: 1,
            plen: 0,
            stod: 100,
        },
        t_begin: 5,
        t_end: 6,
        provider: b'C',
        sid: SID,
        records: vec![
            &b"{\"event\":\"file_close\"}"[..],
            &b"{\"event\":\"file_close\",\"lfn\":\"/x\"}"[..],
        ],
    };
    let mut out = Vec::new();
    g.encode(&mut out).unwrap();
    assert_eq!(*out.last().unwrap(), 0);
    let back = GStreamPacket::decode(&out).unwrap();
    assert_eq!(
        (back.header.plen as usize, &back.records),
        (out.len(), &g.records)
    );
}

#[test]
fn bad_packets_are_errors() {
    let f = hex(include_str!("monitor/stock_fstat.hex").trim());
    for n in 0..f.len() {
        let mut cut = f[..n].to_vec();
        if n >= 4 {
            cut[2..4].copy_from_slice(&(n as u16).to_be_bytes());
        }
        let _ = Packet::decode(&cut); // no panic
    }
    let mut zero = f.clone();
    zero[8 + 24 + 2] = 0; // first record's size high byte
    zero[8 + 24 + 3] = 4;
    assert!(Packet::decode(&zero).is_err());
    let mut wrong_len = f.clone();
    wrong_len[3] ^= 1;
    assert!(Packet::decode(&wrong_len).is_err());
    assert!(Packet::decode(b"Zxxxxxxx").is_err());
}

/// The fuzz target's property (`fuzz/fuzz_targets/monitor_packet.rs`) on
/// mutations of the stock's packets: no panic, and what decodes is a fixed
/// point after one encode.
mod mutations {
    use super::*;
    use proptest::prelude::*;

    fn seeds() -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = [IDENT, USER, TRACE_DISC, PATH, TRACE_PY, TRACE_UPLOAD]
            .iter()
            .map(|h| hex(h))
            .collect();
        v.push(hex(include_str!("monitor/stock_fstat.hex").trim()));
        v.push(
            include_str!("monitor/stock_summary.xml")
                .as_bytes()
                .to_vec(),
        );
        v
    }

    proptest! {
        #[test]
        fn fixed_point(seed in 0usize..8, edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..8), fix_len in any::<bool>()) {
            let mut b = seeds()[seed].clone();
            for (at, byte) in edits {
                let i = usize::from(at) % b.len();
                b[i] = byte;
            }
            if fix_len && b[0] != b'<' {
                let n = b.len() as u16;
                b[2..4].copy_from_slice(&n.to_be_bytes());
            }
            if let Ok(p) = Packet::decode(&b) {
                let mut once = Vec::new();
                if p.encode(&mut once).is_ok() {
                    let again = Packet::decode(&once).unwrap();
                    let mut twice = Vec::new();
                    again.encode(&mut twice).unwrap();
                    prop_assert_eq!(once, twice);
                }
            }
        }
    }
}
