//! Marks the interop tests (of the package whose build script calls
//! [`emit`]) whose stock peer is not installed as ignored.
//!
//! Each probe below that fails sets a `missing_*` cfg for this package's
//! targets (the tests put `#[cfg_attr(missing_xrootd, ignore = "...")]` on
//! every test that needs the peer), so `cargo test` reports them as ignored,
//! with the reason, instead of passing them. Under `CI=true` no peer's cfg
//! is set: the tests run and fail on the missing peer, so CI cannot pass by
//! skipping.
//!
//! Two probes are of the machine, not of a peer one could install, and hold
//! under `CI=true` too: `missing_ipv6` (no TCP listener binds `[::1]:0`)
//! and `missing_user_xattrs` (a file in `std::env::temp_dir()`, where the
//! tests put the stock server's data, takes no `user.` extended attribute,
//! in which the stock server keeps the checksums it computed).
//!
//! `XROOT_TESTS_WITHOUT=xrootd,uproot` (probe names without `missing_`)
//! sets those cfgs whatever is installed, to see what a machine without
//! them reports.
//!
//! The peer probes look at `PATH` and at fixed install locations only. When
//! one fails, the build script runs again after a directory it would be
//! installed into changes (e.g. `apt-get install xrootd-server` touching
//! `/usr/bin`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The SciTokens authorization plugin of `xrootd-scitokens-plugins`.
pub const SCITOKENS_PLUGIN: &str = "/usr/lib/x86_64-linux-gnu/libXrdAccSciTokens-5.so";
/// The venv `scripts/test` makes for the uproot and Parquet tests.
const UPROOT_VENV_PYTHON: &str = "/opt/xroot-uproot/bin/python";

/// Prints the build-script lines: the cfgs of the missing peers, their
/// declarations and when to run again.
pub fn emit() {
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=XROOT_UPROOT_PYTHON");
    println!("cargo::rerun-if-env-changed=XROOT_TESTS_WITHOUT");
    println!("cargo::rerun-if-env-changed=TMPDIR");
    let pretend = std::env::var("XROOT_TESTS_WITHOUT").unwrap_or_default();
    let pretend: Vec<&str> = pretend.split(',').map(str::trim).collect();
    let probes = [
        "missing_xrootd",
        "missing_xrootd_client",
        "missing_stock_python",
        "missing_uproot",
        "missing_scitokens",
        "missing_openssl",
        "missing_sqlite3",
        "missing_ipv6",
        "missing_user_xattrs",
    ];
    for cfg in probes {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let on_path = |program: &str| path_dirs.iter().any(|d| d.join(program).is_file());
    let pretended = |cfg: &str| pretend.contains(&cfg.trim_start_matches("missing_"));
    let missing = |cfg: &str, found: bool, watch: &[&Path]| {
        if ci || (found && !pretended(cfg)) {
            return;
        }
        println!("cargo::rustc-cfg={cfg}");
        for dir in watch.iter().filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    };
    // of the machine: CI=true changes nothing
    for (cfg, found) in [
        ("missing_ipv6", ipv6_loopback()),
        ("missing_user_xattrs", user_xattrs()),
    ] {
        if !found || pretended(cfg) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    let path_watch: Vec<&Path> = path_dirs.iter().map(PathBuf::as_path).collect();

    missing(
        "missing_xrootd",
        ["xrootd", "cmsd", "xrdsssadmin"].iter().all(|p| on_path(p)),
        &path_watch,
    );
    missing(
        "missing_xrootd_client",
        ["xrdcp", "xrdfs"].iter().all(|p| on_path(p)),
        &path_watch,
    );
    missing(
        "missing_scitokens",
        Path::new(SCITOKENS_PLUGIN).is_file() && on_path("scitokens-verify"),
        &path_watch,
    );
    missing("missing_openssl", on_path("openssl"), &path_watch);
    missing("missing_sqlite3", on_path("sqlite3"), &path_watch);
    missing(
        "missing_stock_python",
        imports("/usr/bin/python3", "XRootD.client"),
        &[Path::new("/usr/lib/python3/dist-packages")],
    );
    let venv = std::env::var("XROOT_UPROOT_PYTHON").unwrap_or_else(|_| UPROOT_VENV_PYTHON.into());
    missing(
        "missing_uproot",
        imports(&venv, "uproot, fsspec_xrootd, XRootD.client, pyarrow"),
        &[
            Path::new("/opt"),
            Path::new(&venv)
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("/opt")),
        ],
    );
}

/// Whether `python -c "import MODULES"` succeeds.
fn imports(python: &str, modules: &str) -> bool {
    Command::new(python)
        .args(["-c", &format!("import {modules}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a TCP listener binds the IPv6 loopback.
fn ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

/// Whether a file in the temp dir takes a `user.` extended attribute (set,
/// then removed, with the file).
#[cfg(target_os = "linux")]
fn user_xattrs() -> bool {
    use std::ffi::{c_char, c_int, c_void, CString};
    use std::os::unix::ffi::OsStrExt;
    extern "C" {
        fn setxattr(
            path: *const c_char,
            name: *const c_char,
            value: *const c_void,
            size: usize,
            flags: c_int,
        ) -> c_int;
    }
    let file = std::env::temp_dir().join(format!("xroot-xattr-probe-{}", std::process::id()));
    if std::fs::write(&file, b"").is_err() {
        return false;
    }
    let path = CString::new(file.as_os_str().as_bytes()).unwrap();
    let value = b"1";
    // SAFETY: NUL-terminated strings and a value of `size` bytes, all alive
    // for the call
    let set = unsafe {
        setxattr(
            path.as_ptr(),
            c"user.xroot.probe".as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    let _ = std::fs::remove_file(&file);
    set == 0
}

/// Elsewhere the stock server's tests do not run anyway.
#[cfg(not(target_os = "linux"))]
fn user_xattrs() -> bool {
    true
}
