//! Typed cmsd messages: [`CmsRequest`] for everything a node, manager or
//! redirector sends as a request (code 0–27), [`CmsResponse`] for the answers
//! a manager gives a redirector (code 0–5). Which of the two a frame holds
//! depends on the direction of the link: code 0 is `login` one way and
//! `data` the other.
//!
//! Strings come back as [`Bytes`] slices of the frame, without their NUL.
//! Field order and optional fields follow `XrdCmsParser`'s argument lists; a
//! path sent with the [`RAW`] modifier is a bare NUL-terminated string.

use bytes::{BufMut, Bytes, BytesMut};

use super::codes::{self, LoginMode, RespCode, RrCode, SelectOpts, YError, RAW, VERSION};
use super::frame::CmsFrame;
use super::pup::{strip_nul, PupReader, PupWriter};
use crate::DecodeError;

/// `kYR_login` (both ways: a node's login and the manager's reply).
///
/// The numbers before the fence are always sent; the strings after it may
/// be absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// Protocol version ([`VERSION`]).
    pub version: u16,
    /// Role and state.
    pub mode: LoginMode,
    /// The node's process id (servers) or hold time in ms (managers).
    pub hold_time: u32,
    /// Total space, GB.
    pub total_gb: u32,
    /// Largest free space of one file system, MB.
    pub free_mb: u32,
    /// Minimum free space the node asks for, MB.
    pub min_free_mb: u32,
    /// Number of file systems.
    pub fs_num: u16,
    /// Utilisation of the file systems, percent.
    pub fs_util: u16,
    /// The port clients are redirected to.
    pub data_port: u16,
    /// The subscription port of a manager (its own cmsd port).
    pub sub_port: u16,
    /// The system id (`"s-<name>@<host> <cluster>"`).
    pub sid: Option<Bytes>,
    /// The exported paths, one per line: `"w /data\nr /ro"`.
    pub paths: Option<Bytes>,
    /// The interfaces (`XRDIFADDRS`).
    pub if_list: Option<Bytes>,
    /// Environment as CGI (`"myHN=<host>&site=<name>"`).
    pub env_cgi: Option<Bytes>,
}

impl Login {
    /// A login of `mode` with every number zero but the version, and no
    /// strings.
    pub fn new(mode: LoginMode) -> Login {
        Login {
            version: VERSION,
            mode,
            hold_time: 0,
            total_gb: 0,
            free_mb: 0,
            min_free_mb: 0,
            fs_num: 0,
            fs_util: 0,
            data_port: 0,
            sub_port: 0,
            sid: None,
            paths: None,
            if_list: None,
            env_cgi: None,
        }
    }

    fn decode(payload: Bytes) -> Result<Login, DecodeError> {
        let mut r = PupReader::new("kYR_login", payload);
        Ok(Login {
            version: r.short()?,
            mode: LoginMode(r.int()?),
            hold_time: r.int()?,
            total_gb: r.int()?,
            free_mb: r.int()?,
            min_free_mb: r.int()?,
            fs_num: r.short()?,
            fs_util: r.short()?,
            data_port: r.short()?,
            sub_port: r.short()?,
            sid: r.trailing_string()?,
            paths: r.trailing_string()?,
            if_list: r.trailing_string()?,
            env_cgi: r.trailing_string()?,
        })
    }

    fn encode(&self, w: &mut PupWriter<'_>) -> Result<(), DecodeError> {
        w.short(self.version);
        w.int(self.mode.0);
        w.int(self.hold_time);
        w.int(self.total_gb);
        w.int(self.free_mb);
        w.int(self.min_free_mb);
        w.short(self.fs_num);
        w.short(self.fs_util);
        w.short(self.data_port);
        w.short(self.sub_port);
        w.string("kYR_login SID", self.sid.as_deref())?;
        w.string("kYR_login paths", self.paths.as_deref())?;
        w.string("kYR_login ifList", self.if_list.as_deref())?;
        w.string("kYR_login envCGI", self.env_cgi.as_deref())
    }
}

/// `kYR_select` and `kYR_locate`: where may a client open (or find) `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    /// Who asks (a trace id; may be empty).
    pub ident: Bytes,
    /// What the client will do.
    pub opts: SelectOpts,
    /// The file.
    pub path: Bytes,
    /// The client's CGI, if any.
    pub opaque: Option<Bytes>,
    /// Hosts to avoid (`tried=`), comma separated.
    pub avoid: Option<Bytes>,
}

