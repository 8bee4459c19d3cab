#![no_main]
//! The sss texts a peer or a file hands us: the `sss` parameters of a
//! server's login reply (`Params::parse`, read by the client) and a keytab
//! (`Keytab::parse`). Neither may panic; parameters that parse encode
//! back to text that parses to the same value.
use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use xroot_sec::sss::{Keytab, Params};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Params::parse(data) {
        let again = Params::parse(p.encode().as_bytes()).expect("our encoding parses");
        assert_eq!(again, p);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        if let Ok(kt) = Keytab::parse(text, now) {
            for key in kt.keys() {
                assert!(!key.value().is_empty());
            }
        }
    }
});
