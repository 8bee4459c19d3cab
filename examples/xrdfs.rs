//! A small `xrdfs`: namespace and query commands against an XRootD server,
//! in the shape of the stock tool and printing what it prints.
//!
//! ```text
//! cargo run --example xrdfs -- root://127.0.0.1:1094 ls -l /dir
//! xrdfs URL|[USER@]HOST[:PORT] ls [-l] PATH | stat PATH | mkdir [-p] PATH | rm PATH | rmdir PATH
//!         | mv A B | query checksum PATH[?cks.type=ALG] | query config KEY
//! ```
//!
//! `roots://` URLs run TLS, and a `root://` server that asks for TLS gets
//! it: the CA certificates trusted are those of `X509_CERT_DIR` (default
//! `/etc/grid-security/certificates`), as for the stock tool.
//!
//! Differences from the stock `xrdfs`: times are printed in UTC (the stock
//! tool prints local time), and `ls` lists one server (it does not locate
//! the directory on every server of a cluster first).
//!
//! Exit status, as the stock tool's: 0 on success, 54 when the server
//! refused (the message is `[ERROR] Server responded with an error: [code]
//! message` on stderr), 50 for invalid arguments and usage errors (1 with
//! no arguments at all), 51 for any other failure. `rm` prints the stock
//! tool's status line (`rm PATH : [SUCCESS] `, or `[ERROR]` and the
//! error) on standard output. The logic is in [`run`], which the live tests
//! call directly.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xroot::client::proto::response::{StatFlags, StatInfo};
use xroot::client::{Client, DirEntry, Error, FileSystem};

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "xrdfs",
    about = "Namespace and query commands against an XRootD server"
)]
pub struct Cli {
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
        /// The directory.
        path: String,
    },
    /// Print the stat of a path.
    Stat {
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
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
    use clap::error::ErrorKind;
    let _ = e.print();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
        _ if std::env::args_os().len() <= 1 => ExitCode::from(1),
        _ => ExitCode::from(50),
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

/// Runs one command, writing what the stock `xrdfs` prints to `out`.
pub async fn run(cli: &Cli, out: &mut impl Write) -> Result<(), Failure> {
    let fs = Client::new().fs(&server_url(&cli.url))?;
    match &cli.command {
        Command::Ls { long, path } => ls(&fs, &absolute(path), *long, out).await?,
        Command::Stat { path } => {
            let path = absolute(path);
            let st = fs.stat(&path).await?;
            write_stat(&path, &st, out)?;
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

/// `ls [-l] path`: a file names itself; a directory lists its entries as
/// full paths, sorted by path (bytewise), as the stock tool does. The CGI
/// of `path` (`/dir?authz=...`) goes on every request, not into the
/// children's paths (`/dir/name`). With `-l`, an entry the listing gave no
/// stat for (a server that ignores `kXR_dstat`) is stat'ed on its own, as
/// the stock tool does, with the CGI of `path`.
async fn ls(fs: &FileSystem, path: &str, long: bool, out: &mut impl Write) -> Result<(), Failure> {
    let st = fs.stat(path).await?;
    let mut entries: Vec<(String, Option<StatInfo>)> = if st.is_dir() {
        let (dir, cgi) = match path.split_once('?') {
            Some((dir, cgi)) => (dir, format!("?{cgi}")),
            None => (path, String::new()),
        };
        let dir = dir.trim_end_matches('/');
        let mut entries = Vec::new();
        for DirEntry { name, stat } in fs.dirlist(path, long).await? {
            let child = format!("{dir}/{name}");
            let stat = match (stat, long) {
                (None, true) => fs.stat(&format!("{child}{cgi}")).await.ok(),
                (stat, _) => stat,
            };
            entries.push((child, stat));
        }
        entries
    } else {
        vec![(path.to_string(), Some(st))]
    };
    entries.sort_by(|a, b| a.0.cmp(&b.0));
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
    const NAMES: [(StatFlags, &str); 8] = [
        (StatFlags::XSET, "XBitSet"),
        (StatFlags::IS_DIR, "IsDir"),
        (StatFlags::OTHER, "Other"),
        (StatFlags::OFFLINE, "Offline"),
        (StatFlags::READABLE, "IsReadable"),
        (StatFlags::WRITABLE, "IsWritable"),
        (StatFlags::POSCPEND, "POSCPending"),
        (StatFlags::BKPEXIST, "BackUpExists"),
    ];
    let set: Vec<&str> = NAMES
        .iter()
        .filter(|(f, _)| flags.contains(*f))
        .map(|(_, n)| *n)
        .collect();
    set.join("|")
}

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
}
