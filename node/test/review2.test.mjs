// What the second review of the rebuilt package found, kept so it never returns: an option
// inherited from a polluted Object.prototype, a loop of refused reads, lone surrogates inside
// argv/env/headers, and a SkillFile forged from its prototype.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { SkillCache, SkillFile, SkillcacheError, DeclinedError, UriError } from 'skillcache';
import { corpus, scratch, serveArgv } from './peers.mjs';

function cacheIn(t, options = {}) {
  const dir = scratch(t);
  return { dir, cache: new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), ...options }) };
}

test('review 2: an approval inherited from Object.prototype is no choice of the host', { timeout: 60_000 }, async (t) => {
  Object.prototype.approval = 'notRequired';
  let cache;
  let dir;
  try {
    ({ dir, cache } = cacheIn(t));
  } finally {
    delete Object.prototype.approval;
  }
  cache.connectStdio('docs', serveArgv(corpus, dir));
  const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
  await assert.rejects(cache.load('docs', listing[0].entry), DeclinedError);
});

test('review 2: a loop of awaited refused reads lets timers run', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = cacheIn(t, { approval: 'notRequired' });
  cache.connectStdio('docs', serveArgv(corpus, dir));
  const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
  const skill = await cache.load('docs', listing[0].entry);
  const start = Date.now();
  let fired = false;
  setTimeout(() => (fired = true), 20);
  while (!fired) {
    await skill.read('not-listed.md').catch(() => {});
    if (Date.now() - start > 20_000) assert.fail('the timer never ran: the refusals starved the event loop');
  }
});

test('review 2: a lone surrogate inside argv, env or headers is refused before any server starts', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = cacheIn(t);
  assert.throws(() => cache.connectStdio('a', [...serveArgv(corpus, dir), 'x\uD800']), UriError);
  assert.throws(() => cache.connectStdio('b', serveArgv(corpus, dir), { env: { V: 'v\uDBFF' } }), UriError);
  assert.throws(() => cache.connectHttp('c', 'http://127.0.0.1:9/mcp', { headers: { 'x-h': 'h\uD800' } }), UriError);
});

test('review 2: instanceof SkillFile is true of the package files only, and a file cannot be redefined', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = cacheIn(t, { approval: 'notRequired' });
  cache.connectStdio('docs', serveArgv(corpus, dir));
  const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
  const skill = await cache.load('docs', listing[0].entry);
  const real = skill.skillMd;
  assert.ok(real instanceof SkillFile);
  const forged = Object.create(SkillFile.prototype, { text: { value: 'EVIL' }, verified: { value: true } });
  assert.equal(forged instanceof SkillFile, false);
  assert.throws(() => Object.defineProperty(real, 'text', { value: 'EVIL' }), TypeError);
  assert.throws(() => Object.defineProperty(SkillFile, Symbol.hasInstance, { value: () => true }), TypeError);
  assert.equal(Object.isFrozen(SkillCache), true);
});
