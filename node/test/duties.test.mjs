// What the cache promises a Node host, against `skillcache serve` over stdio behind a counting
// proxy (test/proxy.mjs): a tampered cached blob is healed by exactly one refetch, an unlisted
// file and an unapproved load are refused before any request, an abandoned load leaves the
// cache clean, 2,000 concurrent loads all verify, and a Buffer handed out cannot change what the
// cache holds. And a load aborted through its AbortSignal: rejected at once, its requests aborted
// on the host's client, the cache left clean.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillCache, SkillFile, DeclinedError, VerifyError, SkillcacheError, AbortError } from 'skillcache';
import { corpus, counted, ownClient, requests, scratch, serveArgv, sha256, tsStdioArgv } from './peers.mjs';

/** A cache on `dir` bound to `skillcache serve` of the corpus through the counting proxy. */
function open(dir, options = {}) {
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), ...options });
  const log = join(dir, 'requests.log');
  const { argv, env } = counted(serveArgv(corpus, dir), log);
  cache.connectStdio('docs', argv, { env });
  return { cache, log };
}

/** The first listed skill with at least `n` files besides SKILL.md. */
async function someSkill(cache, n = 2) {
  const listing = await cache.list('docs');
  const info = listing.find((i) => !(i instanceof SkillcacheError) && i.entry.files.length > n);
  assert.ok(info, 'the corpus has a skill with several files');
  return info.entry;
}

/** Resolves once `done()` holds (checked every few milliseconds). */
async function waitFor(done) {
  while (!done()) await sleep(5);
}

/** Every regular file under `dir`. */
function walk(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath ?? d.path, d.name));
}

test('a tampered cached blob is healed by exactly one refetch', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache, log } = open(dir);
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const [skill] = await cache.loadAll('docs', entry);
  await cache.flush(); // the files reach the store behind the load
  const target = entry.files.find((f) => f.uri !== entry.uri);
  // The blob is stored under its digest: …/sha256/<first two hex digits>/<the rest>.
  const hex = target.digest.replace(/^sha256:/, '');
  const blob = walk(join(dir, 'cache')).find((p) => p.endsWith(join('sha256', hex.slice(0, 2), hex.slice(2))));
  assert.ok(blob, 'the blob is on disk');
  const bytes = readFileSync(blob);
  bytes[0] ^= 0xff;
  writeFileSync(blob, bytes);

  const before = requests(log).length;
  const healed = await skill.read(target.uri);
  assert.ok(healed.verified);
  assert.equal(healed.provenance, 'server');
  assert.equal(healed.retried, true);
  assert.equal(sha256(healed.bytes), target.digest);
  const asked = requests(log).slice(before);
  assert.deepEqual(asked, [{ method: 'resources/read', uri: target.uri }]);
  const stats = cache.stats();
  assert.equal(stats.quarantines, 1);
  assert.equal(stats.retries, 1);
  // Healed on disk: the next read is the cache's, and nothing more is asked.
  const next = await skill.read(target.uri);
  assert.equal(next.provenance, 'cache');
  assert.equal(requests(log).length, before + 1);
});

test('an unlisted file is refused with no request', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache, log } = open(dir);
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const skill = await cache.load('docs', entry);
  const before = requests(log).length;
  for (const ref of ['not-listed.md', '../other-skill/SKILL.md', 'skill://elsewhere/SKILL.md']) {
    await assert.rejects(skill.read(ref), (e) => e instanceof SkillcacheError);
  }
  await assert.rejects(skill.read('not-listed.md'), (e) => e instanceof VerifyError && e.mismatch === 'unlisted');
  assert.equal(requests(log).length, before);
});

test('an unapproved load is declined before any request', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache, log } = open(dir);
  const entry = await someSkill(cache);
  const before = requests(log).length;
  await assert.rejects(cache.load('docs', entry), (e) => {
    assert.ok(e instanceof DeclinedError);
    assert.equal(e.reason, 'not_approved');
    assert.equal(e.origin, 'docs');
    assert.equal(e.skill, entry.uri);
    return true;
  });
  await assert.rejects(cache.loadAll('docs', entry), DeclinedError);
  assert.equal(requests(log).length, before);
});

