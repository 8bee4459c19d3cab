//! [`FileReader`]: `tokio::io::AsyncRead` + `AsyncSeek` over a [`File`],
//! with a position, reads of whole blocks ([`File::read_at`]) and the next
//! block read ahead while the current one is consumed.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncSeek, ReadBuf};

use crate::error::Result;
use crate::file::File;

/// Bytes asked per read unless set with [`FileReader::with_block_size`]: 1 MiB.
const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// A cursor over an open [`File`] for code that wants `AsyncRead` and
/// `AsyncSeek` (`tokio::io::copy`, `BufReader`, ...). Reads go to the
/// server in blocks ([`FileReader::with_block_size`], 1 MiB by default, or
/// the caller's buffer if larger) and the block after a full one is asked
/// for at once; a seek inside the block already read costs nothing.
/// `SeekFrom::End` uses the file size from open (or the last
/// [`File::stat`]), asking the server only if there is none. Seeking past
/// the end is allowed (reads there return 0 bytes); before 0 is
/// [`io::ErrorKind::InvalidInput`]. Errors of the reads are
/// [`crate::Error`]s converted with their [`crate::Error::kind`]. A read
/// the cursor has sent and not yet returned (one abandoned by a
/// `select!`, say) is a call in progress on the file: [`File::close`]
/// waits for it until the cursor reads on or is dropped.
pub struct FileReader {
    file: Arc<File>,
    block: usize,
    /// The cursor, in bytes.
    pos: u64,
    /// File bytes from `buf_at` on, already read.
    buf: Bytes,
    buf_at: u64,
    /// A read in flight: its offset and length.
    read: Option<(u64, usize, BoxFuture<'static, Result<Bytes>>)>,
    /// A seek started and not yet completed.
    seek: Option<Seek>,
}

enum Seek {
    To(u64),
    /// `SeekFrom::End(delta)` waiting for the file size.
    End(i64, BoxFuture<'static, Result<u64>>),
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("url", self.file.url())
            .field("pos", &self.pos)
            .field("block", &self.block)
            .field("buffered", &(self.buf_at, self.buf.len()))
            .finish_non_exhaustive()
    }
}

impl File {
    /// This file as an `AsyncRead + AsyncSeek` cursor at offset 0.
    pub fn into_reader(self) -> FileReader {
        FileReader::new(self)
    }
}

impl FileReader {
    /// A cursor at offset 0 over `file`.
    pub fn new(file: impl Into<Arc<File>>) -> FileReader {
        FileReader {
            file: file.into(),
            block: DEFAULT_BLOCK_SIZE,
            pos: 0,
            buf: Bytes::new(),
            buf_at: 0,
            read: None,
            seek: None,
        }
    }

    /// Sets the bytes asked per read (at least 1).
    pub fn with_block_size(mut self, block: usize) -> FileReader {
        self.block = block.max(1);
        self
    }

    /// The file read.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The cursor, in bytes from the start of the file.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn start_read(&mut self, at: u64, len: usize) {
        let file = Arc::clone(&self.file);
        self.read = Some((
            at,
            len,
            Box::pin(async move { file.read_split(at, len).await }),
        ));
    }

    fn buffered(&self) -> Option<&[u8]> {
        let skip = self.pos.checked_sub(self.buf_at)?;
        self.buf
            .get(usize::try_from(skip).ok()?..)
            .filter(|b| !b.is_empty())
    }

    fn move_to(&mut self, pos: u64) {
        self.pos = pos;
        if self.read.as_ref().is_some_and(|r| r.0 != pos) && self.buffered().is_none() {
            self.read = None; // a read ahead elsewhere is of no use
        }
    }
}

impl AsyncRead for FileReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if dst.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if let Some(have) = this.buffered() {
                let n = have.len().min(dst.remaining());
                dst.put_slice(&have[..n]);
                this.pos += n as u64;
                return Poll::Ready(Ok(()));
            }
            match &mut this.read {
                Some((at, _, _)) if *at != this.pos => this.read = None,
                Some((at, len, fut)) => {
                    let (at, len) = (*at, *len);
                    let data = ready!(fut.as_mut().poll(cx));
                    this.read = None;
                    let data = data.map_err(io::Error::from)?;
                    if data.is_empty() {
                        return Poll::Ready(Ok(())); // end of file
                    }
                    let full = data.len() == len;
                    this.buf = data;
                    this.buf_at = at;
                    if full {
                        this.start_read(at + len as u64, this.block);
                    }
                }
                None => {
                    let len = this.block.max(dst.remaining());
                    this.start_read(this.pos, len);
                }
            }
        }
    }
}

impl AsyncSeek for FileReader {
    fn start_seek(mut self: Pin<&mut Self>, position: io::SeekFrom) -> io::Result<()> {
        if self.seek.is_some() {
            return Err(io::Error::other(
                "a seek is in progress: call poll_complete first",
            ));
        }
        let seek = match position {
            io::SeekFrom::Start(n) => Seek::To(n),
            io::SeekFrom::Current(delta) => Seek::To(offset_by(self.pos, delta)?),
            io::SeekFrom::End(delta) => match self.file.cached_stat() {
                Some(st) => Seek::To(offset_by(st.size, delta)?),
                None => {
                    let file = Arc::clone(&self.file);
                    Seek::End(delta, Box::pin(async move { Ok(file.stat().await?.size) }))
                }
            },
        };
        self.seek = Some(seek);
        Ok(())
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let target = match &mut self.seek {
            None => return Poll::Ready(Ok(self.pos)),
            Some(Seek::To(n)) => Ok(*n),
            Some(Seek::End(delta, size)) => {
                let delta = *delta;
                ready!(size.as_mut().poll(cx))
                    .map_err(io::Error::from)
                    .and_then(|size| offset_by(size, delta))
            }
        };
        self.seek = None;
        let target = target?;
        self.move_to(target);
        Poll::Ready(Ok(target))
    }
}

/// `base + delta`, refusing a position before 0 or past `u64::MAX`.
fn offset_by(base: u64, delta: i64) -> io::Result<u64> {
    base.checked_add_signed(delta).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("seek to {base} {delta:+} is outside the file"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles only if the calls' futures can be spawned.
    fn futures_are_send(f: &File) {
        fn send<T: Send>(_: T) {}
        send(f.readv(&[]));
        send(f.pgread(0, 1));
        send(f.pgreadv(&[]));
        send(f.pgwrite(0, Bytes::new()));
        send(f.read_split(0, 1));
    }

    #[test]
    fn file_futures_are_send() {
        let _ = futures_are_send;
    }

    #[test]
    fn offsets() {
        assert_eq!(offset_by(10, -10).unwrap(), 0);
        assert_eq!(offset_by(10, 5).unwrap(), 15);
        assert_eq!(
            offset_by(10, -11).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