impl Select {
    fn decode(what: &'static str, payload: Bytes) -> Result<Select, DecodeError> {
        let mut r = PupReader::new(what, payload);
        Ok(Select {
            ident: r.optional_string()?.unwrap_or_default(),
            opts: SelectOpts(r.int()?),
            path: r.string()?,
            opaque: r.trailing_string()?,
            avoid: r.trailing_string()?,
        })
    }

    fn encode(&self, w: &mut PupWriter<'_>) -> Result<(), DecodeError> {
        w.string("select ident", Some(&self.ident))?;
        w.int(self.opts.0);
        w.string("select path", Some(&self.path))?;
        if self.opaque.is_some() || self.avoid.is_some() {
            w.string("select opaque", self.opaque.as_deref())?;
        }
        if self.avoid.is_some() {
            w.string("select avoid", self.avoid.as_deref())?;
        }
        Ok(())
    }
}

/// A namespace request a manager forwards to its nodes (`chmod`, `mkdir`,
/// `mkpath`, `trunc`: ident, mode, path; `mv`: ident, path, path2; `rm`,
/// `rmdir`: ident, path), each with optional CGI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// The header modifier: hop count (0xc0) and `kYR_dnf` (0x10).
    pub modifier: u8,
    /// Who asks.
    pub ident: Bytes,
    /// The mode in octal text (`chmod`, `mkdir`, `mkpath`) or the size
    /// (`trunc`); `None` for the others.
    pub mode: Option<Bytes>,
    /// The path.
    pub path: Bytes,
    /// The new path of `mv`.
    pub path2: Option<Bytes>,
    /// The CGI of `path`.
    pub opaque: Option<Bytes>,
    /// The CGI of `path2` (`mv`).
    pub opaque2: Option<Bytes>,
}

impl Forward {
    fn decode(code: RrCode, modifier: u8, payload: Bytes) -> Result<Forward, DecodeError> {
        let what = code.protocol_name().unwrap_or("kYR forwarded request");
        let mut r = PupReader::new(what, payload);
        let ident = r.optional_string()?.unwrap_or_default();
        let mode = if Self::has_mode(code) {
            Some(r.string()?)
        } else {
            None
        };
        let path = r.string()?;
        let path2 = if code == RrCode::MV {
            Some(r.string()?)
        } else {
            None
        };
        let opaque = r.trailing_string()?;
        let opaque2 = if code == RrCode::MV {
            r.trailing_string()?
        } else {
            None
        };
        Ok(Forward {
            modifier,
            ident,
            mode,
            path,
            path2,
            opaque,
            opaque2,
        })
    }

    fn has_mode(code: RrCode) -> bool {
        matches!(
            code,
            RrCode::CHMOD | RrCode::MKDIR | RrCode::MKPATH | RrCode::TRUNC
        )
    }

    fn encode(&self, code: RrCode, w: &mut PupWriter<'_>) -> Result<(), DecodeError> {
        w.string("forward ident", Some(&self.ident))?;
        if Self::has_mode(code) {
            w.string("forward mode", Some(self.mode.as_deref().unwrap_or(b"0")))?;
        }
        w.string("forward path", Some(&self.path))?;
        if code == RrCode::MV {
            w.string("forward path2", Some(self.path2.as_deref().unwrap_or(b"")))?;
        }
        if self.opaque.is_some() || self.opaque2.is_some() {
            w.string("forward opaque", self.opaque.as_deref())?;
        }
        if code == RrCode::MV && self.opaque2.is_some() {
            w.string("forward opaque2", self.opaque2.as_deref())?;
        }
        Ok(())
    }
}

/// `kYR_prepadd`: stage a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepAdd {
    /// The header modifier (`kYR_stage`, `kYR_write`, ... of `CmsPrepAddRequest`).
    pub modifier: u8,
    /// Who asks.
    pub ident: Bytes,
    /// The request id.
    pub reqid: Bytes,
    /// Where to notify.
    pub notify: Bytes,
    /// Priority.
    pub prty: Bytes,
    /// Mode.
    pub mode: Bytes,
    /// The file.
    pub path: Bytes,
    /// Its CGI.
    pub opaque: Option<Bytes>,
}

/// `kYR_prepdel`: cancel a staging request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepDel {
    /// Who asks.
    pub ident: Bytes,
    /// The request id to cancel.
    pub reqid: Bytes,
}

/// `kYR_state`: does the node have `path`? A node that does answers
/// [`Have`] with the same streamid; one that does not stays silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The file.
    pub path: Bytes,
    /// Modifier bits of [`codes::state`] (the [`RAW`] bit is the encoding's).
    pub modifier: u8,
}

