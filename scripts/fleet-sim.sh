#!/usr/bin/env bash
# The fleet simulation of issue 14: HOSTS (default 6) cold host processes load every skill of the
# corpus at once from one counting MCP server, without and then with a shared L2 on a real
# S3-compatible server (moto, from the pinned virtualenv target/venv-moto). Prints the table the
# README shows. Usage: scripts/fleet-sim.sh [CORPUS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-tests/data/corpus/skills}
hosts=${HOSTS:-6}
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
target/debug/examples/fleet "$corpus" s3://fleet/sim "$hosts"
