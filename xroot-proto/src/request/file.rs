//! Requests on open files that neither read nor write data: open, close,
//! sync, truncate, chkpoint and clone (PROTOCOL.md §6.1, §6.2, §6.9).

use bytes::{BufMut, BytesMut};

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::{FHandle, RequestHeader, StreamId};
use crate::limits::{CLONE_LIST_LEN, MAX_CLONE_ELEMENTS};
use crate::wire::Reader;

use super::body::RequestBody;
use super::flags::Mode;
use super::params::{put_header, Params};
use super::typed::Request;

wire_newtype! {
    /// `ClientOpenRequest::options` (bytes 6-7), `XOpenRequestOption`
    /// (PROTOCOL.md §6.1). With none of READ/UPDATE/WRITE_ONLY the open is
    /// read-only. XrdCl always adds `ASYNC | RETSTAT`.
    flags OpenOptions(u16);
    /// Raw I/O; the reply then carries cpsize/cptype.
    COMPRESS = 0x0001 => "kXR_compress";
    /// Truncate or create.
    DELETE = 0x0002 => "kXR_delete";
    /// Ignore the file lock.
    FORCE = 0x0004 => "kXR_force";
    /// Create; fails if the file exists.
    NEW = 0x0008 => "kXR_new";
    READ = 0x0010 => "kXR_open_read";
    /// Read-write.
    UPDATE = 0x0020 => "kXR_open_updt";
    /// Async I/O allowed (also enables mkpath with new/delete).
    ASYNC = 0x0040 => "kXR_async";
    /// Refresh the location cache.
    REFRESH = 0x0080 => "kXR_refresh";
    /// Create parent directories (with new/delete).
    MKPATH = 0x0100 => "kXR_mkpath";
    APPEND = 0x0200 => "kXR_open_apnd";
    /// Return stat text in the reply.
    RETSTAT = 0x0400 => "kXR_retstat";
    /// With new: create a replica.
    REPLICA = 0x0800 => "kXR_replica";
    /// Persist on successful close.
    POSC = 0x1000 => "kXR_posc";
    /// Fail rather than wait for staging.
    NOWAIT = 0x2000 => "kXR_nowait";
    /// Sequential I/O hint.
    SEQIO = 0x4000 => "kXR_seqio";
    WRITE_ONLY = 0x8000 => "kXR_open_wrto";
}

wire_newtype! {
    /// `ClientOpenRequest::optiont` (bytes 8-9), `XOpenRequestOption2`.
    flags OpenOptionT(u16);
    /// Clone the file named by `fhtemplt` (needs new and update/write-only).
    DUP = 0x0001 => "kXR_dup";
    /// Place the file on the same filesystem as `fhtemplt`.
    SAMEFS = 0x0002 => "kXR_samefs";
    /// Return extended stat (implies retstat).
    RETSTATX = 0x0004 => "kXR_retstatx";
    DIRECTIO = 0x0008 => "kXR_directio";
}

simple_request! {
    /// `kXR_open` (3010): opens `path[?cgi]` (`ClientOpenRequest`,
    /// PROTOCOL.md §6.1). The server always adds owner rw to `mode`.
    Open = OPEN "kXR_open" {
        /// Bytes 4-5: permissions for a created file.
        mode: Mode = 4,
        /// Bytes 6-7.
        options: OpenOptions = 6,
        /// Bytes 8-9.
        optiont: OpenOptionT = 8,
        /// Bytes 16-19: the template file for [`OpenOptionT::DUP`]/`SAMEFS`.
        fhtemplt: FHandle = 16,
    }
    payload
        /// `path[?cgi]`.
        path => path_str;
}

simple_request! {
    /// `kXR_close` (3003) (`ClientCloseRequest`, PROTOCOL.md §6.2).
    Close = CLOSE "kXR_close" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
    }
}

simple_request! {
    /// `kXR_sync` (3016) (`ClientSyncRequest`, PROTOCOL.md §6.2).
    Sync = SYNC "kXR_sync" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
    }
}

simple_request! {
    /// `kXR_truncate` (3028): sets a file's length, by open handle when
    /// `path` is empty, else by path (`fhandle` ignored)
    /// (`ClientTruncateRequest`, PROTOCOL.md §6.2).
    Truncate = TRUNCATE "kXR_truncate" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
        /// Bytes 8-15: the new length in bytes.
        offset: i64 = 8,
    }
    payload
        /// `path[?cgi]`, or empty to truncate `fhandle`.
        path => path_str;
}

wire_newtype! {
    /// `ClientChkPointRequest::opcode` (byte 19), the `kXR_ckp*` actions.
    code ChkpointOp(u8);
    BEGIN = 0 => "kXR_ckpBegin";
    COMMIT = 1 => "kXR_ckpCommit";
    /// Answered with `{maxCkpSize:u32, useCkpSize:u32}`.
    QUERY = 2 => "kXR_ckpQuery";
    ROLLBACK = 3 => "kXR_ckpRollback";
    /// Run the embedded request in the payload under the checkpoint.
    XEQ = 4 => "kXR_ckpXeq";
}

