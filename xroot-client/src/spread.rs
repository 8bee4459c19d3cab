//! Spreading files over channels: [`crate::Client::open`] can give each
//! file a channel **entry** `k`, sent as `xrdcl.intent=k` in the URL (entry
//! 0 adds nothing), so that concurrent files use separate connections — the
//! reference's SSI layer does the same with the user name `k@host`
//! (`XrdSsiScale`, PROTOCOL.md §13).
//!
//! [`Scaler`] is the reference's entry allocator, without I/O: round-robin
//! over the entries that have fewer than `max_pending` files, growing the
//! spread when a whole round finds none (auto-tune).

use std::sync::{Arc, Mutex};

/// How [`crate::Client::open`] spreads files over channels (set with
/// [`crate::Client::set_spread`]). A file counts as pending on its entry
/// from open until the [`crate::File`] is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spread {
    /// Every file uses the channel its URL names (the default).
    #[default]
    Off,
    /// Round-robin over this many entries (clamped to 1..=1024), so over
    /// this many channels per endpoint.
    Fixed(u16),
    /// Auto-tuned: round-robin over 4 entries, taking the next one with
    /// fewer than `max_pending` files open; when a whole round finds none,
    /// the spread grows (×2 up to 64, +64 up to 512, then +128, at most
    /// 1024) and new files go to the new entries until the old ones drain.
    /// The reference allows 64,000 pending requests per channel; 1 gives
    /// every concurrent file its own connection.
    Auto {
        /// Files open on one entry before it counts as full.
        max_pending: u32,
    },
}

/// The reference's channel spreader (`XrdSsiScale`, PROTOCOL.md §13): hands
/// out entries round-robin and grows the spread when every entry is full.
///
/// With auto-tune, growing opens a new **partition** `[old spread, new
/// spread)` that alone receives new files; the partitions merge once the
/// old one's pending count falls to 1.5× the new one's. One deviation:
/// shrinking the spread also pulls the round-robin cursor back inside it
/// (the reference could hand out an entry past the new spread once).
#[derive(Debug, Clone)]
pub(crate) struct Scaler {
    /// Files pending on each entry.
    pending: Vec<u32>,
    max_pending: u32,
    /// Pending on the old partition (on all entries when `begin == 0`).
    active: u32,
    /// Pending on the new partition `[begin, spread)`.
    reactive: u32,
    /// First entry of the new partition; 0 when not partitioned.
    begin: u16,
    /// Where the next round-robin scan starts.
    next: u16,
    spread: u16,
    auto_tune: bool,
    /// Set by a tune until the partitions merge again.
    need_tune: bool,
}

impl Scaler {
    /// The initial spread (`defSprd`).
    pub(crate) const DEFAULT_SPREAD: u16 = 4;
    /// The largest spread (`maxSprd`).
    pub(crate) const MAX_SPREAD: u16 = 1024;
    /// Pending requests per entry before it is full (`maxPend`).
    pub(crate) const MAX_PENDING: u32 = 64_000;
    /// Below this spread a tune doubles it (`midTune`); from here it adds this.
    const MID_TUNE: u16 = 64;
    /// From this spread a tune adds [`Scaler::MAX_TUNE`] (`zipTune`).
    const ZIP_TUNE: u16 = 512;
    /// The largest step (`maxTune`).
    const MAX_TUNE: u16 = 128;

    /// Spread 4, no auto-tune, [`Scaler::MAX_PENDING`] per entry.
    pub(crate) fn new() -> Scaler {
        Scaler {
            pending: vec![0; Self::MAX_SPREAD as usize],
            max_pending: Self::MAX_PENDING,
            active: 0,
            reactive: 0,
            begin: 0,
            next: 0,
            spread: Self::DEFAULT_SPREAD,
            auto_tune: false,
            need_tune: false,
        }
    }

    /// The number of entries in use.
    #[cfg(test)]
    fn spread(&self) -> u16 {
        self.spread
    }

    /// Files pending on entry `ent`.
    #[cfg(test)]
    fn pending(&self, ent: u16) -> u32 {
        self.pending[ent as usize]
    }

    /// A fixed spread of `n` entries (`setSpread(n > 0)`): no auto-tune,
    /// no partition.
    pub(crate) fn set_fixed(&mut self, n: u16) {
        self.auto_tune = false;
        self.need_tune = false;
        self.begin = 0;
        self.resize(n);
    }

    /// Auto-tune from `start` entries (`setSpread(-start)`); a smaller
    /// spread than now also drops the partition.
    pub(crate) fn set_auto(&mut self, start: u16) {
        self.auto_tune = true;
        if start.clamp(1, Self::MAX_SPREAD) < self.spread {
            self.need_tune = false;
            self.begin = 0;
        }
        self.resize(start);
    }

    /// Sets how many pending files make an entry full.
    pub(crate) fn set_max_pending(&mut self, n: u32) {
        self.max_pending = n;
    }

