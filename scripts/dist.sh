#!/usr/bin/env bash
# Prebuilt packages (issue 42, L2): what a host installs without a Rust toolchain, into
# target/dist/:
#
# - one abi3 wheel per platform (CPython 3.10+), built by maturin; Linux ones manylinux_2_28
#   through zig (`--zig`), macOS ones through zig too, Windows with the GNU target (mingw);
# - the Node package as npm tarballs in napi-rs's per-platform layout: `skillcache-<platform>`,
#   one per platform holding its `.node` (with `os`, `cpu` and, on Linux, `libc`), and the main
#   `skillcache` listing them as optional dependencies (`napi.targets` in node/package.json);
# - the command line as an archive per platform (`skillcache` and the licences);
# - the Python sdist, and SHA256SUMS over everything.
#
#   bash scripts/dist.sh                              every platform below
#   bash scripts/dist.sh x86_64-unknown-linux-gnu     some of them (what .ci/run builds)
#
# Each artifact that cannot be built is named at the end with the reason, and the script exits 1;
# the others are still built. Tools, pinned: maturin, zig and cargo-zigbuild from
# scripts/dist-requirements.txt (PyPI, into the git-ignored target/venv-dist), @napi-rs/cli from
# node/package-lock.json, the Rust targets by rustup, Debian's mingw for Windows. The build
# happens in target/dist-build (its own folder: other targets and flags than the suite's).
# scripts/dist-install-test.sh then installs the Linux x86_64 artifacts where no cargo or rustc
# is on PATH and runs the READMEs' examples with them; scripts/dist-qemu-test.sh runs the Linux
# aarch64 ones under qemu-user (by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Cargo profile: `dist` (Cargo.toml: whole-program optimisation) for what ships; CI passes
# `release`, the same code built minutes faster.
profile=${DIST_PROFILE:-dist}

ALL=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-gnu)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${ALL[@]}"); fi
out=$PWD/target/dist
build=$PWD/target/dist-build
started=$(date +%s)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

# --- tools -------------------------------------------------------------------------------
venv=target/venv-dist
if ! "$venv/bin/maturin" --version >/dev/null 2>&1 || ! "$venv/bin/cargo-zigbuild" --version >/dev/null 2>&1 \
    || ! cmp -s scripts/dist-requirements.txt "$venv/requirements.txt"; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/dist-requirements.txt
  cp scripts/dist-requirements.txt "$venv/requirements.txt"
fi
export PATH="$PWD/$venv/bin:$PATH"
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
if [[ " ${targets[*]} " == *windows-gnu* ]] && ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  apt-get update -q >/dev/null && apt-get install -y -q gcc-mingw-w64-x86-64 >/dev/null
fi
[ -d node/node_modules/@napi-rs/cli ] || (cd node && npm ci --no-audit --no-fund --silent)
napi=(node "$PWD/node/node_modules/@napi-rs/cli/dist/cli.js")

rm -rf "$out" && mkdir -p "$out"
failed=()

# napi-rs's name for a Rust target: the suffix of the per-platform package and of its `.node`.
platform() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-apple-darwin) echo darwin-x64 ;;
    aarch64-apple-darwin) echo darwin-arm64 ;;
    # Built with mingw, published as the platform official Node for Windows loads (napi-rs's
    # loader takes `-gnu` only in a Node built with mingw, whose `shlib_suffix` is `dll.a`): the
    # addon calls nothing of node.exe's C++ side, and looks N-API up when it loads. It runs in
    # official node.exe 20 (under Wine: docs/cli.md).
    x86_64-pc-windows-gnu) echo win32-x64-msvc ;;
    *) return 1 ;;
  esac
}

# How cargo builds for a target: zig links Linux (against glibc 2.28, the manylinux_2_28 floor)
# and macOS; mingw links Windows.
cargo_for() {
  case "$1" in
    *-linux-gnu) echo "cargo-zigbuild build --target $1.2.28" ;;
    *-apple-darwin) echo "cargo-zigbuild build --target $1" ;;
    *) echo "cargo build --target $1" ;;
  esac
}

# Runs "$@" with its output in target/dist-build/logs/NAME.log; on failure, records NAME with the
# log's last lines, and goes on.
attempt() {
  local name=$1; shift
  mkdir -p "$build/logs"
  echo "-- $name"
  if "$@" >"$build/logs/$name.log" 2>&1; then return 0; fi
  failed+=("$name: $(grep -E 'error|Error' "$build/logs/$name.log" | tail -n 3 | tr '\n' ' ' | cut -c1-400) (log: target/dist-build/logs/$name.log)")
  return 1
}

wheel() {
  local t=$1 extra=()
  case "$t" in
    *-linux-gnu) extra=(--zig --compatibility manylinux_2_28) ;;
    *-apple-darwin) extra=(--zig) ;;
  esac
  maturin build --profile "$profile" -m python/Cargo.toml --target "$t" "${extra[@]}" -o "$out" --target-dir "$build"
}

cli() {
  local t=$1 exe=skillcache name
  [[ "$t" == *windows* ]] && exe=skillcache.exe
  # shellcheck disable=SC2046
  CARGO_TARGET_DIR=$build $(cargo_for "$t") --profile "$profile" --locked -p skillcache-cli
  name=skillcache-cli-$version-$t
  rm -rf "$build/$name" && mkdir -p "$build/$name"
  cp "$build/$t/$profile/$exe" README.md LICENSE-MIT LICENSE-APACHE "$build/$name/"
  tar -C "$build" -czf "$out/$name.tar.gz" "$name"
}