simple_request! {
    /// `kXR_chkpoint` (3012): file checkpoints (`ClientChkPointRequest`,
    /// PROTOCOL.md §6.9). With [`ChkpointOp::XEQ`] the payload is a whole
    /// truncate/write/writev/pgwrite request; see [`Chkpoint::embedded`].
    Chkpoint = CHKPOINT "kXR_chkpoint" {
        /// Bytes 4-7.
        fhandle: FHandle = 4,
        /// Byte 19.
        opcode: ChkpointOp = 19,
    }
    payload
        /// Empty, or for `XEQ` the embedded request (header and data).
        payload;
}

impl Chkpoint {
    /// Decodes the request embedded in the payload (its header, its `dlen`
    /// bytes and, for `kXR_writev`, the data after the list); payloads are
    /// slices of this one.
    ///
    /// Errors: [`DecodeError::Truncated`] if the payload is shorter than the
    /// embedded header or its `dlen`; [`DecodeError::NegativeLength`];
    /// [`DecodeError::TrailingBytes`] for bytes after a request other than
    /// writev; then those of [`Request::decode`].
    pub fn embedded(&self) -> Result<Request, DecodeError> {
        const WHAT: &str = "kXR_chkpoint embedded request";
        let b = &self.payload;
        let header = RequestHeader::decode(b)
            .map_err(|_| DecodeError::truncated(WHAT, RequestHeader::LEN, b.len()))?;
        if header.dlen < 0 {
            return Err(DecodeError::NegativeLength {
                what: WHAT,
                value: header.dlen.into(),
            });
        }
        let end = RequestHeader::LEN + header.dlen as usize;
        DecodeError::check_len(WHAT, end, b.len())?;
        let data = b.slice(end..);
        if header.requestid != RequestId::WRITEV && !data.is_empty() {
            return Err(DecodeError::TrailingBytes {
                what: WHAT,
                extra: data.len() as u64,
            });
        }
        Request::decode(RequestFrame {
            header,
            payload: b.slice(RequestHeader::LEN..end),
            data,
        })
    }
}

/// One 32-byte `clone_list` element of `kXR_clone` (`XrdProto::clone_list`,
/// PROTOCOL.md §6.9): copy `src_len` bytes at `src_offs` of the file open as
/// `src_fh` to `dst_offs` of the request's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[doc(alias = "clone_list")]
pub struct CloneEntry {
    /// Source file handle (`srcFH`).
    pub src_fh: FHandle,
    /// Source offset in bytes (`srcOffs`).
    pub src_offs: u64,
    /// Length in bytes (`srcLen`).
    pub src_len: u64,
    /// Destination offset in bytes (`dstOffs`).
    pub dst_offs: u64,
}

impl CloneEntry {
    /// Bytes on the wire (`clItemLen`).
    pub const LEN: usize = CLONE_LIST_LEN;

    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let src_fh = FHandle(r.array()?);
        let _rsvd: [u8; 4] = r.array()?;
        Ok(CloneEntry {
            src_fh,
            src_offs: r.u64()?,
            src_len: r.u64()?,
            dst_offs: r.u64()?,
        })
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.src_fh.0);
        buf.put_bytes(0, 4);
        buf.put_u64(self.src_offs);
        buf.put_u64(self.src_len);
        buf.put_u64(self.dst_offs);
    }
}

/// `kXR_clone` (3032): reflink ranges of other open files into `fhandle`,
/// which must be open for writing (`ClientCloneRequest`, PROTOCOL.md §6.9).
/// Needs protocol 5.2.0 (`kXR_PROTCLONEVERSION`).
///
/// Decoding fails with [`DecodeError::Misaligned`] for a payload that is not
/// a multiple of 32 bytes and [`DecodeError::TooManyElements`] for more than
/// 1024 elements (`maxClonesz`).
#[doc(alias = "kXR_clone")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CloneRanges {
    /// Bytes 4-7: the destination.
    pub fhandle: FHandle,
    /// The ranges, in order.
    pub list: Vec<CloneEntry>,
}

impl RequestBody for CloneRanges {
    const ID: RequestId = RequestId::CLONE;

    fn decode(frame: &RequestFrame) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_clone clone_list";
        let p = Params::of(frame, Self::ID)?;
        let len = frame.payload.len();
        if len % CloneEntry::LEN != 0 {
            return Err(DecodeError::Misaligned {
                what: WHAT,
                len: len as u64,
                unit: CloneEntry::LEN as u64,
            });
        }
        let count = len / CloneEntry::LEN;
        DecodeError::check_count(WHAT, count, MAX_CLONE_ELEMENTS)?;
        let mut r = Reader::new(frame.payload.clone(), WHAT);
        let list = (0..count)
            .map(|_| CloneEntry::decode(&mut r))
            .collect::<Result<_, _>>()?;
        Ok(CloneRanges {
            fhandle: p.get(4),
            list,
        })
    }

    fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
        let p = Params::default().set(4, self.fhandle);
        put_header(
            buf,
            streamid,
            Self::ID,
            p,
            self.list.len() * CloneEntry::LEN,
        );
        for e in &self.list {
            e.encode(buf);
        }
    }
}