    fn resize(&mut self, n: u16) {
        self.spread = n.clamp(1, Self::MAX_SPREAD);
        self.next = self.next.min(self.spread);
    }

    /// The next entry with room, counted as pending (`getEnt`): round-robin
    /// over the current partition from where the last scan stopped; after a
    /// whole round with none, tunes (if auto) and scans again. `None` when
    /// every entry is full and the spread cannot grow ("out of stream
    /// resources").
    pub(crate) fn get(&mut self) -> Option<u16> {
        let mut end = self.spread;
        loop {
            let start = self.next;
            if let Some(ent) = (start..end).find(|&e| self.pending[e as usize] < self.max_pending) {
                self.pending[ent as usize] += 1;
                self.next = ent + 1;
                if self.begin == 0 || ent < self.begin {
                    self.active += 1;
                } else {
                    self.reactive += 1;
                }
                return Some(ent);
            }
            if start == self.begin {
                // a whole round found nothing
                if !self.auto_tune || !self.tune() {
                    return None;
                }
                end = self.spread;
            } else {
                end = start;
            }
            self.next = self.begin;
        }
    }

    /// Entry `ent`'s file is done (`retEnt`). Merges the partitions once
    /// the old one has drained to 1.5× the new one.
    pub(crate) fn put(&mut self, ent: u16) {
        let Some(count) = self.pending.get_mut(ent as usize).filter(|c| **c > 0) else {
            return;
        };
        *count -= 1;
        if self.begin == 0 || ent < self.begin {
            self.active = self.active.saturating_sub(1);
            if self.begin != 0
                && self.need_tune
                && self.active <= self.reactive + (self.reactive >> 1)
            {
                self.retune();
            }
        } else {
            self.reactive = self.reactive.saturating_sub(1);
        }
    }

    /// Grows the spread (`Tune`); false when it is already at the maximum.
    fn tune(&mut self) -> bool {
        if self.spread >= Self::MAX_SPREAD {
            self.begin = 0;
            self.auto_tune = false;
            self.need_tune = false;
            return false;
        }
        let grown = if self.spread < Self::MID_TUNE {
            self.spread * 2
        } else if self.spread < Self::ZIP_TUNE {
            self.spread + Self::MID_TUNE
        } else {
            self.spread + Self::MAX_TUNE
        };
        self.need_tune = true;
        if grown <= Self::MAX_SPREAD {
            self.begin = self.spread;
            self.next = self.spread;
            self.spread = grown;
        } else {
            // the reference's "too few channels left" test is always true
            // here: stop partitioning and tuning
            self.begin = 0;
            self.auto_tune = false;
            self.need_tune = false;
            self.spread = Self::MAX_SPREAD;
        }
        self.active += self.reactive;
        self.reactive = 0;
        true
    }

    /// Merges the new partition into the old (`Retune`).
    fn retune(&mut self) {
        self.need_tune = false;
        self.active += self.reactive;
        self.reactive = 0;
        self.begin = 0;
    }
}

/// A client's spreading policy and its scaler, shared with the entries it
/// handed out.
#[derive(Debug)]
pub(crate) struct Spreader {
    state: Mutex<(Spread, Scaler)>,
}

impl Default for Spreader {
    fn default() -> Self {
        Spreader {
            state: Mutex::new((Spread::Off, Scaler::new())),
        }
    }
}

impl Spreader {
    /// The policy in force.
    pub(crate) fn policy(&self) -> Spread {
        self.state.lock().unwrap().0
    }

    /// Changes the policy; files already open keep their entries.
    pub(crate) fn set(&self, spread: Spread) {
        let mut state = self.state.lock().unwrap();
        let scaler = &mut state.1;
        match spread {
            Spread::Off => {}
            Spread::Fixed(n) => {
                scaler.set_max_pending(Scaler::MAX_PENDING);
                scaler.set_fixed(n);
            }
            Spread::Auto { max_pending } => {
                scaler.set_max_pending(max_pending);
                scaler.set_auto(Scaler::DEFAULT_SPREAD);
            }
        }
        state.0 = spread;
    }

    /// An entry for a file to be opened; `None` when spreading is off or
    /// every entry is full.
    pub(crate) fn take(self: &Arc<Self>) -> Option<SpreadEntry> {
        let mut state = self.state.lock().unwrap();
        if state.0 == Spread::Off {
            return None;
        }
        let ent = state.1.get()?;
        Some(SpreadEntry {
            spreader: Arc::clone(self),
            ent,
        })
    }
}

/// One file's entry: pending until dropped.
#[derive(Debug)]
pub(crate) struct SpreadEntry {
    spreader: Arc<Spreader>,
    ent: u16,
}

impl SpreadEntry {
    /// The `xrdcl.intent` value of this entry (`None` for entry 0).
    pub(crate) fn intent(&self) -> Option<String> {
        (self.ent > 0).then(|| self.ent.to_string())
    }
}

