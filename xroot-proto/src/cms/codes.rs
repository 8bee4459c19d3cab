//! The codes of the cmsd protocol (`YProtocol.hh`): request codes, response
//! codes, login modes, select options and error codes, each a newtype that
//! keeps unknown values; the modifier bits and the protocol version.

wire_newtype! {
    /// A request code (`rrCode` of `CmsRRHdr`, `enum CmsReqCode`).
    code RrCode(u8);
    LOGIN = 0 => "kYR_login";
    CHMOD = 1 => "kYR_chmod";
    LOCATE = 2 => "kYR_locate";
    MKDIR = 3 => "kYR_mkdir";
    MKPATH = 4 => "kYR_mkpath";
    MV = 5 => "kYR_mv";
    PREPADD = 6 => "kYR_prepadd";
    PREPDEL = 7 => "kYR_prepdel";
    RM = 8 => "kYR_rm";
    RMDIR = 9 => "kYR_rmdir";
    SELECT = 10 => "kYR_select";
    STATS = 11 => "kYR_stats";
    AVAIL = 12 => "kYR_avail";
    DISC = 13 => "kYR_disc";
    GONE = 14 => "kYR_gone";
    HAVE = 15 => "kYR_have";
    LOAD = 16 => "kYR_load";
    PING = 17 => "kYR_ping";
    PONG = 18 => "kYR_pong";
    SPACE = 19 => "kYR_space";
    STATE = 20 => "kYR_state";
    STATFS = 21 => "kYR_statfs";
    STATUS = 22 => "kYR_status";
    TRUNC = 23 => "kYR_trunc";
    TRY = 24 => "kYR_try";
    UPDATE = 25 => "kYR_update";
    USAGE = 26 => "kYR_usage";
    XAUTH = 27 => "kYR_xauth";
}

wire_newtype! {
    /// A response code (`rrCode` of an answer to a redirector, `enum
    /// CmsRspCode`). Code 0 is also [`RrCode::LOGIN`]: which one a frame
    /// carries depends on who sent it.
    code RespCode(u8);
    DATA = 0 => "kYR_data";
    ERROR = 1 => "kYR_error";
    REDIRECT = 2 => "kYR_redirect";
    WAIT = 3 => "kYR_wait";
    WAITRESP = 4 => "kYR_waitresp";
    YAUTH = 5 => "kYR_yauth";
}

wire_newtype! {
    /// The error code of a `kYR_error` answer (`enum YErrorCode`).
    code YError(u32);
    ENOENT = 1 => "kYR_ENOENT";
    EPERM = 2 => "kYR_EPERM";
    EACCES = 3 => "kYR_EACCES";
    EINVAL = 4 => "kYR_EINVAL";
    EIO = 5 => "kYR_EIO";
    ENOMEM = 6 => "kYR_ENOMEM";
    ENOSPC = 7 => "kYR_ENOSPC";
    ENAMETOOLONG = 8 => "kYR_ENAMETOOLONG";
    ENETUNREACH = 9 => "kYR_ENETUNREACH";
    ENOTBLK = 10 => "kYR_ENOTBLK";
    EISDIR = 11 => "kYR_EISDIR";
    FS_ERROR = 12 => "kYR_FSError";
    SRV_ERROR = 13 => "kYR_SrvError";
    RW_CONFLICT = 14 => "kYR_RWConflict";
    NO_REPLICAS = 15 => "kYR_noReplicas";
}

