//! A throw-away PKI for TLS and `gsi` tests, made with the `openssl`
//! command: a CA, a host certificate for `localhost` / `127.0.0.1` signed
//! by it, a CA directory hashed as the grid's
//! `/etc/grid-security/certificates` is (`openssl rehash`), and a PEM
//! bundle of the CA ([`TestPki`]); user certificates with chosen dates and
//! CRLs in the CA directory; and for `gsi` ([`GsiPki`]) a user, a
//! grid-mapfile, X509 proxies made by the stock `xrdgsiproxy` or by
//! `openssl`, and the stock server's `sec.protocol gsi` lines.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A CA and a host certificate in a temp dir.
pub struct TestPki {
    /// Holds every file; removed on drop.
    pub dir: tempfile::TempDir,
    /// The CA certificate (PEM), also a one-certificate bundle.
    pub ca_cert: PathBuf,
    /// The CA's private key (PEM).
    pub ca_key: PathBuf,
    /// A directory with the CA certificate and its `<hash>.0` link, for
    /// `X509_CERT_DIR` or the stock server's `xrd.tlsca certdir`.
    pub ca_dir: PathBuf,
    /// The host certificate (PEM) for `CN=localhost`, SAN `DNS:localhost,
    /// IP:127.0.0.1, IP:::1`.
    pub host_cert: PathBuf,
    /// The host certificate's key (PEM, unencrypted).
    pub host_key: PathBuf,
}

/// Runs `openssl` with `args` in `cwd`; panics with its stderr if it fails.
pub fn openssl(args: &[&str], cwd: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Default for TestPki {
    /// [`TestPki::new`].
    fn default() -> Self {
        TestPki::new()
    }
}

impl TestPki {
    /// A fresh CA and host certificate, valid for a day.
    pub fn new() -> TestPki {
        TestPki::with_ca_name("xroot test CA")
    }

    /// As [`TestPki::new`], the CA named `CN=ca_cn`: a CA of another name
    /// (and so another subject hash) than the one a server trusts, for
    /// the "unknown CA" case (two [`TestPki::new`] share the name, and a
    /// server finds the other under its hash).
    pub fn with_ca_name(ca_cn: &str) -> TestPki {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-subj",
                &format!("/CN={ca_cn}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
            d,
        );
        let host = TestPki::issue(
            d,
            "host",
            "localhost",
            "DNS:localhost,IP:127.0.0.1,IP:::1",
            1,
        );
        // the unprivileged stock server must be able to enter it
        let _ = Command::new("chmod").arg("a+rx").arg(d).status();
        let ca_dir = d.join("certificates");
        std::fs::create_dir(&ca_dir).unwrap();
        std::fs::copy(d.join("ca.pem"), ca_dir.join("ca.pem")).unwrap();
        openssl(&["rehash", ca_dir.to_str().unwrap()], d);
        TestPki {
            ca_cert: d.join("ca.pem"),
            ca_key: d.join("ca.key"),
            ca_dir,
            host_cert: host.0,
            host_key: host.1,
            dir,
        }
    }

    /// A copy of `key` that the stock server accepts: XrdTls refuses a key
    /// readable by others ("has excessive access rights"), so mode 0600,
    /// owned by the user it runs as when the tests run as root
    /// (`run_unprivileged`).
    pub fn stock_server_key(key: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let copy = key.with_extension("server.key");
        std::fs::copy(key, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).unwrap();
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if root {
            let user = match Command::new("id").arg("xrootd").output() {
                Ok(o) if o.status.success() => "xrootd",
                _ => "nobody",
            };
            let _ = Command::new("chown").arg(user).arg(&copy).status();
        }
        copy
    }

    /// Another certificate signed by this CA: `(cert, key)` named `name` in
    /// the PKI's directory, for `CN=cn` with subjectAltName `san`, valid for
    /// `days` (0 or less: already expired).
    pub fn leaf(&self, name: &str, cn: &str, san: &str, days: i64) -> (PathBuf, PathBuf) {
        TestPki::issue(self.dir.path(), name, cn, san, days)
    }

    fn issue(d: &Path, name: &str, cn: &str, san: &str, days: i64) -> (PathBuf, PathBuf) {
        let ext = format!(
            "subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"
        );
        let dates = if days > 0 {
            Dates::Days(days)
        } else {
            Dates::Between("20000101000000Z", "20000102000000Z")
        };
        TestPki::issue_with(d, name, &format!("/CN={cn}"), &ext, dates)
    }

    /// Issues `name.pem` / `name.key` in `d` for the subject `subj`
    /// (`/CN=...`) with the extensions `ext` (an `-extfile`'s lines).
    fn issue_with(
        d: &Path,
        name: &str,
        subj: &str,
        ext_lines: &str,
        dates: Dates<'_>,
    ) -> (PathBuf, PathBuf) {
        let (key, csr, cert, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
            format!("{name}.ext"),
        );
        openssl(
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
                subj,
            ],
            d,
        );
        std::fs::write(d.join(&ext), ext_lines).unwrap();
        match dates {
            Dates::Days(days) => {
                let days = days.to_string();
                openssl(
                    &[
                        "x509",
                        "-req",
                        "-in",
                        &csr,
                        "-CA",
                        "ca.pem",
                        "-CAkey",
                        "ca.key",
                        "-CAcreateserial",
                        "-out",
                        &cert,
                        "-extfile",
                        &ext,
                        "-days",
                        &days,
                    ],
                    d,
                );
            }
            Dates::Between(start, end) => {
                // chosen dates (openssl 3.0's x509 cannot set them; ca can)
                let db = d.join(format!("{name}.db"));
                std::fs::create_dir_all(&db).unwrap();
                std::fs::write(db.join("index.txt"), "").unwrap();
                // a serial of its own, so that a CRL names this one alone
                std::fs::write(
                    db.join("serial"),
                    format!("{:x}\n", 0x1000 + serial_of(name)),
                )
                .unwrap();
                let cnf = format!(
                "[ca]\ndefault_ca=c\n[c]\ndir={db}\ndatabase=$dir/index.txt\nnew_certs_dir=$dir\n\
                 serial=$dir/serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n",
                db = db.display()
            );
                std::fs::write(db.join("ca.cnf"), cnf).unwrap();
                let cnf = db.join("ca.cnf");
                openssl(
                    &[
                        "ca",
                        "-batch",
                        "-config",
                        cnf.to_str().unwrap(),
                        "-cert",
                        "ca.pem",
                        "-keyfile",
                        "ca.key",
                        "-in",
                        &csr,
                        "-out",
                        &cert,
                        "-extfile",
                        &ext,
                        "-notext",
                        "-preserveDN",
                        "-startdate",
                        start,
                        "-enddate",
                        end,
                    ],
                    d,
                );
            }
        }
        // readable by the unprivileged user the stock server runs as
        for f in [&key, &cert] {
            let _ = Command::new("chmod").arg("a+r").arg(d.join(f)).status();
        }
        (d.join(cert), d.join(key))
    }
}

