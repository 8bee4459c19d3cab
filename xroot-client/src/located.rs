//! Calls that span a cluster, made of the one-server calls of
//! [`FileSystem`]: the deep locate (each manager a locate names asked in
//! turn, down to the data servers, as XrdCl's `FileSystem::DeepLocate`)
//! and the listing of a directory through a manager (the directory located
//! on every data server, each server listed and the listings merged, as
//! XrdCl's `DirList` with `DirListFlags::Locate | Merge`, which the stock
//! `xrdfs ls` uses). A manager's own namespace is empty, so a plain
//! `kXR_dirlist` sent to it finds nothing (`kXR_NotFound`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use xroot_proto::request::LocateOptions;
use xroot_proto::response::{LocateEntry, LocateNode};
use xroot_proto::url::Url;
use xroot_proto::ErrorCode;

use crate::error::{Error, Result};
use crate::fs::{DirEntry, FileSystem};
use crate::key::ChannelKey;
use crate::ServerInfo;

/// How many managers deep [`FileSystem::deep_locate`] asks before it gives
/// up on a branch (a loop of managers naming each other).
pub const DEEP_LOCATE_HOPS: usize = 8;

/// What a deep locate found ([`FileSystem::deep_locate`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeepLocation {
    /// The data servers (`S` or `s` locations), in the order found:
    /// those of the first answer, then those of each manager asked.
    pub servers: Vec<LocateEntry>,
    /// Whether a manager named on the way failed to answer, or managers
    /// were left unasked past [`DEEP_LOCATE_HOPS`]: `servers` may then
    /// miss some (the stock tools say "The result may be incomplete").
    pub partial: bool,
}

impl DeepLocation {
    /// Keeps `at` when it is a data server; a manager's address goes to
    /// `managers`, to be asked next.
    fn take(&mut self, at: LocateEntry, managers: &mut Vec<bytes::Bytes>) {
        match at.node {
            LocateNode::ServerOnline | LocateNode::ServerPending => self.servers.push(at),
            LocateNode::ManagerOnline | LocateNode::ManagerPending => managers.push(at.address),
        }
    }
}

/// A directory listed on every data server that holds it
/// ([`FileSystem::dirlist_located`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The entries: a data server's as it listed them; merged from a
    /// cluster's servers, sorted by name, each name once (the first
    /// server's entry with a stat where several hold it).
    pub entries: Vec<DirEntry>,
    /// Whether a server (or a manager on the way) failed to answer, so
    /// that entries may be missing.
    pub partial: bool,
}

impl FileSystem {
    /// What the server said when the connection came up (connecting and
    /// logging in first if there is no live connection): whether it is a
    /// data server or a manager, its protocol version and flags.
    ///
    /// Errors: those of connecting ([`Error::Io`], [`Error::Timeout`],
    /// [`Error::Server`] for a refused login, [`Error::AuthUnsupported`],
    /// [`Error::Tls`]).
    pub async fn server_info(&self) -> Result<ServerInfo> {
        let channel = self.dialer().channel(&ChannelKey::of(self.url()));
        Ok(channel.link().await?.info.clone())
    }

    /// The same calls at the server of `address` (`host:port`,
    /// `[v6]:port`, as a `kXR_locate` answer names it), with the scheme,
    /// user and `xrdcl.*` CGI of this file system's URL (so `roots://`
    /// stays `roots://` and the credentials stay those of the user).
    /// `[::a.b.c.d]` (IPv4 in IPv6 notation, as the stock servers name
    /// themselves) is taken as the IPv4 address, as XrdCl reads it.
    ///
    /// Errors: [`Error::Url`] for an address that does not parse.
    pub fn at_server(&self, address: &[u8]) -> Result<FileSystem> {
        let base = self.url();
        let address = String::from_utf8_lossy(address);
        let mut url = Url::parse(&format!("{}://{address}", base.scheme)).map_err(Error::Url)?;
        if let Some(v4) = url
            .host
            .strip_prefix("::")
            .and_then(|h| h.parse::<Ipv4Addr>().ok())
        {
            url.host = v4.to_string();
        }
        url.user.clone_from(&base.user);
        url.password.clone_from(&base.password);
        url.cgi = base
            .cgi
            .iter()
            .filter(|(k, _)| k.starts_with("xrdcl."))
            .cloned()
            .collect();
        Ok(FileSystem::new(self.dialer().clone(), url))
    }

