//! Paged writes with a crc32c per 4 kB page (`kXR_pgwrite`, PROTOCOL.md
//! §6.7): pieces of at most 8 MiB sent concurrently; when the answer's CSE
//! block lists pages whose checksum did not match on arrival, each is sent
//! again alone with `kXR_pgRetry` (the reference refuses a retry of more
//! than one page), a bounded number of times.

use bytes::Bytes;
use xroot_proto::page::{page_len_at, PAGE_SIZE};
use xroot_proto::request::{PgReqFlags, Pgwrite};
use xroot_proto::response::PgWriteResponse;
use xroot_proto::{FHandle, RequestId};

use crate::error::{Error, Result};
use crate::file::File;
use crate::pgread::BadPage;
use crate::piece::{run_all, split, MAX_PIECE};
use crate::readv::check_ranges;

impl File {
    /// Writes `data` at `offset` with `kXR_pgwrite`, a crc32c sent with
    /// every 4 kB page; more than 8 MiB goes out as concurrent requests of
    /// at most 8 MiB. Pages the server reports bad are sent again one by
    /// one with `kXR_pgRetry`, at most
    /// [`Config::pgread_retries`](crate::Config::pgread_retries) times each.
    /// Nothing is sent for empty `data`. Against a server without pgwrite
    /// (`kXR_suppgrw` unset) this is a plain write.
    ///
    /// Errors: [`Error::NotOpen`] after close; [`Error::PageChecksum`]
    /// naming the pages still refused after the retries; [`Error::InvalidArgument`] for a range past `i64::MAX`;
    /// [`Error::UnexpectedResponse`] for an answer that does not decode or
    /// names a page outside the request; the server's (`kXR_TooManyErrs`
    /// ...) and connection's errors.
    #[doc(alias = "kXR_pgwrite")]
    pub async fn pgwrite(&self, offset: u64, data: Bytes) -> Result<()> {
        let _op = self.begin()?;
        if data.is_empty() {
            return Ok(());
        }
        check_ranges(&[(offset, data.len())])?;
        let paged = self.supports_pgrw().await?;
        let pieces = split(offset, data.len(), MAX_PIECE).map(|(o, l)| {
            let at = (o - offset) as usize;
            (o, data.slice(at..at + l))
        });
        run_all(pieces, |(o, piece)| async move {
            match paged {
                true => self.pgwrite_piece(o, piece).await,
                false => self.write_at_in_op(o, piece).await,
            }
        })
        .await?;
        Ok(())
    }

    /// One `kXR_pgwrite` of at most 8 MiB, then the retries of its bad pages.
    async fn pgwrite_piece(&self, offset: u64, data: Bytes) -> Result<()> {
        let bad = self.pgwrite_once(offset, &data, PgReqFlags::EMPTY).await?;
        let retries = self.dialer.config().pgread_retries;
        let mut failed = Vec::new();
        for page in bad_pages(offset, data.len(), &bad)? {
            let at = (page.offset - offset) as usize;
            let bytes = &data[at..at + page.len];
            let mut fixed = false;
            for attempt in 1..=retries {
                tracing::debug!(offset = page.offset, attempt, "pgwrite: page retry");
                if self
                    .pgwrite_once(page.offset, bytes, PgReqFlags::RETRY)
                    .await?
                    .is_empty()
                {
                    fixed = true;
                    break;
                }
            }
            if !fixed {
                failed.push(page.offset);
            }
        }
        Error::pages_left_bad(failed, retries)
    }

    /// One `kXR_pgwrite` of `data` at `offset`; the offsets of the pages the
    /// server reports bad (empty when all matched).
    async fn pgwrite_once(
        &self,
        offset: u64,
        data: &[u8],
        reqflags: PgReqFlags,
    ) -> Result<Vec<i64>> {
        let req = Pgwrite {
            reqflags,
            ..Pgwrite::new(FHandle::default(), offset, data)
        };
        let statuses = self
            .call(|fhandle| {
                Pgwrite {
                    fhandle,
                    ..req.clone()
                }
                .into()
            })
            .await?
            .into_status(RequestId::PGWRITE)?;
        let last = statuses
            .last()
            .ok_or_else(|| Error::unexpected(RequestId::PGWRITE, "no kXR_status"))?;
        let answer = PgWriteResponse::from_status(last)
            .map_err(|e| Error::unexpected(RequestId::PGWRITE, e.to_string()))?;
        Ok(answer.cse.map(|c| c.bad_offsets).unwrap_or_default())
    }
}

/// The pages named by a CSE's `offsets` in a pgwrite of `len` bytes at
/// `offset`, each once, in file order. Errors: [`Error::UnexpectedResponse`]
/// for an offset that is not the start of one of the request's pages.
fn bad_pages(offset: u64, len: usize, offsets: &[i64]) -> Result<Vec<BadPage>> {
    let end = offset + len as u64;
    let mut pages = Vec::with_capacity(offsets.len());
    for &o in offsets {
        let starts_page = u64::try_from(o)
            .ok()
            .filter(|&o| o >= offset && o < end && (o == offset || o % PAGE_SIZE as u64 == 0));
        let Some(o) = starts_page else {
            return Err(Error::unexpected(
                RequestId::PGWRITE,
                format!("bad page at {o} is not a page of {len} bytes at {offset}"),
            ));
        };
        pages.push(BadPage {
            offset: o,
            len: page_len_at(o, end - o),
        });
    }
    pages.sort_by_key(|p| p.offset);
    pages.dedup();
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cse_offsets_name_pages_of_the_request() {
        let page = |offset, len| BadPage { offset, len };
        // 10000 bytes at 1000: pages 1000+3096, 4096+4096, 8192+2808
        assert_eq!(
            bad_pages(1000, 10_000, &[8192, 1000, 8192]).unwrap(),
            [page(1000, 3096), page(8192, 2808)]
        );
        assert!(bad_pages(1000, 10_000, &[]).unwrap().is_empty());
        for wrong in [0, 999, 5000, 11_000, 12_288, -4096] {
            assert!(
                matches!(
                    bad_pages(1000, 10_000, &[wrong]),
                    Err(Error::UnexpectedResponse { .. })
                ),
                "{wrong}"
            );
        }
    }
}
