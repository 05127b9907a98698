#!/bin/sh
# skillcache beside rmcp alone (issue 41): every row of the issue's table in one run, with the
# ratios. Both sides talk to the same server over stdio (and the servers are compared over
# Streamable HTTP too), one process per run, over the same
# folder of skills (default: the corpus, tests/data/corpus/skills).
#
# - rmcp alone: scripts/rmcp-race/ (its own workspace and target folder, rmcp pinned =3.11.0):
#   `rmcp-peer` lists every skill, reads every file, checks it with SkillResource::verify and
#   keeps nothing; `catalog-server` is rmcp's SkillCatalog of the folder over stdio.
# - skillcache: examples/race_sweep.rs, load_all of every listed skill into an empty root.
#
# The same content on both servers: the top-level folders of DIR whose skill both SkillCatalog
# and `skillcache serve` list (each refuses some the other publishes: docs/interop.md), copied
# into a scratch folder. SkillCatalog still serves 2 files fewer of them (hidden names).
#
# Rows: the first sweep against SkillCatalog and against `skillcache serve`; a later sweep in
# the same process (against SkillCatalog); and SkillCatalog against `skillcache serve` with the
# same rmcp client. Each figure is the median of RUNS processes (default 3), each timed inside
# the process from before it starts the server (the server's start and snapshot are in every
# first sweep, on both sides). Say whether the machine was idle when quoting it.
#
#   sh scripts/rmcp-race.sh [DIR]        RUNS=5 sh scripts/rmcp-race.sh        PROFILE=release sh …
set -eu
cd "$(dirname "$0")/.."
dir=${1:-tests/data/corpus/skills}
runs=${RUNS:-3}
# Both sides in the profile that ships (`dist`: whole-program optimisation; PROFILE=release for a
# quicker look), rmcp's with the same settings.
profile=${PROFILE:-dist}
cargo build --profile "$profile" --quiet --example race_sweep --bin skillcache
CARGO_TARGET_DIR=scripts/rmcp-race/target cargo build --profile "$profile" --quiet --manifest-path scripts/rmcp-race/Cargo.toml
peer=scripts/rmcp-race/target/$profile/rmcp-peer
catalog=scripts/rmcp-race/target/$profile/catalog-server
ours=${CARGO_TARGET_DIR:-target}/$profile/examples/race_sweep
serve=${CARGO_TARGET_DIR:-target}/$profile/skillcache
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The top-level folders both servers publish a skill for.
tops() { "$peer" 0 "$@" 2>/dev/null | sed -n 's|^skill://\([^/]*\)/SKILL.md$|\1|p' | sort; }
tops "$catalog" "$dir" > "$work/catalog.tops"
tops "$serve" serve "$dir" > "$work/serve.tops"
mkdir "$work/served"
for t in $(comm -12 "$work/catalog.tops" "$work/serve.tops"); do cp -R "$dir/$t" "$work/served/"; done
dir=$work/served

# The median of the numbers on stdin.
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$runs"); do
  "$peer" 2 "$catalog" "$dir" 2>/dev/null | sed "s/^/rmcp_catalog /" >> "$work/rows"
  "$peer" 1 "$serve" serve "$dir" 2>/dev/null | sed "s/^/rmcp_serve /" >> "$work/rows"
  "$ours" "$work/root-c$i" 2 "$catalog" "$dir" 2>/dev/null | sed "s/^/ours_catalog /" >> "$work/rows"
  "$ours" "$work/root-s$i" 1 "$serve" serve "$dir" 2>/dev/null | sed "s/^/ours_serve /" >> "$work/rows"
done
# Each server's peak resident memory (VmHWM) over one sweep by the same rmcp client, sampled
# every 5 ms by a wrapper the client starts in the server's place (P3: serve's RSS at most
# SkillCatalog's at the same content).
cat > "$work/rss.sh" <<'SH'
#!/bin/sh
# A background command of a non-interactive shell reads /dev/null unless told otherwise (and an
# explicit `<&0` comes after that): the client's pipe, kept as fd 3, is handed over.
exec 3<&0
"$@" <&3 3<&- &
pid=$!
peak=0
while kill -0 $pid 2>/dev/null; do
  v=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null)
  [ -n "$v" ] && peak=$v
  sleep 0.005