/// The validity of a certificate [`TestPki`] issues.
enum Dates<'a> {
    /// From now on, for this many days (more than 0).
    Days(i64),
    /// From one date to the other, as `openssl ca` takes them
    /// (`YYYYMMDDHHMMSSZ`).
    Between(&'a str, &'a str),
}

/// A small number of `name`'s own, for a serial.
fn serial_of(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish() % 0x100_0000
}

/// Makes `path` readable by its owner only (0400), as the stock client and
/// `xrdgsiproxy` want a user key ("wrong permissions" otherwise).
fn owner_read_only(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o400)).unwrap();
}

impl TestPki {
    /// A user certificate signed by this CA for `gsi`: `(cert, key)` named
    /// `name` in the PKI's directory, subject `/CN=cn` (no
    /// subjectAltName), valid for `days` (0 or less: already expired); the
    /// key is mode 0400, as the stock client and `xrdgsiproxy` want it.
    pub fn user(&self, name: &str, cn: &str, days: i64) -> (PathBuf, PathBuf) {
        if days > 0 {
            self.user_dated(name, cn, Dates::Days(days))
        } else {
            self.user_dated(
                name,
                cn,
                Dates::Between("20000101000000Z", "20000102000000Z"),
            )
        }
    }

    /// As [`TestPki::user`], valid from `not_before` to `not_after`
    /// (`YYYYMMDDHHMMSSZ`, as `openssl ca -startdate` takes them): a
    /// certificate not yet valid, or expired, at a chosen time.
    pub fn user_between(
        &self,
        name: &str,
        cn: &str,
        not_before: &str,
        not_after: &str,
    ) -> (PathBuf, PathBuf) {
        self.user_dated(name, cn, Dates::Between(not_before, not_after))
    }

    fn user_dated(&self, name: &str, cn: &str, dates: Dates<'_>) -> (PathBuf, PathBuf) {
        let (cert, key) = TestPki::issue_with(
            self.dir.path(),
            name,
            &format!("/CN={cn}"),
            "basicConstraints=CA:FALSE\n",
            dates,
        );
        owner_read_only(&key);
        (cert, key)
    }

