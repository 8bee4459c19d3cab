//! `xrdcp`: copies files to, from and between XRootD servers with
//! xroot-client, in the shape of the stock tool.
//!
//! ```text
//! cargo run --release --example xrdcp -- [--cksum adler32|crc32c|md5[:print]]
//!     [--streams N] [--connections N] [--parallel N] [--chunks N] [-f] [-N] [-s]
//!     [-r] [--retry N] [--tpc [delegate] first|only] SRC... DST
//! ```
//!
//! SRC and DST are `root://host[:port]//path` URLs (`roots://` for TLS,
//! trusting the CA certificates of `X509_CERT_DIR`, default
//! `/etc/grid-security/certificates`, as the stock tool) or local paths, on
//! either side; `-` is standard input as SRC and standard output as DST. With
//! several SRC, DST is a directory and `--parallel N` copies N files at once;
//! a DST that is an existing directory receives the file under its own name.
//! A DST that exists is an error unless `-f`; missing parent directories are
//! created, as the stock tool does. (Unlike the stock tool, a device such as
//! `/dev/null` is written without `-f`.)
//!
//! `-r` copies every regular file under a SRC that is a directory, local or
//! remote, to `DST/NAME/...`, NAME the directory's own name, as the stock
//! tool names them (`-r /tmp/a root://h//dst/` writes `/dst/a/...`; a
//! trailing `/` on SRC changes nothing); empty directories are not made.
//! DST must be an existing directory (local or remote, so remote to remote
//! too): a missing local one exits 2, a remote one 50, a tree without a
//! regular file 2, as the stock tool.
//!
//! Logging in follows the server's offer and the stock client's
//! environment: `XrdSecPROTOCOL`, the `sss` keytab `XrdSecSSSKT`, a `ztn`
//! token (`BEARER_TOKEN`...), and for `gsi` the X509 proxy
//! `X509_USER_PROXY` (default `/tmp/x509up_u<uid>`), else
//! `X509_USER_CERT`/`X509_USER_KEY`, checked against `X509_CERT_DIR`; the
//! end of `--help` says so ([`crate::CLIENT_AUTH_HELP`]).
//!
//! Connecting follows the stock client's settings: up to
//! `XRD_CONNECTIONRETRY` attempts (5), each within a window of
//! `XRD_CONNECTIONWINDOW` seconds (120) and the next one starting when the
//! window of the failed one ends; so a refused connection fails after 4
//! windows (8 minutes) by default, at once with `XRD_CONNECTIONRETRY=1`.
//! `--retry N` (`-t`; default `XRD_CPRETRY`, else 0) tries a copy again up
//! to N times after a failure that may pass (a connection that failed or
//! was lost, a timeout: the stock tool's test), replacing what the failed
//! attempt wrote (the stock default `--retry-policy force`; `continue` is
//! not offered). Unlike the stock client, ours does not refuse a server
//! for `XRD_STREAMERRORWINDOW` seconds after its connection failed, so a
//! retry connects again (as the stock one does with that window at 0).
//!
//! Reading goes in blocks of `XRD_CPCHUNKSIZE` bytes (8 MiB), with
//! `XRD_CPPARALLELCHUNKS` (4, or `--chunks N`) of them in flight, written in
//! order (a local target) or as they come (a remote one). As the stock tool,
//! `XRD_CPUSEPGWRTRD=1` (the default) reads and writes remote files with
//! `kXR_pgread` / `kXR_pgwrite` (crc32c per 4 kB page) and `0` with plain
//! `kXR_read` / `kXR_write`; over TLS, plain reads and writes either way
//! (the stock tool's `File::IsSecure` check: TLS protects the data).
//! `--streams N` opens N TCP connections per server (`kXR_bind`
//! substreams). `--connections N` (not in the stock tool)
//! opens each remote file on N channels of its own (a distinct
//! `xrdcl.intent` each) and spreads the blocks over them, so that as many
//! server threads serve it.
//!
//! `--cksum ALG` computes the checksum over the bytes copied and compares it
//! with what every remote side answers to `kXR_query` checksum, as values
//! (`0x91E01DE` is `091e01de`); a mismatch fails the copy. The value is printed on standard error in the stock
//! tool's form, `adler32: 091e01de TARGET SIZE`. `--cksum ALG:print` only
//! prints the locally computed value.
//!
//! The progress bar (standard error), `[SIZE/TOTAL][PERCENT%][===...][RATE]`
//! as the stock tool's, is shown only when standard output is a terminal
//! (not with `-N` or `-s`); as the stock one, its last state stays on the
//! terminal after the copy. An error is one line on standard error naming
//! the side that failed and its path or URL once: `xrdcp: source URL:
//! server error kXR_NotFound(3011): ...`, `xrdcp: target PATH: file
//! exists ...`. Exit status, as the stock `xrdcp` 5.5.3's: 0 when every copy
//! succeeded; else that of the first copy that failed (the reasons on
//! standard error): 51 a connection that failed, 52 a login or
//! authentication that failed (a credential the server refused included:
//! the stock tool's "Auth failed") or a request that timed out, 53 a bad answer
//! or a checksum mismatch, 54 an error the server answered or a local
//! target that exists, 50 a remote one that exists and anything else, the
//! errno of a local file's error (2: no such file); 22 for bad usage.
//! `--version` prints `v` and the version.
//!
//! `--tpc only` makes every copy a native third-party copy
//! ([`xroot_client::ThirdPartyCopy`]): both sides remote, the destination
//! pulls the file from the source and the tool only waits, the bar
//! following what the destination reports; a local side is an error (exit
//! 50), as is a source that does not answer `kXR_Qconfig tpc` with a
//! number. `--tpc first` copies the usual way in those two cases, as the
//! stock tool does; a destination without TPC fails either way (the stock
//! server answers `kXR_Unsupported`, exit 54, as with the stock tool).
//! `--tpc delegate first|only` sends `tpc.dlgon=1` and the source's CGI (a
//! token's `authz=`) as `tpc.scgi`; the source's CGI goes with the
//! source's opens either way. With `--cksum`, the source's and the
//! destination's checksums are compared. `--streams N` is asked of the
//! destination (`tpc.str`); `XRD_CPTPCTIMEOUT` (1800 s) bounds each copy
//! (exit 52 past it).

