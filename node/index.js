'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');
const { requester } = require('./client.js');
const { SkillFile, fromParts, fromRoom, kept, POOLED_MAX } = require('./skillfile.js');

native.registerErrors(errors.make);

// `connectClient` hands the addon the requester of the host's client (client.js), which sends
// each request through it; the addon's method takes that requester.
const connectRequester = native.SkillCache.prototype.connectClient;
native.SkillCache.prototype.connectClient = function connectClient(origin, client) {
  return connectRequester.call(this, origin, requester(client));
};

// `{ signal }` (an AbortSignal) on load, loadAll, read and readAll: the addon's method takes an
// Aborter, aborted when the signal is (at once if it already is), which drops the call's work
// where it stands; the AbortError it rejects with gets the signal's reason as its `cause`. The
// listener goes when the call settles, so one signal may serve any number of calls.
function withSignal(options, call) {
  const signal = options?.signal;
  const aborter = new native.Aborter();
  const abort = () => aborter.abort();
  if (signal.aborted) abort();
  else signal.addEventListener('abort', abort, { once: true });
  const done = () => signal.removeEventListener('abort', abort);
  return call(aborter).then(
    (value) => {
      done();
      return value;
    },
    (error) => {
      done();
      if (error instanceof errors.AbortError) error.cause = signal.reason;
      throw error;
    },
  );
}

const cacheProto = native.SkillCache.prototype;
const skillProto = native.LoadedSkill.prototype;
const { load, loadAll } = cacheProto;
const { read, readAll } = skillProto;
const skillMd = Object.getOwnPropertyDescriptor(skillProto, 'skillMd').get;
// Without a signal, straight to the addon: a hit is a few microseconds, a closure is not free.
cacheProto.load = function (origin, entry, options) {
  if (options?.signal == null) return load.call(this, origin, entry);
  return withSignal(options, (a) => load.call(this, origin, entry, a));
};
const loaded = ([skill, files]) => [skill, files.map((f) => fromParts(skill, f))];
cacheProto.loadAll = function (origin, entry, options) {
  if (options?.signal == null) return loadAll.call(this, origin, entry).then(loaded);
  return withSignal(options, (a) => loadAll.call(this, origin, entry, a)).then(loaded);
};

// A read's origin, URI and digest, by skill and reference, from its first read: they cannot
// change for one loaded skill (its entry is fixed), and with them known a hit's answer is only
// its bytes, copied into the `kept` pool, and its flags (see skillfile.js).
const described = new WeakMap();
function descriptions(skill) {
  let known = described.get(skill);
  if (known === undefined) {
    known = new Map();
    described.set(skill, known);
  }
  return known;
}
/** What a read answered (a number: bytes in the room; an array: the file's parts) as a file. */
function answered(skill, reference, known, value) {
  if (typeof value === 'number') return fromRoom(skill, value, known);
  const file = fromParts(skill, value);
  if (known === undefined) descriptions(skill).set(reference, [file.origin, file.uri, file.digest]);
  return file;
}
/** The addon's answer to a read (thrown, a value, or a Promise of one) as a Promise. */
function promised(call) {
  let value;
  try {
    value = call();
  } catch (error) {
    return Promise.reject(error);
  }
  return value instanceof Promise ? value : Promise.resolve(value);
}
skillProto.read = function (reference, options) {
  const known = described.get(this)?.get(reference);
  if (options?.signal != null) {
    // Not the hit's path: the file's parts, never the pool (an abort may come after the call).
    const call = (a) => promised(() => read.call(this, reference, EMPTY, 0, false, a));
    return withSignal(options, call).then((p) => answered(this, reference, known, p));
  }
  // The room is taken (fromRoom) right after the call, with no JS run in between: the addon
  // calls JS only through thread-safe calls, which wait for the event loop.
  let value;
  try {
    value = read.call(this, reference, kept.room(POOLED_MAX), kept.at, known !== undefined);
  } catch (error) {
    return Promise.reject(error);
  }
  if (value instanceof Promise) return value.then((p) => answered(this, reference, known, p));
  return Promise.resolve(answered(this, reference, known, value));
};
const files = (skill) => (parts) => parts.map((p) => fromParts(skill, p));
skillProto.readAll = function (options) {
  if (options?.signal == null) return readAll.call(this).then(files(this));
  return withSignal(options, (a) => readAll.call(this, a)).then(files(this));
};
// The `SKILL.md` cannot change for one loaded skill: its file is made once.
const skillMds = new WeakMap();
Object.defineProperty(skillProto, 'skillMd', {
  get() {
    let file = skillMds.get(this);
    if (file === undefined) {
      file = fromParts(this, skillMd.call(this));
      skillMds.set(this, file);
    }
    return file;
  },
  enumerable: false,
  configurable: true,
});
const EMPTY = Buffer.alloc(0);

const { registerErrors: _registerErrors, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, SkillFile, ...classes };
