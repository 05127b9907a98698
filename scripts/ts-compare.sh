#!/bin/sh
# skillcache against the official TypeScript SDK 2.4.0 `SkillsClient` (issue 12): each sweeps
# every skill and every file of the corpus from the official TS server
# (@modelcontextprotocol/server 2.4.0) over Streamable HTTP, as a whole process, measured with
# GNU time (wall clock and peak RSS). Cold: skillcache on a fresh root (durable: every blob
# synced); warm: the same root again. The TS client keeps nothing between processes, so each of
# its runs is cold. The floor (`sweep --bare`) sends the same requests with the same concurrency
# through the same transport and keeps nothing: cold / floor is what verifying and keeping cost.
# RUNS (default 3) runs of each; the script prints every run, then medians.
# Run it on an idle machine, and not within minutes of deleting many files on the same
# filesystem: ext4 without a journal (this machine's root) will not reuse an inode freed in the
# last 60 s (360 s while its table block is dirty), and every file created meanwhile scans past
# each such inode, which alone made cold runs 1.3-1.5x slower. Nothing is deleted until the end.
# Usage: sh scripts/ts-compare.sh   (needs node/npm; installs interop/ with `npm ci` if missing)
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
corpus=${SKILLCACHE_CORPUS:-tests/data/corpus/skills}
[ -d interop/node_modules/@modelcontextprotocol/client ] || (cd interop && npm ci --silent)
cargo build --release --quiet --example sweep
work=$(mktemp -d)
node interop/ts-http-server.mjs "$corpus" 0 >"$work/server.out" 2>"$work/server.err" &
server=$!
trap 'kill $server 2>/dev/null; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do grep -q listening "$work/server.out" && break; sleep 0.2; done
url=$(sed -n 's/^listening //p' "$work/server.out")
[ -n "$url" ] || { echo "the TS server did not start" >&2; exit 1; }
echo "server: $url"

measure() { # label, command…
  label=$1; shift
  out=$(/usr/bin/time -f "wall_s=%e peak_kib=%M" "$@" 2>&1 | tr '\n' ' ')
  echo "$label $out" | tee -a "$work/results"
}
for i in $(seq "$runs"); do
  measure ts_client node interop/ts-sweep.mjs "$url"
  measure bare_floor target/release/examples/sweep --bare "$url"
  measure skillcache_cold target/release/examples/sweep "$url" "$work/root-$i"
  measure skillcache_warm target/release/examples/sweep "$url" "$work/root-$i"
done
python3 - "$work/results" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label = line.split()[0]
    ms = float(re.search(r"ms=([\d.]+)", line).group(1))
    wall = float(re.search(r"wall_s=([\d.]+)", line).group(1)) * 1000
    kib = int(re.search(r"peak_kib=(\d+)", line).group(1))
    rows.setdefault(label, []).append((wall, ms, kib))
med = {k: (statistics.median(w for w, _, _ in v), statistics.median(m for _, m, _ in v),
           statistics.median(k for _, _, k in v)) for k, v in rows.items()}
ts = med["ts_client"]
floor = med["bare_floor"]
print("\n| sweep (whole process) | wall, median | in-process | peak RSS | wall / TS client | in-process / floor |")
print("|---|---|---|---|---|---|")
for k in ["ts_client", "bare_floor", "skillcache_cold", "skillcache_warm"]:
    w, m, kib = med[k]
    print(f"| {k} | {w:.0f} ms | {m:.0f} ms | {kib / 1024:.0f} MiB | {w / ts[0]:.3f}× | {m / floor[1]:.2f}× |")
PY