use std::error::Error;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use clap::Parser;
use futures::stream::{self, BoxStream, StreamExt};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use xroot_client::{Client, Config, File, OpenFlags, ThirdPartyCopy, TpcError, Url};
use xroot_proto::request::OpenOptions;
use xroot_server::checksum::{Algorithm, Checksum};

type BoxError = Box<dyn Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

#[derive(Parser, Debug)]
#[command(
    name = "xrdcp",
    version = concat!("v", env!("CARGO_PKG_VERSION")),
    about = "Copies files to, from and between XRootD servers",
    override_usage = "xrdcp [OPTIONS] SRC... DST",
    after_help = crate::CLIENT_AUTH_HELP
)]
struct Args {
    /// Checksum to compute and verify against the server: adler32, crc32c or
    /// md5; `ALG:print` prints it without verifying.
    #[arg(short = 'C', long, value_name = "ALG[:print]")]
    cksum: Option<CksumArg>,
    /// TCP connections per server (the main one plus kXR_bind substreams).
    #[arg(short = 'S', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    streams: u16,
    /// Connections per remote file (not in the stock tool): the file is
    /// opened on this many channels, each with its own `xrdcl.intent`, and
    /// the blocks are spread over them in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    connections: u16,
    /// Files copied at the same time (with several SRC).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    parallel: u16,
    /// Blocks in flight per file (default: XRD_CPPARALLELCHUNKS, else 4).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    chunks: Option<u16>,
    /// Replace an existing DST.
    #[arg(short = 'f', long)]
    force: bool,
    /// No progress bar.
    #[arg(short = 'N', long)]
    nopbar: bool,
    /// No output but errors (and requested checksums).
    #[arg(short = 's', long)]
    silent: bool,
    /// Copies every regular file under a SRC that is a directory into
    /// DST/NAME/..., NAME the directory's own name; DST must be an
    /// existing directory.
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Times a copy is tried again after a failure that may pass (a
    /// connection that failed or was lost, a timeout), replacing what the
    /// failed attempt wrote (default: XRD_CPRETRY, else 0).
    #[arg(short = 't', long, value_name = "N")]
    retry: Option<u32>,
    /// Third-party copy: the destination pulls each file from the source
    /// (`only`: or fail; `first`: else copy the usual way, when the source
    /// does not take part); `--tpc delegate first|only` also delegates the
    /// credential and passes the source's CGI to the destination.
    #[arg(long, value_name = "[delegate] first|only")]
    tpc: Option<TpcMode>,
    /// Set by `--tpc delegate MODE` (see [`tpc_argv`]).
    #[arg(long, hide = true)]
    tpc_delegate: bool,
    /// SRC... DST: root:// or roots:// URLs or local paths; `-` is stdin / stdout.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<String>,
}

/// `--cksum ALG[:print]`.
#[derive(Debug, Clone)]
struct CksumArg {
    alg: Algorithm,
    verify: bool,
}

impl std::str::FromStr for CksumArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, mode) = s.split_once(':').unwrap_or((s, ""));
        let alg =
            Algorithm::named(name).ok_or_else(|| format!("{name}: not adler32, crc32c or md5"))?;
        match mode {
            "" => Ok(CksumArg { alg, verify: true }),
            "print" => Ok(CksumArg { alg, verify: false }),
            _ => Err(format!("{mode}: only ALG or ALG:print")),
        }
    }
}

/// `--tpc first|only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TpcMode {
    /// Third-party copy where the source takes part, else the usual copy.
    First,
    /// Third-party copy or fail.
    Only,
}

/// `argv` with the stock tool's `--tpc delegate MODE` written as `--tpc
/// MODE --tpc-delegate`, so that `--tpc` takes one value.
fn tpc_argv(argv: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut argv = argv.into_iter().peekable();
    while let Some(arg) = argv.next() {
        let delegating = arg == "--tpc" && argv.peek().is_some_and(|a| a == "delegate");
        out.push(arg);
        if delegating {
            argv.next();
            out.extend(argv.next());
            out.push("--tpc-delegate".into());
        }
    }
    out
}

/// How blocks move: the stock tool's `XRD_CP*` settings.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// `kXR_pgread` / `kXR_pgwrite` rather than plain reads and writes
    /// (`XRD_CPUSEPGWRTRD`, 1).
    paged: bool,
    /// Bytes per block (`XRD_CPCHUNKSIZE`, 8 MiB).
    chunk: usize,
    /// Blocks in flight per file (`XRD_CPPARALLELCHUNKS`, 4).
    in_flight: usize,
}

impl Tuning {
    fn from_env(chunks: Option<u16>) -> Res<Tuning> {
        let env = env_number::<usize>;
        let chunk = env("XRD_CPCHUNKSIZE", 8 << 20)?;
        if chunk == 0 || chunk > i32::MAX as usize {
            return Err(format!("XRD_CPCHUNKSIZE={chunk} is not 1..2^31").into());
        }
        let in_flight = match chunks {
            Some(n) => n as usize,
            None => env("XRD_CPPARALLELCHUNKS", 4)?.max(1),
        };
        Ok(Tuning {
            paged: env("XRD_CPUSEPGWRTRD", 1)? != 0,
            chunk,
            in_flight,
        })
    }
}

/// One side of a copy.
#[derive(Debug, Clone)]
enum Place {
    Remote(Url),
    Local(PathBuf),
    /// `-`: standard input as a source, standard output as a target.
    Std,
}

impl Place {
    fn parse(s: &str) -> Res<Place> {
        Ok(if s == "-" {
            Place::Std
        } else if s.contains("://") {
            Place::Remote(Url::parse(s).map_err(|e| format!("{s}: {e}"))?)
        } else {
            Place::Local(PathBuf::from(s))
        })
    }

