//! Pairing responses with their requests, per connection, and decoding the
//! typed body of each answer; for tools that read captured or relayed
//! streams (`xrd_dump`). Sans-IO: no sockets, no clock, no async.
//!
//! A [`Conversation`] is one connection. Feed it each request as the client
//! sends it ([`Conversation::push_request`]) and each response frame as the
//! server sends it ([`Conversation::push_response`]); it ties a response to
//! the request outstanding on the same streamid, holds the `kXR_oksofar`
//! chunks and partial `kXR_status` frames until the final frame, then
//! decodes the whole answer by the request's kind and yields an
//! [`Exchange`]. What the body decode needs from the request is taken from
//! it: whether a `kXR_dirlist` asked for stat (`kXR_dstat`/`kXR_dcksm`),
//! whether a `kXR_stat` asked for `kXR_vfs`, the `kXR_query` infotype,
//! the `kXR_fattr` subcode and `aData`, a `kXR_readv`'s list, a
//! `kXR_pgread`'s offset and length.
//!
//! The protocol's rules it follows (PROTOCOL.md §8.4, §9):
//!
//! - A streamid names one outstanding request; it is free again after the
//!   request's final response: `kXR_ok`, `kXR_error`, `kXR_redirect`,
//!   `kXR_authmore`, `kXR_wait` (the client resends the same request on the
//!   same streamid: a new request here) or a `kXR_FinalResult` `kXR_status`.
//! - `kXR_oksofar` and `kXR_PartialResult` status frames come before the
//!   final frame of the same request; a `kXR_error` may end them.
//! - `kXR_waitresp` keeps the request outstanding ([`Event::Deferred`]);
//!   its answer comes later inside a `kXR_attn` `kXR_asynresp`, whose
//!   embedded header carries the request's streamid. Every other `kXR_attn`
//!   answers no request ([`Event::Unsolicited`]).
//!
//! A request pushed on a streamid that is still outstanding queues behind
//! the earlier one, and responses on that streamid answer the queue in
//! order. A live client never does that, but a capture stored one direction
//! per file (as `tests/vectors/` is) is replayed by pushing every request
//! first, and then streamids reused one after another queue up.
//!
//! Memory is bounded: the partial answers held (all outstanding requests
//! together) may not exceed [`Conversation::max_buffered`] bytes, each
//! frame charged its body plus its 8-byte header, so a peer that sends
//! endless (even empty) `kXR_oksofar` frames gets
//! [`PairError::TooMuchBuffered`] instead of the memory.
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use xroot_proto::exchange::{Answer, Conversation, Event};
//! use xroot_proto::request::{Dirlist, Request};
//! use xroot_proto::response::Response;
//! use xroot_proto::{ResponseDecoder, StreamId};
//!
//! let sid = StreamId::from_u16(3);
//! let mut talk = Conversation::new();
//! talk.push_request(sid, Request::Dirlist(Dirlist { path: "/d".into(), ..Default::default() }))?;
//!
//! let mut wire = BytesMut::new();
//! Response::OkSoFar(Bytes::from_static(b"a\nb\n")).encode(sid, &mut wire);
//! Response::Ok(Bytes::from_static(b"c\0")).encode(sid, &mut wire);
//! let mut dec = ResponseDecoder::new();
//! let first = dec.decode(&mut wire)?.unwrap();
//! assert!(talk.push_response(first)?.is_none()); // a partial answer, held
//! let Some(Event::Exchange(ex)) = talk.push_response(dec.decode(&mut wire)?.unwrap())? else {
//!     unreachable!()
//! };
//! let Answer::Dirlist(xroot_proto::response::DirList::Plain(names)) = ex.answer else {
//!     unreachable!()
//! };
//! assert_eq!(names, ["a", "b", "c"]);
//! assert_eq!(ex.frames, 2);
//! talk.finish()?; // nothing left unanswered
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use crate::codes::{RequestId, Status};
use crate::error::DecodeError;
use crate::frame::{RequestFrame, ResponseFrame};
use crate::header::{ResponseHeader, StreamId};
use crate::list::ReadListEntry;
use crate::page::Page;
use crate::request::{DirlistOptions, FattrOptions, FattrSubcode, QueryCode, Request, StatOptions};
use crate::response::{
    decode_statx, Attn, BindResponse, ChecksumAnswer, DirList, FattrList, FattrReply,
    LocateResponse, LoginResponse, OpenResponse, PgReadFrame, PgWriteResponse, ProtocolResponse,
    QconfigAnswer, ReadvIter, Redirect, Response, ServerError, SpaceInfo, StatFlags, StatInfo,
    StatVfs, StatusResponse, Wait, WaitResp, STATUS_BODY_LEN,
};

