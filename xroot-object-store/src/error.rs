//! Client errors as object_store's error kinds.

use object_store::Error;
use xroot_client::Error as ClientError;
use xroot_proto::ErrorCode;

/// The store name in object_store errors.
pub const STORE: &str = "xroot";

/// `e`, from a request about `path`, as the object_store error of its kind.
pub(crate) fn client_error(path: &str, e: ClientError) -> Error {
    let path = path.to_string();
    match e.server_code() {
        // a directory is no object
        Some(ErrorCode::NOT_FOUND | ErrorCode::IS_DIRECTORY) => Error::NotFound {
            path,
            source: Box::new(e),
        },
        Some(ErrorCode::ITEM_EXISTS) => Error::AlreadyExists {
            path,
            source: Box::new(e),
        },
        Some(ErrorCode::NOT_AUTHORIZED) => Error::PermissionDenied {
            path,
            source: Box::new(e),
        },
        Some(ErrorCode::AUTH_FAILED) => Error::Unauthenticated {
            path,
            source: Box::new(e),
        },
        // this client could not log in: no protocol in common with the
        // server, or no credential (token, keytab) to answer with
        _ if matches!(
            e,
            ClientError::AuthUnsupported { .. } | ClientError::Credential { .. }
        ) =>
        {
            Error::Unauthenticated {
                path,
                source: Box::new(e),
            }
        }
        _ => Error::Generic {
            store: STORE,
            source: Box::new(e),
        },
    }
}

/// An operation this store does not implement.
pub(crate) fn not_implemented(operation: &str) -> Error {
    Error::NotImplemented {
        operation: operation.to_string(),
        implementer: STORE.to_string(),
    }
}

/// `e`, from the cache below the store about `path`, as the object_store
/// error of its kind.
pub(crate) fn fs_error(path: &str, e: xroot_server::FsError) -> Error {
    let path = path.to_string();
    let code = match &e {
        xroot_server::FsError::Error { code, .. } => Some(*code),
        _ => None,
    };
    match code {
        Some(ErrorCode::NOT_FOUND | ErrorCode::IS_DIRECTORY) => Error::NotFound {
            path,
            source: Box::new(e),
        },
        Some(ErrorCode::NOT_AUTHORIZED) => Error::PermissionDenied {
            path,
            source: Box::new(e),
        },
        _ => Error::Generic {
            store: STORE,
            source: Box::new(e),
        },
    }
}