    /// The last path component, for a copy into a directory.
    fn file_name(&self) -> Option<String> {
        let name = match self {
            Place::Remote(u) => u
                .path
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .map(str::to_string),
            Place::Local(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Place::Std => None,
        };
        name.filter(|n| !n.is_empty())
    }

    /// `self` (a directory) with `name` appended.
    fn join(&self, name: &str) -> Place {
        match self {
            Place::Remote(u) => Place::Remote(Url {
                path: format!("{}/{name}", u.path.trim_end_matches('/')),
                ..u.clone()
            }),
            Place::Local(p) => Place::Local(p.join(name)),
            Place::Std => Place::Std,
        }
    }

    /// Whether `self` names an existing directory (or ends with `/`).
    async fn is_dir(&self, client: &Client) -> Res<bool> {
        Ok(match self {
            Place::Remote(u) if u.path.ends_with('/') => true,
            Place::Remote(u) => match client.fs(&u.to_string())?.stat(&u.path).await {
                Ok(st) => st.is_dir(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(context(format!("target {self}"), e)),
            },
            Place::Local(p) => p.is_dir(),
            Place::Std => false,
        })
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Remote(u) => write!(f, "{u}"),
            Place::Local(p) => write!(f, "{}", p.display()),
            Place::Std => f.write_str("-"),
        }
    }
}

/// What every copy shares.
struct Ctx {
    client: Client,
    tuning: Tuning,
    cksum: Option<CksumArg>,
    force: bool,
    connections: usize,
    /// `--tpc`: the mode, and whether to delegate.
    tpc: Option<(TpcMode, bool)>,
    /// `--streams`, for `tpc.str`.
    streams: u16,
    bars: Option<MultiProgress>,
}

/// The `xrdcp` example's `main`: copies as the command line says and
/// exits with the stock tool's codes (see the module's documentation).
pub fn main() -> ExitCode {
    let args = match Args::try_parse_from(tpc_argv(std::env::args_os())) {
        Ok(args) => args,
        Err(e) => return usage(e),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(args)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("xrdcp: {e}");
            ExitCode::from(exit_code(e.as_ref()))
        }
    }
}

/// `--help` and `--version` (`v` and the version, as the stock tool
/// prints `v5.5.3`) print and exit 0; a usage error exits 22 (`EINVAL`),
/// as the stock `xrdcp` 5.5.3 does.
fn usage(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayVersion => println!("v{}", env!("CARGO_PKG_VERSION")),
        _ => {
            let _ = e.print();
        }
    }
    ExitCode::from(usage_code(&e))
}

/// The exit code [`usage`] gives `e`: 0 for `--help` and `--version`, 22
/// (`EINVAL`) for a usage error.
fn usage_code(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelp
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
        _ => 22,
    }
}

/// The exit code of a failed copy, as the stock `xrdcp` gives it: 50 plus
/// the hundreds of XrdCl's error code (XrdClStatus.hh), so 51 for a
/// connection that failed or was lost, 52 for a handshake, login or
/// authentication that failed (a credential the server refused with
/// `kXR_AuthFailed` too) or a request that timed out, 53 for a bad
/// answer, a redirect loop or a checksum mismatch, 54 for an error the
/// server answered (`kXR_error`: not found, not authorized...) and for a
/// local target that exists without `-f` (50 for a remote one); a
/// local file's error exits with its errno (2 for a missing source, as the
/// stock tool); anything else 50.
fn exit_code(e: &(dyn Error + 'static)) -> u8 {
    use xroot_client::Error as E;
    let mut cause: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(e) = c.downcast_ref::<E>() {
            return match e {
                // a remote target that exists: the stock tool finds it
                // first and fails with XrdCl's errInvalidOp
                E::Server { code, .. } if *code == xroot_proto::ErrorCode::ITEM_EXISTS => 50,
                // the server refused the credential at login: XrdCl's
                // errAuthFailed (204), "Auth failed"
                E::Server { code, .. } if *code == xroot_proto::ErrorCode::AUTH_FAILED => 52,
                E::Server { .. } => 54,
                E::Io { .. } | E::ConnectionLost { .. } | E::Tls { .. } => 51,
                E::Timeout { .. } | E::AuthUnsupported { .. } | E::Credential { .. } => 52,
                E::Protocol { .. }
                | E::UnexpectedResponse { .. }
                | E::RedirectLimit { .. }
                | E::ForeignRedirect(_)
                | E::PageChecksum { .. }
                | E::StreamIdsExhausted { .. } => 53,
                _ => 50,
            };
        }
        if let Some(TpcError::Timeout { .. }) = c.downcast_ref::<TpcError>() {
            // XrdCl's errOperationExpired, as a request's timeout
            return 52;
        }
        if c.downcast_ref::<Mismatch>().is_some() {
            return 53;
        }
        if c.downcast_ref::<Exists>().is_some() {
            return 54;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io
                .raw_os_error()
                .or((io.kind() == std::io::ErrorKind::NotFound).then_some(2))
                .and_then(|n| u8::try_from(n).ok())
                .filter(|&n| n != 0)
                .unwrap_or(50);
        }
        cause = c.source();
    }
    50
}

/// `error`, with what it is about (a path, a URL) in front; its source
/// stays `error`, for [`exit_code`].
fn context(what: impl std::fmt::Display, error: impl Into<BoxError>) -> BoxError {
    Box::new(Context {
        what: what.to_string(),
        error: error.into(),
    })
}

#[derive(Debug)]
struct Context {
    what: String,
    error: BoxError,
}

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.error)
    }
}

impl Error for Context {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self.error.as_ref())
    }
}

/// A local target that exists, without `-f` (exit code 54, as the stock
/// tool's).
#[derive(Debug)]
struct Exists(String);

impl std::fmt::Display for Exists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Exists {}

