//! `SkillCache`: the host's verbs — bind servers, resolve entries, approve, load (R-V1…R-V9,
//! R-O6, R-C4, R-C6, R-C7). Each is a short composition of admission, the pipeline and the
//! index, async over the sync core.

use std::sync::Arc;

use serde_json::Value;

use super::file::SkillFile;
use super::offline::{self, OfflineSource};
use super::state::State;
use super::window::LoadedSkill;
use crate::catalog::{self, Catalog};
use crate::core::Asked;
use crate::entry::info::EntryInfo;
use crate::entry::{CacheHints, Listing, SkillEntry, parse_get_result, parse_list_result};
use crate::error::{ConfigError, Error, Mismatch};
use crate::index::PutOutcome;
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::stats::Stats;
use crate::uri::SkillUri;

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
    state: Arc<State>,
    /// Whose entries (R-C6) and approvals (R-H11) this handle reads and writes.
    principal: Arc<str>,
}

impl std::fmt::Debug for SkillCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillCache")
            .field("root", &self.state.core().root())
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl SkillCache {
    pub(super) fn new(state: State, principal: String) -> SkillCache {
        SkillCache {
            state: Arc::new(state),
            principal: Arc::from(principal),
        }
    }

    pub(super) fn state(&self) -> &Arc<State> {
        &self.state
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
    /// // Two principals a person could not tell apart: one is refused (R-E6).
    /// assert!(cache.for_principal("alice\u{200B}").is_err());
    /// # drop(alice);
    /// # Ok::<(), skillcache::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a principal with a control, format, bidi or other invisible
    /// character, or a space at either end, naming it (R-E6): whose entries and approvals these
    /// are must be plain to whoever reads them; and for one longer than 256 bytes (a user name, an
    /// email address, an id: it is kept with every private entry and approval).
    pub fn for_principal(&self, principal: impl Into<String>) -> Result<SkillCache, ConfigError> {
        let principal = principal.into();
        check_principal(&principal)?;
        Ok(SkillCache {
            state: Arc::clone(&self.state),
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
        self.state.counters().snapshot(
            self.state.core().seal_failures(),
            self.state.tier().is_some(),
        )
    }

    /// Waits until every file that loads handed over before this call is in the store.
    ///
    /// A load hands its verified files to the host as soon as they are verified, and the
    /// cache publishes them behind it, on a thread of its own (write-behind): until then they
    /// are served from memory, to every handle of this cache. A file the store then cannot keep
    /// (a full disk) is logged and counted ([`Counter::StoreFailures`](crate::Counter::StoreFailures)), and fetched
    /// again by a later load. Nothing here is needed for correctness — a copy lost to a crash is
    /// a miss, never a wrong byte — but a host that wants its loads durable before it goes on
    /// (before it exits without dropping the cache, or hands the root to another process) calls
    /// this. Maintenance ([`verify`](Self::verify), [`gc`](Self::gc), [`purge`](Self::purge),
    /// [`inventory`](Self::inventory), …) flushes first by itself, and dropping the last handle
    /// of a cache waits for the rest.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), skillcache::Error> {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let cache = skillcache::SkillCache::builder()
    ///     .root(tmp.path().join("cache"))
    ///     .key_file(tmp.path().join("host.key"))
    ///     .open()?;
    /// // ... loads ...
    /// cache.flush().await; // everything loaded so far is in the store
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) {
        self.state.flush().await;
    }

    /// The sync core, for the crate's own tests and benches (feature `internals`; not part of
    /// the supported API: the store and the index below it are the crate's business).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    #[must_use]
    pub fn core(&self) -> &crate::core::Cache {
        self.state.core()
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
        let state = Arc::downgrade(&self.state);
        let marked = origin.clone();
        source.watch(Arc::new(move |change| {
            if let Some(state) = state.upgrade() {
                state.marks().mark_stale(&marked, change);
            }
        }));
        self.state.bind(origin, source);
    }

    /// Unbinds `origin`. Its cached content stays (use [`SkillCache::purge`] to remove it).
    pub fn disconnect(&self, origin: &Origin) {
        self.state.unbind(origin);
    }

    fn source(&self, origin: &Origin) -> Result<Arc<dyn SkillSource>, Error> {
        // Offline: whatever is bound is never asked; cache misses end in `Error::Offline`.
        if self.state.settings().offline.on {
            return Ok(Arc::new(OfflineSource {
                origin: origin.clone(),
            }));
        }
        self.state.bound(origin).ok_or_else(|| {
            Error::Source(crate::error::SourceError::NotConnected {
                origin: origin.clone(),
            })
        })
    }

    /// The entry for `uri`: from the index while fresh (no request), else from `skills/get`,
    /// validated and stored (R-C6). Fetches no file (R-V1). Offline, only from the index: a
    /// stale row only when allowed (then [`EntryInfo::stale`]).
    ///
    /// # Errors
    /// Invalid entries and responses, transport and index errors; offline, [`Error::Offline`]
    /// for an entry not cached, or stale and not allowed.
    pub async fn entry(&self, origin: &Origin, uri: &SkillUri) -> Result<EntryInfo, Error> {
        if self.state.settings().offline.on {
            return offline::entry(&self.state, origin, uri, &self.principal).await;
        }
        // A warm entry is answered from the index's memo with no hop (R-T1).
        // Read before the row: a count older than the row's reading is safe to note (a
        // later fetch then asks the index whether it still holds the skill), a newer one not.
        let seen = self.state.core().purges_seen(origin);
        let quick = self.state.core().entry_quick(origin, uri, &self.principal);
        let stored = if let Some(stored) = quick {
            Some(stored)
        } else {
            let (o, u, p) = (origin.clone(), uri.clone(), self.principal.to_string());
            self.state.blocking(move |c| c.entry(&o, &u, &p)).await?
        };
        if let Some(stored) = stored
            && stored.fresh
            && !self
                .state
                .marks()
                .is_stale(origin, &stored.entry, stored.fetched_at_ms)
        {
            let entry = self.state.core().noted(stored.entry, seen);
            return Ok(EntryInfo::cached(entry, false));
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
        let asked = self.asked(origin).await?;
        let result = self
            .state
            .ask(
                origin,
                source.as_ref(),
                "skills/get",
                Some(uri.as_str()),
                source.get_skill(uri.as_str()),
            )
            .await?;
        let (entry, hints) = parse_get_result(&result, uri, &self.state.settings().validation)
            .map_err(|e| e.sent_by(origin))?;
        self.keep(origin, entry, hints, asked).await
    }

    /// Stores a fetched entry and says what storing it revoked. An index that cannot record it
    /// (read-only, or a full disk) must not fail a read (R-H5): the validated entry is still
    /// returned, just not kept, and nothing is approved by it (an approval is checked against
    /// the entry's own binding).
    async fn keep(
        &self,
        origin: &Origin,
        entry: SkillEntry,
        hints: CacheHints,
        asked: Asked,
    ) -> Result<EntryInfo, Error> {
        let mut kept = self.keep_all(origin, vec![entry], hints, asked).await?;
        Ok(kept.pop().expect("one outcome for one entry"))
    }

    /// [`keep`](Self::keep) for the entries of one listing, in one index transaction: one
    /// commit for the whole listing, not one per entry (G1).
    async fn keep_all(
        &self,
        origin: &Origin,
        entries: Vec<SkillEntry>,
        hints: CacheHints,
        asked: Asked,
    ) -> Result<Vec<EntryInfo>, Error> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let (o, e, p) = (origin.clone(), entries.clone(), self.principal.to_string());
        // A row fetched before a change the server announced is stale (R-B5): within the slack
        // of such an announcement every row is renewed, else a recent unchanged row is left as
        // it is (a host that lists at every turn writes nothing).
        let since =
            crate::core::now_ms().saturating_sub(crate::index::RELIST_SLACK_MS.unsigned_abs());
        let relisted = !self.state.marks().announced_since(origin, since);
        let outcomes = self
            .state
            .blocking(move |c| {
                let n = e.len();
                let put = c.put_answered(&o, &p, &e, hints, relisted, asked).map(|kept| {
                    kept.unwrap_or_else(|| {
                        // Asked before a purge of the index (any origin, any process), answered
                        // after it: served, not kept (the purge is not undone).
                        tracing::debug!(origin = o.as_str(), "the index was purged while these entries were asked for: served without keeping them");
                        vec![PutOutcome::default(); n]
                    })
                });
                unkept_if_unrecordable(&o, put, || vec![PutOutcome::default(); n])
            })
            .await?;
        // One outcome per entry, in order (`put_entries`' contract).
        Ok(entries
            .into_iter()
            .zip(outcomes)
            .map(|(entry, out)| self.kept(origin, entry, out, asked.purges()))
            .collect())
    }

    /// What a request whose answer is kept notes before it is sent (`Cache::asked`).
    async fn asked(&self, origin: &Origin) -> Result<Asked, Error> {
        let o = origin.clone();
        self.state.blocking(move |c| Ok(c.asked(&o))).await
    }

    /// What a stored entry tells its caller; a revocation it caused is noted first.
    /// `purges` is the count the request noted before it was sent ([`Asked`]).
    fn kept(
        &self,
        origin: &Origin,
        entry: SkillEntry,
        out: PutOutcome,
        purges: Option<u64>,
    ) -> EntryInfo {
        self.state
            .marks()
            .note_revocation(origin, &entry, &self.principal, &out);
        EntryInfo {
            entry: self.state.core().noted(entry, purges),
            from_cache: false,
            revoked: out.revoked,
            diff: out.diff,
            stale: false,
        }
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
        if self.state.settings().offline.on {
            return offline::list(&self.state, origin, &self.principal).await;
        }
        let source = self.source(origin)?;
        let validation = &self.state.settings().validation;
        let asked = self.asked(origin).await?;
        let mut listing = Listing::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .state
                .ask(
                    origin,
                    source.as_ref(),
                    "skills/list",
                    None,
                    source.list_skills(cursor.as_deref()),
                )
                .await?;
            let page = parse_list_result(&page, validation).map_err(|e| e.sent_by(origin))?;
            match listing.add_page(page).map_err(|e| e.sent_by(origin))? {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let (skills, hints) = listing.finish();
        let mut refused = Vec::new();
        let mut valid = Vec::new();
        for (slot, skill) in skills.into_iter().enumerate() {
            match skill {
                Ok(entry) => valid.push(entry),
                Err(e) => refused.push((slot, Error::from(e.sent_by(origin)))),
            }
        }
        // The valid entries kept in one transaction, then every refusal put back in its slot.
        let mut out: Vec<Result<EntryInfo, Error>> = self
            .keep_all(origin, valid, hints, asked)
            .await?
            .into_iter()
            .map(Ok)
            .collect();
        for (slot, e) in refused {
            out.insert(slot, Err(e));
        }
        Ok(out)
    }

    /// Lists every bound origin (each as [`list`](Self::list) does, at most
    /// [`CATALOG_LISTINGS_AT_ONCE`](crate::CATALOG_LISTINGS_AT_ONCE) at a time, so that a host
    /// with hundreds of servers does not start them all at once) into one [`Catalog`]: every
    /// skill under a handle unique across origins and stable across runs, and every name
    /// collision reported with all its parties — two skills of one origin, skills of several
    /// origins, and `local_names`, the host's own filesystem skills, which an MCP skill never
    /// shadows or poses as (R-Q1). An origin whose listing fails, and each refused entry, is in
    /// [`Catalog::failures`]; the other origins are listed all the same. The servers stay
    /// connected; a host that wants each one only for its listing gathers the listings itself
    /// and builds the catalog with [`Catalog::from_listings`].
    ///
    /// # Errors
    /// Only a local name that is empty or holds `:` or `/` (the marks of a qualified handle):
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid).
    pub async fn catalog(&self, local_names: &[&str]) -> Result<Catalog, Error> {
        // Checked before any server is asked.
        catalog::local_names(local_names)?;
        let at_once = Arc::new(tokio::sync::Semaphore::new(
            catalog::CATALOG_LISTINGS_AT_ONCE,
        ));
        let mut listings = tokio::task::JoinSet::new();
        for origin in self.state.bound_origins() {
            let (cache, at_once) = (self.clone(), Arc::clone(&at_once));
            listings.spawn(async move {
                // The semaphore is never closed.
                let _turn = at_once.acquire_owned().await.ok();
                let listed = cache.list(&origin).await;
                (origin, listed)
            });
        }
        let mut gathered = Vec::new();
        while let Some(done) = listings.join_next().await {
            // A listing task only ends by finishing or panicking (none is aborted): a panic is
            // passed on, never turned into a missing origin.
            gathered.push(done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
        }
        Catalog::from_listings(gathered, local_names)
    }

    /// Approves `entry` as it is now, optionally granting the tools it requests (R-A1, R-A5).
    /// Nothing is fetched (R-V1).
    ///
    /// # Errors
    /// A dynamic entry cannot be approved (R-A3): [`Error::Declined`] with
    /// [`Declined::Dynamic`](crate::error::Declined::Dynamic); index errors.
    pub async fn approve(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        granted_tools: Option<Value>,
    ) -> Result<(), Error> {
        let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
        self.state
            .blocking(move |c| c.approve(&o, &p, &e, granted_tools.as_ref()))
            .await?;
        self.state
            .marks()
            .forget_revocation(origin, entry, &self.principal);
        Ok(())
    }

    /// Whether `entry`, as it is now, is approved by this handle's principal (R-H11).
    ///
    /// # Errors
    /// Index errors.
    pub async fn is_approved(&self, origin: &Origin, entry: &SkillEntry) -> Result<bool, Error> {
        let (o, e, p) = (origin.clone(), entry.clone(), self.principal.to_string());
        self.state
            .blocking(move |c| c.is_approved(&o, &p, &e))
            .await
    }

    /// Loads a skill: checks the limits from the entry alone (R-W7), the dynamic policy (R-V7)
    /// and — under [`ApprovalPolicy::Required`](crate::ApprovalPolicy::Required), the default —
    /// that this principal approved `entry` as it is now (R-P1), all before any request; then
    /// reads its `SKILL.md` through the verified path and checks its frontmatter against the
    /// entry (R-V6). The returned [`LoadedSkill`] is the acting window: it holds `entry`.
    ///
    /// A skill nested inside another (a `SKILL.md` below another skill's root) is its own skill
    /// with its own URI: the outer skill's approval neither admits it nor grants it anything.
    ///
    /// # Errors
    /// [`EntryError::LimitExceeded`](crate::error::EntryError::LimitExceeded); [`Error::Declined`] with [`Declined::Dynamic`](crate::error::Declined::Dynamic),
    /// [`Declined::NotApproved`](crate::error::Declined::NotApproved) or [`Declined::Revoked`](crate::error::Declined::Revoked) (no request sent); with a lock in
    /// force ([`SkillCacheBuilder::locked`](crate::SkillCacheBuilder::locked)), [`Declined::NotLocked`](crate::error::Declined::NotLocked) or [`Declined::Drift`](crate::error::Declined::Drift)
    /// (no request sent); offline, [`Error::Offline`] for bytes not in the cache;
    /// [`VerifyError`](crate::error::VerifyError), invalid responses, transport, I/O and index errors.
    pub async fn load(&self, origin: &Origin, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let window = self.window(origin, entry).await?;
        let skill_md = window.read_skill_md().await?;
        Ok(window.with_skill_md(skill_md))
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
        let window = self.window(origin, entry).await?;
        if entry.manifest().is_none() {
            let skill_md = window.read_skill_md().await?;
            return Ok((window.with_skill_md(skill_md.clone()), vec![skill_md]));
        }
        let files = window.read_all_loading().await?;
        let own = entry.uri().file();
        let skill_md = files
            .iter()
            .find(|f| f.uri() == own)
            .cloned()
            .ok_or_else(|| {
                Error::Verify(crate::error::VerifyError {
                    origin: origin.clone(),
                    uri: own.clone(),
                    mismatch: Mismatch::Unlisted,
                })
            })?;
        Ok((window.with_skill_md(skill_md), files))
    }

    /// Admission (every check before any request), then the window.
    async fn window(&self, origin: &Origin, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let admitted = self.state.admit(origin, entry, &self.principal).await?;
        let source = self.source(origin)?;
        Ok(LoadedSkill::new(
            Arc::clone(&self.state),
            origin.clone(),
            source,
            entry.clone(),
            admitted.granted,
            admitted.tier,
        ))
    }
}

/// A principal is a label a person reads (whose approval this is): every character of it must
/// be visible (R-E6). The empty principal, the default, is allowed.
pub(super) fn check_principal(principal: &str) -> Result<(), ConfigError> {
    const MAX_PRINCIPAL_BYTES: usize = 256;
    if principal.len() > MAX_PRINCIPAL_BYTES {
        return Err(ConfigError::Invalid {
            what: format!(
                "the principal is {} bytes long: at most {MAX_PRINCIPAL_BYTES}",
                principal.len()
            ),
        });
    }
    match crate::display::invisible_in_label(principal) {
        Some(why) => Err(ConfigError::Invalid {
            what: format!("the principal {why}: every character of a principal must be visible"),
        }),
        None => Ok(()),
    }
}

/// An index that cannot record (full, read-only) serves what it was given unkept: `unkept`'s
/// outcomes (nothing revoked, nothing to report) instead of the error.
fn unkept_if_unrecordable<T>(
    origin: &Origin,
    put: Result<T, Error>,
    unkept: impl FnOnce() -> T,
) -> Result<T, Error> {
    match put {
        Err(e) if e.cannot_record() => {
            tracing::debug!(origin = origin.as_str(), error = %e, "served without being kept");
            Ok(unkept())
        }
        other => other,
    }
}
