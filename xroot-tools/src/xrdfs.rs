//! A small `xrdfs`: namespace and query commands against an XRootD server,
//! in the shape of the stock tool (5.5.3) and printing what it prints.
//!
//! ```text
//! cargo run --example xrdfs -- root://127.0.0.1:1094 ls -l /dir
//! xrdfs URL|[USER@]HOST[:PORT] COMMAND
//!   ls [-l] [-R] PATH            stat [-q FLAGS] PATH      mkdir [-p] PATH
//!   rm PATH | rmdir PATH | mv A B                          chmod PATH rwxr-x---
//!   truncate PATH LENGTH         cat [-o LOCAL] PATH...    tail [-c BYTES] [-f] PATH
//!   locate [-n] [-r] [-d] [-m] [-i] [-p] PATH              spaceinfo PATH
//!   query checksum PATH[?cks.type=ALG] | query config KEY | query stats WHAT
//!   query space PATH
//! ```
//!
//! What the commands print, as the stock tool's:
//!
//! - `ls -R` lists the tree breadth first: the directory's entries sorted
//!   by name, then those of each subdirectory in that order, and so on;
//!   `ls -R /` prints the paths without their leading `/` (`dir/a`), as the
//!   stock tool does. With `-l` the columns are as wide as the whole tree
//!   needs.
//! - `stat -q FLAGS` prints the stat and a `Query:  FLAGS ` line, then exits
//!   0 when the flags hold, 55 (`[ERROR] Query response negative`) when
//!   they do not, 50 for a flag name it does not know. FLAGS is a list of
//!   `XBitSet`, `IsDir`, `Other`, `Offline`, `POSCPending`, `IsReadable`,
//!   `IsWritable`, `BackUpExists` joined by `|` (any of them) or `&` (all
//!   of them; a list with a `|` is an any-list, so `A|B&C` names a flag
//!   `B&C`, which is unknown).
//! - `cat` writes the files one after the other to standard output (with
//!   `-o LOCAL`, one file to a new local file, its directories made; an
//!   existing one is refused); a file that fails does not stop the others,
//!   and the exit status is that of the first failure.
//! - `tail` writes the last 512 bytes (`-c N`: N; N is read as C's `strtol`
//!   reads it, `0x` hex and `0` octal included, then taken as a 32-bit
//!   unsigned number, so `-c -5` prints the whole file); `-f` then polls the
//!   file every second and writes what was appended, until killed.
//! - `locate` prints `ADDRESS Server ReadWrite ` (or `Manager`, `Read`, ...)
//!   per location; `-d` asks each manager it finds in turn, down to the
//!   data servers. `-p` is accepted and changes nothing (the stock tool
//!   keeps the `tried` CGI; this one sends none).
//! - `spaceinfo PATH` adds up the `kXR_Qspace` answers of every data
//!   server a deep locate of PATH finds: total, free and used bytes, and
//!   the largest free extent of any.
//! - `query space ARG` prints the server's answer as it came
//!   (`oss.cgroup=public&oss.space=...&oss.free=...&oss.maxf=...&oss.used=...&oss.quota=-1`).
//! - `chmod PATH MODE` takes the mode as nine letters, `rwxr-x---`;
//!   `truncate PATH LENGTH` the length as `strtoll` reads it.
//!
//! `roots://` URLs run TLS, and a `root://` server that asks for TLS gets
//! it: the CA certificates trusted are those of `X509_CERT_DIR` (default
//! `/etc/grid-security/certificates`), as for the stock tool.
//!
//! Logging in follows the server's offer and the stock client's
//! environment: `XrdSecPROTOCOL`, the `sss` keytab `XrdSecSSSKT`, a `ztn`
//! token (`BEARER_TOKEN`...), and for `gsi` the X509 proxy
//! `X509_USER_PROXY` (default `/tmp/x509up_u<uid>`), else
//! `X509_USER_CERT`/`X509_USER_KEY`, checked against `X509_CERT_DIR`; the
//! end of `--help` says so ([`crate::CLIENT_AUTH_HELP`]).
//!
//! Differences from the stock `xrdfs`: times are printed in UTC (the stock
//! tool prints local time); `ls` takes none of `-u`,
//! `-D`, `-Z`, `-C`; `cat -o` draws no progress line on stderr; a relative
//! path gets a leading `/` (the stock tool in batch mode sends it as it is
//! and the stock server refuses it); `truncate` refuses a negative length
//! itself (exit 50), where the stock tool sends it and the server refuses
//! it (54); `ls -R` lists one directory at a time, so its order is always
//! the breadth-first one (the stock tool sends the listings of a level at
//! once and prints them in the order the answers come back, which is that
//! order with the stock server). The interactive mode, `cd`, `statvfs`,
//! `prepare`, `xattr` and the other `query` codes are not here.
//!
//! Exit status, as the stock tool's: 0 on success, 54 when the server
//! refused (the message is `[ERROR] Server responded with an error: [code]
//! message` on stderr), 50 for invalid arguments and usage errors (1 with
//! no arguments at all), 55 for a `stat -q` whose flags do not hold, 51
//! for any other failure. `rm` prints the stock tool's status line (`rm
//! PATH : [SUCCESS] `, or `[ERROR]` and the error) on standard output. The
//! logic is in [`run`], which the live tests call directly.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use xroot_client::proto::request::{LocateOptions, QueryCode};
use xroot_client::proto::response::{
    LocateAccess, LocateEntry, LocateNode, SpaceInfo, StatFlags, StatInfo,
};
use xroot_client::{Client, DirEntry, Error, FileSystem, OpenFlags};

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "xrdfs",
    about = "Namespace and query commands against an XRootD server",
    after_help = crate::CLIENT_AUTH_HELP
)]
pub struct Cli {
    // this comment is the flag's `--help` text, brackets and all
    #[allow(rustdoc::broken_intra_doc_links)]
    /// The server: root://[user@]host[:port] (or roots:// for TLS), or
    /// [user@]host[:port] as the stock tool takes it (root://)
    pub url: String,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List a directory (or name a file).
    Ls {
        /// Long format: permissions, owner, group, size, modification time.
        #[arg(short = 'l')]
        long: bool,
        /// List the subdirectories too, breadth first.
        #[arg(short = 'R')]
        recursive: bool,
        /// The directory.
        path: String,
    },
    /// Print the stat of a path.
    Stat {
        /// Flags that must hold (`IsDir|Offline`: any; `IsDir&IsReadable`:
        /// all); exit 55 when they do not.
        #[arg(short = 'q')]
        query: Option<String>,
        /// The path.
        path: String,
    },
    /// Create a directory (mode 0750, as the stock tool).
    Mkdir {
        /// Also create missing parents.
        #[arg(short = 'p')]
        parents: bool,
        /// The directory.
        path: String,
    },
    /// Remove a file.
    Rm {
        /// The file.
        path: String,
    },
    /// Remove an empty directory.
    Rmdir {
        /// The directory.
        path: String,
    },
    /// Rename a path.
    Mv {
        /// The old path.
        from: String,
        /// The new path.
        to: String,
    },
    /// Set the permissions of a path: `chmod PATH rwxr-x---`.
    Chmod {
        /// The path.
        path: String,
        /// Nine letters, owner, group, other: `r`, `w`, `x` or `-` each.
        #[arg(allow_hyphen_values = true)]
        mode: String,
    },
    /// Set the size of a file.
    Truncate {
        /// The file.
        path: String,
        /// The new size in bytes (decimal, `0x` hex or `0` octal).
        #[arg(allow_hyphen_values = true)]
        length: String,
    },
    /// Write files to standard output (or, with -o, to a local file).
    Cat {
        /// Write to this new local file instead (one remote file only).
        #[arg(short = 'o')]
        output: Option<PathBuf>,
        /// The files.
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// Write the end of a file to standard output.
    Tail {
        /// How many bytes from the end (default 512).
        #[arg(short = 'c', allow_hyphen_values = true)]
        bytes: Option<String>,
        /// Then write what is appended, polling every second, until killed.
        #[arg(short = 'f')]
        follow: bool,
        /// The file.
        path: String,
    },
    /// Print the servers holding a path.
    #[command(disable_help_flag = true)]
    Locate {
        /// Answer at once, even if the list is incomplete (kXR_nowait).
        #[arg(short = 'n')]
        nowait: bool,
        /// Do not use cached locations (kXR_refresh).
        #[arg(short = 'r')]
        refresh: bool,
        /// Ask every manager found, down to the data servers.
        #[arg(short = 'd')]
        deep: bool,
        /// Host names rather than addresses (kXR_prefname; -h too).
        #[arg(short = 'm', short_alias = 'h')]
        prefname: bool,
        /// Ignore network dependencies (kXR_force).
        #[arg(short = 'i')]
        force: bool,
        /// Passive: accepted, no effect here.
        #[arg(short = 'p')]
        passive: bool,
        /// The path (`*path` and `*` are sent as they are).
        path: String,
    },
    /// Print the space of every data server holding a path, added up.
    Spaceinfo {
        /// The path.
        path: String,
    },
    /// Ask the server something.
    Query {
        /// What to ask.
        #[command(subcommand)]
        what: QueryCommand,
    },
}

/// The `query` commands.
#[derive(Subcommand, Debug)]
pub enum QueryCommand {
    /// The checksum of a file (`PATH?cks.type=ALG` picks the algorithm).
    Checksum {
        /// The file.
        path: String,
    },
    /// A configuration value (readv_iov_max, chksum, version, ...).
    Config {
        /// The key.
        key: String,
    },
    /// The server's statistics (`a` for all).
    Stats {
        /// Which: the reference's letters.
        what: String,
    },
    /// The space of a path, the server's `oss.*` answer as it came.
    Space {
        /// The path (sent as it is).
        space: String,
    },
}

/// Why a command failed: the exit status and the message for stderr.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// The message.
    pub message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match &e {
            Error::Server { code, message } => Failure {
                code: 54,
                message: format!(
                    "[ERROR] Server responded with an error: [{}] {message}",
                    code.0
                ),
            },
            Error::Url(_) | Error::InvalidArgument(_) => Failure {
                code: 50,
                message: format!("[ERROR] Invalid arguments: {e}"),
            },
            _ => Failure {
                code: 51,
                message: format!("[ERROR] {e}"),
            },
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure {
            code: 51,
            message: format!("[ERROR] writing the output: {e}"),
        }
    }
}

