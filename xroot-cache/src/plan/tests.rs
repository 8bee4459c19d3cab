// a plan's requests are ranges of runs: `[0..n]` is one request of n runs
#![allow(clippy::single_range_in_vec_init)]

use std::cell::RefCell;
use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use BlockState::{Cached, InFlight, Missing};

const KB4: u64 = 4096;

/// A state function over a table; blocks past it are Missing.
fn table(states: &[BlockState]) -> impl Fn(u64) -> BlockState + '_ {
    |b| {
        usize::try_from(b)
            .ok()
            .and_then(|i| states.get(i))
            .copied()
            .unwrap_or(Missing)
    }
}

fn cold(_: u64) -> BlockState {
    Missing
}

/// Checks every property of `plan` for one input.
fn check(
    extents: &[(u64, usize)],
    file_size: u64,
    geo: &Geometry,
    states: &[BlockState],
) -> Result<Plan, TestCaseError> {
    let asked = RefCell::new(Vec::new());
    let p = plan(extents, file_size, geo, |b| {
        asked.borrow_mut().push(b);
        table(states)(b)
    });
    let state = table(states);
    let bs = geo.block_size;
    let blocks = geo.blocks_in(file_size);

    // state is asked about blocks of the file only, each once
    let asked = asked.into_inner();
    let distinct: BTreeSet<u64> = asked.iter().copied().collect();
    prop_assert_eq!(distinct.len(), asked.len(), "a block asked twice");
    prop_assert!(distinct.iter().all(|&b| b < blocks), "asked past EOF");

    // the needed blocks, naively
    let mut needed = BTreeSet::new();
    for &(offset, len) in extents {
        let end = (offset + len as u64).min(file_size);
        if offset < end {
            needed.extend(offset / bs..=(end - 1) / bs);
        }
    }

    // runs: ascending, disjoint, shaped, within limits, over Missing blocks
    let mut in_runs = BTreeSet::new();
    for (i, r) in p.runs.iter().enumerate() {
        prop_assert!(r.blocks >= 1);
        prop_assert!(r.blocks * bs <= geo.io_size, "run over io_size: {:?}", r);
        prop_assert_eq!(r.offset, r.first_block * bs);
        prop_assert_eq!(r.len as u64, (r.blocks * bs).min(file_size - r.offset));
        prop_assert!(r.len > 0 && r.len <= MAX_READV_ELEMENT as usize);
        if let Some(next) = p.runs.get(i + 1) {
            let end = r.first_block + r.blocks;
            prop_assert!(end <= next.first_block, "runs overlap or descend");
            // greedy: the two runs could not have merged
            let gap_ok = (next.first_block - end) * bs <= geo.io_gap
                && (end..next.first_block).all(|b| state(b) == Missing);
            let fits = next.first_block + next.blocks - r.first_block <= geo.io_size / bs;
            prop_assert!(!(gap_ok && fits), "runs {:?} {:?} should merge", r, next);
        }
        let run_blocks = r.first_block..r.first_block + r.blocks;
        prop_assert!(needed.contains(&run_blocks.start) && needed.contains(&(run_blocks.end - 1)));
        let mut gap = 0;
        for b in run_blocks {
            prop_assert_eq!(state(b), Missing, "block {} in a run", b);
            gap = if needed.contains(&b) { 0 } else { gap + bs };
            prop_assert!(gap <= geo.io_gap, "gap over io_gap before block {}", b);
            in_runs.insert(b);
        }
    }

    // coverage: every needed block is fetched, awaited or cached
    let waits: Vec<u64> = needed
        .iter()
        .copied()
        .filter(|&b| state(b) == InFlight)
        .collect();
    prop_assert_eq!(&p.wait, &waits);
    let cached = needed.iter().filter(|&&b| state(b) == Cached).count();
    prop_assert_eq!(p.cached, cached as u64);
    for &b in &needed {
        prop_assert_eq!(in_runs.contains(&b), state(b) == Missing, "block {}", b);
    }

    // requests: the runs in order, full, within the limits
    let mut next = 0;
    for (i, req) in p.requests.iter().enumerate() {
        prop_assert_eq!(req.start, next);
        prop_assert!(req.start < req.end && req.end - req.start <= MAX_READV_ELEMENTS);
        let total = |rs: &[Run]| rs.iter().map(|r| r.len as u64 + 16).sum::<u64>();
        prop_assert!(total(&p.runs[req.clone()]) <= MAX_READV_TOTAL);
        if i + 1 < p.requests.len() {
            let grown = &p.runs[req.start..req.end + 1];
            prop_assert!(
                grown.len() > MAX_READV_ELEMENTS || total(grown) > MAX_READV_TOTAL,
                "request {} not full",
                i
            );
        }
        next = req.end;
    }
    prop_assert_eq!(next, p.runs.len());

    // the bound a reader reserves RAM for before planning holds
    let fetched: u64 = p.runs.iter().map(|r| r.len as u64).sum();
    prop_assert!(fetched <= fetch_bound(extents, file_size, geo));

    // deterministic, whatever the order of the extents
    let mut reversed = extents.to_vec();
    reversed.reverse();
    prop_assert_eq!(&plan(&reversed, file_size, geo, &state), &p);
    Ok(p)
}

