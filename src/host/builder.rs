//! `SkillCacheBuilder`: the host's choices, each with a documented default, then `open`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::cache::SkillCache;
use super::policy::{ApprovalPolicy, DynamicPolicy};
use super::state::{Settings, State};
use crate::core::CacheBuilder;
use crate::entry::Validation;
use crate::error::Error;
use crate::lockfile::LockFile;
use crate::store::Isolation;
use crate::tier::BlobTier;

/// Builds a [`SkillCache`]. Every option has a documented default.
#[derive(Debug, Clone, Default)]
pub struct SkillCacheBuilder {
    core: CacheBuilder,
    settings: Settings,
    principal: String,
    /// The shared tier (feature `l2`), if the host configured one.
    tier: Option<Arc<dyn BlobTier>>,
}

impl SkillCacheBuilder {
    internal_pub! {
        /// The default deadline for one request, and for connecting (R-B1).
        const DEFAULT_TIMEOUT: Duration = super::policy::DEFAULT_TIMEOUT;
    }

    /// The cache root. Default: `$SKILLCACHE_ROOT`, else the platform cache folder (R-C1).
    #[must_use]
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.core = self.core.root(root);
        self
    }
    /// How cached files are verified. Default: [`Isolation::Rehash`] (R-C2).
    #[must_use]
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.core = self.core.isolation(isolation);
        self
    }
    /// A discovery path the root must stay outside of, added to the well-known ones (R-C1).
    #[must_use]
    pub fn discovery_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.core = self.core.discovery_path(path);
        self
    }
    /// Dynamic skills. Default: [`DynamicPolicy::Decline`] (R-V7).
    #[must_use]
    pub fn dynamic(mut self, policy: DynamicPolicy) -> Self {
        self.settings.dynamic = policy;
        self
    }
    /// How entries are validated: the per-skill limits (default [`Limits::default`](crate::entry::Limits), 512 files
    /// / 16 MiB, R-W7) and whether the strict Agent Skills rules apply (default off, R-W6).
    ///
    /// ```
    /// use skillcache::SkillCache;
    /// use skillcache::entry::{Limits, Validation};
    /// let raised = Validation::default().limits(Limits::new(1024, 64 << 20).unwrap()).strict(true);
    /// let builder = SkillCache::builder().validation(raised);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn validation(mut self, validation: Validation) -> Self {
        self.settings.validation = validation;
        self
    }
    /// The host key file that seals index rows (R-H3). Default:
    /// `~/.config/skillcache/host.key` (or `$SKILLCACHE_KEY_FILE`, `$XDG_CONFIG_HOME`).
    #[must_use]
    pub fn key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.core = self.core.key_file(path);
        self
    }
    /// The *default* principal: the one the opened [`SkillCache`] acts as. A principal is the
    /// authorization context private entries are stored under (R-C6) and whose approvals are
    /// granted and checked (R-H11). Default: `""`. A host serving several users opens one cache
    /// and acts for each through [`SkillCache::for_principal`]. A principal with a character
    /// that is not visible is refused by [`open`](Self::open) (R-E6).
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = principal.into();
        self
    }
    /// Whether [`SkillCache::load`] requires approval. Default: [`ApprovalPolicy::Required`]
    /// (R-P1); [`ApprovalPolicy::NotRequired`] is the explicit opt-out.
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.settings.approval = policy;
        self
    }
    /// Offline mode: no source is ever contacted. Entries come only from the index (sealed
    /// rows, R-H3) and bytes only from the store (verified on every access, R-C2); a stale entry
    /// is refused unless [`allow_stale`](Self::allow_stale); anything missing fails with
    /// [`Error::Offline`] naming the origin, the URI and what is missing. Sources need not be
    /// connected. Nothing is written, so a read-only pre-populated root works (R-H5).
    /// Default: off.
    #[must_use]
    pub fn offline(mut self, offline: bool) -> Self {
        self.settings.offline.on = offline;
        self
    }
    /// In offline mode, use a cached entry whose `ttlMs` has passed instead of refusing it; it
    /// is reported as stale ([`EntryInfo::stale`](crate::EntryInfo::stale)). Online, a stale entry is always refreshed,
    /// so this changes nothing there. Default: off.
    #[must_use]
    pub fn allow_stale(mut self, allow: bool) -> Self {
        self.settings.offline.allow_stale = allow;
        self
    }
    /// A lock file in force: [`SkillCache::load`] declines, before any request, a skill the
    /// lock does not list ([`Declined::NotLocked`](crate::error::Declined::NotLocked)) or whose entry differs from the pinned one
    /// ([`Declined::Drift`](crate::error::Declined::Drift), naming every file added, removed or changed). It is checked in
    /// addition to the approval policy. Default: none.
    #[must_use]
    pub fn locked(mut self, lock: LockFile) -> Self {
        self.settings.lock = Some(Arc::new(lock));
        self
    }
    /// How long an operation waits for the cache's lock before it fails (R-H11). Default: 30 s.
    #[must_use]
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.core = self.core.lock_timeout(timeout);
        self
    }
    /// Bytes of verified files kept in memory (the memory tier). Default: 64 MiB.
    #[must_use]
    pub fn memory_tier(mut self, bytes: u64) -> Self {
        self.core = self.core.memory_tier(bytes);
        self
    }
    /// The most bytes one origin's stored content may take on disk (R-Q4), like a browser's
    /// per-origin storage quota: before a publish, that origin's least recently used blobs the
    /// publish does not need are evicted — never another origin's — and a skill that would take
    /// more than the quota even stored alone is declined before any request
    /// ([`Declined::OverQuota`](crate::error::Declined::OverQuota)). It holds across processes
    /// sharing the root. Default: none.
    ///
    /// The quota is charged what the disk pays, so that what `du` reports for the origin's
    /// folder (`origins/<origin>/` under the root) stays within it: every file and folder there
    /// at its allocated size (a file of 8 bytes takes a 4 KiB block on most filesystems; each
    /// fan-out folder `sha256/<2 hex>/` a block or more), plus 256 bytes a file for its names in
    /// folders and 128 bytes a blob for its row in the index. A file about to be stored is
    /// charged its size rounded up to whole blocks, and each folder it needs one block. The
    /// origin's entries and file lists in the index are not charged (a listing's limits bound
    /// them). So a quota of 64 KiB holds at most a dozen tiny files, not thousands.
    #[must_use]
    pub fn origin_quota(mut self, bytes: u64) -> Self {
        self.core = self.core.origin_quota(bytes);
        self
    }
    /// Every filesystem change the store makes goes through `disk` (the fault-injection seam).
    #[cfg(any(test, feature = "fault-injection"))]
    #[doc(hidden)]
    #[must_use]
    pub fn disk(mut self, disk: Arc<dyn crate::store::Disk>) -> Self {
        self.core = self.core.disk(disk);
        self
    }
    /// The deadline for each request to a server (`skills/list`, `skills/get`,
    /// `resources/read`), from sending it to its whole answer. Default: 30 s
    /// (R-B1). A request that misses it fails with [`SourceError::Timeout`](crate::error::SourceError::Timeout) naming the origin and the
    /// method; nothing of it is kept, and the next call asks again.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.settings.deadlines.request = timeout;
        self
    }
    /// The deadline for connecting to a server (starting it and `initialize`), separate from the
    /// request's. Default: 30 s (R-B1).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.deadlines.connect = timeout;
        self
    }
    /// A shared tier of verified public blobs for a fleet of hosts (feature `l2`): a miss in
    /// the local store asks it before the server, and bytes verified from the server are
    /// published to it. Only entries marked `cacheScope: public` use it; its bytes are verified
    /// like the server's; an unreachable tier costs at most its timeout, then the server serves.
    /// Default: none.
    #[cfg(feature = "l2")]
    #[must_use]
    pub fn l2(mut self, tier: crate::tier::L2) -> Self {
        self.tier = Some(crate::tier::open(tier));
        self
    }
    /// Opens the cache.
    ///
    /// # Errors
    /// Opens (or creates) the cache root and its index. [`ConfigError::Invalid`](crate::error::ConfigError::Invalid)
    /// for a [`principal`](Self::principal) with an invisible character (R-E6), before anything
    /// is opened.
    pub fn open(self) -> Result<SkillCache, Error> {
        super::cache::check_principal(&self.principal)?;
        let state = State::new(self.core.open()?, self.settings, self.tier);
        Ok(SkillCache::new(state, self.principal))
    }
}

impl SkillCache {
    /// A builder with every default.
    #[must_use]
    pub fn builder() -> SkillCacheBuilder {
        SkillCacheBuilder::default()
    }
}