/// A checksum that differs from the server's (exit code 53).
#[derive(Debug)]
struct Mismatch(String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Mismatch {}

/// Copies every SRC; the exit code of the first copy that failed (each
/// failure is printed), 0 when all succeeded.
async fn run(args: Args) -> Res<u8> {
    let tuning = Tuning::from_env(args.chunks)?;
    let mut places = args
        .paths
        .iter()
        .map(|p| Place::parse(p))
        .collect::<Res<Vec<_>>>()?;
    let dst = places.pop().expect("clap asks for two paths");
    // XRD_CONNECTIONRETRY attempts (5), XRD_CONNECTIONWINDOW apart (120 s)
    let config = Config {
        substreams: args.streams as usize,
        app_name: "xrdcp-rs".into(),
        ..Config::default().with_connection_env()
    };
    let retries = match args.retry {
        Some(n) => n,
        None => env_number("XRD_CPRETRY", 0)?,
    };
    let client = Client::with_config(config);
    let show_bar = !args.nopbar && !args.silent && std::io::stdout().is_terminal();
    let ctx = Arc::new(Ctx {
        client,
        tuning,
        cksum: args.cksum,
        force: args.force,
        connections: args.connections as usize,
        tpc: args.tpc.map(|m| (m, args.tpc_delegate)),
        streams: args.streams,
        bars: show_bar.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
    });

    let jobs = match args.recursive {
        true => plan_tree(&ctx.client, places, dst).await?,
        false => plan(&ctx.client, places, dst).await?,
    };
    let silent = args.silent;
    let results: Vec<Res<()>> = stream::iter(jobs)
        .map(|(src, dst)| {
            let ctx = Arc::clone(&ctx);
            async move { copy_job(&ctx, &src, &dst, retries, silent).await }
        })
        .buffer_unordered(args.parallel as usize)
        .collect()
        .await;
    if ctx.bars.is_some() && !results.is_empty() {
        // below the bars' last lines, which stay
        eprintln!();
    }
    let mut code = 0;
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        eprintln!("xrdcp: {e}");
        if code == 0 {
            code = exit_code(e.as_ref());
        }
    }
    Ok(code)
}

/// An `XRD_*` number from the environment, `default` when unset.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> Res<T> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a number").into()),
        Err(_) => Ok(default),
    }
}

/// `src` copied to `dst`, tried again up to `retries` times after a
/// failure that may pass ([`may_pass`]), each time replacing what the
/// failed attempt left (the stock tool's `--retry` with its default
/// `--retry-policy force`). The error of the last attempt.
async fn copy_job(ctx: &Ctx, src: &Place, dst: &Place, retries: u32, silent: bool) -> Res<()> {
    let mut force = ctx.force;
    let mut tried = 0;
    loop {
        match copy(ctx, src, dst, force).await {
            Err(e) if tried < retries && may_pass(e.as_ref()) => {
                tried += 1;
                if !silent {
                    eprintln!("xrdcp: {e}; trying again ({tried} of {retries})");
                }
                force = true;
            }
            other => return other,
        }
    }
}

/// Whether a failed copy is worth another try, as the stock tool judges
/// it for `--retry` (XrdClCopyProcess.cc: a socket error, an operation
/// that expired): a connection that failed or was lost (exit code 51) or
/// a request that timed out.
fn may_pass(e: &(dyn Error + 'static)) -> bool {
    use xroot_client::Error as E;
    let mut cause: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(e) = c.downcast_ref::<E>() {
            return matches!(
                e,
                E::Io { .. } | E::ConnectionLost { .. } | E::Tls { .. } | E::Timeout { .. }
            );
        }
        cause = c.source();
    }
    false
}

/// Pairs every source with its target: into DST when it is a directory
/// (which it must be for several sources), else DST itself.
async fn plan(client: &Client, srcs: Vec<Place>, dst: Place) -> Res<Vec<(Place, Place)>> {
    let into_dir = dst.is_dir(client).await?;
    if srcs.len() > 1 && !into_dir {
        return Err(format!("{dst}: several sources need a directory as target").into());
    }
    srcs.into_iter()
        .map(|src| {
            let target = if into_dir {
                let name = src
                    .file_name()
                    .ok_or_else(|| format!("{src}: no file name to copy into {dst}"))?;
                dst.join(&name)
            } else {
                dst.clone()
            };
            Ok((src, target))
        })
        .collect()
}

/// `-r`: every regular file under each SRC that is a directory goes to
/// DST/NAME/..., NAME the directory's own name (`-r /tmp/a root://h//dst`
/// writes `/dst/a/...`, as the stock tool); a SRC that is a file goes to
/// DST/NAME as without `-r`. Empty directories are not made. DST must be
/// an existing directory, as for the stock tool (a local one that is
/// missing: ENOENT, exit code 2; a remote one: exit code 50); no regular
/// file at all is ENOENT too.
async fn plan_tree(client: &Client, srcs: Vec<Place>, dst: Place) -> Res<Vec<(Place, Place)>> {
    let dst_is_dir = match &dst {
        Place::Local(p) => std::fs::metadata(p)
            .map_err(|e| context(format!("target {dst}"), e))?
            .is_dir(),
        Place::Remote(u) => match client.fs(&u.to_string())?.stat(&u.path).await {
            Ok(st) => st.is_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(context(format!("target {dst}"), e)),
        },
        Place::Std => return Err("-r cannot write to standard output".into()),
    };
    if !dst_is_dir {
        return Err(format!("target {dst}: not a directory (-r copies into one)").into());
    }
    let mut jobs = Vec::new();
    for src in srcs {
        let name = src
            .file_name()
            .ok_or_else(|| format!("source {src}: no name to copy into {dst}"))?;
        let files = tree(client, &src)
            .await
            .map_err(|e| context(format!("source {src}"), e))?;
        match files {
            None => jobs.push((src.clone(), dst.join(&name))),
            Some(files) => jobs.extend(
                files
                    .into_iter()
                    .map(|rel| (src.join(&rel), dst.join(&format!("{name}/{rel}")))),
            ),
        }
    }
    if jobs.is_empty() {
        let none = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no regular files found to copy",
        );
        return Err(Box::new(none));
    }
    Ok(jobs)
}

