// Run by realm.test.mjs in a process of its own: redefine what a host's dependency could — before
// the package loads (`before`) or after (`after`) — then read every file of a skill warm, cold and
// through every path, and attack the copies handed out. Every hook records each ArrayBuffer,
// typed array and addon handle it is shown. At the end every ArrayBuffer any hook or the host
// ever saw is written over, and every file must still hand out its verified bytes, text and
// frame. Prints one JSON line.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { types } from 'node:util';
import { Worker } from 'node:worker_threads';

const memoryTier = Number(process.argv[2]);
const when = process.argv[3];
const sha256 = (b) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const rawApply = Reflect.apply;
const isView = ArrayBuffer.isView;
const bufferOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const add = Set.prototype.add;
const buffers = new Set(); // every ArrayBuffer a hook was shown
let externals = 0; // addon handles a hook was shown
let inside = false; // a hook's own bookkeeping runs unhooked
const note = (v) => {
  if (inside) return;
  inside = true;
  try {
    if (types.isExternal(v)) externals += 1;
    else if (v instanceof ArrayBuffer) rawApply(add, buffers, [v]);
    else if (isView(v)) rawApply(add, buffers, [rawApply(bufferOf, v, [])]);
  } finally {
    inside = false;
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
    note(this);
    for (let i = 0; i < args.length; i += 1) note(args[i]);
    return rawApply(original, this, args);
  };
const typedArray = Object.getPrototypeOf(Uint8Array.prototype);
function hookTypedArrays() {
  for (const key of ['set', 'length', 'buffer', 'byteOffset', 'byteLength', 'subarray', 'slice']) hook(typedArray, key, watching);
  hook(ArrayBuffer.prototype, 'byteLength', watching);
  hook(Buffer, 'from', watching);
  hook(Buffer, 'copyBytesFrom', watching);
  hook(TextDecoder.prototype, 'decode', watching);
}
if (when === 'before') hookTypedArrays();

const { default: skillcache } = await import('skillcache');
const { corpus, serveArgv } = await import('./peers.mjs');
const { SkillCache, SkillcacheError, SkillFile } = skillcache;
const dir = mkdtempSync(join(tmpdir(), 'skillcache-realm-'));
const cache = new SkillCache({ root: join(dir, 'cache'), keyFile: join(dir, 'host.key'), approval: 'notRequired', memoryTier });
cache.connectStdio('docs', serveArgv(corpus, dir));
const listing = (await cache.list('docs')).filter((i) => !(i instanceof SkillcacheError));
const small = (e) => e.files.length > 3 && e.files.filter((f) => f.size <= 8 << 10).length > 2;
const { entry } = listing.find((i) => small(i.entry));
const other = listing.find((i) => i.entry.uri !== entry.uri && i.entry.files.length > 2 && i.entry.files.every((f) => f.size < 64 << 10)).entry;
const skill = await cache.load('docs', entry);
for (const f of entry.files) await skill.read(f.uri); // warm: the next reads are hits

if (when === 'after') hookTypedArrays();
hook(Function.prototype, 'call', watching);
hook(Function.prototype, 'apply', watching);
hook(Reflect, 'apply', (original) => (f, t, args) => watching(original).call(undefined, f, t, args));
hook(Math, 'floor', () => (x) => Math.trunc(x) - 4000); // wrong on purpose
hook(Array, 'isArray', watching);
hook(Array.prototype, Symbol.iterator, watching);
hook(WeakMap.prototype, 'get', watching);
hook(Map.prototype, 'get', watching);
Object.defineProperty(Promise, Symbol.hasInstance, { configurable: true, value: (v) => { note(v); return typeof v?.then === 'function'; } });
restore.push(() => delete Promise[Symbol.hasInstance]);
// Index setters on arrays: a [[Set]] of a new array's element would hand them the value. Each
// records what it is given, writes over it when it is bytes, and then defines the element, so the
// host's own arrays work as before.
let setterCalls = 0;
for (let i = 0; i < 5; i += 1) {
  Object.defineProperty(Array.prototype, i, {
    configurable: true,
    get: () => undefined,
    set(v) {
      if (!inside) {
        if (isView(v) || types.isExternal(v) || v instanceof SkillFile) setterCalls += 1;
        note(v);
        if (isView(v)) new Uint8Array(rawApply(bufferOf, v, [])).fill(0x41);
      }
      Object.defineProperty(this, i, { value: v, writable: true, enumerable: true, configurable: true });
    },
  });
  restore.push(() => delete Array.prototype[i]);
}
// A `then` getter on every object: each Promise resolved with an object consults it.
let thenSeen = 0;
Object.defineProperty(Object.prototype, 'then', {
  configurable: true,
  get() {
    thenSeen += 1;
    note(this);
    return undefined;
  },
});
restore.push(() => delete Object.prototype.then);

const files = [];
const whole = []; // [what, expected length, actual length] of every array the package returned
const own = (list) => list.filter(() => true); // the host's own copy of a returned array
try {
  for (let round = 0; round < 3; round += 1) {
    for (const f of entry.files) files.push([f, await skill.read(f.uri)]);
    const all = await skill.readAll();
    whole.push(['readAll', entry.files.length, own(all).length]);
    for (const [i, file] of all.entries()) files.push([entry.files[i], file]);
  }
  const [again, loaded] = await cache.loadAll('docs', entry);
  whole.push(['loadAll', entry.files.length, own(loaded).length]);
  loaded.forEach((file, i) => files.push([entry.files[i], file]));
  files.push([entry.files.find((f) => f.uri === entry.uri), again.skillMd]);
  const cold = await cache.load('docs', other); // misses: through the runtime and back
  for (const f of other.files) files.push([f, await cold.read(f.uri)]);
  for (const f of entry.files) files.push([f, await skill.read(f.uri, { signal: new AbortController().signal })]);
  const relisted = await cache.list('docs');
  whole.push(['list', listing.length, own(relisted).filter((i) => !(i instanceof SkillcacheError)).length]);
  whole.push(['entry.files', entry.files.length, own(relisted.find((i) => i.entry?.uri === entry.uri).entry.files).length]);
} finally {
  for (const undo of restore.reverse()) undo();
}

// Copies handed out, attacked: a byte stream takes one (its buffer is transferred), `transfer()`
// takes another, a worker is posted a third and writes over it.
const streamed = files[0][1].bytes;
const stream = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(streamed); c.close(); } });
const reader = stream.getReader();
const chunk = (await reader.read()).value;
new Uint8Array(chunk.buffer).fill(0x42);
// `ArrayBuffer.prototype.transfer` from Node 21; structuredClone's transfer before.
const transfer = (b) => (typeof b.transfer === 'function' ? b.transfer() : structuredClone(b, { transfer: [b] }));
const taken = files[1][1].bytes;
const transferred = transfer(taken.buffer);
new Uint8Array(transferred).fill(0x43);
const posted = files[2][1].bytes;
const worker = new Worker('const { parentPort } = require("node:worker_threads"); parentPort.on("message", (b) => { new Uint8Array(b).fill(0x44); parentPort.postMessage(b, [b]); });', { eval: true });
worker.postMessage(posted.buffer, [posted.buffer]);
const back = await new Promise((resolve) => worker.once('message', resolve));
await worker.terminate();
buffers.add(chunk.buffer).add(transferred).add(back);

