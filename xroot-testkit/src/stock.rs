//! Starts the stock C++ xrootd (Debian's `xrootd-server`) on loopback for a
//! test: a config written into a temp dir, a free port, stopped by PID on drop.
//!
//! A test that needs the stock xrootd is marked
//! `#[cfg_attr(missing_xrootd, ignore = "...")]`: on a machine without it
//! the build script sets that cfg ([`crate::probes`]), so `cargo
//! test` reports the test as ignored, with the reason. The run-time checks
//! here ([`xrootd_available`], [`xrootd_client_available`],
//! [`stock_python_available`], [`program_available`]) stay behind that:
//! when `CI=true` (no cfg is set then) a missing peer is a test failure;
//! elsewhere, should the build script not have seen it missing, the test
//! returns early printing "skipping: ...".

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running stock `xrootd` data server exporting a directory.
pub struct StockServer {
    child: Child,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// The exported directory (the server's `oss.localroot`).
    pub data: PathBuf,
    /// Config, logs and admin files.
    pub state: tempfile::TempDir,
}

/// Whether the stock server is installed. Panics when it is not and the
/// environment says `CI=true`, so CI cannot pass by skipping.
pub fn xrootd_available() -> bool {
    program_available(
        "xrootd",
        &["-v"],
        "the stock xrootd is not installed (apt-get install xrootd-server)",
    )
}

/// Whether the stock clients `xrdcp` and `xrdfs` are installed. Panics
/// when they are not and the environment says `CI=true`.
pub fn xrootd_client_available() -> bool {
    // xrdfs without arguments prints its usage (with one, it reads commands)
    [("xrdcp", &["--version"][..]), ("xrdfs", &[])]
        .iter()
        .all(|(tool, args)| {
            program_available(
                tool,
                args,
                &format!("the stock {tool} is not installed (apt-get install xrootd-client)"),
            )
        })
}

/// Whether `/usr/bin/python3` imports the stock Python client
/// (`XRootD.client`, Debian's `python3-xrootd`). When it cannot, panics
/// under `CI=true`, else prints "skipping: ..." and returns `false`.
pub fn stock_python_available() -> bool {
    let found = Command::new("/usr/bin/python3")
        .args(["-c", "import XRootD.client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let missing = "the stock Python client is not installed (apt-get install python3-xrootd)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {missing}");
        }
        eprintln!("skipping: {missing}");
    }
    found
}

/// Whether `program ARGS` runs: it exists and can be started. When it
/// cannot, panics with `missing` under `CI=true`, else prints
/// "skipping: `missing`" and returns `false`.
pub fn program_available(program: &str, args: &[&str], missing: &str) -> bool {
    let found = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {missing}");
        }
        eprintln!("skipping: {missing}");
    }
    found
}

/// The stock's native third-party copy, both roles, grants living `ttl`
/// seconds (`ofs.tpc ttl DEFAULT MAX`; the stock default is 15), the copy
/// program the stock `xrdcp --server`, a failed copy's file removed
/// (`autorm`). The server must run with `-I v4` (as [`StockServer`]
/// does) and be named `localhost` in the client's URLs: otherwise it sees
/// its clients as `[::ffff:127.0.0.1]`, which does not resolve, and the
/// source cannot match `tpc.dst=localhost`.
pub fn tpc_config(ttl: u32) -> String {
    format!(
        "ofs.tpc autorm ttl {ttl} {} pgm /usr/bin/xrdcp --server",
        ttl + 1
    )
}

/// What the stock `xrdfs 127.0.0.1:PORT query checksum PATH?cks.type=ALG`
/// answers: the value (its `ALG VALUE` line's second word). Panics when
/// xrdfs fails or answers another algorithm.
pub async fn query_checksum(port: u16, path: &str, alg: &str) -> String {
    let args = [
        format!("127.0.0.1:{port}"),
        "query".into(),
        "checksum".into(),
        format!("{path}?cks.type={alg}"),
    ];
    let out = crate::tools::run_ok("xrdfs", &args).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (name, value) = text.trim().split_once(' ').expect("ALG VALUE");
    assert_eq!(name, alg);
    value.to_string()
}

/// A port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral port")
        .port()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// When the tests run as root (which xrootd and cmsd refuse), makes `cmd`
/// drop to the `xrootd` user (else `nobody`) with `-R` and hands it `dirs`
/// (chown -R, and a+rx so that it can reach them). Otherwise does nothing.
pub fn run_unprivileged(cmd: &mut Command, dirs: &[&Path]) {
    if !running_as_root() {
        return;
    }
    let user = if Command::new("id")
        .arg("xrootd")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
    {
        "xrootd"
    } else {
        "nobody"
    };
    for p in dirs {
        let _ = Command::new("chown").args(["-R", user]).arg(p).status();
        let _ = Command::new("chmod").args(["a+rx"]).arg(p).status();
    }
    cmd.args(["-R", user]);
}

