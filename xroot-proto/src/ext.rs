//! The two extensions of this project, described in its protocol notes
//! (PROTOCOL.md §16, [`crate::notes`]); `kXR_pgreadv` follows M. Tadel's
//! design "Block runs, gap coalescing, vector reads, and a vector form of
//! pgRead". Stock xrootd knows neither.
//!
//! - **`kXR_pgreadv`** (request id 3033, [`crate::codes::RequestId::PGREADV`]):
//!   a `read_list` request like `kXR_readv`, answered by a `kXR_pgread`-style
//!   `kXR_status` stream whose frame offsets jump between the extents, with
//!   one Final frame for the whole request.
//! - **readv with crc32c**: a `kXR_readv` whose header sets
//!   [`READV_FLAG_CRC32C`] in byte 18 (reserved in stock xrootd) is answered
//!   with the crc32c of each element's data in the 4-byte `fhandle` slot of
//!   that element's response header.
//!
//! **Negotiation.** A server that implements an extension answers its key in
//! a `kXR_query` `kXR_Qconfig` with `1`. A stock server echoes an unknown key
//! back unchanged (PROTOCOL.md §7.7), which reads as "not supported". A client
//! must not send either extension before it has seen the key answered `1`.

/// `kXR_Qconfig` key that a server answers with `1` when it serves `kXR_pgreadv`.
pub const PGREADV_CONFIG_KEY: &str = "xroot.pgreadv";
/// `kXR_Qconfig` key that a server answers with `1` when it serves readv with
/// per-element crc32c.
pub const READV_CRC32C_CONFIG_KEY: &str = "xroot.readv_crc32c";
/// Bit in byte 18 of a `kXR_readv` header (byte 14 of its params) asking for
/// per-element crc32c in the response.
pub const READV_FLAG_CRC32C: u8 = 0x01;

/// Whether a `kXR_Qconfig` answer line for one of the keys above says yes.
pub fn config_says_supported(value: &str) -> bool {
    value.trim_end_matches(['\n', '\0']).trim() == "1"
}