/// The regular files under `src`, as paths relative to it (`b/y.txt`),
/// sorted; `None` when `src` is not a directory. Symbolic links to
/// directories are not followed in a local tree; devices, sockets and
/// the like (`kXR_other`) are left out.
async fn tree(client: &Client, src: &Place) -> Res<Option<Vec<String>>> {
    match src {
        Place::Std => Err("-r cannot read standard input".into()),
        Place::Local(root) => {
            if !std::fs::metadata(root)?.is_dir() {
                return Ok(None);
            }
            let mut files = Vec::new();
            let mut dirs = vec![(root.clone(), String::new())];
            while let Some((dir, rel)) = dirs.pop() {
                for entry in std::fs::read_dir(&dir)? {
                    let entry = entry?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let rel = match rel.is_empty() {
                        true => name,
                        false => format!("{rel}/{name}"),
                    };
                    let kind = entry.file_type()?;
                    if kind.is_dir() {
                        dirs.push((entry.path(), rel));
                    } else if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                        files.push(rel);
                    }
                }
            }
            files.sort();
            Ok(Some(files))
        }
        Place::Remote(url) => {
            use xroot_proto::response::StatFlags;
            let fs = client.fs(&url.to_string())?;
            if !fs.stat(&url.path).await?.is_dir() {
                return Ok(None);
            }
            let root = url.path.trim_end_matches('/').to_string();
            let mut files = Vec::new();
            let mut dirs = vec![String::new()];
            while let Some(rel) = dirs.pop() {
                let dir = format!("{root}/{rel}");
                for entry in fs.dirlist(&dir, true).await? {
                    let rel = match rel.is_empty() {
                        true => entry.name.clone(),
                        false => format!("{rel}/{}", entry.name),
                    };
                    let stat = match entry.stat {
                        Some(st) => st,
                        None => fs.stat(&format!("{root}/{rel}")).await?,
                    };
                    if stat.is_dir() {
                        dirs.push(rel);
                    } else if !stat.flags.contains(StatFlags::OTHER) {
                        files.push(rel);
                    }
                }
            }
            files.sort();
            Ok(Some(files))
        }
    }
}

/// Copies `src` to `dst` (replacing it with `force`). An error names
/// the side that failed and its path or URL, once: `source URL: ...`,
/// `target PATH: ...`.
async fn copy(ctx: &Ctx, src: &Place, dst: &Place, force: bool) -> Res<()> {
    if let Some((mode, delegate)) = ctx.tpc {
        match (src, dst) {
            (Place::Remote(s), Place::Remote(d)) => {
                match third_party(ctx, s, d, force, delegate).await {
                    // as the stock tool: `first` copies the usual way when
                    // the source does not take part
                    Err(e) if mode == TpcMode::First && source_unsupported(e.as_ref()) => {}
                    other => return other,
                }
            }
            _ if mode == TpcMode::Only => {
                return Err("cannot do a third-party copy for a local file".into())
            }
            _ => {}
        }
    }
    let t = ctx.tuning;
    let source = |e| context(format!("source {src}"), e);
    let target = |e| context(format!("target {dst}"), e);
    let Source {
        size,
        mut blocks,
        files,
    } = open_source(ctx, src).await.map_err(source)?;
    let mut sink = Sink::open(ctx, dst, force).await.map_err(target)?;
    let bar = progress(ctx, size);
    let mut hasher = ctx.cksum.as_ref().map(|c| Checksum::new(c.alg));
    let mut offset = 0u64;
    while let Some(block) = blocks.next().await {
        let block = block.map_err(source)?;
        if let Some(h) = &mut hasher {
            block.iter().for_each(|part| h.update(part));
        }
        let n = block_len(&block);
        sink.put(offset, block, t).await.map_err(target)?;
        offset += n;
        bar.inc(n);
    }
    sink.finish().await.map_err(target)?;
    for f in files {
        f.close().await.map_err(|e| source(e.into()))?;
    }
    // the last state stays on the terminal, as the stock tool's
    bar.finish();
    if let Some(size) = size.filter(|&s| s != offset) {
        return Err(format!("source {src}: copied {offset} bytes of {size}").into());
    }
    if let (Some(h), Some(c)) = (hasher, &ctx.cksum) {
        let value = String::from_utf8_lossy(&h.finish().value).into_owned();
        if c.verify {
            for side in [src, dst] {
                verify(ctx, side, c.alg, &value).await?;
            }
        }
        eprintln!("{}: {value} {dst} {offset}", c.alg.name());
    }
    Ok(())
}

/// `--tpc`: `src` copied to `dst` by the destination itself
/// ([`ThirdPartyCopy`]), the bar following the size the destination
/// reports, within `XRD_CPTPCTIMEOUT` seconds (1800). With `--cksum`, as
/// the stock tool, no bytes pass here to compute one: the source's
/// checksum is asked and the destination's compared with it.
async fn third_party(ctx: &Ctx, src: &Url, dst: &Url, force: bool, delegate: bool) -> Res<()> {
    let timeout = std::time::Duration::from_secs(env_number("XRD_CPTPCTIMEOUT", 1800)?);
    let copy = ThirdPartyCopy::new(src.clone(), dst.clone())
        .force(force)
        .streams(ctx.streams)
        .delegate(delegate)
        .timeout(timeout);
    let bar = progress(ctx, Some(0));
    let shown = bar.clone();
    let size = copy
        .run(&ctx.client, move |done, total| {
            shown.set_length(total);
            shown.set_position(done);
        })
        .await?;
    bar.finish();
    if let Some(c) = &ctx.cksum {
        let value = server_checksum(ctx, src, c.alg).await?;
        if c.verify {
            verify(ctx, &Place::Remote(dst.clone()), c.alg, &value).await?;
        }
        eprintln!("{}: {value} {dst} {size}", c.alg.name());
    }
    Ok(())
}

