//! `kXR_query` (PROTOCOL.md §7.7; XrdXrootdXeq `do_Query`, `do_Qconf`,
//! `do_CKsum`, `do_Qspace`, `do_Qfh`).
//!
//! - `kXR_Qcksum`: the backend's [`FileSystem::checksum`] in the `cks.type`
//!   of the CGI or the default algorithm; `kXR_Qckscan` is accepted.
//! - `kXR_Qconfig`: the reference's keys with this server's values, the two
//!   extension keys of [`xroot_proto::ext`] answered `1`, and any other key
//!   echoed back unchanged, as the stock server does.
//! - `kXR_Qspace`: [`FileSystem::space`].
//! - `kXR_QStats`: [`FileSystem::stats_report`], else the server's own
//!   report in the stock XML shape ([`crate::observe::report`]).
//! - xattr, prepare and plugin queries are not supported; a query without
//!   arguments names an open file.

use bytes::Bytes;
use xroot_proto::ext::{PGREADV_CONFIG_KEY, READV_CRC32C_CONFIG_KEY};
use xroot_proto::limits::{
    MAX_BOUND_STREAMS, MAX_FATTR_NAME, MAX_FATTR_VALUE, MAX_READV_ELEMENT, MAX_READV_ELEMENTS,
};
use xroot_proto::request::{Query, QueryCode};
use xroot_proto::response::{QconfigAnswer, Response};
use xroot_proto::ErrorCode;

use super::path;
use crate::fs::{FileSystem, FsError};
use crate::handle::kit::{err, ok, ok_with, Ctx};
use crate::observe::report;

/// The longest `kXR_Qconfig` answer, bytes (the reference's buffer).
const QCONFIG_MAX: usize = 4096;

/// `kXR_query`, by its infotype.
pub(crate) async fn query<F: FileSystem>(ctx: &Ctx<F>, r: Query) -> Result<Response, FsError> {
    if r.args.is_empty() {
        return by_handle(ctx, &r);
    }
    match r.infotype {
        QueryCode::CKSUM => checksum(ctx, &r).await,
        QueryCode::CKSCAN => path::payload_target("Check summing", &r.args).map(|_| ok()),
        QueryCode::CONFIG => config(ctx, &r).await,
        QueryCode::SPACE => {
            let t = path::payload_target("Stating", &r.args)?;
            let space = ctx.fs().space(ctx.caller(), &t.path).await?;
            Ok(ok_with(|b| space.encode(b)))
        }
        QueryCode::FINFO | QueryCode::OPAQUG => by_handle(ctx, &r),
        QueryCode::STATS => {
            let what = path::text(&r.args)?;
            let report = match ctx.fs().stats_report(ctx.caller(), what).await {
                Err(FsError::Error { code, .. }) if code == ErrorCode::UNSUPPORTED => {
                    let m = &ctx.shared.monitor;
                    let version = &ctx.config().version;
                    report::report(what, &m.snapshot(), version, m.local_addr, m.started)
                }
                other => other?,
            };
            Ok(ok_with(|b| b.extend_from_slice(report.as_bytes())))
        }
        QueryCode::XATTR
        | QueryCode::PREP
        | QueryCode::FSINFO
        | QueryCode::OPAQUE
        | QueryCode::OPAQUF => Err(err(
            ErrorCode::UNSUPPORTED,
            format!("{} is not supported", r.infotype),
        )),
        _ => Err(err(
            ErrorCode::ARG_INVALID,
            "Invalid information query type code",
        )),
    }
}

/// A query about an open file (no arguments).
fn by_handle<F: FileSystem>(ctx: &Ctx<F>, r: &Query) -> Result<Response, FsError> {
    ctx.file(r.fhandle, "query")?;
    match r.infotype {
        QueryCode::FINFO | QueryCode::OPAQUG | QueryCode::VISA => Err(err(
            ErrorCode::UNSUPPORTED,
            format!("{} is not supported", r.infotype),
        )),
        _ => Err(err(
            ErrorCode::ARG_MISSING,
            "Required query argument not present",
        )),
    }
}

