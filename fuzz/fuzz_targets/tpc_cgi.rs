#![no_main]
//! The `tpc.*` CGI of an open: any text through the parser. What parses as
//! a claim must print its origin back the same.
use libfuzzer_sys::fuzz_target;
use xroot_proto::tpc::{parse, Origin, TpcOpen};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(Some(TpcOpen::Claim { org, .. })) = parse(s) {
        let printed = org.to_string();
        assert_eq!(printed.parse::<Origin>(), Ok(org), "{s:?}");
    }
});
