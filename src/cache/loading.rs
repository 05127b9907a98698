//! `SkillCache`: the loading path (R-V1…R-V9, R-O6, R-C4, R-C6, R-C7), async over the sync core.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use super::loaded::{LoadedSkill, Provenance, SkillFile};
use super::{Cache, CacheBuilder, CachedRead};
use crate::digest::{Digest, VerifiedBytes};
use crate::entry::{
    EntryDiff, Limits, Listing, ManifestFile, SkillEntry, Validation, parse_get_result,
    parse_list_result, select_content,
};
use crate::error::{Declined, Error, Limit, Mismatch};
use crate::frontmatter;
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::store::Isolation;
use crate::uri::SkillUri;

/// What the host does with dynamic skills (`resources: "dynamic"`, R-V7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DynamicPolicy {
    /// Refuse to load them (the default): they offer no content integrity.
    #[default]
    Decline,
    /// Load them, marked unverified, within the byte budget; never cached, never approvable.
    AllowUnverified,
}

/// Builds a [`SkillCache`]. Every option has a documented default.
#[derive(Debug, Clone, Default)]
pub struct SkillCacheBuilder {
    core: CacheBuilder,
    dynamic: DynamicPolicy,
    validation: Validation,
    principal: String,
}

impl SkillCacheBuilder {
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
    /// Per-skill limits. Default: [`Limits::BASELINE`], 512 files / 16 MiB (R-W7).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.validation = self.validation.limits(limits);
        self
    }
    /// Strict Agent Skills rules for entries. Default: off (R-W6).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.validation = self.validation.strict(strict);
        self
    }
    /// The host key file that seals index rows (R-H3). Default:
    /// [`default_key_file`](super::default_key_file).
    #[must_use]
    pub fn key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.core = self.core.key_file(path);
        self
    }
    /// The authorization context private entries are stored under (R-C6), and the principal
    /// whose approvals this cache grants and checks (R-H11). Default: `""`.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = principal.into();
        self
    }
    /// Opens the cache.
    ///
    /// # Errors
    /// As [`CacheBuilder::open`].
    pub fn open(self) -> Result<SkillCache, Error> {
        Ok(SkillCache {
            inner: Arc::new(Inner {
                core: Arc::new(self.core.open()?),
                sources: RwLock::default(),
                dynamic: self.dynamic,
                validation: self.validation,
                principal: self.principal,
                inflight: Mutex::default(),
            }),
        })
    }
}

pub(super) struct Inner {
    pub(super) core: Arc<Cache>,
    sources: RwLock<HashMap<Origin, Arc<dyn SkillSource>>>,
    pub(super) dynamic: DynamicPolicy,
    pub(super) validation: Validation,
    principal: String,
    /// One fetch per (origin, digest) at a time in this process: concurrent readers of a missing
    /// file wait for the first fetch and then hit the cache.
    inflight: Mutex<HashMap<(Origin, Digest), Gate>>,
}

/// A per-file turn: held while one task fetches a file, so the others wait and then hit.
type Gate = Arc<tokio::sync::Mutex<()>>;

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
}

/// The verified skill cache: the host's backend for skills served over MCP.
///
/// Each origin is bound to one [`SkillSource`] with [`SkillCache::connect`]; everything loaded
/// under that origin reads only through it (R-O6).
#[derive(Clone)]
pub struct SkillCache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SkillCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillCache")
            .field("root", &self.inner.core.root())
            .finish_non_exhaustive()
    }
}

/// Runs a sync core call on the blocking pool: one hop per call.
pub(crate) async fn blocking<T: Send + 'static>(
    core: &Arc<Cache>,
    f: impl FnOnce(&Cache) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let core = Arc::clone(core);
    match tokio::task::spawn_blocking(move || f(&core)).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(Error::Transport {
            method: "blocking task".into(),
            source: Box::new(e),
        }),
    }
}

impl SkillCache {
    /// A builder with every default.
    #[must_use]
    pub fn builder() -> SkillCacheBuilder {
        SkillCacheBuilder::default()
    }

    /// The sync core, for maintenance (verify, gc, purge) and inspection.
    #[must_use]
    pub fn core(&self) -> &Cache {
        &self.inner.core
    }

