//! A stock XRootD cluster on loopback for a test: one manager (`xrootd` +
//! `cmsd`, `all.role manager`) and data servers (`xrootd` + `cmsd`,
//! `all.role server`), all from one config file whose `if named` blocks pick
//! the instance (`-n mgr|ds1|ds2…`), on free ports. Opens at the manager are
//! redirected to a data server that holds the file.
//!
//! The cluster takes several seconds to assemble (each data server's cmsd
//! logs in to the manager's); [`Cluster::start`] returns once the manager's
//! cmsd has logged in every server and the manager accepts connections.
//! Every process is stopped by its PID on drop.
//!
//! Like [`crate::stock`]: a test that starts one is marked ignored where
//! xrootd is missing (`missing_xrootd`), and fails on it under `CI=true`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::stock::{free_port, run_unprivileged, xrootd_available};

/// One data server of a [`Cluster`].
pub struct DataServer {
    /// Its xrootd's TCP port on 127.0.0.1.
    pub port: u16,
    /// The directory it exports (its `oss.localroot`).
    pub data: PathBuf,
}

/// A running manager and its data servers.
pub struct Cluster {
    /// The manager's xrootd port on 127.0.0.1 (where clients connect).
    pub port: u16,
    /// The manager's cmsd port.
    pub cms_port: u16,
    /// The data servers, `ds1` first.
    pub servers: Vec<DataServer>,
    /// Config, logs, admin files and the exported directories.
    pub state: tempfile::TempDir,
    children: Vec<(String, Child)>,
}

impl Cluster {
    /// Starts a manager and `servers` data servers, calls `fill(i, dir)` to
    /// place files in data server `i`'s exported directory (before it
    /// starts), and waits until the cluster has assembled. Returns `None`
    /// when xrootd is missing outside CI. Panics if it does not assemble
    /// within 60 s, with the logs.
    pub fn start(servers: usize, fill: impl Fn(usize, &Path)) -> Option<Cluster> {
        Cluster::start_with(servers, &[], fill)
    }

