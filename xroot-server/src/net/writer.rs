//! The writing side of one TCP link: one task owns the socket's write half
//! and writes what request tasks queue, each message whole, so frames of
//! concurrent requests never interleave inside a frame (PROTOCOL.md §9).
//!
//! A message is one or more whole frames, possibly split into parts (a
//! header and the data it frames) so that file data is written without a
//! copy, with the share of the memory budget its bytes hold
//! ([`crate::admit::budget`]), returned once they are written. A part may also be
//! a region of a file, which a plain link sends with `sendfile(2)`
//! ([`crate::net::zero_copy`]) and a TLS link reads first. The task ends when
//! every [`LinkWriter`] is dropped, after writing everything queued, and
//! then shuts the socket's write side down; aborted, it drops what is
//! queued (and its shares).
//!
//! To switch the link to TLS the session takes the write half back
//! ([`LinkWriter::take_half`]): the task writes and flushes everything
//! queued before, hands the half over and waits for the TLS one; what is
//! queued meanwhile is written on the new half. Every [`LinkWriter`] clone
//! stays valid across the switch.

use bytes::{Bytes, BytesMut};
use std::io::IoSlice;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use xroot_proto::response::Response;
use xroot_proto::{ResponseHeader, Status, StreamId};

use crate::admit::budget::Share;
use crate::fs::FileRegion;
use crate::net::transport::LinkWrite;
use crate::net::zero_copy::Part;

/// Messages queued per link before senders wait.
const QUEUE: usize = 16;

/// The link was closed: nothing more can be sent on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// Whole frames to write back to back, and the budget their bytes hold.
#[derive(Debug)]
struct Message {
    parts: Vec<Part>,
    _share: Option<Share>,
}

/// The write half handed over, and where to send the half that replaces
/// it (dropped: the writer task ends).
pub(crate) type Handover = (LinkWrite, oneshot::Sender<LinkWrite>);

/// What the writer task is asked to do, in order.
#[derive(Debug)]
enum Command {
    Write(Message),
    /// Flush, then hand the write half over and wait for its replacement.
    Swap(oneshot::Sender<Handover>),
}

/// A handle to queue frames on one link.
#[derive(Debug, Clone)]
pub(crate) struct LinkWriter {
    tx: mpsc::Sender<Command>,
    /// The link writes on a plain socket (not TLS), as of the last switch.
    plain: Arc<AtomicBool>,
}

