//! Namespace and query calls against one server (PROTOCOL.md §7).

use bytes::Bytes;
use xroot_proto::request::{Request, Stat};
use xroot_proto::response::StatInfo;
use xroot_proto::url::Url;
use xroot_proto::RequestId;

use crate::client::Client;
use crate::driver;
use crate::error::{Error, Result};

/// Namespace and query calls against the server of one URL. Paths are
/// absolute paths on that server; redirects are followed.
#[derive(Debug, Clone)]
pub struct FileSystem {
    client: Client,
    url: Url,
}

impl FileSystem {
    pub(crate) fn new(client: Client, url: Url) -> FileSystem {
        FileSystem { client, url }
    }

    /// The server's URL (its path is not used).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// `self.url` with `path` (and the URL's CGI).
    pub(crate) fn at(&self, path: &str) -> Url {
        Url {
            path: if path.starts_with('/') {
                path.to_string()
            } else {
                format!("/{path}")
            },
            ..self.url.clone()
        }
    }

    /// Runs a path request at `path`; returns the joined `kXR_ok` body.
    pub(crate) async fn call(&self, path: &str, req: Request) -> Result<Bytes> {
        let id = req.id();
        driver::execute(&self.client, &self.at(path), req)
            .await?
            .reply
            .into_bytes(id)
    }

    /// The stat of `path`. Errors: [`Error::Server`] (`kXR_NotFound`, ...).
    pub async fn stat(&self, path: &str) -> Result<StatInfo> {
        let url = self.at(path);
        let body = self
            .call(
                path,
                Stat {
                    path: Bytes::from(url.path_with_cgi()),
                    ..Default::default()
                }
                .into(),
            )
            .await?;
        StatInfo::parse(&body).map_err(|e| Error::unexpected(RequestId::STAT, e.to_string()))
    }
}
