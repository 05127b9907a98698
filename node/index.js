'use strict';
// The `skillcache` package: the addon's classes (native.js, napi-rs's loader) and the error
// classes (errors.js), which the addon is given here, once, to make its errors with.
const native = require('./native.js');
const errors = require('./errors.js');
const { requester } = require('./client.js');
const { define } = require('./skillfile.js');

// Built-ins taken at load: what the package calls must not be one a host redefined later.
const { apply, construct, defineProperty } = Reflect;
const { freeze, keys: ownKeys } = Object;
const hasOwn = Object.hasOwn;
const { isArray } = Array;
const { isExternal } = require('node:util').types;
const isWellFormed = String.prototype.isWellFormed;
const resolved = Promise.resolve.bind(Promise);
const rejected = Promise.reject.bind(Promise);
const PromiseOf = Promise;
const then = Promise.prototype.then;
const immediately = setImmediate;
const TypeErrorOf = TypeError;
// An `AbortSignal` is read through the built-in accessors and methods, taken at load: a host's
// dependency that redefines them later (`EventTarget.prototype.addEventListener`, a getter for
// `aborted`) must not make a call unabortable or settle it with its own value.
const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get;
const reasonOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'reason').get;
const { addEventListener: listen, removeEventListener: unlisten } = EventTarget.prototype;
const { isProxy } = require('node:util').types;
// Node tells an `AbortSignal`'s listeners by calling its `dispatchEvent` by name, which a host's
// dependency may redefine; so the package also looks at every pending call's `aborted` itself,
// this often, with one timer of its own for all of them (a hook is shown no resource of a call).
const ABORT_POLL_MS = 50;
const everyOf = setInterval;
const stopEvery = clearInterval;
const unrefOf = (() => {
  const probe = setInterval(() => {}, 1_000_000);
  const { unref } = Object.getPrototypeOf(probe);
  clearInterval(probe);
  return unref;
})();
const { set: pendingSet, delete: pendingDelete, forEach: pendingEach } = Map.prototype;
const pendingSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
/** Every signalled call still pending, by a token of its own: its signal, and what aborts it. */
const watched = new Map();
const STARTING = { __proto__: null };
let poller = null;
/** Looks at each pending call's signal; a signal the built-in accessor cannot read any more is
 * no longer watched (its listener still is). Never throws: it runs from a timer. */
function poll() {
  apply(pendingEach, watched, [
    (call, token) => {
      let aborted = false;
      try {
        aborted = apply(abortedOf, call.signal, []);
      } catch {
        apply(pendingDelete, watched, [token]);
      }
      if (aborted) call.abort();
    },
  ]);
}
/** Watches `signal` for one pending call; the returned function stops it. Whatever a host's code
 * does to the timer (a hook shown it may throw or make clearing it do nothing) is caught: it can
 * at most leave the timer running, never change a call's outcome. */
function watch(signal, abort) {
  const token = { __proto__: null };
  apply(pendingSet, watched, [token, { __proto__: null, signal, abort }]);
  if (poller === null) {
    // Marked before the timer is made: a hook shown the new timer may start a call of its own
    // (which must not make a second timer), or end every call before this one returns.
    poller = STARTING;
    let timer = null;
    try {
      timer = everyOf(poll, ABORT_POLL_MS);
      apply(unrefOf, timer, []);
    } catch {
    } finally {
      // Never left marked with no timer behind it, whatever was thrown on the way.
      if (poller === STARTING) poller = null;
    }
    if (poller === null && timer !== null && apply(pendingSize, watched, []) > 0) poller = timer;
    else stop(timer);
  }
  return () => {
    apply(pendingDelete, watched, [token]);
    if (apply(pendingSize, watched, []) === 0 && poller !== null && poller !== STARTING) {
      const timer = poller;
      poller = null;
      stop(timer);
    }
  };
}
/** Clears the poll timer; what a host's code throws while it does is ignored. */
function stop(timer) {
  if (timer === null) return;
  try {
    stopEvery(timer);
  } catch {}
}

/** The refusal of a call whose Promise the package could not wait on. */
const altered = () =>
  new TypeErrorOf("skillcache: the call's Promise was altered by the host (a Promise hook or a species), so its answer was not taken");

/** Waits on `promise`, an addon Promise that settles as a pair (`[true, value]` or
 * `[false, error]`, frozen, never a rejection), and calls `onValue(value)` or `onError(error)`.
 * Its reactions are registered with the built-in `then`, which the engine calls with what the
 * addon really settled with. `then` also makes a Promise of its own, with
 * `promise.constructor[Symbol.species]`, which a host may have redefined: an own `constructor`
 * that is `undefined` makes it the built-in `Promise`, so nothing of the host's runs. Where that
 * define fails (a Promise hook made the Promise non-extensible, or gave it a `constructor` of its
 * own, at its birth), or `then` throws, the call is refused with the package's own error, and
 * the addon's Promise is left alone: it never rejects, so nothing goes unhandled. The reactions
 * return nothing: what a reaction returns is what `then`'s own Promise settles with, which a
 * host's species would be handed. */
