//! Writing frames whose data is a region of a file to a plain TCP socket
//! without a copy in user space: the bytes before a region (the frame's
//! header, and any small frames queued ahead of it) go out with
//! `sendmsg(MSG_MORE)`, so the kernel holds them back to fill a segment with
//! the data that follows, and the region with `sendfile(2)` straight from
//! the page cache. Two system calls per `kXR_read` answer; the stock server
//! makes four (cork, write, sendfile, uncork; XrdLinkXeq `Send` with a
//! sendfile vector).
//!
//! A file that ends before its region does (it shrank after the region was
//! made) has the missing bytes sent as zeros, with a warning: the header
//! already promised them, and the link, with every other request on it,
//! stays usable. The stock server closes the link instead.

use std::io::{self, IoSlice};

use bytes::Bytes;
use rustix::net::{SendAncillaryBuffer, SendFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::fs::FileRegion;

/// A piece of a message: bytes in memory, or bytes of a file.
#[derive(Debug)]
pub(crate) enum Part {
    Mem(Bytes),
    File(FileRegion),
}

impl Part {
    pub(crate) fn len(&self) -> usize {
        match self {
            Part::Mem(b) => b.len(),
            Part::File(r) => r.len,
        }
    }
}

/// Zeros sent in place of bytes a file no longer has.
static ZEROS: [u8; 4096] = [0; 4096];

/// Most slices given to one `sendmsg` (Linux's `IOV_MAX` is 1024).
const MAX_SLICES: usize = 512;

/// Writes `parts` in order on `tcp`. Errors: the socket's (the peer went
/// away, …) or the file's (`EIO`, …); the link is then unusable, since a
/// frame may have been cut.
pub(crate) async fn write_parts<'a>(
    tcp: &TcpStream,
    parts: impl Iterator<Item = &'a Part>,
) -> io::Result<()> {
    let mut mem: Vec<IoSlice<'a>> = Vec::new();
    for part in parts {
        match part {
            Part::Mem(b) if b.is_empty() => {}
            Part::Mem(b) => {
                if mem.len() == MAX_SLICES {
                    send_all(tcp, &mut mem, false).await?;
                }
                mem.push(IoSlice::new(b));
            }
            Part::File(region) => {
                send_all(tcp, &mut mem, region.len > 0).await?;
                send_region(tcp, region).await?;
            }
        }
    }
    send_all(tcp, &mut mem, false).await
}

/// Sends every byte of `slices` and empties it; with `more`, tells the
/// kernel more data follows at once (`MSG_MORE`).
async fn send_all(tcp: &TcpStream, slices: &mut Vec<IoSlice<'_>>, more: bool) -> io::Result<()> {
    let flags = match more {
        true => SendFlags::NOSIGNAL | SendFlags::MORE,
        false => SendFlags::NOSIGNAL,
    };
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = tcp
            .async_io(Interest::WRITABLE, || {
                let mut control = SendAncillaryBuffer::default();
                Ok(rustix::net::sendmsg(tcp, rest, &mut control, flags)?)
            })
            .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    slices.clear();
    Ok(())
}

/// Sends `region` with `sendfile(2)`; where the file ends early, zeros.
async fn send_region(tcp: &TcpStream, region: &FileRegion) -> io::Result<()> {
    let mut offset = region.offset;
    let mut left = region.len;
    while left > 0 {
        let n = tcp
            .async_io(Interest::WRITABLE, || {
                Ok(rustix::fs::sendfile(
                    tcp,
                    &*region.file,
                    Some(&mut offset),
                    left,
                )?)
            })
            .await?;
        if n == 0 {
            tracing::warn!(
                "a file ended {left} bytes before a read answer's end (it shrank while the \
                 answer was queued): zeros sent in their place"
            );
            return send_zeros(tcp, left).await;
        }
        left -= n;
    }
    Ok(())
}

async fn send_zeros(tcp: &TcpStream, mut left: usize) -> io::Result<()> {
    while left > 0 {
        let n = left.min(ZEROS.len());
        let mut slices = vec![IoSlice::new(&ZEROS[..n])];
        send_all(tcp, &mut slices, false).await?;
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;
    use tokio::io::AsyncReadExt;

    /// Writes `parts` on one end of a loopback connection; what the other
    /// end reads.
    async fn sent(parts: Vec<Part>) -> Vec<u8> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (a, b) = tokio::join!(listener.accept(), TcpStream::connect(addr));
        let (a, mut b) = (a.unwrap().0, b.unwrap());
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            got
        });
        write_parts(&a, parts.iter()).await.unwrap();
        drop(a);
        reader.await.unwrap()
    }

    fn file(data: &[u8]) -> Arc<std::fs::File> {
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, data).unwrap();
        Arc::new(f)
    }

    fn region(file: &Arc<std::fs::File>, offset: u64, len: usize) -> Part {
        Part::File(FileRegion {
            file: file.clone(),
            offset,
            len,
        })
    }

    #[tokio::test]
    async fn memory_and_file_parts_go_out_in_order() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let f = file(&data);
        let parts = vec![
            Part::Mem(Bytes::from_static(b"head")),
            region(&f, 7, 2_000_000),
            Part::Mem(Bytes::new()),
            Part::Mem(Bytes::from_static(b"mid")),
            region(&f, 0, 0),
            region(&f, 2_999_990, 10),
            Part::Mem(Bytes::from_static(b"tail")),
        ];
        let mut want = b"head".to_vec();
        want.extend_from_slice(&data[7..2_000_007]);
        want.extend_from_slice(b"mid");
        want.extend_from_slice(&data[2_999_990..]);
        want.extend_from_slice(b"tail");
        let got = sent(parts).await;
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the bytes differ");
    }

    #[tokio::test]
    async fn bytes_a_shrunk_file_lacks_go_out_as_zeros() {
        let f = file(&[7; 10_000]);
        let got = sent(vec![
            region(&f, 5_000, 20_000),
            Part::Mem(Bytes::from_static(b"next")),
        ])
        .await;
        assert_eq!(got.len(), 20_004);
        assert!(got[..5_000].iter().all(|&b| b == 7));
        assert!(got[5_000..20_000].iter().all(|&b| b == 0));
        assert_eq!(&got[20_000..], b"next");
    }
}
