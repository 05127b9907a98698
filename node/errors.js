'use strict';
// The package's error classes: one per kind of the Rust `skillcache::Error`, all under
// `SkillcacheError`. The addon makes every instance through `make`, which `index.js` hands it
// once: the class by name, the library's message (display-safe, with its cause chain), and the
// report's fields (`skillcache-binding`, the table the Python package shares), as camelCase
// properties.

// What a field may never replace: the message is the library's, the name the class's. A
// server's own text is `serverMessage`, never `message`.
const KEPT = new Set(['message', 'name', 'stack', 'constructor']);
// Taken at load: a host that replaces these later (`Object.assign`, `Object.defineProperty`)
// cannot forge or drop an error's fields.
const { keys, defineProperty } = Object;
const keptHas = Set.prototype.has.bind(KEPT);
const { captureStackTrace } = Error;
// Every field any kind of error has (the shared report's names, camelCase; errors.d.ts types
// them): each is an own property of every error, `null` where its kind has none, so reading one
// a kind lacks (`origin` of a `LimitExceededError`, `changes` of a refused approval) never falls
// through to `Error.prototype`, where a host's getter could answer it. node/test/errors.test.mjs
// checks the list against the report's source.
const FIELDS = [
  'kind', 'causes', 'actual', 'after', 'ageMs', 'changes', 'code', 'column', 'declared', 'diffs', 'digest',
  'errno', 'expected', 'field', 'found', 'holder', 'limit', 'line', 'location', 'max', 'method',
  'mismatch', 'missing', 'op', 'origin', 'path', 'problem', 'quota', 'reason', 'root', 'rule',
  'serverMessage', 'size', 'skill', 'supported', 'text', 'uri', 'waited', 'what', 'why',
];

// Defines on `error` every field of `FIELDS` and then `fields`'s own, as own data properties
// (defined, never set, so a setter on a prototype sees none of it), and an own `cause` (none):
// napi-rs reads `cause` when it throws or rejects with the error, and an inherited one (a host's
// getter on `Error.prototype`) would replace the error. A field the error's kind lacks is `null`
// and not enumerable: still its own, never `Error.prototype`'s, but an uncaught error that Node
// prints shows only the fields that say something (a newcomer's try saw 40, mostly `null`).
function defineFields(error, fields, skip) {
  for (let i = 0; i < FIELDS.length; i += 1) {
    defineProperty(error, FIELDS[i], { value: null, enumerable: false, writable: true, configurable: true });
  }
  defineProperty(error, 'cause', { value: undefined, writable: true, configurable: true });
  const names = keys(fields ?? {});
  for (let i = 0; i < names.length; i += 1) {
    const key = names[i];
    if (skip(key)) continue;
    const value = fields[key];
    defineProperty(error, key, { value, enumerable: value !== null, writable: true, configurable: true });
  }
}

class SkillcacheError extends Error {
  constructor(message, fields) {
    super(message);
    defineProperty(this, 'name', { value: new.target.name, writable: true, configurable: true });
    // Every field of the variant (`kind`, `origin`, `uri`, …) and `causes`, the messages of
    // the Rust cause chain: plain data, never anything the addon holds. A field may never
    // replace the message (the library's) or the name (the class's).
    defineFields(this, fields, keptHas);
  }
}

class UriError extends SkillcacheError {}
class EntryError extends SkillcacheError {}
class LimitExceededError extends EntryError {}
class VerifyError extends SkillcacheError {}
class SourceError extends SkillcacheError {}
class ServerError extends SourceError {}
class TransportError extends SourceError {}
class TimeoutError extends SourceError {}
class MessageTooLargeError extends SourceError {}
class NotConnectedError extends SourceError {}
class StoreError extends SkillcacheError {}
class IndexError extends SkillcacheError {}
class ConfigError extends SkillcacheError {}
class L2ConfigError extends ConfigError {}
class DeclinedError extends SkillcacheError {}
class OfflineError extends SkillcacheError {}

// A call given `{ signal }` whose signal aborted: its work was dropped where it stood, and the
// cache is as if it had never started. Not a SkillcacheError (nothing was refused); named, and
// coded `ABORT_ERR`, as Node's own aborts are; `cause` is the signal's reason.
class AbortError extends Error {
  constructor(message, fields) {
    super(message);
    defineProperty(this, 'name', { value: 'AbortError', writable: true, configurable: true });
    // The report's fields too, `null` (an abort has none), as every error of the package has
    // them, and an own `cause` (the signal's reason, defined later by `index.js`).
    defineFields(this, fields, () => false);
  }
}

const classes = {
  SkillcacheError,
  UriError,
  EntryError,
  LimitExceededError,
  VerifyError,
  SourceError,
  ServerError,
  TransportError,
  TimeoutError,
  MessageTooLargeError,
  NotConnectedError,
  StoreError,
  IndexError,
  ConfigError,
  L2ConfigError,
  DeclinedError,
  OfflineError,
  AbortError,
};

// `instanceof` asks the class, then its parents up to `Error` and `Function.prototype`, for a
// `Symbol.hasInstance`: one a host defined on `Error` would answer for every class of the package
// (`new Error() instanceof ServerError`, or a real error failing `instanceof SkillcacheError`).
// Each class answers itself, by the prototype chain as `instanceof` ordinarily does, with the
// built-in taken at load.
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];
const { apply } = Reflect;
for (const Class of Object.values(classes)) {
  defineProperty(Class, Symbol.hasInstance, {
    value(value) {
      return apply(ordinaryHasInstance, this, [value]);
    },
  });
}

/** Called by the addon: `className` is always one of `classes` (src/errors.rs names them). */
function make(className, message, fields) {
  const Class = classes[className] ?? SkillcacheError;
  const error = new Class(message, fields);
  // The stack starts where the host called, not in this file's constructors.
  if (captureStackTrace !== undefined) captureStackTrace(error, make);
  return error;
}

// Frozen: `index.js` takes `make` once at load, and a host cannot put another in its place.
module.exports = Object.freeze({ ...classes, make, FIELDS: Object.freeze(FIELDS.slice()) });
