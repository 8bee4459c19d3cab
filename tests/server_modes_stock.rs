//! The permission bits `kXR_chmod`, `kXR_mkdir` and `kXR_open` (creating)
//! leave on disk, through our client against the stock xrootd 5.5.3 and
//! against our server on twin directories: the same modes. The stock
//! server maps a request's mode with XrdXrootdProtocol's `mapMode`, which
//! has every bit of `XOpenRequestMode` but `kXR_ow`: nothing it makes or
//! changes is writable by others (mkdir adds owner rwx, open owner rw).
//!
//! This test binary runs with umask 0 (set by its one test before either
//! server starts, and inherited by the stock one), so that what a server
//! asks for at mkdir and open is what lands on disk.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use xroot::client::{Client, Config, OpenFlags};
use xroot::server::LocalFs;
use xroot_testkit::stock::StockServer;

extern "C" {
    /// POSIX `umask(2)` (`mode_t` is a `u32` on Linux).
    fn umask(mask: u32) -> u32;
}

/// The changes, each with the mode the stock server leaves (as seen by
/// hand with `xrdfs chmod /f rwxrwxrwx`, `xrdfs mkdir -mrwxrwxrwx` and the
/// Python client's `File.open(.., OpenFlags.NEW, mode)`).
const CHMODS: [(&str, u32, u32); 4] = [
    ("/c777", 0o777, 0o775),
    ("/c666", 0o666, 0o664),
    ("/c002", 0o002, 0o000),
    ("/c751", 0o751, 0o751),
];
const MKDIRS: [(&str, u32, u32); 4] = [
    ("/d777", 0o777, 0o775),
    ("/d757", 0o757, 0o755),
    ("/d002", 0o002, 0o700),
    ("/d750", 0o750, 0o750),
];
const CREATES: [(&str, u16, u32); 4] = [
    ("/o777", 0o777, 0o775),
    ("/o666", 0o666, 0o664),
    ("/o002", 0o002, 0o600),
    ("/o640", 0o640, 0o640),
];

fn mode(root: &Path, path: &str) -> u32 {
    std::fs::metadata(root.join(&path[1..]))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .permissions()
        .mode()
        & 0o7777
}

/// A directory to export with the files to chmod (made before the stock
/// server starts: as root, it is handed the tree then).
fn populated() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (p, _, _) in CHMODS {
        std::fs::write(dir.path().join(&p[1..]), b"x").unwrap();
    }
    dir
}

/// Runs every change of the tables against the server at `url` (exporting
/// `root`); returns `(path, asked, mode on disk)` for each.
async fn changes(url: &str, root: &Path) -> Vec<(&'static str, u32, u32)> {
    let client = Client::with_config(Config {
        request_timeout: Duration::from_secs(60),
        ..Config::default()
    });
    let fs = client.fs(url).unwrap();
    let mut seen = Vec::new();
    for (p, asked, _) in CHMODS {
        fs.chmod(p, asked)
            .await
            .unwrap_or_else(|e| panic!("chmod {p}: {e}"));
        seen.push((p, asked, mode(root, p)));
    }
    for (p, asked, _) in MKDIRS {
        fs.mkdir(p, false, asked)
            .await
            .unwrap_or_else(|e| panic!("mkdir {p}: {e}"));
        seen.push((p, asked, mode(root, p)));
    }
    for (p, asked, _) in CREATES {
        let f = client
            .open(&format!("{url}/{p}"), OpenFlags::NEW.with_mode(asked))
            .await
            .unwrap_or_else(|e| panic!("open {p}: {e}"));
        f.close().await.unwrap();
        seen.push((p, u32::from(asked), mode(root, p)));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn chmod_mkdir_and_open_leave_the_modes_the_stock_server_leaves() {
    // SAFETY: umask(2) cannot fail and touches no memory; this binary's
    // only test sets it before it creates anything
    unsafe { umask(0) };
    let (theirs_dir, ours_dir) = (populated(), populated());
    let Some(stock) = StockServer::start(theirs_dir.path(), &[]) else {
        return;
    };
    let addr = xroot_testkit::ours::serve(LocalFs::new(ours_dir.path()).unwrap()).await;

    let theirs = changes(
        &format!("root://127.0.0.1:{}", stock.port),
        theirs_dir.path(),
    )
    .await;
    let ours = changes(&format!("root://{addr}"), ours_dir.path()).await;
    let fmt = |list: &[(&str, u32, u32)]| {
        list.iter()
            .map(|(p, asked, got)| format!("{p} {asked:03o} -> {got:03o}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(fmt(&ours), fmt(&theirs), "ours, then the stock server's");
    let want: Vec<_> = CHMODS
        .iter()
        .chain(&MKDIRS)
        .copied()
        .chain(CREATES.iter().map(|&(p, a, w)| (p, u32::from(a), w)))
        .collect();
    assert_eq!(
        fmt(&theirs),
        fmt(&want),
        "the stock server's, then the table's"
    );
}