test('loads abandoned mid-request and promises never awaited leave the cache clean', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const listing = open(dir);
  const entries = (await listing.cache.list('docs')).filter((i) => !(i instanceof SkillcacheError)).map((i) => i.entry);
  for (const e of entries) await listing.cache.approve('docs', e);
  // A deadline too short for any answer: every request is abandoned where it stands (its future
  // dropped, as a cancelled load's is).
  const { cache } = open(dir, { requestTimeout: 0.000001 });
  const results = await Promise.allSettled(entries.map((e) => cache.loadAll('docs', e)));
  assert.ok(results.every((r) => r.status === 'rejected'));
  // Loads started and never awaited by anyone: the process goes on, and they finish or fail
  // without the host.
  // The test keeps them only to look at the root once they are done.
  const dropped = open(dir);
  const abandoned = entries.map((e) => dropped.cache.loadAll('docs', e).then(() => 'loaded', () => 'failed'));
  const settled = await Promise.all(abandoned);
  assert.equal(settled.length, entries.length);
  // Their files reach the store behind them, by that cache's keeper: wait for it before looking
  // at the disk (`verify` below flushes its own cache's keeper, not another's).
  await dropped.cache.flush();
  const report = await cache.verify();
  assert.ok(report.isClean, JSON.stringify(report));
  // Nothing staged is left: every publish finished or was removed.
  const root = join(dir, 'cache');
  const staged = walk(root).filter((p) => relative(root, p).split(sep).includes('tmp'));
  assert.deepEqual(staged, []);
});

test('2,000 concurrent loads and reads all verify', { timeout: 300_000 }, async (t) => {
  const dir = scratch(t);
  const { cache, log } = open(dir);
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const [, files] = await cache.loadAll('docs', entry);
  const asked = requests(log).length;
  const loads = await Promise.all(Array.from({ length: 2000 }, () => cache.load('docs', entry)));
  const reads = await Promise.all(loads.map((s, i) => s.read(files[i % files.length].uri)));
  reads.forEach((f, i) => {
    assert.ok(f.verified);
    assert.ok(f.bytes.equals(files[i % files.length].bytes));
  });
  // Warm: nothing more was asked of the server.
  assert.equal(requests(log).length, asked);
});

test('a Buffer handed out cannot change what the cache holds', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache } = open(dir, { memoryTier: 64 << 20 });
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const skill = await cache.load('docs', entry);
  const file = await skill.read(entry.files[0].uri);
  const bytes = file.bytes;
  bytes.fill(0x41);
  assert.equal(sha256(file.bytes), file.digest);
  const again = await skill.read(entry.files[0].uri);
  assert.equal(sha256(again.bytes), entry.files[0].digest);
  assert.ok(!again.bytes.equals(bytes));
});

