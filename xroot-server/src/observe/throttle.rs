//! [`Throttle`]: at most so many log lines per interval for an event a
//! client can repeat at will (a refused credential), so that a hostile
//! client cannot flood the log; the lines left out are counted and the next
//! line that gets through says how many.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A per-interval allowance of log lines. Cheap to share (`Sync`).
#[derive(Debug)]
pub struct Throttle {
    interval: Duration,
    per_interval: u32,
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Option<Instant>,
    logged: u32,
    /// Lines left out since the last one logged.
    skipped: u64,
}

impl Throttle {
    /// At most `per_interval` lines in each `interval`.
    pub const fn new(per_interval: u32, interval: Duration) -> Throttle {
        Throttle {
            interval,
            per_interval,
            state: Mutex::new(Window {
                start: None,
                logged: 0,
                skipped: 0,
            }),
        }
    }

    /// Whether a line may be logged at `now`: `Some(n)` with the number of
    /// lines left out since the last one logged, or `None` to leave this
    /// one out (and count it).
    pub fn admit(&self, now: Instant) -> Option<u64> {
        let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = w
            .start
            .is_none_or(|start| now.saturating_duration_since(start) >= self.interval);
        if fresh {
            w.start = Some(now);
            w.logged = 0;
        }
        if w.logged >= self.per_interval {
            w.skipped += 1;
            return None;
        }
        w.logged += 1;
        Some(std::mem::take(&mut w.skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_beyond_the_allowance_are_counted_and_reported_later() {
        let t = Throttle::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(t.admit(t0), Some(0));
        assert_eq!(t.admit(t0 + Duration::from_secs(1)), Some(0));
        assert_eq!(t.admit(t0 + Duration::from_secs(2)), None);
        assert_eq!(t.admit(t0 + Duration::from_secs(9)), None);
        // a new interval: the two left out are told with the next line
        assert_eq!(t.admit(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(t.admit(t0 + Duration::from_secs(11)), Some(0));
        assert_eq!(t.admit(t0 + Duration::from_secs(12)), None);
    }
}
