// Every call settles, whatever a host's code does around it: a miss whose error a host's setter
// breaks still rejects, an AbortSignal ends a read the server never answers, a loop of awaited
// hits lets timers and signals run, and a label or reference that is not well-formed Unicode is
// refused before it can name another origin or file. Kept files cost their bytes, nothing more.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { types } from 'node:util';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillCache, SkillFile, LockFile, SkillcacheError, AbortError, ConfigError, UriError } from 'skillcache';
import { corpus, counted, ownClient, requests, scratch, serveArgv, sha256 } from './peers.mjs';

const within = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled in ${ms} ms`)), ms).unref())]);

async function opened(t, options = {}) {
  const dir = scratch(t);
  const log = join(dir, 'requests.log');
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired', ...options });
  const { argv, env } = counted(serveArgv(corpus, dir), log);
  cache.connectStdio('docs', argv, { env });
  const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
  return { dir, log, cache, listing };
}

test('B2: a miss whose error a host setter breaks still rejects', { timeout: 60_000 }, async (t) => {
  const { dir, listing } = await opened(t);
  const cache = new SkillCache({ root: join(dir, 'other'), keyFile: join(dir, 'other.key'), approval: 'notRequired' });
  cache.connectStdio('docs', [join(dir, 'no-such-server')]);
  Object.defineProperty(Object.prototype, 'causes', { configurable: true, set() { throw new Error('a host setter'); } });
  try {
    await assert.rejects(within(cache.load('docs', listing[0].entry), 20_000, 'the load'), (e) => !/not settled/.test(e.message));
  } finally {
    delete Object.prototype.causes;
  }
});

test('B2: a miss read under a throwing index setter settles with its verified file', { timeout: 60_000 }, async (t) => {
  const { cache, listing } = await opened(t);
  const { entry } = listing.find((i) => i.entry.files.length > 2);
  const skill = await cache.load('docs', entry);
  const f = entry.files.find((x) => x.uri !== entry.uri);
  // It throws for what the package could hand it (a file, bytes, a handle) and lets the test
  // runner's own arrays be.
  const ours = (v) => v instanceof SkillFile || ArrayBuffer.isView(v) || types.isExternal(v);
  for (let i = 0; i < 5; i += 1) {
    Object.defineProperty(Array.prototype, i, {
      configurable: true,
      get: () => undefined,
      set(v) {
        if (ours(v)) throw new Error('a host setter');
        Object.defineProperty(this, i, { value: v, writable: true, enumerable: true, configurable: true });
      },
    });
  }
  let file;
  try {
    file = await within(skill.read(f.uri), 20_000, 'the read');
  } finally {
    for (let i = 0; i < 5; i += 1) delete Array.prototype[i];
  }
  assert.equal(file.provenance, 'server');
  assert.equal(sha256(file.bytes), f.digest);
});

test('B2: AbortSignal.timeout ends a read the server never answers', { timeout: 60_000 }, async (t) => {
  const dir = scratch(t);
  const real = await ownClient(t, new StdioClientTransport({ command: serveArgv(corpus, dir)[0], args: serveArgv(corpus, dir).slice(1), stderr: 'ignore' }));
  // `resources/read` never answers, and ignores its own signal: only the cache's abort ends it.
  const client = { request: (r, s, o) => (r.method === 'resources/read' ? new Promise(() => {}) : real.request(r, s, o)) };
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
  cache.connectClient('docs', client);
  const { entry } = (await cache.list('docs')).find((i) => !(i instanceof SkillcacheError) && i.entry.files.length > 1);
  await assert.rejects(within(cache.load('docs', entry, { signal: AbortSignal.timeout(200) }), 20_000, 'the load'), AbortError);
});

test('review: a loop of awaited hits lets timers and signals run', { timeout: 60_000 }, async (t) => {
  const { cache, listing } = await opened(t, { memoryTier: 64 << 20 });
  const { entry } = listing[0];
  const skill = await cache.load('docs', entry);
  const f = entry.files[0];
  await skill.read(f.uri);
  const start = Date.now();
  let fired = false;
  setTimeout(() => (fired = true), 20);
  while (!fired) {
    await skill.read(f.uri);
    if (Date.now() - start > 20_000) assert.fail('the timer never ran: the loop starved the event loop');
  }
  const signal = AbortSignal.timeout(50);
  await assert.rejects(async () => {
    for (;;) {
      await skill.read(f.uri, { signal });
      if (Date.now() - start > 40_000) assert.fail('the signal never aborted: the loop starved the event loop');
    }
  }, AbortError);
});

test('B3: a label or a reference that is not well-formed Unicode is refused', { timeout: 60_000 }, async (t) => {
  const { dir, log, cache, listing } = await opened(t);
  for (const label of ['team\uD800', 'team\uDBFF', '\uDC00team']) {
    assert.throws(() => cache.connectStdio(label, serveArgv(corpus, dir)), ConfigError);
    assert.throws(() => cache.connectHttp(label, 'http://127.0.0.1:9/mcp'), ConfigError);
    assert.throws(() => cache.connectClient(label, { request: async () => ({}) }), ConfigError);
    assert.throws(() => cache.load(label, listing[0].entry), ConfigError);
  }
  assert.throws(() => cache.connectStdio('team\uD800', serveArgv(corpus, dir)), /well-formed Unicode/);
  assert.throws(() => cache.forPrincipal('alice\uD800'), ConfigError);
  assert.throws(() => new SkillCache({ root: join(dir, 'p'), keyFile: join(dir, 'p.key'), principal: 'alice\uDBFF' }), ConfigError);
  assert.ok(cache instanceof SkillCache);
  assert.throws(() => new LockFile().insert('team\uD800', listing[0].entry), ConfigError);
  const { entry } = listing.find((i) => i.entry.files.length > 1);
  const skill = await cache.load('docs', entry);
  const before = requests(log).length;
  await assert.rejects(skill.read(`${entry.files[0].uri.split('/').pop()}\uD800`), UriError);
  assert.equal(requests(log).length, before, 'no request');
});

test('review: 1,000 kept small files cost their bytes, not pools', { timeout: 120_000 }, async (t) => {
  const { cache, listing } = await opened(t, { memoryTier: 64 << 20 });
  const { entry } = listing.find((i) => i.entry.files.some((f) => f.size <= 1024));
  const f = entry.files.find((x) => x.size <= 1024);
  const skill = await cache.load('docs', entry);
  await skill.read(f.uri);
  const before = process.memoryUsage();
  const kept = [];
  for (let i = 0; i < 1000; i += 1) {
    const file = await skill.read(f.uri);
    kept.push([file, file.bytes]);
  }
  const after = process.memoryUsage();
  const grew = after.arrayBuffers - before.arrayBuffers;
  assert.ok(grew < 4 << 20, `1,000 kept files of ${f.size} bytes grew ArrayBuffers by ${grew} bytes`);
  assert.ok(kept.every(([file, copy]) => sha256(copy) === f.digest && file.size === f.size));
});