done
echo "$peak" >> "$RSS_OUT"
wait $pid
SH
chmod +x "$work/rss.sh"
for i in $(seq "$runs"); do
  RSS_OUT=$work/rss.catalog "$peer" 1 "$work/rss.sh" "$catalog" "$dir" >/dev/null 2>&1
  RSS_OUT=$work/rss.serve "$peer" 1 "$work/rss.sh" "$serve" serve "$dir" >/dev/null 2>&1
done

# Over Streamable HTTP: both servers started anew for each run, on loopback ports of their own,
# and swept by the same rmcp client (rmcp's reqwest transport); the time is from connecting to
# the last file verified (the servers' start is outside it, unlike stdio's). Their peak RSS is
# read once the sweep is done.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ready() { for _ in $(seq 200); do python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
for i in $(seq "$runs"); do
  pc=$(port); "$catalog" "$dir" --http "127.0.0.1:$pc" 2>/dev/null & cpid=$!
  ps_=$(port); "$serve" serve "$dir" --http "127.0.0.1:$ps_" 2>/dev/null & spid=$!
  ready "$pc" && ready "$ps_"
  "$peer" 1 "http://127.0.0.1:$pc/mcp" 2>/dev/null | sed "s/^/http_catalog /" >> "$work/rows"
  "$peer" 1 "http://127.0.0.1:$ps_/mcp" 2>/dev/null | sed "s/^/http_serve /" >> "$work/rows"
  hwm $cpid >> "$work/rss.http_catalog"; hwm $spid >> "$work/rss.http_serve"
  kill $cpid $spid; wait $cpid $spid 2>/dev/null || true
done

pick() { awk -v k="$1" -v s="sweep=$2" '$1 == k && $2 == s {sub("ms=", "", $NF); print $NF}' "$work/rows" | median; }
counts() { awk -v k="$1" '$1 == k && $2 == "sweep=1" {print $3, $4, $5; exit}' "$work/rows"; }
echo "served: $(wc -l < "$work/catalog.tops") / $(wc -l < "$work/serve.tops") top-level skills of ${1:-tests/data/corpus/skills} (catalog / serve), $(ls "$dir" | wc -l) published by both; $runs runs each, profile $profile; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for k in rmcp_catalog rmcp_serve ours_catalog ours_serve http_catalog http_serve; do echo "$k: $(counts $k)"; done
python3 - "$(pick rmcp_catalog 1)" "$(pick ours_catalog 1)" "$(pick rmcp_serve 1)" "$(pick ours_serve 1)" \
  "$(pick rmcp_catalog 2)" "$(pick ours_catalog 2)" "$(median < "$work/rss.catalog")" "$(median < "$work/rss.serve")" \
  "$(pick http_catalog 1)" "$(pick http_serve 1)" "$(median < "$work/rss.http_catalog")" "$(median < "$work/rss.http_serve")" <<'PY'
import sys
rc, oc, rs, os_, rc2, oc2, mc, ms, hc, hs, hmc, hms = map(float, sys.argv[1:])
print("\n| | rmcp alone | skillcache | skillcache / rmcp |")
print("|---|---|---|---|")
print(f"| first sweep, against rmcp's `SkillCatalog` | {rc:.1f} ms | {oc:.1f} ms | {oc/rc:.2f}x |")
print(f"| first sweep, against `skillcache serve` | {rs:.1f} ms | {os_:.1f} ms | {os_/rs:.2f}x |")
print(f"| a later sweep in the same process (`SkillCatalog`) | {rc2:.1f} ms | {oc2:.1f} ms | {oc2/rc2:.3f}x |")
print(f"| `SkillCatalog` vs `skillcache serve`, same rmcp client | {rc:.1f} ms | {rs:.1f} ms | {rs/rc:.2f}x (serve / catalog) |")
print(f"| peak RSS of the server over a sweep | {mc/1024:.1f} MiB (`SkillCatalog`) | {ms/1024:.1f} MiB (`serve`) | {ms/mc:.2f}x (serve / catalog) |")
print(f"| `SkillCatalog` vs `skillcache serve` over Streamable HTTP, same rmcp client | {hc:.1f} ms | {hs:.1f} ms | {hs/hc:.2f}x (serve / catalog) |")
print(f"| peak RSS of the server over an HTTP sweep | {hmc/1024:.1f} MiB (`SkillCatalog`) | {hms/1024:.1f} MiB (`serve`) | {hms/hmc:.2f}x (serve / catalog) |")
PY
