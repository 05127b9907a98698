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

# Two feature sets a target, each checked once (a check of every dependency for a new target
# and feature set is most of this step's cost): the library, the command line (cli/, which asks
# the library for `mcp` and `serve`) and the Python extension (which links the command line),
# their features unified; and the Node addon, which asks for the library with `mcp` alone, the
# library's default features: the set a Rust host builds. aarch64 macOS takes the platform
# layer's same modules as x86_64 macOS (only the C parts differ by architecture), so one check
# of every crate, their features unified, covers it.
for t in "${TARGETS[@]}"; do
  case "$t" in
    # zig's C compiler for the C parts (SQLite); nothing is linked by a check.
    *-apple-darwin) check=(cargo-zigbuild check) ;;
    *) check=(cargo check) ;;
  esac
  on=(-q --target "$t" --target-dir target/cross)
  # napi-build looks for Node's libnode.dll to link a windows-gnu addon against and stops when
  # there is none; a check links nothing, so an empty stand-in answers it (a build that links
  # needs Node's real libnode.dll). PyO3's abi3 needs no interpreter of the target to check.
  if [ "$t" = aarch64-apple-darwin ]; then
    echo "-- $t: library, CLI, Python extension and Node addon (features unified)"
    LIBNODE_PATH="$libnode" "${check[@]}" "${on[@]}" -p skillcache -p skillcache-cli \
      -p skillcache-python -p skillcache-node --lib --bins
    continue
  fi
  echo "-- $t: library, CLI and Python extension (features unified: mcp, serve)"
  "${check[@]}" "${on[@]}" -p skillcache -p skillcache-cli -p skillcache-python --lib --bins
  echo "-- $t: the Node addon, and the library at its default features (mcp)"
  LIBNODE_PATH="$libnode" "${check[@]}" "${on[@]}" -p skillcache-node
done
echo "cross-check: $(( $(date +%s) - started )) s (tools $tools s)"
