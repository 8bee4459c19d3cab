#![no_main]
//! Monitoring datagrams (`xroot_proto::monitor`): any bytes through
//! `Packet::decode`; what decodes must encode, and what it encodes to must
//! decode and encode to the same bytes again (a fixed point after one
//! round). The bytes are also read as a cache's g-stream record
//! (`CacheFileClose::decode`), whose encoding must read back the same.
use libfuzzer_sys::fuzz_target;
use xroot_proto::monitor::gstream::CacheFileClose;
use xroot_proto::monitor::Packet;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = CacheFileClose::decode(data) {
        let again = CacheFileClose::decode(r.encode().as_bytes()).expect("our own record reads");
        assert_eq!(again, r);
    }
    let Ok(p) = Packet::decode(data) else { return };
    let mut once = Vec::new();
    if p.encode(&mut once).is_err() {
        return;
    }
    let again = Packet::decode(&once).expect("our own packet decodes");
    let mut twice = Vec::new();
    again.encode(&mut twice).expect("our own packet encodes");
    assert_eq!(once, twice);
});