function react(promise, onValue, onError) {
  if (!defineProperty(promise, 'constructor', { __proto__: null, value: undefined })) {
    onError(altered());
    return;
  }
  try {
    apply(then, promise, [
      (pair) => {
        if (pair[0] === true) onValue(pair[1]);
        else onError(pair[1]);
      },
      () => {
        onError(altered());
      },
    ]);
  } catch {
    onError(altered());
  }
}

/** A Promise of the package's own (`Promise` taken at load) that settles with `onValue(v)` (or
 * rejects with `onError(e)`, or what either throws) once the addon's pair Promise `promise`
 * settles; on the next turn of the event loop when `pace` is true. Never `promise.then(...)`'s
 * own result: `then` makes the Promise it returns with `promise.constructor[Symbol.species]`,
 * which a host may redefine to settle it with anything. */
function after(promise, onValue, onError, pace = false) {
  return new PromiseOf((resolve, reject) => {
    const fulfil = (value) => {
      if (pace) nextTurn(resolve, value);
      else resolve(value);
    };
    const refuse = (error) => {
      if (pace) nextTurn(reject, error);
      else reject(error);
    };
    react(
      promise,
      (value) => {
        try {
          fulfil(onValue(value));
        } catch (error) {
          refuse(error);
        }
      },
      (error) => {
        try {
          refuse(onError === undefined ? error : onError(error));
        } catch (thrown) {
          refuse(thrown);
        }
      },
    );
  });
}
// Taken at load too, from the package's own modules: `errors.js`'s exports are frozen, and
// `native.js` is napi-rs's loader, whose exports object a host could write to before a call.
const makeError = errors.make;
const { AbortError } = errors;
const { Aborter } = native;

// An error the addon makes is made by `errors.js` in JS, where a host's setter (on
// `Object.prototype`, say) may throw: what it throws is then the rejection, so a call's Promise
// always settles.
native.registerErrors((className, message, fields) => {
  try {
    return makeError(className, message, fields);
  } catch (thrown) {
    return thrown;
  }
});

// `{ signal }` (an AbortSignal) on load, loadAll, read and readAll: the addon's method takes an
// Aborter, aborted when the signal is (at once if it already is), which drops the call's work
// where it stands; the AbortError it rejects with gets the signal's reason as its `cause`. The
// listener goes when the call settles, so one signal may serve any number of calls. `call`
// starts the addon's call with the Aborter: what it returns (a pair Promise, or for a read
// answered at once the file it holds) settles the Promise returned with `onValue(value)`.
function withSignal(signal, call, onValue, pace = false) {
  let done = () => {};
  let aborter;
  try {
    // A Proxy passes the built-in accessors (they read through it) and can throw at any later
    // read: only a signal itself is taken.
    if (isProxy(signal)) throw new TypeErrorOf('a Proxy');
    aborter = new Aborter();
    const abort = () => {
      aborter.abort();
    };
    if (apply(abortedOf, signal, [])) abort();
    else {
      apply(listen, signal, ['abort', abort, { __proto__: null, once: true }]);
      const unwatch = watch(signal, abort);
      // Never decides the call's outcome: what a host's code throws here is ignored.
      done = () => {
        unwatch();
        try {
          apply(unlisten, signal, ['abort', abort]);
        } catch {}
      };
    }
  } catch {
    // Not an AbortSignal (the built-in accessors refuse anything else), or one whose listener
    // cannot be added: the package's own refusal, never what a host's code threw.
    return refusedNow(new TypeErrorOf('skillcache: options.signal must be an AbortSignal'));
  }
  let started;
  try {
    started = call(aborter);
  } catch (error) {
    // The call refused its arguments (a rejection, as any other error), or its signal had
    // aborted already.
    done();
    return refusedNow(error instanceof AbortError ? abortedBy(signal) : error);
  }
  if (isExternal(started)) {
    done();
    return settledNow(onValue(started));
  }
  return after(
    started,
    (value) => {
      done();
      return onValue(value);
    },
    (error) => {
      done();
      // The addon settles an abort as `null`: the error is made here.
      return error === null ? abortedBy(signal) : error;
    },
    pace,
  );
}

/** The `AbortError` of a call `signal` aborted, made here, never the addon's: `cause` is the
 * signal's reason (defined, not assigned: a setter on `Error.prototype.cause` sees none of it),
 * and it is frozen with its fields, as every error a call settles with is. */
