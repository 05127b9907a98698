//! `SkillCache`: the loading path (R-V1…R-V9, R-O6, R-C4, R-C6, R-C7), async over the sync core.

use super::policy::Deadlines;
pub use super::policy::{ApprovalPolicy, DynamicPolicy};
use super::fetch::{Inner, blocking, check_frontmatter, put_or_serve};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::file::SkillFile;
use super::loaded::LoadedSkill;
use super::offline::{self, Offline, OfflineSource};
use super::stats::{Counters, Stats};
use super::{Cache, CacheBuilder};
use crate::entry::{
    EntryDiff, Listing, SkillEntry, Validation,
    parse_get_result, parse_list_result,
};
use crate::error::{ConfigError, Declined, Error, Limit, Mismatch};
use crate::lockfile::LockFile;
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::store::Isolation;
use crate::uri::SkillUri;

/// Builds a [`SkillCache`]. Every option has a documented default.
#[derive(Debug, Clone, Default)]
pub struct SkillCacheBuilder {
    core: CacheBuilder,
    dynamic: DynamicPolicy,
    validation: Validation,
    principal: String,
    deadlines: Deadlines,
    approval: ApprovalPolicy,
    offline: Offline,
    lock: Option<Arc<LockFile>>,
    /// The shared tier (feature `l2`), if the host configured one.
    l2: super::l2::Setting,
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
        self.dynamic = policy;
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
        self.validation = validation;
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
        self.approval = policy;
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
        self.offline.on = offline;
        self
    }
    /// In offline mode, use a cached entry whose `ttlMs` has passed instead of refusing it; it
    /// is reported as stale ([`EntryInfo::stale`]). Online, a stale entry is always refreshed,
    /// so this changes nothing there. Default: off.
    #[must_use]
    pub fn allow_stale(mut self, allow: bool) -> Self {
        self.offline.allow_stale = allow;
        self
    }
    /// A lock file in force: [`SkillCache::load`] declines, before any request, a skill the
    /// lock does not list ([`Declined::NotLocked`]) or whose entry differs from the pinned one
    /// ([`Declined::Drift`], naming every file added, removed or changed). It is checked in
    /// addition to the approval policy. Default: none.
    #[must_use]
    pub fn locked(mut self, lock: LockFile) -> Self {
        self.lock = Some(Arc::new(lock));
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
        self.deadlines.request = timeout;
        self
    }
    /// The deadline for connecting to a server (starting it and `initialize`), separate from the
    /// request's. Default: 30 s (R-B1).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.deadlines.connect = timeout;
        self
    }
    /// A shared tier of verified public blobs for a fleet of hosts (feature `l2`): a miss in
    /// the local store asks it before the server, and bytes verified from the server are
    /// published to it. Only entries marked `cacheScope: public` use it; its bytes are verified
    /// like the server's; an unreachable tier costs at most its timeout, then the server serves.
    /// Default: none.
    #[cfg(feature = "l2")]
    #[must_use]
    pub fn l2(mut self, tier: super::L2) -> Self {
        self.l2 = Some(tier);
        self
    }
    /// Opens the cache.
    ///
    /// # Errors
    /// Opens (or creates) the cache root and its index. [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for a
    /// [`principal`](Self::principal) with an invisible character (R-E6), before anything is
    /// opened.
    pub fn open(self) -> Result<SkillCache, Error> {
        check_principal(&self.principal)?;
        Ok(SkillCache {
            principal: Arc::from(self.principal),
            inner: Arc::new(Inner {
                core: Arc::new(self.core.open()?),
                sources: RwLock::default(),
                dynamic: self.dynamic,
                validation: self.validation,
                inflight: Mutex::default(),
                deadlines: self.deadlines,
                stale: Mutex::default(),
                approval: self.approval,
                offline: self.offline,
                lock: self.lock,
                revocations: Mutex::default(),
                counters: Counters::default(),
                l2: super::l2::open(self.l2),
            }),
        })
    }
}

/// A principal is a label a person reads (whose approval this is): every character of it must
/// be visible (R-E6). The empty principal, the default, is allowed.
fn check_principal(principal: &str) -> Result<(), ConfigError> {
    match crate::display::invisible_in_label(principal) {
        Some(why) => Err(ConfigError::Invalid {
            what: format!("the principal {why}: every character of a principal must be visible"),
        }),
        None => Ok(()),
    }
}

/// An entry as [`SkillCache::entry`] resolved it.
#[derive(Debug, Clone)]
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
    /// stale entries are allowed ([`SkillCacheBuilder::allow_stale`]).
    pub stale: bool,
}

