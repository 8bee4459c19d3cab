//! Trust: a hashed CA directory (`X509_CERT_DIR`, the server's
//! `-certdir`), its CRLs, and the chain check the stock applies to a peer's
//! certificates (`SECURITY.md "gsi"`; xrootd `XrdCryptogsiX509Chain.cc`
//! `Verify` and `SubjectOK`, `XrdCryptoX509Chain.cc`, `XrdSecProtocolgsi.cc`
//! `GetCA` and `LoadCRL`).
//!
//! A CA is a file `<hash>.<n>` (what `openssl rehash` makes); the CRL of
//! the CA with hash `<hash>` is `<hash>.r<n>`. A CRL whose signature the
//! CA does not verify makes that CA unusable (as the stock's default
//! `-crl:1` does); a valid one is honoured for the end entity and the
//! sub-CAs below it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use x509_cert::crl::CertificateList;
use x509_cert::der::Decode;

use super::error::GsiError;
use super::x509::{pem_blocks, tbs_bytes, verify_rsa, Cert, CertKind};

/// How far before its `notBefore` a certificate is already accepted
/// (`kAllowedSkew`, 600 s).
pub const ALLOWED_SKEW: i64 = 600;

/// Longest chain looked at (CAs, end entity and proxies).
const MAX_DEPTH: usize = 16;

/// Largest file read from the CA directory.
const MAX_FILE: u64 = 1 << 20;

/// A CA's revocation list.
#[derive(Debug, Clone)]
struct Crl {
    revoked: HashSet<Vec<u8>>,
    /// False when the CA did not sign it.
    valid: bool,
}

/// The CAs of a hashed directory and their CRLs.
#[derive(Debug, Clone, Default)]
pub struct CaStore {
    dir: PathBuf,
    cas: Vec<Cert>,
    crls: HashMap<String, Crl>,
}

/// What a verified chain says about its owner.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The end entity's subject (the DN a gridmap maps).
    pub dn: String,
    /// The last certificate, whose key the peer proved it holds.
    pub end: Cert,
    /// How many proxies follow the end entity.
    pub proxies: usize,
}

fn chain_error(what: &str, why: &str) -> GsiError {
    GsiError::Chain(format!("{what}{why}"))
}

fn is_hash_name(name: &str, crl: bool) -> bool {
    let Some((hash, ext)) = name.split_once('.') else {
        return false;
    };
    let ext = if crl {
        ext.strip_prefix('r')
    } else {
        Some(ext)
    };
    hash.len() == 8
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
        && ext.is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
}

