//! The cryptography of the `gsi` handshake (`SECURITY.md "gsi"`): the
//! random challenges, RSA "private encryption" (PKCS #1 v1.5 type 1
//! padding over raw data, in blocks, as OpenSSL's `EVP_PKEY_sign` without
//! a digest does) and its inverse, the Diffie-Hellman agreement in the
//! stock text form (`-----BEGIN DH PARAMETERS-----` … `---BPUB---<hex>
//! ---EPUB---`), and the session cipher (AES-128-CBC with its IV in front).

use aes::Aes128;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use rsa::traits::PublicKeyParts;
use rsa::{Pkcs1v15Sign, PrivateKey, PublicKey};

use super::error::GsiError;

/// 8 random characters in `[a-zA-Z0-9./]` (`XrdSutRndm::GetRndmTag`).
pub fn random_tag() -> Vec<u8> {
    crypt_chars(8)
}

/// `n` random characters in `[a-zA-Z0-9./]`.
fn crypt_chars(n: usize) -> Vec<u8> {
    const SET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut raw = vec![0u8; n];
    getrandom::fill(&mut raw).expect("the system's random source");
    raw.iter().map(|b| SET[(b & 63) as usize]).collect()
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut raw = vec![0u8; n];
    getrandom::fill(&mut raw).expect("the system's random source");
    raw
}

/// Signs `data` with `key` in blocks of `k - 11` bytes, each block padded
/// with PKCS #1 v1.5 type 1 and no digest prefix: the stock
/// `XrdCryptosslRSA::EncryptPrivate`.
pub fn private_encrypt(key: &PrivateKey, data: &[u8]) -> Result<Vec<u8>, GsiError> {
    let k = key.size();
    if k < 12 {
        return Err(GsiError::Crypto("RSA key too small".into()));
    }
    let mut out = Vec::with_capacity(data.len().div_ceil(k - 11).max(1) * k);
    for chunk in data.chunks(k - 11) {
        let block = key
            .sign(Pkcs1v15Sign::new_unprefixed(), chunk)
            .map_err(|e| GsiError::Crypto(format!("RSA signing: {e}")))?;
        out.extend_from_slice(&block);
    }
    Ok(out)
}

/// Reverses [`private_encrypt`] with the signer's public key: each block of
/// `k` bytes raised to `e`, its type 1 padding checked and removed
/// (`DecryptPublic`). Errors: [`GsiError::BadSignature`] for anything that
/// is not such blocks.
pub fn public_decrypt(key: &PublicKey, data: &[u8]) -> Result<Vec<u8>, GsiError> {
    let k = key.size();
    if data.is_empty() || !data.len().is_multiple_of(k) {
        return Err(GsiError::BadSignature);
    }
    let mut out = Vec::new();
    let precision = key.n().bits_precision();
    for block in data.chunks(k) {
        let c = BoxedUint::from_be_slice(block, precision).map_err(|_| GsiError::BadSignature)?;
        if c >= *key.n().as_ref() {
            return Err(GsiError::BadSignature);
        }
        let m = rsa::hazmat::rsa_encrypt(key, &c).map_err(|_| GsiError::BadSignature)?;
        let em = m.to_be_bytes();
        let em = &em[em.len() - k..];
        // 00 01 FF..FF 00 data, at least 8 bytes of FF
        if em[0] != 0 || em[1] != 1 {
            return Err(GsiError::BadSignature);
        }
        let zero = em[2..]
            .iter()
            .position(|&b| b != 0xff)
            .ok_or(GsiError::BadSignature)?
            + 2;
        if em[zero] != 0 || zero < 10 {
            return Err(GsiError::BadSignature);
        }
        out.extend_from_slice(&em[zero + 1..]);
    }
    Ok(out)
}

/// A public key as OpenSSL's `PEM_write_bio_PUBKEY` writes it, from the
/// DER of its SubjectPublicKeyInfo.
pub fn public_key_pem(spki_der: &[u8]) -> String {
    pem_rfc7468::encode_string("PUBLIC KEY", pem_rfc7468::LineEnding::LF, spki_der)
        .expect("PEM of a bounded key")
}

