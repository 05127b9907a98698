// What the maintenance calls settle with: the Rust library's own serialization of its reports
// (the one shape `skillcache … --json` prints and the Python package reads), each key in
// camelCase. test/reports.test.mjs checks that these declarations and the objects the calls
// settle with have the same keys.

/** A blob of an origin, by digest. */
export interface BlobRef {
  origin: string
  digest: string
}

/** What `verify` found. */
export interface VerifyReport {
  /** Blobs re-hashed. */
  checked: number
  /** Blobs whose bytes or size did not match, and names that were not blobs: quarantined. */
  corrupt: Array<BlobRef>
  /** Records whose blob is gone: forgotten. */
  missing: Array<BlobRef>
  /** Blobs with no record (a crash between publish and record): `gc` removes them. */
  orphaned: Array<BlobRef>
  /** Paths under the store that are not blobs at all. */
  strays: Array<string>
  /** Nothing was corrupt. */
  isClean: boolean
}

/** What `gc` removed. */
export interface GcReport {
  /** Blobs no entry references. */
  unreferenced: number
  /** Names in the store that were not blobs (a link, a FIFO, a folder). */
  notBlobs: number
  /** Blobs removed to meet the byte budget, least recently used first. */
  evicted: number
  /** Temporaries swept. */
  temporaries: number
  bytesBefore: number
  bytesAfter: number
  /** The budget could not be met without touching blobs of fresh entries. */
  overBudget: boolean
}

/** What the cache root holds, counted (`inventory`). */
export interface Inventory {
  /** Origins with entries or blobs. */
  origins: number
  /** Stored entries, over every origin and principal. */
  entries: number
  /** Recorded blobs. */
  blobs: number
  /** Their total size. */
  blobBytes: number
  /** Files in quarantine (copies that failed verification, kept for inspection). */
  quarantined: number
  /** The index's schema version. */
  schemaVersion: number
  /** Whether the index could only be opened read-only. */
  indexReadOnly: boolean
}

/** One entry the cache holds (`cachedEntries`). */
export interface CachedEntry {
  origin: string
  uri: string
  scope: 'public' | 'private'
  /** The principal of a private entry (empty for a public one). */
  principal: string
  /** How many files its manifest lists; 0 for a dynamic skill. */
  files: number
  /** The sum of their declared sizes. */
  bytes: number
  /** A dynamic skill (no manifest): `files` is 0. */
  dynamic: boolean
  /** Whether its `ttlMs` has not run out yet. */
  fresh: boolean
}

/** A file's digest and size, as a lock pins it or a server lists it. */
export interface Pin {
  digest: string
  size: number
}

/** One file that differs from its pin: `pinned` is null for a file added since, `now` for one no longer listed. */
export interface FileDrift {
  uri: string
  pinned: Pin | null
  now: Pin | null
}

/**
 * One way a server's listing differs from the lock: its `kind`, origin, skill (null for an origin
 * that could not be listed), the library's message, and for `files` each file.
 */
export interface LockDrift {
  kind: 'files' | 'became_dynamic' | 'binding' | 'removed' | 'added' | 'refused' | 'unlisted'
  origin: string
  skill: string | null
  message: string
  files: Array<FileDrift>
}

/** A dynamic skill a server lists beside the pins: not drift (nothing of it can be pinned). */
export interface DynamicSkill {
  origin: string
  skill: string
}

/** What `checkLock` found: every drift in the lock's order, and the dynamic skills listed beside the pins. */
export interface LockCheck {
  /** How many skills the lock pins. */
  pinned: number
  /** How many of them matched their pin exactly. */
  matched: number
  /** Every pinned origin publishes exactly what the lock pins, and nothing more. */
  isClean: boolean
  drift: Array<LockDrift>
  dynamic: Array<DynamicSkill>
}
