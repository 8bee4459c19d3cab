//! A small `xrdfs`: namespace and query commands against an XRootD server,
//! in the shape of the stock tool (5.5.3): `xroot_tools::xrdfs` (its
//! documentation gives the commands, what they print and the exit codes).
//!
//! ```text
//! cargo run --example xrdfs -- root://127.0.0.1:1094 ls -l /dir
//! xrdfs URL|[USER@]HOST[:PORT] COMMAND
//!   ls [-l] [-R] PATH            stat [-q FLAGS] PATH      mkdir [-p] PATH
//!   rm PATH | rmdir PATH | mv A B                          chmod PATH rwxr-x---
//!   truncate PATH LENGTH         cat [-o LOCAL] PATH...    tail [-c BYTES] [-f] PATH
//!   locate [-n] [-r] [-d] [-m] [-i] [-p] PATH              spaceinfo PATH
//!   query checksum PATH[?cks.type=ALG] | query config KEY | query stats WHAT
//!   query space PATH
//! ```

fn main() -> std::process::ExitCode {
    xroot_tools::xrdfs::main()
}