impl State {
    /// A plain `state` query for `path`.
    pub fn new(path: impl Into<Bytes>) -> State {
        State {
            path: path.into(),
            modifier: 0,
        }
    }
}

/// `kYR_have`: the node has `path` (an answer to [`State`], or on its own
/// when a file appears).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Have {
    /// The file.
    pub path: Bytes,
    /// Being staged rather than on disk now.
    pub pending: bool,
}

impl Have {
    /// The node has `path` on disk now.
    pub fn online(path: impl Into<Bytes>) -> Have {
        Have {
            path: path.into(),
            pending: false,
        }
    }
}

/// `kYR_load`: a node's load, the answer to `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// Percentages: cpu, network, execution queue, memory, paging, disk
    /// utilisation (`CmsLoadRequest::cpuLoad` ... `dskLoad`).
    pub loads: [u8; 6],
    /// Largest free space, MB.
    pub free_mb: u32,
}

/// `kYR_avail`: a node's free space, the answer to `space`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avail {
    /// Largest free space, MB.
    pub free_mb: u32,
    /// Disk utilisation, percent.
    pub util: u32,
}

/// `kYR_status`: a node suspends or resumes service, or staging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Bits of [`codes::status`]. On a resume the streamid carries the
    /// node's data port.
    pub modifier: u8,
}

/// `kYR_try`: log into these managers instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Try {
    /// Space-separated `host:port` entries.
    pub hosts: Bytes,
    /// A permanent redirect to the top manager ([`codes::TRY_PERMTOP`]).
    pub permanent: bool,
}

impl Try {
    /// The `host:port` entries.
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        std::str::from_utf8(&self.hosts)
            .unwrap_or("")
            .split_ascii_whitespace()
    }
}

/// A cmsd request, typed by its code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmsRequest {
    /// `kYR_login`.
    Login(Login),
    /// `kYR_chmod` (forwarded).
    Chmod(Forward),
    /// `kYR_locate`.
    Locate(Select),
    /// `kYR_mkdir` (forwarded).
    Mkdir(Forward),
    /// `kYR_mkpath` (forwarded).
    Mkpath(Forward),
    /// `kYR_mv` (forwarded).
    Mv(Forward),
    /// `kYR_prepadd`.
    PrepAdd(PrepAdd),
    /// `kYR_prepdel`.
    PrepDel(PrepDel),
    /// `kYR_rm` (forwarded).
    Rm(Forward),
    /// `kYR_rmdir` (forwarded).
    Rmdir(Forward),
    /// `kYR_select`.
    Select(Select),
    /// `kYR_stats`; `true` for `statsz` (the `kYR_size` modifier).
    Stats(bool),
    /// `kYR_avail`.
    Avail(Avail),
    /// `kYR_disc`: close the link.
    Disc,
    /// `kYR_gone`: the node no longer has this path.
    Gone(Bytes),
    /// `kYR_have`.
    Have(Have),
    /// `kYR_load`.
    Load(Load),
    /// `kYR_ping`: answer [`CmsRequest::Pong`].
    Ping,
    /// `kYR_pong`.
    Pong,
    /// `kYR_space`: answer [`CmsRequest::Avail`].
    Space,
    /// `kYR_state`.
    State(State),
    /// `kYR_statfs` of a path.
    Statfs(Bytes),
    /// `kYR_status`.
    Status(Status),
    /// `kYR_trunc` (forwarded).
    Trunc(Forward),
    /// `kYR_try`.
    Try(Try),
    /// `kYR_update`: report your state again.
    Update,
    /// `kYR_usage`: answer [`CmsRequest::Load`].
    Usage,
    /// `kYR_xauth`: authentication data, opaque here.
    Xauth(Bytes),
    /// A code this crate does not know, kept whole.
    Unknown(CmsFrame),
}

/// A path argument: bare NUL-terminated with the [`RAW`] modifier, else one
/// Pup string.
fn decode_path(what: &'static str, frame: &CmsFrame) -> Result<Bytes, DecodeError> {
    let path = if frame.header.modifier & RAW != 0 {
        strip_nul(frame.payload.clone())
    } else {
        PupReader::new(what, frame.payload.clone()).string()?
    };
    if path.is_empty() {
        return Err(DecodeError::malformed(what, "empty path"));
    }
    Ok(path)
}

fn raw_path(path: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(path.len() + 1);
    v.extend_from_slice(path);
    v.push(0);
    v
}

