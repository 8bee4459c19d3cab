#![no_main]
//! Redirect bodies (every port form, `?opaque?token`) and `root://` URL
//! parsing: any bytes through both. What parses must survive encode/print
//! and parse back the same.
use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use xroot_proto::response::Redirect;
use xroot_proto::url::Url;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Redirect::decode(Bytes::copy_from_slice(data)) {
        let mut out = BytesMut::new();
        r.encode(&mut out);
        assert_eq!(Redirect::decode(out.freeze()).expect("re-decode"), r);
        if let Ok(host) = std::str::from_utf8(&r.host) {
            check_url(host);
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        check_url(s);
    }
});

fn check_url(s: &str) {
    if let Ok(u) = Url::parse(s) {
        let printed = u.to_string();
        assert_eq!(Url::parse(&printed).expect("re-parse"), u, "{s:?} -> {printed:?}");
    }
}
