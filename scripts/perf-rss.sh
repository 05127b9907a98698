#!/bin/sh
# Peak memory of the whole-host warm start and of the 16 MiB hits (issue 12), each case in a
# process of its own (examples/perf_probe.rs prints its own VmHWM). Usage: sh scripts/perf-rss.sh
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --example perf_probe
probe=target/release/examples/perf_probe
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
"$probe" populate-corpus "$work/corpus"
"$probe" populate-16 "$work/big"
# Let the change times settle, so a Guaranteed hit can confirm its evidence (R-H4).
sleep 1
# Three of each, alternating: the first process after populating also pays cold caches.
for _ in 1 2 3; do
  "$probe" warm-start "$work/corpus" 67108864
  "$probe" warm-start "$work/corpus" 0
done
"$probe" hit-16 "$work/big" rehash 0
"$probe" hit-16 "$work/big" guaranteed 0
"$probe" hit-16 "$work/big" rehash 67108864
"$probe" hit-16 "$work/big" guaranteed 67108864