impl StockServer {
    /// Starts `xrootd` exporting `data` (which must exist), with adler32 and
    /// crc32c checksums and `extra` config lines appended. Returns `None`
    /// when xrootd is missing outside CI. Panics if it does not come up.
    pub fn start(data: &Path, extra: &[&str]) -> Option<StockServer> {
        StockServer::start_on(free_port(), data, extra)
    }

    /// As [`StockServer::start`], with native third-party copy in both
    /// roles ([`tpc_config`]): grants live `ttl` seconds, at most `ttl + 1`
    /// when a client asks.
    pub fn start_tpc(data: &Path, ttl: u32, extra: &[&str]) -> Option<StockServer> {
        let tpc = tpc_config(ttl);
        let lines: Vec<&str> = std::iter::once(tpc.as_str())
            .chain(extra.iter().copied())
            .collect();
        StockServer::start(data, &lines)
    }

    /// `root://localhost:PORT/` and `path` (which starts with `/`): the
    /// URL a third-party copy names this server by (see
    /// [`StockServer::start_tpc`]).
    pub fn tpc_url(&self, path: &str) -> String {
        format!("root://localhost:{}/{path}", self.port)
    }

    /// As [`StockServer::start`], on `port` of 127.0.0.1 (e.g. the port of
    /// a server that died, to bring it back where its clients look for it).
    pub fn start_on(port: u16, data: &Path, extra: &[&str]) -> Option<StockServer> {
        if !xrootd_available() {
            return None;
        }
        let state = tempfile::tempdir().expect("temp dir");
        let run = state.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        let mut cfg = format!(
            "xrd.port {port}\nxrd.network nodnr\nall.export /\noss.localroot {}\n\
             all.adminpath {}\nall.pidpath {}\nxrootd.chksum max 4 adler32 crc32c\n",
            data.display(),
            run.display(),
            run.display()
        );
        for line in extra {
            cfg.push_str(line);
            cfg.push('\n');
        }
        let cfg_path = state.path().join("xrootd.cfg");
        std::fs::write(&cfg_path, cfg).unwrap();
        let log = state.path().join("xrootd.log");
        // xrootd 5.5.3 has been seen to die of SIGSEGV while starting, before
        // it logs anything, when several start at once: try again then
        let mut state = state;
        for attempt in 1..=3 {
            let mut cmd = Command::new("xrootd");
            cmd.args(["-I", "v4", "-n", "test", "-c"])
                .arg(&cfg_path)
                .arg("-l")
                .arg(&log)
                .current_dir(&run)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            run_unprivileged(&mut cmd, &[state.path(), data]);
            let child = cmd.spawn().expect("spawn xrootd");
            let mut server = StockServer {
                child,
                port,
                data: data.to_path_buf(),
                state,
            };
            match server.wait_ready() {
                Ok(()) => return Some(server),
                Err(crash) if attempt < 3 => {
                    eprintln!("xrootd crashed while starting ({crash}); starting it again");
                    // keep the config for the next attempt
                    state = std::mem::replace(&mut server.state, tempfile::tempdir().unwrap());
                }
                Err(crash) => panic!("xrootd crashed while starting, 3 times: {crash}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Waits until this instance says it is up and its port answers.
    /// Errors: the process was killed by a signal before that (the caller
    /// may start it again). Panics when it fails otherwise or takes 30 s.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
                    return Err(format!("signal {signal}; log:\n{}", self.log_tail()));
                }
                panic!("xrootd exited with {status}; log:\n{}", self.log_tail());
            }
            // the port answering is not enough: another test's server may
            // hold it if two tests drew the same free port; our own log must
            // say that this instance came up
            if self.log_says("initialization completed")
                && TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return Ok(());
            }
            if self.log_says("initialization failed") {
                panic!("xrootd failed to start; log:\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "xrootd not listening on {} after 30 s; log:\n{}",
            self.port,
            self.log_tail()
        );
    }

    /// The pid of the serving process, from the pid file xrootd writes in
    /// its admin dir (the process we spawned forks it).
    pub fn server_pid(&self) -> Option<u32> {
        walk(self.state.path())
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == "xrootd.pid"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| t.trim().parse().ok())
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing is
    /// answered, until [`StockServer::kill`].
    pub fn freeze(&self) {
        let status = Command::new("kill")
            .args(["-STOP", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -STOP xrootd");
    }

    /// Kills the server (SIGKILL) and reaps it: its connections are closed
    /// by the kernel, its port freed.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log_says(&self, needle: &str) -> bool {
        walk(self.state.path())
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(needle)))
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        for entry in walk(self.state.path()) {
            if entry.extension().is_some_and(|e| e == "log") {
                if let Ok(t) = std::fs::read_to_string(&entry) {
                    let lines: Vec<_> = t.lines().collect();
                    text.push_str(&lines[lines.len().saturating_sub(30)..].join("\n"));
                }
            }
        }
        text
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            // file_type() does not follow symlinks: the admin dir links into /proc
            match e.file_type() {
                Ok(t) if t.is_dir() => out.extend(walk(&e.path())),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out
}

impl Drop for StockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system) that process `pid` has used, from
/// /proc/PID/stat (100 clock ticks per second).
pub fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // utime and stime are fields 14 and 15; count after the command name
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
