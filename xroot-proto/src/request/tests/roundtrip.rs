//! Round-trip properties: for every request type, an arbitrary value
//! encodes, passes the frame decoder, decodes to itself (through both
//! [`RequestBody::decode`] and [`Request::decode`]) and re-encodes to the
//! same bytes.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::*;

// ---- strategies, one per request type ---------------------------------------

fn mv() -> impl Strategy<Value = Mv> {
    prop_oneof![
        (bytes(32), bytes(32)).prop_map(|(o, n)| Mv::new(&o, &n)),
        (text_without(32, b' '), bytes(32)).prop_map(|(o, n)| {
            let mut p = o.to_vec();
            p.push(b' ');
            p.extend_from_slice(&n);
            Mv {
                arg1len: 0,
                payload: p.into(),
            }
        }),
    ]
}

fn fattr() -> impl Strategy<Value = Fattr> {
    let name = vec(1u8.., 1..=24).prop_map(Bytes::from);
    (
        fh(),
        prop_oneof![Just(FattrSubcode::SET), any::<u8>().prop_map(FattrSubcode)],
        any::<u8>(),
        text_without(32, 0),
        vec(name, 0..=16),
    )
        .prop_flat_map(|(fhandle, subcode, options, path, names)| {
            let n = if subcode == FattrSubcode::SET {
                names.len()
            } else {
                0
            };
            vec(bytes(40), n).prop_map(move |values| Fattr {
                fhandle,
                subcode,
                options: FattrOptions(options),
                path: path.clone(),
                names: names.clone(),
                values,
            })
        })
}

fn pgwrite() -> impl Strategy<Value = Pgwrite> {
    (
        fh(),
        0u64..1 << 40,
        any::<u8>(),
        any::<u8>(),
        vec(any::<u8>(), 0..10_000),
    )
        .prop_map(|(fhandle, offset, pathid, flags, data)| Pgwrite {
            pathid,
            reqflags: PgReqFlags(flags),
            ..Pgwrite::new(fhandle, offset, &data)
        })
}

fn writev() -> impl Strategy<Value = Writev> {
    let seg = (fh(), any::<i64>(), bytes(64)).prop_map(|(fhandle, offset, data)| WriteSegment {
        fhandle,
        offset,
        data,
    });
    (any::<u8>(), vec(seg, 0..8)).prop_map(|(o, segments)| Writev {
        options: WritevOptions(o),
        segments,
    })
}

fn read() -> impl Strategy<Value = Read> {
    let args = (any::<u8>(), vec(entry(any::<i32>()), 0..4))
        .prop_map(|(pathid, preread)| ReadArgs { pathid, preread });
    (fh(), any::<i64>(), any::<i32>(), option::of(args)).prop_map(
        |(fhandle, offset, rlen, args)| Read {
            fhandle,
            offset,
            rlen,
            args,
        },
    )
}

fn pgread() -> impl Strategy<Value = Pgread> {
    let args = (any::<u8>(), option::of(any::<u8>())).prop_map(|(pathid, f)| PgReadArgs {
        pathid,
        reqflags: f.map(PgReqFlags),
    });
    (fh(), any::<i64>(), any::<i32>(), option::of(args)).prop_map(
        |(fhandle, offset, rlen, args)| Pgread {
            fhandle,
            offset,
            rlen,
            args,
        },
    )
}

fn clone_ranges() -> impl Strategy<Value = CloneRanges> {
    let e = (fh(), any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(f, s, l, d)| CloneEntry {
        src_fh: f,
        src_offs: s,
        src_len: l,
        dst_offs: d,
    });
    (fh(), vec(e, 0..8)).prop_map(|(fhandle, list)| CloneRanges { fhandle, list })
}

macro_rules! roundtrip_tests {
    ($($name:ident: $strategy:expr;)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            $(
                #[test]
                fn $name(req in $strategy, sid in any::<[u8; 2]>()) {
                    check_roundtrip(req, StreamId(sid))?;
                }
            )*
        }
    };
}