impl Drop for SpreadEntry {
    fn drop(&mut self) {
        self.spreader.state.lock().unwrap().1.put(self.ent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(s: &mut Scaler, n: usize) -> Vec<u16> {
        (0..n).map(|_| s.get().expect("an entry")).collect()
    }

    #[test]
    fn fixed_round_robins() {
        let mut s = Scaler::new();
        assert_eq!(take(&mut s, 9), [0, 1, 2, 3, 0, 1, 2, 3, 0]);
        s.set_fixed(2);
        assert_eq!(take(&mut s, 3), [1, 0, 1], "the cursor stays where it was");
        assert_eq!(s.pending(0), 4);
        s.set_fixed(0);
        assert_eq!((s.spread(), take(&mut s, 2)), (1, vec![0, 0]), "at least 1");
    }

    #[test]
    fn full_entries_are_skipped_and_none_when_all_are_full() {
        let mut s = Scaler::new();
        s.set_max_pending(1);
        assert_eq!(take(&mut s, 4), [0, 1, 2, 3]);
        assert_eq!(s.get(), None, "no auto-tune: out of entries");
        s.put(2);
        assert_eq!(s.get(), Some(2));
        s.put(0);
        s.put(3);
        assert_eq!(
            take(&mut s, 2),
            [3, 0],
            "the scan continues after the last one given"
        );
        s.put(7); // never given: ignored
        assert_eq!(s.get(), None);
    }

    #[test]
    fn auto_tune_grows_like_the_reference() {
        let mut s = Scaler::new();
        s.set_max_pending(1);
        s.set_auto(Scaler::DEFAULT_SPREAD);
        let mut spreads = vec![s.spread()];
        let mut given = Vec::new();
        while let Some(e) = s.get() {
            given.push(e);
            if *spreads.last().unwrap() != s.spread() {
                spreads.push(s.spread());
            }
        }
        let mut want = vec![4, 8, 16, 32, 64];
        want.extend((128..=512).step_by(64));
        want.extend((640..=1024).step_by(128));
        assert_eq!(spreads, want);
        assert_eq!(
            given,
            (0..1024).collect::<Vec<u16>>(),
            "each entry once, in order"
        );
        assert_eq!(s.get(), None, "1024 is the cap");
        s.put(5);
        assert_eq!(s.get(), Some(5), "room again after a file is done");
    }

    #[test]
    fn new_files_go_to_the_new_partition_until_the_old_drains() {
        let mut s = Scaler::new();
        s.set_max_pending(1);
        s.set_auto(4);
        assert_eq!(take(&mut s, 5), [0, 1, 2, 3, 4], "the 5th tunes to 8");
        assert_eq!(s.spread(), 8);
        s.put(0); // old partition: 3 pending, new: 1
        assert_eq!(
            s.get(),
            Some(5),
            "entry 0 is free but not in the new partition"
        );
        s.put(1); // old: 2 <= 1.5 × 2: merged
        assert_eq!(take(&mut s, 4), [6, 7, 0, 1], "one partition again");
        assert_eq!(s.get(), Some(8), "8 files on 8 entries: tuned to 16");
        assert_eq!(s.spread(), 16);
    }

    #[test]
    fn a_step_past_the_cap_stops_partitioning_and_tuning() {
        let mut s = Scaler::new();
        s.set_max_pending(1);
        s.set_auto(1000);
        assert_eq!(take(&mut s, 1000).len(), 1000);
        assert_eq!(
            s.get(),
            Some(1000),
            "1000 + 128 > 1024: spread 1024, unpartitioned"
        );
        assert_eq!(s.spread(), 1024);
        s.put(3);
        assert_eq!(s.get(), Some(1001), "the scan goes on from the cursor");
        assert_eq!(take(&mut s, 22).last(), Some(&1023));
        assert_eq!(s.get(), Some(3), "then wraps round the whole spread");
        assert_eq!(s.get(), None);
    }

    #[test]
    fn shrinking_keeps_the_cursor_inside_the_spread() {
        let mut s = Scaler::new();
        s.set_fixed(8);
        assert_eq!(take(&mut s, 6), [0, 1, 2, 3, 4, 5]);
        s.set_fixed(4);
        assert_eq!(take(&mut s, 5), [0, 1, 2, 3, 0]);
    }

    #[test]
    fn entries_return_when_dropped() {
        let spreader = Arc::new(Spreader::default());
        assert!(spreader.take().is_none(), "off by default");
        spreader.set(Spread::Auto { max_pending: 1 });
        let held: Vec<_> = (0..4).map(|_| spreader.take().unwrap()).collect();
        let intents: Vec<_> = held.iter().map(|e| e.intent()).collect();
        assert_eq!(
            intents,
            [None, Some("1".into()), Some("2".into()), Some("3".into())]
        );
        drop(held);
        let again = spreader.take().unwrap();
        assert_eq!(again.ent, 0, "all four returned; the round starts over");
        assert_eq!(spreader.policy(), Spread::Auto { max_pending: 1 });
    }
}
