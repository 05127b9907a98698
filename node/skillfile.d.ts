// `SkillFile` (skillfile.js): a read's file, its verified bytes held by the addon.

/** One file's bytes with their origin, URI and what they were checked against. Made by a read
 * (`LoadedSkill.read`, `readAll`, `skillMd`, `SkillCache.loadAll`), never with `new`. */
export declare class SkillFile {
  private constructor();
  /** The bytes, as a new `Buffer` on each access, in an `ArrayBuffer` of its own: changing,
   * transferring or detaching it changes neither the file, the cache nor any other copy. The
   * verified bytes themselves stay in the addon. */
  get bytes(): Buffer;
  /** The bytes decoded as UTF-8 (a `TypeError` for a file that is not text). */
  get text(): string;
  /** The byte length. */
  get size(): number;
  /** The origin the bytes came from: tag model context with it. */
  get origin(): string;
  get uri(): string;
  /** The digest the bytes matched on this access; `null` for a dynamic skill's file. */
  get digest(): string | null;
  /** Whether the bytes matched the held entry on this access. */
  get verified(): boolean;
  /** Where the bytes came from. */
  get provenance(): 'cache' | 'server' | 'l2';
  /** Whether a cached copy failed and the file was fetched once more. */
  get retried(): boolean;
  /** Whether the bytes are kept in the cache. */
  get stored(): boolean;
  /** The file framed for model context: origin, URI, size, digest and a boundary the content
   * does not contain. */
  framed(): string;
}
