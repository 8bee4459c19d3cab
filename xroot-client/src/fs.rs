//! Namespace and query calls against one server (PROTOCOL.md §7): stat,
//! statx, dirlist, mkdir, rm, rmdir, mv, chmod, truncate, locate, query
//! (checksum, config, space, or any code with its raw answer), prepare and
//! ping.
//!
//! Every call is a path request run by the one response driver, so
//! `kXR_oksofar` chunks, `kXR_wait`, `kXR_waitresp` + asynresp and redirects
//! are handled there. A refusal by the server is [`Error::Server`] with the
//! server's code and message kept ([`Error::kind`] maps it to an
//! [`std::io::ErrorKind`]); a well-formed answer of the wrong shape, or one
//! past [`Config::max_answer_len`](crate::Config::max_answer_len) bytes or
//! [`Config::max_answer_frames`](crate::Config::max_answer_frames) frames,
//! is [`Error::UnexpectedResponse`]. Every call can also fail with the
//! connection errors ([`Error::Io`], [`Error::ConnectionLost`],
//! [`Error::Timeout`], [`Error::RedirectLimit`], ...), not repeated below.
//!
//! Paths are absolute paths on the server (a missing leading `/` is added)
//! and may carry CGI (`/f.root?cks.type=crc32c`), which is merged with the
//! CGI of the file system's URL.

use std::sync::Arc;

use bytes::Bytes;
use xroot_proto::request::{
    Chmod, Dirlist, DirlistOptions, Locate, LocateOptions, Mkdir, MkdirOptions, Mode, Mv, Ping,
    Prepare, PrepareOptions, PrepareOptionsX, Query, QueryCode, Request, Rm, Rmdir, Stat,
    StatOptions, Statx, Truncate,
};
use xroot_proto::response::{
    decode_statx, ChecksumAnswer, DirList, LocateEntry, LocateResponse, QconfigAnswer, SpaceInfo,
    StatFlags, StatInfo, StatVfs,
};
use xroot_proto::url::{parse_cgi, Url};
use xroot_proto::{DecodeError, RequestId};

use crate::dialer::Dialer;
use crate::driver::{self, Reply};
use crate::error::{Error, Result};
use crate::file::to_offset;

/// Namespace and query calls against the server of one URL. Paths are
/// absolute paths on that server; redirects are followed. Made by
/// [`Client::fs`](crate::Client::fs); cheap to clone.
#[derive(Debug, Clone)]
pub struct FileSystem {
    /// The channels and settings of the client that made it.
    dialer: Arc<Dialer>,
    url: Url,
}

/// One entry of a directory listing ([`FileSystem::dirlist`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name within the directory (not a path). Names that are
    /// not UTF-8 have their invalid bytes replaced by U+FFFD.
    pub name: String,
    /// Its stat, when the listing was asked `with_stat` and the server
    /// sent one (`kXR_dstat`).
    pub stat: Option<StatInfo>,
}

impl FileSystem {
    pub(crate) fn new(dialer: Arc<Dialer>, url: Url) -> FileSystem {
        FileSystem { dialer, url }
    }

    /// The channels and settings of the client that made it.
    pub(crate) fn dialer(&self) -> &Arc<Dialer> {
        &self.dialer
    }

    /// The server's URL (its path is not used).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// `self.url` at `path`: the path's own CGI (after `?`) is appended to
    /// the URL's.
    pub(crate) fn at(&self, path: &str) -> Url {
        let (path, cgi) = path.split_once('?').unwrap_or((path, ""));
        let mut url = self.url.clone();
        url.path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        url.cgi.extend(parse_cgi(cgi));
        url
    }

    /// [`FileSystem::at`] for `kXR_locate`, whose `*path` and `*` forms
    /// keep their `*` first (no `/` in front).
    fn locate_at(&self, path: &str) -> Url {
        let mut url = self.at(path);
        let bare = path.split_once('?').map_or(path, |(p, _)| p);
        if bare.starts_with('*') {
            url.path = bare.to_string();
        }
        url
    }

    /// Runs `req`, a request about the path of `url`, through the driver
    /// (`url` also names the server and is what a redirect rewrites).
    async fn run(&self, url: &Url, req: Request) -> Result<Reply> {
        Ok(driver::execute(&self.dialer, url, req).await?.reply)
    }

    /// Runs `req` and returns its `kXR_ok` body (the `kXR_oksofar` chunks
    /// joined in front).
    async fn body(&self, url: &Url, req: Request) -> Result<Bytes> {
        let id = req.id();
        self.run(url, req).await?.into_bytes(id)
    }

