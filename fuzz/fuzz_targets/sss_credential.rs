#![no_main]
//! An sss `kXR_auth` credential, as the server opens it
//! (`xroot_sec::sss::open`). The first byte picks the shape:
//! - even: the remaining bytes are the whole credential (header, key name,
//!   ciphertext) — hostile lengths, truncation, another cipher;
//! - odd: the second byte is the key-name size, the rest is the plaintext
//!   after the data header (the items); the target prepends the header,
//!   appends the CRC and encrypts with the keytab's key, so the fuzzer
//!   reaches the item parser and the host/identity checks.
//!
//! Opening must never panic; an accepted credential names a user.
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use blowfish::Blowfish;
use cfb_mode::cipher::InnerIvInit;
use libfuzzer_sys::fuzz_target;
use xroot_sec::sss::{open, Key, Keytab};

const KEY: [u8; 16] = [0x8e, 0xe2, 0x4a, 0xea, 0x3e, 0xeb, 0xb6, 0x97, 1, 2, 3, 4, 5, 6, 7, 8];
const ID: i64 = 7714337257385099265;
/// Seconds between the Unix epoch and the sss clock's zero.
const BASE_TIME: u64 = 1_222_183_880;

fn keytab() -> Keytab {
    Keytab::from_keys(vec![
        Key::new(ID, "k", "anybody", "anygroup", &KEY),
        Key::new(ID + 1, "nohost+", "alice", "usrgroup", &KEY),
    ])
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let keytab = keytab();
    let cred = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let Some((&kn, items)) = rest.split_first() else {
            return;
        };
        let id = if mode & 2 == 0 { ID } else { ID + 1 };
        let mut out = b"sss\0\0\0".to_vec();
        out.push(kn);
        out.push(b'0');
        out.extend_from_slice(&id.to_be_bytes());
        out.extend(std::iter::repeat_n(0u8, usize::from(kn).min(255)));
        if kn > 0 {
            out[16] = b'k';
        }
        let start = out.len();
        out.extend_from_slice(&[0x5a; 32]);
        let gen = (1_800_000_000 - BASE_TIME - u64::from(mode >> 2)) as i32;
        out.extend_from_slice(&gen.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, mode >> 7]);
        out.extend_from_slice(items);
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
        let mut bf = Blowfish::bc_init_state();
        bf.bc_expand_key(&KEY);
        cfb_mode::Encryptor::<Blowfish>::inner_iv_init(bf, &Default::default())
            .encrypt(&mut out[start..]);
        out
    };
    if let Ok(opened) = open(&keytab, &cred, peer, 13, now) {
        assert!(!opened.user.is_empty(), "an accepted credential names a user");
    }
});
