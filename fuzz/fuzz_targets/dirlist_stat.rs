#![no_main]
//! Dirlist bodies (plain, dstat, dcksm) and stat text (4- and 9-field forms,
//! vfs): any bytes through the parsers. What parses must survive the
//! server-side encoder and parse back the same.
use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use xroot_proto::response::{DirList, Response, StatInfo, StatVfs};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let body = Bytes::copy_from_slice(rest);
    match which % 3 {
        0 => {
            if let Ok(list) = DirList::decode(body) {
                let chunks: Vec<Bytes> = list
                    .responses()
                    .into_iter()
                    .map(|r| match r {
                        Response::Ok(b) | Response::OkSoFar(b) => b,
                        other => panic!("dirlist encoder wrote {other:?}"),
                    })
                    .collect();
                assert_eq!(DirList::decode_chunks(&chunks).expect("re-parse"), list);
            }
        }
        1 => {
            if let Ok(stat) = StatInfo::decode(body) {
                let mut out = BytesMut::new();
                stat.encode(&mut out);
                assert_eq!(StatInfo::decode(out.freeze()).expect("re-parse"), stat);
            }
        }
        _ => {
            if let Ok(vfs) = StatVfs::decode(body) {
                let mut out = BytesMut::new();
                vfs.encode(&mut out);
                assert_eq!(StatVfs::decode(out.freeze()).expect("re-parse"), vfs);
            }
        }
    }
});