/// Whether `e` is a source that does not take part in third-party copy.
fn source_unsupported(e: &(dyn Error + 'static)) -> bool {
    matches!(
        e.downcast_ref::<TpcError>(),
        Some(TpcError::SourceUnsupported { .. })
    )
}

/// Compares `value` with the checksum the server of `side` reports (a
/// local side has no server: nothing to compare).
async fn verify(ctx: &Ctx, side: &Place, alg: Algorithm, value: &str) -> Res<()> {
    let Place::Remote(url) = side else {
        return Ok(());
    };
    let server = server_checksum(ctx, url, alg).await?;
    if !same_value(&server, value) {
        return Err(Box::new(Mismatch(format!(
            "checksum mismatch: {} of the bytes copied is {value}, {url} reports {server}",
            alg.name()
        ))));
    }
    Ok(())
}

/// The checksum of `url` by `alg`, as its server reports it.
async fn server_checksum(ctx: &Ctx, url: &Url, alg: Algorithm) -> Res<String> {
    let fs = ctx.client.fs(&url.to_string())?;
    let (server_alg, server) = fs
        .query_checksum(&url.path, Some(alg.name()))
        .await
        .map_err(|e| context(format!("checksum of {url}"), e))?;
    if !server_alg.eq_ignore_ascii_case(alg.name()) {
        return Err(format!(
            "{url}: asked for {}, the server answered {server_alg}",
            alg.name()
        )
        .into());
    }
    Ok(server)
}

/// Whether two checksums written in hex are the same value: an optional
/// `0x` prefix, the case of the digits and leading zeros do not count
/// (servers write adler32 `91e01de`, `0x091E01DE`...; the stock xrdcp
/// ignores case and, for adler32 and crc32, leading zeros). Text that is
/// not hex matches nothing.
fn same_value(a: &str, b: &str) -> bool {
    fn digits(v: &str) -> Option<String> {
        let v = v.trim();
        let v = v
            .strip_prefix("0x")
            .or_else(|| v.strip_prefix("0X"))
            .unwrap_or(v);
        if v.is_empty() || !v.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        Some(v.trim_start_matches('0').to_ascii_lowercase())
    }
    matches!((digits(a), digits(b)), (Some(a), Some(b)) if a == b)
}

/// A bar in the stock tool's shape, `[64.00 MiB/64.00 MiB][100%][===...][32.00 MiB/s]`
/// (a spinner when the size is unknown); [`ProgressBar::finish`] leaves
/// its last state on the terminal.
fn progress(ctx: &Ctx, size: Option<u64>) -> ProgressBar {
    let Some(bars) = &ctx.bars else {
        return ProgressBar::hidden();
    };
    let bar = match size {
        Some(s) => ProgressBar::new(s).with_style(
            ProgressStyle::with_template(
                "[{bytes}/{total_bytes}][{percent:>3}%][{bar:50}][{bytes_per_sec}]",
            )
            .expect("template")
            .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("[{bytes}][{spinner}][{bytes_per_sec}]")
                .expect("template"),
        ),
    };
    bars.add(bar)
}

/// One block of a copy: its bytes in one part or more (a remote read's
/// answer as its frames brought it), in order.
type Block = Vec<Bytes>;

/// Bytes in `block`.
fn block_len(block: &Block) -> u64 {
    block.iter().map(|p| p.len() as u64).sum()
}

/// What a copy reads from.
struct Source {
    /// Bytes, when known (not for standard input or a pipe).
    size: Option<u64>,
    /// The data in file order.
    blocks: BoxStream<'static, Res<Block>>,
    /// Remote handles to close at the end.
    files: Vec<Arc<File>>,
}

/// Opens `src` and starts reading it.
async fn open_source(ctx: &Ctx, src: &Place) -> Res<Source> {
    let t = ctx.tuning;
    match src {
        Place::Remote(url) => {
            let files = open_spread(ctx, url, OpenFlags::READ, OpenFlags::READ).await?;
            let size = match files[0].cached_stat() {
                Some(st) => st.size,
                None => files[0].stat().await?.size,
            };
            let spread = files.clone();
            let blocks = (0..size.div_ceil(t.chunk as u64)).map(move |i| {
                let offset = i * t.chunk as u64;
                let len = (size - offset).min(t.chunk as u64) as usize;
                // a task per block: page checks and copies run on every core
                let file = Arc::clone(&spread[i as usize % spread.len()]);
                tokio::spawn(async move {
                    // as the stock tool: no page checksums over TLS
                    let data = match t.paged && !file.is_secure() {
                        true => vec![file.pgread(offset, len).await?],
                        // the parts as they came: joining them would copy
                        false => file.read_parts_at(offset, len).await?,
                    };
                    let got = block_len(&data);
                    if got != len as u64 {
                        return Err(format!("{len} bytes at {offset}: got {got}").into());
                    }
                    Ok(data)
                })
            });
            let blocks = stream::iter(blocks).buffered(t.in_flight).map(joined);
            Ok(Source {
                size: Some(size),
                blocks: blocks.boxed(),
                files,
            })
        }
        Place::Local(path) => {
            let f = std::fs::File::open(path)?;
            let meta = f.metadata()?;
            if meta.is_dir() {
                return Err("is a directory (copy it with -r)".into());
            }
            Ok(Source {
                size: meta.is_file().then_some(meta.len()),
                blocks: local_blocks(f, t),
                files: Vec::new(),
            })
        }
        Place::Std => Ok(Source {
            size: None,
            blocks: local_blocks(std::io::stdin(), t),
            files: Vec::new(),
        }),
    }
}

/// How a target opened on several channels is opened after the first
/// time: for update, with `kXR_force`, without which the server refuses a
/// second writer (`kXR_FileLocked`).
const SHARED_WRITER: OpenFlags = OpenFlags {
    options: OpenOptions(OpenOptions::UPDATE.0 | OpenOptions::FORCE.0),
    mode: 0,
};

/// `url` opened on `ctx.connections` channels: with `first` on the URL's
/// own channel, then with `rest` on channels of their own (a distinct
/// `xrdcl.intent` each, which the server never sees).
async fn open_spread(
    ctx: &Ctx,
    url: &Url,
    first: OpenFlags,
    rest: OpenFlags,
) -> Res<Vec<Arc<File>>> {
    let mut files = Vec::with_capacity(ctx.connections);
    for i in 0..ctx.connections {
        let mut at = url.clone();
        let flags = match i {
            0 => first,
            _ => {
                at.cgi.retain(|(k, _)| k != "xrdcl.intent");
                at.cgi.push(("xrdcl.intent".into(), format!("xrdcp{i}")));
                rest
            }
        };
        let file = File::open(&ctx.client, &at, flags).await?;
        files.push(Arc::new(file));
    }
    Ok(files)
}

fn joined<T>(r: Result<Res<T>, tokio::task::JoinError>) -> Res<T> {
    r.map_err(|e| BoxError::from(format!("task failed: {e}")))?
}

/// Blocks read from `from` by a blocking thread, a few ahead.
fn local_blocks(mut from: impl Read + Send + 'static, t: Tuning) -> BoxStream<'static, Res<Block>> {
    let (tx, rx) = mpsc::channel::<Res<Block>>(t.in_flight);
    tokio::task::spawn_blocking(move || loop {
        let block = read_block(&mut from, t.chunk).map_err(BoxError::from);
        let last = block.as_ref().map_or(true, |b| b.len() < t.chunk);
        let empty = block.as_ref().is_ok_and(|b| b.is_empty());
        if (!empty && tx.blocking_send(block.map(|b| vec![b])).is_err()) || last {
            return;
        }
    });
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).boxed()
}

/// Up to `len` bytes from `from`: fewer only at its end.
fn read_block(from: &mut impl Read, len: usize) -> std::io::Result<Bytes> {
    let mut buf = BytesMut::zeroed(len);
    let mut filled = 0;
    while filled < len {
        match from.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf.freeze())
}

/// Where the blocks go.
enum Sink {
    /// Blocks written at their offsets, several in flight.
    Remote {
        /// The target, opened on one channel or more.
        files: Vec<Arc<File>>,
        writes: JoinSet<Res<()>>,
        /// Blocks sent so far.
        sent: usize,
    },
    /// Blocks written in order by a blocking thread.
    Local {
        tx: mpsc::Sender<Block>,
        done: JoinHandle<std::io::Result<()>>,
    },
}

impl Sink {
    async fn open(ctx: &Ctx, dst: &Place, force: bool) -> Res<Sink> {
        let t = ctx.tuning;
        let local = |w: Box<dyn Write + Send>| {
            let (tx, mut rx) = mpsc::channel::<Block>(t.in_flight);
            let done = tokio::task::spawn_blocking(move || {
                let mut w = w;
                while let Some(block) = rx.blocking_recv() {
                    for part in block {
                        w.write_all(&part)?;
                    }
                }
                w.flush()
            });
            Sink::Local { tx, done }
        };
        Ok(match dst {
            Place::Remote(url) => {
                let flags = match force {
                    true => OpenFlags::OVERWRITE,
                    false => OpenFlags::NEW,
                };
                Sink::Remote {
                    files: open_spread(ctx, url, flags.mkpath(), SHARED_WRITER).await?,
                    writes: JoinSet::new(),
                    sent: 0,
                }
            }
            Place::Local(path) => local(Box::new(open_local(path, force)?)),
            Place::Std => local(Box::new(std::io::stdout())),
        })
    }

    /// Writes `data` at `offset`, waiting while too many writes are in flight.
    async fn put(&mut self, offset: u64, data: Block, t: Tuning) -> Res<()> {
        match self {
            Sink::Remote {
                files,
                writes,
                sent,
            } => {
                while writes.len() >= t.in_flight {
                    joined(writes.join_next().await.expect("not empty"))?;
                }
                let file = Arc::clone(&files[*sent % files.len()]);
                *sent += 1;
                // a write takes one buffer: parts are joined (a copy) only
                // when the source answered in several frames
                let data = match <[Bytes; 1]>::try_from(data) {
                    Ok([one]) => one,
                    Err(parts) => parts.concat().into(),
                };
                writes.spawn(async move {
                    match t.paged && !file.is_secure() {
                        true => file.pgwrite(offset, data).await?,
                        false => file.write_at(offset, data).await?,
                    }
                    Ok(())
                });
                Ok(())
            }
            Sink::Local { tx, .. } => match tx.send(data).await {
                Ok(()) => Ok(()),
                // the writer stopped: its error is reported by `finish`
                Err(_) => Ok(()),
            },
        }
    }

    /// Waits for every write; closes the target.
    async fn finish(self) -> Res<()> {
        match self {
            Sink::Remote {
                files, mut writes, ..
            } => {
                while let Some(r) = writes.join_next().await {
                    joined(r)?;
                }
                for f in files {
                    f.close().await?;
                }
            }
            Sink::Local { tx, done } => {
                drop(tx);
                done.await.map_err(|e| format!("writer failed: {e}"))??;
            }
        }
        Ok(())
    }
}

/// Opens a local target: refused if a regular file is there without
/// `force`; parents created; a device (`/dev/null`) is written as it is.
/// Errors do not repeat `path` (the caller names it).
fn open_local(path: &Path, force: bool) -> Res<std::fs::File> {
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| m.is_file()) && !force {
        let what = "file exists (use -f to replace it)".to_string();
        return Err(Box::new(Exists(what)));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| context(format!("cannot create {}", parent.display()), e))?;
    }
    let regular = existing.is_none_or(|m| m.is_file());
    Ok(std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(regular)
        .open(path)?)
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::time::Duration;

    use xroot_client::Error as E;
    use xroot_proto::ErrorCode;

    use super::*;

    fn code(e: impl Into<BoxError>) -> u8 {
        exit_code(e.into().as_ref())
    }

    fn server(code: ErrorCode) -> E {
        E::Server {
            code,
            message: "the server's words".into(),
        }
    }

    fn io_error(endpoint: &str, kind: io::ErrorKind) -> E {
        E::Io {
            endpoint: endpoint.into(),
            source: kind.into(),
        }
    }

    #[test]
    fn a_server_error_exits_54_and_a_remote_target_that_exists_50() {
        assert_eq!(code(server(ErrorCode::NOT_FOUND)), 54);
        assert_eq!(code(server(ErrorCode::NOT_AUTHORIZED)), 54);
        assert_eq!(code(server(ErrorCode::ITEM_EXISTS)), 50);
        // through the context naming the side
        assert_eq!(
            code(context("source root://h//f", server(ErrorCode::NOT_FOUND))),
            54
        );
    }

    #[test]
    fn connections_exit_51_logins_and_timeouts_52_bad_answers_53() {
        assert_eq!(
            code(io_error("h:1094", io::ErrorKind::ConnectionRefused)),
            51
        );
        assert_eq!(
            code(E::ConnectionLost {
                endpoint: "h:1094".into()
            }),
            51
        );
        let timeout = E::Timeout {
            what: "read",
            after: Duration::from_secs(60),
        };
        assert_eq!(code(timeout), 52);
        let unsupported = E::AuthUnsupported {
            endpoint: "h:1094".into(),
            offered: vec!["gsi".into()],
        };
        assert_eq!(code(unsupported), 52);
        let credential = E::Credential {
            endpoint: "h:1094".into(),
            protocol: "sss".into(),
            reason: "no keytab".into(),
        };
        assert_eq!(code(credential), 52);
        // the server refusing the credential at login, through the context
        assert_eq!(code(server(ErrorCode::AUTH_FAILED)), 52);
        assert_eq!(
            code(context(
                "source root://h//f",
                server(ErrorCode::AUTH_FAILED)
            )),
            52
        );
        let redirects = E::RedirectLimit {
            limit: 16,
            last: "root://h2//f".into(),
        };
        assert_eq!(code(redirects), 53);
        assert_eq!(code(E::ForeignRedirect("http://h//f".into())), 53);
        assert_eq!(code(Mismatch("adler32 differs".into())), 53);
        // anything else of the client's
        assert_eq!(code(E::NotOpen), 50);
        assert_eq!(code(E::InvalidArgument("?".into())), 50);
    }

    #[test]
    fn a_local_error_exits_with_its_errno() {
        assert_eq!(code(Exists("file exists".into())), 54);
        assert_eq!(code(io::Error::from_raw_os_error(13)), 13);
        assert_eq!(
            code(context("source /x", io::Error::from_raw_os_error(2))),
            2
        );
        assert_eq!(code(io::Error::new(io::ErrorKind::NotFound, "gone")), 2);
        assert_eq!(code(io::Error::other("no errno")), 50);
        assert_eq!(code("a plain message"), 50);
    }

    #[test]
    fn only_connections_and_timeouts_may_pass() {
        let may = |e: BoxError| may_pass(e.as_ref());
        assert!(may(Box::new(io_error(
            "h:1",
            io::ErrorKind::ConnectionReset
        ))));
        assert!(may(context(
            "target root://h//f",
            E::ConnectionLost {
                endpoint: "h:1".into()
            }
        )));
        assert!(may(Box::new(E::Timeout {
            what: "open",
            after: Duration::from_secs(1)
        })));
        assert!(!may(Box::new(server(ErrorCode::NOT_FOUND))));
        assert!(!may(Box::new(io::Error::from_raw_os_error(2))));
    }

    #[test]
    fn usage_errors_exit_22_help_and_version_0() {
        let parsed = |argv: &[&str]| Args::try_parse_from(argv).map(|_| ());
        assert_eq!(usage_code(&parsed(&["xrdcp", "--help"]).unwrap_err()), 0);
        assert_eq!(usage_code(&parsed(&["xrdcp", "--version"]).unwrap_err()), 0);
        for bad in [
            &["xrdcp"][..],
            &["xrdcp", "only-one"],
            &["xrdcp", "--streams", "0", "a", "b"],
            &["xrdcp", "--streams", "17", "a", "b"],
            &["xrdcp", "--connections", "65", "a", "b"],
            &["xrdcp", "--parallel", "0", "a", "b"],
            &["xrdcp", "--cksum", "sha1", "a", "b"],
            &["xrdcp", "--cksum", "md5:show", "a", "b"],
            &["xrdcp", "--no-such-flag", "a", "b"],
        ] {
            let e = parsed(bad).unwrap_err();
            assert_eq!(usage_code(&e), 22, "{bad:?}: {e}");
        }
    }

    #[test]
    fn flags_as_the_stock_tool_spells_them() {
        let args = Args::try_parse_from([
            "xrdcp",
            "-C",
            "adler32:print",
            "-S",
            "4",
            "-f",
            "-N",
            "-s",
            "-r",
            "-t",
            "3",
            "a",
            "b",
            "c",
        ])
        .unwrap();
        let cksum = args.cksum.unwrap();
        assert_eq!((cksum.alg, cksum.verify), (Algorithm::Adler32, false));
        assert_eq!(args.streams, 4);
        assert!(args.force && args.nopbar && args.silent && args.recursive);
        assert_eq!(args.retry, Some(3));
        assert_eq!(args.paths, ["a", "b", "c"]);
        let args = Args::try_parse_from(["xrdcp", "--cksum", "crc32c", "a", "b"]).unwrap();
        let cksum = args.cksum.unwrap();
        assert_eq!((cksum.alg, cksum.verify), (Algorithm::Crc32c, true));
        assert_eq!((args.streams, args.connections, args.parallel), (1, 1, 1));
        assert_eq!((args.chunks, args.retry), (None, None));
    }

    #[test]
    fn tpc_as_the_stock_tool_spells_it() {
        let parse = |argv: &[&str]| Args::try_parse_from(tpc_argv(argv.iter().map(Into::into)));
        let args = parse(&["xrdcp", "--tpc", "only", "root://a//f", "root://b//f"]).unwrap();
        assert_eq!((args.tpc, args.tpc_delegate), (Some(TpcMode::Only), false));
        assert_eq!(args.paths, ["root://a//f", "root://b//f"]);
        let args = parse(&["xrdcp", "--tpc", "delegate", "first", "a", "b", "c"]).unwrap();
        assert_eq!((args.tpc, args.tpc_delegate), (Some(TpcMode::First), true));
        assert_eq!(args.paths, ["a", "b", "c"]);
        for bad in [
            &["xrdcp", "--tpc", "a", "b"][..],
            &["xrdcp", "--tpc", "delegate", "a", "b"],
        ] {
            assert_eq!(usage_code(&parse(bad).unwrap_err()), 22, "{bad:?}");
        }
    }

    #[test]
    fn places_are_urls_paths_or_the_standard_streams() {
        assert!(matches!(Place::parse("-").unwrap(), Place::Std));
        assert!(
            matches!(Place::parse("/tmp/x").unwrap(), Place::Local(p) if p == Path::new("/tmp/x"))
        );
        let Place::Remote(url) = Place::parse("root://h:1095//d/f").unwrap() else {
            panic!("a URL")
        };
        assert_eq!(url.path, "/d/f");
        assert!(Place::parse("root://").is_err());
        let dir = Place::parse("root://h//d/").unwrap();
        assert_eq!(dir.join("f").to_string(), "root://h:1094//d/f");
        assert_eq!(
            Place::parse("root://h//d/f")
                .unwrap()
                .file_name()
                .as_deref(),
            Some("f")
        );
        assert_eq!(
            Place::parse("/a/b/").unwrap().file_name().as_deref(),
            Some("b")
        );
        assert_eq!(Place::Std.file_name(), None);
    }

    #[test]
    fn checksum_values_compare_as_numbers() {
        assert!(same_value("0x91E01DE", "091e01de"));
        assert!(same_value("091e01de", "91e01de"));
        assert!(!same_value("091e01de", "091e01df"));
        assert!(!same_value("", ""));
        assert!(!same_value("xyz", "xyz"));
    }
}
