//! Hand-written frames of the session, namespace and file-management
//! requests (PROTOCOL.md §5–7): exact bytes, limits and zero copy.

use bytes::{Bytes, BytesMut};

use super::*;
use crate::error::DecodeError;

#[test]
fn open_exact_bytes() {
    #[rustfmt::skip]
    let wire: &[u8] = &[
        0, 1,                   // streamid
        0x0b, 0xc2,             // 3010 kXR_open
        0x01, 0xa4,             // mode 0644
        0x04, 0x50,             // options read|async|retstat
        0, 0,                   // optiont
        0, 0, 0, 0, 0, 0,       // reserved
        0, 0, 0, 0,             // fhtemplt
        0, 0, 0, 10,            // dlen
        b'/', b't', b'm', b'p', b'/', b'x', b'?', b'a', b'=', b'1',
    ];
    let f = decode_frame(&mut BytesMut::from(wire));
    let open = Open::decode(&f).unwrap();
    assert_eq!(open.mode, Mode::from_posix(0o644));
    assert_eq!(
        open.options,
        OpenOptions::READ | OpenOptions::ASYNC | OpenOptions::RETSTAT
    );
    assert_eq!(open.path_str().unwrap(), "/tmp/x?a=1");
    assert!(is_within(&open.path, &f.payload));
    assert_eq!(encoded(&open), wire);
    assert_eq!(
        format!("{:?}", open.options),
        "OpenOptions(kXR_open_read | kXR_async | kXR_retstat)"
    );
}

#[test]
fn protocol_and_login_as_xrdcl_sends_them() {
    let proto = Protocol {
        clientpv: 0x511,
        flags: ProtocolFlags::SECREQS | ProtocolFlags::BIFREQS,
        expect: Expect::LOGIN,
    };
    #[rustfmt::skip]
    let want: &[u8] = &[0, 1, 0x0b, 0xbe, 0, 0, 5, 0x11, 9, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(encoded(&proto), want);

    let p = params(&[
        (4, &4242i32.to_be_bytes()),
        (8, b"_anon_\0\0"),
        (17, &[0xc5]),
        (18, &[0x85]),
    ]);
    let login = Login::decode(&frame(RequestId::LOGIN, p, b"&xrd.appname=x")).unwrap();
    assert_eq!(login.pid, 4242);
    assert_eq!(login.username(), b"_anon_");
    assert!(login
        .ability
        .contains(LoginAbility::FULLURL | LoginAbility::REDIRFLAGS));
    assert_eq!(login.capver.version(), 5);
    assert!(login.capver.contains(Capver::ASYNCAP));
    assert_eq!(login.capver, Capver::new(5, true));
    assert_eq!(login.cgi_str().unwrap(), "&xrd.appname=x");
    // a full 8-byte name has no terminator
    assert_eq!(Login::pack_username("verylongname"), *b"verylong");
    let full = Login {
        username: Login::pack_username("verylongname"),
        ..Login::default()
    };
    assert_eq!(full.username(), b"verylong");
}

#[test]
fn auth_bind_sigver() {
    let auth = Auth::decode(&frame(
        RequestId::AUTH,
        params(&[(16, b"unix")]),
        b"unix\0alice users\0",
    ))
    .unwrap();
    assert_eq!(auth.credtype_name(), b"unix");
    assert_eq!(&auth.credentials[..], b"unix\0alice users\0");

    let bind = Bind::decode(&frame(RequestId::BIND, params(&[(4, &[9; 16])]), &[])).unwrap();
    assert_eq!(bind.sessid, [9; 16]);

    let p = params(&[
        (4, &3010u16.to_be_bytes()),
        (7, &[1]),
        (8, &7u64.to_be_bytes()),
        (16, &[0x81]),
    ]);
    let sig = Sigver::decode(&frame(RequestId::SIGVER, p, &[0xab; 32])).unwrap();
    assert_eq!(sig.expectrid, RequestId::OPEN);
    assert!(sig.flags.contains(SigverFlags::NODATA));
    assert_eq!((sig.seqno, sig.crypto.hash()), (7, 1));
    assert!(sig.crypto.contains(SigverCrypto::RSA_KEY));
    let err = Sigver::decode(&frame(RequestId::SIGVER, p, &[0; 65])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::LengthTooLarge {
            value: 65,
            max: 64,
            ..
        }
    ));
}

#[test]
fn wrong_kind() {
    let f = frame(RequestId::CLOSE, [0; 16], &[]);
    assert!(matches!(
        Open::decode(&f),
        Err(DecodeError::WrongKind { .. })
    ));
    assert!(matches!(Close::decode(&f), Ok(Close { .. })));
    assert!(matches!(Request::decode(f), Ok(Request::Close(_))));
}

