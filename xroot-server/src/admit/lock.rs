//! File locks between sessions, as the reference keeps them
//! (XrdXrootdFileLock1, used by do_Open): a file open for writing cannot be
//! opened by anyone else, for reading or writing, and a file open for
//! reading cannot be opened for writing, until the holders close it or
//! their sessions end. `kXR_force` opens anyway. Locks are by the path the
//! client opened, across every session of the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use xroot_proto::ErrorCode;

use crate::fs::FsError;

#[derive(Debug, Default, Clone, Copy)]
struct Holders {
    readers: u32,
    writers: u32,
}

/// The server's lock table.
#[derive(Debug, Default, Clone)]
pub(crate) struct Locks {
    table: Arc<Mutex<HashMap<String, Holders>>>,
}

/// One open's hold on a path, released when dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    locks: Locks,
    path: String,
    write: bool,
}

impl Locks {
    /// Locks `path` for reading or `write`-ing. Errors: `kXR_FileLocked`
    /// with the reference's message ("Output file /p is already opened by
    /// 1 reader; open denied.") when another holder excludes it and not
    /// `force`.
    pub(crate) fn lock(&self, path: &str, write: bool, force: bool) -> Result<FileLock, FsError> {
        let mut table = self.table.lock().unwrap();
        let h = table.entry(path.to_string()).or_default();
        let (n, who) = match (write, h.readers, h.writers) {
            (_, _, w) if w > 0 => (w, "writer"),
            (true, r, _) if r > 0 => (r, "reader"),
            _ => (0, ""),
        };
        if n > 0 && !force {
            let message = format!(
                "{} file {path} is already opened by {n} {who}{}; open denied.",
                if write { "Output" } else { "Input" },
                if n > 1 { "s" } else { "" },
            );
            return Err(FsError::new(ErrorCode::FILE_LOCKED, message));
        }
        match write {
            true => h.writers += 1,
            false => h.readers += 1,
        }
        Ok(FileLock {
            locks: self.clone(),
            path: path.to_string(),
            write,
        })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let mut table = self.locks.table.lock().unwrap();
        if let Some(h) = table.get_mut(&self.path) {
            match self.write {
                true => h.writers = h.writers.saturating_sub(1),
                false => h.readers = h.readers.saturating_sub(1),
            }
            if h.readers == 0 && h.writers == 0 {
                table.remove(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<FileLock, FsError>) -> String {
        match r {
            Err(FsError::Error { code, message }) if code == ErrorCode::FILE_LOCKED => message,
            other => panic!("expected kXR_FileLocked, got {other:?}"),
        }
    }

    #[test]
    fn writers_exclude_everyone_readers_exclude_writers() {
        let locks = Locks::default();
        let r1 = locks.lock("/a", false, false).unwrap();
        let r2 = locks.lock("/a", false, false).unwrap();
        assert_eq!(
            refused(locks.lock("/a", true, false)),
            "Output file /a is already opened by 2 readers; open denied."
        );
        let _other = locks.lock("/b", true, false).unwrap();
        drop((r1, r2));
        let w = locks.lock("/a", true, false).unwrap();
        assert_eq!(
            refused(locks.lock("/a", false, false)),
            "Input file /a is already opened by 1 writer; open denied."
        );
        assert_eq!(
            refused(locks.lock("/a", true, false)),
            "Output file /a is already opened by 1 writer; open denied."
        );
        let forced = locks.lock("/a", true, true).unwrap();
        drop((w, forced));
        assert!(locks.table.lock().unwrap().get("/a").is_none());
    }
}
