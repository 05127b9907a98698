// Benchmarks of the Node package: what a Node host pays for a hit, and a cold sweep.
//
// 1. Warm hits of a 4 KiB file against Node's own floor, `fs.readFileSync(p)` +
//    `crypto.createHash('sha256').update(…).digest('hex')` of the same file, measured in the same
//    process and event loop, in interleaved sweeps (the median of each row). The rows and their
//    targets: `await skill.read(…)` then `.bytes` from the memory tier (≤ 1.0× the floor) and
//    re-hashed from disk under `Rehash` (`memoryTier: 0`, ≤ 1.5×); beside them, for reference,
//    the same under `Guaranteed` and a warm `await cache.load(…)`. A row where more than one
//    call in a thousand went to the runtime (`_hops()`) is refused: it measured hops, not hits.
// 2. A cold sweep of the corpus (tests/data/corpus/skills, or SKILLCACHE_CORPUS) from the official
//    TS server over Streamable HTTP, as whole processes timed by the wall clock: this package
//    (`list`, then `loadAll` of every skill on a fresh root) beside the official TS SDK's
//    `SkillsClient` (interop/ts-sweep.mjs), interleaved runs, medians.
//
//    node node/bench/bench.mjs [--runs N] [--reads N] [--sweeps N] [--warm-only]
//
//    3,000 calls a sweep and the median of 5 sweeps by default: what a host script outside the
//    repository measures the same way (docs/performance.md says how it was run).
//
// Build the addon in release first (`node node/scripts/build-workspace.mjs --release`, which
// writes the release addon where `npm run build` writes it), or the numbers are a debug build's;
// `cargo build --bin skillcache` (or `--release`) for the server of part 1; `npm ci` in node/ and
// interop/.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import skillcache from 'skillcache';

const { SkillCache, SkillcacheError, _hops } = skillcache;
const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const interop = join(repo, 'interop');
// The clone's own copy of the corpus, as scripts/ts-compare.sh uses: a clone has nothing beside it.
const corpus = process.env.SKILLCACHE_CORPUS ?? join(repo, 'tests', 'data', 'corpus', 'skills');
const READ = 'data/4k.bin';
const SKILL_MD = '---\nname: bench-notes\ndescription: A skill with one 4 KiB file to read warm.\n---\nRead data/4k.bin.\n';
// Each row's ratio to the floor; the rows without one are shown for reference.
const TARGETS = { memory: 1.0, rehash: 1.5 };
const LABELS = {
  floor: "the floor: `fs.readFileSync` + `crypto.createHash('sha256')`",
  memory: '`await skill.read(…)`, then `.bytes`: memory tier',
  rehash: 'the same, `Rehash`, from disk (`memoryTier: 0`)',
  guaranteed: 'the same, `Guaranteed`, from disk (`memoryTier: 0`)',
  load: 'warm `await cache.load(…)`, approval not required',
};

function serverBinary() {
  for (const profile of ['release', 'debug']) {
    const p = join(repo, 'target', profile, 'skillcache');
    if (existsSync(p)) return p;
  }
  throw new Error('target/{release,debug}/skillcache is missing: cargo build --bin skillcache');
}

function writeBenchSkill(root) {
  const skill = join(root, 'skills', 'bench-notes');
  mkdirSync(join(skill, 'data'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), SKILL_MD);
  writeFileSync(join(skill, READ), randomBytes(4096));
  return join(root, 'skills');
}

/** A cache over `skillcache serve`, the 4 KiB file fetched and read back a few times: every call
 * after this is warm. Approval is not required: a warm approval is answered from the index's
 * memo, which the access times hits write back send to the index once. */
async function openWarm(skills, dir, options) {
  const cache = new SkillCache({ root: join(dir, 'root'), keyFile: join(dir, 'host.key'), approval: 'notRequired', ...options });
  // `serve` takes only its own options (it keeps no cache of its own).
  cache.connectStdio('bench', [serverBinary(), 'serve', skills], { stderr: 'ignore' });
  const { entry } = await cache.entry('bench', 'skill://bench-notes/SKILL.md');
  const skill = await cache.load('bench', entry);
  for (let i = 0; i < 4; i += 1) {
    await cache.load('bench', entry);
    await skill.read(READ);
  }
  return { cache, entry, skill };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timedLoop(n, call) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i += 1) await call();
  return Number(process.hrtime.bigint() - start) / 1e3 / n;
}

