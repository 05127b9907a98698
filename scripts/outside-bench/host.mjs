// B8 from a host outside the repository: the package from its tarball, `(await skill.read(f)).bytes`
// 3,000 times a sweep, median of 5 sweeps, interleaved with Node's floor in the same process.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkillCache } from 'skillcache';

const server = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), 'b8-'));
const skill = join(dir, 'skills', 'bench-notes');
mkdirSync(join(skill, 'data'), { recursive: true });
writeFileSync(join(skill, 'SKILL.md'), '---\nname: bench-notes\ndescription: One 4 KiB file.\n---\nRead data/4k.bin.\n');
writeFileSync(join(skill, 'data', '4k.bin'), randomBytes(4096));
const file = join(skill, 'data', '4k.bin');
async function open(name, options) {
  const cache = new SkillCache({ root: join(dir, name), keyFile: join(dir, `${name}.key`), approval: 'notRequired', ...options });
  cache.connectStdio('b8', [server, 'serve', join(dir, 'skills')], { stderr: 'ignore' });
  const { entry } = await cache.entry('b8', 'skill://bench-notes/SKILL.md');
  const loaded = await cache.load('b8', entry);
  await loaded.read('data/4k.bin');
  return loaded;
}
const rows = { memory: await open('m', {}), rehash: await open('r', { memoryTier: 0 }) };
const N = 3000;
const floor = () => { const t = process.hrtime.bigint(); for (let i = 0; i < N; i++) createHash('sha256').update(readFileSync(file)).digest('hex'); return Number(process.hrtime.bigint() - t) / N / 1e3; };
const hit = async (s) => { const t = process.hrtime.bigint(); for (let i = 0; i < N; i++) (await s.read('data/4k.bin')).bytes; return Number(process.hrtime.bigint() - t) / N / 1e3; };
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
const got = { floor: [], memory: [], rehash: [] };
for (let sweep = 0; sweep < 5; sweep++) {
  got.floor.push(floor());
  got.memory.push(await hit(rows.memory));
  got.rehash.push(await hit(rows.rehash));
}
const f = med(got.floor);
console.log(`floor ${f.toFixed(2)} µs; memory ${med(got.memory).toFixed(2)} µs (${(med(got.memory) / f).toFixed(2)}x); rehash ${med(got.rehash).toFixed(2)} µs (${(med(got.rehash) / f).toFixed(2)}x)`);
process.exit(0);
