'use strict';
// `SkillFile`, made here of the plain parts the addon hands over, and the pools its bytes live
// in. Why in JS: a hit's cost was mostly the wrapped Rust object each read made (its wrap,
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

const POOL_SIZE = 64 * 1024;
const POOLED_MAX = 8 * 1024;
// `index.js` passes this to make a file; `new SkillFile()` from outside is refused.
const MAKE = Symbol('skillcache.SkillFile');
const PROVENANCE = ['cache', 'server', 'l2'];
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Slices of `POOL_SIZE` buffers, 8-byte aligned, never given out twice. */
class Pool {
  #buffer = null;
  #at = 0;
  #handedOut;

  /** `handedOut`: its slices reach hosts, whose `ArrayBuffer` may be read whole — so it is
   * zeroed; the other pool's slices stay inside the files and need not be. */
  constructor(handedOut) {
    this.#handedOut = handedOut;
  }

  /** A buffer with room for `size` bytes from `at`, taken only by `take`. */
  room(size) {
    // A host may transfer a handed-out copy's ArrayBuffer (`structuredClone`, `postMessage`),
    // which detaches it and empties every view of it: then the pool starts a new buffer.
    if (this.#buffer === null || this.#at + size > POOL_SIZE || this.#buffer.length === 0) {
      this.#buffer = this.#handedOut ? Buffer.alloc(POOL_SIZE) : Buffer.allocUnsafeSlow(POOL_SIZE);
      this.#at = 0;
    }
    return this.#buffer;
  }

  get at() {
    return this.#at;
  }

  /** The next `size` bytes of the room, from now on this caller's alone: a `Buffer` to hand
   * out, or a plain view (cheaper to make) to keep. */
  take(size) {
    const at = this.#at;
    this.#at = (at + size + 7) & ~7;
    if (this.#handedOut) return this.#buffer.subarray(at, at + size);
    return new Uint8Array(this.#buffer.buffer, this.#buffer.byteOffset + at, size);
  }
}

// The files' own bytes (read into by the addon) and the copies handed out, apart.
const kept = new Pool(false);
const lent = new Pool(true);

class SkillFile {
  #skill;
  #bytes;
  #flags;
  #origin;
  #uri;
  #digest;

  constructor(make, skill, bytes, flags, origin, uri, digest) {
    if (make !== MAKE) throw new TypeError('a SkillFile is made by a read: LoadedSkill.read, readAll or skillMd');
    this.#skill = skill;
    this.#bytes = bytes;
    this.#flags = flags;
    this.#origin = origin;
    this.#uri = uri;
    this.#digest = digest;
  }

  /** The bytes, as a new `Buffer` on each access: changing it cannot change the file or the cache. */
  get bytes() {
    const size = this.#bytes.length;
    if (size > POOLED_MAX) return Buffer.copyBytesFrom(this.#bytes);
    lent.room(size);
    const copy = lent.take(size);
    copy.set(this.#bytes);
    return copy;
  }

  /** The bytes decoded as UTF-8 (a `TypeError` for a file that is not text). */
  get text() {
    try {
      return utf8.decode(this.#bytes);
    } catch (cause) {
      throw new TypeError(`${this.#uri} is not UTF-8 text`, { cause });
    }
  }

  get size() {
    return this.#bytes.length;
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
    return this.#skill._frame(this.#uri, this.#bytes);
  }

  get [Symbol.toStringTag]() {
    return 'SkillFile';
  }
}

/** A file of `skill` from its parts `[bytes, flags, origin, uri, digest]` (a Buffer of its own). */
function fromParts(skill, [bytes, flags, origin, uri, digest]) {
  return new SkillFile(MAKE, skill, bytes, flags, origin, uri, digest);
}

/** A file of `skill` whose bytes the addon copied into `kept`'s room: `value` is their length
 * plus the flags times 2^32; `known` is `[origin, uri, digest]`. */
function fromRoom(skill, value, [origin, uri, digest]) {
  const flags = Math.floor(value / 2 ** 32);
  return new SkillFile(MAKE, skill, kept.take(value - flags * 2 ** 32), flags, origin, uri, digest);
}

module.exports = { SkillFile, fromParts, fromRoom, kept, POOLED_MAX };