fn geometry() -> impl Strategy<Value = Geometry> {
    (0u32..3, 1u64..40, 0u64..10 * KB4).prop_map(|(shift, io_blocks, gap)| {
        let bs = KB4 << (2 * shift);
        Geometry::new(bs, io_blocks * bs, gap).unwrap()
    })
}

fn block_state() -> impl Strategy<Value = BlockState> {
    prop_oneof![6 => Just(Missing), 1 => Just(InFlight), 1 => Just(Cached)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Coverage, limits, shape, gap rule, determinism on small files with
    /// mixed block states; extents may reach past EOF.
    #[test]
    fn plans_hold_their_properties(
        geo in geometry(),
        blocks in 0u64..200,
        tail in 0u64..KB4,
        states in prop::collection::vec(block_state(), 200),
        extents in prop::collection::vec((0f64..1.1, 0usize..200_000), 0..40),
    ) {
        let file_size = (blocks * geo.block_size).saturating_sub(tail);
        let extents: Vec<(u64, usize)> =
            extents.iter().map(|&(at, len)| ((at * file_size as f64) as u64, len)).collect();
        check(&extents, file_size, &geo, &states)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Thousands of runs split into requests of at most 1024.
    #[test]
    fn many_runs_split_by_the_element_limit(
        states in prop::collection::vec(prop_oneof![Just(Missing), Just(Cached)], 4200..8000),
    ) {
        let geo = Geometry::new(KB4, 1 << 20, 0).unwrap();
        let file_size = states.len() as u64 * KB4 - 100;
        let p = check(&[(0, file_size as usize)], file_size, &geo, &states)?;
        let runs = states.windows(2).filter(|w| **w == [Cached, Missing]).count()
            + usize::from(states[0] == Missing);
        prop_assert_eq!(p.runs.len(), runs);
        prop_assert_eq!(p.requests.len(), runs.div_ceil(MAX_READV_ELEMENTS));
    }
}

#[test]
fn geometry_is_checked_and_clamped() {
    for bs in [0, 1, 2048, 6144, 12288, 2 << 20] {
        assert!(Geometry::new(bs, 4 << 20, 0).is_err(), "block size {bs}");
    }
    let err = Geometry::new(8192, 4096, 0).unwrap_err();
    assert!(err.to_string().contains("io size 4096"), "{err}");
    assert_eq!(Geometry::new(KB4, 3 << 20, 7).unwrap().io_size, 2_093_056);
    assert_eq!(Geometry::new(KB4, 10_000, 7).unwrap().io_size, 8192);
    assert_eq!(Geometry::new(1 << 20, 8 << 20, 0).unwrap().io_size, 1 << 20);
    assert_eq!(
        Geometry::default(),
        Geometry::new(4096, 1 << 20, 0).unwrap()
    );
}

#[test]
fn last_block_is_short_at_eof() {
    let geo = Geometry::default();
    assert_eq!(geo.blocks_in(0), 0);
    assert_eq!(geo.blocks_in(10_000), 3);
    assert_eq!(geo.blocks_in(8192), 2);
    assert_eq!(geo.block_range(1, 10_000), (4096, 4096));
    assert_eq!(geo.block_range(2, 10_000), (8192, 1808));
    assert_eq!(geo.block_range(3, 10_000), (12_288, 0));
    let p = plan(&[(9000, 1000)], 10_000, &geo, cold);
    let run = Run {
        first_block: 2,
        blocks: 1,
        offset: 8192,
        len: 1808,
    };
    assert_eq!(p.runs, [run]);
}

#[test]
fn scattered_small_extents_on_a_cold_file_make_one_request() {
    let geo = Geometry::default();
    let file_size = 1 << 30;
    // one 1 kB extent per MiB, at a pseudo-random place in it
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let extents: Vec<(u64, usize)> = (0..1024u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((i << 20) + x % ((1 << 20) - 1024), 1024)
        })
        .collect();
    let p = plan(&extents, file_size, &geo, cold);
    assert_eq!(p.runs.len(), 1024);
    assert_eq!(p.requests, [0..1024]);
    assert!(p.runs.iter().all(|r| r.blocks <= 2));
    assert_eq!((p.wait.len(), p.cached), (0, 0));
    // and anywhere in the file, in any order: still one request
    let scattered: Vec<(u64, usize)> = extents
        .iter()
        .map(|&(o, l)| (o * 7919 % (file_size - 1024), l))
        .collect();
    let p = plan(&scattered, file_size, &geo, cold);
    assert!(p.runs.len() > 900, "{} runs", p.runs.len());
    assert_eq!(p.requests, [0..p.runs.len()]);
}

#[test]
fn extents_straddling_blocks_fetch_both() {
    let geo = Geometry::default();
    let p = plan(&[(4000, 200), (12_000, 300)], 1 << 20, &geo, cold);
    // blocks 0-1 and 2-3 are contiguous: one run of four blocks
    let run = Run {
        first_block: 0,
        blocks: 4,
        offset: 0,
        len: 16_384,
    };
    assert_eq!(p.runs, [run]);
    let cached_2 = |b| if b == 2 { Cached } else { Missing };
    let p = plan(&[(4000, 200), (12_000, 300)], 1 << 20, &geo, cached_2);
    let starts: Vec<(u64, u64)> = p.runs.iter().map(|r| (r.first_block, r.blocks)).collect();
    assert_eq!(starts, [(0, 2), (3, 1)]);
    assert_eq!(p.cached, 1);
}

#[test]
fn in_flight_blocks_are_awaited_and_cached_ones_counted() {
    let states = [
        Missing, Missing, InFlight, Cached, Missing, Cached, InFlight, Missing, Missing, Missing,
    ];
    let geo = Geometry::default();
    let p = plan(&[(0, 40_960)], 40_960, &geo, table(&states));
    let runs: Vec<(u64, u64)> = p.runs.iter().map(|r| (r.first_block, r.blocks)).collect();
    // small gaps, but never across a block that is not Missing
    assert_eq!(runs, [(0, 2), (4, 1), (7, 3)]);
    assert_eq!(p.wait, [2, 6]);
    assert_eq!(p.cached, 2);
    assert_eq!(p.requests, [0..3]);
}

#[test]
fn gaps_merge_up_to_io_gap_over_missing_blocks() {
    let geo = Geometry::new(KB4, 1 << 20, 16 << 10).unwrap(); // 4 blocks
    let shape = |p: Plan| {
        p.runs
            .iter()
            .map(|r| (r.first_block, r.blocks))
            .collect::<Vec<_>>()
    };
    let at = |blocks: &[u64]| blocks.iter().map(|b| (b * KB4, 10)).collect::<Vec<_>>();
    assert_eq!(shape(plan(&at(&[0, 5]), 1 << 20, &geo, cold)), [(0, 6)]);
    assert_eq!(
        shape(plan(&at(&[0, 6]), 1 << 20, &geo, cold)),
        [(0, 1), (6, 1)]
    );
    let in_flight_3 = |b| if b == 3 { InFlight } else { Missing };
    assert_eq!(
        shape(plan(&at(&[0, 5]), 1 << 20, &geo, in_flight_3)),
        [(0, 1), (5, 1)]
    );
    assert!(plan(&at(&[0, 5]), 1 << 20, &geo, in_flight_3)
        .wait
        .is_empty());
}

#[test]
fn runs_are_cut_at_io_size() {
    let geo = Geometry::default();
    let file_size = (3 << 20) + 100;
    let p = plan(&[(0, file_size as usize)], file_size, &geo, cold);
    let lens: Vec<usize> = p.runs.iter().map(|r| r.len).collect();
    assert_eq!(lens, [1 << 20, 1 << 20, 1 << 20, 100]);
    assert_eq!(p.requests, [0..4]);
}

#[test]
fn total_limit_splits_requests() {
    // hand-built: 4 MiB blocks break the element limit, so the total binds
    let geo = Geometry {
        block_size: 4 << 20,
        io_size: 4 << 20,
        io_gap: 0,
    };
    let file_size = 600 * (4 << 20);
    let p = plan(&[(0, file_size as usize)], file_size, &geo, cold);
    assert_eq!(p.runs.len(), 600);
    // 511 × (4 MiB + 16) bytes fit under 0x7fffffff, 512 do not
    assert_eq!(p.requests, [0..511, 511..600]);
}

#[test]
fn an_origin_request_never_reaches_2_gib_with_its_headers() {
    // What a stock xrootd 5.5.3 accepts, not what our decoder accepts.
    assert_eq!(MAX_READV_TOTAL, 0x7fff_ffff);
    // hand-built: 1024 runs of 2,097,136 bytes are exactly 2^31 bytes with
    // their headers, one byte more than a stock origin takes
    let element = u64::from(MAX_READV_ELEMENT);
    let geo = Geometry {
        block_size: element,
        io_size: element,
        io_gap: 0,
    };
    let file_size = 1024 * element;
    let p = plan(&[(0, file_size as usize)], file_size, &geo, cold);
    assert_eq!(p.runs.len(), 1024);
    assert_eq!(p.requests, [0..1023, 1023..1024]);
    // the largest client vector read at the default geometry: more than
    // 1024 runs, so two requests, each within the limit
    let geo = Geometry::default();
    let extents: Vec<(u64, usize)> = (0..1024u64)
        .map(|i| (i * element, element as usize))
        .collect();
    let p = plan(&extents, file_size, &geo, cold);
    assert_eq!(p.requests.len(), 2);
    for req in &p.requests {
        let total: u64 = p.runs[req.clone()].iter().map(|r| r.len as u64 + 16).sum();
        assert!(total <= MAX_READV_TOTAL);
    }
}

#[test]
fn nothing_asked_plans_nothing() {
    let geo = Geometry::default();
    assert_eq!(plan(&[], 1 << 20, &geo, cold), Plan::default());
    assert_eq!(plan(&[(100, 0)], 1 << 20, &geo, cold), Plan::default());
    assert_eq!(plan(&[(0, 100)], 0, &geo, cold), Plan::default());
    assert_eq!(
        plan(&[(u64::MAX, usize::MAX)], 1 << 20, &geo, cold),
        Plan::default()
    );
    let zero = Geometry {
        block_size: 0,
        io_size: 0,
        io_gap: 0,
    };
    let p = plan(&[(0, 10)], 10, &zero, cold);
    assert_eq!(p.runs.len(), 10);
    assert!(p.runs.iter().all(|r| r.len == 1));
}
