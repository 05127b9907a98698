#!/usr/bin/env bash
# Cost curves for one host (issue 30, G1), run by hand: a root filled through the public API at
# each size, then open, catalog, a warm hit, a cold load, verify, gc and purge measured, and the
# bytes on disk per file. Release build; each size's root is made in DIR and removed after it.
#
#   scripts/scale.sh [SIZES] [DIR] [OPTIONS]   # SIZES default 1000,10000,100000,1000000;
#                                               # DIR a scratch folder; OPTIONS go to the example
#   scripts/scale.sh 1000,10000 /tmp/scale --file-size 256 --keep
#
# 1 M files of 4 KiB need about 5 GiB free in DIR and a few minutes per size on two cores.
# The CSV lands in target/scale.csv; the table is printed (docs/performance.md, "Scale").
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-1000,10000,100000,1000000}
dir=${2:-$(mktemp -d)}
shift $(( $# < 2 ? $# : 2 ))
cargo build --release --example scale -q
target/release/examples/scale --files "$sizes" --dir "$dir" --csv target/scale.csv "$@"