impl CaStore {
    /// Reads the CAs (`<hash>.<n>`) and CRLs (`<hash>.r<n>`) of `dir`.
    /// Files that do not parse are skipped with a warning.
    ///
    /// Errors: [`GsiError::Config`] when the directory cannot be read or
    /// holds no CA.
    pub fn load(dir: &Path) -> Result<CaStore, GsiError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| GsiError::Config(format!("CA directory {}: {e}", dir.display())))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        let mut store = CaStore {
            dir: dir.to_path_buf(),
            ..CaStore::default()
        };
        let read = |name: &str| -> Option<Vec<u8>> {
            let path = dir.join(name);
            let meta = std::fs::metadata(&path).ok()?;
            (meta.len() <= MAX_FILE)
                .then(|| std::fs::read(&path).ok())
                .flatten()
        };
        for name in names.iter().filter(|n| is_hash_name(n, false)) {
            let Some(text) = read(name) else { continue };
            match super::x509::pem_certs(&text) {
                Ok(certs) => {
                    for c in certs {
                        if !store.cas.iter().any(|have| have.der == c.der) {
                            store.cas.push(c);
                        }
                    }
                }
                Err(e) => tracing::warn!(file = name, error = %e, "gsi: skipping a CA file"),
            }
        }
        for name in names.iter().filter(|n| is_hash_name(n, true)) {
            let Some(text) = read(name) else { continue };
            let hash = &name[..8];
            let Some(ca) = store.cas.iter().find(|c| c.subject_hash() == hash) else {
                continue;
            };
            let crl = parse_crl(&text, ca);
            match crl {
                Ok(crl) => {
                    if !crl.valid {
                        tracing::warn!(
                            file = name,
                            "gsi: CRL not signed by its CA; the CA is refused"
                        );
                    }
                    store.crls.insert(ca.subject.clone(), crl);
                }
                Err(e) => {
                    tracing::warn!(file = name, error = %e, "gsi: CRL does not parse; the CA is refused");
                    store.crls.insert(
                        ca.subject.clone(),
                        Crl {
                            revoked: HashSet::new(),
                            valid: false,
                        },
                    );
                }
            }
        }
        if store.cas.is_empty() {
            return Err(GsiError::Config(format!(
                "CA directory {} holds no hashed CA certificate (run openssl rehash)",
                dir.display()
            )));
        }
        Ok(store)
    }

    /// The directory it was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A CA whose subject hash is `hash` (`7ec4ff5e` or `7ec4ff5e.0`).
    pub fn by_hash(&self, hash: &str) -> Option<&Cert> {
        let hash = hash.split('.').next().unwrap_or(hash);
        self.cas.iter().find(|c| c.subject_hash() == hash)
    }

    fn by_subject(&self, subject: &str) -> Option<&Cert> {
        self.cas.iter().find(|c| c.subject == subject)
    }

    /// The CA certificates, from `issuer` (a subject one-line name) up to
    /// a self-signed root, root first. Errors: [`GsiError::UnknownCa`].
    fn ca_path(&self, issuer: &str) -> Result<Vec<Cert>, GsiError> {
        let mut path = Vec::new();
        let mut name = issuer.to_string();
        loop {
            let ca = self
                .by_subject(&name)
                .ok_or_else(|| GsiError::UnknownCa(name.clone()))?;
            path.push(ca.clone());
            if ca.self_issued() || path.len() >= MAX_DEPTH {
                break;
            }
            name = ca.issuer.clone();
        }
        path.reverse();
        Ok(path)
    }

    fn revoked(&self, cert: &Cert, issuer: &Cert) -> Result<(), GsiError> {
        match self.crls.get(&issuer.subject) {
            None => Ok(()),
            Some(crl) if !crl.valid => Err(GsiError::Chain(format!(
                "CRL of {} is invalid: failing",
                issuer.subject
            ))),
            Some(crl) if crl.revoked.contains(&cert.serial()) => {
                Err(GsiError::Revoked(cert.subject.clone()))
            }
            Some(_) => Ok(()),
        }
    }

    /// Checks a peer's certificates (any order; CAs among them are taken
    /// from this store instead) at `now` (seconds since the epoch), as
    /// the stock chain check: a self-signed CA, sub-CAs, exactly one end
    /// entity, then proxies, each valid in time (`notBefore` less 600 s),
    /// signed by the one before, not revoked (CRL of its CA, for the end
    /// entity and sub-CAs), proxies with their issuer's subject plus one
    /// `CN`. `min_certs` is how many certificates the peer must have sent
    /// (2 when the client says it always uses a proxy).
    ///
    /// Errors: [`GsiError::Chain`], [`GsiError::UnknownCa`],
    /// [`GsiError::Revoked`] naming what failed.
    pub fn verify(
        &self,
        presented: Vec<Cert>,
        now: i64,
        min_certs: usize,
    ) -> Result<Verified, GsiError> {
        if presented.len() < min_certs {
            return Err(GsiError::Chain(format!(
                "wrong number of certificates in received bucket (received: {}, expected: >= {min_certs})",
                presented.len()
            )));
        }
        let mut certs: Vec<Cert> = presented
            .into_iter()
            .filter(|c| !(c.kind == CertKind::Ca && c.self_issued()))
            .collect();
        if certs.is_empty() || certs.len() > MAX_DEPTH {
            return Err(chain_error("", "size exceeds max allowed depth"));
        }
        // the end: the certificate nobody else names as issuer
        let end = (0..certs.len())
            .find(|&i| {
                !certs
                    .iter()
                    .any(|o| o.issuer == certs[i].subject && o.subject != certs[i].subject)
            })
            .ok_or_else(|| chain_error(":", "chain is inconsistent"))?;
        let mut path = vec![certs.swap_remove(end)];
        while let Some(i) = certs
            .iter()
            .position(|c| c.subject == path.last().unwrap().issuer)
        {
            path.push(certs.swap_remove(i));
        }
        if !certs.is_empty() {
            return Err(chain_error(":", "chain is inconsistent"));
        }
        path.reverse(); // top of what was sent first
        let cas = self.ca_path(&path[0].issuer)?;
        let valid = |c: &Cert| now >= c.not_before - ALLOWED_SKEW && now <= c.not_after;
        // the root
        let root = &cas[0];
        if root.kind != CertKind::Ca || !root.self_issued() {
            return Err(chain_error("", "invalid or missing CA"));
        }
        if !valid(root) {
            return Err(chain_error("CA: ", "certificate expired"));
        }
        let mut signer = root.clone();
        if !root.signed_by(&root.public_key()?) {
            return Err(chain_error("CA: ", "signature verification failed"));
        }
        for ca in &cas[1..] {
            self.revoked(ca, &signer)?;
            if !valid(ca) {
                return Err(chain_error("Sub-CA: ", "certificate expired"));
            }
            if !ca.signed_by(&signer.public_key()?) {
                return Err(chain_error("Sub-CA: ", "signature verification failed"));
            }
            signer = ca.clone();
        }
        let mut rest = path.into_iter();
        let eec = rest.next().expect("a path of one at least");
        if eec.kind != CertKind::Eec {
            return Err(chain_error("", "invalid or missing EEC"));
        }
        self.revoked(&eec, &signer)?;
        if !valid(&eec) {
            return Err(chain_error("EEC: ", "certificate expired"));
        }
        if !eec.signed_by(&signer.public_key()?) {
            return Err(chain_error("EEC: ", "signature verification failed"));
        }
        let dn = eec.subject.clone();
        let mut last = eec;
        let mut proxies = 0;
        for pxy in rest {
            match pxy.kind {
                CertKind::Proxy(_) => {}
                CertKind::Eec => return Err(chain_error("", "too many EEC")),
                _ => return Err(chain_error("", "invalid proxy")),
            }
            subject_ok(&pxy)?;
            if !valid(&pxy) {
                return Err(chain_error("Proxy: ", "certificate expired"));
            }
            if !pxy.signed_by(&last.public_key()?) {
                return Err(chain_error("Proxy: ", "signature verification failed"));
            }
            proxies += 1;
            last = pxy;
        }
        Ok(Verified {
            dn,
            end: last,
            proxies,
        })
    }

    /// Checks a server's own certificate (one end entity, no proxies) as a
    /// client does before it trusts the server's key.
    pub fn verify_server(&self, cert: Cert, now: i64) -> Result<Verified, GsiError> {
        let v = self.verify(vec![cert], now, 1)?;
        if v.proxies > 0 {
            return Err(chain_error("", "invalid or missing EEC"));
        }
        Ok(v)
    }
}