/// Reads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) holding an RSA key.
pub fn parse_public_key_pem(pem: &[u8]) -> Result<PublicKey, GsiError> {
    use rsa::pkcs8::DecodePublicKey;
    let pem = trim_nul(pem);
    let text =
        std::str::from_utf8(pem).map_err(|_| GsiError::BadKey("public key is not text".into()))?;
    PublicKey::from_public_key_pem(text.trim_start())
        .map_err(|e| GsiError::BadKey(format!("public key: {e}")))
}

fn trim_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &b[..end]
}

/// Smallest and largest Diffie-Hellman prime accepted from a peer, bits:
/// the stock generates 512-bit primes; beyond 8192 bits the work is a
/// peer's lever on us.
const DH_MIN_BITS: u32 = 512;
const DH_MAX_BITS: u32 = 8192;

/// The RFC 7919 `ffdhe2048` prime (a safe prime, generator 2), the group
/// our side offers: OpenSSL recognizes it by value, so the stock peer's
/// parameter check does not test its primality again.
const FFDHE2048_P: &str = "FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1\
D8B9C583CE2D3695A9E13641146433FBCC939DCE249B3EF9\
7D2FE363630C75D8F681B202AEC4617AD3DF1ED5D5FD6561\
2433F51F5F066ED0856365553DED1AF3B557135E7F57C935\
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE735\
30ACCA4F483A797ABC0AB182B324FB61D108A94BB2C8E3FB\
B96ADAB760D7F4681D4F42A3DE394DF4AE56EDE76372BB19\
0B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61\
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD73\
3BB5FCBC2EC22005C58EF1837D1683B2C6F34A26C1B2EFFA\
886B423861285C97FFFFFFFFFFFFFFFF";

/// Diffie-Hellman parameters: the prime and the generator.
#[derive(Clone)]
pub struct DhParams {
    p: BoxedUint,
    g: BoxedUint,
    monty: BoxedMontyParams,
    /// Bytes of the prime (the padded secret's length).
    p_len: usize,
    /// The parameters as PEM text, as sent.
    pem: String,
}

impl std::fmt::Debug for DhParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DhParams({} bits)", self.p.bit_width())
    }
}

