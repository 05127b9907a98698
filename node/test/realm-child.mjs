// Run by realm.test.mjs in a process of its own: after the package loaded, redefine the
// built-ins a host could (each hook calls the original and records every typed array and
// ArrayBuffer it is shown), then read every file of a skill warm, cold and through every path.
// Prints one JSON line: the files whose bytes, text or frame were wrong, and how many pool
// buffers the hooks were shown that no handed-out copy lives in.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

import skillcache from 'skillcache';
import { corpus, serveArgv } from './peers.mjs';

const { SkillCache, SkillcacheError, SkillFile } = skillcache;
const sha256 = (b) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'skillcache-realm-'));
const memoryTier = Number(process.argv[2]);
const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired', memoryTier });
cache.connectStdio('docs', serveArgv(corpus, dir));
const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
const { entry } = listing.find((i) => i.entry.files.length > 3 && i.entry.files.filter((f) => f.size <= 8 << 10).length > 2);
const skill = await cache.load('docs', entry);
for (const f of entry.files) await skill.read(f.uri); // warm: the next reads are hits

const seen = new Set();
const rawApply = Reflect.apply;
const isView = ArrayBuffer.isView;
const bufferOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const byteLengthOf = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const add = Set.prototype.add;
let inside = false; // a hook's own bookkeeping runs unhooked
const note = (v) => {
  if (v instanceof ArrayBuffer) {
    if (rawApply(byteLengthOf, v, []) === 64 << 10) rawApply(add, seen, [v]);
  } else if (isView(v)) {
    const b = rawApply(bufferOf, v, []);
    if (rawApply(byteLengthOf, b, []) === 64 << 10) rawApply(add, seen, [b]);
  }
};
const restore = [];
function hook(target, key, wrap) {
  const d = Object.getOwnPropertyDescriptor(target, key);
  restore.push(() => Object.defineProperty(target, key, d));
  if (d.get) Object.defineProperty(target, key, { ...d, get: wrap(d.get) });
  else Object.defineProperty(target, key, { ...d, value: wrap(d.value) });
}
const watching = (original) =>
  function (...args) {
    if (!inside) {
      inside = true;
      try {
        note(this);
        for (let i = 0; i < args.length; i += 1) note(args[i]);
      } finally {
        inside = false;
      }
    }
    return rawApply(original, this, args);
  };
const typedArray = Object.getPrototypeOf(Uint8Array.prototype);
hook(typedArray, 'set', watching);
hook(typedArray, 'length', watching);
hook(typedArray, 'buffer', watching);
hook(typedArray, 'subarray', watching);
hook(ArrayBuffer.prototype, 'byteLength', watching);
hook(Function.prototype, 'call', watching);
hook(Function.prototype, 'apply', watching);
hook(Reflect, 'apply', (original) => (f, t, args) => watching(original).call(undefined, f, t, args));
hook(Math, 'floor', () => (x) => Math.trunc(x) - 4000); // wrong on purpose
hook(Array, 'isArray', watching);
hook(Array.prototype, Symbol.iterator, watching);
hook(WeakMap.prototype, 'get', watching);
hook(Map.prototype, 'get', watching);
hook(TextDecoder.prototype, 'decode', watching);
hook(Buffer, 'from', watching);
hook(Buffer, 'copyBytesFrom', watching);
Object.defineProperty(Promise, Symbol.hasInstance, { configurable: true, value: (v) => { note(v); return typeof v?.then === 'function'; } });
restore.push(() => delete Promise[Symbol.hasInstance]);

const files = [];
try {
  for (let round = 0; round < 3; round += 1) {
    for (const f of entry.files) files.push([f, await skill.read(f.uri)]);
    for (const [i, file] of (await skill.readAll()).entries()) files.push([entry.files[i], file]);
  }
  const [again, loaded] = await cache.loadAll('docs', entry);
  loaded.forEach((file, i) => files.push([entry.files[i], file]));
  files.push([entry.files.find((f) => f.uri === entry.uri), again.skillMd]);
} finally {
  for (const undo of restore.reverse()) undo();
}
const lent = new Set();
const wrong = [];
for (const [f, file] of files) {
  const copy = file.bytes;
  lent.add(copy.buffer);
  if (sha256(copy) !== f.digest || file.size !== f.size || file.digest !== f.digest || file.uri !== f.uri) wrong.push(f.uri);
}
// The pieces a hook was shown while the reads ran, minus the pools copies are handed out from.
const reached = [...seen].filter((b) => !lent.has(b)).length;
// Every file frames, checked again against the entry.
for (const [, file] of files) file.framed();
// The module, required by its path: a class and pools of its own, no maker of the package's files.
const own = createRequire(import.meta.url)('../skillfile.js').define(() => 'x');
const forged = own.fromParts(skill, [Buffer.from('forged'), 1, 'docs', entry.uri, entry.files[0].digest]);
// A Promise adopts any thenable: a host that defines `then` on arrays is handed what a read's
// Promise settles with and may answer anything (here: a number, as a hit's length would be, and
// parts of another origin). That may spoil the reads of that moment, never what comes after:
// the files read before, the pool, or what the package remembers of a reference.
let adopted = 0;
const forgedParts = [Buffer.from('forged\n'), 1, 'trusted', entry.uri, entry.files[0].digest];
const answers = [-8, 7, forgedParts];
Object.defineProperty(Array.prototype, 'then', {
  configurable: true,
  get() {
    if (this === forgedParts || this.length !== 5 || !ArrayBuffer.isView(this[0])) return undefined;
    adopted += 1;
    const answer = answers[adopted % answers.length];
    return (resolve) => resolve(answer);
  },
});
const other = listing.find((i) => i.entry.uri !== entry.uri && i.entry.files.length > 2 && i.entry.files.every((f) => f.size < 64 << 10)).entry;
const cold = await cache.load('docs', other);
try {
  for (const f of other.files) await cold.read(f.uri).catch(() => {});
  for (const f of entry.files) await skill.read(f.uri, { signal: new AbortController().signal }).catch(() => {});
} finally {
  delete Array.prototype.then;
}
const spoiled = [];
for (const [f, file] of files) if (sha256(file.bytes) !== f.digest) spoiled.push(f.uri);
for (const [s, e] of [[cold, other], [skill, entry]]) {
  for (const f of e.files) {
    const file = await s.read(f.uri);
    if (sha256(file.bytes) !== f.digest || file.uri !== f.uri || file.digest !== f.digest || file.origin !== 'docs') spoiled.push(f.uri);
  }
}
console.log(JSON.stringify({ files: files.length, wrong, reached, forgedIsPackageFile: forged instanceof SkillFile, adopted, spoiled }));
rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
process.exit(0);
