// `connectClient`: skillcache's requests through the host's own connected `Client` of the official
// TS SDK (the whole corpus through it is in peers.test.mjs). Here: what the client is asked, a
// server's refusal and a broken client keeping their kinds, the message bound applied before the
// answer is parsed, and a request the cache abandons aborted on the client.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillCache, SkillcacheError, ServerError, TransportError, TimeoutError, MessageTooLargeError } from 'skillcache';
import { corpus, ownClient, scratch, tsStdioArgv } from './peers.mjs';

const NOTES = 'skill://notes/SKILL.md';

function open(dir, options = {}) {
  return new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), ...options });
}

async function tsClient(t) {
  const [command, ...args] = tsStdioArgv(corpus);
  return ownClient(t, new StdioClientTransport({ command, args, stderr: 'ignore' }));
}

/** `client`, recording every request skillcache sends through it and every abort of one. */
function watched(client) {
  const seen = { asked: [], aborted: [] };
  return {
    seen,
    request(request, schema, options) {
      seen.asked.push({ method: request.method, uri: request.params?.uri ?? null });
      options?.signal?.addEventListener('abort', () => seen.aborted.push(request.method));
      return client.request(request, schema, options);
    },
  };
}

/** A stand-in for a client that answers every request with `answer(method)`. */
const answering = (answer) => ({ request: async (request) => answer(request.method) });

test('every request goes through the host client: list, get and reads, none of its own', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const client = watched(await tsClient(t));
  const cache = open(dir);
  cache.connectClient('own', client);
  const listing = (await cache.list('own')).filter((i) => !(i instanceof SkillcacheError));
  assert.ok(listing.length > 20);
  assert.deepEqual(client.seen.asked, [{ method: 'skills/list', uri: null }]);
  const { entry } = listing.find((i) => i.entry.files.length > 2);
  await cache.approve('own', entry);
  const [, files] = await cache.loadAll('own', entry);
  const reads = client.seen.asked.filter((r) => r.method === 'resources/read').map((r) => r.uri);
  assert.deepEqual(reads.sort(), files.map((f) => f.uri).sort());
  assert.deepEqual(client.seen.aborted, []);
  // The client is the host's: still connected and usable by it.
  assert.ok((await client.request({ method: 'skills/list', params: {} }, { '~standard': { version: 1, vendor: 't', validate: (value) => ({ value }) } })).skills.length > 20);
});

test('a real server refusal is a ServerError; a failing client is a TransportError', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const cache = open(dir);
  cache.connectClient('own', await tsClient(t));
  await assert.rejects(cache.entry('own', 'skill://no-such-skill/SKILL.md'), (e) => {
    assert.ok(e instanceof ServerError, `${e.name}: ${e.message}`);
    assert.equal(e.origin, 'own');
    assert.equal(e.method, 'skills/get');
    assert.equal(typeof e.code, 'number');
    return true;
  });
  cache.connectClient('broken', answering(() => {
    throw new Error('peer went away');
  }));
  await assert.rejects(cache.entry('broken', NOTES), (e) => {
    assert.ok(e instanceof TransportError);
    assert.equal(e.method, 'skills/get');
    assert.ok(e.causes.some((c) => c.includes('peer went away')), e.causes.join(' | '));
    return true;
  });
  // Not an object answer at all: refused as the transport's, the process goes on.
  cache.connectClient('odd', answering(() => undefined));
  await assert.rejects(cache.entry('odd', NOTES), TransportError);
});

test('an answer over the message bound is refused before it is parsed', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const bound = 2 * (16 << 20) + (64 << 10);
  const cache = open(dir);
  cache.connectClient('big', answering(() => ({ skills: [], padding: 'x'.repeat(bound + 1) })));
  await assert.rejects(cache.list('big'), (e) => {
    assert.ok(e instanceof MessageTooLargeError);
    assert.equal(e.method, 'skills/list');
    assert.equal(e.max, bound);
    assert.equal(e.origin, 'big');
    return true;
  });
  // Just inside the bound: read, and nothing listed.
  cache.connectClient('fits', answering(() => ({ skills: [], padding: 'x'.repeat(bound - 64) })));
  assert.deepEqual(await cache.list('fits'), []);
});

test('a request past the deadline is a TimeoutError and is aborted on the client', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  let aborted;
  const done = new Promise((resolve) => (aborted = resolve));
  // Never answers by itself: only an abort ends the request.
  const hanging = {
    request: (request, schema, options) =>
      new Promise((_, reject) =>
        options.signal.addEventListener('abort', () => {
          aborted(request.method);
          reject(options.signal.reason);
        }),
      ),
  };
  const cache = open(dir, { requestTimeout: 0.3 });
  cache.connectClient('slow', hanging);
  await assert.rejects(cache.entry('slow', NOTES), (e) => {
    assert.ok(e instanceof TimeoutError);
    assert.equal(e.method, 'skills/get');
    assert.equal(e.after, 0.3);
    return true;
  });
  assert.equal(await done, 'skills/get');
  assert.equal(cache.stats().timeouts, 1);
});

test('connectClient refuses what is not a client', (t) => {
  const cache = open(scratch(t));
  assert.throws(() => cache.connectClient('x', {}), TypeError);
});
