// `connectClient`: skillcache's requests through the host's own connected `Client` of the official
// TS SDK (the whole corpus through it is in peers.test.mjs). Here: what the client is asked, a
// server's refusal and a broken client keeping their kinds, the message bound applied before the
// answer is parsed, a request the cache abandons aborted on the client; the host's forwarded
// notifications, the limits (and the message bound with them), `strict`, and what the root holds.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  SkillCache,
  SkillcacheError,
  ServerError,
  TransportError,
  TimeoutError,
  MessageTooLargeError,
  NotConnectedError,
  ConfigError,
  EntryError,
} from 'skillcache';
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { corpus, ownClient, ownClientV1, scratch, serveArgv, tsStdioArgv } from './peers.mjs';

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

test('B6: with a Client of @modelcontextprotocol/sdk 1.x, a server refusal is a ServerError and a closed client a TransportError', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const cache = open(dir);
  const [command, ...args] = serveArgv(corpus, dir);
  const client = await ownClientV1(t, new StdioClientTransportV1({ command, args, stderr: 'ignore' }));
  cache.connectClient('own', client);
  await assert.rejects(cache.entry('own', 'skill://no-such-skill/SKILL.md'), (e) => {
    assert.ok(e instanceof ServerError, `${e.name}: ${e.message}`);
    assert.equal(e.method, 'skills/get');
    return true;
  });
  await client.close();
  await assert.rejects(cache.entry('own', NOTES), (e) => {
    assert.ok(e instanceof TransportError, `${e.name}: ${e.message}`);
    return true;
  });
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

test('a change the host client was told of, forwarded with notify, makes the next entry ask the server again', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  // The TS server's answers, fresh for a minute (it sends `ttlMs: 0`, which makes every entry
  // ask again anyway).
  const real = await tsClient(t);
  const client = watched({
    request: async (request, schema, options) => ({ ...(await real.request(request, schema, options)), ttlMs: 60_000 }),
  });
  const cache = open(dir);
  cache.connectClient('own', client);
  const { entry } = (await cache.list('own')).find((i) => !(i instanceof SkillcacheError));
  const gets = () => client.seen.asked.filter((r) => r.method === 'skills/get').length;
  await cache.entry('own', entry.uri);
  const quiet = gets();
  await cache.entry('own', entry.uri);
  assert.equal(gets(), quiet, 'a fresh entry is not asked for again');
  cache.notify('own', entry.files[0].uri);
  await cache.entry('own', entry.uri);
  assert.equal(gets(), quiet + 1);
  cache.notify('own');
  await cache.entry('own', entry.uri);
  assert.equal(gets(), quiet + 2);
  // Only an origin bound to a client takes notifications from the host.
  cache.connectStdio('served', ['true']);
  assert.throws(() => cache.notify('served'), NotConnectedError);
  assert.throws(() => cache.notify('nowhere'), NotConnectedError);
});

test('raised limits raise the message bound of a client with them; limits below the baseline are refused', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const bound = 2 * (16 << 20) + (64 << 10);
  const huge = () => ({ skills: [], padding: 'x'.repeat(bound + 1) });
  const raised = open(dir, { maxTotalBytes: 32 << 20, maxFiles: 1024 });
  raised.connectClient('big', answering(huge));
  assert.deepEqual(await raised.list('big'), []);
  assert.throws(() => open(join(dir, 'low'), { maxFiles: 10 }), ConfigError);
  assert.throws(() => open(join(dir, 'neg'), { maxTotalBytes: -1 }), ConfigError);
});

test('strict refuses an entry with a field the specification does not define; inventory and cachedEntries count what is held', { timeout: 120_000 }, async (t) => {
  const dir = scratch(t);
  const cache = open(dir);
  cache.connectClient('own', await tsClient(t));
  const listing = (await cache.list('own')).filter((i) => !(i instanceof SkillcacheError));
  const held = await cache.cachedEntries('own');
  assert.equal(held.length, listing.length);
  assert.deepEqual(held.map((e) => e.uri).sort(), listing.map((i) => i.entry.uri).sort());
  assert.ok(held.every((e) => e.origin === 'own' && e.files > 0 && e.bytes > 0 && ['public', 'private'].includes(e.scope)));
  assert.deepEqual(await cache.cachedEntries('elsewhere'), []);
  const inventory = await cache.inventory();
  assert.equal(inventory.origins, 1);
  assert.equal(inventory.entries, listing.length);
  assert.equal(inventory.blobs, 0);
  assert.equal(inventory.indexReadOnly, false);
  assert.equal(cache.healedIndex, null);

  // The listed entry as it came, with a list where the Agent Skills specification says a
  // string: accepted by default (real skills do this), refused under `strict`.
  const sent = listing[0].entry.toJSON();
  const listed = { ...sent, frontmatter: { ...sent.frontmatter, 'allowed-tools': ['Read', 'Grep'] } };
  const odd = (strict) => {
    const c = open(join(dir, strict ? 'strict' : 'lax'), { strict });
    c.connectClient('odd', answering(() => ({ skills: [listed] })));
    return c.list('odd');
  };
  const [lax] = await odd(false);
  assert.ok(!(lax instanceof SkillcacheError), String(lax?.message));
  const [strictItem] = await odd(true);
  assert.ok(strictItem instanceof EntryError, String(strictItem));
  assert.equal(strictItem.field, 'frontmatter.allowed-tools');
});