    /// Binds `origin` to `source`, replacing an earlier binding (a reconnect). Skills already
    /// loaded keep reading through the source they were loaded from.
    pub fn connect(&self, origin: Origin, source: Arc<dyn SkillSource>) {
        self.inner
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin, source);
    }

    /// Unbinds `origin`. Its cached content stays (use [`Cache::purge`] to remove it).
    pub fn disconnect(&self, origin: &Origin) {
        self.inner
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin);
    }

    fn source(&self, origin: &Origin) -> Result<Arc<dyn SkillSource>, Error> {
        self.inner
            .sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .cloned()
            .ok_or_else(|| Error::NotConnected {
                origin: origin.as_str().to_owned(),
            })
    }

    /// The entry for `uri`: from the index while fresh (no request), else from `skills/get`,
    /// validated and stored (R-C6). Fetches no file (R-V1).
    ///
    /// # Errors
    /// Invalid entries and responses, transport and index errors.
    pub async fn entry(&self, origin: &Origin, uri: &SkillUri) -> Result<EntryInfo, Error> {
        let (o, u, p) = (origin.clone(), uri.clone(), self.inner.principal.clone());
        if let Some(stored) = blocking(&self.inner.core, move |c| c.entry(&o, &u, &p)).await?
            && stored.fresh
        {
            return Ok(EntryInfo {
                entry: stored.entry,
                from_cache: true,
                revoked: false,
                diff: None,
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
        let result = source.get_skill(uri.as_str()).await?;
        let (entry, hints) = parse_get_result(&result, uri, &self.inner.validation)?;
        let (o, e, p) = (origin.clone(), entry.clone(), self.inner.principal.clone());
        let out = blocking(&self.inner.core, move |c| {
            put_or_serve(c, &o, &p, &e, hints)
        })
        .await?;
        Ok(EntryInfo {
            entry,
            from_cache: false,
            revoked: out.revoked,
            diff: out.diff,
        })
    }

    /// Pages through `skills/list` (a repeated cursor is an error), validates every entry (a
    /// repeated URI refuses every copy), stores the valid ones, and fetches no file (R-V1).
    ///
    /// # Errors
    /// A malformed page, a repeated cursor, transport and index errors. A bad *entry* is
    /// returned in its slot instead.
    pub async fn list(&self, origin: &Origin) -> Result<Vec<Result<EntryInfo, Error>>, Error> {
        let source = self.source(origin)?;
        let mut listing = Listing::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = source.list_skills(cursor.as_deref()).await?;
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
                    let (o, e, p) = (origin.clone(), entry.clone(), self.inner.principal.clone());
                    let put = blocking(&self.inner.core, move |c| {
                        put_or_serve(c, &o, &p, &e, hints)
                    })
                    .await?;
                    Ok(EntryInfo {
                        entry,
                        from_cache: false,
                        revoked: put.revoked,
                        diff: put.diff,
                    })
                }
                Err(e) => Err(e),
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
        let (o, e, p) = (origin.clone(), entry.clone(), self.inner.principal.clone());
        blocking(&self.inner.core, move |c| {
            c.approve(&o, &p, &e, granted_tools.as_ref())
        })
        .await
    }

    /// Whether `entry`, as it is now, is approved by this cache's principal (R-H11).
    ///
    /// # Errors
    /// Index errors.
    pub async fn is_approved(&self, origin: &Origin, entry: &SkillEntry) -> Result<bool, Error> {
        let (o, e, p) = (origin.clone(), entry.clone(), self.inner.principal.clone());
        blocking(&self.inner.core, move |c| c.is_approved(&o, &p, &e)).await
    }

    /// Loads a skill: checks the limits from the entry alone (R-W7) and the dynamic policy
    /// (R-V7), reads its `SKILL.md` through the verified path, and checks its frontmatter against
    /// the entry (R-V6). The returned [`LoadedSkill`] is the acting window: it holds `entry`.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`], [`Error::Declined`], [`Error::Verification`], invalid
    /// responses, transport, I/O and index errors.
    pub async fn load(&self, origin: &Origin, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let limits = self.inner.validation.current_limits();
        let declined = |limit, declared, max| Error::LimitExceeded {
            skill: entry.uri().as_str().to_owned(),
            limit,
            declared,
            max,
        };
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
                origin: origin.as_str().to_owned(),
                skill: entry.uri().as_str().to_owned(),
                reason: Declined::Dynamic,
            });
        }
        let source = self.source(origin)?;
        let loaded = LoadedSkill::new(
            Arc::clone(&self.inner),
            origin.clone(),
            source,
            entry.clone(),
        );
        let skill_md = loaded.read_file(entry.uri().file()).await?;
        check_frontmatter(origin, entry, &skill_md)?;
        Ok(loaded.with_skill_md(skill_md))
    }
}