    /// Runs `req`, whose answer is an empty `kXR_ok`.
    async fn done(&self, url: &Url, req: Request) -> Result<()> {
        self.body(url, req).await.map(drop)
    }

    /// The stat of `path`.
    ///
    /// Errors: [`Error::Server`] with `kXR_NotFound` when it does not exist
    /// ([`std::io::ErrorKind::NotFound`]).
    #[doc(alias = "kXR_stat")]
    pub async fn stat(&self, path: &str) -> Result<StatInfo> {
        let url = self.at(path);
        let req = Stat {
            path: wire(&url),
            ..Default::default()
        };
        let body = self.body(&url, req.into()).await?;
        decoded(RequestId::STAT, StatInfo::decode(body))
    }

    /// Whether `path` exists: a [`FileSystem::stat`] whose `kXR_NotFound` is
    /// `false`. Errors: every other error of `stat`.
    pub async fn exists(&self, path: &str) -> Result<bool> {
        match self.stat(path).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The space of the file system holding `path` (`kXR_stat` with
    /// `kXR_vfs`): node counts, free space in MiB, utilisation in percent.
    ///
    /// Errors: [`Error::Server`] (`kXR_NotFound`, ...).
    #[doc(alias = "kXR_vfs")]
    pub async fn stat_vfs(&self, path: &str) -> Result<StatVfs> {
        let url = self.at(path);
        let req = Stat {
            options: StatOptions::VFS,
            path: wire(&url),
            ..Default::default()
        };
        let body = self.body(&url, req.into()).await?;
        decoded(RequestId::STAT, StatVfs::decode(body))
    }

    /// The type of each of `paths`, in order, in one request
    /// (`kXR_statx`): [`StatFlags::FILE`] (0), [`StatFlags::IS_DIR`] or
    /// [`StatFlags::OFFLINE`]. No request is sent for no paths.
    ///
    /// Errors: [`Error::InvalidArgument`] for a path containing a newline;
    /// [`Error::Server`] for the first path that fails (the server stops
    /// there; `kXR_NotFound`, ...); [`Error::UnexpectedResponse`] when the
    /// answer has not one byte per path.
    #[doc(alias = "kXR_statx")]
    pub async fn statx(&self, paths: &[&str]) -> Result<Vec<StatFlags>> {
        let Some(first) = paths.first() else {
            return Ok(Vec::new());
        };
        let req = Statx {
            paths: self.path_lines(paths)?,
        };
        let body = self.body(&self.at(first), req.into()).await?;
        if body.len() != paths.len() {
            return Err(Error::unexpected(
                RequestId::STATX,
                format!("{} flag bytes for {} paths", body.len(), paths.len()),
            ));
        }
        Ok(decode_statx(&body).collect())
    }

    /// The entries of directory `path` (without `.` and `..`), in the order
    /// the server sent them; with `with_stat`, each with its stat
    /// (`kXR_dstat`). A listing that arrives in many `kXR_oksofar` chunks is
    /// joined before parsing. A server that ignores `kXR_dstat` gives
    /// entries without stat.
    ///
    /// Errors: [`Error::Server`] (`kXR_NotFound`; `kXR_NotFile`... for a
    /// file); [`Error::UnexpectedResponse`] for a listing that does not
    /// parse.
    #[doc(alias = "kXR_dirlist")]
    pub async fn dirlist(&self, path: &str, with_stat: bool) -> Result<Vec<DirEntry>> {
        let url = self.at(path);
        let req = Dirlist {
            options: if with_stat {
                DirlistOptions::DSTAT
            } else {
                DirlistOptions::EMPTY
            },
            path: wire(&url),
        };
        let Reply::Data(chunks) = self.run(&url, req.into()).await? else {
            return Err(Error::unexpected(RequestId::DIRLIST, "a kXR_status reply"));
        };
        Ok(
            match decoded(RequestId::DIRLIST, DirList::decode_chunks(&chunks))? {
                DirList::Plain(names) => names
                    .iter()
                    .map(|n| DirEntry {
                        name: text(n),
                        stat: None,
                    })
                    .collect(),
                DirList::Stat(entries) => entries
                    .into_iter()
                    .map(|e| DirEntry {
                        name: text(&e.name),
                        stat: Some(e.stat),
                    })
                    .collect(),
            },
        )
    }

    /// Creates directory `path` with permissions `mode` (POSIX `0o777`
    /// bits; the server adds owner `rwx`); with `parents`, missing parent
    /// directories too (`kXR_mkdirpath`), and an existing `path` is then no
    /// error.
    ///
    /// Errors: [`Error::Server`]: `kXR_ItExists`
    /// ([`std::io::ErrorKind::AlreadyExists`]) when `path` exists, without
    /// `parents` — except that the stock server lets it pass when the
    /// existing directory already has exactly these permissions;
    /// `kXR_NotFound` when a parent is missing (without `parents`).
    #[doc(alias = "kXR_mkdir")]
    pub async fn mkdir(&self, path: &str, parents: bool, mode: u32) -> Result<()> {
        let url = self.at(path);
        let req = Mkdir {
            options: if parents {
                MkdirOptions::MKDIRPATH
            } else {
                MkdirOptions::EMPTY
            },
            mode: Mode::from_posix(mode),
            path: wire(&url),
        };
        self.done(&url, req.into()).await
    }

    /// Removes file `path`.
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound`; `kXR_FSError` for a
    /// directory (the stock server).
    #[doc(alias = "kXR_rm")]
    pub async fn rm(&self, path: &str) -> Result<()> {
        let url = self.at(path);
        let req = Rm { path: wire(&url) };
        self.done(&url, req.into()).await
    }

    /// Removes the empty directory `path`.
    ///
    /// The stock 5.5.3 server answers `kXR_ok` when `path` does not exist.
    ///
    /// Errors: [`Error::Server`]: `kXR_FSError` from the stock server for a
    /// directory that is not empty (PROTOCOL.md Appendix 4; the protocol
    /// documents `kXR_ItExists`) and for a file; `kXR_NotFound` from
    /// servers that report a missing directory.
    #[doc(alias = "kXR_rmdir")]
    pub async fn rmdir(&self, path: &str) -> Result<()> {
        let url = self.at(path);
        let req = Rmdir { path: wire(&url) };
        self.done(&url, req.into()).await
    }

    /// Renames `old` to `new` (both paths on this server; `arg1len` is set,
    /// so `old` may contain spaces).
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound` when `old` does not exist.
    #[doc(alias = "kXR_mv")]
    pub async fn mv(&self, old: &str, new: &str) -> Result<()> {
        let url = self.at(old);
        let req = Mv::new(&wire(&url), &wire(&self.at(new)));
        self.done(&url, req.into()).await
    }

    /// Sets the permissions of `path` to `mode` (POSIX `0o777` bits).
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound`, `kXR_NotAuthorized`.
    #[doc(alias = "kXR_chmod")]
    pub async fn chmod(&self, path: &str, mode: u32) -> Result<()> {
        let url = self.at(path);
        let req = Chmod {
            mode: Mode::from_posix(mode),
            path: wire(&url),
        };
        self.done(&url, req.into()).await
    }

    /// Sets the size of file `path` to `size` bytes (by path, no open).
    ///
    /// Errors: [`Error::InvalidArgument`] for a size over `i64::MAX`;
    /// [`Error::Server`]: `kXR_NotFound`, ...
    #[doc(alias = "kXR_truncate")]
    pub async fn truncate(&self, path: &str, size: u64) -> Result<()> {
        let url = self.at(path);
        let req = Truncate {
            offset: to_offset(size)?,
            path: wire(&url),
            ..Default::default()
        };
        self.done(&url, req.into()).await
    }

    /// The servers holding `path` ([`FileSystem::locate_with`] without
    /// options). A data server names itself.
    #[doc(alias = "kXR_locate")]
    pub async fn locate(&self, path: &str) -> Result<Vec<LocateEntry>> {
        self.locate_with(path, LocateOptions::EMPTY).await
    }

    /// The servers holding `path`, with `options` (`kXR_refresh`,
    /// `kXR_nowait`, `kXR_prefname`, ...). `path` may be `*path` (any
    /// server that could hold it) or `*` (any server), sent as they are
    /// (PROTOCOL.md §7.5); any other path gets its leading `/`.
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound`; [`Error::UnexpectedResponse`]
    /// for an answer that does not parse.
    pub async fn locate_with(
        &self,
        path: &str,
        options: LocateOptions,
    ) -> Result<Vec<LocateEntry>> {
        let url = self.locate_at(path);
        let req = Locate {
            options,
            path: wire(&url),
        };
        let body = self.body(&url, req.into()).await?;
        Ok(decoded(RequestId::LOCATE, LocateResponse::decode(body))?.entries)
    }

    /// The checksum of file `path` (`kXR_Qcksum`): `(algorithm, value)`,
    /// the value in lowercase hex, most significant byte first (adler32
    /// `"091e01de"`). `alg` picks the algorithm (`cks.type=<alg>` CGI);
    /// `None` takes the server's default. A checksum the server has to
    /// compute first is answered later (`kXR_waitresp`, then an asynresp),
    /// which the call waits for.
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound`; `kXR_ServerError` (the
    /// stock server) or `kXR_Unsupported` for an algorithm the server does
    /// not have; [`Error::UnexpectedResponse`] for an answer that is not
    /// `"<alg> <value>"`.
    #[doc(alias = "kXR_Qcksum")]
    pub async fn query_checksum(&self, path: &str, alg: Option<&str>) -> Result<(String, String)> {
        let mut url = self.at(path);
        if let Some(alg) = alg {
            url.cgi.retain(|(k, _)| k != "cks.type");
            url.cgi.push(("cks.type".into(), alg.into()));
        }
        let body = self.query(&url, QueryCode::CKSUM, wire(&url)).await?;
        let answer = decoded(RequestId::QUERY, ChecksumAnswer::decode(body))?;
        Ok((text(&answer.alg), text(&answer.value)))
    }

    /// The server's values of the configuration `keys` (`kXR_Qconfig`:
    /// `readv_iov_max`, `readv_ior_max`, `chksum`, `version`, `role`, ...),
    /// in key order. The stock server echoes an unknown key back as its
    /// value. No request is sent for no keys.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty key or one with
    /// whitespace; [`Error::UnexpectedResponse`] when the answer has not
    /// one line per key.
    #[doc(alias = "kXR_Qconfig")]
    pub async fn query_config(&self, keys: &[&str]) -> Result<Vec<String>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(bad) = keys
            .iter()
            .find(|k| k.is_empty() || k.contains(char::is_whitespace))
        {
            return Err(Error::InvalidArgument(format!("query config key {bad:?}")));
        }
        let body = self
            .query(&self.at("/"), QueryCode::CONFIG, keys.join(" ").into())
            .await?;
        let answer = decoded(RequestId::QUERY, QconfigAnswer::decode(body))?;
        let pairs = decoded(RequestId::QUERY, answer.with_keys(keys))?;
        Ok(pairs.into_iter().map(|(_, v)| text(&v)).collect())
    }

    /// The space usage of the file system holding `path` (`kXR_Qspace`):
    /// sizes in bytes, the quota −1 for none.
    ///
    /// Errors: [`Error::Server`]: `kXR_NotFound`; `kXR_ArgInvalid` for a
    /// relative path; [`Error::UnexpectedResponse`] for an answer that does
    /// not parse.
    #[doc(alias = "kXR_Qspace")]
    pub async fn query_space(&self, path: &str) -> Result<SpaceInfo> {
        let url = self.at(path);
        let body = self.query(&url, QueryCode::SPACE, wire(&url)).await?;
        decoded(RequestId::QUERY, SpaceInfo::decode(body))
    }

    /// The server's statistics (`kXR_QStats`, `xrdfs HOST query stats
    /// WHAT`): `what` is the reference's letters (`a` for all; the stock
    /// server answers XML, our cache a table of its counters), the answer
    /// as text without its trailing NUL.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty `what`;
    /// [`Error::Server`] (`kXR_Unsupported` from a server with no
    /// statistics to report).
    #[doc(alias = "kXR_QStats")]
    pub async fn query_stats(&self, what: &str) -> Result<String> {
        if what.is_empty() {
            return Err(Error::InvalidArgument("query stats of nothing".into()));
        }
        let body = self
            .query(
                &self.at("/"),
                QueryCode::STATS,
                Bytes::copy_from_slice(what.as_bytes()),
            )
            .await?;
        Ok(text(&body))
    }

    /// The server's answer to a `kXR_query` of `infotype` (XProtocol.hh's
    /// `XQueryType`: `kXR_Qspace` 5, `kXR_Qopaque` 16, ...) with `args`
    /// sent exactly as given: no leading `/` added and no CGI of the file
    /// system's URL merged (the stock `xrdfs query space ARG` sends its
    /// argument so). The answer comes as the server sent it, trailing NUL
    /// included when there is one; for `kXR_Qspace` it is the
    /// `oss.cgroup=...&oss.space=...&...` text that
    /// [`FileSystem::query_space`] parses. The request goes to this file
    /// system's server (redirects followed), not by file handle.
    ///
    /// Errors: [`Error::InvalidArgument`] for empty `args` (the server would
    /// take it for a by-handle query); [`Error::Server`]
    /// (`kXR_NotAuthorized` from the stock server for a relative path,
    /// `kXR_Unsupported` for a code the server does not answer, ...);
    /// [`Error::UnexpectedResponse`] for a `kXR_status` answer.
    #[doc(alias = "kXR_query")]
    pub async fn query_raw(&self, infotype: QueryCode, args: &[u8]) -> Result<Bytes> {
        if args.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{infotype} with no arguments"
            )));
        }
        self.query(&self.at("/"), infotype, Bytes::copy_from_slice(args))
            .await
    }

    /// Runs a `kXR_query` of `infotype` with `args` at the server of `url`.
    /// The args are sent without the NUL the stock clients append: the
    /// stock server ends the text at `dlen` itself and answers both forms
    /// alike (checked by the live tests).
    async fn query(&self, url: &Url, infotype: QueryCode, args: Bytes) -> Result<Bytes> {
        let req = Query {
            infotype,
            args,
            ..Default::default()
        };
        self.body(url, req.into()).await
    }

    /// Asks the server to prepare `paths` (`kXR_prepare` with `options`:
    /// `kXR_stage`, `kXR_cancel`, `kXR_notify`, ...; priority 0, no
    /// `optionX`). Returns the server's text: the request id for a stage
    /// request (the one to cancel with), usually empty otherwise. No
    /// request is sent for no paths.
    ///
    /// Errors: [`Error::InvalidArgument`] for a path containing a newline;
    /// [`Error::Server`] (`kXR_Unsupported` where nothing can be staged, ...).
    #[doc(alias = "kXR_prepare")]
    pub async fn prepare(&self, paths: &[&str], options: PrepareOptions) -> Result<String> {
        let Some(first) = paths.first() else {
            return Ok(String::new());
        };
        let req = Prepare {
            options,
            prty: 0,
            port: 0,
            optionx: PrepareOptionsX::EMPTY,
            paths: self.path_lines(paths)?,
        };
        let body = self.body(&self.at(first), req.into()).await?;
        Ok(text(body.strip_suffix(b"\0").unwrap_or(&body)))
    }

    /// Checks that the server answers (`kXR_ping`).
    #[doc(alias = "kXR_ping")]
    pub async fn ping(&self) -> Result<()> {
        self.done(&self.at("/"), Ping {}.into()).await
    }

    /// `paths` with their CGI, one per line. Errors:
    /// [`Error::InvalidArgument`] for a path containing a newline.
    fn path_lines(&self, paths: &[&str]) -> Result<Bytes> {
        if let Some(bad) = paths.iter().find(|p| p.contains('\n')) {
            return Err(Error::InvalidArgument(format!(
                "path {bad:?} has a newline"
            )));
        }
        let lines: Vec<String> = paths.iter().map(|p| self.at(p).path_with_cgi()).collect();
        Ok(lines.join("\n").into())
    }
}

