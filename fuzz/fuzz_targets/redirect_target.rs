#![no_main]
//! Where a redirect sends a request (`Redirect::target`): the host field in
//! every form the port field allows, read against the URL the request went
//! to. Input: one byte choosing that URL, then a `kXR_redirect` body (port,
//! host, `?opaque?token`). A first byte below 0x80 picks one of `FROM`; from
//! 0x80 on, its low 7 bits are the length of a URL to parse first (the
//! first of `FROM` when it does not parse).
//!
//! A target must be a URL that prints and parses back the same, at a port
//! the port field allows, that keeps the request's TLS and `xrdcl.*` CGI and
//! carries the redirect's CGI; an error must be Foreign only for a URL of
//! another scheme.
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use xroot_proto::response::{Redirect, RedirectError, RedirectMode};
use xroot_proto::url::{parse_cgi, Url};

const FROM: [&str; 3] = [
    "root://mgr.example:1094//store/f.root",
    "roots://alice@mgr.example//store/f.root?xrdcl.intent=a&x=1",
    "root://[::1]:2094//d/?xrdcl.intent=tpc&authz=t",
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (from, body) = if first < 0x80 {
        (FROM[first as usize % FROM.len()], rest)
    } else {
        let n = usize::from(first & 0x7f).min(rest.len());
        let (url, body) = rest.split_at(n);
        let url = std::str::from_utf8(url)
            .ok()
            .filter(|u| Url::parse(u).is_ok())
            .unwrap_or(FROM[0]);
        (url, body)
    };
    let from = Url::parse(from).expect("from parses");
    let Ok(r) = Redirect::decode(Bytes::copy_from_slice(body)) else {
        return;
    };
    let field = String::from_utf8_lossy(&r.host).into_owned();
    let u = match r.target(&from) {
        Ok(u) => u,
        Err(RedirectError::Foreign { url }) => {
            assert!(r.port < 0, "a URL only below port 0");
            assert_eq!(url, field);
            let scheme = url.split_once("://").expect("a scheme").0;
            assert!(!["root", "roots", "xroot", "xroots"]
                .contains(&scheme.to_ascii_lowercase().as_str()));
            return;
        }
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let printed = u.to_string();
    assert_eq!(Url::parse(&printed).as_ref(), Ok(&u), "{printed:?}");
    assert!(u.port != 0 && !u.host.is_empty());
    if let RedirectMode::HostPort(p) = r.mode() {
        assert_eq!(u32::from(u.port), p);
    }
    assert!(!from.is_tls() || u.is_tls());
    for (k, _) in from.cgi.iter().filter(|(k, _)| k.starts_with("xrdcl.")) {
        assert!(u.cgi_value(k).is_some(), "{k} lost");
    }
    // each key of the redirect's CGI with its last value
    let mut merged: Vec<(String, String)> = Vec::new();
    for part in [&r.opaque, &r.token].into_iter().flatten() {
        for (k, v) in parse_cgi(&String::from_utf8_lossy(part)) {
            merged.retain(|(key, _)| *key != k);
            merged.push((k, v));
        }
    }
    for (k, v) in &merged {
        assert_eq!(u.cgi_value(k), Some(v.as_str()), "{k}");
    }
});