/// Default [`Conversation::max_buffered`]: 256 MiB of partial answers held
/// at once (a stock dirlist of 100,000 entries with stat is about 10 MiB; a
/// 2 GiB readv is answered in 2 MiB frames, all of them held until the last).
pub const DEFAULT_MAX_BUFFERED: usize = 256 << 20;

/// Default [`Conversation::max_outstanding`]: 65,536 requests, as many as
/// there are streamids (a client cannot have more in flight; a replay that
/// pushes every request of a capture first may need more).
pub const DEFAULT_MAX_OUTSTANDING: usize = 1 << 16;

/// Why a response could not be paired or its answer not decoded.
///
/// After [`PairError::Frame`], [`PairError::Body`], [`PairError::Mismatch`],
/// [`PairError::WrongStatus`] or [`PairError::UnknownStatus`] the request
/// concerned has been dropped (its streamid is free); after
/// [`PairError::TooMuchBuffered`] its partial answer has been dropped and
/// it stays outstanding; [`PairError::NoRequest`] changes nothing. A tool
/// may go on after any of them, but the stream is not the protocol's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PairError {
    /// A request frame, or a response frame, does not decode at all
    /// ([`Request::decode`], [`Response::decode`]).
    #[error("frame does not decode: {0}")]
    Frame(#[from] DecodeError),
    /// A response on a streamid with no request outstanding (or an
    /// asynresp for one).
    #[error("a {status} response on streamid {streamid:?}, where no request is outstanding")]
    NoRequest {
        /// The response's streamid.
        streamid: StreamId,
        /// The response's status.
        status: Status,
    },
    /// The answer's body does not decode as the body of its request's kind
    /// (an open answer of 6 bytes, stat text with 5 fields, a pgread page
    /// that ends inside its crc, …).
    #[error("the {request} answer on streamid {streamid:?} does not decode: {source}")]
    Body {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// What was wrong.
        #[source]
        source: DecodeError,
    },
    /// The answer decodes but does not fit what was asked: readv segments
    /// that are not the requested elements, pgread data outside the
    /// requested range, a stat listing for a dirlist that asked for none.
    #[error("the {request} answer on streamid {streamid:?} does not fit its request: {detail}")]
    Mismatch {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// What does not fit.
        detail: String,
    },
    /// A status that cannot answer this request: a `kXR_status` for a
    /// request other than pgread, pgreadv or pgwrite, a partial status for
    /// pgwrite, or `kXR_oksofar`/`kXR_ok` after partial status frames.
    #[error("a {status} response cannot answer the {request} on streamid {streamid:?}")]
    WrongStatus {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// The response's status.
        status: Status,
    },
    /// A response status this crate does not know ([`Response::Unknown`]):
    /// whether it ends its request is not known.
    #[error("unknown response status {status} on streamid {streamid:?}")]
    UnknownStatus {
        /// The response's streamid.
        streamid: StreamId,
        /// The status.
        status: Status,
    },
    /// The partial answers held would exceed [`Conversation::max_buffered`].
    #[error(
        "partial answers held would reach {would} bytes with a frame for the {request} on \
         streamid {streamid:?}, over the limit of {max}"
    )]
    TooMuchBuffered {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// Bytes that would be held, frame headers counted.
        would: u64,
        /// The limit, bytes.
        max: u64,
    },
    /// A request pushed while [`Conversation::max_outstanding`] requests
    /// are outstanding; it is not recorded.
    #[error("a {request} on streamid {streamid:?} would be over the limit of {max} outstanding requests")]
    TooManyOutstanding {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// The limit.
        max: usize,
    },
    /// At end of stream ([`Conversation::finish`]), requests still
    /// outstanding: never answered, answered only in part (`kXR_oksofar`
    /// or partial status frames without the final one) or deferred by a
    /// `kXR_waitresp` whose asynresp never came.
    #[error(
        "end of stream with {count} request(s) unanswered; the first, a {request} on streamid \
         {streamid:?}, has {partial_frames} partial frame(s){}",
        if *.deferred { " after kXR_waitresp" } else { "" }
    )]
    Unanswered {
        /// How many requests are outstanding.
        count: usize,
        /// The first one's streamid (the lowest streamid outstanding).
        streamid: StreamId,
        /// The first one's request id.
        request: RequestId,
        /// Partial frames it got.
        partial_frames: usize,
        /// Whether it got a `kXR_waitresp`.
        deferred: bool,
    },
}