/// The parsed answer to request `id`; a parse failure is
/// [`Error::UnexpectedResponse`].
fn decoded<T>(id: RequestId, parsed: std::result::Result<T, DecodeError>) -> Result<T> {
    parsed.map_err(|e| Error::unexpected(id, e.to_string()))
}

/// Server text as a `String` (invalid UTF-8 replaced).
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The payload naming `url`'s path: the path with its server-visible CGI.
fn wire(url: &Url) -> Bytes {
    Bytes::from(url.path_with_cgi())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Client;

    #[test]
    fn paths_get_a_slash_and_merge_their_cgi_with_the_urls() {
        let fs = Client::new()
            .fs("root://h:1094//ignored?authz=t&xrdcl.intent=a")
            .unwrap();
        let url = fs.at("f.root?cks.type=crc32c");
        assert_eq!(url.path, "/f.root");
        assert_eq!(url.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(&wire(&url)[..], b"/f.root?authz=t&cks.type=crc32c");
        assert_eq!(&wire(&fs.at("/d/")), "/d/?authz=t");
        assert!(matches!(
            fs.path_lines(&["/a", "/b\n/c"]),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(
            &fs.path_lines(&["/a", "b"]).unwrap()[..],
            b"/a?authz=t\n/b?authz=t"
        );
        // locate's `*path` and `*` keep their star first
        for (path, sent) in [
            ("*/f", "*/f?authz=t"),
            ("*", "*?authz=t"),
            ("*?x=1", "*?authz=t&x=1"),
            ("f", "/f?authz=t"),
        ] {
            assert_eq!(&wire(&fs.locate_at(path))[..], sent.as_bytes(), "{path}");
        }
    }
}