wire_newtype! {
    /// The `Mode` of a login (`CmsLoginData::LoginMode`): the role of the
    /// node and its state. Bits 24–30 carry a share and bits 19–23 a time
    /// zone.
    flags LoginMode(u32);
    DIRECTOR = 0x0000_0001 => "kYR_director";
    MANAGER = 0x0000_0002 => "kYR_manager";
    PEER = 0x0000_0004 => "kYR_peer";
    SERVER = 0x0000_0008 => "kYR_server";
    PROXY = 0x0000_0010 => "kYR_proxy";
    SUBMAN = 0x0000_0020 => "kYR_subman";
    BLREDIR = 0x0000_0040 => "kYR_blredir";
    SUSPEND = 0x0000_0100 => "kYR_suspend";
    NOSTAGE = 0x0000_0200 => "kYR_nostage";
    TRYING = 0x0000_0400 => "kYR_trying";
    DEBUG = 0x8000_0000 => "kYR_debug";
}

wire_newtype! {
    /// The `Opts` of a `select` or `locate` (`CmsSelectRequest`,
    /// `CmsLocateRequest`): what the client will do with the file.
    flags SelectOpts(u32);
    REFRESH = 0x0000_0001 => "kYR_refresh";
    CREATE = 0x0000_0002 => "kYR_create";
    ONLINE = 0x0000_0004 => "kYR_online";
    READ = 0x0000_0008 => "kYR_read";
    TRUNC = 0x0000_0010 => "kYR_trunc";
    WRITE = 0x0000_0020 => "kYR_write";
    STAT = 0x0000_0040 => "kYR_stat";
    METAOP = 0x0000_0080 => "kYR_metaop";
    REPLICA = 0x0000_0100 => "kYR_replica";
    MWFILES = 0x0000_0200 => "kYR_mwfiles";
    IPV46 = 0x0000_1000 => "kYR_retipv46";
    IPV6 = 0x0000_2000 => "kYR_retipv6";
    PRVTNET = 0x0000_8000 => "kYR_prvtnet";
    TRY_IOER = 0x0001_0000 => "kYR_tryIOER";
    TRY_FSER = 0x0002_0000 => "kYR_tryFSER";
    TRY_RSEL = 0x0004_0000 => "kYR_tryRSEL";
    TRY_RSEG = 0x0008_0000 => "kYR_tryRSEG";
    LIST_ALL = 0x0000_4000 => "kYR_listall";
}

/// Modifiers of `state` (`CmsStateRequest`).
pub mod state {
    /// `kYR_refresh`: look again rather than answer from a cache.
    pub const REFRESH: u8 = 0x01;
    /// `kYR_noresp`: do not answer.
    pub const NORESP: u8 = 0x02;
    /// `kYR_metaman`: asked on behalf of a meta-manager.
    pub const METAMAN: u8 = 0x08;
}

/// Modifiers of `have` (`CmsHaveRequest`).
pub mod have {
    /// `Online`: the file is on disk now.
    pub const ONLINE: u8 = 0x01;
    /// `Pending`: the file is being staged.
    pub const PENDING: u8 = 0x02;
}

/// Modifiers of `status` (`CmsStatusRequest`).
pub mod status {
    /// `kYR_Stage`: staging resumed.
    pub const STAGE: u8 = 0x01;
    /// `kYR_noStage`: staging suspended.
    pub const NOSTAGE: u8 = 0x02;
    /// `kYR_Resume`: the node serves again (the streamid carries its data port).
    pub const RESUME: u8 = 0x04;
    /// `kYR_Suspend`: the node stops serving; the manager selects others.
    pub const SUSPEND: u8 = 0x08;
    /// `kYR_Reset`: drop cached file locations (exclusive).
    pub const RESET: u8 = 0x10;
}

/// The modifier bit of an answer to an earlier `kYR_waitresp`
/// (`CmsResponse::kYR_async`).
pub const ASYNC: u8 = 0x80;

/// The modifier bit of a `try` that is a permanent redirect to the top
/// manager (`CmsTryRequest::kYR_permtop`).
pub const TRY_PERMTOP: u8 = 0x01;

/// `kYR_raw`: the modifier bit of a request whose payload is a bare
/// NUL-terminated path rather than Pup fields.
pub const RAW: u8 = 0x20;

/// `kYR_Version`: the protocol version a login carries (3).
pub const VERSION: u16 = 3;