/// The `xrdfs` example's `main`: runs the command line's command and exits
/// with the stock tool's codes (see the module's documentation).
#[tokio::main(flavor = "current_thread")]
pub async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    let mut out = std::io::stdout().lock();
    match run(&cli, &mut out).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let _ = out.flush();
            eprintln!("{}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Help prints and exits 0; no arguments at all print the usage and exit 1,
/// any other usage error (an unknown command, a missing argument) exits
/// 50, as the stock `xrdfs` 5.5.3 does.
fn usage(e: clap::Error) -> ExitCode {
    let _ = e.print();
    ExitCode::from(usage_code(&e, std::env::args_os().len()))
}

/// The exit code [`usage`] gives `e`, for a command line of `args`
/// arguments (the program's name counted).
fn usage_code(e: &clap::Error, args: usize) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
        _ if args <= 1 => 1,
        _ => 50,
    }
}

/// What the stock tool's status line says of a failure: `Error response:`
/// and the error's errno text, lower case (`no such file or directory`),
/// for an error the server answered; else the error itself.
fn status_text(e: &Error) -> String {
    match e {
        Error::Server { code, .. } => {
            let text = std::io::Error::from_raw_os_error(code.to_errno()).to_string();
            // std adds " (os error N)" to strerror's text
            let text = text
                .rsplit_once(" (os error")
                .map_or(text.as_str(), |(t, _)| t);
            let mut chars = text.chars();
            let first = chars.next().map(|c| c.to_lowercase().to_string());
            format!(
                "Error response: {}{}",
                first.unwrap_or_default(),
                chars.as_str()
            )
        }
        other => other.to_string(),
    }
}

