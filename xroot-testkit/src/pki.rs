//! A throw-away PKI for TLS tests, made with the `openssl` command: a CA,
//! a host certificate for `localhost` / `127.0.0.1` signed by it, a CA
//! directory hashed as the grid's `/etc/grid-security/certificates` is
//! (`openssl rehash`), and a PEM bundle of the CA.

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
                "/CN=xroot test CA",
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
        let (key, csr, cert, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
            format!("{name}.ext"),
        );
        openssl(
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                &format!("/CN={cn}"),
            ],
            d,
        );
        std::fs::write(
            d.join(&ext),
            format!("subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"),
        )
        .unwrap();
        if days > 0 {
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
        } else {
            // already expired (openssl 3.0's x509 cannot set the dates; ca can)
            let db = d.join(format!("{name}.db"));
            std::fs::create_dir_all(&db).unwrap();
            std::fs::write(db.join("index.txt"), "").unwrap();
            std::fs::write(db.join("serial"), "1000\n").unwrap();
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
                    "-startdate",
                    "20000101000000Z",
                    "-enddate",
                    "20000102000000Z",
                ],
                d,
            );
        }
        // readable by the unprivileged user the stock server runs as
        for f in [&key, &cert] {
            let _ = Command::new("chmod").arg("a+r").arg(d.join(f)).status();
        }
        (d.join(cert), d.join(key))
    }
}