/// The checksum algorithm to use: `requested` matched (ignoring case)
/// against the backend's list, or its default (the first). `None` when the
/// backend lists none. Errors: `kXR_ServerError` "`<alg>` checksum not
/// supported." for an algorithm not in the list.
pub(crate) fn checksum_alg<F: FileSystem>(
    fs: &F,
    requested: Option<&str>,
) -> Result<Option<String>, FsError> {
    let algs = fs.checksum_algorithms();
    if algs.is_empty() {
        return Ok(None);
    }
    match requested {
        None => Ok(algs.into_iter().next()),
        Some(want) => algs
            .into_iter()
            .find(|a| a.eq_ignore_ascii_case(want))
            .map(Some)
            .ok_or_else(|| {
                err(
                    ErrorCode::SERVER_ERROR,
                    format!("{want} checksum not supported."),
                )
            }),
    }
}

/// `kXR_Qcksum`. A backend that lists no algorithms is asked with the
/// requested one as given.
async fn checksum<F: FileSystem>(ctx: &Ctx<F>, r: &Query) -> Result<Response, FsError> {
    let t = path::payload_target("Check summing", &r.args)?;
    let requested = t.cgi_value("cks.type");
    let alg = checksum_alg(ctx.fs(), requested)?.or(requested.map(str::to_string));
    let answer = ctx
        .fs()
        .checksum(ctx.caller(), &t.path, alg.as_deref())
        .await?;
    Ok(ok_with(|b| answer.encode(b)))
}

/// `kXR_Qconfig`: one `value\n` line per key of the argument's first line.
async fn config<F: FileSystem>(ctx: &Ctx<F>, r: &Query) -> Result<Response, FsError> {
    let text = path::text(&r.args)?;
    let line = text.lines().next().unwrap_or_default();
    let keys: Vec<&str> = line.split(' ').filter(|k| !k.is_empty()).collect();
    let Some(&first) = keys.first() else {
        return Err(err(
            ErrorCode::ARG_MISSING,
            "query config argument not specified.",
        ));
    };
    if first == "xrootd" || first == "cmsd" {
        if keys.len() > 1 {
            return Err(err(
                ErrorCode::ARG_INVALID,
                "too many query config arguments.",
            ));
        }
        return Ok(Response::Ok(Bytes::from_static(b"\n\0")));
    }
    let mut values = Vec::new();
    let mut len = 0;
    for key in keys {
        let value = config_value(ctx, key).await;
        len += value.len() + 1;
        if len > QCONFIG_MAX {
            return Err(err(
                ErrorCode::ARG_TOO_LONG,
                "too many query config arguments.",
            ));
        }
        values.push(Bytes::from(value));
    }
    Ok(ok_with(|b| QconfigAnswer { values }.encode(b)))
}

/// The value of one configuration key.
async fn config_value<F: FileSystem>(ctx: &Ctx<F>, key: &str) -> String {
    match key {
        "bind_max" => MAX_BOUND_STREAMS.to_string(),
        "pio_max" => "5".into(),
        "readv_ior_max" => MAX_READV_ELEMENT.to_string(),
        "readv_iov_max" => MAX_READV_ELEMENTS.to_string(),
        "version" => ctx.config().version.clone(),
        "role" => "none".into(),
        "sysid" => " sysid".into(),
        "chksum" => {
            let algs = ctx.fs().checksum_algorithms();
            match algs.is_empty() {
                true => "chksum".into(),
                false => algs
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!("{i}:{a}"))
                    .collect::<Vec<_>>()
                    .join(","),
            }
        }
        "fattr" => match ctx.fs().list_xattr(ctx.caller(), "/").await {
            Err(FsError::Error { code, .. }) if code == ErrorCode::UNSUPPORTED => "0 0".into(),
            _ => format!("{MAX_FATTR_NAME} {MAX_FATTR_VALUE}"),
        },
        PGREADV_CONFIG_KEY | READV_CRC32C_CONFIG_KEY => "1".into(),
        "tpc" if ctx.config().tpc.is_some() => "1".into(),
        other => other.into(),
    }
}
