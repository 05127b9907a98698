#!/usr/bin/env bash
# The Linux aarch64 artifacts of scripts/dist.sh run under Debian's qemu-user (issue 42, L2):
# the CLI archive, the manylinux_2_28 aarch64 wheel and the linux-arm64-gnu npm tarball, each
# used as a host would, on an x86_64 machine. A scale run by hand, not a CI step (a cross build
# takes tens of minutes here, and the emulated runs minutes more).
#
# What runs emulated, all aarch64: Debian 13's own python3.13 and nodejs 20 (their .debs
# unpacked into target/arm64-root, with their libraries; nothing installed for the system), our
# CLI, our wheel's module and our `.node`. Each host loads every skill of samples/skills through
# `skillcache serve` (the aarch64 CLI, started through qemu-aarch64 as its command) and checks
# every file's bytes against the digest the server published, with the language's own SHA-256.
#
# Needs: root, apt (it installs qemu-user; the arm64 .debs come through an apt configuration of
# its own, in target/arm64-apt) and `unshare`.
#
#   bash scripts/dist.sh aarch64-unknown-linux-gnu && bash scripts/dist-qemu-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dist=$repo/target/dist
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
root=$repo/target/arm64-root
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v qemu-aarch64 >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q qemu-user >/dev/null; }
python=$root/usr/bin/python3.13
if [ ! -x "$python" ] || [ ! -x "$root/usr/bin/node" ]; then
  # Debian 13's arm64 packages, through an apt configuration of this run's own (the machine's
  # sources, architectures and package state are left as they are): Node 20 (the package's
  # engines; Debian 12 has 18) and Python 3.13, with every library they need.
  apt_dir=$repo/target/arm64-apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
  echo "deb [arch=arm64 trusted=yes] http://deb.debian.org/debian trixie main" > "$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Dir::State::status=/dev/null
    -o APT::Architecture=arm64 -o APT::Architectures::=arm64)
  apt-get "${apt_opts[@]}" update -q >/dev/null
  pkgs=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances python3.13-minimal libpython3.13-stdlib nodejs \
    | grep -E '^[a-z0-9][a-z0-9.+-]*$' | sort -u)
  # shellcheck disable=SC2086
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download -q $pkgs >/dev/null 2>&1)
  rm -rf "$root" && mkdir -p "$root"
  for deb in "$apt_dir"/debs/*.deb; do dpkg -x "$deb" "$root"; done
fi
# Through the aarch64 loader, with the sysroot's libraries, not `qemu-aarch64 -L`: -L makes `/`
# the sysroot for every path lookup, and the cache's root check (which walks `..` from the
# folder it holds, and compares with paths) then rightly refuses. Debian's node reads some
# builtins from /usr/share/nodejs: the sysroot's are mounted there in a mount namespace of the
# run's own (nothing on the machine changes).
libs=$root/usr/lib/aarch64-linux-gnu
loader=$root/usr/lib/ld-linux-aarch64.so.1
emulated() {
  PYTHONHOME=$root/usr unshare -m --propagation private sh -c \
    'mount -t tmpfs none /usr/share && mkdir /usr/share/nodejs && mount --bind "$0/usr/share/nodejs" /usr/share/nodejs && exec "$@"' \
    "$root" qemu-aarch64 "$loader" --library-path "$libs" "$@"
}
echo "-- emulated: $(emulated "$python" -c 'import platform; print("python", platform.python_version(), platform.machine())'), $(emulated "$root/usr/bin/node" -p '`node ${process.version} ${process.arch}`')"

echo "-- the CLI archive"
mkdir -p "$work/cli"
tar -xzf "$dist/skillcache-cli-$version-aarch64-unknown-linux-gnu.tar.gz" -C "$work/cli" --strip-components 1
file -b "$work/cli/skillcache" | grep -q 'ARM aarch64' || { echo "the archive's skillcache is not an aarch64 ELF" >&2; exit 1; }
emulated "$work/cli/skillcache" --version
# What the hosts start as their server: the aarch64 CLI, through qemu.
serve=(qemu-aarch64 "$loader" --library-path "$libs" "$work/cli/skillcache" serve samples/skills)

echo "-- the wheel, unpacked for the emulated python3.13"
wheel=$(ls "$dist"/skillcache-"$version"-cp310-abi3-manylinux_2_28_aarch64*.whl)
python3 -m zipfile -e "$wheel" "$work/py"
HOME=$work PYTHONPATH=$work/py emulated "$python" - "${serve[@]}" <<'PY'
import asyncio, hashlib, sys, tempfile
import skillcache

async def main(argv):
    with tempfile.TemporaryDirectory() as tmp:
        cache = skillcache.SkillCache(root=f"{tmp}/cache", key_file=f"{tmp}/host.key", approval="not_required")
        cache.connect_stdio("docs", argv, stderr=-3)
        async with cache:
            skills = files = 0
            for item in await cache.list("docs"):
                if isinstance(item, skillcache.Error):
                    continue
                _, loaded = await cache.load_all("docs", item.entry)
                for f in loaded:
                    assert f.verified and "sha256:" + hashlib.sha256(f.bytes).hexdigest() == f.digest, f.uri
                    files += 1
                skills += 1
            assert skills > 0
            print(f"ok: python aarch64, {skills} skills, {files} files verified")
            await cache.purge("docs")

asyncio.run(main(sys.argv[1:]))
PY

echo "-- the npm tarballs, for the emulated node"
mkdir -p "$work/host/node_modules"
tar -xzf "$dist/skillcache-$version.tgz" -C "$work/host/node_modules" && mv "$work/host/node_modules/package" "$work/host/node_modules/skillcache"
tar -xzf "$dist/skillcache-linux-arm64-gnu-$version.tgz" -C "$work/host/node_modules" && mv "$work/host/node_modules/package" "$work/host/node_modules/skillcache-linux-arm64-gnu"
cat > "$work/host/host.mjs" <<'JS'
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SkillCache, SkillcacheError } from 'skillcache';

const tmp = mkdtempSync(`${tmpdir()}/host-`);
const cache = new SkillCache({ root: `${tmp}/cache`, keyFile: `${tmp}/host.key`, approval: 'notRequired' });
cache.connectStdio('docs', process.argv.slice(2), { stderr: 'ignore' });
let skills = 0, files = 0;
for (const item of await cache.list('docs')) {
  if (item instanceof SkillcacheError) continue;
  const [, loaded] = await cache.loadAll('docs', item.entry);
  for (const f of loaded) {
    const digest = 'sha256:' + createHash('sha256').update(f.bytes).digest('hex');
    if (!f.verified || digest !== f.digest) throw new Error(`${f.uri}: ${digest} != ${f.digest}`);
    files++;
  }
  skills++;
}
if (skills === 0) throw new Error('no skill loaded');
await cache.purge('docs');
rmSync(tmp, { recursive: true });
console.log(`ok: node ${process.arch}, ${skills} skills, ${files} files verified`);
JS
(cd "$repo" && HOME=$work emulated "$root/usr/bin/node" "$work/host/host.mjs" "${serve[@]}")
echo "dist qemu test: the aarch64 CLI, wheel and npm tarballs ran under qemu-user"