addon() {
  local t=$1 p lib
  p=$(platform "$t")
  case "$t" in
    *-linux-gnu) lib=libskillcache_node.so ;;
    *-apple-darwin) lib=libskillcache_node.dylib ;;
    *windows*) lib=skillcache_node.dll ;;
  esac
  if [[ "$t" == *windows-gnu ]]; then
    # napi-build insists on a `libnode.dll` to link the GNU target against, and Node for Windows
    # ships none (node.exe exports N-API itself). The addon looks every N-API function up in the
    # loading process instead (`dyn-symbols`, node/Cargo.toml), so an empty import library, and
    # the file napi-build looks for beside it, satisfy the link: the `.node` imports nothing of
    # Node's (scripts/dist-check.py shows its imports are the system's).
    mkdir -p "$build/libnode"
    # (Debian's mingw names its `ar` by the target; Chocolatey's, on a Windows runner, does not.)
    rm -f "$build/libnode/libnode.dll.a"
    "$(command -v x86_64-w64-mingw32-ar || command -v ar)" rcs "$build/libnode/libnode.dll.a"
    : > "$build/libnode/libnode.dll"
    export LIBNODE_PATH=$build/libnode
  fi
  # shellcheck disable=SC2046
  CARGO_TARGET_DIR=$build $(cargo_for "$t") --profile "$profile" --locked -p skillcache-node
  cp "$build/$t/$profile/$lib" "$build/node-main/npm/$p/skillcache.$p.node"
  (cd "$build/node-main/npm/$p" && npm pack --silent --pack-destination "$out" >/dev/null)
}

# The Node package's staging copy: its files without any `.node`, and napi-rs's per-platform
# folders (`napi create-npm-dirs` from `napi.targets`).
rm -rf "$build/node-main"
mkdir -p "$build/node-main"
(cd node && cp package.json README.md index.js index.mjs index.d.ts errors.js errors.d.ts client.js client.d.ts \
  skillfile.js skillfile.d.ts native.js native.d.ts reports.d.ts "$build/node-main/")
cp LICENSE-MIT LICENSE-APACHE "$build/node-main/"
# (napi-rs keeps them inside the package's folder; the main package's `files` leaves them out.)
"${napi[@]}" create-npm-dirs --cwd "$build/node-main" --npm-dir npm | grep -v created || true
# (It gives every platform's package the `libc` of the GNU target's name, Windows' too; npm
# reads `libc` on Linux only, where it must say glibc: left there, dropped elsewhere.)
node -e '
  const fs = require("fs");
  for (const d of fs.readdirSync(process.argv[1])) {
    const f = `${process.argv[1]}/${d}/package.json`, pkg = JSON.parse(fs.readFileSync(f, "utf8"));
    if (!(pkg.os || []).includes("linux")) { delete pkg.libc; fs.writeFileSync(f, JSON.stringify(pkg, null, 2) + "\n"); }
  }
' "$build/node-main/npm"

for t in "${targets[@]}"; do
  platform "$t" >/dev/null || { failed+=("$t: not a platform this script knows"); continue; }
  attempt "wheel-$t" wheel "$t" || true
  attempt "cli-$t" cli "$t" || true
  attempt "node-$t" addon "$t" || true
done

# The main package lists every platform package built, at this version.
built_platforms=$(cd "$out" && ls skillcache-*-"$version".tgz 2>/dev/null | sed "s/^skillcache-\(.*\)-$version\.tgz$/\1/" || true)
node -e '
  const fs = require("fs");
  const [dir, version, ...platforms] = process.argv.slice(1);
  const pkg = JSON.parse(fs.readFileSync(dir + "/package.json", "utf8"));
  pkg.optionalDependencies = Object.fromEntries(platforms.map((p) => ["skillcache-" + p, version]));
  pkg.files = pkg.files.filter((f) => f !== "*.node").concat(["LICENSE-MIT", "LICENSE-APACHE"]);
  delete pkg.devDependencies; delete pkg.scripts; delete pkg.overrides;
  fs.writeFileSync(dir + "/package.json", JSON.stringify(pkg, null, 2) + "\n");
' "$build/node-main" "$version" $built_platforms
attempt node-main sh -c "cd '$build/node-main' && npm pack --silent --pack-destination '$out' >/dev/null" || true
attempt sdist maturin sdist -m python/Cargo.toml -o "$out" || true

# Every binary of the format and architecture its name promises, exporting its loader's entry
# point (what can be checked here of the macOS and Windows ones): scripts/dist-check.py.
tools() { command -v file >/dev/null && command -v llvm-nm >/dev/null && command -v llvm-readobj >/dev/null; }
tools || { apt-get update -q >/dev/null && apt-get install -y -q file llvm >/dev/null; } || true
if tools; then
  attempt check python3 scripts/dist-check.py "$out" && tail -n 1 "$build/logs/check.log" || true
else
  echo "-- check: not run (no \`file\` or llvm tools, and apt could not install them)"
fi

(cd "$out" && sha256sum -- * > SHA256SUMS)
echo
echo "target/dist ($(( $(date +%s) - started )) s):"
(cd "$out" && ls -l --block-size=K | tail -n +2 | awk '{print "  " $5 "\t" $9}')
if [ ${#failed[@]} -gt 0 ]; then
  echo
  echo "not built:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