#[test]
fn stat_by_handle_and_vfs() {
    let f = frame(RequestId::STAT, params(&[(16, &[1, 2, 3, 4])]), &[]);
    let st = Stat::decode(&f).unwrap();
    assert!(st.path.is_empty());
    assert_eq!(st.fhandle, FHandle([1, 2, 3, 4]));
    let st = Stat::decode(&frame(RequestId::STAT, params(&[(4, &[1])]), b"/data")).unwrap();
    assert!(st.options.contains(StatOptions::VFS));
}

#[test]
fn mv_paths() {
    let f = frame(RequestId::MV, [0; 16], b"/old  /new");
    let mv = Mv::decode(&f).unwrap();
    let (old, new) = mv.paths().unwrap();
    assert_eq!((&old[..], &new[..]), (&b"/old"[..], &b"/new"[..]));
    assert!(is_within(&old, &f.payload) && is_within(&new, &f.payload));

    let p = params(&[(18, &6i16.to_be_bytes())]);
    let mv = Mv::decode(&frame(RequestId::MV, p, b"/a b/c /d")).unwrap();
    let (old, new) = mv.paths().unwrap();
    assert_eq!((&old[..], &new[..]), (&b"/a b/c"[..], &b"/d"[..]));
    assert_eq!(Mv::new(b"/a b/c", b"/d"), mv);

    let p = params(&[(18, &1i16.to_be_bytes())]);
    let err = Mv::decode(&frame(RequestId::MV, p, b"/a b/c /d")).unwrap_err();
    assert!(matches!(err, DecodeError::InvalidValue { got: 1, .. }));
    let p = params(&[(18, &(-1i16).to_be_bytes())]);
    let err = Mv::decode(&frame(RequestId::MV, p, b"/a /b")).unwrap_err();
    assert!(matches!(err, DecodeError::NegativeLength { .. }));
    let err = Mv::decode(&frame(RequestId::MV, [0; 16], b"/nospace")).unwrap_err();
    assert!(matches!(err, DecodeError::Malformed { .. }));
}

fn fattr_frame(subcode: u8, numattr: u8, payload: &[u8]) -> RequestFrame {
    frame(
        RequestId::FATTR,
        params(&[(8, &[subcode, numattr])]),
        payload,
    )
}

#[test]
fn fattr_set_by_path() {
    let payload = b"/f\0\0\0a\0\0\0bb\0\0\0\0\x01x\0\0\0\0";
    let f = fattr_frame(3, 2, payload);
    let fa = Fattr::decode(&f).unwrap();
    assert_eq!(fa.subcode, FattrSubcode::SET);
    assert_eq!(&fa.path[..], b"/f");
    assert_eq!(fa.names, [&b"a"[..], &b"bb"[..]]);
    assert_eq!(fa.values, [&b"x"[..], &b""[..]]);
    assert!(fa.names.iter().all(|n| is_within(n, &f.payload)));
    assert!(is_within(&fa.values[0], &f.payload));
    assert_eq!(encoded(&fa)[24..], payload[..]);
    assert_eq!(encoded(&fa)[9], 2); // numattr, header byte 9
}

#[test]
fn fattr_by_handle_and_limits() {
    let list = Fattr::decode(&fattr_frame(2, 0, &[])).unwrap();
    assert!(list.path.is_empty() && list.names.is_empty());
    let get = Fattr::decode(&fattr_frame(1, 1, b"\0\0\0name\0")).unwrap();
    assert!(get.path.is_empty() && get.values.is_empty());
    assert_eq!(get.names, [&b"name"[..]]);

    let err = |sub, n, p: &[u8]| Fattr::decode(&fattr_frame(sub, n, p)).unwrap_err();
    assert!(matches!(
        err(1, 17, b"\0"),
        DecodeError::TooManyElements {
            count: 17,
            max: 16,
            ..
        }
    ));
    let mut long = b"\0\0\0".to_vec();
    long.extend([b'n'; 249]);
    long.push(0);
    assert!(matches!(
        err(1, 1, &long),
        DecodeError::LengthTooLarge {
            value: 249,
            max: 248,
            ..
        }
    ));
    let big = [&b"\0\0\0a\0"[..], &65537i32.to_be_bytes()].concat();
    assert!(matches!(
        err(3, 1, &big),
        DecodeError::LengthTooLarge { value: 65537, .. }
    ));
    let neg = [&b"\0\0\0a\0"[..], &(-1i32).to_be_bytes()].concat();
    assert!(matches!(
        err(3, 1, &neg),
        DecodeError::NegativeLength { .. }
    ));
    assert!(matches!(
        err(3, 1, b"\0\0\0a\0\0\0\0\x05ab"),
        DecodeError::Truncated { .. }
    ));
    assert!(matches!(
        err(0, 1, b"\0\0\0a\0junk"),
        DecodeError::TrailingBytes { extra: 4, .. }
    ));
    assert!(matches!(
        err(0, 1, b"\0\0\0a"),
        DecodeError::Malformed { .. }
    ));
    assert!(matches!(
        err(0, 1, b"\0\0\0\0"),
        DecodeError::Malformed { .. }
    ));
    assert!(matches!(
        err(0, 1, b"\0\x01\0a\0"),
        DecodeError::InvalidValue { .. }
    ));
    assert!(matches!(
        err(0, 1, b"/no-nul"),
        DecodeError::Malformed { .. }
    ));
}

