//! Namespace and metadata requests: chmod, dirlist, mkdir, mv, rm, rmdir,
//! stat, statx, locate, prepare and gpfile (PROTOCOL.md §7.1–7.6, §7.8).
//! Paths are `path[?cgi]`, sent without a trailing NUL.

use bytes::Bytes;

use crate::error::DecodeError;
use crate::header::FHandle;

use super::flags::Mode;
use super::params::lines;

simple_request! {
    /// `kXR_chmod` (3002) (`ClientChmodRequest`, PROTOCOL.md §7.4).
    Chmod = CHMOD "kXR_chmod" {
        /// Bytes 18-19.
        mode: Mode = 18,
    }
    payload
        /// The path.
        path => path_str;
}

wire_newtype! {
    /// `ClientDirlistRequest::options` (byte 19), `XDirlistRequestOption`
    /// (PROTOCOL.md §7.3).
    flags DirlistOptions(u8);
    ONLINE = 1 => "kXR_online";
    /// A stat line per entry.
    DSTAT = 2 => "kXR_dstat";
    /// Stat and checksum per entry (implies dstat).
    DCKSM = 4 => "kXR_dcksm";
    /// Extended stat information, where available.
    DSTATX = 8 => "kXR_dstatx";
}

simple_request! {
    /// `kXR_dirlist` (3004) (`ClientDirlistRequest`, PROTOCOL.md §7.3).
    Dirlist = DIRLIST "kXR_dirlist" {
        /// Byte 19.
        options: DirlistOptions = 19,
    }
    payload
        /// The directory path.
        path => path_str;
}

wire_newtype! {
    /// `ClientMkdirRequest::options` (byte 4), `XMkdirOptions`.
    flags MkdirOptions(u8);
    /// Create missing parent directories.
    MKDIRPATH = 1 => "kXR_mkdirpath";
}

simple_request! {
    /// `kXR_mkdir` (3008) (`ClientMkdirRequest`, PROTOCOL.md §7.4). The
    /// server ORs owner rwx into `mode`.
    Mkdir = MKDIR "kXR_mkdir" {
        /// Byte 4.
        options: MkdirOptions = 4,
        /// Bytes 18-19.
        mode: Mode = 18,
    }
    payload
        /// The directory path.
        path => path_str;
}

simple_request! {
    /// `kXR_mv` (3009): renames; the payload is `"old new"`
    /// (`ClientMvRequest`, PROTOCOL.md §7.4). With `arg1len` ≠ 0 the old path
    /// is exactly `arg1len` bytes and a space follows it; with 0 the split is
    /// at the first space (and further spaces before the new path are
    /// skipped). [`Mv::new`] builds one, [`Mv::paths`] splits one.
    ///
    /// Decoding fails as [`Mv::paths`] does.
    Mv = MV "kXR_mv" {
        /// Bytes 18-19: length of the old path, or 0.
        arg1len: i16 = 18,
    }
    payload
        /// `old new`.
        payload;
    check Mv::check_paths;
}

impl Mv {
    /// A rename of `old` to `new`, with `arg1len` set (so `old` may contain
    /// spaces) unless `old` is longer than `i16::MAX` bytes.
    pub fn new(old: &[u8], new: &[u8]) -> Mv {
        let mut payload = Vec::with_capacity(old.len() + 1 + new.len());
        payload.extend_from_slice(old);
        payload.push(b' ');
        payload.extend_from_slice(new);
        Mv {
            arg1len: i16::try_from(old.len()).unwrap_or(0),
            payload: payload.into(),
        }
    }

    /// The old and new paths, slices of the payload.
    ///
    /// Errors: [`DecodeError::NegativeLength`] for `arg1len < 0`;
    /// [`DecodeError::InvalidValue`] when `arg1len` does not point at a
    /// space inside the payload; [`DecodeError::Malformed`] when there is no
    /// space (no new path) with `arg1len` 0.
    pub fn paths(&self) -> Result<(Bytes, Bytes), DecodeError> {
        let b = &self.payload;
        let n = match self.arg1len {
            n if n < 0 => {
                return Err(DecodeError::NegativeLength {
                    what: "kXR_mv arg1len",
                    value: n.into(),
                })
            }
            0 => b.iter().position(|&c| c == b' ').ok_or_else(|| {
                DecodeError::malformed("kXR_mv payload", "no space before the new path")
            })?,
            n => {
                let n = n as usize;
                if b.get(n) != Some(&b' ') {
                    return Err(DecodeError::InvalidValue {
                        what: "kXR_mv arg1len",
                        expected: "the offset of the space after the old path",
                        got: n as i64,
                    });
                }
                n
            }
        };
        let mut start = n + 1;
        if self.arg1len == 0 {
            start += b[start..].iter().take_while(|&&c| c == b' ').count();
        }
        Ok((b.slice(..n), b.slice(start..)))
    }

    fn check_paths(&self) -> Result<(), DecodeError> {
        self.paths().map(drop)
    }
}

simple_request! {
    /// `kXR_rm` (3014) (`ClientRmRequest`, PROTOCOL.md §7.4).
    Rm = RM "kXR_rm" {}
    payload
        /// The file path.
        path => path_str;
}