/// The decoded answer to one request: the final response and, for
/// multi-frame answers, everything before it, assembled. Slices of the
/// frames wherever a single frame carried the data; multi-frame read and
/// dirlist bodies are joined (one copy).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// `kXR_open`: the handle and, with `kXR_retstat`, the stat.
    Open(OpenResponse),
    /// `kXR_stat`.
    Stat(StatInfo),
    /// `kXR_stat` with `kXR_vfs`.
    StatVfs(StatVfs),
    /// `kXR_statx`: one flag set per path asked, in order.
    Statx(Vec<StatFlags>),
    /// `kXR_dirlist`, all `kXR_oksofar` chunks and the final `kXR_ok`
    /// joined ([`DirList::decode_chunks`]).
    Dirlist(DirList),
    /// `kXR_read`: the data, all frames joined, in bytes.
    Read(Bytes),
    /// `kXR_readv`: `(element header, data)` per element, in request
    /// order, across all frames.
    Readv(Vec<(ReadListEntry, Bytes)>),
    /// `kXR_pgread` or `kXR_pgreadv`: the `kXR_status` stream.
    Pgread(PgReadAnswer),
    /// `kXR_pgwrite`: the final status and its checksum errors, if any.
    Pgwrite(PgWriteResponse),
    /// `kXR_query` `kXR_Qcksum`.
    Checksum(ChecksumAnswer),
    /// `kXR_query` `kXR_Qconfig`: one value per key.
    Config(QconfigAnswer),
    /// `kXR_query` `kXR_Qspace`.
    Space(SpaceInfo),
    /// Any other `kXR_query`: the text as sent (its NUL kept).
    QueryText(Bytes),
    /// `kXR_locate`.
    Locate(LocateResponse),
    /// `kXR_protocol`.
    Protocol(ProtocolResponse),
    /// `kXR_login`.
    Login(LoginResponse),
    /// `kXR_bind`.
    Bind(BindResponse),
    /// `kXR_fattr` del, set or get.
    Fattr(FattrReply),
    /// `kXR_fattr` list.
    FattrList(FattrList),
    /// A `kXR_ok` with an empty body to a request whose answer has no body
    /// (close, write, mkdir, rm, ping, …).
    Done,
    /// A `kXR_ok` body with no typed form here (prepare's request id, a
    /// `kXR_set` answer, an unknown request's answer, a `kXR_ok` to a
    /// pgread), all chunks joined.
    Raw(Bytes),
    /// `kXR_authmore`: security-protocol data; the client sends another
    /// `kXR_auth` (PROTOCOL.md §8.5).
    AuthMore(Bytes),
    /// `kXR_redirect`.
    Redirect(Redirect),
    /// `kXR_wait`: the client resends the same request after the delay
    /// (PROTOCOL.md §8.4); the resend is a new request.
    Wait(Wait),
    /// `kXR_error`: code and message. Partial frames before it are
    /// dropped ([`Exchange::frames`] counts them).
    Error(ServerError),
}

/// A pgread (or pgreadv) answer: every `kXR_status` frame, and their pages
/// with each crc32c checked (PROTOCOL.md §6.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgReadAnswer {
    /// The frames in arrival order (the stock server may send them out of
    /// offset order); the last is the `kXR_FinalResult` one.
    pub frames: Vec<PgReadFrame>,
    /// Every page of every frame, sorted by file offset; data and crc are
    /// slices of the frames.
    pub pages: Vec<Page>,
    /// File offsets of the pages whose crc32c does not match, ascending:
    /// the pages to ask again with `kXR_pgRetry`.
    pub bad_pages: Vec<u64>,
}

impl PgReadAnswer {
    /// Data bytes of all pages together.
    pub fn data_len(&self) -> u64 {
        self.pages.iter().map(|p| p.data.len() as u64).sum()
    }
}

