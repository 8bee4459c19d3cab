//! [`object_store::ObjectStore`] over `root://` and `roots://`: the XRootD
//! servers of high-energy physics as a store for DataFusion, parquet's
//! `ParquetObjectReader` and anything else written against `object_store`
//! (version 0.13, the one DataFusion 55 uses).
//!
//! ```no_run
//! # async fn demo() -> object_store::Result<()> {
//! use object_store::{path::Path, ObjectStore};
//! use xroot_object_store::XrootStore;
//!
//! // every object path is below /store/data on that server
//! let store = XrootStore::new("root://eos.example.org:1094//store/data")?;
//! let footer = store
//!     .get_opts(&Path::from("run1/events.parquet"), object_store::GetOptions {
//!         range: Some(object_store::GetRange::Suffix(8)),
//!         ..Default::default()
//!     })
//!     .await?
//!     .bytes()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! DataFusion, with a table of every Parquet file below a directory:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use datafusion::prelude::{ParquetReadOptions, SessionContext};
//! use xroot_object_store::{object_url, server_store};
//!
//! let ctx = SessionContext::new();
//! let (key, store) = server_store(xroot_client::Client::new(), "root://eos.example.org:1094")?;
//! ctx.register_object_store(&key, store);
//! // the stock tools' root://host//abs/path has an empty segment DataFusion refuses: object_url
//! // turns it into root://host/abs/path (a directory keeps its trailing slash)
//! let table = object_url("root://eos.example.org:1094//store/run1/")?;
//! ctx.register_parquet("events", table.as_str(), ParquetReadOptions::default()).await?;
//! ctx.sql(r#"SELECT "nMuon", count(*) FROM events GROUP BY "nMuon""#).await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! # Paths
//!
//! The store's URL names a server and a base directory; object paths are
//! relative to it, `/`-separated, without empty segments (object_store's
//! [`Path`] refuses them). `root://host//data` and `root://host/data` name
//! the same base `/data`, as the stock tools read them; so do
//! `root://host:1094/` and `root://host` (the server's root). The object
//! `a/b.parquet` of the store `root://host//data` is the file
//! `/data/a/b.parquet` on the server.
//!
//! # What each call does on the wire
//!
//! | call | XRootD requests |
//! |---|---|
//! | `get_opts` (any [`GetRange`], bounded, offset or suffix) | `kXR_open` (with its stat) unless a handle is kept (see below), then `kXR_read`s of at most 8 MiB as the stream is polled |
//! | `head` (`get_opts` with `head`) | `kXR_stat` |
//! | `get_ranges` | `kXR_open` unless a handle is kept (see below); for one range a `kXR_read` (with the file's `kXR_Qconfig` beside it, for the vector reads to come); for several, nothing when they were read ahead (below), else one or more `kXR_readv` split to the server's limits (1024 elements, 2,097,136 bytes each); no coalescing |
//! | `list`, `list_with_delimiter` | `kXR_dirlist` with `kXR_dstat`, per directory |
//! | `put_opts` | a temporary file beside the target (`kXR_open` new, with `kXR_mkpath`; `kXR_pgwrite`s of at most 8 MiB where the server serves them on a plain link, else `kXR_write`s; `kXR_close`), then `kXR_mv` onto the target |
//! | `put_multipart_opts` | the same temporary file, each part written at its offset as it comes, `kXR_mv` on completion (`kXR_rm` on abort) |
//! | `delete_stream` | `kXR_rm` per path |
//! | `copy_opts` | the source read and written to a temporary file, then `kXR_mv` (XRootD 5.5 servers do not offer `kXR_clone`) |
//! | `rename_opts` | `kXR_mv` |
//!
//! Reads keep their file open: calls made within 5 s of a file's open
//! share its handle (parquet asks for each column chunk with a call of its
//! own; an open and a close each would cost two round trips per call), and
//! the file is closed (`kXR_close`) when the last call or stream using it
//! ends after that. A write, rename or delete through the store lets go of
//! the handle at once; so does a failed read, which is tried once more on a
//! fresh open. A file replaced on the server by someone else is seen by
//! calls made 5 s or more after the open that preceded the change.
//!
//! **Read-ahead for Parquet.** A Parquet reader asks for a file's footer
//! (one suffix read), then for one row group's column chunks at a time,
//! one file after another: a round trip each over the WAN. The store keeps
//! the bytes of a file's tail read; at the first `get_ranges` of whole
//! column chunks it decodes the footer and reads the same columns (by
//! path) of every row group, of this file and of every other file whose
//! footer it read within 5 s, one vector read per file, all at once, and
//! answers the later calls from memory. At most
//! [`XrootStore::with_read_ahead`] bytes are held (256 MiB by default),
//! none longer than 5 s after the tail was read nor after the store
//! changes the file; a footer that does not decode, or ranges that are
//! not whole column chunks (pages, page indexes), are read as asked. A
//! directory query then takes 6 round trips: `kXR_protocol`, `kXR_login`,
//! `kXR_dirlist`, the opens, the footers, the column chunks.
//!
//! Errors map to object_store's kinds: `kXR_NotFound` (and
//! `kXR_isDirectory`: a directory is no object) to [`Error::NotFound`], `kXR_ItExists` to [`Error::AlreadyExists`],
//! `kXR_NotAuthorized` to [`Error::PermissionDenied`], `kXR_AuthFailed` to
//! [`Error::Unauthenticated`], everything else to [`Error::Generic`] with
//! the client's error as its source. Conditional requests compare against
//! an ETag made of the file's modification time and size; object versions
//! and `PutMode::Update` are not supported ([`Error::NotImplemented`]).
//!
//! `PutMode::Create`, `CopyMode::Create` and a rename that must not
//! overwrite check that the target does not exist, then rename onto it:
//! XRootD has no conditional rename, so two writers racing for the same new
//! name can both succeed (the last rename wins). Unconditional puts are
//! atomic: readers see the old object or the new one, never part of it.
//!
//! # A cache below the client
//!
//! [`XrootStore::with_cache`] reads through a block cache in a local
//! directory (xroot-cache's store, as our XCache uses it): one server
//! request per vector read for the blocks it lacks, cached blocks from
//! disk, the server whenever the cache fails; several processes may share
//! the directory. With a trust window ([`CacheConfig::below_client`]: an
//! hour), a file the server confirmed within the window is opened, stat'ed
//! (`head`) and read from its cached blocks **without contacting the
//! server**, so a query over what was cached runs with the server down. So
//! are listings within the window: each directory's, kept beside the cache
//! directory (`DIR.listings/`, pruned as it is written to the newest 4096
//! files within the window) after the server's answer, is reused without a request, so a
//! directory table runs with the server down too.
//!
//! # Registries
//!
//! [`register`] adds a store for a server (`root://host:port`, base `/`) to
//! an object_store [`ObjectStoreRegistry`]; the registry then resolves any
//! `root://host:port//abs/path` URL to it and the object path `abs/path`.
//! DataFusion's `SessionContext::register_object_store` takes the same
//! store and URL.
//!
//! # Sources
//!
//! A comment citing `PROTOCOL.md §N.M` (or `PROTOCOL.md Appendix item K`)
//! points to the protocol notes that ship with xroot-proto
//! (`xroot-proto/PROTOCOL.md`, rendered as [`xroot_proto::notes`]); one
//! citing `SECURITY.md "TLS"` and the like points to the security notes
//! that ship with xroot-sec (`xroot-sec/SECURITY.md`, rendered as
//! `xroot_sec::notes`). Besides those, the sources are the upstream
//! `src/XProtocol/XProtocol.hh` and the other xrootd files named where they
//! are used (<https://github.com/xrootd/xrootd>).
//!
//! [`Path`]: object_store::path::Path
//! [`GetRange`]: object_store::GetRange
//! [`ObjectStoreRegistry`]: object_store::registry::ObjectStoreRegistry
//! [`CacheConfig::below_client`]: xroot_cache::CacheConfig::below_client
//! [`Error::NotFound`]: object_store::Error::NotFound
//! [`Error::AlreadyExists`]: object_store::Error::AlreadyExists
//! [`Error::PermissionDenied`]: object_store::Error::PermissionDenied
//! [`Error::Unauthenticated`]: object_store::Error::Unauthenticated
//! [`Error::Generic`]: object_store::Error::Generic
//! [`Error::NotImplemented`]: object_store::Error::NotImplemented

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ahead;
mod error;
mod handles;
mod listing;
mod objects;
mod registry;
mod store;
mod temp;
mod upload;