/// The URL of the server argument: a URL as it is, and the stock tool's
/// `[user@]host[:port]` form as a `root://` URL.
fn server_url(arg: &str) -> String {
    match arg.contains("://") {
        true => arg.to_string(),
        false => format!("root://{arg}"),
    }
}

/// The stock tool's answer to arguments it cannot use.
fn invalid() -> Failure {
    Failure {
        code: 50,
        message: "[ERROR] Invalid arguments".into(),
    }
}

/// Runs one command, writing what the stock `xrdfs` prints to `out`.
pub async fn run(cli: &Cli, out: &mut impl Write) -> Result<(), Failure> {
    let client = Client::new();
    let fs = client.fs(&server_url(&cli.url))?;
    match &cli.command {
        Command::Ls {
            long,
            recursive,
            path,
        } => ls(&fs, &absolute(path), *long, *recursive, out).await?,
        Command::Stat { query, path } => {
            let path = absolute(path);
            let st = fs.stat(&path).await?;
            write_stat(&path, &st, out)?;
            if let Some(query) = query.as_deref().filter(|q| !q.is_empty()) {
                let held = stat_query(st.flags, query);
                writeln!(out, "Query:  {query} ")?;
                held?;
            }
        }
        Command::Mkdir { parents, path } => fs.mkdir(path, *parents, 0o750).await?,
        Command::Rm { path } => match fs.rm(path).await {
            // the stock tool's status line, on standard output
            Ok(()) => writeln!(out, "rm {path} : [SUCCESS] ")?,
            Err(e) => {
                writeln!(out, "rm {path} : [ERROR] {}", status_text(&e))?;
                return Err(e.into());
            }
        },
        Command::Rmdir { path } => fs.rmdir(path).await?,
        Command::Mv { from, to } => fs.mv(from, to).await?,
        Command::Chmod { path, mode } => {
            let mode = parse_mode(mode).ok_or_else(invalid)?;
            fs.chmod(path, mode).await?;
        }
        Command::Truncate { path, length } => {
            // the stock tool reads it with strtoll and keeps the bits as u64
            let length = strtol(length).ok_or_else(invalid)?;
            fs.truncate(path, length as u64).await?;
        }
        Command::Cat { output, paths } => {
            if output.is_some() && paths.len() > 1 {
                return Err(invalid());
            }
            cat(&client, &fs, paths, output.as_deref(), out).await?;
        }
        Command::Tail {
            bytes,
            follow,
            path,
        } => {
            // strtol into the stock tool's uint32_t
            let from_end = match bytes {
                Some(b) => strtol(b).ok_or_else(invalid)? as u32,
                None => 512,
            };
            tail(&client, &fs, path, u64::from(from_end), *follow, out).await?;
        }
        Command::Locate {
            nowait,
            refresh,
            deep,
            prefname,
            force,
            passive,
            path,
        } => {
            let set = [nowait, refresh, deep, prefname, force, passive];
            // the stock tool takes at most three arguments after `locate`
            if set.iter().filter(|f| ***f).count() + 1 > 3 {
                return Err(invalid());
            }
            let mut options = LocateOptions::EMPTY;
            for (on, bit) in [
                (nowait, LocateOptions::NOWAIT),
                (refresh, LocateOptions::REFRESH),
                (prefname, LocateOptions::PREFNAME),
                (force, LocateOptions::FORCE),
            ] {
                if *on {
                    options |= bit;
                }
            }
            let located = match deep {
                true => deep_locate(&fs, path, options).await?,
                false => fs.locate_with(path, options).await?,
            };
            for at in &located {
                write_location(at, out)?;
            }
        }
        Command::Spaceinfo { path } => spaceinfo(&fs, path, out).await?,
        Command::Query { what } => match what {
            QueryCommand::Checksum { path } => {
                let (alg, value) = fs.query_checksum(path, None).await?;
                writeln!(out, "{alg} {value}")?;
            }
            QueryCommand::Config { key } => {
                let value = fs.query_config(&[key.as_str()]).await?.remove(0);
                // the stock tool prints the answer (`value\n`) and a newline
                writeln!(out, "{value}\n")?;
            }
            QueryCommand::Stats { what } => {
                let report = fs.query_stats(what).await?;
                writeln!(out, "{}", report.trim_end())?;
            }
            QueryCommand::Space { space } => {
                let answer = fs.query_raw(QueryCode::SPACE, space.as_bytes()).await?;
                // the stock tool prints the answer as a C string
                let text = answer.split(|&b| b == 0).next().unwrap_or_default();
                out.write_all(text)?;
                writeln!(out)?;
            }
        },
    }
    Ok(())
}