/// One request and its whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The streamid they share.
    pub streamid: StreamId,
    /// The request, as pushed.
    pub request: Request,
    /// The typed answer.
    pub answer: Answer,
    /// Response frames that made up the answer (partial ones and the final
    /// one; for an asynresp, the `kXR_attn` frame counts once, the
    /// `kXR_waitresp` not at all).
    pub frames: usize,
    /// The `kXR_waitresp` that deferred the answer, when it came in a
    /// `kXR_asynresp`.
    pub deferred: Option<WaitResp>,
}

/// What a response frame completed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // handed straight to the caller, rarely stored
pub enum Event {
    /// A request was answered in full.
    Exchange(Exchange),
    /// A `kXR_waitresp`: the request on `streamid` stays outstanding; its
    /// answer will come in a `kXR_attn` asynresp within
    /// [`WaitResp::delay`] (PROTOCOL.md §8.4).
    Deferred {
        /// The request's streamid.
        streamid: StreamId,
        /// The request's id.
        request: RequestId,
        /// The waitresp body.
        waitresp: WaitResp,
    },
    /// A `kXR_attn` that answers no request: `kXR_asyncms` or an obsolete
    /// action.
    Unsolicited(Attn),
}

/// The partial answer held for one outstanding request.
#[derive(Debug)]
struct Pending {
    request: Request,
    /// `kXR_oksofar` bodies.
    chunks: Vec<Bytes>,
    /// Partial pgread status frames.
    pages: Vec<PgReadFrame>,
    /// Bytes charged against the limit for the above.
    charged: usize,
    deferred: Option<WaitResp>,
}

impl Pending {
    fn partial_frames(&self) -> usize {
        self.chunks.len() + self.pages.len()
    }
}

/// One connection's requests and responses, paired by streamid (see the
/// [module documentation](self)).
#[derive(Debug)]
pub struct Conversation {
    outstanding: HashMap<StreamId, VecDeque<Pending>>,
    /// Requests in `outstanding`, all queues together.
    count: usize,
    max_buffered: usize,
    max_outstanding: usize,
    buffered: usize,
}

impl Default for Conversation {
    fn default() -> Self {
        Self::new()
    }
}

impl Conversation {
    /// An empty conversation holding at most [`DEFAULT_MAX_BUFFERED`] bytes
    /// of partial answers.
    pub fn new() -> Self {
        Conversation {
            outstanding: HashMap::new(),
            count: 0,
            max_buffered: DEFAULT_MAX_BUFFERED,
            max_outstanding: DEFAULT_MAX_OUTSTANDING,
            buffered: 0,
        }
    }

    /// Sets the most bytes of partial answers (`kXR_oksofar` bodies,
    /// partial pgread status frames, 8 header bytes counted per frame) held
    /// for all outstanding requests together.
    pub fn with_max_buffered(mut self, bytes: usize) -> Self {
        self.max_buffered = bytes;
        self
    }

    /// Sets the most requests outstanding at once (all streamids together);
    /// a request over it is refused with [`PairError::TooManyOutstanding`].
    pub fn with_max_outstanding(mut self, requests: usize) -> Self {
        self.max_outstanding = requests;
        self
    }

    /// The limit set by [`Conversation::with_max_outstanding`].
    pub fn max_outstanding(&self) -> usize {
        self.max_outstanding
    }

    /// The limit set by [`Conversation::with_max_buffered`], in bytes.
    pub fn max_buffered(&self) -> usize {
        self.max_buffered
    }

    /// Bytes of partial answers held now.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Requests outstanding now.
    pub fn outstanding(&self) -> usize {
        self.count
    }

    /// Records `request`, sent on `streamid`. A request on a streamid
    /// still outstanding queues behind it (see the module documentation).
    /// Errors: [`PairError::TooManyOutstanding`] when
    /// [`Conversation::max_outstanding`] requests are outstanding already.
    pub fn push_request(&mut self, streamid: StreamId, request: Request) -> Result<(), PairError> {
        if self.count >= self.max_outstanding {
            return Err(PairError::TooManyOutstanding {
                streamid,
                request: request.id(),
                max: self.max_outstanding,
            });
        }
        self.count += 1;
        self.outstanding
            .entry(streamid)
            .or_default()
            .push_back(Pending {
                request,
                chunks: Vec::new(),
                pages: Vec::new(),
                charged: 0,
                deferred: None,
            });
        Ok(())
    }

