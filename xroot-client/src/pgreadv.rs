//! Vector paged reads: this project's `kXR_pgreadv` extension when the
//! server advertises it ([`xroot_proto::ext`]), otherwise one
//! [`File::pgread`] per extent with the identical result.
//!
//! A `kXR_pgreadv` answer is a pgread-style `kXR_status` stream whose frame
//! offsets jump from extent to extent in request order, with one Final
//! frame for the whole request; an extent that ends at end of file ends
//! early and one past it sends nothing (PROTOCOL.md §16). Frames are
//! therefore given to the extents in arrival order: each continues the
//! current extent or starts a later one.

use bytes::{Bytes, BytesMut};
use xroot_proto::request::PgReadv;
use xroot_proto::response::StatusResponse;
use xroot_proto::{FHandle, ReadListEntry, RequestId};

use crate::error::{Error, Result};
use crate::file::File;
use crate::pgread::{frames, Extent};
use crate::piece::{assemble, plan_vectors, run_all, Element, PGREADV_LIMITS as LIMITS};
use crate::readv::vector_prologue;

impl File {
    /// Reads every `(offset, len)` of `ranges` with page checksums and
    /// returns their data in the same order, each short only at end of file
    /// as [`File::pgread`]. With a server that answers the `kXR_Qconfig` key
    /// [`PGREADV_CONFIG_KEY`](xroot_proto::ext::PGREADV_CONFIG_KEY) with `1`
    /// this sends `kXR_pgreadv` requests (at most 1024 extents and 8 MiB
    /// each, concurrently); otherwise (the stock xrootd) one pgread per
    /// range. Bad pages are fetched again as in [`File::pgread`].
    ///
    /// Errors: as [`File::pgread`].
    #[doc(alias = "kXR_pgreadv")]
    pub async fn pgreadv(&self, ranges: &[(u64, usize)]) -> Result<Vec<Bytes>> {
        let _op = self.begin()?;
        if let Some(empty) = vector_prologue(ranges)? {
            return Ok(empty);
        }
        let extension = self.supports_pgrw().await? && self.server_config().await?.pgreadv;
        if !extension {
            return run_all(ranges.iter().copied(), |(o, l)| self.pgread_in_op(o, l)).await;
        }
        let plan = plan_vectors(ranges, &LIMITS);
        let results = run_all(0..plan.len(), |i| self.pgreadv_request(&plan[i])).await?;
        Ok(assemble(ranges, &plan, results))
    }

    /// One `kXR_pgreadv` of `elements`; the data of each, bad pages repaired.
    async fn pgreadv_request(&self, elements: &[Element]) -> Result<Vec<Bytes>> {
        let statuses = self
            .call(|fhandle| request(fhandle, elements).into())
            .await?
            .into_status(RequestId::PGREADV)?;
        let mut extents = place_all(elements, statuses)?;
        self.repair(&mut extents).await?;
        Ok(extents.into_iter().map(|e| e.data.freeze()).collect())
    }
}

/// The `kXR_pgreadv` for `elements` of the file `fhandle`.
fn request(fhandle: FHandle, elements: &[Element]) -> PgReadv {
    PgReadv {
        list: elements
            .iter()
            .map(|e| ReadListEntry {
                fhandle,
                rlen: e.len as i32,
                offset: e.offset as i64,
            })
            .collect(),
        ..Default::default()
    }
}

