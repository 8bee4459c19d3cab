#![no_main]
//! A `gsi` message as both sides read it (`xroot_sec::gsi`): the
//! XrdSutBuffer codec (`SutBuffer::decode`), the main buffer nested in it,
//! the login offer's parameters, the Diffie-Hellman public part and its
//! PEM parameters, and PEM blocks (certificates, keys).
//!
//! Decoding must never panic nor take more memory than its input; a
//! decoded buffer writes back to bytes that decode to the same buffer.
use libfuzzer_sys::fuzz_target;
use xroot_sec::gsi::bucket::kind;
use xroot_sec::gsi::{crypto, x509, ServerOffer, SutBuffer};

fuzz_target!(|data: &[u8]| {
    if let Ok(buf) = SutBuffer::decode(data) {
        let again = SutBuffer::decode(&buf.encode()).expect("our encoding decodes");
        assert_eq!(again, buf);
        if let Some(main) = buf.get(kind::MAIN) {
            let _ = SutBuffer::decode(main);
        }
        for k in [kind::VERSION, kind::CLNT_OPTS] {
            let _ = buf.get_i32(k);
        }
        if let Some(blob) = buf.get(kind::CIPHER) {
            if let Ok((Some(pem), _)) = crypto::parse_public_blob(blob) {
                let _ = crypto::DhParams::from_pem(pem);
            }
        }
    }
    let _ = ServerOffer::parse(data);
    if let Ok((Some(pem), _)) = crypto::parse_public_blob(data) {
        let _ = crypto::DhParams::from_pem(pem);
    }
    let _ = x509::pem_blocks(data);
});