    /// OpenSSL's subject hash of the CA (`openssl x509 -subject_hash`),
    /// the stem of its files in [`TestPki::ca_dir`] (`HASH.0`, `HASH.r0`).
    pub fn ca_hash(&self) -> String {
        let out = Command::new("openssl")
            .args(["x509", "-noout", "-subject_hash", "-in"])
            .arg(&self.ca_cert)
            .output()
            .expect("run openssl");
        assert!(out.status.success(), "openssl x509 -subject_hash failed");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Revokes `cert` (one this CA issued): a CRL of this CA listing it,
    /// written into [`TestPki::ca_dir`] as `HASH.r0`, where the grid's
    /// tools (`fetch-crl`) put CRLs and where the stock server and ours
    /// look for them. A later call replaces the CRL with one listing both.
    pub fn revoke(&self, cert: &Path) {
        let d = self.dir.path();
        let db = d.join("crl.db");
        if !db.exists() {
            std::fs::create_dir(&db).unwrap();
            std::fs::write(db.join("index.txt"), "").unwrap();
            std::fs::write(db.join("crlnumber"), "01\n").unwrap();
            std::fs::write(
                db.join("ca.cnf"),
                format!(
                    "[ca]\ndefault_ca=c\n[c]\ndir={}\ndatabase=$dir/index.txt\ncrlnumber=$dir/crlnumber\n\
                     default_md=sha256\ndefault_crl_days=30\n",
                    db.display()
                ),
            )
            .unwrap();
        }
        let cnf = db.join("ca.cnf");
        let cnf = cnf.to_str().unwrap();
        let cert = cert.to_str().unwrap();
        openssl(
            &[
                "ca", "-config", cnf, "-keyfile", "ca.key", "-cert", "ca.pem", "-revoke", cert,
            ],
            d,
        );
        let crl = self.ca_dir.join(format!("{}.r0", self.ca_hash()));
        let crl = crl.to_str().unwrap();
        openssl(
            &[
                "ca", "-config", cnf, "-keyfile", "ca.key", "-cert", "ca.pem", "-gencrl", "-out",
                crl,
            ],
            d,
        );
        let _ = Command::new("chmod").arg("a+r").arg(crl).status();
    }
}

/// A proxy made by `openssl` ([`GsiPki::openssl_proxy`]): its file as
/// `X509_USER_PROXY` holds it, and its parts.
pub struct OpensslProxy {
    /// The proxy file: the proxy certificate, its key, the user
    /// certificate (PEM, in this order, as `xrdgsiproxy` writes them).
    pub file: PathBuf,
    /// The proxy certificate alone (PEM).
    pub cert: PathBuf,
    /// The proxy's key alone (PEM, unencrypted).
    pub key: PathBuf,
}

/// A `gsi` setup on a [`TestPki`]: the CA and its hashed directory, the
/// host certificate for `localhost` (the server's), a user certificate
/// `CN=Alice User` and a grid-mapfile naming it `alice`; proxies are made
/// on demand by the stock `xrdgsiproxy` ([`GsiPki::xrdgsiproxy`]) or by
/// `openssl` ([`GsiPki::openssl_proxy`], for tests without the stock
/// tools), and [`GsiPki::stock_server_lines`] configures the stock
/// server's `gsi`.
pub struct GsiPki {
    /// The CA, its directory ([`TestPki::ca_dir`], what `X509_CERT_DIR`
    /// and `-certdir` name) and the host certificate and key.
    pub pki: TestPki,
    /// The user certificate (PEM), valid for 30 days.
    pub user_cert: PathBuf,
    /// The user's key (PEM, unencrypted, mode 0400).
    pub user_key: PathBuf,
    /// The user's DN as OpenSSL prints it on one line (and as the gridmap
    /// and the server's identity name it): `/CN=Alice User`.
    pub user_dn: String,
    /// The grid-mapfile: `"/CN=Alice User" alice`.
    pub gridmap: PathBuf,
}

impl Default for GsiPki {
    /// [`GsiPki::new`].
    fn default() -> Self {
        GsiPki::new()
    }
}

impl GsiPki {
    /// The user's name in the grid-mapfile.
    pub const USER: &'static str = "alice";

    /// A fresh CA, host certificate, user certificate and gridmap (needs
    /// `openssl`).
    pub fn new() -> GsiPki {
        let pki = TestPki::new();
        let (user_cert, user_key) = pki.user("user", "Alice User", 30);
        let user_dn = "/CN=Alice User".to_string();
        let gridmap = pki.dir.path().join("grid-mapfile");
        std::fs::write(&gridmap, format!("\"{user_dn}\" {}\n", GsiPki::USER)).unwrap();
        let _ = Command::new("chmod").arg("a+r").arg(&gridmap).status();
        GsiPki {
            pki,
            user_cert,
            user_key,
            user_dn,
            gridmap,
        }
    }

    /// `name` in the PKI's directory (a place for a test's own files).
    pub fn path(&self, name: &str) -> PathBuf {
        self.pki.dir.path().join(name)
    }

