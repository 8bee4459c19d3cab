//! The namespace requests: stat, statx, dirlist, mkdir, rm, rmdir, mv,
//! chmod, locate and set (PROTOCOL.md §5.6, §7.1–7.5; XrdXrootdXeq
//! `do_Stat`, `do_Statx`, `do_Dirlist`, `do_DirStat`, `do_Mkdir`, `do_Rm`,
//! `do_Rmdir`, `do_Mv`, `do_Chmod`, `do_Locate`, `do_Set`). Every path is
//! screened first ([`crate::handle::path`]).

use std::net::SocketAddr;

use bytes::Bytes;
use xroot_proto::request::{
    Chmod, Dirlist, DirlistOptions, Locate, LocateOptions, Mkdir, MkdirOptions, Mv, Rm, Rmdir, Set,
    Stat, StatOptions, Statx,
};
use xroot_proto::response::{
    encode_statx, DirList, DirStatEntry, DirlistChecksum, LocateAccess, LocateEntry, LocateNode,
    LocateResponse, Response, StatFlags, StatInfo,
};
use xroot_proto::ErrorCode;

use crate::auth::Caller;
use crate::fs::{File, FileSystem, FsError};
use crate::handle::kit::{err, ok, ok_with, posix_mode, Ctx, Fail};
use crate::handle::path::{self, Target};
use crate::handle::query::checksum_alg;

/// `kXR_stat`: of the open file without a path, else of the path; with
/// `kXR_vfs` the file system's usage (a path is then required).
pub(crate) async fn stat<F: FileSystem>(ctx: &Ctx<F>, r: Stat) -> Result<Response, FsError> {
    let vfs = r.options.contains(StatOptions::VFS);
    if r.path.is_empty() {
        if vfs {
            return Err(err(ErrorCode::ARG_MISSING, "Required argument not present"));
        }
        let f = ctx.file(r.fhandle, "stat")?;
        let s = f.file.stat().await?;
        return Ok(ok_with(|b| s.encode(b)));
    }
    let t = path::payload_target("Stating", &r.path)?;
    if vfs {
        let v = ctx.fs().stat_vfs(ctx.caller(), &t.path).await?;
        return Ok(ok_with(|b| v.encode(b)));
    }
    let s = ctx.fs().stat(ctx.caller(), &t.path).await?;
    Ok(ok_with(|b| s.encode(b)))
}

/// `kXR_statx`: one flag byte per path (`kXR_offline`, `kXR_isDir` or
/// `kXR_file`); the first path that fails fails the request.
pub(crate) async fn statx<F: FileSystem>(ctx: &Ctx<F>, r: Statx) -> Result<Response, FsError> {
    let mut flags = Vec::new();
    for line in r.path_list() {
        let t = path::payload_target("Stating", &line)?;
        let s = ctx.fs().stat(ctx.caller(), &t.path).await?;
        flags.push(if s.flags.contains(StatFlags::OFFLINE) {
            StatFlags::OFFLINE
        } else if s.is_dir() {
            StatFlags::IS_DIR
        } else {
            StatFlags::FILE
        });
    }
    Ok(ok_with(|b| encode_statx(&flags, b)))
}

/// `path/name`.
fn child(dir: &str, name: &str) -> String {
    match dir {
        "/" => format!("/{name}"),
        _ => format!("{dir}/{name}"),
    }
}

