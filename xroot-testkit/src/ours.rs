//! Our server for a test or bench: in-process on the caller's runtime
//! ([`serve`], [`serve_with`], or with the `serve` example's flags,
//! [`serve_example`]) or as the `serve` example's own process
//! ([`ServeProcess`], whose resident memory can be read).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use xroot_server::{Config, FileSystem, Server};

use crate::example::example_bin;

/// Serves `fs` with the default [`Config`] on a free loopback port, on a
/// task of the caller's runtime; returns the address.
pub async fn serve<F: FileSystem>(fs: F) -> SocketAddr {
    serve_with(fs, Config::default()).await
}

/// As [`serve`], with `config`.
pub async fn serve_with<F: FileSystem>(fs: F, config: Config) -> SocketAddr {
    let server = Server::bind("127.0.0.1:0", fs, config).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// The `serve` example's server, in-process on the caller's runtime:
/// `serve --port 0 FLAGS... DIR` parsed as its command line; returns the
/// address. Panics when the flags do not parse or the server cannot start.
pub async fn serve_example<S: AsRef<str>>(flags: &[S], dir: &Path) -> SocketAddr {
    let mut argv = vec!["serve".to_string(), "--port".into(), "0".into()];
    argv.extend(flags.iter().map(|f| f.as_ref().to_string()));
    argv.push(dir.to_str().expect("a UTF-8 dir").into());
    let cli = <xroot_tools::serve::Cli as clap::Parser>::try_parse_from(argv).unwrap();
    let server = xroot_tools::serve::start(&cli).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    addr
}

/// `serve --port 0 DIR` as its own process; killed on drop.
pub struct ServeProcess {
    child: Child,
    /// The address it listens on (from its first stdout line).
    pub addr: SocketAddr,
}

impl ServeProcess {
    /// Starts it and waits for its `serve listening on ADDR` line.
    pub fn start(dir: &Path) -> ServeProcess {
        ServeProcess::start_with(dir, &[])
    }

    /// `serve --port 0 ARGS... DIR`, as [`ServeProcess::start`].
    pub fn start_with(dir: &Path, args: &[&str]) -> ServeProcess {
        let child = Command::new(example_bin("serve"))
            .args(["--port", "0"])
            .args(args)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn serve");
        ServeProcess::listening(child)
    }

    /// A `serve` process started by the caller, its stdout piped: waits
    /// for its `serve listening on ADDR` line.
    pub fn listening(mut child: Child) -> ServeProcess {
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("serve listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("serve did not start: {line:?}"));
        ServeProcess { child, addr }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The peak resident set of process `pid` so far, bytes (`VmHWM` in
/// `/proc/PID/status`).
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb << 10
}