impl CmsRequest {
    /// The request code.
    pub fn code(&self) -> RrCode {
        match self {
            CmsRequest::Login(_) => RrCode::LOGIN,
            CmsRequest::Chmod(_) => RrCode::CHMOD,
            CmsRequest::Locate(_) => RrCode::LOCATE,
            CmsRequest::Mkdir(_) => RrCode::MKDIR,
            CmsRequest::Mkpath(_) => RrCode::MKPATH,
            CmsRequest::Mv(_) => RrCode::MV,
            CmsRequest::PrepAdd(_) => RrCode::PREPADD,
            CmsRequest::PrepDel(_) => RrCode::PREPDEL,
            CmsRequest::Rm(_) => RrCode::RM,
            CmsRequest::Rmdir(_) => RrCode::RMDIR,
            CmsRequest::Select(_) => RrCode::SELECT,
            CmsRequest::Stats(_) => RrCode::STATS,
            CmsRequest::Avail(_) => RrCode::AVAIL,
            CmsRequest::Disc => RrCode::DISC,
            CmsRequest::Gone(_) => RrCode::GONE,
            CmsRequest::Have(_) => RrCode::HAVE,
            CmsRequest::Load(_) => RrCode::LOAD,
            CmsRequest::Ping => RrCode::PING,
            CmsRequest::Pong => RrCode::PONG,
            CmsRequest::Space => RrCode::SPACE,
            CmsRequest::State(_) => RrCode::STATE,
            CmsRequest::Statfs(_) => RrCode::STATFS,
            CmsRequest::Status(_) => RrCode::STATUS,
            CmsRequest::Trunc(_) => RrCode::TRUNC,
            CmsRequest::Try(_) => RrCode::TRY,
            CmsRequest::Update => RrCode::UPDATE,
            CmsRequest::Usage => RrCode::USAGE,
            CmsRequest::Xauth(_) => RrCode::XAUTH,
            CmsRequest::Unknown(f) => RrCode(f.header.code),
        }
    }

    /// Decodes a request frame.
    ///
    /// # Errors
    /// A [`DecodeError`] naming the request (`"kYR_login"`, ...) when its
    /// payload does not hold the fields its code needs: a payload cut short
    /// ([`DecodeError::Truncated`]), a number where a string belongs or the
    /// reverse ([`DecodeError::WrongKind`]), a required string that is null
    /// ([`DecodeError::Malformed`]). Unknown codes are not an error.
    pub fn decode(frame: &CmsFrame) -> Result<CmsRequest, DecodeError> {
        let code = RrCode(frame.header.code);
        let modifier = frame.header.modifier;
        let payload = frame.payload.clone();
        let what = code.protocol_name().unwrap_or("cmsd request");
        Ok(match code {
            RrCode::LOGIN => CmsRequest::Login(Login::decode(payload)?),
            RrCode::CHMOD => CmsRequest::Chmod(Forward::decode(code, modifier, payload)?),
            RrCode::LOCATE => CmsRequest::Locate(Select::decode(what, payload)?),
            RrCode::MKDIR => CmsRequest::Mkdir(Forward::decode(code, modifier, payload)?),
            RrCode::MKPATH => CmsRequest::Mkpath(Forward::decode(code, modifier, payload)?),
            RrCode::MV => CmsRequest::Mv(Forward::decode(code, modifier, payload)?),
            RrCode::RM => CmsRequest::Rm(Forward::decode(code, modifier, payload)?),
            RrCode::RMDIR => CmsRequest::Rmdir(Forward::decode(code, modifier, payload)?),
            RrCode::TRUNC => CmsRequest::Trunc(Forward::decode(code, modifier, payload)?),
            RrCode::PREPADD => {
                let mut r = PupReader::new(what, payload);
                CmsRequest::PrepAdd(PrepAdd {
                    modifier,
                    ident: r.optional_string()?.unwrap_or_default(),
                    reqid: r.string()?,
                    notify: r.optional_string()?.unwrap_or_default(),
                    prty: r.optional_string()?.unwrap_or_default(),
                    mode: r.optional_string()?.unwrap_or_default(),
                    path: r.string()?,
                    opaque: r.trailing_string()?,
                })
            }
            RrCode::PREPDEL => {
                let mut r = PupReader::new(what, payload);
                CmsRequest::PrepDel(PrepDel {
                    ident: r.optional_string()?.unwrap_or_default(),
                    reqid: r.string()?,
                })
            }
            RrCode::SELECT => CmsRequest::Select(Select::decode(what, payload)?),
            RrCode::STATS => CmsRequest::Stats(modifier & 1 != 0),
            RrCode::AVAIL => {
                let mut r = PupReader::new(what, payload);
                CmsRequest::Avail(Avail {
                    free_mb: r.int()?,
                    util: r.int()?,
                })
            }
            RrCode::DISC => CmsRequest::Disc,
            RrCode::GONE => CmsRequest::Gone(decode_path(what, frame)?),
            RrCode::HAVE => CmsRequest::Have(Have {
                path: decode_path(what, frame)?,
                pending: modifier & codes::have::PENDING != 0,
            }),
            RrCode::LOAD => {
                let mut r = PupReader::new(what, payload);
                let raw = r.binary()?;
                let mut loads = [0u8; 6];
                if raw.len() < loads.len() {
                    return Err(DecodeError::truncated("kYR_load loads", 6, raw.len()));
                }
                loads.copy_from_slice(&raw[..6]);
                CmsRequest::Load(Load {
                    loads,
                    free_mb: r.int()?,
                })
            }
            RrCode::PING => CmsRequest::Ping,
            RrCode::PONG => CmsRequest::Pong,
            RrCode::SPACE => CmsRequest::Space,
            RrCode::STATE => CmsRequest::State(State {
                path: decode_path(what, frame)?,
                modifier: modifier & !RAW,
            }),
            RrCode::STATFS => CmsRequest::Statfs(decode_path(what, frame)?),
            RrCode::STATUS => CmsRequest::Status(Status { modifier }),
            RrCode::TRY => CmsRequest::Try(Try {
                hosts: PupReader::new(what, payload)
                    .optional_string()?
                    .unwrap_or_default(),
                permanent: modifier & codes::TRY_PERMTOP != 0,
            }),
            RrCode::UPDATE => CmsRequest::Update,
            RrCode::USAGE => CmsRequest::Usage,
            RrCode::XAUTH => CmsRequest::Xauth(payload),
            _ => CmsRequest::Unknown(frame.clone()),
        })
    }

