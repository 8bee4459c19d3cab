//! `xrdcp`: copies files to, from and between XRootD servers with
//! xroot-client, in the shape of the stock tool: `xroot_tools::xrdcp` (its
//! documentation gives the flags, the environment and the exit codes).
//!
//! ```text
//! cargo run --release --example xrdcp -- [--cksum adler32|crc32c|md5[:print]]
//!     [--streams N] [--connections N] [--parallel N] [--chunks N] [-f] [-N] [-s]
//!     [-r] [--retry N] SRC... DST
//! ```

fn main() -> std::process::ExitCode {
    xroot_tools::xrdcp::main()
}
