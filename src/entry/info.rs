//! `EntryInfo`: an entry as the cache resolved it, from the index or from the server. With the
//! entries, below the host layer that makes it and the catalog that lists it.

use super::{EntryDiff, SkillEntry};

/// An entry as [`SkillCache::entry`](crate::SkillCache::entry) resolved it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EntryInfo {
    /// The entry.
    pub entry: SkillEntry,
    /// True if it was fresh in the index and the server was not asked (R-C6).
    pub from_cache: bool,
    /// True if storing it revoked an approval (R-A2).
    pub revoked: bool,
    /// What changed since the approved (or previously stored) entry.
    pub diff: Option<EntryDiff>,
    /// True if it is a cached entry past its `ttlMs`, used because the cache is offline and
    /// stale entries are allowed ([`SkillCacheBuilder::allow_stale`](crate::SkillCacheBuilder::allow_stale)).
    pub stale: bool,
}

impl EntryInfo {
    /// An entry the index held, used without asking the server.
    pub(crate) fn cached(entry: SkillEntry, stale: bool) -> EntryInfo {
        EntryInfo {
            entry,
            from_cache: true,
            revoked: false,
            diff: None,
            stale,
        }
    }
}
