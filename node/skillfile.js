'use strict';
// `SkillFile`, made of the plain parts the addon hands over, and the pools its bytes live in.
// Why in JS: a hit's cost was mostly the wrapped Rust object each read made (its wrap,
// reference and finalizer) and the 4 KiB allocation of each copy, freed on another thread under
// malloc's lock; see docs/performance.md (J3). Nothing is decided here: the addon reads and
// verifies, and frames (checking the kept bytes again first).
//
// Each file keeps its own copy of the verified bytes, which nothing outside this module can
// reach: `bytes` hands out a new copy on every access, so changing one changes neither the file
// nor the cache. Copies of files up to POOLED_MAX bytes are cut from pools of POOL_SIZE bytes,
// as Node's own `Buffer.allocUnsafe` cuts small buffers from its pool: a handed-out copy may
// share its `ArrayBuffer` with other handed-out copies (use `byteOffset` and `length`), never
// with a file's own bytes, which come from a pool of their own.
//
// Code in the host's process can redefine any global after this module loaded. It can change
// what it sees of a file, but it must not reach another holder's file or memory no file was
// given: so every built-in this module calls while it holds a file's own bytes (or the pool
// they are cut from) is taken here, at load, and nothing is looked up on the bytes themselves.
// And the module hands out no maker of files: `define` makes a class and pools of its own on
// each call, and `index.js` keeps its call's makers to itself.

const { markAsUntransferable } = require('node:worker_threads');

const { apply } = Reflect;
const U8 = Uint8Array;
const AB = ArrayBuffer;
const typedArray = Object.getPrototypeOf(U8.prototype);
const lengthOf = Object.getOwnPropertyDescriptor(typedArray, 'length').get;
const setIn = typedArray.set;
const bufferFrom = Buffer.from;
const bufferAlloc = Buffer.alloc;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const decode = TextDecoder.prototype.decode;
const TypeErrorOf = TypeError;
const symbol = Symbol;
const POOL_SIZE = 64 * 1024;
const POOLED_MAX = 8 * 1024;
const TWO_32 = 4294967296;
const PROVENANCE = ['cache', 'server', 'l2'];

/** A `SkillFile` class and its makers, with pools (and a pool class) of their own. `frame` is the addon's
 * `LoadedSkill._frame`, taken when the package loaded. */