impl LinkWriter {
    /// Starts the writer task on `w`; it adds the bytes it writes to
    /// `written`.
    pub(crate) fn spawn(w: LinkWrite, written: Arc<AtomicU64>) -> (LinkWriter, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let plain = Arc::new(AtomicBool::new(is_plain(&w)));
        let flag = plain.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = write_loop(rx, w, flag, &written).await {
                tracing::debug!("link write failed: {e}");
            }
        });
        (LinkWriter { tx, plain }, task)
    }

    /// Whether the link writes on a plain socket, where file regions go out
    /// with `sendfile(2)`.
    pub(crate) fn is_plain(&self) -> bool {
        self.plain.load(Ordering::Relaxed)
    }

    /// Takes the write half back once everything queued before is written
    /// and flushed; the task then waits for the half to write on from now
    /// on, sent through the returned sender.
    pub(crate) async fn take_half(&self) -> Result<Handover, Closed> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Command::Swap(tx)).await.map_err(|_| Closed)?;
        rx.await.map_err(|_| Closed)
    }

    /// Queues whole frames, written back to back; `share` is returned once
    /// they are written (or dropped unwritten).
    pub(crate) async fn send_parts(
        &self,
        parts: Vec<Bytes>,
        share: Option<Share>,
    ) -> Result<(), Closed> {
        let parts = parts.into_iter().map(Part::Mem).collect();
        self.send_message(parts, share).await
    }

    async fn send_message(&self, parts: Vec<Part>, share: Option<Share>) -> Result<(), Closed> {
        let message = Message {
            parts,
            _share: share,
        };
        self.tx
            .send(Command::Write(message))
            .await
            .map_err(|_| Closed)
    }

    /// Queues already encoded frames.
    pub(crate) async fn send_raw(&self, frames: BytesMut) -> Result<(), Closed> {
        self.send_parts(vec![frames.freeze()], None).await
    }

    /// Queues `response` to `streamid`.
    pub(crate) async fn send(&self, streamid: StreamId, response: &Response) -> Result<(), Closed> {
        let mut buf = BytesMut::new();
        response.encode(streamid, &mut buf);
        self.send_raw(buf).await
    }

    /// Queues a `kXR_ok` or `kXR_oksofar` carrying `data`, without copying
    /// it; `share` is the budget `data` holds.
    pub(crate) async fn send_data(
        &self,
        streamid: StreamId,
        status: Status,
        data: Bytes,
        share: Option<Share>,
    ) -> Result<(), Closed> {
        let head = header(streamid, status, data.len());
        self.send_parts(vec![head, data], share).await
    }

    /// Queues a `kXR_ok` or `kXR_oksofar` carrying the bytes of `region`,
    /// sent straight from the file.
    pub(crate) async fn send_region(
        &self,
        streamid: StreamId,
        status: Status,
        region: FileRegion,
    ) -> Result<(), Closed> {
        let head = header(streamid, status, region.len);
        let parts = vec![Part::Mem(head), Part::File(region)];
        self.send_message(parts, None).await
    }

    /// Queues the whole answer to a read of `want` bytes whose data is
    /// `region` (`region.len <= want`), if the queue has room now: one
    /// `kXR_ok` with the data; or, short of `want` (end of file), the data
    /// as `kXR_oksofar` then an empty `kXR_ok`, as [`crate::handle::file_requests`]'s reads
    /// answer. `false` when the queue is full or the link closed.
    pub(crate) fn try_send_read(
        &self,
        streamid: StreamId,
        region: FileRegion,
        want: usize,
    ) -> bool {
        let header = |status, dlen| Part::Mem(header(streamid, status, dlen));
        let parts = match region.len {
            0 => vec![header(Status::OK, 0)],
            n if n >= want => vec![header(Status::OK, n), Part::File(region)],
            n => vec![
                header(Status::OKSOFAR, n),
                Part::File(region),
                header(Status::OK, 0),
            ],
        };
        let message = Message {
            parts,
            _share: None,
        };
        self.tx.try_send(Command::Write(message)).is_ok()
    }

    /// Whether the writer task is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The 8-byte response header of a frame of `dlen` bytes of data.
fn header(streamid: StreamId, status: Status, dlen: usize) -> Bytes {
    let mut head = BytesMut::with_capacity(ResponseHeader::LEN);
    ResponseHeader {
        streamid,
        status,
        dlen: dlen as i32,
    }
    .encode(&mut head);
    head.freeze()
}

fn is_plain(w: &LinkWrite) -> bool {
    matches!(w, LinkWrite::Plain(_))
}

async fn write_loop(
    mut rx: mpsc::Receiver<Command>,
    mut w: LinkWrite,
    plain: Arc<AtomicBool>,
    written: &AtomicU64,
) -> std::io::Result<()> {
    let mut batch = Batch::default();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                Command::Write(m) => {
                    if batch.push(m) {
                        batch.write(&mut w, written).await?;
                    }
                }
                Command::Swap(handover) => {
                    batch.write(&mut w, written).await?;
                    w.flush().await?;
                    let (tx, rx) = oneshot::channel();
                    if handover.send((w, tx)).is_err() {
                        return Ok(());
                    }
                    match rx.await {
                        Ok(half) => {
                            plain.store(is_plain(&half), Ordering::Relaxed);
                            w = half;
                        }
                        Err(_) => return Ok(()),
                    }
                }
            }
            next = rx.try_recv().ok();
        }
        batch.write(&mut w, written).await?;
        w.flush().await?;
    }
    w.shutdown().await
}