    /// Appends this request as one frame to `out`. Paths of `state`,
    /// `have` and `gone` go raw (as a stock cmsd sends them), everything
    /// else as Pup fields.
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when a string is over
    /// [`super::pup::MAX_STRING`] bytes or the payload over 65,535; `out`
    /// is left as it was.
    pub fn encode(&self, streamid: u32, out: &mut BytesMut) -> Result<(), DecodeError> {
        let mut payload = BytesMut::new();
        let mut modifier = 0u8;
        {
            let mut w = PupWriter::new(&mut payload);
            match self {
                CmsRequest::Login(l) => l.encode(&mut w)?,
                CmsRequest::Chmod(f)
                | CmsRequest::Mkdir(f)
                | CmsRequest::Mkpath(f)
                | CmsRequest::Mv(f)
                | CmsRequest::Rm(f)
                | CmsRequest::Rmdir(f)
                | CmsRequest::Trunc(f) => {
                    modifier = f.modifier;
                    f.encode(self.code(), &mut w)?
                }
                CmsRequest::Locate(s) | CmsRequest::Select(s) => s.encode(&mut w)?,
                CmsRequest::PrepAdd(p) => {
                    modifier = p.modifier;
                    w.string("prepadd ident", Some(&p.ident))?;
                    w.string("prepadd reqid", Some(&p.reqid))?;
                    w.string("prepadd notify", Some(&p.notify))?;
                    w.string("prepadd prty", Some(&p.prty))?;
                    w.string("prepadd mode", Some(&p.mode))?;
                    w.string("prepadd path", Some(&p.path))?;
                    if p.opaque.is_some() {
                        w.string("prepadd opaque", p.opaque.as_deref())?;
                    }
                }
                CmsRequest::PrepDel(p) => {
                    w.string("prepdel ident", Some(&p.ident))?;
                    w.string("prepdel reqid", Some(&p.reqid))?;
                }
                CmsRequest::Stats(size) => modifier = u8::from(*size),
                CmsRequest::Avail(a) => {
                    w.int(a.free_mb);
                    w.int(a.util);
                }
                CmsRequest::Load(l) => {
                    w.binary("kYR_load loads", &l.loads)?;
                    w.int(l.free_mb);
                }
                CmsRequest::Statfs(path) => w.string("statfs path", Some(path))?,
                CmsRequest::Try(t) => {
                    modifier = if t.permanent { codes::TRY_PERMTOP } else { 0 };
                    w.string("try hosts", Some(&t.hosts))?;
                }
                CmsRequest::Status(s) => modifier = s.modifier,
                CmsRequest::Xauth(b) => payload.put_slice(b),
                CmsRequest::Gone(path) => {
                    modifier = RAW;
                    payload.put_slice(&raw_path(path));
                }
                CmsRequest::Have(h) => {
                    modifier = RAW
                        | if h.pending {
                            codes::have::PENDING
                        } else {
                            codes::have::ONLINE
                        };
                    payload.put_slice(&raw_path(&h.path));
                }
                CmsRequest::State(s) => {
                    modifier = RAW | s.modifier;
                    payload.put_slice(&raw_path(&s.path));
                }
                CmsRequest::Unknown(f) => {
                    modifier = f.header.modifier;
                    payload.put_slice(&f.payload);
                }
                CmsRequest::Disc
                | CmsRequest::Ping
                | CmsRequest::Pong
                | CmsRequest::Space
                | CmsRequest::Update
                | CmsRequest::Usage => {}
            }
        }
        CmsFrame::encode(streamid, self.code().0, modifier, &payload, out)
    }
}

