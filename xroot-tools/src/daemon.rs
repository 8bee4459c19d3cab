//! What the long-running examples (`serve`, `xcache`) share: logging to
//! stderr and a graceful stop on Ctrl-C or SIGTERM.

use std::io::{self, IsTerminal};

use tokio::signal::unix::{signal, SignalKind};
use xroot_server::ServerHandle;

/// `error` with what failed in front (`cannot serve /x: No such file or
/// directory`), of the same kind.
pub fn failed(what: impl std::fmt::Display, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

/// The exit of a daemon's `main`: 0, or the error printed as
/// `NAME: error` (not its debug form) and 1.
pub fn exit(name: &str, result: io::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Logs to stderr through `tracing`: info events, and debug ones too when
/// `verbose`.
pub fn init_logging(verbose: bool) {
    let level = if verbose {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .init();
}

/// Shuts `handle`'s server down gracefully on the first Ctrl-C or SIGTERM;
/// `tool` (`"serve"`, `"xcache"`) names the target of the log line.
///
/// Errors: the SIGTERM handler cannot be installed.
pub fn shutdown_on_signal(tool: &'static str, handle: ServerHandle) -> io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        crate::tool_event!(tool, "daemon", info, "shutting down");
        handle.shutdown();
    });
    Ok(())
}