    /// Decodes a request frame ([`Request::decode`]) and records it on its
    /// streamid. Errors: [`PairError::Frame`] when it does not decode;
    /// [`PairError::TooManyOutstanding`].
    pub fn push_request_frame(&mut self, frame: RequestFrame) -> Result<(), PairError> {
        let streamid = frame.header.streamid;
        self.push_request(streamid, Request::decode(frame)?)
    }

    /// Takes one response frame (not the 16-byte handshake reply): `None`
    /// when it is a partial answer, now held; otherwise what it completed.
    ///
    /// Errors: [`PairError::Frame`] for a frame [`Response::decode`]
    /// rejects; [`PairError::NoRequest`]; [`PairError::UnknownStatus`];
    /// [`PairError::WrongStatus`]; [`PairError::TooMuchBuffered`];
    /// [`PairError::Body`] and [`PairError::Mismatch`] for a final answer
    /// that does not decode or does not fit its request.
    pub fn push_response(&mut self, frame: ResponseFrame) -> Result<Option<Event>, PairError> {
        let streamid = frame.header.streamid;
        match Response::decode(frame)? {
            Response::Attn(Attn::AsynResp { streamid, response }) => {
                self.answer(streamid, *response, true)
            }
            Response::Attn(attn) => Ok(Some(Event::Unsolicited(attn))),
            response => self.answer(streamid, response, false),
        }
    }

    /// Ends the stream. Errors: [`PairError::Unanswered`] when requests are
    /// still outstanding (the first named is the one on the lowest
    /// streamid).
    pub fn finish(self) -> Result<(), PairError> {
        let count = self.outstanding();
        let first = self
            .outstanding
            .into_iter()
            .filter_map(|(sid, q)| q.into_iter().next().map(|p| (sid, p)))
            .min_by_key(|(sid, _)| *sid);
        match first {
            None => Ok(()),
            Some((streamid, p)) => Err(PairError::Unanswered {
                count,
                streamid,
                request: p.request.id(),
                partial_frames: p.partial_frames(),
                deferred: p.deferred.is_some(),
            }),
        }
    }

    /// The front request on `streamid`, or [`PairError::NoRequest`].
    fn front(&mut self, streamid: StreamId, status: Status) -> Result<&mut Pending, PairError> {
        self.outstanding
            .get_mut(&streamid)
            .and_then(VecDeque::front_mut)
            .ok_or(PairError::NoRequest { streamid, status })
    }

    /// Removes the front request on `streamid` (which exists), releasing
    /// what it held.
    fn pop(&mut self, streamid: StreamId) -> Pending {
        let queue = self.outstanding.get_mut(&streamid).expect("checked");
        let p = queue.pop_front().expect("checked");
        if queue.is_empty() {
            self.outstanding.remove(&streamid);
        }
        self.buffered -= p.charged;
        self.count -= 1;
        p
    }

    /// Charges `cost` bytes to the front request on `streamid`.
    fn charge(&mut self, streamid: StreamId, cost: usize) -> Result<(), PairError> {
        let would = self.buffered as u64 + cost as u64;
        let max = self.max_buffered;
        let p = self.front(streamid, Status::OKSOFAR)?;
        if would > max as u64 {
            let request = p.request.id();
            let released = p.charged;
            p.chunks.clear();
            p.pages.clear();
            p.charged = 0;
            self.buffered -= released;
            return Err(PairError::TooMuchBuffered {
                streamid,
                request,
                would,
                max: max as u64,
            });
        }
        p.charged += cost;
        self.buffered += cost;
        Ok(())
    }