function define(frame) {
  // Its own class too: a host that calls `define` must not reach the prototype of the pools
  // `index.js` reads into.
  /** Slices of zeroed `POOL_SIZE` buffers, 8-byte aligned, never given out twice. A pool's
   * `ArrayBuffer` cannot be transferred (a transfer copies it instead): one holder's `postMessage`
   * of its copy's buffer must not empty every other copy cut from it. */
  class Pool {
    #array = null;
    #room = null;
    #at = 0;

    /** The pool's current buffer, with room for `size` bytes from `at`, taken only by `take`. A
     * plain view: making a `Buffer` would look the `ArrayBuffer`'s length up where a host can
     * redefine it, and the addon's read takes any typed array. */
    room(size = POOLED_MAX) {
      // Marked untransferable, a pool's buffer cannot be detached by `postMessage` or
      // `structuredClone`; should a runtime detach it anyway (its views then read 0 bytes),
      // the pool starts a new one.
      if (this.#room === null || this.#at + size > POOL_SIZE || apply(lengthOf, this.#room, []) === 0) {
        this.#array = new AB(POOL_SIZE);
        markAsUntransferable(this.#array);
        this.#room = new U8(this.#array);
        this.#at = 0;
      }
      return this.#room;
    }

    get at() {
      return this.#at;
    }

    /** The end of the room a read may fill: at most `POOLED_MAX` bytes from `at`. */
    get end() {
      return this.#at + POOLED_MAX;
    }

    /** The next `size` bytes of the room, from now on this caller's alone: a `Buffer` to hand
     * out, or else a plain view (cheaper to make) to keep. */
    take(size, handedOut) {
      // Only a file's own size, or a length the addon returned at once, comes here; checked
      // all the same, before the room moves, so that no other number can move it.
      if (!(size >= 0 && size <= POOLED_MAX && size === (size | 0))) throw new TypeErrorOf('skillcache: not a length of the pool');
      const at = this.#at;
      this.#at = (at + size + 7) & ~7;
      if (handedOut) return apply(bufferFrom, Buffer, [this.#array, at, size]);
      return new U8(this.#array, at, size);
    }
  }

  // The files' own bytes (read into by the addon) and the copies handed out, apart.
  const kept = new Pool();
  const lent = new Pool();
  // Passed by the makers below; `new SkillFile()` from outside is refused.
  const MAKE = symbol('skillcache.SkillFile');

  class SkillFile {
    #skill;
    #bytes;
    #size;
    #flags;
    #origin;
    #uri;
    #digest;

    constructor(make, skill, bytes, size, flags, origin, uri, digest) {
      if (make !== MAKE) throw new TypeErrorOf('a SkillFile is made by a read: LoadedSkill.read, readAll or skillMd');
      this.#skill = skill;
      this.#bytes = bytes;
      this.#size = size;
      this.#flags = flags;
      this.#origin = origin;
      this.#uri = uri;
      this.#digest = digest;
    }

    /** The bytes, as a new `Buffer` on each access: changing it cannot change the file or the cache. */
    get bytes() {
      const size = this.#size;
      if (size > POOLED_MAX) {
        const copy = apply(bufferAlloc, Buffer, [size]);
        apply(setIn, copy, [this.#bytes]);
        return copy;
      }
      lent.room(size);
      const copy = lent.take(size, true);
      apply(setIn, copy, [this.#bytes]);
      return copy;
    }

    /** The bytes decoded as UTF-8 (a `TypeError` for a file that is not text). */
    get text() {
      try {
        return apply(decode, utf8, [this.#bytes]);
      } catch (cause) {
        throw new TypeErrorOf(`${this.#uri} is not UTF-8 text`, { cause });
      }
    }

    get size() {
      return this.#size;
    }

    /** The origin the bytes came from: tag model context with it. */
    get origin() {
      return this.#origin;
    }

    get uri() {
      return this.#uri;
    }

    /** The digest the bytes matched on this access; `null` for a dynamic skill's file. */
    get digest() {
      return this.#digest;
    }

    /** Whether the bytes matched the held entry on this access. */
    get verified() {
      return (this.#flags & 1) !== 0;
    }

    /** `'cache'`, `'server'` or `'l2'`. */
    get provenance() {
      return PROVENANCE[(this.#flags >> 1) & 3];
    }

    /** Whether a cached copy failed and the file was fetched once more. */
    get retried() {
      return (this.#flags & 8) !== 0;
    }

    /** Whether the bytes are kept in the cache. */
    get stored() {
      return (this.#flags & 16) !== 0;
    }

    /** The file framed for model context (the addon checks the bytes again before it frames them). */
    framed() {
      return apply(frame, this.#skill, [this.#uri, this.#bytes]);
    }

    get [Symbol.toStringTag]() {
      return 'SkillFile';
    }
  }

  /** A file of `skill` from its parts `[bytes, flags, origin, uri, digest]` (a Buffer of its own). */
  function fromParts(skill, parts) {
    const bytes = parts[0];
    return new SkillFile(MAKE, skill, bytes, apply(lengthOf, bytes, []), parts[1], parts[2], parts[3], parts[4]);
  }

  /** A file of `skill` whose bytes the addon copied into `kept`'s room: `value` is their length
   * plus the flags times 2^32; `known` is `[origin, uri, digest]`. Called at once after the
   * addon returned, with nothing run in between that a host could have redefined. */
  function fromRoom(skill, value, known) {
    const flags = (value / TWO_32) >>> 0;
    const size = value - flags * TWO_32;
    return new SkillFile(MAKE, skill, kept.take(size, false), size, flags, known[0], known[1], known[2]);
  }

  return { SkillFile, fromParts, fromRoom, kept };
}

module.exports = { define };