/// Writes the in-memory `parts` in order with vectored writes, gathering
/// their slices in `slices` (emptied first; one buffer serves a whole
/// batch).
async fn write_all<'a>(
    w: &mut LinkWrite,
    slices: &mut Vec<IoSlice<'a>>,
    parts: impl IntoIterator<Item = &'a Part>,
) -> std::io::Result<()> {
    slices.clear();
    slices.extend(parts.into_iter().filter_map(|p| match p {
        Part::Mem(b) if !b.is_empty() => Some(IoSlice::new(b)),
        _ => None,
    }));
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = w.write_vectored(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

/// Bytes gathered before a write: past this, the batch goes out.
const BATCH_BYTES: usize = 1 << 20;
/// Parts gathered before a write (under Linux's `IOV_MAX`, 1024).
const BATCH_PARTS: usize = 512;

/// Messages gathered for one vectored write, with their part and byte
/// counts.
#[derive(Debug, Default)]
struct Batch {
    messages: Vec<Message>,
    parts: usize,
    bytes: usize,
}

impl Batch {
    /// Adds `m`; `true` once the batch is full ([`BATCH_PARTS`],
    /// [`BATCH_BYTES`]).
    fn push(&mut self, m: Message) -> bool {
        self.parts += m.parts.len();
        self.bytes += m.parts.iter().map(Part::len).sum::<usize>();
        self.messages.push(m);
        self.parts >= BATCH_PARTS || self.bytes >= BATCH_BYTES
    }

    /// Writes every part in order with vectored writes (a frame's header
    /// and its data in one system call, several small frames in one), then
    /// drops the messages, returning their budget shares. File regions go
    /// out with `sendfile(2)` on a plain link and are read first on a TLS
    /// or in-process one. Adds the bytes to `written` once they are.
    async fn write(&mut self, w: &mut LinkWrite, written: &AtomicU64) -> std::io::Result<()> {
        let bytes = self.bytes as u64;
        self.write_parts(w).await?;
        written.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    async fn write_parts(&mut self, w: &mut LinkWrite) -> std::io::Result<()> {
        let files = self.messages.iter().flat_map(|m| &m.parts);
        if files.clone().any(|p| matches!(p, Part::File(_))) {
            match w {
                LinkWrite::Plain(half) => {
                    crate::net::zero_copy::write_parts(half.as_ref(), files).await?;
                    self.clear();
                    return Ok(());
                }
                LinkWrite::Tls(_) | LinkWrite::Memory(_) => self.read_regions()?,
            }
        }
        let mut slices = Vec::with_capacity(self.parts);
        if matches!(w, LinkWrite::Tls(_)) {
            // one message per write, so that no TLS record holds the end
            // of one frame and the start of the next: the stock client
            // (XrdCl 5.5) reads a record's remainder only when the socket
            // is readable again, so a frame left in its TLS buffer (the
            // empty kXR_ok after a short read's kXR_oksofar) waited for
            // its request timeout
            for m in &self.messages {
                write_all(w, &mut slices, &m.parts).await?;
            }
        } else {
            let all = self.messages.iter().flat_map(|m| &m.parts);
            write_all(w, &mut slices, all).await?;
        }
        drop(slices);
        self.clear();
        Ok(())
    }

    fn clear(&mut self) {
        self.messages.clear();
        (self.parts, self.bytes) = (0, 0);
    }

    /// Replaces each file region by its bytes, read now (they were in the
    /// page cache when the region was made); bytes the file no longer has
    /// are zeros, so the frames stay whole.
    fn read_regions(&mut self) -> std::io::Result<()> {
        for part in self.messages.iter_mut().flat_map(|m| &mut m.parts) {
            if let Part::File(r) = part {
                let mut data = vec![0; r.len];
                let mut filled = 0;
                while filled < data.len() {
                    match r
                        .file
                        .read_at(&mut data[filled..], r.offset + filled as u64)
                    {
                        Ok(0) => {
                            tracing::warn!(
                                "a file ended {} bytes before a read answer's end (it shrank \
                                 while the answer was queued): zeros sent in their place",
                                data.len() - filled
                            );
                            break;
                        }
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                *part = Part::Mem(data.into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn frames_arrive_whole_and_in_order() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (a, b) = tokio::join!(listener.accept(), tokio::net::TcpStream::connect(addr));
        let (mut b, a) = (b.unwrap(), a.unwrap().0);
        let (_rd, wr) = xroot_sec::tls::stream::Stream::Plain(a).into_split();
        let written = Arc::new(AtomicU64::new(0));
        let (link, task) = LinkWriter::spawn(wr, written.clone());
        let sid = StreamId::from_u16(7);
        link.send_data(sid, Status::OKSOFAR, Bytes::from_static(b"abc"), None)
            .await
            .unwrap();
        link.send(sid, &Response::Ok(Bytes::from_static(b"d")))
            .await
            .unwrap();
        drop(link);
        task.await.unwrap();
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(
            got,
            b"\0\x07\x0f\xa0\0\0\0\x03abc\0\x07\0\0\0\0\0\x01d".to_vec()
        );
        assert_eq!(written.load(Ordering::Relaxed), got.len() as u64);
    }
}