roundtrip_tests! {
    rt_auth: (any::<[u8; 4]>(), bytes(64))
        .prop_map(|(credtype, credentials)| Auth { credtype, credentials });
    rt_query: (any::<u16>(), fh(), bytes(64))
        .prop_map(|(q, fhandle, args)| Query { infotype: QueryCode(q), fhandle, args });
    rt_chmod: (any::<u16>(), bytes(64)).prop_map(|(m, path)| Chmod { mode: Mode(m), path });
    rt_close: fh().prop_map(|fhandle| Close { fhandle });
    rt_dirlist: (any::<u8>(), bytes(64))
        .prop_map(|(o, path)| Dirlist { options: DirlistOptions(o), path });
    rt_gpfile: (any::<i32>(), any::<i32>(), bytes(16))
        .prop_map(|(options, buffsz, payload)| Gpfile { options, buffsz, payload });
    rt_protocol: (any::<u32>(), any::<u8>(), any::<u8>()).prop_map(|(clientpv, f, e)| Protocol {
        clientpv,
        flags: ProtocolFlags(f),
        expect: Expect(e),
    });
    rt_login: (any::<i32>(), any::<[u8; 8]>(), any::<[u8; 3]>(), bytes(64))
        .prop_map(|(pid, username, [a2, a, c], cgi)| Login {
            pid,
            username,
            ability2: LoginAbility2(a2),
            ability: LoginAbility(a),
            capver: Capver(c),
            cgi,
        });
    rt_mkdir: (any::<u8>(), any::<u16>(), bytes(64)).prop_map(|(o, m, path)| Mkdir {
        options: MkdirOptions(o),
        mode: Mode(m),
        path,
    });
    rt_mv: mv();
    rt_open: (any::<[u16; 3]>(), fh(), bytes(64)).prop_map(|([m, o, t], fhtemplt, path)| Open {
        mode: Mode(m),
        options: OpenOptions(o),
        optiont: OpenOptionT(t),
        fhtemplt,
        path,
    });
    rt_ping: Just(Ping {});
    rt_chkpoint: (fh(), any::<u8>(), bytes(64))
        .prop_map(|(fhandle, op, payload)| Chkpoint { fhandle, opcode: ChkpointOp(op), payload });
    rt_read: read();
    rt_rm: bytes(64).prop_map(|path| Rm { path });
    rt_rmdir: bytes(64).prop_map(|path| Rmdir { path });
    rt_sync: fh().prop_map(|fhandle| Sync { fhandle });
    rt_stat: (any::<u8>(), any::<u32>(), fh(), bytes(64)).prop_map(|(o, w, fhandle, path)| Stat {
        options: StatOptions(o),
        wants: StatWants(w),
        fhandle,
        path,
    });
    rt_set: (any::<u8>(), bytes(64)).prop_map(|(modifier, data)| Set { modifier, data });
    rt_write: (fh(), any::<i64>(), any::<u8>(), bytes(512))
        .prop_map(|(fhandle, offset, pathid, data)| Write { fhandle, offset, pathid, data });
    rt_fattr: fattr();
    rt_prepare: (any::<[u8; 3]>(), any::<u16>(), any::<u16>(), bytes(64))
        .prop_map(|([o, prty, _], port, x, paths)| Prepare {
            options: PrepareOptions(o),
            prty,
            port,
            optionx: PrepareOptionsX(x),
            paths,
        });
    rt_statx: bytes(64).prop_map(|paths| Statx { paths });
    rt_endsess: any::<[u8; 16]>().prop_map(|sessid| Endsess { sessid });
    rt_bind: any::<[u8; 16]>().prop_map(|sessid| Bind { sessid });
    rt_readv: (any::<u8>(), any::<u8>(), vec(entry(0..=MAX_READV_ELEMENT as i32), 0..16))
        .prop_map(|(f, pathid, list)| Readv { flags: ReadvFlags(f), pathid, list });
    rt_pgwrite: pgwrite();
    rt_locate: (any::<u16>(), bytes(64))
        .prop_map(|(o, path)| Locate { options: LocateOptions(o), path });
    rt_truncate: (fh(), any::<i64>(), bytes(64))
        .prop_map(|(fhandle, offset, path)| Truncate { fhandle, offset, path });
    rt_sigver: (any::<u16>(), any::<[u8; 3]>(), any::<u64>(), bytes(64))
        .prop_map(|(rid, [version, f, c], seqno, signature)| Sigver {
            expectrid: RequestId(rid),
            version,
            flags: SigverFlags(f),
            seqno,
            crypto: SigverCrypto(c),
            signature,
        });
    rt_pgread: pgread();
    rt_writev: writev();
    rt_clone: clone_ranges();
    rt_pgreadv: (any::<u8>(), any::<u8>(), vec(entry(0..=i32::MAX), 0..16))
        .prop_map(|(f, pathid, list)| PgReadv { reqflags: PgReqFlags(f), pathid, list });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any frame with an id this crate does not know comes back byte for byte.
    #[test]
    fn unknown_ids_reencode_identically(
        id in prop_oneof![0u16..3000, 3034u16..],
        params in any::<[u8; 16]>(),
        payload in vec(any::<u8>(), 0..64),
    ) {
        let f = frame(RequestId(id), params, &payload);
        let mut wire = BytesMut::new();
        f.header.encode(&mut wire);
        wire.put_slice(&payload);
        let req = Request::decode(f.clone())?;
        prop_assert_eq!(&req, &Request::Unknown(f));
        prop_assert_eq!(req.id(), RequestId(id));
        let mut again = BytesMut::new();
        req.encode(StreamId([0, 1]), &mut again);
        prop_assert_eq!(&again[..], &wire[..]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Hostile frames of every known id never panic, and whatever decodes is
    /// a normal form: it re-encodes to a frame that decodes to the same value.
    #[test]
    fn any_frame_decodes_to_a_stable_value_or_an_error(
        id in 3000u16..=3033,
        params in any::<[u8; 16]>(),
        payload in prop_oneof![
            vec(any::<u8>(), 0..200),
            (0usize..8).prop_flat_map(|n| vec(any::<u8>(), n * 16)),
        ],
        data in vec(any::<u8>(), 0..64),
    ) {
        let requestid = RequestId(id);
        let frame = RequestFrame {
            header: RequestHeader { streamid: StreamId([0, 1]), requestid, params, dlen: payload.len() as i32 },
            payload: payload.into(),
            data: if requestid == RequestId::WRITEV { data.into() } else { Bytes::new() },
        };
        if let Ok(req) = Request::decode(frame) {
            prop_assert_eq!(req.id(), requestid);
            let mut buf = BytesMut::new();
            req.encode(StreamId([0, 1]), &mut buf);
            prop_assert_eq!(Request::decode(decode_frame(&mut buf))?, req);
        }
    }
}