    /// A proxy of the user made by the stock `xrdgsiproxy init` (RFC 3820,
    /// signed with SHA-1, 2048-bit key as 5.5.3 makes them), valid for
    /// `valid` (`H:MM`), written to `name` in the PKI's directory (mode
    /// 0600). Panics with its output when `xrdgsiproxy` fails or is
    /// missing: check [`crate::stock::program_available`] first.
    pub fn xrdgsiproxy(&self, name: &str, valid: &str) -> PathBuf {
        let out_file = self.path(name);
        let out = Command::new("xrdgsiproxy")
            .arg("init")
            .arg("-cert")
            .arg(&self.user_cert)
            .arg("-key")
            .arg(&self.user_key)
            .arg("-certdir")
            .arg(&self.pki.ca_dir)
            .arg("-out")
            .arg(&out_file)
            .args(["-valid", valid])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run xrdgsiproxy");
        assert!(
            out.status.success() && out_file.exists(),
            "xrdgsiproxy init: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out_file
    }

    /// A proxy of the user made by `openssl` alone: an RFC 3820 proxy
    /// (`proxyCertInfo` critical, inherit-all policy) with the subject
    /// `user_dn/CN=SERIAL`, signed by the user's key with SHA-1 as
    /// `xrdgsiproxy` signs, valid for a day; its files `name`,
    /// `name.cert.pem` and `name.key` in the PKI's directory.
    pub fn openssl_proxy(&self, name: &str) -> OpensslProxy {
        let d = self.pki.dir.path();
        let serial = (1_000_000 + serial_of(name)).to_string();
        let (cert, key, csr, ext) = (
            format!("{name}.cert.pem"),
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.ext"),
        );
        std::fs::write(
            d.join(&ext),
            "proxyCertInfo=critical,language:id-ppl-inheritAll\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        let subj = format!("{}/CN={serial}", self.user_dn);
        openssl(
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
                &subj,
            ],
            d,
        );
        let user_cert = self.user_cert.to_str().unwrap();
        let user_key = self.user_key.to_str().unwrap();
        openssl(
            &[
                "x509",
                "-req",
                "-sha1",
                "-in",
                &csr,
                "-CA",
                user_cert,
                "-CAkey",
                user_key,
                "-set_serial",
                &serial,
                "-out",
                &cert,
                "-days",
                "1",
                "-extfile",
                &ext,
            ],
            d,
        );
        let mut file = std::fs::read(d.join(&cert)).unwrap();
        file.extend(std::fs::read(d.join(&key)).unwrap());
        file.extend(std::fs::read(&self.user_cert).unwrap());
        std::fs::write(self.path(name), file).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(self.path(name), std::fs::Permissions::from_mode(0o600))
                .unwrap();
        }
        OpensslProxy {
            file: self.path(name),
            cert: d.join(cert),
            key: d.join(key),
        }
    }

    /// `program` (a stock client tool, or ours) with the environment a
    /// `gsi` client reads pointed at this PKI: `X509_CERT_DIR` its CA
    /// directory, `X509_USER_PROXY` `proxy` (without one, a file that does
    /// not exist), `HOME` an empty directory of the PKI's (so no
    /// `~/.globus` is found), `X509_USER_CERT` and `X509_USER_KEY` unset
    /// (a test that wants them sets them), standard input closed.
    pub fn client_command(
        &self,
        program: impl AsRef<std::ffi::OsStr>,
        proxy: Option<&Path>,
    ) -> Command {
        let home = self.path("home");
        let _ = std::fs::create_dir(&home);
        let mut cmd = Command::new(program);
        cmd.env("HOME", &home)
            .env("X509_CERT_DIR", &self.pki.ca_dir)
            .env(
                "X509_USER_PROXY",
                proxy.map_or_else(|| home.join("no-proxy"), Path::to_path_buf),
            )
            .env_remove("X509_USER_CERT")
            .env_remove("X509_USER_KEY")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// The stock server's `gsi` as these files configure it, lines for
    /// [`crate::stock::StockServer::start`]: `xrootd.seclib`, `sec.protocol
    /// gsi -certdir -cert -key -gridmap -gmapopt:2 -crl:0 -dlgpxy:0` (a DN
    /// the gridmap does not name is refused, CRLs are not read, no proxy
    /// delegation) and `sec.protbind * only gsi`. The host key is a copy
    /// the user the stock server runs as can read
    /// ([`TestPki::stock_server_key`]).
    pub fn stock_server_lines(&self) -> Vec<String> {
        let key = TestPki::stock_server_key(&self.pki.host_key);
        vec![
            "xrootd.seclib libXrdSec.so".into(),
            format!(
                "sec.protocol gsi -certdir:{} -cert:{} -key:{} -gridmap:{} -gmapopt:2 -crl:0 -dlgpxy:0",
                self.pki.ca_dir.display(),
                self.pki.host_cert.display(),
                key.display(),
                self.gridmap.display()
            ),
            "sec.protbind * only gsi".into(),
        ]
    }
}