/// Gives the frames of a `kXR_pgreadv` answer to `elements` in arrival
/// order (see the module docs). Errors: [`Error::UnexpectedResponse`] for a
/// frame that neither continues the current extent nor starts a later one.
fn place_all(elements: &[Element], statuses: Vec<StatusResponse>) -> Result<Vec<Extent>> {
    let unexpected = |detail: String| Error::unexpected(RequestId::PGREADV, detail);
    let mut extents: Vec<Extent> = elements
        .iter()
        .map(|e| Extent::new(e.offset, e.len, BytesMut::with_capacity(e.len)))
        .collect();
    let mut current = 0;
    for (f, n) in frames(RequestId::PGREADV, statuses)? {
        if n == 0 {
            continue;
        }
        let Some(i) = (current..extents.len()).find(|&i| extents[i].continues(&f, n)) else {
            return Err(unexpected(format!(
                "{n} bytes at {} continue no extent from #{current} on",
                f.offset
            )));
        };
        current = i;
        extents[i].push(&f).map_err(|e| unexpected(e.to_string()))?;
    }
    Ok(extents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgread::tests::{file, statuses};
    use crate::pgread::BadPage;
    use crate::piece::MAX_PIECE;
    use xroot_proto::frame::{ClientMessage, RequestDecoder};
    use xroot_proto::request::Request;
    use xroot_proto::response::{PgReadEncoder, PgReadExtent};
    use xroot_proto::StreamId;

    /// What a server holding `file` answers to `req`, frames of `frame_pages`.
    fn serve(req: &PgReadv, file: &[u8], frame_pages: usize) -> Vec<StatusResponse> {
        let extents: Vec<_> = req
            .list
            .iter()
            .map(|e| PgReadExtent {
                offset: e.offset as u64,
                rlen: e.rlen as u64,
                data: &file[(e.offset as usize).min(file.len())..],
            })
            .collect();
        let mut wire = BytesMut::new();
        PgReadEncoder::new()
            .with_frame_pages(frame_pages)
            .encode_pgreadv(StreamId::from_u16(3), &extents, &mut wire);
        statuses(wire)
    }

    #[test]
    fn the_request_on_the_wire() {
        let elements = [
            Element {
                range: 0,
                offset: 4096,
                len: 100,
            },
            Element {
                range: 1,
                offset: 10,
                len: 5000,
            },
        ];
        let mut wire = BytesMut::new();
        Request::from(request(FHandle([0, 0, 0, 7]), &elements))
            .encode(StreamId::from_u16(9), &mut wire);
        assert_eq!(wire.len(), 24 + 32);
        assert_eq!(u16::from_be_bytes([wire[2], wire[3]]), 3033, "kXR_pgreadv");
        assert_eq!((wire[18], wire[19]), (0, 0), "no reqflags, pathid 0");
        let Some(ClientMessage::Request(frame)) = RequestDecoder::without_handshake()
            .decode(&mut wire)
            .unwrap()
        else {
            panic!("one request")
        };
        let Request::PgReadv(back) = Request::decode(frame).unwrap() else {
            panic!("a kXR_pgreadv")
        };
        assert_eq!(
            back.list,
            [
                ReadListEntry {
                    fhandle: FHandle([0, 0, 0, 7]),
                    rlen: 100,
                    offset: 4096
                },
                ReadListEntry {
                    fhandle: FHandle([0, 0, 0, 7]),
                    rlen: 5000,
                    offset: 10
                },
            ]
        );
    }

    #[test]
    fn answers_placed_like_pgread_per_extent() {
        let data = file(40_000);
        // duplicates, overlaps, an extent crossing EOF, one past EOF, an
        // empty one and one longer than a request's 8 MiB
        let ranges = [
            (1000u64, 10_000usize),
            (1000, 10_000),
            (5000, 9000),
            (39_000, 5000),
            (50_000, 100),
            (7, 0),
            (0, 40_000),
            (20_000, MAX_PIECE + 1),
        ];
        let plan = plan_vectors(&ranges, &LIMITS);
        assert!(plan.len() > 1);
        for frame_pages in [1, 3, 512] {
            let results: Vec<Vec<Bytes>> = plan
                .iter()
                .map(|elements| {
                    let req = request(FHandle::default(), elements);
                    let mut extents = place_all(elements, serve(&req, &data, frame_pages)).unwrap();
                    assert!(extents.iter_mut().all(|e| e.bad.is_empty()));
                    extents.into_iter().map(|e| e.data.freeze()).collect()
                })
                .collect();
            let got = assemble(&ranges, &plan, results);
            for (&(o, l), g) in ranges.iter().zip(&got) {
                let end = (o as usize + l).min(data.len());
                let want = data.get(o as usize..end).unwrap_or(&[]);
                assert_eq!(
                    &g[..],
                    want,
                    "extent ({o}, {l}), {frame_pages} pages a frame"
                );
            }
        }
    }

    #[test]
    fn a_bad_page_is_found_in_its_extent() {
        let data = file(20_000);
        let elements = [
            Element {
                range: 0,
                offset: 0,
                len: 100,
            },
            Element {
                range: 1,
                offset: 100,
                len: 10_000,
            },
        ];
        let mut st = serve(&request(FHandle::default(), &elements), &data, 512);
        // second frame: pages at 100 (3996 bytes) and 4096; spoil the latter
        let mut d = BytesMut::from(&st[1].data[..]);
        d[4 + 3996 + 4 + 1] ^= 0x80;
        st[1].data = d.freeze();
        let extents = place_all(&elements, st).unwrap();
        assert!(extents[0].bad.is_empty());
        assert_eq!(
            extents[1].bad,
            [BadPage {
                offset: 4096,
                len: 4096
            }]
        );
    }

    #[test]
    fn a_stray_frame_is_refused() {
        let data = file(20_000);
        let elements = [Element {
            range: 0,
            offset: 0,
            len: 8192,
        }];
        let other = [Element {
            range: 0,
            offset: 100,
            len: 50,
        }];
        let st = serve(&request(FHandle::default(), &other), &data, 512);
        assert!(matches!(
            place_all(&elements, st),
            Err(Error::UnexpectedResponse { .. })
        ));
    }
}
