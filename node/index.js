'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');
const { requester } = require('./client.js');
const { define } = require('./skillfile.js');

native.registerErrors(errors.make);

// `connectClient` hands the addon the requester of the host's client (client.js), which sends
// each request through it; the addon's method takes that requester.
const connectRequester = native.SkillCache.prototype.connectClient;
native.SkillCache.prototype.connectClient = function connectClient(origin, client) {
  return connectRequester.call(this, origin, requester(client));
};

// Built-ins taken at load: what the package calls while it holds a file's bytes must not be
// one a host redefined later (skillfile.js says why).
const { apply } = Reflect;
const isArray = Array.isArray;
const weakGet = WeakMap.prototype.get;
const weakSet = WeakMap.prototype.set;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
const resolved = Promise.resolve.bind(Promise);
const rejected = Promise.reject.bind(Promise);
const then = Promise.prototype.then;

// `{ signal }` (an AbortSignal) on load, loadAll, read and readAll: the addon's method takes an
// Aborter, aborted when the signal is (at once if it already is), which drops the call's work
// where it stands; the AbortError it rejects with gets the signal's reason as its `cause`. The
// listener goes when the call settles, so one signal may serve any number of calls.
function withSignal(options, call) {
  const signal = options.signal;
  let done = () => {};
  let settled;
  try {
    const aborter = new native.Aborter();
    const abort = () => aborter.abort();
    if (signal.aborted) abort();
    else {
      signal.addEventListener('abort', abort, { once: true });
      done = () => signal.removeEventListener('abort', abort);
    }
    settled = call(aborter);
  } catch (error) {
    // Not an AbortSignal, or the call refused its arguments: a rejection, as any other error.
    done();
    return Promise.reject(error);
  }
  return apply(then, settled, [
    (value) => {
      done();
      return value;
    },
    (error) => {
      done();
      if (error instanceof errors.AbortError) error.cause = signal.reason;
      throw error;
    },
  ]);
}

const cacheProto = native.SkillCache.prototype;
const skillProto = native.LoadedSkill.prototype;
const { load, loadAll } = cacheProto;
const { read, readAll } = skillProto;
const skillMd = Object.getOwnPropertyDescriptor(skillProto, 'skillMd').get;
// The addon's frame, taken now: a file calls this one, whatever the prototype says later.
const { SkillFile, fromParts, fromRoom, kept } = define(skillProto._frame);
// Without a signal, straight to the addon: a hit is a few microseconds, a closure is not free.
cacheProto.load = function (origin, entry, options) {
  if (options?.signal == null) return load.call(this, origin, entry);
  return withSignal(options, (a) => load.call(this, origin, entry, a));
};
/** Files of `skill` from the addon's list of parts, by index (no array method a host may
 * have redefined). */
function filesOf(skill, list) {
  const n = list.length;
  const out = new Array(n);
  for (let i = 0; i < n; i += 1) out[i] = fromParts(skill, list[i]);
  return out;
}
const loaded = (pair) => [pair[0], filesOf(pair[0], pair[1])];
cacheProto.loadAll = function (origin, entry, options) {
  if (options?.signal == null) return apply(then, apply(loadAll, this, [origin, entry]), [loaded]);
  return apply(then, withSignal(options, (a) => apply(loadAll, this, [origin, entry, a])), [loaded]);
};

// A read's origin, URI and digest, by skill and reference, from its first read: they cannot
// change for one loaded skill (its entry is fixed), and with them known a hit's answer is only
// its bytes, copied into the `kept` pool, and its flags (see skillfile.js). Bounded: references
// come from models and users, and any fragment resolves (`a.md#…` is `a.md`).
const MEMO_REFERENCES = 4096;
const MEMO_REFERENCE_LENGTH = 512;
const described = new WeakMap();
function remember(skill, reference, parts) {
  if (typeof reference !== 'string' || reference.length > MEMO_REFERENCE_LENGTH) return;
  let known = apply(weakGet, described, [skill]);
  if (known === undefined) {
    known = new Map();
    apply(weakSet, described, [skill, known]);
  }
  if (apply(mapSize, known, []) < MEMO_REFERENCES) apply(mapSet, known, [reference, [parts[2], parts[3], parts[4]]]);
}
/** A read's parts the addon returned at once, as a file: remembered only from these. What a
 * Promise settles with is not: a host that defines `then` on arrays is handed it first (a
 * Promise adopts any thenable) and may answer anything, which must not outlive that one read. */
function answeredNow(skill, reference, known, parts) {
  if (known === undefined) remember(skill, reference, parts);
  return fromParts(skill, parts);
}
/** What a read's Promise settled with: only ever parts. */
function answeredLater(skill, parts) {
  if (!isArray(parts)) throw new TypeError('skillcache: a read settled with something other than a file');
  return fromParts(skill, parts);
}
skillProto.read = function (reference, options) {
  const memo = apply(weakGet, described, [this]);
  const known = memo === undefined ? undefined : apply(mapGet, memo, [reference]);
  if (options?.signal != null) {
    // Not the hit's path: the file's parts, never the pool (an abort may come after the call).
    const call = (a) => {
      const value = apply(read, this, [reference, EMPTY, 0, 0, a]);
      return isArray(value) ? resolved(answeredNow(this, reference, known, value)) : apply(then, value, [(p) => answeredLater(this, p)]);
    };
    return withSignal(options, call);
  }
  // From the addon's copy into the room to `fromRoom`'s taking it, nothing runs that a host
  // could have redefined, and the addon calls JS only through thread-safe calls, which wait for
  // the event loop: no other read can take the same room.
  let value;
  try {
    value = apply(read, this, [reference, kept.room(), kept.at, known === undefined ? 0 : kept.end]);
  } catch (error) {
    return rejected(error);
  }
  if (typeof value === 'number') return resolved(fromRoom(this, value, known));
  if (isArray(value)) return resolved(answeredNow(this, reference, known, value));
  return apply(then, value, [(p) => answeredLater(this, p)]);
};
skillProto.readAll = function (options) {
  const files = (list) => filesOf(this, list);
  if (options?.signal == null) return apply(then, apply(readAll, this, []), [files]);
  return apply(then, withSignal(options, (a) => apply(readAll, this, [a])), [files]);
};
// The `SKILL.md` cannot change for one loaded skill: its file is made once.
const skillMds = new WeakMap();
Object.defineProperty(skillProto, 'skillMd', {
  get() {
    let file = apply(weakGet, skillMds, [this]);
    if (file === undefined) {
      file = fromParts(this, apply(skillMd, this, []));
      apply(weakSet, skillMds, [this, file]);
    }
    return file;
  },
  enumerable: false,
  configurable: true,
});
const EMPTY = Buffer.alloc(0);

const { registerErrors: _registerErrors, errorKinds: _errorKinds, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, SkillFile, ...classes };
