//! A caching proxy for an XRootD origin, the equivalent of the stock
//! XCache: `xroot_tools::xcache` (its documentation lists the flags).
//!
//! ```text
//! cargo run --release --example xcache -- --origin root://HOST:PORT --cache-dir DIR \
//!     [--port P] [--bind ADDR] [--block-size 4k] [--io-size 1m] [--io-gap 0] [--ram 1g] \
//!     [--prefetch BLOCKS] [--purge-low 0.90] [--purge-high 0.95] [--purge-interval 10]
//!     [--no-purge] [--auth host,unix,sss,ztn] [--sss-keytab FILE]
//!     [--token-issuer ISSUER=JWKS_FILE_OR_URL]... [--token-audience AUD]... [--token-leeway SECS]
//!     [--tls-cert FILE --tls-key FILE [--tls LEVEL] [--tls-ca-dir DIR]]
//!     [--role server --manager HOST:CMSPORT] [--metrics ADDR] [-v]
//! xrdcp root://127.0.0.1:1094//store/file.root /tmp/
//! ```

fn main() -> std::process::ExitCode {
    xroot_tools::xcache::main()
}
