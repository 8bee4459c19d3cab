//! A store per server, for the registries of object_store and DataFusion,
//! and the URLs they take.

use std::sync::Arc;

use object_store::registry::ObjectStoreRegistry;
use object_store::{Error, Result};
use xroot_client::Client;

use crate::error::STORE;
use crate::store::{parse, server_of, XrootStore};

/// The store for the server of `url` (`root://host:port`; any path is
/// ignored: the store's base is `/`), with `client`, and the URL that
/// registries key it by: `scheme://[user@]host:port`. DataFusion takes the
/// pair as it is:
///
/// ```no_run
/// # fn demo(ctx: &datafusion::prelude::SessionContext) -> object_store::Result<()> {
/// let (key, store) = xroot_object_store::server_store(
///     xroot_client::Client::new(),
///     "root://eos.example.org:1094//store/data/f.parquet",
/// )?;
/// ctx.register_object_store(&key, store);
/// // then any root://eos.example.org:1094/... table URL reads through it
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Generic`] when `url` is not a `root://`-family URL.
pub fn server_store(client: Client, url: &str) -> Result<(url::Url, Arc<XrootStore>)> {
    let server = server_of(&parse(url)?);
    let store = Arc::new(XrootStore::with_client(client, &server)?);
    let key = url::Url::parse(&server).map_err(|e| Error::Generic {
        store: STORE,
        source: format!("{server:?}: {e}").into(),
    })?;
    Ok((key, store))
}

/// Registers [`server_store`]'s store in `registry` and returns it. The
/// registry then resolves `root://host:port//a/b` and `root://host:port/a/b`
/// to the store and the object path `a/b`.
///
/// # Errors
/// As [`server_store`].
pub fn register(
    registry: &dyn ObjectStoreRegistry,
    client: Client,
    url: &str,
) -> Result<Arc<XrootStore>> {
    let (key, store) = server_store(client, url)?;
    registry.register(key, store.clone());
    Ok(store)
}

/// `url` in the form that object_store's paths (and so DataFusion's table
/// URLs) accept: `root://host:port/abs/path`, one `/` after the address.
/// The stock tools' form `root://host:port//abs/path` names the same file
/// but its empty path segment is refused by
/// [`Path`](object_store::path::Path); this drops it, and any other empty
/// segment. A trailing `/` (a directory) is kept.
///
/// # Errors
/// [`Error::Generic`] when `url` is not a `root://`-family URL.
pub fn object_url(url: &str) -> Result<url::Url> {
    let parsed = parse(url)?;
    let segments: Vec<&str> = parsed.path.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = format!("{}/{}", server_of(&parsed), segments.join("/"));
    if parsed.path.ends_with('/') && !segments.is_empty() {
        out.push('/');
    }
    url::Url::parse(&out).map_err(|e| Error::Generic {
        store: STORE,
        source: format!("{url:?}: {e}").into(),
    })
}
