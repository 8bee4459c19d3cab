//! A throw-away WLCG token issuer for trying `ztn`: `xroot_tools::xrdtoken`
//! (its documentation lists the flags and the files).
//!
//! ```text
//! cargo run --example xrdtoken -- issuer --dir DIR [--issuer URL] [--kid ID]
//! cargo run --example xrdtoken -- mint --dir DIR --scope "storage.read:/ storage.modify:/x" \
//!     [--aud AUD] [--sub SUB] [--lifetime SECS] [--age SECS]
//! ```

fn main() -> std::process::ExitCode {
    xroot_tools::xrdtoken::main()
}
