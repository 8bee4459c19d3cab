//! The tools of the xroot workspace as a library: what the examples
//! `serve`, `xcache`, `xrdcp`, `xrdfs` and `xrdtoken` do, each a module
//! whose `main` the example calls, and what the long-running ones share (flags for
//! authentication, TLS and clusters, the `--config` file, logging and
//! signals, metrics). Unpublished (`publish = false`): the facade's
//! examples, tests and benches take it as a dev-dependency, so a test
//! starts a tool in its own process (`serve::start`, `xcache::start`) and
//! the tools' parsers and exit codes have unit tests here.
//!
//! The examples keep their names, flags and output: `cargo run --example
//! serve -- ...` runs [`serve::main`].

pub mod auth;
pub mod cluster;
pub mod config_file;
pub mod daemon;
pub mod metrics;
pub mod serve;
pub mod summary;
pub mod tls;
pub mod xcache;
pub mod xrdcp;
pub mod xrdfs;
pub mod xrdtoken;

/// A `tracing` event from a module `serve` and `xcache` share, with the
/// target it had when the module was compiled into each example
/// (`serve::daemon`, `xcache::tls`), so their logs read as before.
#[macro_export]
#[doc(hidden)]
macro_rules! tool_event {
    ($tool:expr, $module:literal, $level:ident, $($arg:tt)+) => {
        match $tool {
            "xcache" => tracing::$level!(target: concat!("xcache::", $module), $($arg)+),
            _ => tracing::$level!(target: concat!("serve::", $module), $($arg)+),
        }
    };
}
