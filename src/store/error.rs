//! The store layer's errors: the cache root, its files and its lock.

use crate::digest::Digest;
use crate::display::{SafePath, display_safe};
use crate::mismatch::Mismatch;
use crate::origin::Origin;

/// The blob store failed or refused.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Bytes offered to the store are not the ones the entry promised; nothing was stored.
    #[error("refused to store blob {digest} for origin {origin}: {mismatch}")]
    BlobMismatch {
        /// The origin.
        origin: Origin,
        /// The digest the bytes were to be stored under.
        digest: Digest,
        /// What did not match.
        mismatch: Mismatch,
    },

    /// The cache root is refused (R-C1).
    #[error("cache root {} refused: {why} {}", SafePath(root), SafePath(path))]
    RootRefused {
        /// The root that was asked for.
        root: std::path::PathBuf,
        /// Why, ending in the path it concerns.
        why: &'static str,
        /// The discovery path (or other path) it concerns.
        path: std::path::PathBuf,
    },

    /// An I/O operation failed.
    #[error("cannot {op} {}", SafePath(path))]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },

    /// The cache's lock was still held when the wait ran out (R-H11).
    #[error(
        "the cache lock {} is still held after {:.1} s (by {}); try again when that is done",
        SafePath(path),
        waited.as_secs_f64(),
        // Read from the lock file, which anyone who may write the root could have written.
        display_safe(holder.as_deref().unwrap_or("other skillcache processes"))
    )]
    LockTimeout {
        /// The lock file.
        path: std::path::PathBuf,
        /// How long we waited.
        waited: std::time::Duration,
        /// Who holds it, when the holder said (an exclusive holder writes its pid and operation).
        holder: Option<String>,
    },
}