/// `path` with a leading `/` (the stock tool's working directory is `/`).
fn absolute(path: &str) -> String {
    match path.starts_with('/') {
        true => path.to_string(),
        false => format!("/{path}"),
    }
}

/// The URL of file `path` (with its CGI) on the server of `fs`.
fn file_url(fs: &FileSystem, path: &str) -> String {
    let (path, cgi) = path.split_once('?').unwrap_or((path, ""));
    let mut url = fs.url().clone();
    url.path = absolute(path);
    url.cgi.extend(xroot_proto::url::parse_cgi(cgi));
    url.to_string()
}

/// The stock tool's `strtol`/`strtoll` with base 0 over the whole of `s`:
/// leading whitespace, a sign, then `0x` hex, `0` octal or decimal digits,
/// and nothing after them; an empty string is 0, as C reads it. Out of
/// range saturates, as C does. `None` for anything else.
fn strtol(s: &str) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .filter(|h| h.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (digits, radix) = match hex {
        Some(h) => (h, 16),
        None if t.len() > 1 && t.starts_with('0') => (&t[1..], 8),
        None => (t, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).unwrap_or(u128::MAX);
    Some(match negative {
        true => i64::try_from(-(magnitude.min(1 << 63) as i128)).unwrap_or(i64::MIN),
        false => i64::try_from(magnitude).unwrap_or(i64::MAX),
    })
}

/// `rwxr-x---` as mode bits: nine letters, in each triple `r`, `w` or `x`
/// setting that bit wherever it stands (as the stock tool reads it) and `-`
/// none; `None` for any other string.
fn parse_mode(s: &str) -> Option<u32> {
    let b = s.as_bytes();
    if b.len() != 9 {
        return None;
    }
    let mut mode = 0;
    for (i, c) in b.iter().enumerate() {
        let shift = 6 - 3 * (i as u32 / 3);
        mode |= match c {
            b'r' => 4 << shift,
            b'w' => 2 << shift,
            b'x' => 1 << shift,
            b'-' => 0,
            _ => return None,
        };
    }
    Some(mode)
}

/// Whether `flags` hold `query` (`stat -q`): a `|`-list when it has a `|`
/// (any of the flags), else a `&`-list (all of them); empty pieces are
/// skipped. Errors: 50 for an unknown flag name, 55 when they do not hold.
fn stat_query(flags: StatFlags, query: &str) -> Result<(), Failure> {
    let any = query.contains('|');
    let mut wanted = Vec::new();
    for name in query
        .split(if any { '|' } else { '&' })
        .filter(|n| !n.is_empty())
    {
        match FLAG_NAMES.iter().find(|(_, n)| *n == name) {
            Some((f, _)) => wanted.push(*f),
            None => return Err(invalid()),
        }
    }
    let held = match any {
        true => wanted.iter().any(|f| flags.contains(*f)),
        false => wanted.iter().all(|f| flags.contains(*f)),
    };
    match held {
        true => Ok(()),
        false => Err(Failure {
            code: 55,
            message: "[ERROR] Query response negative".into(),
        }),
    }
}

/// Bytes per read of `cat` and `tail` (the stock `tail`'s chunk).
const CHUNK: usize = 1 << 20;

/// `cat`: each file in turn to `out` (or to the new local file `local`).
/// A failure does not stop the other files; the first one is returned.
/// The stock tool copies with its copy process, whose errors about the
/// remote file end with ` (source)` and about the local one with
/// ` (destination)`.
async fn cat(
    client: &Client,
    fs: &FileSystem,
    paths: &[String],
    local: Option<&std::path::Path>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut first: Option<Failure> = None;
    for path in paths {
        if let Err(f) = cat_one(client, fs, path, local, out).await {
            first.get_or_insert(f);
        }
    }
    match first {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

async fn cat_one(
    client: &Client,
    fs: &FileSystem,
    path: &str,
    local: Option<&std::path::Path>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let source = |e: Error| {
        let mut f = Failure::from(e);
        f.message.push_str(" (source)");
        f
    };
    let file = client
        .open(&file_url(fs, path), OpenFlags::READ)
        .await
        .map_err(source)?;
    let mut target: Box<dyn Write + '_> = match local {
        None => Box::new(&mut *out),
        Some(p) => {
            let destination = |e: std::io::Error| Failure {
                code: 54,
                message: format!("[ERROR] Local error: {}:  (destination)", io_text(&e)),
            };
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(destination)?;
            }
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .map_err(destination)?;
            Box::new(std::io::BufWriter::new(f))
        }
    };
    let mut offset = 0u64;
    loop {
        let data = file.read_at(offset, CHUNK).await.map_err(source)?;
        target.write_all(&data)?;
        offset += data.len() as u64;
        if data.len() < CHUNK {
            break;
        }
    }
    target.flush()?;
    let _ = file.close().await;
    Ok(())
}

/// The stock tool's text of a local error: strerror's, lower case
/// (`file exists`).
fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text
        .rsplit_once(" (os error")
        .map_or(text.as_str(), |(t, _)| t);
    text.to_lowercase()
}

