#!/usr/bin/env bash
# Portability (issue 31): `cargo check` of the library, the CLI, the Python extension and the
# Node addon for macOS (x86_64, aarch64) and Windows (x86_64, GNU) with warnings denied. Check
# only, nothing is linked; its own target folder (target/cross) leaves the main build's artifacts alone.
#
# Installs what it needs: the Rust targets (rustup), zig and cargo-zigbuild pinned in
# scripts/cross-requirements.txt (PyPI, into the git-ignored target/venv-cross) for macOS' C
# parts, and Debian's gcc-mingw-w64-x86-64 for Windows' when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-gnu)
started=$(date +%s)

installed=$(rustup target list --installed)
for t in "${TARGETS[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  apt-get update -q >/dev/null && apt-get install -y -q gcc-mingw-w64-x86-64 >/dev/null
fi
venv=target/venv-cross
# A virtualenv names its interpreter by absolute path: one that was moved or broken is made again.
if ! "$venv/bin/cargo-zigbuild" --version >/dev/null 2>&1 \
    || ! "$venv/bin/python" -m ziglang version >/dev/null 2>&1; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/cross-requirements.txt
fi
export PATH="$PWD/$venv/bin:$PATH"
export RUSTFLAGS="-D warnings"
libnode=$PWD/target/cross/libnode-standin
mkdir -p "$libnode" && : >"$libnode/libnode.dll"
tools=$(( $(date +%s) - started ))

for t in "${TARGETS[@]}"; do
  case "$t" in
    # zig's C compiler for the C parts (SQLite); nothing is linked by a check.
    *-apple-darwin) check=(cargo-zigbuild check) ;;
    *) check=(cargo check) ;;
  esac
  for features in "" "--no-default-features --features mcp"; do
    echo "-- $t: library and CLI ${features:-(default features)}"
    # shellcheck disable=SC2086 # the feature flags are words
    "${check[@]}" -q --target "$t" --target-dir target/cross --lib --bins $features
  done
  # The Python extension: PyO3's abi3 needs no interpreter of the target to check.
  echo "-- $t: the Python extension"
  "${check[@]}" -q --target "$t" --target-dir target/cross -p skillcache-python
  # The Node addon. napi-build looks for Node's libnode.dll to link a windows-gnu addon against
  # and stops when there is none; a check links nothing, so an empty stand-in answers it (a
  # build that links needs Node's real libnode.dll).
  echo "-- $t: the Node addon"
  LIBNODE_PATH="$libnode" "${check[@]}" -q --target "$t" --target-dir target/cross \
    -p skillcache-node
done
echo "cross-check: $(( $(date +%s) - started )) s (tools $tools s)"