function abortedBy(signal) {
  let reason;
  try {
    reason = apply(reasonOf, signal, []);
  } catch {
    reason = undefined;
  }
  const error = new AbortError('the operation was aborted', { __proto__: null, code: 'ABORT_ERR', causes: freeze([]) });
  defineProperty(error, 'cause', { __proto__: null, value: reason, writable: true, configurable: true });
  return freeze(error);
}

/** `options.signal` if the host's options object has it as its own: one inherited from
 * `Object.prototype` is no choice of the host's (it would abort every call). */
function signalIn(options) {
  if (options === null || (typeof options !== 'object' && typeof options !== 'function')) return undefined;
  return hasOwn(options, 'signal') ? options.signal : undefined;
}

// Origin labels and file references are JS strings, which may hold a lone surrogate; the addon
// reads them as UTF-8, which turns each into U+FFFD, so two labels would become one origin and a
// reference would name another file. Refused here, before the addon sees them.
const wellFormed = (s) => typeof s !== 'string' || apply(isWellFormed, s, []);

// The type rule: every argument and option value the package hands the addon has the type the
// addon takes, checked here before the addon sees it. napi-rs's own conversion would throw a bare
// `Error` that names Rust types and echoes the whole value as JSON: a 1 MB Buffer made a 3 MB
// message, and a DAG of 30 shared objects (2^30 copies) minutes and gigabytes. One `typeof` per
// value; for the addon's classes, their brand, asked of one of the class's own getters taken at
// load (the addon checks the value's type tag, and no code of a host's runs: a Proxy, a forged
// prototype or another class of the addon's is no brand). A refusal is the built-in `TypeError`
// (taken at load), which names the argument or option as JS spells it and the type it was given,
// never the value.
const brandOf = (Class, getter) => Object.getOwnPropertyDescriptor(Class.prototype, getter).get;
const BRANDS = { __proto__: null, SkillEntry: brandOf(native.SkillEntry, 'isDynamic'), LockFile: brandOf(native.LockFile, 'skills') };
/** What each type is called in a refusal. */
const EXPECTED = {
  __proto__: null,
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  object: 'an object',
  stringOrNumber: 'a string or a number',
  SkillEntry: 'a SkillEntry',
  LockFile: 'a LockFile',
};
/** Whether `value` is of `type` (a key of `EXPECTED`). An `object` is what `plain` copies: an
 * object or a function, not `null`. */
function isOf(value, type) {
  const got = typeof value;
  if (type === 'object') return value !== null && (got === 'object' || got === 'function');
  if (type === 'stringOrNumber') return got === 'string' || got === 'number';
  const brand = BRANDS[type];
  if (brand === undefined) return got === type;
  if (value === null || got !== 'object') return false;
  try {
    apply(brand, value, []);
    return true;
  } catch {
    return false;
  }
}
/** `value`'s type for a refusal: what `typeof` says, never the value. */
function typeName(value) {
  if (value === null) return 'null';
  const got = typeof value;
  if (got === 'undefined') return 'undefined';
  return `${got === 'object' ? 'an' : 'a'} ${got}`;
}
/** The refusal of `value` where `what` (`what[index]` for a list's item) must be `expected`. */
function wrongType(what, expected, value, index) {
  const at = index === undefined ? what : `${what}[${index}]`;
  return new TypeErrorOf(`skillcache: ${at} must be ${expected}, not ${typeName(value)}`);
}
/** `null` if `value` is of `type` (or, where `optional`, `undefined` or `null`: the addon's
 * default), else the refusal. */
function mistyped(value, type, what, optional = false, index = undefined) {
  if (optional && (value === undefined || value === null)) return null;
  return isOf(value, type) ? null : wrongType(what, EXPECTED[type], value, index);
}
/** `value`, if it is of `type` (see `mistyped`); else throws the refusal. */
function typed(value, type, what, optional = false, index = undefined) {
  const wrong = mistyped(value, type, what, optional, index);
  if (wrong !== null) throw wrong;
  return value;
}
/** Each option of the copy `options` (`plain`'s) that `types` names, of its type: an option
 * left `undefined` was never copied (the addon's default); any other value, `null` too, must be
 * of the type (the addon takes no `null` for an option). A list is checked by `copied`. */
function typedOptions(options, types, names) {
  for (let i = 0; i < names.length; i += 1) {
    const name = names[i];
    if (types[name] !== 'list' && hasOwn(options, name)) typed(options[name], types[name], name);
  }
}
function malformedLabel(what = 'an origin label') {
  return makeError('ConfigError', `${what} must be well-formed Unicode: this one holds a lone surrogate`, {
    kind: 'invalid',
    what,
    causes: [],
  });
}
/** A value the host gave that is larger than the package takes. */
function tooLarge(what) {
  return makeError('ConfigError', `${what} is refused`, { kind: 'invalid', what, causes: [] });
}
function malformedReference(what = 'a file reference') {
  return makeError('UriError', `${what} must be well-formed Unicode: this one holds a lone surrogate`, {
    kind: 'uri',
    uri: null,
    rule: 'well-formed Unicode',
    causes: [],
  });
}