/// Stores a fetched entry. An index that cannot record it (read-only, or a full disk) must not
/// fail a read (R-H5): the validated entry is still returned, just not kept, and nothing is
/// approved by it (an approval is checked against the entry's own binding).
fn put_or_serve(
    c: &Cache,
    origin: &Origin,
    principal: &str,
    entry: &SkillEntry,
    hints: crate::entry::CacheHints,
) -> Result<crate::index::PutOutcome, Error> {
    match c.put_entry(origin, principal, entry, hints) {
        Err(e) if matches!(e, Error::IndexReadOnly { .. }) || crate::index::is_disk_full(&e) => {
            tracing::debug!(origin = origin.as_str(), uri = entry.uri().as_str(), error = %e, "entry served without being kept");
            Ok(crate::index::PutOutcome::default())
        }
        other => other,
    }
}

fn check_frontmatter(origin: &Origin, entry: &SkillEntry, file: &SkillFile) -> Result<(), Error> {
    let fail = |mismatch| Error::Verification {
        origin: origin.as_str().to_owned(),
        uri: entry.uri().as_str().to_owned(),
        mismatch,
    };
    match frontmatter::parse_problem(file.bytes()) {
        Err(problem) => Err(fail(Mismatch::FrontmatterUnreadable { problem })),
        Ok(fm) => {
            let diffs = frontmatter::compare(entry.frontmatter(), &fm);
            if diffs.is_empty() {
                Ok(())
            } else {
                Err(fail(Mismatch::Frontmatter { diffs }))
            }
        }
    }
}

impl Inner {
    fn gate(&self, origin: &Origin, digest: Digest) -> Gate {
        let mut map = self
            .inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(map.entry((origin.clone(), digest)).or_default())
    }

    fn release(&self, origin: &Origin, digest: Digest, gate: &Gate) {
        let mut map = self
            .inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only the map and this caller hold it: nobody is waiting, so forget it.
        if Arc::strong_count(gate) <= 2 {
            map.remove(&(origin.clone(), digest));
        }
    }

    /// A listed file through the verified path: cache hit verified per the isolation policy;
    /// miss fetched, checked size then digest, published; a cached copy that fails is
    /// quarantined and fetched exactly once more (R-V9). Bytes from the server that fail are an
    /// error at once.
    pub(super) async fn fetch_listed(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        file: &ManifestFile,
    ) -> Result<SkillFile, Error> {
        let gate = self.gate(origin, file.digest());
        let result = {
            let _turn = gate.lock().await;
            self.fetch_listed_locked(origin, source, file).await
        };
        self.release(origin, file.digest(), &gate);
        result
    }

    async fn fetch_listed_locked(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        file: &ManifestFile,
    ) -> Result<SkillFile, Error> {
        let (o, f) = (origin.clone(), file.clone());
        let retried = match blocking(&self.core, move |c| c.read_file(&o, &f)).await? {
            CachedRead::Hit(v) => {
                return Ok(SkillFile::listed(origin, file, v, Provenance::Cache, false));
            }
            CachedRead::Miss => false,
            // The copy was quarantined by the core; one fetch from the server, bypassing it.
            CachedRead::Failed(_) => true,
        };
        let result = source.read_resource(file.uri().as_str()).await?;
        let bytes = select_content(&result, file.uri())?;
        let verified =
            VerifiedBytes::check(bytes, file.size(), file.digest()).map_err(|mismatch| {
                Error::Verification {
                    origin: origin.as_str().to_owned(),
                    uri: file.uri().as_str().to_owned(),
                    mismatch,
                }
            })?;
        let (o, f) = (origin.clone(), file.clone());
        let (verified, stored) = blocking(&self.core, move |c| {
            // A cache that cannot store (a full disk) must not fail a verified load: the bytes
            // are still served, and the file says they were not kept.
            let stored = match c.store_file(&o, &f, verified.as_slice()) {
                Ok(()) => true,
                Err(e) => {
                    if crate::index::is_disk_full(&e) {
                        tracing::debug!(origin = o.as_str(), uri = f.uri().as_str(), "disk full: served without keeping a copy");
                    } else {
                        tracing::warn!(origin = o.as_str(), uri = f.uri().as_str(), error = %e, "served without keeping a copy");
                    }
                    false
                }
            };
            Ok((verified, stored))
        })
        .await?;
        let mut out = SkillFile::listed(origin, file, verified, Provenance::Server, retried);
        out.stored = stored;
        Ok(out)
    }
}
