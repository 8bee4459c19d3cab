//! Serves a local directory to stock XRootD clients (`xrdcp`, `xrdfs`, the
//! Python bindings, ROOT): `xroot_tools::serve` (its documentation lists
//! the flags).
//!
//! ```text
//! cargo run --example serve -- [--port P] [--bind ADDR] [--readv-concurrency N] \
//!     [--auth host,unix,sss,ztn] [--sss-keytab FILE] \
//!     [--token-issuer ISSUER=JWKS_FILE_OR_URL]... [--token-audience AUD]... [--token-leeway SECS] \
//!     [--tls-cert FILE --tls-key FILE [--tls capable|login|session|data|all] [--tls-ca-dir DIR]] \
//!     [--role server --manager HOST:CMSPORT]... [--read-only] [--metrics ADDR] [-v] DIR
//! cargo run --example serve -- --role manager --manager HOST:CMSPORT [--port P]
//! xrdcp root://127.0.0.1:1094//file.root /tmp/
//! ```

fn main() -> std::process::ExitCode {
    xroot_tools::serve::main()
}
