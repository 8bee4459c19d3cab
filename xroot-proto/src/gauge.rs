//! A count integrated over time: how many things are in flight now, the
//! most ever at once, how many were ever counted, and the time-weighted
//! mean of the count over the interval observed.
//!
//! Not a wire fact, but the one implementation of this arithmetic for the
//! crates above: xroot-server counts requests in flight per link and per
//! server with it (`xroot_server::TimeGauge`), xroot-client per connection
//! (`xroot_client::ChannelStats`). It reads no clock: every change and
//! every reading takes the instant it happens at (`now`), which the caller
//! reads ([`Instant::now`], or a clock of its own in tests).
//!
//! Units: counts are things (requests); the area under the count is in
//! thing·seconds; the observed interval is a [`Duration`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use xroot_proto::gauge::Gauge;
//!
//! let t0 = Instant::now();
//! let s = |n| t0 + Duration::from_secs(n);
//! let mut g = Gauge::since(t0);
//! g.enter(t0);
//! g.enter(s(1));
//! g.leave(s(2));
//! g.leave(s(3));
//! // 1 for 1 s, 2 for 1 s, 1 for 1 s, then 0 for 1 s: 4 s observed
//! let r = g.stats(s(4));
//! assert_eq!((r.current, r.peak, r.total), (0, 2, 2));
//! assert_eq!(g.area(s(4)), 4.0);
//! assert_eq!(r.mean, 1.0);
//! ```

use std::time::{Duration, Instant};

/// One reading of a [`Gauge`]: how many are in flight now, at most and on
/// average.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GaugeStats {
    /// In flight now.
    pub current: u64,
    /// The most ever in flight at once.
    pub peak: u64,
    /// The count averaged over time (the integral of the count over the
    /// observed interval divided by its length; see [`time_weighted_mean`]).
    pub mean: f64,
    /// Things counted ([`Gauge::enter`]) since the start.
    pub total: u64,
}

/// A count integrated over time, changed and read at instants the caller
/// gives.
///
/// The observed interval runs from the gauge's start to the latest instant
/// it was given. A gauge made with [`Gauge::since`] starts at that instant;
/// one made with [`Gauge::new`] starts at the first instant it is given
/// ([`Gauge::enter`], [`Gauge::leave`] or [`Gauge::advance`]). An instant
/// earlier than one given before adds no time (the clock never runs
/// backwards), so callers that read the clock before taking a lock need
/// not order their readings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauge {
    current: u64,
    peak: u64,
    total: u64,
    /// The integral of `current` from `start` up to `last`, in
    /// thing·seconds.
    area: f64,
    /// `(start, last)`: the interval integrated so far; `None` before the
    /// first instant of a [`Gauge::new`].
    span: Option<(Instant, Instant)>,
}

impl Gauge {
    /// A gauge at zero whose observed interval starts at the first instant
    /// it is given.
    pub const fn new() -> Gauge {
        Gauge {
            current: 0,
            peak: 0,
            total: 0,
            area: 0.0,
            span: None,
        }
    }

    /// A gauge at zero whose observed interval starts at `start`.
    pub const fn since(start: Instant) -> Gauge {
        Gauge {
            span: Some((start, start)),
            ..Gauge::new()
        }
    }

    /// Adds the area under the count up to `now` (starting the observed
    /// interval at `now` if it has not started). An instant before the
    /// latest one given adds nothing.
    pub fn advance(&mut self, now: Instant) {
        match &mut self.span {
            Some((_, last)) => {
                self.area +=
                    self.current as f64 * now.saturating_duration_since(*last).as_secs_f64();
                *last = (*last).max(now);
            }
            None => self.span = Some((now, now)),
        }
    }

    /// Counts one more in flight from `now` (and one more in
    /// [`GaugeStats::total`]).
    pub fn enter(&mut self, now: Instant) {
        self.advance(now);
        self.current += 1;
        self.total += 1;
        self.peak = self.peak.max(self.current);
    }

    /// Counts one fewer in flight from `now` (none below zero).
    pub fn leave(&mut self, now: Instant) {
        self.advance(now);
        self.current = self.current.saturating_sub(1);
    }

    /// In flight now.
    pub fn current(&self) -> u64 {
        self.current
    }

    /// The most ever in flight at once.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// How many were ever counted ([`Gauge::enter`]).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The integral of the count over the observed interval up to `now`,
    /// in thing·seconds (0 before the interval starts). Changes nothing.
    pub fn area(&self, now: Instant) -> f64 {
        let mut g = *self;
        g.advance(now);
        g.area
    }

    /// The observed interval up to `now` (its start to the later of `now`
    /// and the latest instant given); zero before it starts. Changes
    /// nothing.
    pub fn observed(&self, now: Instant) -> Duration {
        self.span.map_or(Duration::ZERO, |(start, last)| {
            last.max(now).saturating_duration_since(start)
        })
    }

