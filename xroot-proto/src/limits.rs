//! Protocol limits (`XrdProto` constants in XProtocol.hh, PROTOCOL.md §10).

/// `maxRvecsz`: most elements in one `kXR_readv` (and `kXR_pgreadv`).
#[doc(alias = "maxRvecsz")]
pub const MAX_READV_ELEMENTS: usize = 1024;
/// `maxRvecln`: most payload bytes of a `kXR_readv` request.
#[doc(alias = "maxRvecln")]
pub const MAX_READV_LIST_BYTES: usize = MAX_READV_ELEMENTS * READ_LIST_LEN;
/// `maxRVdsz`: most bytes one readv element may ask for (2 MiB − 16).
#[doc(alias = "maxRVdsz")]
pub const MAX_READV_ELEMENT: u32 = 2_097_136;
/// Most bytes a client sends in one readv: the sum of the element lengths
/// plus 16 bytes per element at most `0x7fffffff`, which every server
/// accepts. xrootd 5.5.3 refuses anything larger (do_ReadV: "Total readv
/// transfer is too large", `kXR_NoMemory`), so 1024 elements of the maximum
/// size (exactly 2 GiB) must be split for it.
pub const MAX_READV_TOTAL: u64 = 0x7fff_ffff;
/// Most bytes a server accepts in one readv, counted as for
/// [`MAX_READV_TOTAL`]: exactly 2 GiB (`0x80000000`), as current xrootd's
/// do_ReadV does since xrootd#2614, so that 1024 elements of the maximum
/// size — what a client that fills `readv_iov_max` × `readv_ior_max`
/// sends — are served; one byte more is `kXR_NoMemory`.
pub const MAX_READV_TOTAL_ACCEPTED: u64 = 0x8000_0000;
/// `maxWvecsz`: most elements in one `kXR_writev`.
#[doc(alias = "maxWvecsz")]
pub const MAX_WRITEV_ELEMENTS: usize = 1024;
/// Most bytes one `kXR_writev` element may carry (the server's `maxTransz`, 2 MiB).
pub const MAX_WRITEV_ELEMENT: u32 = 2 << 20;
/// `maxClonesz`: most elements in one `kXR_clone`.
#[doc(alias = "maxClonesz")]
pub const MAX_CLONE_ELEMENTS: usize = 1024;
/// Bytes of one `read_list` / `readahead_list` / `write_list` element.
pub const READ_LIST_LEN: usize = 16;
/// Bytes of one `clone_list` element.
pub const CLONE_LIST_LEN: usize = 32;
/// `kXR_pgMaxEpr`: most checksum errors reported per pgwrite request.
#[doc(alias = "kXR_pgMaxEpr")]
pub const PG_MAX_ERRORS_PER_REQUEST: usize = 128;
/// Pages in one synchronous pgread frame from xrootd 5.5.3 (512, 2 MiB of data).
pub const PGREAD_FRAME_PAGES: usize = 512;
/// The server's default `maxBuffsz` / `maxTransz`: 2 MiB.
pub const MAX_TRANSFER: usize = 2 << 20;
/// Most attributes in one `kXR_fattr` request.
pub const MAX_FATTR_ATTRS: usize = 16;
/// Longest `kXR_fattr` attribute name, in bytes.
pub const MAX_FATTR_NAME: usize = 248;
/// Longest `kXR_fattr` attribute value, in bytes.
pub const MAX_FATTR_VALUE: usize = 65536;
/// Largest `kXR_sigver` signature, in bytes.
pub const MAX_SIGNATURE: usize = 64;
/// Most substreams bound to one session.
pub const MAX_BOUND_STREAMS: usize = 15;