// Every copy handed out, and everything a hook saw, written over.
const lent = files.map(([, file]) => file.bytes);
for (const b of [...buffers, ...lent.map((c) => c.buffer)]) if (b.byteLength > 0 && !b.detached) new Uint8Array(b).fill(0x45);
const shared = new Set(files.map(([, file]) => file.bytes.buffer)).size !== files.length;
const wrong = [];
for (const [f, file] of files) {
  const copy = file.bytes;
  if (sha256(copy) !== f.digest || file.size !== f.size || file.digest !== f.digest || file.uri !== f.uri || file.origin !== 'docs' || !file.verified) wrong.push(f.uri);
  else if (!file.framed().includes(f.digest)) wrong.push(`${f.uri} (frame)`);
  if (copy.byteOffset !== 0 || copy.buffer.byteLength !== copy.length) wrong.push(`${f.uri} (a copy in a shared buffer)`);
}
for (const f of entry.files) {
  const file = await skill.read(f.uri);
  if (sha256(file.bytes) !== f.digest || file.uri !== f.uri || file.digest !== f.digest || file.origin !== 'docs') wrong.push(`${f.uri} (read after)`);
}
// The module, required by its path: a class of its own, no maker of the package's files.
const forged = createRequire(import.meta.url)('../skillfile.js').define({}).make({});
const out = {
  files: files.length,
  wrong: wrong.slice(0, 8),
  wrongCount: wrong.length,
  shared,
  whole: whole.filter(([, want, got]) => want !== got),
  setterCalls,
  externals,
  thenSeen,
  streamDetached: streamed.length === 0 && taken.length === 0,
  forgedIsPackageFile: forged instanceof SkillFile,
};
console.log(JSON.stringify(out));
rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
process.exit(0);
