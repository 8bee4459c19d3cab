//! Wire codes: request ids, response status, error numbers, attn actions and
//! server types.
//!
//! Each code is a newtype over its wire integer with named constants, so an
//! unknown value still decodes, round-trips and prints. The constants carry the
//! C names of `XProtocol.hh` as doc aliases (`RequestId::READV` ↔ `kXR_readv`).
//! Values: PROTOCOL.md §4 (requests), §8.1 (status), §8.2 (errors), §8.4 (attn).

wire_newtype! {
    /// A request id: bytes 2–3 of the 24-byte request header (`kXR_char requestid[2]`
    /// in `ClientRequestHdr`, big-endian). PROTOCOL.md §4.
    code RequestId(u16);
    AUTH = 3000 => "kXR_auth";
    QUERY = 3001 => "kXR_query";
    CHMOD = 3002 => "kXR_chmod";
    CLOSE = 3003 => "kXR_close";
    DIRLIST = 3004 => "kXR_dirlist";
    GPFILE = 3005 => "kXR_gpfile";
    PROTOCOL = 3006 => "kXR_protocol";
    LOGIN = 3007 => "kXR_login";
    MKDIR = 3008 => "kXR_mkdir";
    MV = 3009 => "kXR_mv";
    OPEN = 3010 => "kXR_open";
    PING = 3011 => "kXR_ping";
    CHKPOINT = 3012 => "kXR_chkpoint";
    READ = 3013 => "kXR_read";
    RM = 3014 => "kXR_rm";
    RMDIR = 3015 => "kXR_rmdir";
    SYNC = 3016 => "kXR_sync";
    STAT = 3017 => "kXR_stat";
    SET = 3018 => "kXR_set";
    WRITE = 3019 => "kXR_write";
    FATTR = 3020 => "kXR_fattr";
    PREPARE = 3021 => "kXR_prepare";
    STATX = 3022 => "kXR_statx";
    ENDSESS = 3023 => "kXR_endsess";
    BIND = 3024 => "kXR_bind";
    READV = 3025 => "kXR_readv";
    PGWRITE = 3026 => "kXR_pgwrite";
    LOCATE = 3027 => "kXR_locate";
    TRUNCATE = 3028 => "kXR_truncate";
    SIGVER = 3029 => "kXR_sigver";
    PGREAD = 3030 => "kXR_pgread";
    WRITEV = 3031 => "kXR_writev";
    CLONE = 3032 => "kXR_clone";
    /// **Extension** (not in stock xrootd): a vector pgread, described in
    /// the project's protocol notes (PROTOCOL.md §16). Never send it unless
    /// the server advertised [`crate::ext::PGREADV_CONFIG_KEY`].
    PGREADV = 3033 => "kXR_pgreadv";
}

impl RequestId {
    /// `kXR_1stRequest`: the lowest request id.
    pub const FIRST: RequestId = RequestId(3000);
    /// `kXR_REQFENCE` of stock xrootd: one past the last standard request id.
    pub const FENCE: RequestId = RequestId(3033);

    /// The one-byte code used in the `kXR_status` body (`requestid - 3000`),
    /// or `None` when the id is below 3000 or above 3255.
    pub const fn status_code(self) -> Option<u8> {
        if self.0 >= 3000 && self.0 - 3000 <= 255 {
            Some((self.0 - 3000) as u8)
        } else {
            None
        }
    }

    /// The inverse of [`RequestId::status_code`].
    pub const fn from_status_code(code: u8) -> RequestId {
        RequestId(3000 + code as u16)
    }
}

wire_newtype! {
    /// A response status: bytes 2–3 of the 8-byte response header
    /// (`ServerResponseHeader::status`). PROTOCOL.md §8.1.
    code Status(u16);
    OK = 0 => "kXR_ok";
    OKSOFAR = 4000 => "kXR_oksofar";
    ATTN = 4001 => "kXR_attn";
    AUTHMORE = 4002 => "kXR_authmore";
    ERROR = 4003 => "kXR_error";
    REDIRECT = 4004 => "kXR_redirect";
    WAIT = 4005 => "kXR_wait";
    WAITRESP = 4006 => "kXR_waitresp";
    STATUS = 4007 => "kXR_status";
}