    /// Applies one response (top-level or from an asynresp) to the request
    /// on `streamid`.
    fn answer(
        &mut self,
        streamid: StreamId,
        response: Response,
        asynresp: bool,
    ) -> Result<Option<Event>, PairError> {
        let status = response.status();
        let p = self.front(streamid, status)?;
        let request = p.request.id();
        let wrong = PairError::WrongStatus {
            streamid,
            request,
            status,
        };
        let is_pg = matches!(p.request, Request::Pgread(_) | Request::PgReadv(_));
        match response {
            Response::OkSoFar(body) => {
                if !p.pages.is_empty() {
                    self.pop(streamid);
                    return Err(wrong);
                }
                self.charge(streamid, ResponseHeader::LEN + body.len())?;
                self.front(streamid, status)?.chunks.push(body);
                return Ok(None);
            }
            Response::WaitResp(waitresp) => {
                p.deferred = Some(waitresp.clone());
                return Ok(Some(Event::Deferred {
                    streamid,
                    request,
                    waitresp,
                }));
            }
            Response::Status(s) if is_pg && !s.is_final() => {
                if !p.chunks.is_empty() {
                    self.pop(streamid);
                    return Err(wrong);
                }
                let frame = PgReadFrame::from_status(&s).map_err(|source| {
                    self.pop(streamid);
                    PairError::Body {
                        streamid,
                        request,
                        source,
                    }
                })?;
                let cost = ResponseHeader::LEN + STATUS_BODY_LEN + s.info.len() + s.data.len();
                self.charge(streamid, cost)?;
                self.front(streamid, status)?.pages.push(frame);
                return Ok(None);
            }
            Response::Unknown(_) => {
                self.pop(streamid);
                return Err(PairError::UnknownStatus { streamid, status });
            }
            _ => {}
        }
        // a final response: the request is done
        let p = self.pop(streamid);
        let frames = p.partial_frames() + 1;
        let fail = |source| PairError::Body {
            streamid,
            request,
            source,
        };
        let misfit = |detail: String| PairError::Mismatch {
            streamid,
            request,
            detail,
        };
        let answer = match response {
            Response::Ok(_) if !p.pages.is_empty() => return Err(wrong),
            Response::Ok(body) => ok_answer(&p.request, p.chunks, body, fail, misfit)?,
            Response::Status(s) => status_answer(&p.request, p.pages, s, fail, misfit, wrong)?,
            Response::Error(e) => Answer::Error(e),
            Response::Redirect(r) => Answer::Redirect(r),
            Response::Wait(w) => Answer::Wait(w),
            Response::AuthMore(b) => Answer::AuthMore(b),
            Response::OkSoFar(_)
            | Response::WaitResp(_)
            | Response::Attn(_)
            | Response::Unknown(_) => unreachable!("handled above"),
        };
        Ok(Some(Event::Exchange(Exchange {
            streamid,
            request: p.request,
            answer,
            frames,
            deferred: if asynresp { p.deferred } else { None },
        })))
    }
}

/// The body of all chunks and the final one, joined (no copy for one).
fn joined(mut chunks: Vec<Bytes>, last: Bytes) -> Bytes {
    if chunks.is_empty() {
        return last;
    }
    chunks.push(last);
    chunks.concat().into()
}

/// Decodes a `kXR_ok` answer (with its `kXR_oksofar` chunks) by the
/// request's kind.
fn ok_answer(
    request: &Request,
    mut chunks: Vec<Bytes>,
    last: Bytes,
    fail: impl Fn(DecodeError) -> PairError,
    misfit: impl Fn(String) -> PairError,
) -> Result<Answer, PairError> {
    Ok(match request {
        Request::Dirlist(d) => {
            chunks.push(last);
            let list = DirList::decode_chunks(&chunks).map_err(&fail)?;
            let asked = d.options.contains(DirlistOptions::DSTAT)
                || d.options.contains(DirlistOptions::DCKSM);
            match &list {
                DirList::Plain(names) if asked && !names.is_empty() => {
                    return Err(misfit("kXR_dstat asked, names without stat came".into()))
                }
                DirList::Stat(_) if !asked => {
                    return Err(misfit("a stat listing came, kXR_dstat not asked".into()))
                }
                _ => {}
            }
            Answer::Dirlist(list)
        }
        Request::Readv(r) => {
            let mut segments = Vec::with_capacity(r.list.len());
            for body in chunks.into_iter().chain([last]) {
                for item in ReadvIter::new(body) {
                    segments.push(item.map_err(&fail)?);
                }
            }
            if segments.len() != r.list.len() {
                return Err(misfit(format!(
                    "{} segments for {} elements",
                    segments.len(),
                    r.list.len()
                )));
            }
            for (i, ((got, _), asked)) in segments.iter().zip(&r.list).enumerate() {
                if got.offset != asked.offset || got.rlen > asked.rlen {
                    return Err(misfit(format!(
                        "segment {i} is {} bytes at {}, element asks {} at {}",
                        got.rlen, got.offset, asked.rlen, asked.offset
                    )));
                }
            }
            Answer::Readv(segments)
        }
        other => {
            let body = joined(chunks, last);
            typed_ok(other, body).map_err(fail)?
        }
    })
}

