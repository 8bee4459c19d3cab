//! `--config FILE`: the flags of a long-running example (`serve`,
//! `xcache`) read from a TOML file, for deployments.
//!
//! The keys are the long flags without their dashes, with the same values:
//!
//! ```toml
//! port = 1094
//! bind = "0.0.0.0"
//! read-only = true              # a switch: true gives it, false leaves it out
//! auth = "sss,gsi"              # or ["sss", "gsi"]: offered in this order
//! token-issuer = ["https://a=/etc/a.jwks", "https://b=/etc/b.jwks"]  # a repeated flag
//! gsi-cert = "/etc/grid-security/xrd/xrdcert.pem"
//! gsi-key = "/etc/grid-security/xrd/xrdkey.pem"
//! gsi-ca-dir = "/etc/grid-security/certificates"
//! gsi-gridmap = "/etc/grid-security/grid-mapfile"
//! dir = "/data"                 # the positional DIR of `serve`
//! ```
//!
//! The file's entries become arguments ahead of the command line's, so a
//! flag on the command line wins: a key whose flag the command line also
//! gives is skipped (for a repeated flag, the command line's list replaces
//! the file's). A key that is no flag of the tool is refused as an unknown
//! argument, by the same parser that reads the command line.

use std::ffi::OsString;
use std::io;
use std::path::Path;

/// Positional arguments, by their name in a file.
const POSITIONAL: &[&str] = &["dir"];

/// `args` (the program name first) with the entries of the file named by
/// `--config FILE` (or `--config=FILE`) put in as arguments after the
/// program name; `args` unchanged without `--config`.
///
/// Errors: the file cannot be read, is not TOML, or holds a value that is
/// not a string, number, boolean or array of those (each names the file).
pub fn with_config_file(args: Vec<OsString>) -> io::Result<Vec<OsString>> {
    let Some(file) = config_path(&args) else {
        return Ok(args);
    };
    let fail = |e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot read config {}: {e}", file.display()),
        )
    };
    let text = std::fs::read_to_string(&file).map_err(|e| fail(&e))?;
    let table: toml::Table = text.parse().map_err(|e| fail(&e))?;
    let given = |flag: &str| {
        args.iter().skip(1).any(|a| {
            a.to_str()
                .is_some_and(|a| a == flag || a.starts_with(&format!("{flag}=")))
        })
    };
    let mut from_file: Vec<OsString> = Vec::new();
    let mut positional: Vec<OsString> = Vec::new();
    for (key, value) in &table {
        let flag = format!("--{key}");
        if POSITIONAL.contains(&key.as_str()) {
            positional.push(scalar(value).ok_or_else(|| fail(&format!("{key}: not a value")))?);
            continue;
        }
        if given(&flag) {
            continue;
        }
        let values = match value {
            toml::Value::Boolean(true) => {
                from_file.push(flag.into());
                continue;
            }
            toml::Value::Boolean(false) => continue,
            toml::Value::Array(items) => items.iter().map(scalar).collect::<Option<Vec<_>>>(),
            other => scalar(other).map(|v| vec![v]),
        };
        let values = values.ok_or_else(|| fail(&format!("{key}: not a string, number or list")))?;
        for v in values {
            from_file.push(flag.clone().into());
            from_file.push(v);
        }
    }
    let mut out = Vec::with_capacity(args.len() + from_file.len() + positional.len());
    out.extend(args.iter().take(1).cloned());
    out.extend(from_file);
    out.extend(args.iter().skip(1).cloned());
    // a positional from the file only when the command line gives none
    // (clap would take both otherwise)
    if !args.iter().skip(1).any(|a| is_positional(&args, a)) {
        out.extend(positional);
    }
    Ok(out)
}

/// The file `--config` names in `args`.
fn config_path(args: &[OsString]) -> Option<std::path::PathBuf> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let s = a.to_str()?;
        if s == "--config" {
            return it.next().map(|p| Path::new(p).to_path_buf());
        }
        if let Some(p) = s.strip_prefix("--config=") {
            return Some(p.into());
        }
    }
    None
}

/// Whether `arg` of `args` looks like a positional argument: not a flag
/// and not the value of the flag before it. A guess good for these tools,
/// whose flags all take one value or none: a value follows a `--long`
/// flag without `=`, except after the switches of `SWITCHES`.
fn is_positional(args: &[OsString], arg: &OsString) -> bool {
    const SWITCHES: &[&str] = &[
        "--read-only",
        "--verbose",
        "-v",
        "--no-purge",
        "--gsi-gridmap-required",
    ];
    let Some(i) = args.iter().position(|a| std::ptr::eq(a, arg)) else {
        return false;
    };
    let s = arg.to_string_lossy();
    if s.starts_with('-') {
        return false;
    }
    let prev = args[i - 1].to_string_lossy();
    i == 1 || !prev.starts_with('-') || prev.contains('=') || SWITCHES.contains(&&*prev)
}

/// A scalar TOML value as an argument.
fn scalar(value: &toml::Value) -> Option<OsString> {
    match value {
        toml::Value::String(s) => Some(s.into()),
        toml::Value::Integer(n) => Some(n.to_string().into()),
        toml::Value::Float(x) => Some(x.to_string().into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn gsi_keys_become_flags_and_the_command_lines_dir_wins() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(
            &file,
            "auth = [\"sss\", \"gsi\"]\ngsi-cert = \"/c.pem\"\ngsi-gridmap-required = true\ndir = \"/other\"\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let out = with_config_file(args(&[
            "serve",
            "--config",
            f,
            "--gsi-gridmap-required",
            "/data",
        ]))
        .unwrap();
        let out: Vec<&str> = out.iter().map(|a| a.to_str().unwrap()).collect();
        // the switch given on the command line is not repeated, and the DIR
        // after it is the command line's
        assert_eq!(
            out,
            [
                "serve",
                "--auth",
                "sss",
                "--auth",
                "gsi",
                "--gsi-cert",
                "/c.pem",
                "--config",
                f,
                "--gsi-gridmap-required",
                "/data"
            ]
        );
    }
}
