//! Client errors as object_store's error kinds.

use object_store::Error;
use xroot_client::Error as ClientError;
use xroot_proto::ErrorCode;

/// The store name in object_store errors.
pub const STORE: &str = "xroot";

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The object_store error for a server's `code` (if it answered one) about
/// `path`, with `source` as its cause; `unauthenticated` for a failure to
/// log in that carries no code.
fn by_code(path: &str, code: Option<ErrorCode>, unauthenticated: bool, source: Source) -> Error {
    let path = path.to_string();
    match code {
        // a directory is no object
        Some(ErrorCode::NOT_FOUND | ErrorCode::IS_DIRECTORY) => Error::NotFound { path, source },
        Some(ErrorCode::ITEM_EXISTS) => Error::AlreadyExists { path, source },
        Some(ErrorCode::NOT_AUTHORIZED) => Error::PermissionDenied { path, source },
        Some(ErrorCode::AUTH_FAILED) => Error::Unauthenticated { path, source },
        _ if unauthenticated => Error::Unauthenticated { path, source },
        _ => Error::Generic {
            store: STORE,
            source,
        },
    }
}

/// `e`, from a request about `path`, as the object_store error of its kind.
pub(crate) fn client_error(path: &str, e: ClientError) -> Error {
    // this client could not log in: no protocol in common with the server,
    // or no credential (token, keytab) to answer with
    let unauthenticated = matches!(
        e,
        ClientError::AuthUnsupported { .. } | ClientError::Credential { .. }
    );
    by_code(path, e.server_code(), unauthenticated, Box::new(e))
}

/// `e`, from the cache below the store about `path`, as the object_store
/// error of its kind.
pub(crate) fn fs_error(path: &str, e: xroot_server::FsError) -> Error {
    let code = match &e {
        xroot_server::FsError::Error { code, .. } => Some(*code),
        _ => None,
    };
    by_code(path, code, false, Box::new(e))
}

/// An operation this store does not implement.
pub(crate) fn not_implemented(operation: &str) -> Error {
    Error::NotImplemented {
        operation: operation.to_string(),
        implementer: STORE.to_string(),
    }
}

/// The error of a put, copy or rename that may only create its target
/// and found it there.
pub(crate) fn already_exists(path: &str) -> Error {
    Error::AlreadyExists {
        path: path.to_string(),
        source: "the target exists".into(),
    }
}