// A file's verified bytes stay in the addon; every copy handed out is an ArrayBuffer of its own. A
// host that writes over a copy's whole ArrayBuffer, or transfers it away, changes that copy alone:
// never a file's own bytes, its text, its frame, another copy or the cache. Every read path is
// covered: the first read of a file, warm hits, readAll, skillMd and loadAll.
test('B1: writing over, or transferring away, the ArrayBuffer of a copy handed out changes no file, frame or cached byte', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache } = open(dir, { memoryTier: 64 << 20 });
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const [skill, loaded] = await cache.loadAll('docs', entry);
  const files = [...loaded, skill.skillMd, ...(await skill.readAll())];
  for (let round = 0; round < 3; round += 1) {
    for (const f of entry.files) files.push(await skill.read(f.uri));
  }
  const text = (f) => {
    try {
      return f.text;
    } catch (e) {
      assert.ok(e instanceof TypeError);
      return null;
    }
  };
  const before = files.map((f) => [text(f), f.framed()]);
  const lent = files.map((f) => f.bytes);
  for (const copy of lent) new Uint8Array(copy.buffer).fill(0x41);
  // Not vacuous: the writes did reach the copies handed out.
  assert.ok(lent.every((copy) => copy.every((b) => b === 0x41)));
  // Every copy is an ArrayBuffer of its own: transferring one away (structuredClone, a port,
  // `transfer()`) detaches that copy alone; every other copy, and the file, keep their bytes.
  const small = files.filter((f) => f.size > 0 && f.size <= 8 << 10);
  assert.ok(small.length > 1);
  const copies = small.map((f) => f.bytes);
  const kept = small.map((f) => f.bytes);
  assert.equal(new Set([...copies, ...kept].map((c) => c.buffer)).size, copies.length * 2, 'no two copies share an ArrayBuffer');
  copies.forEach((copy, i) => {
    const { buffer } = copy;
    if (i % 3 === 0) structuredClone(buffer, { transfer: [buffer] });
    else if (i % 3 === 1 && typeof buffer.transfer === 'function') buffer.transfer();
    else if (i % 3 === 1) structuredClone(buffer, { transfer: [buffer] });
    else {
      const { port1, port2 } = new MessageChannel();
      port1.postMessage(buffer, [buffer]);
      port1.close();
      port2.close();
    }
    assert.equal(copy.length, 0, 'the transferred copy is detached');
  });
  kept.forEach((copy, i) => assert.equal(sha256(copy), small[i].digest, small[i].uri));
  files.forEach((f, i) => {
    assert.equal(sha256(f.bytes), f.digest, f.uri);
    assert.equal(f.size, f.bytes.length);
    assert.deepEqual([text(f), f.framed()], before[i]);
  });
  for (const f of entry.files) assert.equal(sha256((await skill.read(f.uri)).bytes), f.digest);
});

// Files of every size — small, large, text and binary — read cold, then warm from the memory tier
// and from disk, hand out their own bytes each time.
test('J3: warm reads of files of every size hand out each file\'s own bytes', { timeout: 120_000 }, async (t) => {
  for (const memoryTier of [64 << 20, 0]) {
    const { cache } = open(join(scratch(t), String(memoryTier)), { memoryTier });
    const listing = await cache.list('docs');
    const { entry } = listing.find((i) => !(i instanceof SkillcacheError) && i.entry.files.some((f) => f.size > 64 << 10) && i.entry.files.some((f) => f.size < 8 << 10));
    await cache.approve('docs', entry);
    const skill = await cache.load('docs', entry);
    for (let round = 0; round < 3; round += 1) {
      for (const f of entry.files) {
        const file = await skill.read(f.uri);
        assert.equal(file.uri, f.uri);
        assert.equal(file.digest, f.digest);
        assert.equal(file.size, f.size);
        assert.equal(sha256(file.bytes), f.digest, f.uri);
        assert.equal(file.provenance, round === 0 && f.uri !== entry.uri ? 'server' : 'cache');
      }
    }
  }
});

test('J3: a SkillFile is made only by a read', async () => {
  assert.throws(() => new SkillFile(), TypeError);
  assert.throws(() => new SkillFile(Symbol('skillcache.SkillFile')), TypeError);
});

/** `client` with `resources/read` held until `open()`, or until skillcache aborts it. */
function holding(client) {
  const state = { held: true, reads: 0, aborted: 0, waiting: [] };
  let seen;
  state.firstRead = new Promise((resolve) => (seen = resolve));
  state.open = () => {
    state.held = false;
    state.waiting.splice(0).forEach((go) => go());
  };
  return {
    state,
    request(request, schema, options) {
      if (request.method !== 'resources/read' || !state.held) return client.request(request, schema, options);
      state.reads += 1;
      seen();
      return new Promise((resolve, reject) => {
        options.signal.addEventListener('abort', () => {
          state.aborted += 1;
          reject(options.signal.reason);
        });
        state.waiting.push(() => {
          if (!options.signal.aborted) resolve(client.request(request, schema, options));
        });
      });
    },
  };
}

