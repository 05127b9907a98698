'use strict';
// `SkillFile`: one read's file. Its verified bytes stay in the addon's custody: the file holds
// an `External` (an opaque value the addon made, which JS cannot look into) and every getter asks
// the addon, which answers with primitives or, for `bytes`, a new `Buffer` in an `ArrayBuffer` of
// its own. No JS value ever refers to the memory the bytes were verified in, so no built-in a host
// redefines, before or after the package loads, can be shown it or write into it; and nothing
// here is remembered between reads.
//
// The addon's functions are taken when the package loads and called directly (no lookup on a
// prototype a host could redefine). A file is made only by the package's reads: `new SkillFile()`
// from outside is refused, and an `External` of a file is made only by the addon.

/** The `SkillFile` class and its maker, over the addon's file functions (`native`). */
function define(native) {
  const { _fileBytes: bytes, _fileText: text, _fileFramed: framed, _fileOrigin: origin, _fileUri: uri, _fileDigest: digest, _fileSize: size, _fileFlags: flags } = native;
  const TypeErrorOf = TypeError;
  const PROVENANCE = ['cache', 'server', 'l2'];
  const MAKE = Symbol('skillcache.SkillFile');

  class SkillFile {
    #held;

    constructor(make, held) {
      if (make !== MAKE) throw new TypeErrorOf('a SkillFile is made by a read: LoadedSkill.read, readAll or skillMd');
      this.#held = held;
    }

    /** The bytes, as a new `Buffer` on each access, in an `ArrayBuffer` of its own: changing it,
     * transferring or detaching it changes neither the file, the cache nor any other copy. */
    get bytes() {
      return bytes(this.#held);
    }

    /** The bytes decoded as UTF-8 (a `TypeError` for a file that is not text). */
    get text() {
      const decoded = text(this.#held);
      if (decoded === null) throw new TypeErrorOf(`${uri(this.#held)} is not UTF-8 text`);
      return decoded;
    }

    get size() {
      return size(this.#held);
    }

    /** The origin the bytes came from: tag model context with it. */
    get origin() {
      return origin(this.#held);
    }

    get uri() {
      return uri(this.#held);
    }

    /** The digest the bytes matched on this access; `null` for a dynamic skill's file. */
    get digest() {
      return digest(this.#held);
    }

    /** Whether the bytes matched the held entry on this access. */
    get verified() {
      return (flags(this.#held) & 1) !== 0;
    }

    /** `'cache'`, `'server'` or `'l2'`. */
    get provenance() {
      return PROVENANCE[(flags(this.#held) >> 1) & 3];
    }

    /** Whether a cached copy failed and the file was fetched once more. */
    get retried() {
      return (flags(this.#held) & 8) !== 0;
    }

    /** Whether the bytes are kept in the cache. */
    get stored() {
      return (flags(this.#held) & 16) !== 0;
    }

    /** The file framed for model context, by the library, of the bytes it holds. */
    framed() {
      return framed(this.#held);
    }

    get [Symbol.toStringTag]() {
      return 'SkillFile';
    }

    // `instanceof SkillFile` is true of the package's own files only (those holding a file of the
    // addon), not of an object made with `Object.create(SkillFile.prototype)` and given own
    // `text` and `verified`.
    static [Symbol.hasInstance](value) {
      return value !== null && typeof value === 'object' && #held in value;
    }
  }

  // A Promise resolved with a file (every read's) looks `then` up on it: this own `then` answers
  // before `Object.prototype`'s, where a host's dependency could define one that settles the read
  // with another value.
  Object.defineProperty(SkillFile.prototype, 'then', { __proto__: null, value: undefined });
  // Frozen: a dependency loaded after the package cannot redefine a getter (`text`, `bytes`) to
  // report what the bytes never held while `verified` stays true.
  Object.freeze(SkillFile.prototype);
  Object.freeze(SkillFile);

  /** The file the addon holds as `held`. */
  // Each file frozen too: no own `text` or `verified` can be defined over the getters.
  const freeze = Object.freeze;
  const make = (held) => freeze(new SkillFile(MAKE, held));
  return { SkillFile, make };
}

module.exports = { define };
