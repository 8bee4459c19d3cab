//! Certificates as `gsi` sees them (`SECURITY.md "gsi"`): PEM blocks,
//! names in the stock's one-line form (`/C=CH/O=x/CN=Alice`), OpenSSL's
//! subject hash (the names of a hashed CA directory), the kind of a
//! certificate (CA, end entity, proxy), and its signature.
//!
//! Sources: xrootd `XrdCryptosslX509.cc` (`CertType`),
//! `XrdCryptosslgsiAux.cc` (`XrdCryptosslX509CheckProxy3`),
//! `XrdCryptosslAux.cc` (`NameOneLine`); OpenSSL's `X509_NAME_hash_ex`
//! and `x509_name_canon` for the hash.

use rsa::{Pkcs1v15Sign, PublicKey};
use sha1::{Digest, Sha1};
use x509_cert::der::{Decode, Encode, Tagged};
use x509_cert::name::Name;
use x509_cert::Certificate;

use super::crypto::der_next;
use super::error::GsiError;

/// RFC 3820 `proxyCertInfo`.
const OID_PROXY_CERT_INFO: &str = "1.3.6.1.5.5.7.1.14";
/// The pre-RFC (GSI 3) `proxyCertInfo`.
const OID_PROXY_CERT_INFO_OLD: &str = "1.3.6.1.4.1.3536.1.222";
/// `basicConstraints`.
const OID_BASIC_CONSTRAINTS: &str = "2.5.29.19";

/// What a certificate is in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertKind {
    /// A certification authority (`basicConstraints` with `cA`).
    Ca,
    /// An end entity: a user or host certificate.
    Eec,
    /// A proxy: its subject is its issuer's plus one `CN`, and it carries
    /// the RFC 3820 extension, the pre-RFC (GSI 3) one, or (GSI 2, legacy)
    /// a last `CN` of `proxy` or `limited proxy`.
    Proxy(ProxyForm),
    /// Named like a proxy but without a usable proxy extension.
    Unknown,
}

/// Which proxy form a proxy certificate has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyForm {
    /// RFC 3820 `proxyCertInfo`, critical, with a policy language.
    Rfc3820,
    /// The GSI 3 draft extension (OID 1.3.6.1.4.1.3536.1.222).
    Gsi3,
    /// GSI 2: no extension, last `CN` `proxy` or `limited proxy`.
    Legacy,
}

/// A parsed certificate and what the chain checks need of it.
#[derive(Clone)]
pub struct Cert {
    /// The DER.
    pub der: Vec<u8>,
    /// The parsed certificate.
    pub cert: Certificate,
    /// The subject, one-line form.
    pub subject: String,
    /// The issuer, one-line form.
    pub issuer: String,
    /// What it is.
    pub kind: CertKind,
    /// Validity, seconds since the epoch.
    pub not_before: i64,
    /// Validity, seconds since the epoch.
    pub not_after: i64,
}

impl std::fmt::Debug for Cert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cert({:?}, {})", self.kind, self.subject)
    }
}

/// The PEM blocks of `text`, in order: their label and DER. Text outside
/// blocks is ignored; a block that does not decode is an error.
pub fn pem_blocks(text: &[u8]) -> Result<Vec<(String, Vec<u8>)>, GsiError> {
    let mut out = Vec::new();
    let mut rest = text;
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    while let Some(b) = find(rest, b"-----BEGIN ") {
        let block = &rest[b..];
        let Some(e) = find(block, b"-----END ") else {
            return Err(GsiError::BadCertificate("PEM block without END".into()));
        };
        let tail = &block[e + 9..];
        let end = find(tail, b"-----")
            .ok_or_else(|| GsiError::BadCertificate("PEM END line".into()))?
            + e
            + 14;
        let (label, der) = pem_rfc7468::decode_vec(&block[..end])
            .map_err(|err| GsiError::BadCertificate(format!("PEM: {err}")))?;
        out.push((label.to_string(), der));
        rest = &block[end..];
    }
    Ok(out)
}

