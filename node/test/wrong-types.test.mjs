// An argument or option of the wrong type is refused by the package before the addon sees it:
// the built-in TypeError, with a short message that names the argument or option and the type it
// was given, never the value, at once. napi-rs's own conversion threw a bare Error naming Rust
// types and echoing the value as JSON (a 1 MB Buffer: a 3 MB message; a DAG of 30 shared objects:
// minutes and gigabytes, the event loop frozen). Review 39m, BREAK E.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { SkillCache, SkillEntry, LockFile, SkillcacheError, NotConnectedError } from 'skillcache';
import { corpus, scratch, serveArgv } from './peers.mjs';

const within = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled in ${ms} ms`)), ms).unref())]);

const big = Buffer.alloc(1 << 20, 65);
/** 30 objects, each referencing the next twice: 2^30 paths for anything that walks it as a tree. */
const dag = (() => {
  let o = {};
  for (let i = 0; i < 30; i += 1) o = { a: o, b: o };
  return o;
})();
const sparse = (() => {
  const list = ['/bin/true'];
  list[2] = '-x';
  return list;
})();

// The wrong values for a string, boolean or SkillEntry/LockFile place; for a number place; for an
// options object or table place (an object is right there, so only primitives).
const NOT_STRING = { 'a number': 5, 'a plain object': {}, 'a 1 MB Buffer': big, 'a DAG of 30 objects': dag };
const NOT_NUMBER = { 'a string': 'x', 'a plain object': {}, 'a 1 MB Buffer': big, 'a DAG of 30 objects': dag };
const NOT_OBJECT = { 'a number': 5, 'a string': 'x', 'a boolean': true };

/** Calls `call`, which must be refused with the package's TypeError (thrown, or a rejection),
 * within a second, with a short message that leaks nothing of the binding layer. */
async function refused(call, what) {
  const started = performance.now();
  let error;
  let settled = false;
  try {
    const value = call();
    if (value && typeof value.then === 'function') await within(value, 1_000, what);
    settled = true;
  } catch (thrown) {
    error = thrown;
  }
  const ms = performance.now() - started;
  assert.equal(settled, false, `${what}: accepted`);
  assert.ok(error instanceof TypeError, `${what}: ${error?.constructor?.name}: ${String(error?.message).slice(0, 200)}`);
  // The package's TypeError is the built-in one (taken at load), not one of its SkillcacheErrors.
  assert.equal(Object.getPrototypeOf(error), TypeError.prototype, what);
  assert.ok(!(error instanceof SkillcacheError), what);
  assert.ok(error.message.length < 200, `${what}: a message of ${error.message.length} characters`);
  assert.doesNotMatch(error.message, /rust|napi|Failed to convert|serde|CacheOptions|::/i, what);
  assert.match(error.message, /^skillcache: /, what);
  assert.ok(ms < 1_000, `${what}: ${ms.toFixed(0)} ms`);
  return error;
}

function opened(t) {
  const dir = scratch(t);
  const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
  return { dir, cache };
}

test('BREAK E: every argument and option of the wrong type is the package TypeError, short and at once', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = opened(t);
  const at = (name) => ({ root: join(dir, name), keyFile: join(dir, `${name}.key`) });
  const lock = new LockFile();
  const catalog = await cache.catalog();
  // Each site: the value placed where the package takes one of another type, the JS name the
  // message must give, and which wrong values to try.
  const sites = [
    ['new SkillCache options.root', (v) => new SkillCache({ ...at('a'), root: v }), 'root', NOT_STRING],
    ['new SkillCache options.keyFile', (v) => new SkillCache({ ...at('a'), keyFile: v }), 'keyFile', NOT_STRING],
    ['new SkillCache options.isolation', (v) => new SkillCache({ ...at('a'), isolation: v }), 'isolation', NOT_STRING],
    ['new SkillCache options.approval', (v) => new SkillCache({ ...at('a'), approval: v }), 'approval', NOT_STRING],
    ['new SkillCache options.dynamic', (v) => new SkillCache({ ...at('a'), dynamic: v }), 'dynamic', NOT_STRING],
    ['new SkillCache options.principal', (v) => new SkillCache({ ...at('a'), principal: v }), 'principal', NOT_STRING],
    ['new SkillCache options.discoveryPaths item', (v) => new SkillCache({ ...at('a'), discoveryPaths: ['/tmp', v] }), 'discoveryPaths[1]', NOT_STRING],
    ['new SkillCache options.discoveryPaths', (v) => new SkillCache({ ...at('a'), discoveryPaths: v }), 'discoveryPaths', NOT_STRING],
    ['new SkillCache options.memoryTier', (v) => new SkillCache({ ...at('a'), memoryTier: v }), 'memoryTier', NOT_NUMBER],
    ['new SkillCache options.originQuota', (v) => new SkillCache({ ...at('a'), originQuota: v }), 'originQuota', NOT_NUMBER],
    ['new SkillCache options.requestTimeout', (v) => new SkillCache({ ...at('a'), requestTimeout: v }), 'requestTimeout', NOT_NUMBER],
    ['new SkillCache options.connectTimeout', (v) => new SkillCache({ ...at('a'), connectTimeout: v }), 'connectTimeout', NOT_NUMBER],
    ['new SkillCache options.lockTimeout', (v) => new SkillCache({ ...at('a'), lockTimeout: v }), 'lockTimeout', NOT_NUMBER],
    ['new SkillCache options.maxFiles', (v) => new SkillCache({ ...at('a'), maxFiles: v }), 'maxFiles', NOT_NUMBER],
    ['new SkillCache options.maxTotalBytes', (v) => new SkillCache({ ...at('a'), maxTotalBytes: v }), 'maxTotalBytes', NOT_NUMBER],
    ['new SkillCache options.offline', (v) => new SkillCache({ ...at('a'), offline: v }), 'offline', NOT_STRING],
    ['new SkillCache options.allowStale', (v) => new SkillCache({ ...at('a'), allowStale: v }), 'allowStale', NOT_STRING],
    ['new SkillCache options.strict', (v) => new SkillCache({ ...at('a'), strict: v }), 'strict', NOT_STRING],
    ['new SkillCache options.locked', (v) => new SkillCache({ ...at('a'), locked: v }), 'locked', NOT_STRING],
    ['new SkillCache options', (v) => new SkillCache(v), 'options', NOT_OBJECT],
    ['new cache.constructor options.root', (v) => new cache.constructor({ ...at('a'), root: v }), 'root', NOT_STRING],
    ['connectStdio origin', (v) => cache.connectStdio(v, ['/bin/true']), 'origin', NOT_STRING],
    ['connectStdio argv item', (v) => cache.connectStdio('s', ['/bin/true', v]), 'argv[1]', NOT_STRING],
    ['connectStdio argv', (v) => cache.connectStdio('s', v), 'argv', NOT_STRING],
    ['connectStdio options.env value', (v) => cache.connectStdio('s', ['/bin/true'], { env: { K: v } }), 'each value of env', NOT_STRING],
    ['connectStdio options.env', (v) => cache.connectStdio('s', ['/bin/true'], { env: v }), 'env', NOT_OBJECT],
    ['connectStdio options.cwd', (v) => cache.connectStdio('s', ['/bin/true'], { cwd: v }), 'cwd', NOT_STRING],
    ['connectStdio options.stderr', (v) => cache.connectStdio('s', ['/bin/true'], { stderr: v }), 'stderr', { ...NOT_NUMBER, 'a boolean': true, 'a string': undefined }],
    ['connectStdio options', (v) => cache.connectStdio('s', ['/bin/true'], v), 'options', NOT_OBJECT],
    ['connectHttp origin', (v) => cache.connectHttp(v, 'http://127.0.0.1:9/mcp'), 'origin', NOT_STRING],
    ['connectHttp url', (v) => cache.connectHttp('h', v), 'url', NOT_STRING],
    ['connectHttp options.headers value', (v) => cache.connectHttp('h', 'http://127.0.0.1:9/mcp', { headers: { K: v } }), 'each value of headers', NOT_STRING],
    ['connectHttp options.headers', (v) => cache.connectHttp('h', 'http://127.0.0.1:9/mcp', { headers: v }), 'headers', NOT_OBJECT],
    ['connectHttp options', (v) => cache.connectHttp('h', 'http://127.0.0.1:9/mcp', v), 'options', NOT_OBJECT],
    ['connectClient origin', (v) => cache.connectClient(v, { request() {} }), 'origin', NOT_STRING],
    ['forPrincipal', (v) => cache.forPrincipal(v), 'principal', NOT_STRING],
    ['notify origin', (v) => cache.notify(v), 'origin', NOT_STRING],
    ['notify uri', (v) => cache.notify('docs', v), 'uri', NOT_STRING],
    ['disconnect', (v) => cache.disconnect(v), 'origin', NOT_STRING],
    ['list', (v) => cache.list(v), 'origin', NOT_STRING],
    ['entry origin', (v) => cache.entry(v, 'skill://x/SKILL.md'), 'origin', NOT_STRING],
    ['entry uri', (v) => cache.entry('docs', v), 'uri', NOT_STRING],
    ['refresh uri', (v) => cache.refresh('docs', v), 'uri', NOT_STRING],
    ['approve entry', (v) => cache.approve('docs', v), 'entry', NOT_STRING],
    ['approve grantTools', (v) => cache.approve('docs', v, [() => 1]), 'grantTools', { 'a function in a grant': 0 }],
    ['isApproved entry', (v) => cache.isApproved('docs', v), 'entry', NOT_STRING],
    ['load entry', (v) => cache.load('docs', v), 'entry', NOT_STRING],
    ['load entry with a signal', (v) => cache.load('docs', v, { signal: new AbortController().signal }), 'entry', NOT_STRING],
    ['loadAll entry', (v) => cache.loadAll('docs', v), 'entry', NOT_STRING],
    ['purge', (v) => cache.purge(v), 'origin', NOT_STRING],
    ['purgeAbsent item', (v) => cache.purgeAbsent(['docs', v]), 'keep[1]', NOT_STRING],
    ['purgeAbsent', (v) => cache.purgeAbsent(v), 'keep', NOT_STRING],
    ['gc', (v) => cache.gc(v), 'maxBytes', NOT_NUMBER],
    ['verify', (v) => cache.verify(v), 'origin', NOT_STRING],
    ['cachedEntries', (v) => cache.cachedEntries(v), 'origin', NOT_STRING],
    ['checkLock', (v) => cache.checkLock(v), 'lock', NOT_STRING],
    ['catalog item', (v) => cache.catalog(['mine', v]), 'localNames[1]', NOT_STRING],
    ['catalog', (v) => cache.catalog(v), 'localNames', NOT_STRING],
    ['Catalog.get', (v) => catalog.get(v), 'handle', NOT_STRING],
    ['Catalog.has', (v) => catalog.has(v), 'handle', NOT_STRING],
    ['LockFile.insert origin', (v) => lock.insert(v, undefined), 'origin', NOT_STRING],
    ['LockFile.insert entry', (v) => lock.insert('docs', v), 'entry', NOT_STRING],
    ['LockFile.check entry', (v) => lock.check('docs', v), 'entry', NOT_STRING],
    ['LockFile.write', (v) => lock.write(v), 'path', NOT_STRING],
  ];
  let calls = 0;
  for (const [site, call, name, wrongs] of sites) {
    for (const [kind, value] of Object.entries(wrongs)) {
      if (value === undefined) continue;
      const error = await refused(() => call(value), `${site} given ${kind}`);
      assert.ok(error.message.includes(name), `${site} given ${kind}: ${error.message}`);
      calls += 1;
    }
  }
  assert.ok(calls > 200, `${calls} calls`);
});

test('BREAK E: the refusal names the type given, never the value; a hole and a missing argument are undefined', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = opened(t);
  const secret = 'hunter2-'.repeat(100);
  const cases = [
    [() => new SkillCache({ root: 5, keyFile: join(dir, 'k') }), 'skillcache: root must be a string, not a number'],
    [() => new SkillCache({ root: join(dir, 'c'), keyFile: { secret } }), 'skillcache: keyFile must be a string, not an object'],
    [() => new SkillCache({ root: join(dir, 'c'), memoryTier: 'x' }), 'skillcache: memoryTier must be a number, not a string'],
    [() => new SkillCache({ root: join(dir, 'c'), offline: 'yes' }), 'skillcache: offline must be a boolean, not a string'],
    [() => new SkillCache({ root: null, keyFile: join(dir, 'k') }), 'skillcache: root must be a string, not null'],
    [() => new SkillCache({ root: join(dir, 'c'), discoveryPaths: [, '/tmp'] }), 'skillcache: discoveryPaths[0] must be a string, not undefined'],
    [() => new SkillCache(5), 'skillcache: options must be an object, not a number'],
    [() => cache.connectStdio('s', ['/bin/true', Symbol(secret)]), 'skillcache: argv[1] must be a string, not a symbol'],
    [() => cache.connectStdio('s', new Uint8Array(2)), 'skillcache: argv: a list must be an Array of strings, not an object'],
    [() => cache.connectStdio('s'), 'skillcache: argv: a list must be an Array of strings, not undefined'],
    [() => cache.connectStdio('s', ['/bin/true'], { env: { K: secret.length } }), 'skillcache: each value of env must be a string, not a number'],
    [() => cache.connectStdio('s', ['/bin/true'], { stderr: true }), 'skillcache: stderr must be a string or a number, not a boolean'],
    [() => cache.entry('docs'), 'skillcache: uri must be a string, not undefined'],
    [() => cache.load('docs', { uri: secret }), 'skillcache: entry must be a SkillEntry, not an object'],
    [() => cache.load('docs', Object.create(SkillEntry.prototype)), 'skillcache: entry must be a SkillEntry, not an object'],
    [() => cache.load('docs', new LockFile()), 'skillcache: entry must be a SkillEntry, not an object'],
    [() => cache.checkLock(new Proxy(new LockFile(), {})), 'skillcache: lock must be a LockFile, not an object'],
    [() => cache.gc(10n), 'skillcache: maxBytes must be a number, not a bigint'],
    [() => cache.purgeAbsent(), 'skillcache: keep: a list must be an Array of strings, not undefined'],
    [() => cache.approve('docs', undefined, [1, Symbol(secret)]), 'skillcache: grantTools must hold only strings, finite numbers, booleans, null, Arrays and plain objects, not a symbol'],
    [() => cache.approve('docs', undefined, { a: NaN }), 'skillcache: grantTools must hold only strings, finite numbers, booleans, null, Arrays and plain objects, not NaN or an infinite number'],
    [() => cache.approve('docs', undefined, [undefined]), 'skillcache: grantTools must hold only strings, finite numbers, booleans, null, Arrays and plain objects, not undefined'],
  ];
  for (const [call, message] of cases) {
    const error = await refused(call, message);
    assert.equal(error.message, message);
    assert.ok(!error.message.includes('hunter2'));
  }
  // The review's own case: a list with a hole reached napi-rs.
  const holey = await refused(() => cache.connectStdio('s', sparse), 'a sparse argv');
  assert.equal(holey.message, 'skillcache: argv[1] must be a string, not undefined');
});

test('BREAK E: right types pass as before; an optional argument may be undefined or null; an option is read once', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = opened(t);
  // Every option of its type, and none at all.
  const full = new SkillCache({
    root: join(dir, 'full'),
    keyFile: join(dir, 'full.key'),
    isolation: 'guaranteed',
    approval: 'required',
    dynamic: 'decline',
    memoryTier: 1 << 20,
    originQuota: 1 << 30,
    offline: false,
    allowStale: true,
    principal: 'someone',
    requestTimeout: 5,
    connectTimeout: 5,
    lockTimeout: 5,
    locked: new LockFile(),
    maxFiles: 1024,
    maxTotalBytes: 32 << 20,
    strict: false,
    discoveryPaths: [join(dir, 'mine')],
    undefinedIsAbsent: undefined,
    root2: 'an option the addon does not take is not checked',
  });
  assert.ok(full instanceof SkillCache);
  assert.ok(new SkillCache({ root: join(dir, 'u'), keyFile: join(dir, 'u.key'), memoryTier: undefined, discoveryPaths: undefined }) instanceof SkillCache);
  // The optional arguments, absent, undefined or null: the addon's default.
  cache.connectStdio('s1', ['/bin/true'], null);
  cache.connectStdio('s2', ['/bin/true'], undefined);
  cache.connectStdio('s3', ['/bin/true'], { env: { K: 'v' }, cwd: dir, stderr: 'ignore' });
  cache.connectHttp('h1', 'http://127.0.0.1:9/mcp', { headers: { K: 'v' } });
  await cache.verify();
  await cache.verify(null);
  await cache.cachedEntries(undefined);
  await cache.gc(null);
  await cache.gc(1 << 30);
  await cache.catalog(null);
  await cache.catalog(['mine']);
  await cache.purgeAbsent(['s1']);
  assert.throws(() => cache.notify('s1', null), NotConnectedError);
  // An option's getter is read once, and what it answered is what was checked.
  let reads = 0;
  const options = { root: join(dir, 'g'), keyFile: join(dir, 'g.key') };
  Object.defineProperty(options, 'memoryTier', {
    enumerable: true,
    get() {
      reads += 1;
      return reads === 1 ? 'x' : 1 << 20;
    },
  });
  await refused(() => new SkillCache(options), 'a getter');
  assert.equal(reads, 1);
  // An option inherited from Object.prototype is no option of the host's, whatever its type.
  Object.prototype.memoryTier = 'polluted';
  try {
    assert.ok(new SkillCache({ root: join(dir, 'p'), keyFile: join(dir, 'p.key') }) instanceof SkillCache);
  } finally {
    delete Object.prototype.memoryTier;
  }
});

test('BREAK E: LoadedSkill.read of a reference that is no string rejects with the package TypeError', { timeout: 60_000 }, async (t) => {
  const { dir, cache } = opened(t);
  cache.connectStdio('docs', serveArgv(corpus, dir));
  const listing = (await within(cache.list('docs'), 20_000, 'the list')).filter((i) => !(i instanceof SkillcacheError));
  const { entry } = listing[0];
  assert.ok(entry instanceof SkillEntry);
  const skill = await within(cache.load('docs', entry), 20_000, 'the load');
  for (const [kind, value] of Object.entries(NOT_STRING)) {
    const error = await refused(() => skill.read(value), `read given ${kind}`);
    assert.equal(error.message, `skillcache: reference must be a string, not ${kind === 'a number' ? 'a number' : 'an object'}`);
    await refused(() => skill.read(value, { signal: new AbortController().signal }), `read given ${kind} with a signal`);
  }
  // A real entry, a real lock: the brand check lets them through.
  const lock = new LockFile();
  lock.insert('docs', entry);
  lock.check('docs', entry);
  assert.equal(typeof (await cache.isApproved('docs', entry)), 'boolean');
  await within(cache.checkLock(lock), 20_000, 'the check');
  // A grant of every JSON type, and a bigint, still passes.
  await cache.approve('docs', entry, { tools: ['Read', 1, true, null, 2n], nested: { a: undefined } });
});

test('BREAK E: LockFile.read of a path that is no string is the package TypeError, short, naming the type', { timeout: 60_000 }, () => {
  for (const [value, got] of [[5, 'number'], [{}, 'object'], [Buffer.alloc(1 << 20), 'object'], [null, 'null'], [undefined, 'undefined']]) {
    assert.throws(() => LockFile.read(value), (e) => {
      assert.ok(e instanceof TypeError, e.constructor.name);
      assert.equal(e.message, `skillcache: path must be a string, not ${got}`);
      return true;
    });
  }
});
