//! Running a program for a test, one of our examples or a stock tool, and
//! collecting what it printed and how it ended: [`run`] (blocking),
//! [`run_off_workers`] (from an async test), [`command`] to build one with
//! arguments and environment, [`stdout`], [`stderr`] and [`code`] to read
//! the result; [`run_tool`] and [`run_ok`] for stock tools under a hang
//! guard.

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

/// `program ARGS` with `env` added to the test's environment.
pub fn command<A: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[A],
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env.iter().copied());
    cmd
}

/// Runs `cmd` to its end, its standard input closed: what it printed and
/// its status. Panics, naming the command, when it cannot start.
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null());
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// [`run`] off the async runtime's worker threads.
pub async fn run_off_workers(cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || run(cmd)).await.unwrap()
}

/// What it wrote to its standard output, as text (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What it wrote to its standard error, as text (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Its exit code; -1 when a signal ended it.
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Runs a stock tool (`xrdcp`, `xrdfs`, `python3`) off the runtime's
/// worker threads, under `timeout 300` as a hang guard, with `TZ=UTC`.
pub async fn run_tool(program: &str, args: &[String]) -> Output {
    let mut cmd = command("timeout", &["300", program], &[("TZ", "UTC")]);
    cmd.args(args);
    run_off_workers(cmd).await
}

/// [`run_tool`], which must exit 0; its stdout.
pub async fn run_ok(program: &str, args: &[String]) -> Vec<u8> {
    let out = run_tool(program, args).await;
    assert!(
        out.status.success(),
        "{program} {}: {}\n{}",
        args.join(" "),
        stdout(&out),
        stderr(&out)
    );
    out.stdout
}