#[test]
fn chkpoint_embeds_a_whole_request() {
    let inner = Write {
        fhandle: FHandle([0, 0, 0, 9]),
        offset: 4096,
        pathid: 0,
        data: Bytes::from_static(b"payload"),
    };
    let mut b = BytesMut::new();
    Request::from(inner.clone()).encode(StreamId([0, 2]), &mut b);
    let outer = Chkpoint {
        fhandle: inner.fhandle,
        opcode: ChkpointOp::XEQ,
        payload: b.freeze(),
    };
    let f = decode_frame(&mut BytesMut::from(&encoded(&outer)[..]));
    let back = Chkpoint::decode(&f).unwrap();
    match back.embedded().unwrap() {
        Request::Write(w) => {
            assert_eq!(w, inner);
            assert!(is_within(&w.data, &f.payload));
        }
        other => panic!("expected a write, got {other:?}"),
    }
    let cut = Chkpoint {
        payload: back.payload.slice(..back.payload.len() - 1),
        ..back.clone()
    };
    assert!(matches!(cut.embedded(), Err(DecodeError::Truncated { .. })));
    let extra = Chkpoint {
        payload: [&back.payload[..], b"x"].concat().into(),
        ..back
    };
    assert!(matches!(
        extra.embedded(),
        Err(DecodeError::TrailingBytes { extra: 1, .. })
    ));
}

#[test]
fn clone_list_limits() {
    let one = CloneRanges {
        fhandle: FHandle([0, 0, 0, 1]),
        list: vec![CloneEntry {
            src_fh: FHandle([0, 0, 0, 2]),
            src_offs: 1,
            src_len: 2,
            dst_offs: 3,
        }],
    };
    let wire = encoded(&one);
    assert_eq!(wire.len(), 24 + 32);
    assert_eq!(wire[24..32], [0, 0, 0, 2, 0, 0, 0, 0]);
    let err = CloneRanges::decode(&frame(RequestId::CLONE, [0; 16], &[0; 33])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::Misaligned {
            len: 33,
            unit: 32,
            ..
        }
    ));
    let err = CloneRanges::decode(&frame(RequestId::CLONE, [0; 16], &[0; 32 * 1025])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::TooManyElements { count: 1025, .. }
    ));
}

#[test]
fn path_lists_and_text() {
    let f = frame(RequestId::STATX, [0; 16], b"/a\n/b");
    let sx = Statx::decode(&f).unwrap();
    let paths: Vec<Bytes> = sx.path_list().collect();
    assert_eq!(paths, ["/a", "/b"]);
    assert!(paths.iter().all(|p| is_within(p, &f.payload)));
    let rm = Rm::decode(&frame(RequestId::RM, [0; 16], &[0xff, 0xfe])).unwrap();
    assert!(matches!(rm.path_str(), Err(DecodeError::Malformed { .. })));
    let q = Query::decode(&frame(
        RequestId::QUERY,
        params(&[(4, &[0, 7])]),
        b"xroot.pgreadv",
    ))
    .unwrap();
    assert_eq!(q.infotype, QueryCode::CONFIG);
    assert_eq!(format!("{:?}", q.infotype), "kXR_Qconfig(7)");
    assert_eq!(format!("{:?}", QueryCode(99)), "QueryCode(99)");
}

#[test]
fn ignored_payloads_are_ignored() {
    let ping = Ping::decode(&frame(RequestId::PING, [0; 16], b"junk")).unwrap();
    assert_eq!(encoded(&ping)[20..], [0, 0, 0, 0]);
}
