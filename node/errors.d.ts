// The error classes of errors.js: every error the package throws or rejects with is a
// `SkillcacheError`, one subclass per kind of the Rust `skillcache::Error`, except `AbortError`
// (a call the host aborted through its `AbortSignal`).

/**
 * The base of every error of the package. `message` is the library's message with its cause
 * chain (`…: the connection to the server failed: cannot connect to …: connection refused`),
 * display-safe: no control character or escape sequence, whatever a server sent.
 */
export declare class SkillcacheError extends Error {
  /** The variant: `uri`, `verify`, `declined`, `timeout`, `blob_mismatch`, … */
  readonly kind: string;
  /** The messages of the cause chain alone, outermost first (display-safe). */
  readonly causes: string[];
  /** Any other field of the variant (see the subclasses). */
  readonly [field: string]: unknown;
}
/** A URI that is not a valid skill or file URI. */
export declare class UriError extends SkillcacheError {
  readonly uri: string;
  readonly rule: string;
}
/** An entry the server sent that is refused (`kind`: `digest`, `invalid`, `response`, …);
 * `origin` names the server (`null` for an entry that came from no server). */
export declare class EntryError extends SkillcacheError {
  readonly origin: string | null;
}
/** An entry over the file-count or total-size limit. */
export declare class LimitExceededError extends EntryError {
  readonly skill: string;
  readonly limit: 'files' | 'total_bytes' | 'other';
  readonly declared: number;
  readonly max: number;
}
/** Bytes that do not match the held entry, or a file it does not list. */
export declare class VerifyError extends SkillcacheError {
  readonly origin: string;
  readonly uri: string;
  readonly mismatch: 'size' | 'digest' | 'frontmatter' | 'frontmatter_unreadable' | 'unlisted' | 'not_a_regular_file' | 'other';
}
/** A server or transport failure. */
export declare class SourceError extends SkillcacheError {
  readonly origin: string | null;
  readonly method: string;
}
export declare class ServerError extends SourceError {
  /** The skill's or file's URI the request named; `null` for `skills/list`. */
  readonly uri: string | null;
  readonly code: number;
  /** The server's own error text: display-safe, at most 1,024 characters (then `…`). */
  readonly serverMessage: string;
}
export declare class TransportError extends SourceError {}
/** A request that missed its deadline; `after` in seconds. */
export declare class TimeoutError extends SourceError {
  readonly after: number;
}
export declare class MessageTooLargeError extends SourceError {
  readonly max: number;
}
export declare class NotConnectedError extends SourceError {}
/** The cache root or a blob (`kind`: `blob_mismatch`, `root_refused`, `io`, `lock_timeout`). */
export declare class StoreError extends SkillcacheError {}
/** The index (`kind`: `database`, `too_new`, `read_only`, `io`, `host_key`). */
export declare class IndexError extends SkillcacheError {}
/** An option, a config file or a lock file that is refused (`kind`: `invalid`, `file`, `lock_file`). */
export declare class ConfigError extends SkillcacheError {}
export declare class L2ConfigError extends ConfigError {}
/** A load refused before any request: not approved, revoked, dynamic, not locked, drifted, over the origin's quota. */
export declare class DeclinedError extends SkillcacheError {
  readonly origin: string;
  readonly skill: string;
  readonly reason: 'dynamic' | 'not_approved' | 'revoked' | 'not_locked' | 'drift' | 'over_quota' | 'other';
  /** For `revoked` and `drift`; absent otherwise. */
  readonly changes?: import('./native').EntryDiff;
  /** For `over_quota`: the origin's quota and what the skill would take, in bytes. */
  readonly quota?: number;
  readonly size?: number;
}
/** Offline, and the cache does not hold what was asked for. */
export declare class OfflineError extends SkillcacheError {
  readonly origin: string;
  readonly uri: string | null;
  readonly missing: 'entry' | 'stale' | 'file' | 'server' | 'other';
}
/** A call given `{ signal }` whose signal aborted: its work was dropped where it stood. */
export declare class AbortError extends Error {
  readonly code: 'ABORT_ERR';
  /** The signal's `reason`. */
  readonly cause: unknown;
}
