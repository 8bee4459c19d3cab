//! `kXR_fattr`: extended attributes of a path or an open file, through the
//! backend's xattr methods (PROTOCOL.md §7.9; XrdXrootdXeqFAttr).
//!
//! Get, set and delete answer a status per name (`kXR_AttrNotFound`, …);
//! list answers the names, with their values when `aData` is set. A backend
//! that answers `kXR_Unsupported` (the default of every xattr method) makes
//! the whole request `kXR_Unsupported`.

use bytes::Bytes;
use xroot_proto::request::{Fattr, FattrOptions, FattrSubcode};
use xroot_proto::response::{FattrItem, FattrList, FattrReply, Response};
use xroot_proto::ErrorCode;

use crate::fs::{FileSystem, FsError};
use crate::handle::kit::{err, ok_with, Ctx};
use crate::handle::path;

/// `kXR_fattr`.
pub(crate) async fn fattr<F: FileSystem>(ctx: &Ctx<F>, r: Fattr) -> Result<Response, FsError> {
    let sub = r.subcode;
    if sub.0 > FattrSubcode::SET.0 {
        return Err(err(ErrorCode::ARG_INVALID, "fattr subcode is invalid"));
    }
    let read_only = sub == FattrSubcode::GET || sub == FattrSubcode::LIST;
    if (sub == FattrSubcode::LIST) != r.names.is_empty() {
        return Err(err(ErrorCode::ARG_INVALID, "fattr numattr is invalid"));
    }
    let path = match r.path.is_empty() {
        true => {
            let f = ctx.file(r.fhandle, "fattr")?;
            if !read_only && !f.writable {
                return Err(err(
                    ErrorCode::INVALID_REQUEST,
                    "fattr request modifies a file open for reading",
                ));
            }
            f.path.clone()
        }
        false => {
            let op = match read_only {
                true => "Inspecting file attributes",
                false => "Modifying file attributes",
            };
            path::payload_target(op, &r.path)?.path
        }
    };
    let (fs, caller) = (ctx.fs(), ctx.caller());
    if sub == FattrSubcode::LIST {
        let with_values = r.options.contains(FattrOptions::A_DATA);
        let mut entries = Vec::new();
        for name in fs.list_xattr(caller, &path).await? {
            let value = match with_values {
                true => Some(fs.get_xattr(caller, &path, &name).await?),
                false => None,
            };
            entries.push((Bytes::from(name), value));
        }
        return Ok(ok_with(|b| FattrList { entries }.encode(b)));
    }
    let mut items = Vec::with_capacity(r.names.len());
    for (i, raw) in r.names.iter().enumerate() {
        let name = path::text(raw)?;
        let outcome = match sub {
            FattrSubcode::GET => fs.get_xattr(caller, &path, name).await.map(Some),
            FattrSubcode::SET => {
                let exists = r.options.contains(FattrOptions::IS_NEW)
                    && fs.get_xattr(caller, &path, name).await.is_ok();
                match exists {
                    true => Err(err(ErrorCode::ITEM_EXISTS, "attribute exists")),
                    false => {
                        let value = r.values.get(i).cloned().unwrap_or_default();
                        fs.set_xattr(caller, &path, name, value)
                            .await
                            .map(|()| None)
                    }
                }
            }
            _ => fs.del_xattr(caller, &path, name).await.map(|()| None),
        };
        items.push(item(raw.clone(), outcome, sub == FattrSubcode::GET)?);
    }
    Ok(ok_with(|b| FattrReply { items }.encode(b)))
}

/// The answer item of one name. An error that is not about this name
/// (unsupported, redirect, wait) fails the whole request.
fn item(
    name: Bytes,
    outcome: Result<Option<Bytes>, FsError>,
    get: bool,
) -> Result<FattrItem, FsError> {
    let (error, value) = match outcome {
        Ok(value) => (None, value),
        Err(FsError::Error { code, .. }) if code != ErrorCode::UNSUPPORTED => {
            (Some(code), get.then(Bytes::new))
        }
        Err(e) => return Err(e),
    };
    Ok(FattrItem { error, name, value })
}