/// What a manager answers a redirector's `select` or `locate`.
///
/// Every answer's payload starts with a 4-byte value (`CmsResponse::Val`);
/// the [`codes::ASYNC`] modifier marks the real answer to an earlier
/// [`CmsResponse::WaitResp`] (its streamid is the one the `waitresp` gave).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmsResponse {
    /// `kYR_data`: text, e.g. a locate list (`"Sw[::127.0.0.1]:1094 ..."`).
    Data(Bytes),
    /// `kYR_error`.
    Error {
        /// Why.
        code: YError,
        /// A message.
        message: Bytes,
    },
    /// `kYR_redirect`: go to `host` (maybe with `?cgi`) at `port`.
    Redirect {
        /// The data port.
        port: u32,
        /// The host name or address.
        host: Bytes,
    },
    /// `kYR_wait`: ask again in this many seconds.
    Wait(u32),
    /// `kYR_waitresp`: the answer will come later, with this id.
    WaitResp(u32),
    /// Any other code (`kYR_yauth`, unknown), kept whole.
    Other {
        /// The code.
        code: RespCode,
        /// The 4-byte value.
        val: u32,
        /// The rest.
        data: Bytes,
    },
}

impl CmsResponse {
    /// The response code.
    pub fn code(&self) -> RespCode {
        match self {
            CmsResponse::Data(_) => RespCode::DATA,
            CmsResponse::Error { .. } => RespCode::ERROR,
            CmsResponse::Redirect { .. } => RespCode::REDIRECT,
            CmsResponse::Wait(_) => RespCode::WAIT,
            CmsResponse::WaitResp(_) => RespCode::WAITRESP,
            CmsResponse::Other { code, .. } => *code,
        }
    }

    /// Decodes an answer frame. A payload shorter than the 4-byte value
    /// reads as value 0 and no data, as the stock redirector reads it.
    ///
    /// # Errors
    /// None today; the signature keeps room for stricter checks.
    pub fn decode(frame: &CmsFrame) -> Result<CmsResponse, DecodeError> {
        let p = &frame.payload;
        let (val, data) = if p.len() < 4 {
            (0, Bytes::new())
        } else {
            (u32::from_be_bytes([p[0], p[1], p[2], p[3]]), p.slice(4..))
        };
        Ok(match RespCode(frame.header.code) {
            RespCode::DATA => CmsResponse::Data(strip_nul(data)),
            RespCode::ERROR => CmsResponse::Error {
                code: YError(val),
                message: strip_nul(data),
            },
            RespCode::REDIRECT => CmsResponse::Redirect {
                port: val,
                host: strip_nul(data),
            },
            RespCode::WAIT => CmsResponse::Wait(val),
            RespCode::WAITRESP => CmsResponse::WaitResp(val),
            code => CmsResponse::Other { code, val, data },
        })
    }