/// The verified skill cache: the host's backend for skills served over MCP.
///
/// Each origin is bound to one [`SkillSource`] with [`SkillCache::connect`]; everything loaded
/// under that origin reads only through it (R-O6).
///
/// A `SkillCache` is a cheap handle: clones share one core (root, index, store), one set of
/// sources, one in-flight table and one set of counters. Each handle acts as one principal
/// ([`SkillCache::for_principal`]); clones keep their handle's principal.
#[derive(Clone)]
pub struct SkillCache {
    inner: Arc<Inner>,
    /// Whose entries (R-C6) and approvals (R-H11) this handle reads and writes.
    principal: Arc<str>,
}

impl std::fmt::Debug for SkillCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillCache")
            .field("root", &self.inner.core.root())
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl SkillCache {
    /// A builder with every default.
    #[must_use]
    pub fn builder() -> SkillCacheBuilder {
        SkillCacheBuilder::default()
    }

    /// A handle on the same cache acting as `principal`: its [`entry`](Self::entry),
    /// [`refresh`](Self::refresh), [`list`](Self::list), [`approve`](Self::approve),
    /// [`is_approved`](Self::is_approved) and [`load`](Self::load) see `principal`'s private
    /// entries (never another principal's, R-C6) and grant and check `principal`'s approvals
    /// (R-H11). It shares everything else — the root, the index, the sources bound with
    /// [`connect`](Self::connect), the in-flight fetches and the counters — so it costs two
    /// reference counts, and verified bytes fetched for one principal serve the others.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let cache = skillcache::SkillCache::builder().root(dir.path().join("root"))
    /// #     .key_file(dir.path().join("host.key")).open()?;
    /// let alice = cache.for_principal("alice")?;
    /// // Two principals a person could not tell apart are one refused (R-E6).
    /// assert!(cache.for_principal("alice\u{200B}").is_err());
    /// # drop(alice);
    /// # Ok::<(), skillcache::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for a principal with a
    /// control, format, bidi or other invisible character, or a space at either end, naming it
    /// (R-E6): whose entries and approvals these are must be plain to whoever reads them.
    pub fn for_principal(&self, principal: impl Into<String>) -> Result<SkillCache, ConfigError> {
        let principal = principal.into();
        check_principal(&principal)?;
        Ok(SkillCache {
            inner: Arc::clone(&self.inner),
            principal: Arc::from(principal),
        })
    }

    internal_pub! {
        /// The principal this handle acts as (the host chose it: [`SkillCache::for_principal`]).
        #[must_use]
        fn principal(&self) -> &str {
            &self.principal
        }
    }

    /// What this cache did since it was opened, over every handle (R-P4): hits by how they
    /// were verified, misses, bytes fetched and served, quarantines, retries, store and seal
    /// failures, timeouts.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner
            .counters
            .snapshot(self.inner.core.seal_failures())
    }

    /// The sync core, for the crate's own tests and benches (feature `internals`; not part of
    /// the supported API: the store and the index below it are the crate's business).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    #[must_use]
    pub fn core(&self) -> &Cache {
        &self.inner.core
    }

    pub(super) fn core_ref(&self) -> &Cache {
        &self.inner.core
    }

    pub(super) fn core_arc(&self) -> &Arc<Cache> {
        &self.inner.core
    }

    /// Binds `origin` to `source`, replacing an earlier binding (a reconnect). Skills already
    /// loaded keep reading through the source they were loaded from. The source's change
    /// notifications mark this origin's entries stale from now on (R-B5).
    pub fn connect(&self, origin: Origin, source: Arc<dyn SkillSource>) {
        tracing::debug!(
            origin = origin.as_str(),
            "origin bound to a source (it connects on its first request)"
        );
        // Weak: the source must not keep the cache alive through its own callback.
        let inner = Arc::downgrade(&self.inner);
        let marked = origin.clone();
        source.watch(Arc::new(move |change| {
            if let Some(inner) = inner.upgrade() {
                inner.mark_stale(&marked, change);
            }
        }));
        self.inner
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin, source);
    }

    /// Unbinds `origin`. Its cached content stays (use [`SkillCache::purge`] to remove it).
    pub fn disconnect(&self, origin: &Origin) {
        self.inner
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin);
    }

    fn source(&self, origin: &Origin) -> Result<Arc<dyn SkillSource>, Error> {
        // Offline: whatever is bound is never asked; cache misses end in `Error::Offline`.
        if self.inner.offline.on {
            return Ok(Arc::new(OfflineSource {
                origin: origin.clone(),
            }));
        }
        self.inner
            .sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .cloned()
            .ok_or_else(|| Error::Source(crate::error::SourceError::NotConnected {
                origin: origin.clone(),
            }))
    }

    /// The entry for `uri`: from the index while fresh (no request), else from `skills/get`,
    /// validated and stored (R-C6). Fetches no file (R-V1). Offline, only from the index: a
    /// stale row only when allowed (then [`EntryInfo::stale`]).
    ///
    /// # Errors
    /// Invalid entries and responses, transport and index errors; offline, [`Error::Offline`]
    /// for an entry not cached, or stale and not allowed.
    pub async fn entry(&self, origin: &Origin, uri: &SkillUri) -> Result<EntryInfo, Error> {
        if self.inner.offline.on {
            return offline::entry(
                &self.inner.core,
                self.inner.offline,
                origin,
                uri,
                &self.principal,
            )
            .await;
        }
        let (o, u, p) = (origin.clone(), uri.clone(), self.principal.to_string());
        if let Some(stored) = blocking(&self.inner.core, move |c| c.entry(&o, &u, &p)).await?
            && stored.fresh
            && !self
                .inner
                .is_marked_stale(origin, &stored.entry, stored.fetched_at_ms)
        {
            return Ok(EntryInfo {
                entry: stored.entry,
                from_cache: true,
                revoked: false,
                diff: None,
                stale: false,
            });
        }
        self.refresh(origin, uri).await
    }

    /// Asks the server for the entry again (`skills/get`), whatever the index holds. This is how
    /// a host recovers from a stale entry (R-V9) and reaches files added since (R-V4).
    ///
    /// # Errors
    /// Invalid entries and responses, transport and index errors.
    pub async fn refresh(&self, origin: &Origin, uri: &SkillUri) -> Result<EntryInfo, Error> {
        let source = self.source(origin)?;
        let result = self
            .inner
            .ask(
                origin,
                source.as_ref(),
                "skills/get",
                uri.as_str(),
                source.get_skill(uri.as_str()),
            )
            .await?;
        let (entry, hints) = parse_get_result(&result, uri, &self.inner.validation)?;
        let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
        let out = blocking(&self.inner.core, move |c| {
            put_or_serve(c, &o, &p, &e, hints)
        })
        .await?;
        self.inner
            .note_revocation(origin, &entry, &self.principal, &out);
        Ok(EntryInfo {
            entry,
            from_cache: false,
            revoked: out.revoked,
            diff: out.diff,
            stale: false,
        })
    }

    /// Pages through `skills/list` (a repeated cursor is an error), validates every entry (a
    /// repeated URI refuses every copy), stores the valid ones, and fetches no file (R-V1).
    ///
    /// Offline, the cached entries of `origin` this principal sees, each resolved as
    /// [`entry`](Self::entry) would (a stale one not allowed is an error in its slot).
    ///
    /// # Errors
    /// A malformed page, a repeated cursor, transport and index errors. A bad *entry* is
    /// returned in its slot instead.
    pub async fn list(&self, origin: &Origin) -> Result<Vec<Result<EntryInfo, Error>>, Error> {
        if self.inner.offline.on {
            return offline::list(
                &self.inner.core,
                self.inner.offline,
                origin,
                &self.principal,
            )
            .await;
        }
        let source = self.source(origin)?;
        let mut listing = Listing::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .inner
                .ask(
                    origin,
                    source.as_ref(),
                    "skills/list",
                    cursor.as_deref().unwrap_or_default(),
                    source.list_skills(cursor.as_deref()),
                )
                .await?;
            let page = parse_list_result(&page, &self.inner.validation)?;
            match listing.add_page(page)? {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let (skills, hints) = listing.finish();
        let mut out = Vec::with_capacity(skills.len());
        for skill in skills {
            out.push(match skill {
                Ok(entry) => {
                    let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
                    let put = blocking(&self.inner.core, move |c| {
                        put_or_serve(c, &o, &p, &e, hints)
                    })
                    .await?;
                    self.inner
                        .note_revocation(origin, &entry, &self.principal, &put);
                    Ok(EntryInfo {
                        entry,
                        from_cache: false,
                        revoked: put.revoked,
                        diff: put.diff,
                        stale: false,
                    })
                }
                Err(e) => Err(e.into()),
            });
        }
        Ok(out)
    }

    /// Approves `entry` as it is now, optionally granting the tools it requests (R-A1, R-A5).
    /// Nothing is fetched (R-V1).
    ///
    /// # Errors
    /// A dynamic entry cannot be approved (R-A3); index errors.
    pub async fn approve(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        granted_tools: Option<Value>,
    ) -> Result<(), Error> {
        let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
        blocking(&self.inner.core, move |c| {
            c.approve(&o, &p, &e, granted_tools.as_ref())
        })
        .await?;
        self.inner.forget_revocation(origin, entry, &self.principal);
        Ok(())
    }

    /// Whether `entry`, as it is now, is approved by this handle's principal (R-H11).
    ///
    /// # Errors
    /// Index errors.
    pub async fn is_approved(&self, origin: &Origin, entry: &SkillEntry) -> Result<bool, Error> {
        let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
        blocking(&self.inner.core, move |c| c.is_approved(&o, &p, &e)).await
    }

    /// Loads a skill: checks the limits from the entry alone (R-W7), the dynamic policy (R-V7)
    /// and — under [`ApprovalPolicy::Required`], the default — that this principal approved
    /// `entry` as it is now (R-P1), all before any request; then reads its `SKILL.md` through the
    /// verified path and checks its frontmatter against the entry (R-V6). The returned
    /// [`LoadedSkill`] is the acting window: it holds `entry`.
    ///
    /// A skill nested inside another (a `SKILL.md` below another skill's root) is its own skill
    /// with its own URI: the outer skill's approval neither admits it nor grants it anything.
    ///
    /// # Errors
    /// [`EntryError::LimitExceeded`](crate::error::EntryError::LimitExceeded); [`Error::Declined`] with [`Declined::Dynamic`],
    /// [`Declined::NotApproved`] or [`Declined::Revoked`] (no request sent); with a lock in
    /// force ([`SkillCacheBuilder::locked`]), [`Declined::NotLocked`] or [`Declined::Drift`]
    /// (no request sent); offline, [`Error::Offline`] for bytes not in the cache;
    /// [`VerifyError`](crate::error::VerifyError), invalid responses, transport, I/O and index errors.
    pub async fn load(&self, origin: &Origin, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let loaded = self.admit_load(origin, entry).await?;
        let skill_md = loaded.read_skill_md().await?;
        // Bytes from the server were checked before they were stored (R-H10); a cache hit is
        // checked here, on every load.
        check_frontmatter(origin, entry, skill_md.bytes())?;
        Ok(loaded.with_skill_md(skill_md))
    }

    /// [`SkillCache::load`], then every file of the skill, as one step: on a cold cache the
    /// `SKILL.md` and every other file are fetched (a few at a time), verified — the `SKILL.md`'s
    /// frontmatter against the entry too, before anything is kept (R-V6, R-H10) — and published
    /// as **one batch** (one round of syncs for the whole skill, R-C3). Returns the window and
    /// the files in manifest order. What a host that preloads whole skills calls.
    ///
    /// # Errors
    /// Those of [`SkillCache::load`] and [`LoadedSkill::read_all`]; a dynamic skill (which has no
    /// list of files) is loaded, and its only file is its `SKILL.md`.
    pub async fn load_all(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
    ) -> Result<(LoadedSkill, Vec<SkillFile>), Error> {
        let loaded = self.admit_load(origin, entry).await?;
        if entry.manifest().is_none() {
            let skill_md = loaded.read_skill_md().await?;
            check_frontmatter(origin, entry, skill_md.bytes())?;
            return Ok((loaded.with_skill_md(skill_md.clone()), vec![skill_md]));
        }
        let files = loaded.read_all().await?;
        let own = entry.uri().file();
        let skill_md = files
            .iter()
            .find(|f| f.uri() == own)
            .cloned()
            .ok_or_else(|| Error::Verify(crate::error::VerifyError {
                origin: origin.clone(),
                uri: own.clone(),
                mismatch: Mismatch::Unlisted,
            }))?;
        // A fetched SKILL.md was checked before the batch was stored; a hit is checked here.
        check_frontmatter(origin, entry, skill_md.bytes())?;
        Ok((loaded.with_skill_md(skill_md), files))
    }

    /// The checks `load` makes before any request (R-W7, R-V7, R-P1), and the window.
    async fn admit_load(&self, origin: &Origin, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let limits = self.inner.validation.current_limits();
        let declined = |limit, declared, max| Error::Entry(crate::error::EntryError::LimitExceeded {
            skill: entry.uri().clone(),
            limit,
            declared,
            max,
        });
        if let Some(m) = entry.manifest() {
            let files = m.files().len() as u64;
            if files > limits.max_files() {
                return Err(declined(Limit::Files, files, limits.max_files()));
            }
            if m.total_bytes() > limits.max_total_bytes() {
                return Err(declined(
                    Limit::TotalBytes,
                    m.total_bytes(),
                    limits.max_total_bytes(),
                ));
            }
        } else if self.inner.dynamic == DynamicPolicy::Decline {
            return Err(Error::Declined {
                origin: origin.clone(),
                skill: entry.uri().clone(),
                reason: Declined::Dynamic,
            });
        }
        // The lock is checked from the entry alone, before any request.
        if let Some(lock) = &self.inner.lock {
            lock.check(origin, entry)?;
        }
        let granted = match self.inner.approval {
            ApprovalPolicy::NotRequired => None,
            ApprovalPolicy::Required => self.inner.admit(origin, entry, &self.principal).await?,
        };
        let source = self.source(origin)?;
        let shared = self.inner.shared_for(origin, entry, &self.principal).await;
        let loaded = LoadedSkill::new(
            Arc::clone(&self.inner),
            origin.clone(),
            source,
            entry.clone(),
            granted,
            shared,
        );
        Ok(loaded)
    }
}
