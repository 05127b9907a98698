#!/usr/bin/env bash
# The Linux x86_64 artifacts of scripts/dist.sh installed as a host without Rust would (issue 42,
# L2): each into a fresh place, on a PATH that holds no cargo or rustc, then the READMEs'
# examples run with them as written.
#
# - Python: the manylinux wheel (with its `mcp` extra, pinned by interop/requirements.txt) into
#   a fresh virtualenv; python/tests/run_examples.py runs every ```python block of README.md and
#   python/README.md with that interpreter, only its bin folder on PATH (the `skillcache` the
#   examples start is the wheel's console script).
# - Node: the main tarball and the linux-x64-gnu one, with @modelcontextprotocol/client (the
#   version node/package-lock.json pins), into a fresh host folder; every ```js block of README.md
#   and node/README.md that imports the package runs there, with the CLI archive's `skillcache`
#   on PATH.
#
#   bash scripts/dist.sh x86_64-unknown-linux-gnu && bash scripts/dist-install-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dist=$repo/target/dist
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Nothing of Rust on the PATH the installs and examples see: the system's folders and Node's.
bare=$(dirname "$(command -v node)"):/usr/bin:/bin
if PATH=$bare command -v cargo >/dev/null || PATH=$bare command -v rustc >/dev/null; then
  echo "cargo or rustc is on $bare: the test would not show an install without Rust" >&2
  exit 1
fi

echo "-- python: the wheel into a fresh virtualenv"
wheel=$(ls "$dist"/skillcache-"$version"-cp310-abi3-manylinux_2_28_x86_64*.whl)
/usr/bin/python3 -m venv "$work/venv"
PATH=$bare PIP_CONSTRAINT=interop/requirements.txt "$work/venv/bin/python" -m pip install -q \
  --disable-pip-version-check --only-binary :all: "$wheel[mcp]"
PATH=$bare "$work/venv/bin/python" python/tests/run_examples.py

echo "-- node: the tarballs into a fresh host folder"
mkdir -p "$work/host" "$work/cli"
tar -xzf "$dist/skillcache-cli-$version-x86_64-unknown-linux-gnu.tar.gz" -C "$work/cli" --strip-components 1
client=$(node -p "require('./node/package-lock.json').packages['node_modules/@modelcontextprotocol/client'].version")
(cd "$work/host" && echo '{"name": "host", "private": true, "type": "module"}' > package.json \
  && PATH=$bare npm install --no-audit --no-fund --silent \
    "$dist/skillcache-linux-x64-gnu-$version.tgz" "$dist/skillcache-$version.tgz" \
    "@modelcontextprotocol/client@$client")
test -f "$work/host/node_modules/skillcache-linux-x64-gnu/skillcache.linux-x64-gnu.node"
test ! -e "$work/host/node_modules/skillcache/skillcache.linux-x64-gnu.node"
node - "$repo" "$work" "$bare" <<'JS'
const { readFileSync, writeFileSync, mkdtempSync, readdirSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');
const [repo, work, bare] = process.argv.slice(2);
const blocks = (file) => [...readFileSync(join(repo, file), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)]
  .map((m) => m[1]).filter((code) => code.includes("from 'skillcache'"));
const all = [...blocks('README.md'), ...blocks('node/README.md')];
if (all.length < 3) throw new Error(`only ${all.length} Node examples found`);
let failed = 0;
all.forEach((code, i) => {
  const file = join(work, 'host', `example${i + 1}.mjs`);
  writeFileSync(file, code);
  const tmp = mkdtempSync(join(work, 'tmp-'));
  const out = spawnSync(process.execPath, [file], {
    cwd: repo, encoding: 'utf8', timeout: 100_000,
    env: { HOME: tmp, TMPDIR: tmp, PATH: `${join(work, 'cli')}:${bare}` },
  });
  const ok = out.status === 0 && out.stdout.trim() !== '' && readdirSync(tmp).length === 0;
  console.log(`${ok ? 'ok' : 'FAILED'}: Node example ${i + 1}`);
  if (!ok) { failed++; console.log(out.stdout, out.stderr, out.error ?? ''); }
});
process.exit(failed ? 1 : 0);
JS
echo "dist install test: the wheel and the npm tarballs pass the READMEs' examples without Rust"
