//! What identifies one version of an origin file ([`Validators`]) and when
//! the origin last confirmed it ([`Checked`]): kept in the sidecar and the
//! live file, compared with the origin's stat.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use xroot_proto::response::{StatFlags, StatInfo};

/// What identifies one version of an origin file, from the origin's stat. A
/// cached entry whose validators differ from the origin's is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Validators {
    /// File size in bytes.
    pub size: u64,
    /// Modification time as the origin reports it (seconds since the Unix epoch).
    pub mtime: i64,
}

/// When the origin last confirmed a file's [`Validators`], with the rest of
/// its stat then: kept in the sidecar, so that a cache with a trust window
/// can open a file it holds whole without asking the origin
/// ([`Store::trusted`](super::Store::trusted)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// When, nanoseconds since the Unix epoch; 0: never.
    pub at_ns: i64,
    /// The stat's id (see [`StatInfo::id`]).
    pub id: i64,
    /// The stat's flags (see [`StatInfo::flags`]).
    pub flags: u32,
}

impl Checked {
    /// `stat`, confirmed now.
    pub fn now(stat: &StatInfo) -> Checked {
        Checked {
            at_ns: now_ns(),
            id: stat.id,
            flags: stat.flags.0,
        }
    }

    /// The stat of a file with `validators` as it was confirmed (without
    /// the extended fields).
    pub fn stat(&self, validators: Validators) -> StatInfo {
        StatInfo {
            id: self.id,
            size: validators.size,
            flags: StatFlags(self.flags),
            mtime: validators.mtime,
            extended: None,
        }
    }

    /// Whether it was confirmed at most `window` before now (and not later
    /// than `window` after it: a clock set back by more is not trusted).
    pub fn within(&self, window: Duration) -> bool {
        let window = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
        self.at_ns > 0 && now_ns().saturating_sub(self.at_ns).abs() <= window
    }
}

impl From<&xroot_proto::response::StatInfo> for Validators {
    fn from(st: &xroot_proto::response::StatInfo) -> Validators {
        Validators {
            size: st.size,
            mtime: st.mtime,
        }
    }
}

/// Nanoseconds since the Unix epoch (0 before it, saturating far after).
pub(super) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
