//! `sss` keytabs made by the stock `xrdsssadmin`, and the stock xrootd
//! with `sss` only: what the `sss` interop tests share.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::stock::{program_available, xrootd_available, StockServer};

/// Whether `xrdsssadmin` and the stock server are installed (panics under
/// `CI=true` when they are not).
pub fn tools_available() -> bool {
    if !xrootd_available() {
        return false;
    }
    program_available(
        "xrdsssadmin",
        &["list", "/nonexistent"],
        "xrdsssadmin is not installed",
    )
}

/// `xrdsssadmin -k NAME -u USER -g GROUP add FILE`, answering `y` to its
/// question whether to create the file. Panics when it fails.
pub fn admin_add(file: &Path, name: &str, user: &str, group: &str) {
    let mut child = Command::new("xrdsssadmin")
        .args(["-k", name, "-u", user, "-g", group, "add"])
        .arg(file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("xrdsssadmin");
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    assert!(child.wait().unwrap().success(), "xrdsssadmin add {name}");
}

/// The stock server with `sss` only (`sec.protocol sss -s FILE`,
/// `sec.protbind * only sss`, `xrootd.trace auth`) on `data`, its keytab a
/// copy of `keytab` owned by the server's user (mode 0600) in the temp dir
/// returned with it. `None` when the stock xrootd is missing outside CI.
pub fn stock_server(data: &Path, keytab: &Path) -> Option<(StockServer, tempfile::TempDir)> {
    let ktdir = tempfile::tempdir().unwrap();
    let kt = ktdir.path().join("server.kt");
    std::fs::copy(keytab, &kt).unwrap();
    std::fs::set_permissions(&kt, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = Command::new("true");
    crate::stock::run_unprivileged(&mut cmd, &[ktdir.path()]);
    let lines = [
        "xrootd.seclib libXrdSec.so".to_string(),
        format!("sec.protocol sss -s {}", kt.display()),
        "sec.protbind * only sss".to_string(),
        "xrootd.trace auth".to_string(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let server = StockServer::start(data, &lines)?;
    Some((server, ktdir))
}
