'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');
const { requester } = require('./client.js');
const { define } = require('./skillfile.js');

// Built-ins taken at load: what the package calls must not be one a host redefined later.
const { apply, defineProperty } = Reflect;
const { isExternal } = require('node:util').types;
const isWellFormed = String.prototype.isWellFormed;
const resolved = Promise.resolve.bind(Promise);
const rejected = Promise.reject.bind(Promise);
const PromiseOf = Promise;
const then = Promise.prototype.then;
const immediately = setImmediate;
const TypeErrorOf = TypeError;

// An error the addon makes is made by `errors.js` in JS, where a host's setter (on
// `Object.prototype`, say) may throw: what it throws is then the rejection, so a call's Promise
// always settles.
native.registerErrors((className, message, fields) => {
  try {
    return errors.make(className, message, fields);
  } catch (thrown) {
    return thrown;
  }
});

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
    return rejected(error);
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

// Origin labels and file references are JS strings, which may hold a lone surrogate; the addon
// reads them as UTF-8, which turns each into U+FFFD, so two labels would become one origin and a
// reference would name another file. Refused here, before the addon sees them.
const wellFormed = (s) => typeof s !== 'string' || apply(isWellFormed, s, []);
function malformedLabel(what = 'an origin label') {
  return errors.make('ConfigError', `${what} must be well-formed Unicode: this one holds a lone surrogate`, {
    kind: 'invalid',
    what,
    causes: [],
  });
}
function malformedReference() {
  return errors.make('UriError', 'a file reference must be well-formed Unicode: this one holds a lone surrogate', {
    kind: 'uri',
    uri: null,
    rule: 'well-formed Unicode',
    causes: [],
  });
}

const cacheProto = native.SkillCache.prototype;
const skillProto = native.LoadedSkill.prototype;
const { loadAll } = cacheProto;
const { read, readAll } = skillProto;
const skillMd = Object.getOwnPropertyDescriptor(skillProto, 'skillMd').get;
const { SkillFile, make } = define(native);

// Every method that takes an origin label first: a malformed one throws, as the addon throws for
// any other label it refuses.
for (const name of ['connectStdio', 'connectHttp', 'connectClient', 'notify', 'disconnect', 'list', 'entry', 'refresh', 'approve', 'isApproved', 'load', 'loadAll', 'verify', 'purge', 'cachedEntries']) {
  const method = cacheProto[name];
  cacheProto[name] = {
    [name](origin, ...rest) {
      if (!wellFormed(origin)) throw malformedLabel();
      return apply(method, this, [origin, ...rest]);
    },
  }[name];
}
// A principal names whose approvals apply: two that became one would share them.
const { forPrincipal } = cacheProto;
cacheProto.forPrincipal = function forPrincipal_(principal) {
  if (!wellFormed(principal)) throw malformedLabel('a principal');
  return apply(forPrincipal, this, [principal]);
};
for (const name of ['insert', 'check']) {
  const method = native.LockFile.prototype[name];
  native.LockFile.prototype[name] = {
    [name](origin, ...rest) {
      if (!wellFormed(origin)) throw malformedLabel();
      return apply(method, this, [origin, ...rest]);
    },
  }[name];
}
const { purgeAbsent } = cacheProto;
cacheProto.purgeAbsent = function purgeAbsent_(keep) {
  for (const label of keep) if (!wellFormed(label)) throw malformedLabel();
  return apply(purgeAbsent, this, [keep]);
};
const { load } = cacheProto;
// `connectClient` hands the addon the requester of the host's client (client.js), which sends
// each request through it; the addon's method takes that requester.
const connectRequester = cacheProto.connectClient;
cacheProto.connectClient = function connectClient(origin, client) {
  return apply(connectRequester, this, [origin, requester(client)]);
};
// Without a signal, straight to the addon: a hit is a few microseconds, a closure is not free.
cacheProto.load = function (origin, entry, options) {
  if (options?.signal == null) return apply(load, this, [origin, entry]);
  return withSignal(options, (a) => apply(load, this, [origin, entry, a]));
};

/** A file the addon handed over: only ever an `External` it made. What a Promise settles with
 * passes a host's `then` (a Promise adopts any thenable), which may answer anything. */
function file(held) {
  if (!isExternal(held)) throw new TypeErrorOf('skillcache: a read settled with something other than a file');
  return make(held);
}
/** Files, from the addon's array (built with define semantics), by index, each defined on a
 * new array: an assignment would hand it to a setter on `Array.prototype` first. */
function filesOf(list) {
  const n = list.length;
  const out = [];
  for (let i = 0; i < n; i += 1) {
    defineProperty(out, i, { __proto__: null, value: file(list[i]), writable: true, enumerable: true, configurable: true });
  }
  return out;
}
const loaded = (pair) => [pair[0], filesOf(pair[1])];
cacheProto.loadAll = function (origin, entry, options) {
  if (options?.signal == null) return apply(then, apply(loadAll, this, [origin, entry]), [loaded]);
  return apply(then, withSignal(options, (a) => apply(loadAll, this, [origin, entry, a])), [loaded]);
};

// A hit settles inside its call: a loop of awaited hits runs on microtasks alone and would never
// let the event loop turn (no timer, no I/O, no abort). So after YIELD_EVERY hits settled at once
// with no turn in between, the next one settles on the next turn (`setImmediate`).
const YIELD_EVERY = 256;
let atOnce = 0;
let turning = false;
const turned = () => {
  atOnce = 0;
  turning = false;
};
function settledNow(value) {
  if (!turning) {
    turning = true;
    immediately(turned);
  }
  atOnce += 1;
  if (atOnce < YIELD_EVERY) return resolved(value);
  return new PromiseOf((resolve) => immediately(resolve, value));
}

skillProto.read = function (reference, options) {
  if (!wellFormed(reference)) return rejected(malformedReference());
  const call = (a) => {
    const value = apply(read, this, [reference, a]);
    return isExternal(value) ? settledNow(make(value)) : apply(then, value, [file]);
  };
  if (options?.signal != null) return withSignal(options, call);
  try {
    return call(undefined);
  } catch (error) {
    return rejected(error);
  }
};
skillProto.readAll = function (options) {
  if (options?.signal == null) return apply(then, apply(readAll, this, []), [filesOf]);
  return apply(then, withSignal(options, (a) => apply(readAll, this, [a])), [filesOf]);
};
Object.defineProperty(skillProto, 'skillMd', {
  get() {
    return make(apply(skillMd, this, []));
  },
  enumerable: false,
  configurable: true,
});

// `new SkillCache({ principal })`: the same for the principal it acts as.
const NativeSkillCache = native.SkillCache;
const SkillCacheChecked = new Proxy(NativeSkillCache, {
  construct(target, args, newTarget) {
    const principal = args[0]?.principal;
    if (!wellFormed(principal)) throw malformedLabel('a principal');
    return Reflect.construct(target, args, newTarget === SkillCacheChecked ? target : newTarget);
  },
});

const { registerErrors: _registerErrors, errorKinds: _errorKinds, _fileBytes, _fileText, _fileFramed, _fileOrigin, _fileUri, _fileDigest, _fileSize, _fileFlags, ...api } = native;
const { make: _make, ...classes } = errors;
module.exports = { ...api, SkillCache: SkillCacheChecked, SkillFile, ...classes };