/// `kXR_dirlist`, chunked as the reference chunks it ([`DirList::responses`]).
/// With `kXR_dstat` each name has its stat (an entry whose stat is not
/// found any more is left out); with `kXR_dcksm` also its checksum in the
/// `cks.type` of the CGI or the default algorithm (`none` when there is
/// none). A backend without checksums lists `kXR_dcksm` like `kXR_dstat`.
pub(crate) async fn dirlist<F: FileSystem>(ctx: &Ctx<F>, r: Dirlist) -> Result<(), Fail> {
    let t = path::payload_target("Listing", &r.path)?;
    let with_stat =
        r.options.contains(DirlistOptions::DSTAT) || r.options.contains(DirlistOptions::DCKSM);
    let alg = match r.options.contains(DirlistOptions::DCKSM) {
        true => checksum_alg(ctx.fs(), t.cgi_value("cks.type"))?,
        false => None,
    };
    let entries = ctx.fs().dirlist(ctx.caller(), &t.path, with_stat).await?;
    let entries = entries
        .into_iter()
        .filter(|e| e.name != "." && e.name != "..");
    let list = match with_stat {
        false => DirList::Plain(entries.map(|e| Bytes::from(e.name)).collect()),
        true => {
            let mut out = Vec::new();
            for e in entries {
                if let Some(entry) =
                    stat_entry(ctx.fs(), ctx.caller(), &t, e, alg.as_deref()).await?
                {
                    out.push(entry);
                }
            }
            DirList::Stat(out)
        }
    };
    let out = ctx.out(0)?;
    for response in list.responses() {
        out.send(&response).await?;
    }
    Ok(())
}

/// One dstat entry: the stat the backend gave or one asked now; `None`
/// when the entry vanished.
async fn stat_entry<F: FileSystem>(
    fs: &F,
    caller: &Caller,
    dir: &Target,
    e: crate::fs::DirEntry,
    alg: Option<&str>,
) -> Result<Option<DirStatEntry>, FsError> {
    let path = child(&dir.path, &e.name);
    let stat: StatInfo = match e.stat {
        Some(s) => s,
        None => match fs.stat(caller, &path).await {
            Ok(s) => s,
            Err(FsError::Error { code, .. }) if code == ErrorCode::NOT_FOUND => return Ok(None),
            Err(e) => return Err(e),
        },
    };
    let checksum = match alg {
        None => None,
        Some(alg) => {
            let value = match fs.checksum(caller, &path, Some(alg)).await {
                Ok(c) if !c.value.starts_with(b"!") => c.value,
                _ => Bytes::from_static(b"none"),
            };
            Some(DirlistChecksum {
                alg: Bytes::copy_from_slice(alg.as_bytes()),
                value,
            })
        }
    };
    Ok(Some(DirStatEntry {
        name: Bytes::from(e.name),
        stat,
        checksum,
    }))
}

/// `kXR_mkdir`: the mode gets owner rwx (others never get write, see
/// [`posix_mode`]); `kXR_mkdirpath` makes the parents.
pub(crate) async fn mkdir<F: FileSystem>(ctx: &Ctx<F>, r: Mkdir) -> Result<Response, FsError> {
    let t = path::payload_target("Creating", &r.path)?;
    let mode = posix_mode(r.mode) | 0o700;
    let parents = r.options.contains(MkdirOptions::MKDIRPATH);
    ctx.fs()
        .mkdir(ctx.caller(), &t.path, mode, parents)
        .await
        .map(|()| ok())
}

/// `kXR_rm`.
pub(crate) async fn rm<F: FileSystem>(ctx: &Ctx<F>, r: Rm) -> Result<Response, FsError> {
    let t = path::payload_target("Removing", &r.path)?;
    ctx.fs().rm(ctx.caller(), &t.path).await?;
    ctx.shared.cluster_events.gone(&t.path);
    Ok(ok())
}

/// `kXR_rmdir`.
pub(crate) async fn rmdir<F: FileSystem>(ctx: &Ctx<F>, r: Rmdir) -> Result<Response, FsError> {
    let t = path::payload_target("Removing", &r.path)?;
    ctx.fs().rmdir(ctx.caller(), &t.path).await.map(|()| ok())
}

/// `kXR_mv`: the old and new paths as `arg1len` splits them.
pub(crate) async fn mv<F: FileSystem>(ctx: &Ctx<F>, r: Mv) -> Result<Response, FsError> {
    let (old, new) = r
        .paths()
        .map_err(|_| err(ErrorCode::ARG_INVALID, "invalid path specification"))?;
    let old = path::payload_target("Renaming", &old)?;
    let new = path::payload_target("Renaming to", &new)?;
    ctx.fs().mv(ctx.caller(), &old.path, &new.path).await?;
    ctx.shared.cluster_events.gone(&old.path);
    ctx.shared.cluster_events.have(&new.path);
    Ok(ok())
}

