#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECONDS (default 10), starting
# from the committed seeds (fuzz/seeds/<target>/, made from the golden
# vectors). Used by CI so the targets keep building; run longer by hand:
#   cargo +nightly fuzz run <target> fuzz/seeds/<target> -- -max_total_time=600
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-10}
targets=$(ls fuzz_targets | sed 's/\.rs$//')
cargo +nightly fuzz build
for t in $targets; do
  work=$(mktemp -d)
  [ -d "seeds/$t" ] && cp -r "seeds/$t/." "$work/"
  echo "-- $t (${secs}s)"
  status=0
  cargo +nightly fuzz run "$t" "$work" -- -max_total_time="$secs" -rss_limit_mb=2048 \
    -print_final_stats=1 >"$work.log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|^Done" "$work.log" || true
  if [ "$status" != 0 ]; then
    tail -40 "$work.log" >&2
    echo "fuzz target $t failed" >&2
    exit 1
  fi
  rm -rf "$work" "$work.log"
done