fn der_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = (len as u32).to_be_bytes();
        let skip = bytes.iter().position(|&b| b != 0).unwrap_or(3);
        out.push(0x80 | (4 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn der_uint(out: &mut Vec<u8>, be: &[u8]) {
    let be = &be[be
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(be.len().saturating_sub(1))..];
    let pad = be.first().is_some_and(|&b| b & 0x80 != 0);
    out.push(0x02);
    der_len(out, be.len() + pad as usize);
    if pad {
        out.push(0);
    }
    out.extend_from_slice(be);
}

/// One DER element at the start of `der`: its tag, its content and the rest.
pub(crate) fn der_next(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

impl DhParams {
    /// The group our side offers: RFC 7919's `ffdhe2048` (a safe prime,
    /// generator 2), which OpenSSL recognizes by value, so the stock
    /// peer's parameter check does not test its primality again.
    pub fn ffdhe2048() -> DhParams {
        let p: Vec<u8> = (0..FFDHE2048_P.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&FFDHE2048_P[i..i + 2], 16).unwrap())
            .collect();
        DhParams::new(&p, &[2]).expect("ffdhe2048")
    }

    fn new(p: &[u8], g: &[u8]) -> Result<DhParams, GsiError> {
        let bad = |why: &str| GsiError::Crypto(format!("Diffie-Hellman parameters: {why}"));
        let p = &p[p.iter().position(|&b| b != 0).unwrap_or(p.len())..];
        let bits = (p.len() as u32) * 8;
        if !(DH_MIN_BITS..=DH_MAX_BITS + 8).contains(&bits) {
            return Err(bad("prime size out of range"));
        }
        let precision = bits.div_ceil(64) * 64;
        let p_int = BoxedUint::from_be_slice(p, precision).map_err(|_| bad("prime"))?;
        let g_int = BoxedUint::from_be_slice(g, precision).map_err(|_| bad("generator"))?;
        let odd = Option::<Odd<BoxedUint>>::from(Odd::new(p_int.clone()))
            .ok_or_else(|| bad("even prime"))?;
        let one = BoxedUint::one_with_precision(precision);
        if g_int <= one || g_int >= p_int {
            return Err(bad("generator out of range"));
        }
        let mut der = Vec::new();
        der_uint(&mut der, p);
        der_uint(&mut der, g);
        let mut seq = vec![0x30];
        der_len(&mut seq, der.len());
        seq.extend_from_slice(&der);
        let pem = pem_rfc7468::encode_string("DH PARAMETERS", pem_rfc7468::LineEnding::LF, &seq)
            .map_err(|_| bad("PEM"))?;
        Ok(DhParams {
            monty: BoxedMontyParams::new(odd),
            p: p_int,
            g: g_int,
            p_len: p.len(),
            pem,
        })
    }

    /// Reads `-----BEGIN DH PARAMETERS-----` PEM (PKCS #3: prime,
    /// generator, an optional private length that is ignored).
    pub fn from_pem(pem: &[u8]) -> Result<DhParams, GsiError> {
        let bad = |why: &str| GsiError::Crypto(format!("Diffie-Hellman parameters: {why}"));
        let (label, der) = pem_rfc7468::decode_vec(pem).map_err(|e| bad(&e.to_string()))?;
        if label != "DH PARAMETERS" {
            return Err(bad("not DH PARAMETERS"));
        }
        let (tag, body, _) = der_next(&der).ok_or_else(|| bad("DER"))?;
        let (t1, p, rest) = der_next(body).ok_or_else(|| bad("DER prime"))?;
        let (t2, g, _) = der_next(rest).ok_or_else(|| bad("DER generator"))?;
        if tag != 0x30 || t1 != 2 || t2 != 2 {
            return Err(bad("DER structure"));
        }
        DhParams::new(p, g)
    }
}

/// One side's Diffie-Hellman key.
pub struct DhKey {
    params: DhParams,
    x: BoxedUint,
    public: BoxedUint,
}

impl DhKey {
    /// A fresh private exponent (256 bits, or the prime's size less one
    /// when smaller) and its public value.
    pub fn generate(params: &DhParams) -> DhKey {
        let precision = params.p.bits_precision();
        let bits = 256.min(params.p.bit_width() - 1) as usize;
        let mut raw = random_bytes(bits.div_ceil(8));
        let extra = raw.len() * 8 - bits;
        raw[0] &= 0xff >> extra;
        raw[0] |= 0x80 >> extra; // full length, never 0 or 1
        let x = BoxedUint::from_be_slice(&raw, precision).expect("exponent fits");
        let g = BoxedMontyForm::new(params.g.clone(), &params.monty);
        let public = g.pow(&x).retrieve();
        DhKey {
            params: params.clone(),
            x,
            public,
        }
    }

    /// The public blob the stock `Public()` writes: the parameters' PEM,
    /// then `---BPUB---`, the public value in upper-case hex, `---EPUB---`.
    pub fn public_blob(&self) -> Vec<u8> {
        let mut out = self.params.pem.clone().into_bytes();
        out.extend_from_slice(b"---BPUB---");
        out.extend_from_slice(hex_upper(&self.public.to_be_bytes()).as_bytes());
        out.extend_from_slice(b"---EPUB---");
        out
    }

    /// The shared secret with the peer's public value, left-padded with
    /// zeros to the prime's length when `padded` (both sides support it
    /// unless one says `nopad`), else without leading zero bytes.
    ///
    /// Errors: [`GsiError::Crypto`] for a public value outside 2..p-2.
    pub fn agree(&self, peer: &[u8], padded: bool) -> Result<Vec<u8>, GsiError> {
        let bad = || GsiError::Crypto("Diffie-Hellman public value out of range".into());
        let peer = &peer[peer.iter().position(|&b| b != 0).unwrap_or(peer.len())..];
        if peer.len() > self.params.p_len {
            return Err(bad());
        }
        let precision = self.params.p.bits_precision();
        let y = BoxedUint::from_be_slice(peer, precision).map_err(|_| bad())?;
        let one = BoxedUint::one_with_precision(precision);
        let p_minus_1 = self.params.p.wrapping_sub(&one);
        if y <= one || y >= p_minus_1 {
            return Err(bad());
        }
        let s = BoxedMontyForm::new(y, &self.params.monty)
            .pow(&self.x)
            .retrieve();
        let bytes = s.to_be_bytes();
        let full = &bytes[bytes.len() - self.params.p_len..];
        Ok(if padded {
            full.to_vec()
        } else {
            full[full.iter().position(|&b| b != 0).unwrap_or(full.len())..].to_vec()
        })
    }
}

fn hex_upper(be: &[u8]) -> String {
    let be = &be[be
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(be.len().saturating_sub(1))..];
    be.iter().map(|b| format!("{b:02X}")).collect()
}

/// A peer's public blob split: its parameters' PEM (may be absent) and its
/// public value. Errors: [`GsiError::Crypto`] without the `---BPUB---`
/// markers or with bad hex.
pub fn parse_public_blob(blob: &[u8]) -> Result<(Option<&[u8]>, Vec<u8>), GsiError> {
    let bad = |why: &str| GsiError::Crypto(format!("Diffie-Hellman public part: {why}"));
    let find = |needle: &[u8]| blob.windows(needle.len()).position(|w| w == needle);
    let b = find(b"---BPUB---").ok_or_else(|| bad("no ---BPUB---"))?;
    let e = find(b"---EPUB--").ok_or_else(|| bad("no ---EPUB---"))?;
    if e < b + 10 {
        return Err(bad("markers out of order"));
    }
    let hex = &blob[b + 10..e];
    if hex.is_empty() || hex.len() > (DH_MAX_BITS as usize / 4) + 2 {
        return Err(bad("public value length"));
    }
    let digits: Result<Vec<u8>, _> = hex
        .iter()
        .map(|&c| (c as char).to_digit(16).map(|d| d as u8).ok_or(()))
        .collect();
    let digits = digits.map_err(|_| bad("not hex"))?;
    let mut value = Vec::with_capacity(digits.len() / 2 + 1);
    let mut it = digits.iter();
    if digits.len() % 2 == 1 {
        value.push(*it.next().unwrap());
    }
    while let (Some(h), Some(l)) = (it.next(), it.next()) {
        value.push(h << 4 | l);
    }
    Ok(((b > 0).then(|| &blob[..b]), value))
}

/// The session cipher: AES-128-CBC keyed with the first 16 bytes of the
/// Diffie-Hellman secret, each message with a random 16-byte IV in front
/// (the stock's `aes-128-cbc#16`).
#[derive(Clone)]
pub struct SessionCipher {
    key: [u8; 16],
}

/// The cipher this implementation speaks.
pub const CIPHER: &str = "aes-128-cbc";

/// The IV length sent with the cipher's name (`aes-128-cbc#16`).
pub const IV_LEN: usize = 16;

impl SessionCipher {
    /// From the agreed secret (at least 16 bytes).
    pub fn new(secret: &[u8]) -> Result<SessionCipher, GsiError> {
        let key: [u8; 16] = secret
            .get(..16)
            .and_then(|k| k.try_into().ok())
            .ok_or_else(|| GsiError::Crypto("Diffie-Hellman secret too short".into()))?;
        Ok(SessionCipher { key })
    }

    /// The IV (random characters, as the stock makes them) and the
    /// PKCS #7-padded ciphertext.
    pub fn encrypt(&self, plain: &[u8]) -> Vec<u8> {
        let iv = crypt_chars(IV_LEN);
        let enc =
            cbc::Encryptor::<Aes128>::new_from_slices(&self.key, &iv).expect("key and IV sizes");
        let mut out = iv;
        out.extend_from_slice(&enc.encrypt_padded_vec::<Pkcs7>(plain));
        out
    }

    /// Reverses [`SessionCipher::encrypt`] with an IV of `iv_len` bytes in
    /// front (0 for a zero IV). Errors: [`GsiError::Crypto`] for a bad
    /// length or padding (a wrong key).
    pub fn decrypt(&self, data: &[u8], iv_len: usize) -> Result<Vec<u8>, GsiError> {
        let bad = || GsiError::Crypto("error decrypting main buffer with session cipher".into());
        if iv_len > 16 || data.len() < iv_len {
            return Err(bad());
        }
        let mut iv = [0u8; 16];
        iv[..iv_len].copy_from_slice(&data[..iv_len]);
        let body = &data[iv_len..];
        if body.is_empty() || !body.len().is_multiple_of(16) {
            return Err(bad());
        }
        let dec =
            cbc::Decryptor::<Aes128>::new_from_slices(&self.key, &iv).expect("key and IV sizes");
        dec.decrypt_padded_vec::<Pkcs7>(body).map_err(|_| bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DH parameters and public part a stock 5.5.3 server sent
    /// (recovered from its signed `cipher` bucket with its certificate's
    /// public key; a throw-away key pair).
    const STOCK_BLOB: &[u8] = b"-----BEGIN DH PARAMETERS-----\nMEYCQQD5t+uqne0UBy7O+odIKUPwZH8NmpkP9FLtoJxsEA6xZx0hmtI4fiOoTmWD\njxdKzMuqZd6hjVJR1wu58poeLcxTAgEF\n-----END DH PARAMETERS-----\n---BPUB---66C7027BE6E2C34BE0106523A01433B136E65B525C662C153F0A4CFCB9BFB36F1937FC777532C67970D27E5EA691A31DEDDF549127A6C04B01C9903A70308CCF---EPUB---";

    #[test]
    fn reads_the_stock_dh_blob_and_agrees_with_itself() {
        let (pem, public) = parse_public_blob(STOCK_BLOB).unwrap();
        assert_eq!(public.len(), 64);
        let params = DhParams::from_pem(pem.unwrap()).unwrap();
        assert_eq!(params.p.bit_width(), 512);
        // our PEM of the same parameters is the stock's, byte for byte
        assert_eq!(params.pem.as_bytes(), pem.unwrap());
        let a = DhKey::generate(&params);
        let b = DhKey::generate(&params);
        let (_, pa) = parse_public_blob(&a.public_blob()).unwrap();
        let (_, pb) = parse_public_blob(&b.public_blob()).unwrap();
        let s1 = a.agree(&pb, true).unwrap();
        assert_eq!(s1, b.agree(&pa, true).unwrap());
        assert_eq!(s1.len(), 64);
        assert!(a.agree(&[1], true).is_err());
        let big = DhParams::ffdhe2048();
        let (c, d) = (DhKey::generate(&big), DhKey::generate(&big));
        let (_, pc) = parse_public_blob(&c.public_blob()).unwrap();
        let (_, pd) = parse_public_blob(&d.public_blob()).unwrap();
        assert_eq!(c.agree(&pd, true).unwrap(), d.agree(&pc, true).unwrap());
        assert!(parse_public_blob(b"---BPUB---zz---EPUB---").is_err());
        assert!(parse_public_blob(b"nothing").is_err());
    }

    #[test]
    fn session_cipher_round_trip() {
        let c = SessionCipher::new(&[7u8; 64]).unwrap();
        let enc = c.encrypt(b"hello gsi");
        assert_eq!(enc.len(), 32);
        assert!(enc[..16]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'.' || *b == b'/'));
        assert_eq!(c.decrypt(&enc, 16).unwrap(), b"hello gsi");
        let other = SessionCipher::new(&[8u8; 64]).unwrap();
        assert!(
            other.decrypt(&enc, 16).is_err() || other.decrypt(&enc, 16).unwrap() != b"hello gsi"
        );
        assert!(c.decrypt(&enc[..20], 16).is_err());
    }
}