wire_newtype! {
    /// An error number carried by `kXR_error` (`ServerResponseBody_Error::errnum`).
    /// PROTOCOL.md §8.2 lists them with their errno mapping.
    code ErrorCode(i32);
    ARG_INVALID = 3000 => "kXR_ArgInvalid";
    ARG_MISSING = 3001 => "kXR_ArgMissing";
    ARG_TOO_LONG = 3002 => "kXR_ArgTooLong";
    FILE_LOCKED = 3003 => "kXR_FileLocked";
    FILE_NOT_OPEN = 3004 => "kXR_FileNotOpen";
    FS_ERROR = 3005 => "kXR_FSError";
    INVALID_REQUEST = 3006 => "kXR_InvalidRequest";
    IO_ERROR = 3007 => "kXR_IOError";
    NO_MEMORY = 3008 => "kXR_NoMemory";
    NO_SPACE = 3009 => "kXR_NoSpace";
    NOT_AUTHORIZED = 3010 => "kXR_NotAuthorized";
    NOT_FOUND = 3011 => "kXR_NotFound";
    SERVER_ERROR = 3012 => "kXR_ServerError";
    UNSUPPORTED = 3013 => "kXR_Unsupported";
    NO_SERVER = 3014 => "kXR_noserver";
    NOT_FILE = 3015 => "kXR_NotFile";
    IS_DIRECTORY = 3016 => "kXR_isDirectory";
    CANCELLED = 3017 => "kXR_Cancelled";
    ITEM_EXISTS = 3018 => "kXR_ItExists";
    CHKSUM_ERR = 3019 => "kXR_ChkSumErr";
    IN_PROGRESS = 3020 => "kXR_inProgress";
    OVER_QUOTA = 3021 => "kXR_overQuota";
    SIG_VER_ERR = 3022 => "kXR_SigVerErr";
    DECRYPT_ERR = 3023 => "kXR_DecryptErr";
    OVERLOADED = 3024 => "kXR_Overloaded";
    FS_READ_ONLY = 3025 => "kXR_fsReadOnly";
    BAD_PAYLOAD = 3026 => "kXR_BadPayload";
    ATTR_NOT_FOUND = 3027 => "kXR_AttrNotFound";
    TLS_REQUIRED = 3028 => "kXR_TLSRequired";
    NO_REPLICAS = 3029 => "kXR_noReplicas";
    AUTH_FAILED = 3030 => "kXR_AuthFailed";
    IMPOSSIBLE = 3031 => "kXR_Impossible";
    CONFLICT = 3032 => "kXR_Conflict";
    TOO_MANY_ERRS = 3033 => "kXR_TooManyErrs";
    REQ_TIMED_OUT = 3034 => "kXR_ReqTimedOut";
    TIMER_EXPIRED = 3035 => "kXR_TimerExpired";
}

impl ErrorCode {
    /// The Linux errno a client reports for this code (XrdCl's `toErrno`,
    /// PROTOCOL.md §8.2); `ENOMSG` (42) for any code not in the table.
    pub const fn to_errno(self) -> i32 {
        match self.0 {
            3000 | 3001 | 3026 => 22,
            3002 => 36,
            3003 => 35,
            3004 => 9,
            3005 => 19,
            3006 => 56,
            3007 => 5,
            3008 => 12,
            3009 => 28,
            3010 => 13,
            3011 => 2,
            3012 => 14,
            3013 => 95,
            3014 => 113,
            3015 => 15,
            3016 => 21,
            3017 => 125,
            3018 => 17,
            3019 => 33,
            3020 => 115,
            3021 => 122,
            3022 => 84,
            3023 => 34,
            3024 => 87,
            3025 => 30,
            3027 => 61,
            3028 => 91,
            3029 => 99,
            3030 => 52,
            3031 => 43,
            3032 => 25,
            3033 => 109,
            3034 => 110,
            3035 => 62,
            _ => 42,
        }
    }

    /// The code a server sends for a (Linux) errno: the reference's `mapError`
    /// (PROTOCOL.md §8.2) as the installed xrootd 5.5.3 applies it, which
    /// leaves `ENOTEMPTY` unmapped (the 2026 source maps it to `kXR_ItExists`).
    /// It takes `|errno|`; anything unmapped is `kXR_FSError`.
    pub const fn from_errno(errno: i32) -> ErrorCode {
        let e = if errno < 0 {
            errno.wrapping_neg()
        } else {
            errno
        };
        ErrorCode(match e {
            22 => 3000,
            36 => 3002,
            9 => 3004,
            19 => 3005,
            56 => 3006,
            5 => 3007,
            12 | 105 => 3008,
            28 => 3009,
            13 | 1 => 3010,
            2 => 3011,
            14 => 3012,
            95 => 3013,
            101 | 113 | 111 => 3014,
            15 => 3015,
            21 => 3016,
            125 => 3017,
            17 => 3018,
            33 => 3019,
            26 => 3020,
            122 => 3021,
            84 => 3022,
            34 => 3023,
            87 => 3024,
            30 => 3025,
            61 => 3027,
            91 => 3028,
            99 => 3029,
            52 => 3030,
            43 => 3031,
            25 => 3032,
            109 => 3033,
            110 => 3034,
            62 => 3035,
            _ => 3005,
        })
    }
}