async function warm(reads, sweeps) {
  const tmp = mkdtempSync(join(tmpdir(), 'skillcache-bench-'));
  try {
    const skills = writeBenchSkill(tmp);
    const data = join(skills, 'bench-notes', READ);
    const memory = await openWarm(skills, join(tmp, 'memory'), { memoryTier: 64 << 20 });
    const rehash = await openWarm(skills, join(tmp, 'rehash'), { memoryTier: 0 });
    const guaranteed = await openWarm(skills, join(tmp, 'guaranteed'), { memoryTier: 0, isolation: 'guaranteed' });
    const read = (w) => async () => (await w.skill.read(READ)).bytes;
    const calls = {
      floor: async () => createHash('sha256').update(readFileSync(data)).digest('hex'),
      memory: read(memory),
      rehash: read(rehash),
      guaranteed: read(guaranteed),
      load: () => memory.cache.load('bench', memory.entry),
    };
    const rows = Object.fromEntries(Object.keys(calls).map((k) => [k, []]));
    const hops = Object.fromEntries(Object.keys(calls).map((k) => [k, 0]));
    for (let s = 0; s < sweeps; s += 1) {
      for (const [key, call] of Object.entries(calls)) {
        const before = _hops();
        rows[key].push(await timedLoop(reads, call));
        hops[key] += _hops() - before;
      }
    }
    for (const [key, n] of Object.entries(hops)) {
      if (key === 'floor') continue;
      console.log(`${key}: ${n} of ${reads * sweeps} calls went to the runtime`);
      if (n > (reads * sweeps) / 1000) throw new Error(`${key}: warm calls went to the runtime: the row measured hops, not hits`);
    }
    const us = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)]));
    console.log(`\nwarm 4 KiB hits from Node, one process and one event loop, ${reads} calls a sweep, median of ${sweeps} sweeps (µs per call)\n`);
    console.log('| call | Node | / floor | target |');
    console.log('|---|---|---|---|');
    for (const [key, label] of Object.entries(LABELS)) {
      const ratio = us[key] / us.floor;
      const target = TARGETS[key];
      const verdict = target === undefined ? '' : `≤ ${target}×: **${ratio <= target ? 'met' : 'not met'}**`;
      console.log(`| ${label} | ${us[key].toFixed(2)} | ${ratio.toFixed(2)}× | ${verdict} |`);
    }
  } finally {
    writable(tmp);
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Cache roots are read-only by design; a temporary one is made writable to be removed. */
function writable(dir) {
  chmodSync(dir, 0o700);
  for (const d of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!d.isSymbolicLink()) chmodSync(join(d.parentPath ?? d.path, d.name), 0o700);
  }
}

/** One cold sweep, in this process: printed as ts-sweep.mjs prints its own. */
async function sweepOnce(url, root) {
  const start = performance.now();
  const cache = new SkillCache({ root: join(root, 'root'), keyFile: join(root, 'host.key'), approval: 'notRequired' });
  cache.connectHttp('ts-server', url);
  let skills = 0;
  let files = 0;
  let bytes = 0;
  for (const item of await cache.list('ts-server')) {
    if (item instanceof SkillcacheError) continue; // refused entries are left out, as the TS client's skipInvalid does
    const [, loaded] = await cache.loadAll('ts-server', item.entry);
    for (const f of loaded) {
      if (!f.verified) throw new Error(`unverified: ${f.uri}`);
      files += 1;
      bytes += f.size;
    }
    skills += 1;
  }
  console.log(`skills=${skills} files=${files} bytes=${bytes} ms=${(performance.now() - start).toFixed(1)}`);
}

function timed(argv) {
  const start = performance.now();
  const out = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${argv.join(' ')} failed:\n${out.stderr}`);
  return [performance.now() - start, out.stdout.trim().split('\n').at(-1)];
}

async function sweep(runs) {
  if (!existsSync(join(interop, 'node_modules', '@modelcontextprotocol', 'client'))) {
    spawnSync('npm', ['ci', '--silent'], { cwd: interop, stdio: 'inherit' });
  }
  const server = spawn('node', [join(interop, 'ts-http-server.mjs'), corpus, '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const url = await new Promise((resolve, reject) => {
      let seen = '';
      server.stdout.on('data', (chunk) => {
        seen += chunk;
        const m = seen.match(/listening (\S+)/);
        if (m) resolve(m[1]);
      });
      server.on('exit', (code) => reject(new Error(`the TS server exited (${code})`)));
    });
    const rows = { ts_client: [], node_cold: [] };
    for (let i = 0; i < runs; i += 1) {
      let [wall, line] = timed(['node', join(interop, 'ts-sweep.mjs'), url]);
      rows.ts_client.push(wall);
      console.log(`ts_client wall=${wall.toFixed(0)} ms  ${line}`);
      const root = mkdtempSync(join(tmpdir(), 'skillcache-sweep-'));
      [wall, line] = timed(['node', fileURLToPath(import.meta.url), '--sweep-once', url, root]);
      rows.node_cold.push(wall);
      console.log(`node_cold wall=${wall.toFixed(0)} ms  ${line}`);
      writable(root);
      rmSync(root, { recursive: true, force: true });
    }
    const ts = median(rows.ts_client);
    console.log(`\ncold sweep of the corpus from the TS server over HTTP, ${runs} runs (whole process)\n`);
    console.log('| client | wall, median | / TS client | target |');
    console.log('|---|---|---|---|');
    for (const [label, walls] of Object.entries(rows)) {
      const m = median(walls);
      const verdict = label === 'node_cold' ? `≤ 0.5×: **${m / ts <= 0.5 ? 'met' : 'not met'}**` : '';
      console.log(`| ${label} | ${m.toFixed(0)} ms | ${(m / ts).toFixed(2)}× | ${verdict} |`);
    }
  } finally {
    server.kill();
  }
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '3' },
    reads: { type: 'string', default: '3000' },
    sweeps: { type: 'string', default: '5' },
    'sweep-once': { type: 'boolean', default: false },
    'warm-only': { type: 'boolean', default: false },
  },
});
if (values['sweep-once']) {
  await sweepOnce(positionals[0], positionals[1]);
} else {
  await warm(Number(values.reads), Number(values.sweeps));
  if (!values['warm-only']) await sweep(Number(values.runs));
}
// The caches' servers are children of this process: they end with it.
process.exit(0);