    /// Appends this answer as one frame to `out`; `asynchronous` sets the
    /// [`codes::ASYNC`] modifier.
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when the payload is over 65,535 bytes.
    pub fn encode(
        &self,
        streamid: u32,
        asynchronous: bool,
        out: &mut BytesMut,
    ) -> Result<(), DecodeError> {
        let mut payload = BytesMut::new();
        let text = |payload: &mut BytesMut, val: u32, s: &[u8]| {
            payload.put_u32(val);
            payload.put_slice(s);
            payload.put_u8(0);
        };
        match self {
            CmsResponse::Data(d) => text(&mut payload, d.len() as u32 + 1, d),
            CmsResponse::Error { code, message } => text(&mut payload, code.0, message),
            CmsResponse::Redirect { port, host } => text(&mut payload, *port, host),
            CmsResponse::Wait(v) | CmsResponse::WaitResp(v) => payload.put_u32(*v),
            CmsResponse::Other { val, data, .. } => {
                payload.put_u32(*val);
                payload.put_slice(data);
            }
        }
        let modifier = if asynchronous { codes::ASYNC } else { 0 };
        CmsFrame::encode(streamid, self.code().0, modifier, &payload, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cms::CmsDecoder;

    fn round_trip(req: CmsRequest) -> CmsRequest {
        let mut wire = BytesMut::new();
        req.encode(42, &mut wire).unwrap();
        let frame = CmsDecoder::new().decode(&mut wire).unwrap().unwrap();
        assert_eq!(frame.header.streamid, 42);
        assert!(wire.is_empty());
        CmsRequest::decode(&frame).unwrap()
    }

    #[test]
    fn every_request_round_trips() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        let fwd = |mode: Option<Bytes>, path2: Option<Bytes>| Forward {
            modifier: 0x40,
            ident: b("id"),
            mode,
            path: b("/a"),
            path2,
            opaque: Some(b("x=1")),
            opaque2: None,
        };
        let mut login = Login::new(LoginMode::SERVER | LoginMode::NOSTAGE);
        login.hold_time = 1234;
        login.data_port = 1094;
        login.free_mb = 66695;
        login.sid = Some(b("s-ds4@vm 11401localhost"));
        login.paths = Some(b("w /"));
        login.env_cgi = Some(b("myHN=vm"));
        let select = Select {
            ident: b(""),
            opts: SelectOpts::READ,
            path: b("/f"),
            opaque: None,
            avoid: Some(b("host1")),
        };
        let all = vec![
            CmsRequest::Login(login),
            CmsRequest::Chmod(fwd(Some(b("644")), None)),
            CmsRequest::Locate(select.clone()),
            CmsRequest::Mkdir(fwd(Some(b("755")), None)),
            CmsRequest::Mkpath(fwd(Some(b("755")), None)),
            CmsRequest::Mv(fwd(None, Some(b("/b")))),
            CmsRequest::PrepAdd(PrepAdd {
                modifier: 1,
                ident: b("i"),
                reqid: b("r"),
                notify: b("n"),
                prty: b("0"),
                mode: b("m"),
                path: b("/p"),
                opaque: None,
            }),
            CmsRequest::PrepDel(PrepDel {
                ident: b("i"),
                reqid: b("r"),
            }),
            CmsRequest::Rm(fwd(None, None)),
            CmsRequest::Rmdir(fwd(None, None)),
            CmsRequest::Select(select),
            CmsRequest::Stats(true),
            CmsRequest::Avail(Avail {
                free_mb: 5,
                util: 75,
            }),
            CmsRequest::Disc,
            CmsRequest::Gone(b("/g")),
            CmsRequest::Have(Have {
                path: b("/h"),
                pending: true,
            }),
            CmsRequest::Load(Load {
                loads: [1, 2, 0, 4, 5, 0],
                free_mb: 9,
            }),
            CmsRequest::Ping,
            CmsRequest::Pong,
            CmsRequest::Space,
            CmsRequest::State(State {
                path: b("/s"),
                modifier: codes::state::REFRESH,
            }),
            CmsRequest::Statfs(b("/")),
            CmsRequest::Status(Status {
                modifier: codes::status::SUSPEND,
            }),
            CmsRequest::Trunc(fwd(Some(b("100")), None)),
            CmsRequest::Try(Try {
                hosts: b("a:1 b:2"),
                permanent: false,
            }),
            CmsRequest::Update,
            CmsRequest::Usage,
            CmsRequest::Xauth(b("blob")),
        ];
        for req in all {
            assert_eq!(round_trip(req.clone()), req);
        }
    }

    #[test]
    fn a_stock_login_decodes() {
        // the fields a stock 5.5.3 data cmsd sent, as its Pup encoder lays them out
        let mut payload = BytesMut::new();
        let mut w = PupWriter::new(&mut payload);
        w.short(3);
        for v in [0x0080_0248u32, 4242, 258019, 66695, 10240] {
            w.int(v);
        }
        for v in [1u16, 75, 11320, 35819] {
            w.short(v);
        }
        for s in ["s-ds4@vm 11401localhost", "w /", "", "myHN=vm"] {
            w.string("s", Some(s.as_bytes())).unwrap();
        }
        let mut wire = BytesMut::new();
        CmsFrame::encode(0, 0, 0, &payload, &mut wire).unwrap();
        let frame = CmsDecoder::new().decode(&mut wire).unwrap().unwrap();
        let CmsRequest::Login(l) = CmsRequest::decode(&frame).unwrap() else {
            panic!("not a login")
        };
        assert!(l.mode.contains(LoginMode::SERVER | LoginMode::BLREDIR));
        assert_eq!((l.data_port, l.sub_port, l.free_mb), (11320, 35819, 66695));
        assert_eq!(l.paths.as_deref(), Some(&b"w /"[..]));
        assert_eq!(l.if_list.as_deref(), Some(&b""[..]));
        assert_eq!(l.env_cgi.as_deref(), Some(&b"myHN=vm"[..]));
    }

    #[test]
    fn a_login_without_the_optional_strings_decodes() {
        let mut wire = BytesMut::new();
        let mut l = Login::new(LoginMode::DIRECTOR);
        l.hold_time = 7;
        CmsRequest::Login(l.clone()).encode(0, &mut wire).unwrap();
        // cut the four null strings (8 bytes) off the end
        let n = wire.len() - 8;
        wire.truncate(n);
        wire[7] -= 8;
        let frame = CmsDecoder::new().decode(&mut wire).unwrap().unwrap();
        assert_eq!(CmsRequest::decode(&frame).unwrap(), CmsRequest::Login(l));
    }

    #[test]
    fn raw_and_pup_paths_both_decode() {
        let pup = {
            let mut p = BytesMut::new();
            PupWriter::new(&mut p).string("p", Some(b"/x")).unwrap();
            p.freeze()
        };
        for (modifier, payload) in [(0u8, pup), (RAW, Bytes::from_static(b"/x\0"))] {
            let frame = CmsFrame {
                header: crate::cms::CmsHeader {
                    streamid: 1,
                    code: RrCode::STATE.0,
                    modifier,
                    datalen: payload.len() as u16,
                },
                payload,
            };
            assert_eq!(
                CmsRequest::decode(&frame).unwrap(),
                CmsRequest::State(State::new("/x"))
            );
        }
    }

    #[test]
    fn hostile_payloads_are_typed_errors() {
        let frame = |code: RrCode, modifier: u8, payload: &'static [u8]| CmsFrame {
            header: crate::cms::CmsHeader {
                streamid: 0,
                code: code.0,
                modifier,
                datalen: payload.len() as u16,
            },
            payload: Bytes::from_static(payload),
        };
        for f in [
            frame(RrCode::LOGIN, 0, &[0x80, 0]),
            frame(RrCode::LOGIN, 0, &[0x00, 0x05, 1, 2]),
            frame(RrCode::SELECT, 0, &[0x00, 0x01, 0, 0x80, 0, 1]),
            frame(RrCode::STATE, RAW, b"\0"),
            // a Pup path of just its NUL: empty, as the raw form
            frame(RrCode::GONE, 0, &[0x00, 0x01, 0x00]),
            frame(RrCode::STATE, 0, &[0xff, 0xff]),
            frame(RrCode::LOAD, 0, &[0x00, 0x02, 1, 2, 0xa0, 0, 0, 0, 0]),
            frame(RrCode::AVAIL, 0, &[0xa0, 0, 0, 0, 1]),
            frame(RrCode::MV, 0, &[0x00, 0x01, 0, 0x00, 0x03, b'/', b'a', 0]),
        ] {
            assert!(CmsRequest::decode(&f).is_err(), "{f:?}");
        }
        let unknown = frame(RrCode(99), 3, b"xyz");
        assert_eq!(
            CmsRequest::decode(&unknown).unwrap(),
            CmsRequest::Unknown(unknown.clone())
        );
    }

    #[test]
    fn responses_round_trip() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        for (resp, asynchronous) in [
            (CmsResponse::Data(b("Sw[::127.0.0.1]:1094")), false),
            (
                CmsResponse::Error {
                    code: YError::ENOENT,
                    message: b("No servers have the file"),
                },
                true,
            ),
            (
                CmsResponse::Redirect {
                    port: 1095,
                    host: b("localhost"),
                },
                false,
            ),
            (CmsResponse::Wait(5), false),
            (CmsResponse::WaitResp(77), false),
        ] {
            let mut wire = BytesMut::new();
            resp.encode(9, asynchronous, &mut wire).unwrap();
            let frame = CmsDecoder::new().decode(&mut wire).unwrap().unwrap();
            assert_eq!(frame.header.modifier & codes::ASYNC != 0, asynchronous);
            assert_eq!(CmsResponse::decode(&frame).unwrap(), resp);
        }
    }
}