/// `tail`: the last `from_end` bytes of `path` (all of a smaller file), in
/// reads of [`CHUNK`]; with `follow`, then what is appended, polling every
/// second until killed. The size is the open file's stat (0 if that
/// fails), as the stock tool takes it.
async fn tail(
    client: &Client,
    fs: &FileSystem,
    path: &str,
    from_end: u64,
    follow: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let file = client.open(&file_url(fs, path), OpenFlags::READ).await?;
    let size = file.stat().await.map_or(0, |st| st.size);
    let mut offset = size.saturating_sub(from_end);
    loop {
        let data = file.read_at(offset, CHUNK).await?;
        out.write_all(&data)?;
        offset += data.len() as u64;
        if data.len() < CHUNK {
            if !follow {
                break;
            }
            out.flush()?;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let _ = file.close().await;
    Ok(())
}

/// One line of `locate`: `ADDRESS Server ReadWrite ` (the stock tool ends
/// `ReadWrite` with a space and `Read` without).
fn write_location(at: &LocateEntry, out: &mut impl Write) -> std::io::Result<()> {
    let node = match at.node {
        LocateNode::ManagerOnline => "Manager",
        LocateNode::ManagerPending => "ManagerPending",
        LocateNode::ServerOnline => "Server",
        LocateNode::ServerPending => "ServerPending",
    };
    let access = match at.access {
        LocateAccess::Read => "Read",
        LocateAccess::ReadWrite => "ReadWrite ",
    };
    let address = String::from_utf8_lossy(&at.address);
    writeln!(out, "{address} {node} {access}")
}

/// The data servers holding `path` ([`FileSystem::deep_locate`]); a
/// partial answer is said on stderr as the stock tool says it.
async fn deep_locate(
    fs: &FileSystem,
    path: &str,
    options: LocateOptions,
) -> Result<Vec<LocateEntry>, Failure> {
    let located = fs.deep_locate(path, options).await?;
    if located.partial {
        eprintln!("{INCOMPLETE}");
    }
    Ok(located.servers)
}

/// What the stock tool prints when part of a cluster did not answer.
const INCOMPLETE: &str = "[!] Some of the requests failed. The result may be incomplete.";

/// `spaceinfo PATH`: the `kXR_Qspace` answers (to `PATH` as it is) of every
/// data server a deep locate (`kXR_compress`: each host once) finds, added
/// up; the largest free extent is the largest of any. Bytes.
async fn spaceinfo(fs: &FileSystem, path: &str, out: &mut impl Write) -> Result<(), Failure> {
    let (mut total, mut free, mut used, mut maxf) = (0u64, 0u64, 0u64, 0u64);
    for at in deep_locate(fs, path, LocateOptions::COMPRESS).await? {
        let server = fs.at_server(&at.address)?;
        let answer = server.query_raw(QueryCode::SPACE, path.as_bytes()).await?;
        let space = SpaceInfo::decode(answer).map_err(|e| Failure {
            code: 53,
            message: format!("[ERROR] Received corrupted data: {e}"),
        })?;
        // the stock tool's strtoll into uint64_t
        total = total.wrapping_add(space.space as u64);
        free = free.wrapping_add(space.free as u64);
        used = used.wrapping_add(space.used as u64);
        maxf = maxf.max(space.maxf as u64);
    }
    writeln!(out, "Path:               {path}")?;
    writeln!(out, "Total:              {total}")?;
    writeln!(out, "Free:               {free}")?;
    writeln!(out, "Used:               {used}")?;
    writeln!(out, "Largest free chunk: {maxf}")?;
    Ok(())
}

/// `ls [-l] [-R] path`: a file names itself; a directory lists its entries
/// as full paths, sorted by name (bytewise), as the stock tool does; with
/// `recursive`, then the entries of each subdirectory in that order,
/// breadth first, each listing sorted (the stock tool merges each listing
/// into a sorted set and appends it as it arrives). The stock tool names
/// the entries under `/` without the leading `/` when recursive (`dir`,
/// `dir/a`). The CGI of `path` (`/dir?authz=...`) goes on every request,
/// not into the children's paths (`/dir/name`). With `-l` (or `-R`, which
/// needs the types), an entry the listing gave no stat for (a server that
/// ignores `kXR_dstat`) is stat'ed on its own, with the CGI of `path`.
async fn ls(
    fs: &FileSystem,
    path: &str,
    long: bool,
    recursive: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let st = fs.stat(path).await?;
    let entries: Vec<(String, Option<StatInfo>)> = if st.is_dir() {
        let (dir, cgi) = match path.split_once('?') {
            Some((dir, cgi)) => (dir, format!("?{cgi}")),
            None => (path, String::new()),
        };
        let dir = dir.trim_end_matches('/');
        let shown = match recursive && dir.is_empty() {
            true => String::new(),
            false => format!("{dir}/"),
        };
        let with_stat = long || recursive;
        let mut entries = Vec::new();
        // (the directory below `dir`, "" for `dir` itself)
        let mut queue = std::collections::VecDeque::from([String::new()]);
        while let Some(rel) = queue.pop_front() {
            let listed = format!("{dir}/{rel}{cgi}");
            let listed = match rel.is_empty() {
                true => path.to_string(),
                false => listed,
            };
            let listing = fs.dirlist_located(&listed, with_stat).await?;
            if listing.partial {
                eprintln!("{INCOMPLETE}");
            }
            let mut level = Vec::new();
            for DirEntry { name, stat } in listing.entries {
                let rel_child = format!("{rel}{name}");
                let stat = match (stat, with_stat) {
                    (None, true) => fs.stat(&format!("{dir}/{rel_child}{cgi}")).await.ok(),
                    (stat, _) => stat,
                };
                level.push((rel_child, stat));
            }
            level.sort_by(|a, b| a.0.cmp(&b.0));
            for (rel_child, stat) in level {
                if recursive && stat.as_ref().is_some_and(StatInfo::is_dir) {
                    queue.push_back(format!("{rel_child}/"));
                }
                entries.push((format!("{shown}{rel_child}"), stat));
            }
        }
        entries
    } else {
        vec![(path.to_string(), Some(st))]
    };
    if !long {
        for (p, _) in &entries {
            writeln!(out, "{p}")?;
        }
        return Ok(());
    }
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|(p, st)| match st {
            Some(st) => {
                let (owner, group) = owner_group(st);
                [
                    permissions(st),
                    owner,
                    group,
                    st.size.to_string(),
                    format!("{} {p}", utc(st.mtime)),
                ]
            }
            None => [
                "----------".into(),
                String::new(),
                String::new(),
                String::new(),
                p.clone(),
            ],
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0);
    let (ow, gw, sw) = (width(1), width(2), width(3));
    for [perm, owner, group, size, rest] in &rows {
        writeln!(out, "{perm} {owner:>ow$} {group:>gw$} {size:>sw$} {rest}")?;
    }
    Ok(())
}

fn owner_group(st: &StatInfo) -> (String, String) {
    match &st.extended {
        Some(x) => (
            String::from_utf8_lossy(&x.owner).into_owned(),
            String::from_utf8_lossy(&x.group).into_owned(),
        ),
        None => (String::new(), String::new()),
    }
}

/// `drwxr-x---`: the type from the flags, the bits from the mode (or, for a
/// server without the extended stat, the owner's bits from the flags).
fn permissions(st: &StatInfo) -> String {
    let mut s = String::from(if st.is_dir() { "d" } else { "-" });
    let bits = match &st.extended {
        Some(x) => x.mode,
        None => [
            (StatFlags::READABLE, 0o400),
            (StatFlags::WRITABLE, 0o200),
            (StatFlags::XSET, 0o100),
        ]
        .iter()
        .filter(|(f, _)| st.flags.contains(*f))
        .map(|(_, b)| b)
        .sum(),
    };
    for shift in [6, 3, 0] {
        for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
            s.push(if bits >> shift & bit != 0 { c } else { '-' });
        }
    }
    s
}

/// The stock `xrdfs stat` block.
fn write_stat(path: &str, st: &StatInfo, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "Path:   {path}")?;
    writeln!(out, "Id:     {}", st.id)?;
    writeln!(out, "Size:   {}", st.size)?;
    writeln!(out, "MTime:  {}", utc(st.mtime))?;
    if let Some(x) = &st.extended {
        writeln!(out, "CTime:  {}", utc(x.ctime))?;
        writeln!(out, "ATime:  {}", utc(x.atime))?;
    }
    writeln!(out, "Flags:  {} ({})", st.flags.0, flag_names(st.flags))?;
    if let Some(x) = &st.extended {
        writeln!(out, "Mode:   {:04o}", x.mode)?;
        writeln!(out, "Owner:  {}", String::from_utf8_lossy(&x.owner))?;
        writeln!(out, "Group:  {}", String::from_utf8_lossy(&x.group))?;
    }
    Ok(())
}