simple_request! {
    /// `kXR_rmdir` (3015) (`ClientRmdirRequest`, PROTOCOL.md §7.4).
    Rmdir = RMDIR "kXR_rmdir" {}
    payload
        /// The directory path.
        path => path_str;
}

wire_newtype! {
    /// `ClientStatRequest::options` (byte 4), `XStatRequestOption`.
    flags StatOptions(u8);
    /// Return filesystem (vfs) information instead; needs a path.
    VFS = 1 => "kXR_vfs";
}

wire_newtype! {
    /// `ClientStatRequest::wants` (bytes 12-15), `XStatRequestWants`: extra
    /// attributes asked for, like `stx_mask`. Unused by the server at the
    /// reference commit.
    flags StatWants(u32);
    BTIME = 0x0000_0001 => "kXR_Want_btime";
}

simple_request! {
    /// `kXR_stat` (3017): stat by path, or of the open `fhandle` when `path`
    /// is empty (`ClientStatRequest`, PROTOCOL.md §7.1).
    Stat = STAT "kXR_stat" {
        /// Byte 4.
        options: StatOptions = 4,
        /// Bytes 12-15.
        wants: StatWants = 12,
        /// Bytes 16-19: used when `path` is empty.
        fhandle: FHandle = 16,
    }
    payload
        /// `path[?cgi]`, or empty to stat `fhandle`.
        path => path_str;
}

simple_request! {
    /// `kXR_statx` (3022): one flag byte per path in the reply
    /// (`ClientStatxRequest`, PROTOCOL.md §7.2).
    Statx = STATX "kXR_statx" {}
    payload
        /// Newline-separated paths; see [`Statx::path_list`].
        paths => paths_str;
}

impl Statx {
    /// The paths, split at `\n`, each a slice of the payload.
    pub fn path_list(&self) -> impl Iterator<Item = Bytes> + '_ {
        lines(&self.paths)
    }
}

wire_newtype! {
    /// `ClientLocateRequest::options` (bytes 4-5): the open option bits that
    /// apply to locate (PROTOCOL.md §7.5).
    flags LocateOptions(u16);
    /// Return unique hosts only.
    COMPRESS = 0x0001 => "kXR_compress";
    FORCE = 0x0004 => "kXR_force";
    REFRESH = 0x0080 => "kXR_refresh";
    /// Return host names rather than addresses.
    PREFNAME = 0x0100 => "kXR_prefname";
    /// The locate is for a dirlist.
    FOR_DIRLIST = 0x0400 => "kXR_4dirlist";
    NOWAIT = 0x2000 => "kXR_nowait";
}

simple_request! {
    /// `kXR_locate` (3027) (`ClientLocateRequest`, PROTOCOL.md §7.5).
    Locate = LOCATE "kXR_locate" {
        /// Bytes 4-5.
        options: LocateOptions = 4,
    }
    payload
        /// `path`, `*path` (non-specific) or `*` (any).
        path => path_str;
}

wire_newtype! {
    /// `ClientPrepareRequest::options` (byte 4), `XPrepRequestOption`.
    flags PrepareOptions(u8);
    CANCEL = 1 => "kXR_cancel";
    NOTIFY = 2 => "kXR_notify";
    NOERRS = 4 => "kXR_noerrs";
    STAGE = 8 => "kXR_stage";
    WMODE = 16 => "kXR_wmode";
    COLOC = 32 => "kXR_coloc";
    FRESH = 64 => "kXR_fresh";
    USETCP = 128 => "kXR_usetcp";
}

wire_newtype! {
    /// `ClientPrepareRequest::optionX` (bytes 8-9).
    flags PrepareOptionsX(u16);
    /// The files are no longer useful.
    EVICT = 0x0001 => "kXR_evict";
}

simple_request! {
    /// `kXR_prepare` (3021): stage, cancel or evict files
    /// (`ClientPrepareRequest`, PROTOCOL.md §7.6).
    Prepare = PREPARE "kXR_prepare" {
        /// Byte 4.
        options: PrepareOptions = 4,
        /// Byte 5: priority 0..3.
        prty: u8 = 5,
        /// Bytes 6-7: UDP/TCP notification port.
        port: u16 = 6,
        /// Bytes 8-9.
        optionx: PrepareOptionsX = 8,
    }
    payload
        /// Newline-separated paths; for cancel the first line is the request
        /// id. See [`Prepare::path_list`].
        paths => paths_str;
}

impl Prepare {
    /// The lines of the payload, each a slice of it.
    pub fn path_list(&self) -> impl Iterator<Item = Bytes> + '_ {
        lines(&self.paths)
    }
}

simple_request! {
    /// `kXR_gpfile` (3005): reserved; the server always answers
    /// `kXR_Unsupported` (`ClientGPfileRequest`, PROTOCOL.md §7.8).
    Gpfile = GPFILE "kXR_gpfile" {
        /// Bytes 4-7.
        options: i32 = 4,
        /// Bytes 16-19.
        buffsz: i32 = 16,
    }
    payload
        /// Uninterpreted.
        payload;
}