/// The stock's proxy subject rule (`SubjectOK`): the subject is the
/// issuer's (without its last `/CN=` when the issuer is a proxy) plus
/// exactly one `/CN=`.
fn subject_ok(pxy: &Cert) -> Result<(), GsiError> {
    let bad = |why: &str| GsiError::Chain(format!("proxy subject check: {why}"));
    let (subject, issuer) = (&pxy.subject, &pxy.issuer);
    let mut ilen = issuer.len();
    if !subject.starts_with(issuer.as_str()) {
        if let Some(cut) = issuer.rfind("/CN=") {
            ilen = cut;
        }
        if !subject.get(ilen..).is_some_and(|s| s.starts_with("/CN=")) {
            return Err(bad("found additional chars"));
        }
        if subject[..ilen] != issuer[..ilen] {
            return Err(bad("issuer not found in subject"));
        }
    }
    let tail = &subject[ilen..];
    let first = tail.find("CN=").ok_or_else(|| bad("no appended 'CN='"))?;
    if tail[first + 3..].contains("CN=") {
        return Err(bad("too many appended 'CN='s"));
    }
    Ok(())
}

fn parse_crl(text: &[u8], ca: &Cert) -> Result<Crl, GsiError> {
    let der = match pem_blocks(text)?.into_iter().find(|(l, _)| l == "X509 CRL") {
        Some((_, der)) => der,
        None => text.to_vec(),
    };
    let list = CertificateList::<x509_cert::certificate::Rfc5280>::from_der(&der)
        .map_err(|e| GsiError::BadCertificate(format!("CRL: {e}")))?;
    let valid = tbs_bytes(&der).is_some_and(|tbs| {
        list.signature.as_bytes().is_some_and(|sig| {
            ca.public_key()
                .is_ok_and(|k| verify_rsa(&list.signature_algorithm.oid.to_string(), tbs, sig, &k))
        })
    });
    let revoked = list
        .tbs_cert_list
        .revoked_certificates
        .iter()
        .flatten()
        .map(|r| r.serial_number.as_bytes().to_vec())
        .collect();
    Ok(Crl { revoked, valid })
}