    /// The count averaged over the observed interval up to `now`:
    /// [`Gauge::area`] over [`Gauge::observed`] (see
    /// [`time_weighted_mean`]). Changes nothing.
    pub fn mean(&self, now: Instant) -> f64 {
        time_weighted_mean(self.area(now), self.observed(now))
    }

    /// The reading at `now`. Changes nothing.
    pub fn stats(&self, now: Instant) -> GaugeStats {
        GaugeStats {
            current: self.current,
            peak: self.peak,
            mean: self.mean(now),
            total: self.total,
        }
    }
}

/// The mean of a count whose integral over an interval of length `over` is
/// `area` (thing·seconds): `area / over` in things, 0 for an empty
/// interval. Gauges read over consecutive intervals are averaged together
/// by summing their areas and their intervals.
pub fn time_weighted_mean(area: f64, over: Duration) -> f64 {
    if over.is_zero() {
        0.0
    } else {
        area / over.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn mean_is_time_weighted() {
        let t0 = Instant::now();
        let mut g = Gauge::since(t0);
        g.enter(t0);
        g.enter(t0 + 1000 * MS);
        g.leave(t0 + 2000 * MS);
        g.leave(t0 + 3000 * MS);
        // 1 for 1 s, 2 for 1 s, 1 for 1 s, 0 for 1 s → mean 1.0 over 4 s
        let s = g.stats(t0 + 4000 * MS);
        assert!((s.mean - 1.0).abs() < 1e-9, "{}", s.mean);
        assert_eq!((s.peak, s.current, s.total), (2, 0, 2));
        // a reading changes nothing
        assert!((g.mean(t0 + 8000 * MS) - 0.5).abs() < 1e-9);
        assert_eq!(g.observed(t0 + 4000 * MS), 4000 * MS);
    }

    #[test]
    fn a_new_gauge_starts_at_its_first_instant() {
        let t0 = Instant::now();
        let mut g = Gauge::new();
        assert_eq!(g.stats(t0 + 5000 * MS), GaugeStats::default());
        assert_eq!(g.observed(t0 + 5000 * MS), Duration::ZERO);
        g.enter(t0 + 1000 * MS);
        assert_eq!(g.observed(t0 + 3000 * MS), 2000 * MS);
        assert!((g.area(t0 + 3000 * MS) - 2.0).abs() < 1e-9);
        assert!((g.mean(t0 + 3000 * MS) - 1.0).abs() < 1e-9);

        let mut h = Gauge::new();
        h.advance(t0);
        h.enter(t0 + 1000 * MS);
        assert!((h.mean(t0 + 2000 * MS) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_clock_never_runs_backwards() {
        let t0 = Instant::now();
        let mut g = Gauge::since(t0);
        g.enter(t0 + 2000 * MS);
        // read before the change above, applied after it
        g.enter(t0 + 1000 * MS);
        g.leave(t0 + 3000 * MS);
        // 2 from 2 s to 3 s, then 1 until 4 s
        assert!((g.area(t0 + 4000 * MS) - 3.0).abs() < 1e-9);
        assert_eq!(g.observed(t0 + 1000 * MS), 3000 * MS);
        assert_eq!((g.current(), g.peak(), g.total()), (1, 2, 2));
    }

    #[test]
    fn means_of_consecutive_intervals() {
        assert_eq!(time_weighted_mean(3.0, Duration::ZERO), 0.0);
        assert_eq!(time_weighted_mean(3.0, 2000 * MS), 1.5);
    }

    proptest! {
        /// The mean never exceeds the peak, the count never goes below
        /// zero, and the area is the sum of count × time.
        #[test]
        fn mean_is_bounded_by_the_peak(steps in proptest::collection::vec((any::<bool>(), 0u64..1000), 0..50)) {
            let t0 = Instant::now();
            let mut g = Gauge::since(t0);
            let (mut at, mut count, mut area, mut peak) = (0u64, 0u64, 0.0f64, 0u64);
            for (up, dt) in steps {
                area += count as f64 * dt as f64 / 1000.0;
                at += dt;
                let now = t0 + Duration::from_millis(at);
                if up {
                    g.enter(now);
                    count += 1;
                    peak = peak.max(count);
                } else {
                    g.leave(now);
                    count = count.saturating_sub(1);
                }
            }
            let end = t0 + Duration::from_millis(at + 1);
            area += count as f64 / 1000.0;
            let s = g.stats(end);
            prop_assert_eq!((s.current, s.peak), (count, peak));
            prop_assert!((g.area(end) - area).abs() < 1e-6, "{} vs {}", g.area(end), area);
            prop_assert!(s.mean <= s.peak as f64 + 1e-9);
            prop_assert_eq!(g.observed(end), Duration::from_millis(at + 1));
        }
    }
}
