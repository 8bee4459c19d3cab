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
pub mod monitor;
pub mod serve;
pub mod summary;
pub mod tls;
pub mod tpc_pull;
pub mod xcache;
pub mod xrdcp;
pub mod xrdfs;
pub mod xrdtoken;

/// How the client tools (`xrdcp`, `xrdfs`) authenticate, the end of their
/// `--help`: what xroot-client reads from the environment, as the stock
/// client does.
pub const CLIENT_AUTH_HELP: &str = "\
Authentication: the server's offer decides, in its order, among host, unix,
sss, ztn and gsi (XrdSecPROTOCOL=LIST limits the protocols used).
  sss  the keytab XrdSecSSSKT (else the server's, else ~/.xrd/sss.keytab)
  ztn  a token (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>,
       /tmp/bt_u<uid>), sent over TLS only
  gsi  the X509 proxy X509_USER_PROXY (default /tmp/x509up_u<uid>, as
       xrdgsiproxy init or voms-proxy-init write it), else the certificate
       X509_USER_CERT and key X509_USER_KEY (default ~/.globus/usercert.pem,
       userkey.pem); the server's certificate is checked against the CA
       directory X509_CERT_DIR (default /etc/grid-security/certificates)";

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
