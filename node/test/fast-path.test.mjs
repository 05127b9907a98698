// A hit never leaves the calling thread: a read or load the memory tier or a small cached copy
// can answer settles inside the call, with no hop to the addon's runtime (`_hops()`, which
// counts every call handed to it) and no request; a miss does hop, and a copy tampered on disk
// is no hit: the full path takes over and fetches it exactly once. Nothing here is timed:
// node/bench measures the fast path against Node's floor.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import skillcache, { SkillCache, SkillcacheError } from 'skillcache';
import { corpus, counted, requests, scratch, serveArgv } from './peers.mjs';

// Not part of the API (kept out of the named exports and the types): for the tests and the bench.
const { _hops } = skillcache;
const hits = (stats) => stats.hits_hashed + stats.hits_evidence;

/** A cache over `skillcache serve` of the corpus behind the counting proxy, one skill (small
 * files, several of them) loaded and every file read twice: what follows is warm. Approval is
 * not required, as in the Python package's test: a warm approval is answered from the index's
 * memo, which any write to the index (an access time kept) sends back to the index once. */
async function warm(t, options) {
  const dir = scratch(t);
  const log = join(dir, 'requests.log');
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired', ...options });
  const { argv, env } = counted(serveArgv(corpus, dir), log);
  cache.connectStdio('docs', argv, { env });
  const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
  const { entry } = listing.find((i) => i.entry.files.length > 2 && i.entry.files.every((f) => f.size < 32 << 10));
  const [skill] = await cache.loadAll('docs', entry);
  // The files reach the store behind the load: wait for them, so the reads below are the store's.
  await cache.flush();
  await skill.readAll();
  return { dir, log, cache, entry, skill };
}

for (const [name, options] of Object.entries({
  memory: { memoryTier: 64 << 20 },
  rehash: { memoryTier: 0, isolation: 'rehash' },
  guaranteed: { memoryTier: 0, isolation: 'guaranteed' },
})) {
  test(`J3: a warm read and load settle with no hop and no request (${name})`, { timeout: 120_000 }, async (t) => {
    const { log, cache, entry, skill } = await warm(t, options);
    const asked = requests(log).length;
    const before = hits(cache.stats());
    const file = entry.files.find((f) => f.uri !== entry.uri);
    const hops = _hops();
    for (let i = 0; i < 50; i += 1) {
      const f = await skill.read(file.uri);
      assert.equal(f.provenance, 'cache');
      assert.equal(f.digest, file.digest);
      assert.ok(f.verified);
      const again = await cache.load('docs', entry);
      assert.equal(again.skillMd.provenance, 'cache');
    }
    const files = await skill.readAll();
    assert.equal(_hops(), hops, 'not one call went to the runtime');
    assert.equal(requests(log).length, asked, 'nor to the server');
    // Each file checked on each access.
    assert.equal(hits(cache.stats()) - before, 50 + 50 + files.length);
  });
}

test('J3: a miss goes to the runtime and the server; the hit after it does not', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const log = join(dir, 'requests.log');
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key') });
  const { argv, env } = counted(serveArgv(corpus, dir), log);
  cache.connectStdio('docs', argv, { env });
  const { entry } = (await cache.list('docs')).find((i) => !(i instanceof SkillcacheError) && i.entry.files.length > 1);
  await cache.approve('docs', entry);
  const reads = () => requests(log).filter((r) => r.method === 'resources/read').length;
  const hops = _hops();
  const skill = await cache.load('docs', entry);
  assert.equal(_hops(), hops + 1);
  assert.equal(reads(), 1);
  const file = entry.files.find((f) => f.uri !== entry.uri);
  assert.equal((await skill.read(file.uri)).provenance, 'server');
  assert.equal(_hops(), hops + 2);
  assert.equal(reads(), 2);
  assert.equal((await skill.read(file.uri)).provenance, 'cache');
  assert.equal(_hops(), hops + 2);
});

test('a copy tampered on disk is no hit: the full path fetches it once, then it is a hit again', { timeout: 120_000 }, async (t) => {
  const { dir, log, cache, entry, skill } = await warm(t, { memoryTier: 0 });
  const file = entry.files.find((f) => f.uri !== entry.uri);
  const hex = file.digest.replace(/^sha256:/, '');
  const root = join(dir, 'cache');
  const blob = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath ?? d.path, d.name))
    .find((p) => p.endsWith(join('sha256', hex.slice(0, 2), hex.slice(2))));
  const bytes = readFileSync(blob);
  bytes[0] ^= 0xff; // same size: only the hash can tell
  writeFileSync(blob, bytes);
  const reads = requests(log).length;
  const before = cache.stats();
  const hops = _hops();
  const f = await skill.read(file.uri);
  assert.ok(f.retried);
  assert.equal(f.provenance, 'server');
  assert.equal(_hops(), hops + 1, 'the fast path declined it');
  assert.equal(requests(log).length, reads + 1, 'exactly one refetch');
  const after = cache.stats();
  assert.equal(after.quarantines, before.quarantines + 1);
  assert.equal(hits(after), hits(before), 'the tampered copy was no hit');
  assert.equal((await skill.read(file.uri)).provenance, 'cache');
  assert.equal(_hops(), hops + 1);
});