pub use error::STORE;
pub use registry::{object_url, register, server_store};
pub use store::XrootStore;

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use object_store::path::Path;
    use object_store::registry::ObjectStoreRegistry;
    use xroot_client::Client;

    use super::*;

    #[test]
    fn both_url_forms_name_the_same_base() {
        for url in [
            "root://h:1095//data/x",
            "root://h:1095/data/x",
            "root://h:1095//data/x/",
        ] {
            let s = XrootStore::new(url).unwrap();
            assert_eq!(
                s.server_path(&Path::from("a/b.parquet")).unwrap(),
                "/data/x/a/b.parquet"
            );
            assert_eq!(s.url("/data/x/a"), "root://h:1095//data/x/a");
            assert_eq!(
                s.object_path("/data/x/a/b.parquet").unwrap(),
                Path::from("a/b.parquet")
            );
        }
        let root = XrootStore::new("root://h").unwrap();
        assert_eq!(root.server_path(&Path::from("f")).unwrap(), "/f");
        assert_eq!(root.server_path(&Path::from("")).unwrap(), "/");
        assert!(XrootStore::new("http://h/x").is_err());
    }

    #[test]
    fn what_xrootd_would_misread_is_refused() {
        // a `?` starts CGI on the wire: `a?b` would address `a`
        let s = XrootStore::new("root://h//data").unwrap();
        assert!(s.server_path(&Path::parse("a?b").unwrap()).is_err());
        assert_eq!(
            s.server_path(&Path::from("a?b")).unwrap(),
            "/data/a%3Fb",
            "Path::from encodes it"
        );
        // CGI and passwords in the store URL would not be sent
        assert!(XrootStore::new("root://h//data?authz=x").is_err());
        assert!(XrootStore::new("root://u:pw@h//data").is_err());
        assert!(object_url("root://h//d/f.parquet?x=1").is_err());
    }

    #[test]
    fn temporary_names_are_hidden_fresh_and_short() {
        let s = XrootStore::new("root://h//data").unwrap();
        let long = "x".repeat(250);
        let (a, b) = (
            s.temp_path(&format!("/data/{long}")),
            s.temp_path(&format!("/data/{long}")),
        );
        assert_ne!(a, b);
        let name = a.rsplit_once('/').unwrap().1;
        assert!(
            name.starts_with('.') && name.ends_with(".xroot-upload"),
            "{name}"
        );
        assert!(name.len() < 200, "{} bytes", name.len());
        // another store in the same process does not repeat a name
        let t = XrootStore::new("root://h//data").unwrap();
        assert_ne!(t.temp_path("/data/f"), s.temp_path("/data/f"));
    }

    #[test]
    fn object_urls_have_no_empty_segment() {
        for (url, want) in [
            (
                "root://h:1095//data/f.parquet",
                "root://h:1095/data/f.parquet",
            ),
            (
                "root://h:1095/data/f.parquet",
                "root://h:1095/data/f.parquet",
            ),
            ("root://h//data//dir/", "root://h:1094/data/dir/"),
            ("roots://u@h//", "roots://u@h:1094/"),
        ] {
            assert_eq!(object_url(url).unwrap().as_str(), want, "{url}");
        }
    }

    #[test]
    fn a_registry_resolves_both_url_forms() {
        let registry = object_store::registry::DefaultObjectStoreRegistry::new();
        register(&registry, Client::new(), "root://h:1095//ignored").unwrap();
        for url in [
            "root://h:1095/data/f.parquet",
            "root://h:1095//data/f.parquet",
        ] {
            let (store, path) = registry.resolve(&url::Url::parse(url).unwrap()).unwrap();
            assert_eq!(store.to_string(), "XrootStore(root://h:1095/)", "{url}");
            assert_eq!(path, Path::from("data/f.parquet"), "{url}");
        }
    }
}