/// The stock tool's names of the set flags, `|`-separated.
fn flag_names(flags: StatFlags) -> String {
    let set: Vec<&str> = FLAG_NAMES
        .iter()
        .filter(|(f, _)| flags.contains(*f))
        .map(|(_, n)| *n)
        .collect();
    set.join("|")
}

/// The stock tool's names of the stat flags, in its order.
const FLAG_NAMES: [(StatFlags, &str); 8] = [
    (StatFlags::XSET, "XBitSet"),
    (StatFlags::IS_DIR, "IsDir"),
    (StatFlags::OTHER, "Other"),
    (StatFlags::OFFLINE, "Offline"),
    (StatFlags::POSCPEND, "POSCPending"),
    (StatFlags::READABLE, "IsReadable"),
    (StatFlags::WRITABLE, "IsWritable"),
    (StatFlags::BKPEXIST, "BackUpExists"),
];

/// Unix seconds as `YYYY-MM-DD hh:mm:ss` in UTC (days to civil date after
/// H. Hinnant's `civil_from_days`).
fn utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(-1), "1969-12-31 23:59:59");
    }

    #[test]
    fn numbers_as_strtol_reads_them() {
        for (s, want) in [
            ("10", Some(10)),
            ("0x10", Some(16)),
            ("010", Some(8)),
            ("0", Some(0)),
            ("", Some(0)),
            (" -5", Some(-5)),
            ("+7", Some(7)),
            ("99999999999999999999", Some(i64::MAX)),
            ("-99999999999999999999", Some(i64::MIN)),
            ("1k", None),
            ("0x", None),
            ("08", None),
            ("-", None),
            (" ", None),
        ] {
            assert_eq!(strtol(s), want, "{s:?}");
        }
        assert_eq!(strtol("-5").unwrap() as u32, 4_294_967_291);
    }

    #[test]
    fn modes_as_nine_letters() {
        assert_eq!(parse_mode("rwxr-x---"), Some(0o750));
        assert_eq!(parse_mode("---------"), Some(0));
        assert_eq!(parse_mode("rw-r--r--"), Some(0o644));
        // a letter counts wherever it stands in its triple, as the stock tool reads it
        assert_eq!(parse_mode("xwr------"), Some(0o700));
        assert_eq!(parse_mode("rwxr-x--"), None);
        assert_eq!(parse_mode("rwxr-x--y"), None);
        assert_eq!(parse_mode("644"), None);
    }

    #[test]
    fn stat_queries() {
        let dir = StatFlags::IS_DIR | StatFlags::READABLE;
        assert!(stat_query(dir, "IsDir").is_ok());
        assert!(stat_query(dir, "IsDir&IsReadable").is_ok());
        assert!(stat_query(dir, "Offline|IsReadable").is_ok());
        assert!(stat_query(dir, "&").is_ok());
        assert_eq!(stat_query(dir, "IsDir&Offline").unwrap_err().code, 55);
        assert_eq!(stat_query(dir, "||").unwrap_err().code, 55);
        assert_eq!(stat_query(dir, "IsWriteable").unwrap_err().code, 50);
        assert_eq!(
            stat_query(dir, "IsDir|IsReadable&Offline")
                .unwrap_err()
                .code,
            50
        );
    }

    use xroot_client::proto::ErrorCode;

    fn usage_of(argv: &[&str]) -> u8 {
        let e = Cli::try_parse_from(argv).map(|_| ()).unwrap_err();
        usage_code(&e, argv.len())
    }

    #[test]
    fn usage_exits_0_for_help_1_for_nothing_50_for_the_rest() {
        assert_eq!(usage_of(&["xrdfs", "--help"]), 0);
        assert_eq!(usage_of(&["xrdfs", "h", "help"]), 0);
        assert_eq!(usage_of(&["xrdfs"]), 1);
        assert_eq!(usage_of(&["xrdfs", "h"]), 50);
        assert_eq!(usage_of(&["xrdfs", "h", "frobnicate", "/x"]), 50);
        assert_eq!(usage_of(&["xrdfs", "h", "mv", "/a"]), 50);
    }

    #[test]
    fn commands_parse_as_the_stock_tool_spells_them() {
        let cli = Cli::try_parse_from(["xrdfs", "user@host:1095", "ls", "-l", "-R", "/d"]).unwrap();
        assert_eq!(server_url(&cli.url), "root://user@host:1095");
        assert!(matches!(
            cli.command,
            Command::Ls { long: true, recursive: true, ref path } if path == "/d"
        ));
        assert_eq!(server_url("roots://h:1094"), "roots://h:1094");
    }

    #[test]
    fn failures_exit_as_the_stock_tool() {
        let server: Failure = Error::Server {
            code: ErrorCode::NOT_FOUND,
            message: "no such file".into(),
        }
        .into();
        assert_eq!(server.code, 54);
        assert_eq!(
            server.message,
            "[ERROR] Server responded with an error: [3011] no such file"
        );
        let invalid_argument: Failure = Error::InvalidArgument("bad".into()).into();
        assert_eq!(invalid_argument.code, 50);
        assert!(invalid_argument
            .message
            .starts_with("[ERROR] Invalid arguments: "));
        let lost: Failure = Error::ConnectionLost {
            endpoint: "h:1094".into(),
        }
        .into();
        assert_eq!(lost.code, 51);
        assert!(lost.message.starts_with("[ERROR] "), "{}", lost.message);
        let output: Failure = std::io::Error::from_raw_os_error(32).into();
        assert_eq!(output.code, 51);
        assert!(output.message.starts_with("[ERROR] writing the output: "));
        assert_eq!(
            (invalid().code, invalid().message.as_str()),
            (50, "[ERROR] Invalid arguments")
        );
    }

    #[test]
    fn status_lines_give_the_errno_text_of_a_server_error() {
        let e = Error::Server {
            code: ErrorCode::NOT_FOUND,
            message: "whatever".into(),
        };
        assert_eq!(status_text(&e), "Error response: no such file or directory");
        let e = Error::Server {
            code: ErrorCode::NOT_AUTHORIZED,
            message: "no".into(),
        };
        assert_eq!(status_text(&e), "Error response: permission denied");
        let e = Error::NotOpen;
        assert_eq!(status_text(&e), e.to_string());
    }
}
