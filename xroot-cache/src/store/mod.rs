//! The disk store: for each cached origin file, a sparse data file
//! `<root>/<path>` and a sidecar `<root>/<path>.cinfo` (its format: the
//! [`sidecar`] module).
//!
//! Guarantees: a block's data is written before its bit is set; bits become
//! durable only at [`Entry::flush`], which syncs the data first and then
//! replaces the sidecar atomically (until then the live file, below, keeps
//! them across the crash of a process, not of the machine); a page is
//! served only if its block's bit is set and its crc32c matches. So a crash
//! or a damaged file can lose cached blocks but never serves wrong bytes.
//!
//! A full disk: no block is written into an entry before the space of its
//! next sidecar is set aside (`<path>.cinfo.tmp`, which a flush writes into
//! and swaps with the sidecar), so on file systems that overwrite in place
//! the blocks written can always be indexed; a block write that fails frees
//! what it wrote (a hole is punched); a flush that still fails for want of
//! space drops and frees the blocks no sidecar on disk indexes. What is on
//! disk is thus indexed, and served after a restart.
//!
//! Processes sharing a directory: each entry's sidecar is committed, reset
//! and evicted under the entry's lock (`flock` on its data file); a commit
//! keeps the blocks other processes committed since ([`Entry::flush`]), and
//! an entry evicted by another process commits nothing more, nor one
//! reset by another for a newer origin file. Blocks written and not yet
//! committed are shared through the entry's live file (`<path>.cinfo.live`,
//! its format in `store/live.rs`), with a byte-range lock per block run: a
//! process about to fetch runs takes their locks ([`Entry::try_claim`]),
//! tries again while another one fetches the same blocks, and then reads
//! them from the store instead.
//!
//! The directory belongs to the store: [`purge`](crate::purge::purge) treats
//! every file under it as cache content.

mod bitmap;
mod data;
mod entry;
mod live;
pub mod sidecar;
mod validators;

pub(crate) use self::entry::{confine, lock_data, LIVE_SUFFIX, SIDECAR_SUFFIX, TEMP_SUFFIX};
pub use self::entry::{is_full, Claim, Entry, Store, StoreError};
pub(crate) use self::sidecar::read_atime;
pub use self::sidecar::MAX_FILE_SIZE;
pub use self::validators::{Checked, Validators};