const cacheProto = native.SkillCache.prototype;
const skillProto = native.LoadedSkill.prototype;
const { read, readAll } = skillProto;
const skillMd = Object.getOwnPropertyDescriptor(skillProto, 'skillMd').get;
const { SkillFile, make } = define(native);

// The type of each argument the wrapped methods take, by its name in index.d.ts (`?`: optional,
// where the addon takes `undefined` or `null` as its default).
const PARAMS = { __proto__: null, origin: 'string', uri: 'string', url: 'string', principal: 'string', handle: 'string', path: 'string', entry: 'SkillEntry', lock: 'LockFile', maxBytes: 'number' };
// Every method that takes an origin label first: a malformed one throws, as the addon throws for
// any other label it refuses; and so does every other string argument (a skill URI, a URL), which
// would otherwise name another skill once the addon reads it as UTF-8. Each argument `params`
// names is of its type first. The arguments are read by index (`arguments`, no iterator a host
// could redefine; none past its length, which `Object.prototype` would answer) and handed on as
// they were checked.
function checked(method, name, params, label) {
  const names = [];
  const types = [];
  const optional = [];
  for (const param of params.split(' ').filter(Boolean)) {
    const bare = param.endsWith('?') ? param.slice(0, -1) : param;
    names.push(bare);
    types.push(PARAMS[bare]);
    optional.push(bare !== param);
  }
  return {
    [name]() {
      const n = arguments.length;
      for (let i = 0; i < names.length; i += 1) typed(i < n ? arguments[i] : undefined, types[i], names[i], optional[i]);
      if (!wellFormed(arguments[0])) throw malformedLabel(label);
      for (let i = 1; i < n; i += 1) if (!wellFormed(arguments[i])) throw malformedReference('a skill URI or URL');
      return apply(method, this, arguments);
    },
  }[name];
}
// connectStdio's argv and the connect methods' options are checked by their wrappers below,
// approve's grant by `granted`, load's signal by `signalIn`.
for (const [name, params] of [
  ['connectStdio', 'origin'],
  ['connectHttp', 'origin url'],
  ['connectClient', 'origin'],
  ['notify', 'origin uri?'],
  ['disconnect', 'origin'],
  ['list', 'origin'],
  ['entry', 'origin uri'],
  ['refresh', 'origin uri'],
  ['approve', 'origin entry'],
  ['isApproved', 'origin entry'],
  ['load', 'origin entry'],
  ['loadAll', 'origin entry'],
  ['verify', 'origin?'],
  ['purge', 'origin'],
  ['cachedEntries', 'origin?'],
  ['checkLock', 'lock'],
  ['gc', 'maxBytes?'],
]) {
  cacheProto[name] = checked(cacheProto[name], name, params);
}
// A principal names whose approvals apply: two that became one would share them.
cacheProto.forPrincipal = checked(cacheProto.forPrincipal, 'forPrincipal', 'principal', 'a principal');
// A catalog handle (`origin:name`) names an origin too.
for (const name of ['get', 'has']) {
  native.Catalog.prototype[name] = checked(native.Catalog.prototype[name], name, 'handle', 'a catalog handle');
}
// Taken once the checks are in place: the wrappers below call the checked methods.
const { loadAll } = cacheProto;
for (const name of ['insert', 'check']) {
  native.LockFile.prototype[name] = checked(native.LockFile.prototype[name], name, 'origin entry');
}
// A lock file's path (napi-rs makes the static `LockFile.read` fixed: that one is not wrapped),
// and the host's own skill names a catalog is checked against.
native.LockFile.prototype.write = checked(native.LockFile.prototype.write, 'write', 'path', 'a path');
const { catalog } = cacheProto;
cacheProto.catalog = function catalog_(localNames) {
  const names = copied(localNames, 'localNames', true);
  for (let i = 0; isArray(names) && i < names.length; i += 1) {
    if (!wellFormed(names[i])) throw malformedLabel('a local skill name');
  }
  return apply(catalog, this, [names]);
};

// The binding layer's bounds (binding/src/bounds.rs), the Python package's too: items and
// characters of one list or table, and a grant's depth, values and characters.
const [LIST_MAX, TEXT_MAX, GRANT_DEPTH, GRANT_VALUES, GRANT_CHARS] = native._bounds();
const protoOf = Object.getPrototypeOf;
const ObjectPrototype = Object.prototype;
const { isSafeInteger, isFinite } = Number;
/** A length the package walks: a whole number, not negative (a Proxy's may be anything). */
const isCount = (n) => isSafeInteger(n) && n >= 0;
/** A copy of the host's array `list`, read once by index (its length, then each element) into
 * an array of the package's own: what is checked is the copy, and the copy is what the addon
 * gets, so a getter or a Proxy cannot answer the check one thing and the addon another. */