/// `kXR_chmod`: the mode as [`posix_mode`] maps it (no write for others).
pub(crate) async fn chmod<F: FileSystem>(ctx: &Ctx<F>, r: Chmod) -> Result<Response, FsError> {
    let t = path::payload_target("Modifying", &r.path)?;
    let mode = posix_mode(r.mode);
    ctx.fs()
        .chmod(ctx.caller(), &t.path, mode)
        .await
        .map(|()| ok())
}

/// This server as a locate answer names it: `[::a.b.c.d]:port` for IPv4
/// (as the stock server writes it), `[v6]:port` otherwise.
fn address(local: SocketAddr) -> String {
    match local.ip().to_canonical() {
        std::net::IpAddr::V4(v4) => format!("[::{v4}]:{}", local.port()),
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{}", local.port()),
    }
}

/// `kXR_locate`: a data server answers with itself (XrdOfs fsctl LOCATE):
/// `S` (or `s` for an offline file) and `w` when the owner may write (or
/// `r`), after a stat of the path; `*` alone names any path and is not
/// stat'ed.
pub(crate) async fn locate<F: FileSystem>(ctx: &Ctx<F>, r: Locate) -> Result<Response, FsError> {
    let arg = path::text(&r.path)?;
    let (node, access) = match arg {
        "*" => (LocateNode::ServerOnline, LocateAccess::ReadWrite),
        _ => {
            let t = path::target("Locating", arg.strip_prefix('*').unwrap_or(arg))?;
            let refresh = r.options.contains(LocateOptions::REFRESH);
            if let Some(text) = ctx.fs().locate(ctx.caller(), &t.path, refresh).await? {
                return Ok(Response::Ok(text));
            }
            let s = ctx.fs().stat(ctx.caller(), &t.path).await?;
            let writable = match &s.extended {
                Some(x) => x.mode & 0o200 != 0,
                None => s.flags.contains(StatFlags::WRITABLE),
            };
            let node = match s.flags.contains(StatFlags::OFFLINE) {
                true => LocateNode::ServerPending,
                false => LocateNode::ServerOnline,
            };
            let access = match writable {
                true => LocateAccess::ReadWrite,
                false => LocateAccess::Read,
            };
            (node, access)
        }
    };
    let answer = LocateResponse {
        entries: vec![LocateEntry {
            node,
            access,
            address: address(ctx.local).into(),
        }],
    };
    Ok(ok_with(|b| answer.encode(b)))
}

/// `kXR_set`: `appid …` and `monitor …` are accepted, `cache …` is not
/// supported, anything else is `kXR_ArgInvalid`.
pub(crate) fn set(r: Set) -> Result<Response, FsError> {
    let text = path::text(&r.data)?;
    let line = text.lines().next().unwrap_or_default();
    match line.split_whitespace().next() {
        None => Err(err(ErrorCode::ARG_MISSING, "set argument not specified.")),
        Some("appid" | "monitor") => Ok(ok()),
        Some("cache") => Err(err(ErrorCode::UNSUPPORTED, "set cache is not supported")),
        Some(_) => Err(err(ErrorCode::ARG_INVALID, "invalid set parameter")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_address_forms() {
        assert_eq!(
            address("127.0.0.1:1094".parse().unwrap()),
            "[::127.0.0.1]:1094"
        );
        assert_eq!(
            address("[::ffff:10.0.0.1]:5".parse().unwrap()),
            "[::10.0.0.1]:5"
        );
        assert_eq!(address("[::1]:7".parse().unwrap()), "[::1]:7");
        assert_eq!(child("/", "a"), "/a");
        assert_eq!(child("/d", "a"), "/d/a");
    }
}