/// PEM of `der` under `label`, as OpenSSL writes it (64 columns, `\n`).
pub fn to_pem(label: &str, der: &[u8]) -> String {
    pem_rfc7468::encode_string(label, pem_rfc7468::LineEnding::LF, der).expect("PEM of bounded DER")
}

/// The certificates of a PEM text (keys and other blocks skipped).
pub fn pem_certs(text: &[u8]) -> Result<Vec<Cert>, GsiError> {
    pem_blocks(text)?
        .into_iter()
        .filter(|(l, _)| l == "CERTIFICATE")
        .map(|(_, der)| Cert::from_der(der))
        .collect()
}

/// The short name OpenSSL prints for an attribute type.
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.12" => "title",
        "2.5.4.42" => "GN",
        "2.5.4.43" => "initials",
        "2.5.4.46" => "dnQualifier",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        "1.2.840.113549.1.9.1" => "emailAddress",
        _ => return None,
    })
}

/// The universal tag number of a value (0 for other classes).
fn tag_byte(value: &x509_cert::der::Any) -> u8 {
    let tag = value.tag();
    if tag.is_universal() {
        tag.number().value() as u8
    } else {
        0
    }
}

/// A string value's text: BMPString as UTF-16, UniversalString as
/// UTF-32, the others as their bytes.
fn value_text(tag: u8, bytes: &[u8]) -> String {
    match tag {
        0x1e => {
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        0x1c => bytes
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .filter_map(char::from_u32)
            .collect(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// A name in the stock's one-line form, `/C=CH/O=xroot-test/CN=Alice`
/// (`X509_NAME_print_ex` with `XN_FLAG_SEP_MULTILINE`, lines joined by
/// `/`): short names, values unescaped, a multi-valued RDN's parts joined
/// with ` + `.
pub fn one_line(name: &Name) -> String {
    let mut out = String::new();
    for rdn in name.iter_rdn() {
        out.push('/');
        let parts: Vec<String> = rdn
            .iter()
            .map(|atv| {
                let oid = atv.oid.to_string();
                let key = short_name(&oid).map(str::to_string).unwrap_or(oid);
                format!(
                    "{key}={}",
                    value_text(tag_byte(&atv.value), atv.value.value())
                )
            })
            .collect();
        out.push_str(&parts.join(" + "));
    }
    out
}

/// OpenSSL's `X509_NAME_hash_ex` of `name` as 8 hex digits (the file name
/// of a CA in a hashed directory, without `.0`): the first 4 bytes of the
/// SHA-1 of the name's canonical encoding, little-endian. The canonical
/// encoding re-encodes each string value as UTF8String, trimmed, inner
/// white space folded to one space, ASCII lower-cased, and drops the outer
/// SEQUENCE header.
pub fn name_hash(name: &Name) -> String {
    let mut canon = Vec::new();
    for rdn in name.iter_rdn() {
        let mut atvs: Vec<Vec<u8>> = Vec::new();
        for atv in rdn.iter() {
            let oid_der = atv.oid.to_der().unwrap_or_default();
            let tag = tag_byte(&atv.value);
            // UTF8String, PrintableString, T61String, IA5String,
            // VisibleString, UniversalString, BMPString
            let value_der = match tag {
                0x0c | 0x13 | 0x14 | 0x16 | 0x1a | 0x1c | 0x1e => {
                    let text = value_text(tag, atv.value.value());
                    let mut folded = String::new();
                    for word in text.split([' ', '\t', '\n', '\x0b', '\x0c', '\r']) {
                        if word.is_empty() {
                            continue;
                        }
                        if !folded.is_empty() {
                            folded.push(' ');
                        }
                        folded.push_str(word);
                    }
                    let lower: String = folded.chars().map(|c| c.to_ascii_lowercase()).collect();
                    tlv(0x0c, lower.as_bytes())
                }
                _ => atv.value.to_der().unwrap_or_default(),
            };
            let mut body = oid_der;
            body.extend_from_slice(&value_der);
            atvs.push(tlv(0x30, &body));
        }
        atvs.sort();
        canon.extend_from_slice(&tlv(0x31, &atvs.concat()));
    }
    let md = Sha1::digest(&canon);
    format!("{:08x}", u32::from_le_bytes([md[0], md[1], md[2], md[3]]))
}

fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let b = (len as u32).to_be_bytes();
        let skip = b.iter().position(|&x| x != 0).unwrap_or(3);
        out.push(0x80 | (4 - skip) as u8);
        out.extend_from_slice(&b[skip..]);
    }
    out.extend_from_slice(body);
    out
}

impl Cert {
    /// Parses a DER certificate. Errors: [`GsiError::BadCertificate`].
    pub fn from_der(der: Vec<u8>) -> Result<Cert, GsiError> {
        let cert = Certificate::from_der(&der)
            .map_err(|e| GsiError::BadCertificate(format!("X.509: {e}")))?;
        let tbs = cert.tbs_certificate();
        let subject = one_line(tbs.subject());
        let issuer = one_line(tbs.issuer());
        let secs = |t: x509_cert::time::Time| t.to_unix_duration().as_secs() as i64;
        let not_before = secs(tbs.validity().not_before);
        let not_after = secs(tbs.validity().not_after);
        let mut c = Cert {
            der,
            cert,
            subject,
            issuer,
            kind: CertKind::Eec,
            not_before,
            not_after,
        };
        c.kind = c.classify();
        Ok(c)
    }

    fn extension(&self, oid: &str) -> Option<&x509_cert::ext::Extension> {
        self.cert
            .tbs_certificate()
            .extensions()?
            .iter()
            .find(|e| e.extn_id.to_string() == oid)
    }

    /// `CertType`: a CA by `basicConstraints`, a proxy by its name and
    /// extensions, else an end entity.
    fn classify(&self) -> CertKind {
        if let Some(bc) = self.extension(OID_BASIC_CONSTRAINTS) {
            // SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLen INTEGER OPTIONAL }
            if let Some((0x30, body, _)) = der_next(bc.extn_value.as_bytes()) {
                if let Some((0x01, v, _)) = der_next(body) {
                    if v.first().is_some_and(|&b| b != 0) {
                        return CertKind::Ca;
                    }
                }
            }
        }
        let Some(cut) = self.subject.rfind("/CN=") else {
            return CertKind::Eec;
        };
        if self.subject[..cut] != self.issuer {
            return CertKind::Eec;
        }
        let mut kind = CertKind::Unknown;
        if let Some(ext) = self.extension(OID_PROXY_CERT_INFO) {
            if ext.critical && has_policy_language(ext.extn_value.as_bytes()) {
                return CertKind::Proxy(ProxyForm::Rfc3820);
            }
        } else if let Some(ext) = self.extension(OID_PROXY_CERT_INFO_OLD) {
            if has_policy_language(ext.extn_value.as_bytes()) {
                kind = CertKind::Proxy(ProxyForm::Gsi3);
            }
        }
        let last_cn = &self.subject[cut + 4..];
        if kind == CertKind::Unknown && (last_cn == "proxy" || last_cn == "limited proxy") {
            kind = CertKind::Proxy(ProxyForm::Legacy);
        }
        kind
    }

    /// Whether it is self-signed by name.
    pub fn self_issued(&self) -> bool {
        self.subject == self.issuer
    }

    /// The subject's hash (see [`name_hash`]).
    pub fn subject_hash(&self) -> String {
        name_hash(self.cert.tbs_certificate().subject())
    }

    /// The issuer's hash (see [`name_hash`]).
    pub fn issuer_hash(&self) -> String {
        name_hash(self.cert.tbs_certificate().issuer())
    }

    /// The DER of its SubjectPublicKeyInfo.
    pub fn spki_der(&self) -> Vec<u8> {
        self.cert
            .tbs_certificate()
            .subject_public_key_info()
            .to_der()
            .unwrap_or_default()
    }

    /// Its RSA public key. Errors: [`GsiError::BadKey`] for another kind.
    pub fn public_key(&self) -> Result<PublicKey, GsiError> {
        use rsa::pkcs8::DecodePublicKey;
        PublicKey::from_public_key_der(&self.spki_der())
            .map_err(|e| GsiError::BadKey(format!("certificate key of {}: {e}", self.subject)))
    }

    /// The serial number's bytes.
    pub fn serial(&self) -> Vec<u8> {
        self.cert
            .tbs_certificate()
            .serial_number()
            .as_bytes()
            .to_vec()
    }

    /// Whether `key` made its signature (RSA with SHA-1, SHA-224, SHA-256,
    /// SHA-384 or SHA-512; SHA-1 because the stock `xrdgsiproxy` signs
    /// proxies with it).
    pub fn signed_by(&self, key: &PublicKey) -> bool {
        let Some(tbs) = tbs_bytes(&self.der) else {
            return false;
        };
        let alg = self.cert.signature_algorithm().oid.to_string();
        let Some(sig) = self.cert.signature().as_bytes() else {
            return false;
        };
        verify_rsa(&alg, tbs, sig, key)
    }
}

/// Checks an RSA PKCS #1 v1.5 signature over `data` for the signature
/// algorithm `alg` (an OID).
pub(crate) fn verify_rsa(alg: &str, data: &[u8], sig: &[u8], key: &PublicKey) -> bool {
    match alg {
        "1.2.840.113549.1.1.5" => key.verify(Pkcs1v15Sign::new::<Sha1>(), &Sha1::digest(data), sig),
        "1.2.840.113549.1.1.14" => key.verify(
            Pkcs1v15Sign::new::<sha2::Sha224>(),
            &sha2::Sha224::digest(data),
            sig,
        ),
        "1.2.840.113549.1.1.11" => key.verify(
            Pkcs1v15Sign::new::<sha2::Sha256>(),
            &sha2::Sha256::digest(data),
            sig,
        ),
        "1.2.840.113549.1.1.12" => key.verify(
            Pkcs1v15Sign::new::<sha2::Sha384>(),
            &sha2::Sha384::digest(data),
            sig,
        ),
        "1.2.840.113549.1.1.13" => key.verify(
            Pkcs1v15Sign::new::<sha2::Sha512>(),
            &sha2::Sha512::digest(data),
            sig,
        ),
        _ => return false,
    }
    .is_ok()
}

/// The signed part of a certificate or CRL, as it is in the DER.
pub(crate) fn tbs_bytes(der: &[u8]) -> Option<&[u8]> {
    let (tag, body, _) = der_next(der)?;
    if tag != 0x30 {
        return None;
    }
    let (inner_tag, inner, _) = der_next(body)?;
    if inner_tag != 0x30 {
        return None;
    }
    let header = inner.as_ptr() as usize - body.as_ptr() as usize;
    Some(&body[..header + inner.len()])
}

/// Whether a `proxyCertInfo` value (either form) holds a proxy policy with
/// a policy language: a SEQUENCE holding a SEQUENCE that starts with an
/// OID.
fn has_policy_language(value: &[u8]) -> bool {
    let Some((0x30, mut body, _)) = der_next(value) else {
        return false;
    };
    while let Some((tag, inner, rest)) = der_next(body) {
        if tag == 0x30 && matches!(der_next(inner), Some((0x06, _, _))) {
            return true;
        }
        body = rest;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_blocks_in_a_proxy_file_order() {
        assert!(pem_blocks(b"no pem here").unwrap().is_empty());
        assert!(pem_blocks(b"-----BEGIN CERTIFICATE-----\nAAAA\n").is_err());
    }
}
