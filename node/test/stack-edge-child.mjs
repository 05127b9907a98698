// Run by stack-edge.test.mjs in a process of its own: reads made at the very edge of the stack
// (a host's deep recursion), swept a frame at a time, each right when the read would be paced to
// the next turn of the event loop. Whatever the stack's limit breaks on the way (a `RangeError`
// for that call), every later read must still settle. Prints one JSON line.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const sc = require('skillcache');
const sha = (t) => `sha256:${createHash('sha256').update(t).digest('hex')}`;
const md = '---\nname: a\ndescription: Skill a.\n---\nbody\n';
const files = { 'SKILL.md': md, 'refs/x.md': 'x\n' };
const entry = {
  uri: 'skill://a/SKILL.md',
  frontmatter: { name: 'a', description: 'Skill a.' },
  resources: Object.entries(files).map(([p, t]) => ({ uri: `skill://a/${p}`, digest: sha(t), size: Buffer.byteLength(t) })),
};
const dir = mkdtempSync(join(tmpdir(), 'stack-edge-'));
const cache = new sc.SkillCache({ root: join(dir, 'root'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
cache.connectClient('t', {
  async request(req) {
    if (req.method === 'skills/list') return structuredClone({ skills: [entry] });
    if (req.method === 'skills/get') return structuredClone({ skill: entry });
    return structuredClone({ contents: [{ uri: req.params.uri, text: files[req.params.uri.slice('skill://a/'.length)] }] });
  },
});
const [listed] = await cache.list('t');
const skill = await cache.load('t', listed.entry);
await skill.read('refs/x.md');
const turn = () => new Promise((resolve) => setImmediate(resolve));

let probing = true;
function probe() {
  if (!probing) return;
  try {
    skill.read('refs/x.md').catch(() => {});
  } catch {}
}
function to(n, target) {
  if (n < target) return to(n + 1, target);
  probe();
  return 0;
}
// Extra arguments shift the probe's frame a word at a time.
const pads = [(t) => to(0, t), (t, a) => to(0, t), (t, a, b) => to(0, t), (t, a, b, c) => to(0, t)];
const reach = (t, pad) => pads[pad](t, 1, 2, 3);
/** The deepest recursion that still fits, found with the probe off. */
function edge() {
  probing = false;
  let lo = 1000;
  let hi = 100000;
  while (lo < hi) {
    const m = (lo + hi + 1) >> 1;
    let fits;
    try {
      reach(m, 0);
      fits = true;
    } catch {
      fits = false;
    }
    if (fits) lo = m;
    else hi = m - 1;
  }
  probing = true;
  return lo;
}
/** 300 reads in one turn (the last ones paced): do they all settle? */
async function healthy() {
  await turn();
  const reads = [];
  for (let i = 0; i < 300; i += 1) reads.push(skill.read('refs/x.md'));
  return Promise.race([Promise.all(reads).then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 3000))]);
}
let stuck = null;
for (let k = 0; k < 320; k += 1) {
  await turn();
  const limit = edge();
  // 255 reads answered at once: the probe's read is the one paced.
  for (let i = 0; i < 255; i += 1) skill.read('refs/x.md').catch(() => {});
  try {
    reach(limit - (Math.floor(k / 4) % 80), k % 4);
  } catch {}
  if (k % 40 === 39 && !(await healthy())) {
    stuck = k;
    break;
  }
}
process.stdout.write(`${JSON.stringify({ stuck, healthy: await healthy() })}\n`);
process.exit(0);