    /// The data servers holding `path` (any of [`FileSystem::locate_with`]'s
    /// forms, with `options`): the locations this server gives, and each
    /// manager among them asked the same in turn, breadth first, at most
    /// [`DEEP_LOCATE_HOPS`] levels down.
    ///
    /// Errors: those of the first locate ([`Error::Server`] with
    /// `kXR_NotFound` when no server holds it); a manager that fails later
    /// only makes the answer [`partial`](DeepLocation::partial).
    pub async fn deep_locate(&self, path: &str, options: LocateOptions) -> Result<DeepLocation> {
        let mut found = DeepLocation::default();
        let mut managers = Vec::new();
        for at in self.locate_with(path, options).await? {
            found.take(at, &mut managers);
        }
        for _ in 0..DEEP_LOCATE_HOPS {
            if managers.is_empty() {
                break;
            }
            let mut next = Vec::new();
            for address in std::mem::take(&mut managers) {
                let located = match self.at_server(&address) {
                    Ok(manager) => manager.locate_with(path, options).await,
                    Err(e) => Err(e),
                };
                match located {
                    Ok(list) => list.into_iter().for_each(|at| found.take(at, &mut next)),
                    Err(_) => found.partial = true,
                }
            }
            managers = next;
        }
        found.partial |= !managers.is_empty();
        Ok(found)
    }

    /// The entries of the directory `path` wherever they are: from this
    /// server, in its order, when it is a data server
    /// ([`ServerInfo::is_data_server`]);
    /// through a manager, the directory is deep-located (`*path` with
    /// `kXR_prefname | kXR_compress | kXR_4dirlist`, as XrdCl asks), every
    /// data server found is listed and the listings are merged: sorted by
    /// name, each name once. `with_stat` as for [`FileSystem::dirlist`].
    ///
    /// Errors: those of [`FileSystem::server_info`] and of the locate;
    /// [`Error::Server`] with `kXR_NotFound` ("No valid location found",
    /// XrdCl's words) when the manager names no data server; the last
    /// server's error when every server's listing failed. Some failing
    /// only make the listing [`partial`](Listing::partial).
    pub async fn dirlist_located(&self, path: &str, with_stat: bool) -> Result<Listing> {
        if self.server_info().await?.is_data_server() {
            return Ok(Listing {
                entries: self.dirlist(path, with_stat).await?,
                partial: false,
            });
        }
        let options =
            LocateOptions::PREFNAME | LocateOptions::COMPRESS | LocateOptions::FOR_DIRLIST;
        let located = self.deep_locate(&format!("*{path}"), options).await?;
        if located.servers.is_empty() {
            return Err(Error::Server {
                code: ErrorCode::NOT_FOUND,
                message: "No valid location found".into(),
            });
        }
        let mut merged: BTreeMap<String, Option<_>> = BTreeMap::new();
        let (mut failures, mut last_error) = (0, None);
        for at in &located.servers {
            let listed = match self.at_server(&at.address) {
                Ok(server) => server.dirlist(path, with_stat).await,
                Err(e) => Err(e),
            };
            match listed {
                Ok(entries) => {
                    for DirEntry { name, stat } in entries {
                        let kept = merged.entry(name).or_default();
                        if kept.is_none() {
                            *kept = stat;
                        }
                    }
                }
                Err(e) => {
                    failures += 1;
                    last_error = Some(e);
                }
            }
        }
        match last_error {
            Some(e) if failures == located.servers.len() => Err(e),
            _ => Ok(Listing {
                entries: merged
                    .into_iter()
                    .map(|(name, stat)| DirEntry { name, stat })
                    .collect(),
                partial: located.partial || failures > 0,
            }),
        }
    }
}
