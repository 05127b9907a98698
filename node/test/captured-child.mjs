// Run by captured.test.mjs in a process of its own. After the package loaded, a host's
// dependency writes over what the package's own modules export (the error factory of errors.js,
// the addon loader's `Aborter`), defines a `then` on `Object.prototype` that settles every
// Promise it is consulted for with a forged answer, then a `Promise[Symbol.species]` that does
// the same for every Promise `then` derives, a `Symbol.hasInstance` on `Error` and a field getter
// on `Error.prototype`; last, Promise hooks (`v8.promiseHooks`) that alter every Promise at its
// birth, around a host's own client and the addon's Promises. Every call must still answer with
// the package's own values. Prints one JSON line.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const sc = require('skillcache');
const [dir, bin] = process.argv.slice(2);

const out = { forgedAborter: false, forgedThen: 0, wrong: [] };
const modules = Object.values(require.cache);
const errorsModule = modules.find((m) => m.filename.endsWith(join('node', 'errors.js')))?.exports;
const native = modules.map((m) => m.exports).find((e) => e && typeof e.registerErrors === 'function');
out.errorsFrozen = Object.isFrozen(errorsModule);
try {
  errorsModule.make = () => new Error('forged');
} catch {}
native.Aborter = function Aborter() {
  out.forgedAborter = true;
  return { abort() {} };
};

const skills = join(dir, 'skills');
mkdirSync(join(skills, 'notes', 'refs'), { recursive: true });
writeFileSync(join(skills, 'notes', 'SKILL.md'), '---\nname: notes\ndescription: Takes notes.\n---\nSee refs/a.md.\n');
writeFileSync(join(skills, 'notes', 'refs', 'a.md'), 'verified bytes\n');
const cache = new sc.SkillCache({ root: join(dir, 'root'), keyFile: join(dir, 'host.key'), approval: 'notRequired' });
cache.connectStdio('docs', [bin, 'serve', skills]);
const lock = new sc.LockFile();
const [listed] = await cache.list('docs');
lock.insert('docs', listed.entry);
lock.insert('gone', listed.entry);

// From here on every Promise resolved with an object asks this getter for its `then`.
Object.defineProperty(Object.prototype, 'then', {
  configurable: true,
  get() {
    return (resolve) => {
      out.forgedThen += 1;
      resolve({ forged: true, isClean: true, drift: [], verified: true, text: 'forged' });
    };
  },
});
const check = (what, ok) => {
  if (!ok) out.wrong.push(what);
};
try {
  const info = await cache.entry('docs', 'skill://notes/SKILL.md');
  check('entry', info instanceof sc.EntryInfo);
  const skill = await cache.load('docs', info.entry);
  check('load', skill instanceof sc.LoadedSkill);
  const file = await skill.read('refs/a.md');
  check('read', file instanceof sc.SkillFile && file.text === 'verified bytes\n');
  const all = await skill.readAll();
  check('readAll', Array.isArray(all) && all.length === 2 && all.every((f) => f instanceof sc.SkillFile));
  const pair = await cache.loadAll('docs', info.entry);
  check('loadAll', Array.isArray(pair) && pair[0] instanceof sc.LoadedSkill && pair[1].length === 2);
  const lockCheck = await cache.checkLock(lock);
  check('checkLock', lockCheck.isClean === false && lockCheck.drift.length === 1 && lockCheck.drift[0].kind === 'unlisted');
  check('list', (await cache.list('docs')).length === 1);
  check('origins', JSON.stringify(await cache.origins()) === '["docs"]');
  check('inventory', typeof (await cache.inventory()).blobs === 'number');
  check('cachedEntries', (await cache.cachedEntries()).length === 1);
  check('verify', (await cache.verify()).corrupt.length === 0);
  check('gc', !('forged' in (await cache.gc())));
  const refused = await cache.list('never-connected').then(
    () => null,
    (e) => e,
  );
  check('error', refused instanceof sc.NotConnectedError && refused.origin === 'never-connected');
  const aborted = await cache.load('docs', info.entry, { signal: AbortSignal.abort() }).then(
    () => null,
    (e) => e,
  );
  check('abort', aborted instanceof sc.AbortError);
} finally {
  delete Object.prototype.then;
}

