//! `sql`: a DataFusion SQL query over Parquet files read through `root://`
//! (or `roots://`), printed as a table.
//!
//! ```text
//! sql --table NAME=URL [--table NAME=URL ...] [--cache-dir DIR] QUERY
//! cargo run --release -p xroot-object-store --example sql -- \
//!     --table events=root://host:1094//data/run1/ \
//!     'SELECT "nMuon", count(*) FROM events WHERE "MET_pt" > 20 GROUP BY "nMuon"'
//! ```
//!
//! Column names with capitals are quoted (`"nMuon"`): DataFusion folds
//! unquoted names to lower case, as SQL does.
//!
//! A table's URL names one Parquet file or a directory of them (every
//! `.parquet` file below it); both URL forms work, `root://host//abs/path`
//! as the stock tools write it and `root://host/abs/path`. Each server is
//! registered once as an object store ([`xroot_object_store::server_store`]);
//! the client takes TLS trust, tokens and sss keytabs from the environment
//! as the stock tools do (`X509_CERT_DIR`, `BEARER_TOKEN`..., `XrdSecSSSKT`).
//!
//! With `--cache-dir DIR`, reads go through a block cache in `DIR` (one
//! subdirectory per server, `HOST_PORT`; see
//! [`xroot_object_store::XrootStore::with_cache`]): a second query over the
//! same files reads the cached blocks from disk.
//!
//! Exit status: 0 on success, 1 when the query or a table fails (the error
//! on stderr), 2 for invalid arguments.

use std::collections::HashSet;
use std::process::ExitCode;

use std::sync::Arc;

use clap::Parser;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use object_store::ObjectStoreExt;
use xroot_cache::CacheConfig;
use xroot_client::Client;
use xroot_object_store::XrootStore;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "sql",
    about = "A DataFusion SQL query over Parquet files read through root://"
)]
struct Cli {
    /// A table: NAME=URL of a Parquet file or a directory of them
    /// (repeatable).
    #[arg(long = "table", value_name = "NAME=URL", required = true, value_parser = table)]
    tables: Vec<(String, String)>,
    /// Read through a block cache in this directory (created if absent).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<std::path::PathBuf>,
    /// With --cache-dir: seconds after the server last confirmed a file
    /// during which its cached blocks are read without contacting the
    /// server (0: every open asks it).
    #[arg(long, value_name = "SECONDS", default_value_t = CacheConfig::CLIENT_TRUST.as_secs())]
    trust_window: u64,
    /// The SQL query.
    query: String,
}

fn table(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, url)) if !name.is_empty() && !url.is_empty() => {
            Ok((name.to_string(), url.to_string()))
        }
        _ => Err(format!("{s:?}: expected NAME=URL")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sql: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(cli: &Cli) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = SessionContext::new();
    let client = Client::new();
    let mut servers = HashSet::new();
    let mut cached = Vec::new();
    for (name, url) in &cli.tables {
        let (key, mut store) = xroot_object_store::server_store(client.clone(), url)?;
        // one store (and one cache) per server
        let new_server = servers.insert(key.clone());
        if let (true, Some(dir)) = (new_server, &cli.cache_dir) {
            let server = format!(
                "{}_{}",
                key.host_str().unwrap_or(""),
                key.port().unwrap_or(0)
            );
            store = Arc::new(XrootStore::with_cache(
                client.clone(),
                key.as_str(),
                dir.join(server),
                CacheConfig {
                    trust_window: std::time::Duration::from_secs(cli.trust_window),
                    ..CacheConfig::below_client()
                },
            )?);
            cached.push(store.clone());
        }
        let mut table_url = xroot_object_store::object_url(url)?;
        // a directory is a table of every Parquet file below it: DataFusion
        // lists a URL as a directory when it ends with `/`
        if !table_url.path().ends_with('/') {
            // the URL's path is percent-encoded; the server's is not
            let path = object_store::path::Path::from_url_path(table_url.path())?;
            // a file (the cache may answer for it without the server), or
            // else perhaps a directory
            match store.head(&path).await {
                Ok(_) => {}
                Err(object_store::Error::NotFound { .. }) => {
                    let stat = client
                        .fs(key.as_str())?
                        .stat(&format!("/{path}"))
                        .await
                        .map_err(|e| format!("table {name}: {url}: {e}"))?;
                    if stat.is_dir() {
                        table_url.set_path(&format!("{}/", table_url.path()));
                    }
                }
                Err(e) => return Err(format!("table {name}: {url}: {e}").into()),
            }
        }
        if new_server {
            ctx.register_object_store(&key, store);
        }
        ctx.register_parquet(name, table_url.as_str(), ParquetReadOptions::default())
            .await
            .map_err(|e| format!("table {name}: {url}: {e}"))?;
    }
    let frame = ctx.sql(&cli.query).await?;
    let batches = frame.collect().await?;
    // what was fetched stays for the next run
    for store in &cached {
        store.flush_cache().await?;
    }
    println!(
        "{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)?
    );
    Ok(())
}