function copied(list, what, optional = false) {
  // Absent (an optional list): the addon's default. Anything else that is no Array (a typed
  // array, an array-like, a string) is the package's TypeError, not napi-rs's bare Error; and so
  // is an item that is no string (a hole of a sparse array is `undefined`).
  if (optional && (list === undefined || list === null)) return list;
  if (!isArray(list)) throw new TypeErrorOf(`skillcache: ${what}: a list must be an Array of strings, not ${typeName(list)}`);
  const n = list.length;
  // A sparse array's length is no count of what it holds: bounded before it is walked (a number
  // read once: a Proxy's `length` object could answer the check one count and the loop another).
  if (!isCount(n) || n > LIST_MAX) throw tooLarge('a list of more than 65,536 items');
  const out = [];
  let chars = 0;
  for (let i = 0; i < n; i += 1) {
    const item = typed(list[i], 'string', what, false, i);
    // The addon copies each string once per reference: the characters in all are bounded too.
    chars += item.length;
    if (chars > TEXT_MAX) throw tooLarge('a list of more than 16 MiB of text');
    defineProperty(out, i, { __proto__: null, value: item, writable: true, enumerable: true, configurable: true });
  }
  return out;
}
/** The same for an options object: each of `names` the object has as its own property, and each
 * own key, read once onto an object with no prototype (so none of `Object.prototype` is read). */
