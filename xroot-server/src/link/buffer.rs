//! A link's read buffer: sized for the frame being received, small between
//! frames, so that what a link holds is what its budget counts.

use bytes::BytesMut;

/// Bytes a link's read buffer holds between large frames: 1 KiB, forty
/// pipelined 24-byte requests (a frame with a larger payload gets a
/// buffer of its size). Every link holds one, idle or not.
pub(super) const IDLE_BUFFER: usize = 1 << 10;

/// Bytes a link's read buffer holds while the rest of a refused frame is
/// read and dropped: 16 KiB per read.
const SKIP_BUFFER: usize = 16 << 10;

/// Sizes the read buffer for what comes next: exactly the frame being
/// received (whose budget was granted), a small buffer between frames, or
/// while `skipping` a refused frame's payload (the buffer is empty then)
/// [`SKIP_BUFFER`], reused from its start at each read.
/// The frames split off the buffer keep their allocation while their
/// requests run; growing the buffer by doubling, or keeping a large one's
/// tail, would hold up to twice what the budget counts.
pub(super) fn fit(buf: &mut BytesMut, pending: Option<usize>, skipping: bool) {
    if skipping {
        buf.reserve(SKIP_BUFFER);
        return;
    }
    let want = match pending {
        Some(len) if buf.capacity() < len => len,
        None if buf.capacity() > IDLE_BUFFER => IDLE_BUFFER,
        _ => return,
    };
    let mut fresh = BytesMut::with_capacity(want.max(buf.len()));
    fresh.extend_from_slice(buf);
    *buf = fresh;
}
