#!/usr/bin/env bash
# The fleet simulation (issue 14; issue 30's G2 at a hundred hosts): N cold host processes start at
# once against one long-lived counting MCP server and one shared L2 on a real S3-compatible server
# (moto, from the pinned virtualenv target/venv-moto), load every skill of a public and a private
# origin, and then a new host's cold start is measured from L2 and from the server alone.
# Prints the tables docs/fleet.md and docs/performance.md show.
#
# Usage: scripts/fleet-sim.sh [fleet options]     (see examples/fleet.rs)
#   scripts/fleet-sim.sh --hosts 100                         # a synthetic corpus, 20 skills x 6 files
#   scripts/fleet-sim.sh --hosts 6 --corpus tests/data/corpus/skills --baseline
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv-moto
if [ ! -x "$venv/bin/moto_server" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r scripts/moto-requirements.txt
fi
cargo build -q --features l2 --example fleet
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
# moto always stops, whatever happens below.
trap 'kill "$moto" 2>/dev/null; wait "$moto" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$port/" >/dev/null && break
  sleep 0.1
done
curl -sf -X PUT "http://127.0.0.1:$port/fleet" >/dev/null
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
target/debug/examples/fleet "$@" s3://fleet/sim