// Then `Promise[Symbol.species]`, which the built-in `then` makes its result with: a species
// that settles every derived Promise with a forged file. And `Symbol.hasInstance` on `Error`,
// which `instanceof` reaches from every error class, and a getter on `Error.prototype` for a
// field an error's kind lacks.
const forged = { forged: true, text: 'forged', verified: true };
const NativePromise = Promise;
class Forging extends NativePromise {
  constructor(executor) {
    super((resolve, reject) => executor(() => resolve(forged), reject));
  }
  static get [Symbol.species]() {
    return NativePromise;
  }
}
Object.defineProperty(NativePromise, Symbol.species, { configurable: true, get: () => Forging });
Object.defineProperty(Error, Symbol.hasInstance, { configurable: true, value: (v) => v?.message === 'forged' });
Object.defineProperty(Error.prototype, 'uri', { configurable: true, get: () => 'skill://forged/SKILL.md' });
try {
  const info = await cache.entry('docs', 'skill://notes/SKILL.md');
  const signal = new AbortController().signal;
  const skill = await cache.load('docs', info.entry, { signal });
  check('species load', skill instanceof sc.LoadedSkill);
  const file = await skill.read('refs/a.md', { signal });
  check('species read', file instanceof sc.SkillFile && file.text === 'verified bytes\n');
  const all = await skill.readAll();
  check('species readAll', Array.isArray(all) && all.every((f) => f instanceof sc.SkillFile));
  const pair = await cache.loadAll('docs', info.entry);
  check('species loadAll', pair[0] instanceof sc.LoadedSkill && pair[1].every((f) => f.text !== 'forged'));
  check('hasInstance forged', !(new Error('forged') instanceof sc.ServerError));
  let refused = null;
  try {
    await cache.list('never-connected');
  } catch (e) {
    refused = e;
  }
  check('hasInstance genuine', refused instanceof sc.SkillcacheError && refused instanceof sc.NotConnectedError);
  check('absent field', Object.hasOwn(refused, 'uri') && refused.uri === null);
} finally {
  delete NativePromise[Symbol.species];
  delete Error[Symbol.hasInstance];
  delete Error.prototype.uri;
}
// Last, a species getter that throws (its throw would have been the call's rejection), and a
// `toJSON` on `Object.prototype` while a host's own client answers (it would have rewritten the
// answer on its way to the addon).
const sha = (text) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
const REAL = '---\nname: a\ndescription: Skill a.\n---\nthe server published this\n';
const entryOf = { uri: 'skill://a/SKILL.md', frontmatter: { name: 'a', description: 'Skill a.' }, resources: [{ uri: 'skill://a/SKILL.md', digest: sha(REAL), size: REAL.length }] };
const client = {
  async request(req) {
    if (req.method === 'skills/list') return structuredClone({ skills: [entryOf] });
    if (req.method === 'skills/get') return structuredClone({ skill: entryOf });
    return structuredClone({ contents: [{ uri: 'skill://a/SKILL.md', text: REAL }] });
  },
};
cache.connectClient('client', client);
Object.defineProperty(NativePromise, Symbol.species, { configurable: true, get() { throw new Error('forged'); } });
Object.defineProperty(Object.prototype, 'toJSON', { configurable: true, value: () => ({ skills: [], contents: [{ uri: 'skill://a/SKILL.md', text: 'forged' }] }) });
try {
  const info = await cache.entry('docs', 'skill://notes/SKILL.md');
  const pair = await cache.loadAll('docs', info.entry);
  check('throwing species loadAll', pair[0] instanceof sc.LoadedSkill && pair[1].length === 2);
  const [listedByClient] = await cache.list('client');
  const [, files] = await cache.loadAll('client', listedByClient.entry);
  check('toJSON client', files[0].text === REAL && files[0].verified === true);
} finally {
  delete NativePromise[Symbol.species];
  delete Object.prototype.toJSON;
}
// And around a host's client: `Promise[Symbol.hasInstance]` answering false with a
// `Promise.prototype.then` that rewrites answers; an `Object.prototype.then` getter while the client
// fails (the outcome the package resolves with is its own object); getters on `Object.prototype`
// for `code` and on `Error.prototype` for `cause` (napi-rs reads `cause` when it throws an error).
const failing = {
  request: async () => {
    throw new Error('connection reset by peer');
  },
};
cache.connectClient('failing', failing);
const realThen = NativePromise.prototype.then;
Object.defineProperty(NativePromise, Symbol.hasInstance, { configurable: true, value: () => false });
NativePromise.prototype.then = function (onValue, onError) {
  const forge = (v) => (v !== null && typeof v === 'object' && Array.isArray(v.contents) ? { contents: [{ uri: 'skill://a/SKILL.md', text: 'forged' }] } : v);
  return realThen.call(this, onValue && ((v) => onValue(forge(v))), onError);
};
try {
  const [, files] = await cache.loadAll('client', (await cache.entry('client', 'skill://a/SKILL.md')).entry);
  check('hasInstance client', files[0].text === REAL);
} finally {
  NativePromise.prototype.then = realThen;
  delete NativePromise[Symbol.hasInstance];
}
Object.defineProperty(Object.prototype, 'then', { configurable: true, get: () => (resolve) => resolve(JSON.stringify({ skills: [] })) });
Object.defineProperty(Object.prototype, 'code', { configurable: true, get: () => -32602 });
Object.defineProperty(Error.prototype, 'cause', { configurable: true, get: () => new sc.DeclinedError('forged', {}) });
try {
  let failed = null;
  try {
    await cache.list('failing');
  } catch (e) {
    failed = e;
  }
  check('failing client', failed instanceof sc.TransportError && failed.origin === 'failing');
  let thrown = null;
  try {
    sc.LockFile.read(join(dir, 'absent.lock'));
  } catch (e) {
    thrown = e;
  }
  check('cause getter', thrown instanceof sc.StoreError);
} finally {
  delete Object.prototype.then;
  delete Object.prototype.code;
  delete Error.prototype.cause;
}
// A Promise hook installed after load, as tracing libraries install one (`v8.promiseHooks`):
// it is handed every new Promise at its birth, before the package sees it. First it gives each an
// own `then` (fixed, so no define of the package's can replace it) that rewrites any answer
// holding `contents`: a Promise of the package's that the addon waited on would hand the addon
// the forgery, which its entry (listed through the same hook) would then agree with.
const REAL2 = '---\nname: b\ndescription: Skill b.\n---\nonly this was published\n';
const entryB = { uri: 'skill://b/SKILL.md', frontmatter: { name: 'b', description: 'Skill b.' }, resources: [{ uri: 'skill://b/SKILL.md', digest: sha(REAL2), size: REAL2.length }] };
const FORGED_B = '---\nname: b\ndescription: Skill b.\n---\nforged by the hook\n';
const forgedEntryB = { ...entryB, resources: [{ uri: 'skill://b/SKILL.md', digest: sha(FORGED_B), size: FORGED_B.length }] };
cache.connectClient('hooked', {
  async request(req) {
    if (req.method === 'skills/list') return structuredClone({ skills: [entryB] });
    if (req.method === 'skills/get') return structuredClone({ skill: entryB });
    return structuredClone({ contents: [{ uri: 'skill://b/SKILL.md', text: REAL2 }] });
  },
});
const { promiseHooks } = await import('node:v8');
const rewrite = (v) => {
  if (typeof v === 'string' && v.includes('only this was published')) return v.replace('only this was published', 'forged by the hook');
  if (typeof v === 'string' && v.includes(sha(REAL2))) return v.replace(sha(REAL2), sha(FORGED_B));
  if (v && typeof v === 'object' && Array.isArray(v.contents)) return { contents: [{ uri: 'skill://b/SKILL.md', text: FORGED_B }] };
  if (v && typeof v === 'object' && v.skill) return { skill: forgedEntryB };
  return v;
};
let stopHook = promiseHooks.onInit((promise) => {
  Object.defineProperty(promise, 'then', {
    value(onValue, onError) {
      return realThen.call(this, onValue && ((v) => onValue(rewrite(v))), onError);
    },
  });
});
try {
  const info = await cache.entry('hooked', 'skill://b/SKILL.md');
  const [, files] = await cache.loadAll('hooked', info.entry);
  check('promise hook then: entry', info.entry.files[0].digest === sha(REAL2));
  check('promise hook then: bytes', files[0].text === REAL2 && files[0].verified === true);
} catch (e) {
  check(`promise hook then: ${e?.message}`, false);
} finally {
  stopHook();
}
// Then one that gives the first Promise made during a call (the addon's) a `constructor` of its
// own whose species throws, fixed, and makes it non-extensible: the package cannot wait on it with
// nothing of the host's running. The call must reject with the package's own refusal, never the
// host's value, and never settle with anything else.
class Throwing extends NativePromise {
  static get [Symbol.species]() {
    throw new Error('forged');
  }
}
let armed = 0;
stopHook = promiseHooks.onInit((promise) => {
  if (armed === 0) return;
  armed -= 1;
  Object.defineProperty(promise, 'constructor', { value: Throwing });
  Object.preventExtensions(promise);
});
try {
  const info = await cache.entry('docs', 'skill://notes/SKILL.md');
  armed = 1;
  const call = cache.loadAll('docs', info.entry);
  armed = 0;
  const outcome = await call.then(
    (v) => ({ value: v }),
    (e) => ({ error: e }),
  );
  check('promise hook species: refused by the package', outcome.error instanceof TypeError && outcome.error.message.startsWith('skillcache:'));
} finally {
  armed = 0;
  stopHook();
}
// A server's refusal reported by a client whose error has an integer code: a getter for `name` on
// `Error.prototype` (answering 'McpError', as the 1.x SDK names its own failures) must not turn it
// into a failure of the client.
cache.connectClient('refusing', {
  request: async () => {
    throw Object.assign(new Error('no such skill'), { code: -32000 });
  },
});
const errorName = Object.getOwnPropertyDescriptor(Error.prototype, 'name');
Object.defineProperty(Error.prototype, 'name', { configurable: true, get: () => 'McpError' });
try {
  let refused = null;
  try {
    await cache.list('refusing');
  } catch (e) {
    refused = e;
  }
  check('inherited name', refused instanceof sc.ServerError && refused.code === -32000);
} finally {
  Object.defineProperty(Error.prototype, 'name', errorName);
}
cache.disconnect('docs');
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
