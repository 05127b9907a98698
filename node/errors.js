'use strict';
// The package's error classes: one per kind of the Rust `skillcache::Error`, all under
// `SkillcacheError`. The addon makes every instance (src/errors.rs, the one place errors are
// mapped) through `make`, which `index.js` hands it once: the class by name, the Rust message,
// and the variant's fields, copied onto the error as camelCase properties.

class SkillcacheError extends Error {
  constructor(message, fields) {
    super(message);
    this.name = new.target.name;
    // Every field of the variant (`kind`, `origin`, `uri`, …) and `causes`, the messages of
    // the Rust cause chain. Plain data, never anything the addon holds.
    Object.assign(this, fields);
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
    this.name = 'AbortError';
    Object.assign(this, fields);
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

/** Called by the addon: `className` is always one of `classes` (src/errors.rs names them). */
function make(className, message, fields) {
  const Class = classes[className] ?? SkillcacheError;
  return new Class(message, fields);
}

module.exports = { ...classes, make };