    /// As [`Cluster::start`], with `manager` lines in the manager's part of
    /// the config (both its `xrootd` and its `cmsd` read them), such as an
    /// `xrootd.monitor` directive.
    pub fn start_with(
        servers: usize,
        manager: &[&str],
        fill: impl Fn(usize, &Path),
    ) -> Option<Cluster> {
        if !xrootd_available() {
            return None;
        }
        let state = tempfile::tempdir().expect("temp dir");
        let root = state.path();
        let (port, cms_port) = (free_port(), free_port());
        let servers: Vec<DataServer> = (1..=servers)
            .map(|i| {
                let data = root.join(format!("data/ds{i}"));
                std::fs::create_dir_all(&data).unwrap();
                fill(i - 1, &data);
                DataServer {
                    port: free_port(),
                    data,
                }
            })
            .collect();
        for d in ["run", "logs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let cfg = root.join("cluster.cfg");
        std::fs::write(&cfg, config(root, port, cms_port, &servers, manager)).unwrap();

        let mut cluster = Cluster {
            port,
            cms_port,
            servers,
            children: Vec::new(),
            state,
        };
        let mut names = vec!["mgr".to_string()];
        names.extend((1..=cluster.servers.len()).map(|i| format!("ds{i}")));
        for name in &names {
            for exe in ["cmsd", "xrootd"] {
                let child = cluster.spawn(exe, name, &cfg);
                cluster.children.push((format!("{name} {exe}"), child));
            }
        }
        cluster.wait_ready();
        Some(cluster)
    }

    fn spawn(&self, exe: &str, name: &str, cfg: &Path) -> Child {
        let root = self.state.path();
        let mut cmd = Command::new(exe);
        cmd.args(["-I", "v4", "-n", name, "-c"])
            .arg(cfg)
            .arg("-l")
            .arg(root.join(format!("logs/{exe}.log")))
            .current_dir(root.join("run"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        run_unprivileged(&mut cmd, &[root]);
        cmd.spawn()
            .unwrap_or_else(|e| panic!("spawn {exe} -n {name}: {e}"))
    }

    /// Starts one more daemon (`exe`: `cmsd` or `xrootd`) of instance `name`
    /// with its own config: the cluster's common lines (manager, admin
    /// path, delays) and then `lines`. Stopped with the cluster.
    pub fn spawn_extra(&mut self, exe: &str, name: &str, lines: &str) {
        let root = self.state.path().to_path_buf();
        let run = root.join("run");
        let cfg = root.join(format!("{name}.cfg"));
        let text = format!(
            "all.manager 127.0.0.1:{cms}\n\
             xrd.network nodnr\n\
             all.adminpath {run}\n\
             all.pidpath {run}\n\
             cms.delay startup 1 drop 20s\n\
             cms.space min 10m 20m\n\
             {lines}\n",
            cms = self.cms_port,
            run = run.display()
        );
        std::fs::write(&cfg, text).unwrap();
        let child = self.spawn(exe, name, &cfg);
        self.children.push((format!("{name} {exe}"), child));
    }

    /// `root://127.0.0.1:PORT//path` at the manager.
    pub fn url(&self, path: &str) -> String {
        format!("root://127.0.0.1:{}/{path}", self.port)
    }

    /// Waits until the manager's cmsd has logged in every data server and
    /// the manager's xrootd accepts connections.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let exited = self
                .children
                .iter_mut()
                .find_map(|(what, c)| Some((what.clone(), c.try_wait().ok()??)));
            if let Some((what, status)) = exited {
                panic!("{what} exited with {status}; logs:\n{}", self.logs());
            }
            let joined = self.logins();
            if joined >= self.servers.len() && TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster not assembled after 60 s ({joined} of {} servers); logs:\n{}",
                self.servers.len(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many data server logins the manager's cmsd has logged
    /// ("Protocol: Primary server.PID:FD@host:PORT logged in.", one per
    /// login, so a node that logs in again counts again).
    pub fn logins(&self) -> usize {
        self.manager_cms_log()
            .lines()
            .filter(|l| l.contains("Primary server") && l.contains("logged in"))
            .count()
    }

    /// Waits until the manager's cmsd has logged `n` logins in all
    /// ([`Cluster::logins`]); panics with the logs after 60 s.
    pub fn wait_logins(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.logins() < n {
            assert!(
                Instant::now() < deadline,
                "{} of {n} logins after 60 s; logs:\n{}",
                self.logins(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The manager cmsd's log, every file of it: the daemon starts a new
    /// one at midnight (`cmsd.log.YYYYMMDD...` are the earlier ones).
    pub fn manager_cms_log(&self) -> String {
        let dir = self.state.path().join("logs/mgr");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("cmsd.log"))
            })
            .collect();
        // the current file last
        files.sort_by_key(|p| (p.extension().is_none_or(|e| e == "log"), p.clone()));
        files
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// The last lines of every log, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for name in ["mgr", "ds1", "ds2"] {
            for exe in ["cmsd", "xrootd"] {
                let path = self.state.path().join(format!("logs/{name}/{exe}.log"));
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let lines: Vec<_> = text.lines().collect();
                    out.push_str(&format!("== {}\n", path.display()));
                    out.push_str(&lines[lines.len().saturating_sub(15)..].join("\n"));
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// One config for every instance, selected by `-n` (as the reference
/// recipe `cluster.cfg` does).
fn config(
    root: &Path,
    port: u16,
    cms_port: u16,
    servers: &[DataServer],
    manager: &[&str],
) -> String {
    let run = root.join("run");
    let mut cfg = format!(
        "all.export /\n\
         all.manager 127.0.0.1:{cms_port}\n\
         xrd.network nodnr\n\
         all.adminpath {run}\n\
         all.pidpath {run}\n\
         xrootd.chksum max 4 adler32 crc32c\n\
         cms.delay startup 1 drop 20s\n\
         cms.space min 10m 20m\n\
         if named mgr\n\
         \x20  all.role manager\n\
         \x20  xrd.port {port} if exec xrootd\n\
         \x20  xrd.port {cms_port} if exec cmsd\n",
        run = run.display()
    );
    for line in manager {
        cfg.push_str(&format!("\x20  {line}\n"));
    }
    for (i, s) in servers.iter().enumerate() {
        cfg.push_str(&format!(
            "else if named ds{n}\n\
             \x20  all.role server\n\
             \x20  xrd.port {port} if exec xrootd\n\
             \x20  oss.localroot {data}\n",
            n = i + 1,
            port = s.port,
            data = s.data.display()
        ));
    }
    cfg.push_str("fi\n");
    cfg
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
        }
        for (_, child) in &mut self.children {
            let _ = child.wait();
        }
    }
}
