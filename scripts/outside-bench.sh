#!/bin/sh
# The bindings' speed as a host outside this repository sees it (issue 39, B8): the Node package
# installed from its `npm pack` tarball and the Python wheel installed in a fresh virtualenv,
# each in a temporary folder outside the clone, reading one 4 KiB file warm beside its language's
# floor in the same process (scripts/outside-bench/host.mjs, host.py). Build the release
# artifacts first:
#
#   node node/scripts/build-workspace.mjs --release
#   maturin build --release -m python/Cargo.toml -o target/wheels-release
#   cargo build --bin skillcache
#   sh scripts/outside-bench.sh [RUNS]
#
# Prints one line per run and language: the floor, each row in µs and its ratio to the floor.
set -eu
clone=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
server=$clone/target/debug/skillcache
[ -x "$server" ] || server=$clone/target/release/skillcache
work=$(mktemp -d "${TMPDIR:-/tmp}/outside-bench.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

(cd "$clone/node" && npm pack --silent --pack-destination "$work" > /dev/null)
mkdir "$work/node-host"
printf '{"name":"outside-host","private":true,"type":"module"}\n' > "$work/node-host/package.json"
(cd "$work/node-host" && npm install --silent --no-audit --no-fund "$work"/skillcache-*.tgz)
cp "$clone/scripts/outside-bench/host.mjs" "$work/node-host/"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$clone"/target/wheels-release/skillcache-*.whl
cp "$clone/scripts/outside-bench/host.py" "$work/"

echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  echo "node   $(cd "$work/node-host" && node host.mjs "$server")"
  echo "python $(cd "$work" && venv/bin/python host.py "$server")"
done