wire_newtype! {
    /// The action number that starts a `kXR_attn` body (`actnum`). Only
    /// `kXR_asynresp` and `kXR_asyncms` are still sent by servers; the rest are
    /// obsolete but named. PROTOCOL.md §8.4.
    code AttnAction(i32);
    ASYNCAB = 5000 => "kXR_asyncab";
    ASYNCDI = 5001 => "kXR_asyncdi";
    ASYNCMS = 5002 => "kXR_asyncms";
    ASYNCRD = 5003 => "kXR_asyncrd";
    ASYNCWT = 5004 => "kXR_asyncwt";
    ASYNCAV = 5005 => "kXR_asyncav";
    ASYNUNAV = 5006 => "kXR_asynunav";
    ASYNCGO = 5007 => "kXR_asyncgo";
    ASYNRESP = 5008 => "kXR_asynresp";
}

wire_newtype! {
    /// The server type in the 16-byte handshake reply (`msgval`). PROTOCOL.md §2.
    code ServerType(i32);
    LOAD_BALANCER = 0 => "kXR_LBalServer";
    DATA_SERVER = 1 => "kXR_DataServer";
}

wire_newtype! {
    /// `resptype` of a `kXR_status` body (`ServerResponseStatus::bdy.resptype`).
    /// PROTOCOL.md §8.1.
    code ResponseType(u8);
    FINAL = 0 => "kXR_FinalResult";
    PARTIAL = 1 => "kXR_PartialResult";
    PROGRESS = 2 => "kXR_ProgressInfo";
}

/// Protocol versions (`kXR_PROTOCOLVERSION` and friends), each nibble one
/// decimal digit of x.y.z. PROTOCOL.md §3.
pub mod version {
    /// `kXR_PROTOCOLVERSION` at the 2026 source (5.2.0).
    #[doc(alias = "kXR_PROTOCOLVERSION")]
    pub const CURRENT: u32 = 0x520;
    /// The version the installed stock xrootd 5.5.3 reports (5.1.1).
    pub const STOCK_5_5: u32 = 0x511;
    /// `kXR_PROTPGRWVERSION`: pgread/pgwrite exist from this version.
    #[doc(alias = "kXR_PROTPGRWVERSION")]
    pub const PGRW: u32 = 0x511;
    /// `kXR_PROTTLSVERSION`: TLS and fattr exist from this version.
    #[doc(alias = "kXR_PROTTLSVERSION")]
    pub const TLS: u32 = 0x500;
    /// `kXR_PROTSIGNVERSION`: request signing (sigver) exists from this version.
    #[doc(alias = "kXR_PROTSIGNVERSION")]
    pub const SIGN: u32 = 0x310;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_unknown_values() {
        assert_eq!(RequestId::READV.protocol_name(), Some("kXR_readv"));
        assert_eq!(format!("{:?}", RequestId::READV), "kXR_readv(3025)");
        assert_eq!(format!("{:?}", RequestId(2999)), "RequestId(2999)");
        assert_eq!(RequestId::ALL.len(), 34);
        assert_eq!(Status::ALL.len(), 9);
        assert_eq!(ErrorCode::ALL.len(), 36);
        assert!(!Status(4008).is_known());
    }

    #[test]
    fn errno_mapping_matches_reference() {
        assert_eq!(ErrorCode::from_errno(2), ErrorCode::NOT_FOUND);
        assert_eq!(ErrorCode::from_errno(-2), ErrorCode::NOT_FOUND);
        // ENOTEMPTY: ItExists in the 2026 source, FSError from xrootd 5.5.3
        assert_eq!(ErrorCode::from_errno(39), ErrorCode::FS_ERROR);
        assert_eq!(ErrorCode::from_errno(1234), ErrorCode::FS_ERROR);
        assert_eq!(ErrorCode::NOT_FOUND.to_errno(), 2);
        assert_eq!(ErrorCode(1).to_errno(), 42);
        for code in ErrorCode::ALL {
            // every code with an errno maps back to itself, except the ones the
            // reference maps asymmetrically (FileLocked, ArgMissing, BadPayload, inProgress)
            let back = ErrorCode::from_errno(code.to_errno());
            if ![3001, 3003, 3026, 3020].contains(&code.0) {
                assert_eq!(back, *code, "{code:?}");
            }
        }
    }

    #[test]
    fn status_code_byte() {
        assert_eq!(RequestId::PGREAD.status_code(), Some(30));
        assert_eq!(RequestId::from_status_code(26), RequestId::PGWRITE);
        assert_eq!(RequestId(12).status_code(), None);
    }
}