test('an aborted load rejects at once with an AbortError, aborts its request, and leaves the cache clean', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const [command, ...args] = tsStdioArgv(corpus);
  const client = holding(await ownClient(t, new StdioClientTransport({ command, args, stderr: 'ignore' })));
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key') });
  cache.connectClient('docs', client);
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);

  const controller = new AbortController();
  const load = cache.loadAll('docs', entry, { signal: controller.signal });
  await client.state.firstRead;
  const reason = new Error('the user closed the panel');
  controller.abort(reason);
  await assert.rejects(load, (e) => {
    assert.ok(e instanceof AbortError);
    assert.ok(!(e instanceof SkillcacheError));
    assert.equal(e.name, 'AbortError');
    assert.equal(e.code, 'ABORT_ERR');
    assert.equal(e.cause, reason);
    return true;
  });
  // The requests in flight were aborted on the client, not left to run.
  assert.ok(client.state.reads > 0);
  await waitFor(() => client.state.aborted === client.state.reads);

  // Nothing half-written: the root verifies clean and holds nothing staged.
  assert.ok((await cache.verify()).isClean);
  const root = join(dir, 'cache');
  assert.deepEqual(walk(root).filter((p) => relative(root, p).split(sep).includes('tmp')), []);
  // A signal aborted before the call starts nothing.
  const before = client.state.reads;
  await assert.rejects(cache.load('docs', entry, { signal: AbortSignal.abort() }), AbortError);
  assert.equal(client.state.reads, before);
  // A later load works, every file verified.
  client.state.open();
  const [skill, files] = await cache.loadAll('docs', entry, { signal: new AbortController().signal });
  assert.ok(skill.skillMd.verified);
  assert.deepEqual(files.map((f) => f.uri), entry.files.map((f) => f.uri));
  for (const f of files) assert.equal(sha256(f.bytes), f.digest);
});

test('loads aborted at random points of the whole corpus leave a root that verifies and loads', { timeout: 300_000 }, async (t) => {
  const dir = scratch(t);
  const { cache } = open(dir);
  const entries = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError)).map((i) => i.entry);
  for (const e of entries) await cache.approve('docs', e);
  let aborted = 0;
  await Promise.all(
    entries.map(async (e, i) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), i % 7);
      try {
        await cache.loadAll('docs', e, { signal: controller.signal });
      } catch (error) {
        assert.ok(error instanceof AbortError, `${error.name}: ${error.message}`);
        aborted += 1;
      }
    }),
  );
  assert.ok(aborted > 0, 'some loads were aborted');
  assert.ok((await cache.verify()).isClean);
  for (const e of entries) {
    const [, files] = await cache.loadAll('docs', e);
    for (const f of files) assert.equal(sha256(f.bytes), f.digest);
  }
  // A publish already under way on the blocking pool when its load was aborted finishes (a file
  // lands whole or not at all): its staged temporaries go with it, and none stays behind.
  const root = join(dir, 'cache');
  await waitFor(() => walk(root).every((p) => !relative(root, p).split(sep).includes('tmp')));
  assert.ok((await cache.verify()).isClean);
});

test('one signal serves any number of calls and keeps no listener once they settle', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const { cache } = open(dir, { memoryTier: 64 << 20 });
  const entry = await someSkill(cache);
  await cache.approve('docs', entry);
  const { signal } = new AbortController();
  const loads = await Promise.all(Array.from({ length: 50 }, () => cache.loadAll('docs', entry, { signal })));
  const skill = loads[0][0];
  await Promise.all(entry.files.map((f) => skill.read(f.uri, { signal })));
  await skill.readAll({ signal });
  assert.equal(getEventListeners(signal, 'abort').length, 0);
});