/// The typed single body of a request's `kXR_ok`.
fn typed_ok(request: &Request, body: Bytes) -> Result<Answer, DecodeError> {
    Ok(match request {
        Request::Open(_) => Answer::Open(OpenResponse::decode(body)?),
        Request::Stat(s) if s.options.contains(StatOptions::VFS) => {
            Answer::StatVfs(StatVfs::decode(body)?)
        }
        Request::Stat(_) => Answer::Stat(StatInfo::decode(body)?),
        Request::Statx(_) => Answer::Statx(decode_statx(&body).collect()),
        Request::Read(_) => Answer::Read(body),
        Request::Query(q) => match q.infotype {
            QueryCode::CKSUM => Answer::Checksum(ChecksumAnswer::decode(body)?),
            QueryCode::CONFIG => Answer::Config(QconfigAnswer::decode(body)?),
            QueryCode::SPACE => Answer::Space(SpaceInfo::decode(body)?),
            _ => Answer::QueryText(body),
        },
        Request::Locate(_) => Answer::Locate(LocateResponse::decode(body)?),
        Request::Protocol(_) => Answer::Protocol(ProtocolResponse::decode(body)?),
        Request::Login(_) => Answer::Login(LoginResponse::decode(body)?),
        Request::Bind(_) => Answer::Bind(BindResponse::decode(body)?),
        Request::Fattr(f) => {
            let values = f.options.contains(FattrOptions::A_DATA);
            match f.subcode {
                FattrSubcode::LIST => Answer::FattrList(FattrList::decode(body, values)?),
                FattrSubcode::GET => Answer::Fattr(FattrReply::decode(body, true)?),
                _ => Answer::Fattr(FattrReply::decode(body, false)?),
            }
        }
        _ if body.is_empty() => Answer::Done,
        _ => Answer::Raw(body),
    })
}

/// Decodes a final `kXR_status` (with the partial pgread frames before it).
fn status_answer(
    request: &Request,
    mut frames: Vec<PgReadFrame>,
    last: StatusResponse,
    fail: impl Fn(DecodeError) -> PairError,
    misfit: impl Fn(String) -> PairError,
    wrong: PairError,
) -> Result<Answer, PairError> {
    match request {
        Request::Pgwrite(_) => Ok(Answer::Pgwrite(
            PgWriteResponse::from_status(&last).map_err(fail)?,
        )),
        Request::Pgread(_) | Request::PgReadv(_) => {
            frames.push(PgReadFrame::from_status(&last).map_err(&fail)?);
            let mut pages = Vec::new();
            for f in &frames {
                for page in f.pages() {
                    pages.push(page.map_err(&fail)?);
                }
            }
            pages.sort_by_key(|p| p.offset);
            let extents: Vec<(u64, u64)> = match request {
                Request::Pgread(r) => vec![(r.offset as u64, r.rlen.max(0) as u64)],
                Request::PgReadv(r) => r
                    .list
                    .iter()
                    .map(|e| (e.offset as u64, e.rlen.max(0) as u64))
                    .collect(),
                _ => unreachable!(),
            };
            for p in &pages {
                let end = p.offset + p.data.len() as u64;
                if !extents
                    .iter()
                    .any(|&(at, len)| p.offset >= at && end <= at + len)
                {
                    return Err(misfit(format!(
                        "a page of {} bytes at offset {} is outside the extents asked",
                        p.data.len(),
                        p.offset
                    )));
                }
            }
            if let Some(w) = pages
                .windows(2)
                .find(|w| w[0].offset + w[0].data.len() as u64 > w[1].offset)
            {
                return Err(misfit(format!(
                    "pages at {} and {} overlap",
                    w[0].offset, w[1].offset
                )));
            }
            let bad_pages = pages
                .iter()
                .filter(|p| !p.is_valid())
                .map(|p| p.offset)
                .collect();
            Ok(Answer::Pgread(PgReadAnswer {
                frames,
                pages,
                bad_pages,
            }))
        }
        _ => Err(wrong),
    }
}

#[cfg(test)]
mod tests;