function plain(options, names) {
  if (options === null || (typeof options !== 'object' && typeof options !== 'function')) return options;
  const out = { __proto__: null };
  const take = (name) => {
    // Own properties only: an option inherited from `Object.prototype` (a polluted
    // `Object.prototype.approval = 'notRequired'`) is no choice of the host's.
    if (hasOwn(out, name) || !hasOwn(options, name)) return;
    const value = options[name];
    if (value !== undefined) defineProperty(out, name, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
  };
  for (let i = 0; i < names.length; i += 1) take(names[i]);
  const own = ownKeys(options);
  for (let i = 0; i < own.length; i += 1) take(own[i]);
  return out;
}
// Each option's type (index.d.ts's `CacheOptions`); its names are the options `plain` reads.
const CACHE_OPTION_TYPES = {
  __proto__: null,
  root: 'string',
  keyFile: 'string',
  isolation: 'string',
  approval: 'string',
  dynamic: 'string',
  memoryTier: 'number',
  originQuota: 'number',
  offline: 'boolean',
  allowStale: 'boolean',
  principal: 'string',
  requestTimeout: 'number',
  connectTimeout: 'number',
  lockTimeout: 'number',
  locked: 'LockFile',
  maxFiles: 'number',
  maxTotalBytes: 'number',
  strict: 'boolean',
  discoveryPaths: 'list',
};
const CACHE_OPTIONS = ownKeys(CACHE_OPTION_TYPES);
/** The connect methods' options (`StdioOptions`, `HttpOptions`): `env` and `headers` are tables
 * of strings, checked by the wrapper. */
const CONNECT_OPTION_TYPES = {
  connectStdio: { __proto__: null, env: 'object', cwd: 'string', stderr: 'stringOrNumber' },
  connectHttp: { __proto__: null, headers: 'object' },
};
/** What a user granted of a skill's tools (`approve`'s third argument), copied once (own keys
 * and elements, read once) with every string and key checked: a lone surrogate would name
 * another tool, or drop a key, once the addon reads it as UTF-8. */
function granted(value, budget, depth = 0, item = false) {
  if (typeof value === 'string') {
    spend(budget, value);
    if (!wellFormed(value)) throw malformedLabel('a granted tool');
    return value;
  }
  if (value === null || typeof value !== 'object') {
    // Of the type rule too: what the addon takes as JSON. `undefined` is no grant (the whole
    // argument) or left out (an object's value), but no item of an Array.
    const got = typeof value;
    if (value === null || got === 'boolean' || got === 'bigint' || (got === 'number' && isFinite(value)) || (value === undefined && !item)) return value;
    throw new TypeErrorOf(
      `skillcache: grantTools must hold only strings, finite numbers, booleans, null, Arrays and plain objects, not ${got === 'number' ? 'NaN or an infinite number' : typeName(value)}`,
    );
  }
  // Bounded, as the library bounds a grant: nesting, values and characters in all (a cycle or a
  // shared part is copied once per path, and the addon copies each string it is handed once per
  // reference, so each path and each reference is counted, never a hang or an allocation past
  // the machine's memory).
  if (depth > GRANT_DEPTH) throw tooLarge('a grant nested deeper than 32 levels');
  // Only plain objects and arrays are tables of tools: a typed array or a boxed string would
  // have every index walked as a key before any bound.
  const proto = isArray(value) ? null : protoOf(value);
  if (proto !== null && proto !== ObjectPrototype) throw tooLarge('a grant that is not a plain object or array');
  const out = isArray(value) ? [] : { __proto__: null };
  const n = isArray(value) ? value.length : 0;
  if (!isCount(n)) throw tooLarge('a grant whose length is not a count');
  const names = isArray(value) ? [] : ownKeys(value);
  budget.left -= isArray(value) ? n : names.length;
  if (!(budget.left >= 0)) throw tooLarge('a grant of more than 10,000 values');
  for (let i = 0; i < n; i += 1) {
    defineProperty(out, i, { __proto__: null, value: granted(value[i], budget, depth + 1, true), writable: true, enumerable: true, configurable: true });
  }
  for (let i = 0; i < names.length; i += 1) {
    spend(budget, names[i]);
    if (!wellFormed(names[i])) throw malformedLabel('a granted tool');
    defineProperty(out, names[i], { __proto__: null, value: granted(value[names[i]], budget, depth + 1), writable: true, enumerable: true, configurable: true });
  }
  return out;
}
/** Counts `text`'s characters against `budget.chars`: past it, the grant is refused. */
function spend(budget, text) {
  budget.chars -= text.length;
  if (!(budget.chars >= 0)) throw tooLarge('a grant of more than 1 MiB of text');
}
const { approve } = cacheProto;
cacheProto.approve = function approve_(origin, entry, grantTools) {
  if (arguments.length < 3) return apply(approve, this, [origin, entry]);
  return apply(approve, this, [origin, entry, granted(grantTools, { __proto__: null, left: GRANT_VALUES, chars: GRANT_CHARS })]);
};
const { purgeAbsent } = cacheProto;
cacheProto.purgeAbsent = function purgeAbsent_(keep) {
  const labels = copied(keep, 'keep');
  for (let i = 0; isArray(labels) && i < labels.length; i += 1) {
    if (!wellFormed(labels[i])) throw malformedLabel();
  }
  return apply(purgeAbsent, this, [labels]);
};
const { load } = cacheProto;
// `connectClient` hands the addon the requester factory of the host's client (client.js), which
// sends each request through it and reports each outcome to the addon's own settle function.
const connectRequester = cacheProto.connectClient;
cacheProto.connectClient = function connectClient(origin, client) {
  return apply(connectRequester, this, [origin, requester(client)]);
};
// Without a signal, straight to the addon: a hit is a few microseconds, a closure is not free.
// The signal is read once: what the check saw is what the call uses.
cacheProto.load = function (origin, entry, options) {
  const signal = signalIn(options);
  if (signal == null) return apply(load, this, [origin, entry]);
  return withSignal(signal, (a) => apply(load, this, [origin, entry, a]), (skill) => skill);
};

/** A file the addon handed over: only ever an `External` it made. What a Promise settles with
 * passes a host's `then` (a Promise adopts any thenable), which may answer anything. */
function file(held) {
  if (!isExternal(held)) throw new TypeErrorOf('skillcache: a read settled with something other than a file');
  return make(held);
}
/** Files, from the addon's array (built with define semantics), by index, each defined on a
 * new array: an assignment would hand it to a setter on `Array.prototype` first. Frozen, as
 * everything a call settles with is: a hook that reacts to the Promise first cannot write to it. */
function filesOf(list) {
  const n = list.length;
  const out = [];
  for (let i = 0; i < n; i += 1) {
    defineProperty(out, i, { __proto__: null, value: file(list[i]), writable: true, enumerable: true, configurable: true });
  }
  return freeze(unthenable(out));
}
/** `value` (an array this file made) with an own `then` (`undefined`, fixed, not enumerable):
 * a Promise resolved with it looks `then` up, and one a host defined on `Array.prototype` or
 * `Object.prototype` would be handed the Promise's resolve and could settle it with other files. */
function unthenable(value) {
  defineProperty(value, 'then', { __proto__: null, value: undefined });
  return value;
}
const loaded = (pair) => {
  const out = [];
  defineProperty(out, 0, { __proto__: null, value: pair[0], writable: true, enumerable: true, configurable: true });
  defineProperty(out, 1, { __proto__: null, value: filesOf(pair[1]), writable: true, enumerable: true, configurable: true });
  return freeze(unthenable(out));
};
cacheProto.loadAll = function (origin, entry, options) {
  const signal = signalIn(options);
  if (signal == null) return after(apply(loadAll, this, [origin, entry]), loaded);
  return withSignal(signal, (a) => apply(loadAll, this, [origin, entry, a]), loaded);
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
/** Counts one call answered with no turn of the event loop since the last; true once the turn is
 * due. A refusal counts as a hit does: a loop of refused reads starved timers just the same. */
function turnDue() {
  // Scheduled before it is marked: a throw on the way (the stack's limit) leaves it unmarked,
  // so the next call schedules it, never a mark with nothing scheduled behind it.
  if (!turning) {
    immediately(turned);
    turning = true;
  }
  atOnce += 1;
  return atOnce >= YIELD_EVERY;
}
// What is settled on the next turn waits here, never in the `Immediate` itself: an
// `async_hooks` `init` hook is handed every `Immediate` at its birth, and one that held a
// `resolve` and its answer would let the hook settle the call first, or swap the answer.
let queue = [];
let scheduled = false;
/** Settles what waited for this turn (an `Immediate` with no arguments runs it). */
function drain() {
  const batch = queue;
  queue = [];
  scheduled = false;
  for (let i = 0; i + 1 < batch.length; i += 2) batch[i](batch[i + 1]);
}
/** `settle(value)` on the next turn of the event loop. */
function nextTurn(settle, value) {
  // The drain is scheduled, then marked, then the answer queued: a throw anywhere on the way
  // (the stack's limit) leaves no answer queued with nothing to drain it.
  if (!scheduled) {
    immediately(drain);
    scheduled = true;
  }
  const at = queue.length;
  defineProperty(queue, at, { __proto__: null, value: settle, writable: true, enumerable: true, configurable: true });
  defineProperty(queue, at + 1, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
}
function settledNow(value) {
  if (!turnDue()) return resolved(value);
  return new PromiseOf((resolve) => {
    nextTurn(resolve, value);
  });
}
function refusedNow(error) {
  if (!turnDue()) return rejected(error);
  return new PromiseOf((_, reject) => {
    nextTurn(reject, error);
  });
}
skillProto.read = function (reference, options) {
  const wrong = mistyped(reference, 'string', 'reference');
  if (wrong !== null) return refusedNow(wrong);
  if (!wellFormed(reference)) return refusedNow(malformedReference());
  const signal = signalIn(options);
  if (signal != null) return withSignal(signal, (a) => apply(read, this, [reference, a]), file, turnDue());
  let value;
  try {
    value = apply(read, this, [reference]);
  } catch (error) {
    return refusedNow(error);
  }
  return isExternal(value) ? settledNow(make(value)) : after(value, file, undefined, turnDue());
};
skillProto.readAll = function (options) {
  const signal = signalIn(options);
  if (signal == null) return after(apply(readAll, this, []), filesOf);
  return withSignal(signal, (a) => apply(readAll, this, [a]), filesOf);
};
Object.defineProperty(skillProto, 'skillMd', {
  get() {
    return make(apply(skillMd, this, []));
  },
  enumerable: false,
  configurable: true,
});

// `new SkillCache(options)`: the options read once into a copy, the principal checked on the copy
// (as `forPrincipal`'s), and the copy alone handed to the addon.
const NativeSkillCache = native.SkillCache;
const SkillCacheChecked = new Proxy(NativeSkillCache, {
  construct(target, args, newTarget) {
    // `args` is the engine's Array: none past its length (`Array.prototype` would answer).
    const options = plain(typed(args.length > 0 ? args[0] : undefined, 'object', 'options', true), CACHE_OPTIONS);
    if (options !== null && typeof options === 'object') {
      typedOptions(options, CACHE_OPTION_TYPES, CACHE_OPTIONS);
      if (!wellFormed(options.principal)) throw malformedLabel('a principal');
      // Paths too: two that differ only in a lone surrogate would name one folder.
      if (!wellFormed(options.root) || !wellFormed(options.keyFile)) throw malformedLabel('a path');
      const local = options.discoveryPaths === undefined ? undefined : copied(options.discoveryPaths, 'discoveryPaths');
      for (let i = 0; isArray(local) && i < local.length; i += 1) if (!wellFormed(local[i])) throw malformedLabel('a path');
      if (isArray(local)) defineProperty(options, 'discoveryPaths', { __proto__: null, value: local, writable: true, enumerable: true, configurable: true });
    }
    return construct(target, [options], newTarget === SkillCacheChecked ? target : newTarget);
  },
});
// `new cache.constructor(options)` must meet the same checks: the addon's class is reached
// through the prototype's `constructor` too.
defineProperty(cacheProto, 'constructor', { __proto__: null, value: SkillCacheChecked, writable: true, configurable: true });

// `await using cache = new SkillCache(…)` (explicit resource management, where the engine or a
// compiler gives it): leaving the scope, failed or not, waits for the store, as `flush()` does,
// so that what the scope loaded is on disk before whatever follows (a temporary root removed).
// The symbol is the engine's own (Node 20.4 and later), taken when the package loads.
const asyncDispose = Symbol.asyncDispose;
const flushMethod = cacheProto.flush;
if (typeof asyncDispose === 'symbol') {
  defineProperty(cacheProto, asyncDispose, {
    __proto__: null,
    value: { [asyncDispose.description]() { return apply(flushMethod, this, []); } }[asyncDispose.description],
    writable: true,
    configurable: true,
  });
}

// The connect methods' options, the same way: a copy is what the addon reads, once, each option
// of its type, and each value of a table a string.
for (const name of ['connectStdio', 'connectHttp']) {
  const method = cacheProto[name];
  const types = CONNECT_OPTION_TYPES[name];
  const names = ownKeys(types);
  // `env` or `headers`: the option that is a table of strings.
  const tables = names.filter((key) => types[key] === 'object');
  cacheProto[name] = {
    [name](origin, target, options) {
      const argv = name === 'connectStdio' ? copied(target, 'argv') : target;
      const opts = plain(typed(options, 'object', 'options', true), names);
      if (opts !== null && typeof opts === 'object') typedOptions(opts, types, names);
      if (opts !== null && typeof opts === 'object' && !wellFormed(opts.cwd)) throw malformedLabel('a path');
      // The strings inside are checked as the arguments are: a lone surrogate in an argument,
      // an environment variable or a header would reach the server as U+FFFD.
      if (isArray(argv)) for (let i = 0; i < argv.length; i += 1) if (!wellFormed(argv[i])) throw malformedReference('an argument');
      for (let t = 0; t < tables.length; t += 1) {
        const key = tables[t];
        // Absent, or an object (`typedOptions` refused anything else).
        const table = opts !== null && typeof opts === 'object' ? opts[key] : undefined;
        if (table === undefined) continue;
        const copy = plain(table, []);
        const keysOf = ownKeys(copy);
        const each = `each value of ${key}`;
        let chars = 0;
        for (let i = 0; i < keysOf.length; i += 1) {
          if (i >= LIST_MAX) throw tooLarge(key === 'env' ? 'an environment of more than 16 MiB' : 'headers of more than 16 MiB');
          typed(copy[keysOf[i]], 'string', each);
          chars += keysOf[i].length + copy[keysOf[i]].length;
          if (chars > TEXT_MAX) throw tooLarge(key === 'env' ? 'an environment of more than 16 MiB' : 'headers of more than 16 MiB');
          if (!wellFormed(keysOf[i]) || !wellFormed(copy[keysOf[i]])) {
            throw malformedReference(key === 'env' ? 'an environment variable' : 'a header');
          }
        }
        defineProperty(opts, key, { __proto__: null, value: copy, writable: true, enumerable: true, configurable: true });
      }
      return apply(method, this, [origin, argv, opts]);
    },
  }[name];
}

// A load returns its files at once and the cache stores them behind it (write-behind); Node runs
// no finalizer when the process exits, so what is still on its way is stored here, for every
// cache of the process (at most 10 s; a copy not stored is a miss next time, never a wrong byte).
const flushAll = native._flushAll;
process.once('exit', () => {
  flushAll(10_000);
});

const { registerErrors: _registerErrors, errorKinds: _errorKinds, _fileBytes, _fileText, _fileFramed, _fileOrigin, _fileUri, _fileDigest, _fileSize, _fileFlags, _bounds, _flushAll, ...api } = native;
const { make: _make, FIELDS: _fields, ...classes } = errors;
// Frozen, prototypes and all: a dependency loaded after the package cannot redefine a getter of
// `SkillFile` (to report text the bytes never held while `verified` stays true), a method of the
// cache, or what the package exports. A host's own subclass still extends them.
for (const exported of [...Object.values(api), ...Object.values(classes)]) {
  // The class too, not only its prototype: a `Symbol.hasInstance` defined on it would make any
  // object pass `instanceof` (`new Error() instanceof ServerError`).
  if (typeof exported === 'function' && exported.prototype) {
    // A Promise resolved with an instance (a loaded skill, an entry, a file) looks `then` up: an
    // own `then` of the prototype answers before `Object.prototype`'s, where a host's dependency
    // could define one that settles the Promise with something else.
    // (`SkillFile`'s own is defined by skillfile.js, which freezes it.)
    if (!hasOwn(exported.prototype, 'then')) defineProperty(exported.prototype, 'then', { __proto__: null, value: undefined });
    freeze(exported.prototype);
    freeze(exported);
  }
}
module.exports = freeze({ ...api, SkillCache: SkillCacheChecked, SkillFile, ...classes });
