//! The shared state behind every `SkillCache` handle and every `LoadedSkill`, and the one fetch
//! path both use: ask the server under the deadlines, admit the bytes (size, digest, frontmatter),
//! serve a verified hit, count. `loading.rs` (the host-facing cache) and `loaded.rs` (the acting
//! window) both build on it; neither imports the other's internals.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::file::{Provenance, SkillFile};
use super::offline::Offline;
use super::policy::{ApprovalPolicy, Deadlines, DynamicPolicy};
use super::stats::{Counter, Counters};
use crate::core::{Cache, CachedRead};
use crate::digest::Digest;
use crate::entry::{
    Binding, EntryDiff, ManifestFile, SkillEntry, Validation, check_result_type, select_content,
};
use crate::error::{Declined, Error, Mismatch};
use crate::frontmatter;
use crate::lockfile::LockFile;
use crate::origin::Origin;
use crate::source::{Change, SkillSource, SourceFuture};
use crate::verify::VerifiedBytes;

/// Locks one of [`Inner`]'s maps, taking over a poisoned one: each is changed by single
/// inserts and removals, so a panic elsewhere never leaves one half-updated, and a load must not
/// fail over it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) struct Inner {
    pub(super) core: Arc<Cache>,
    pub(super) sources: RwLock<HashMap<Origin, Arc<dyn SkillSource>>>,
    pub(super) dynamic: DynamicPolicy,
    pub(super) validation: Validation,
    /// One fetch per (origin, digest) at a time in this process: concurrent readers of a missing
    /// file wait for the first fetch and then hit the cache.
    pub(super) inflight: Mutex<HashMap<(Origin, Digest), Gate>>,
    pub(super) deadlines: Deadlines,
    /// What servers announced as changed (R-B5), consulted before trusting a fresh index row.
    pub(super) stale: Mutex<HashMap<Origin, StaleMarks>>,
    pub(super) approval: ApprovalPolicy,
    pub(super) offline: Offline,
    /// The lock file in force, if any.
    pub(super) lock: Option<Arc<LockFile>>,
    /// Approvals this process saw revoked, with what changed, so a later `load` can say
    /// [`Declined::Revoked`] instead of "never approved" (the index drops the revoked row, R-A2).
    /// Bounded like the stale marks.
    pub(super) revocations: Mutex<HashMap<RevocationKey, (Binding, EntryDiff)>>,
    /// What [`SkillCache::stats`] reports (R-P4).
    pub(super) counters: Counters,
    /// The shared tier (issue 14); reached only through [`Inner::shared_for`].
    pub(super) l2: Option<Arc<super::l2::Tier>>,
}

/// (origin, canonical skill URI, principal).
pub(super) type RevocationKey = (Origin, String, String);

/// A per-file turn: held while one task fetches a file, so the others wait and then hit. A
/// fetch that timed out leaves its deadline here: the tasks waiting on the same turn get the
/// same timeout instead of each waiting out its own (R-B1); once they are gone the turn is
/// forgotten, and the next call tries again.
pub(super) type Gate = Arc<tokio::sync::Mutex<Option<(String, Duration)>>>;

/// The most revocations remembered (R-P1); past it the oldest knowledge is dropped and a
/// revoked skill is then reported as not approved, which declines it all the same.
pub(super) const MAX_REVOCATIONS: usize = 4096;

/// The most `resources/updated` marks kept per origin (R-B5: bounded memory whatever the server).
pub(super) const MAX_MARKS: usize = 1024;
/// The longest URI a `resources/updated` mark keeps.
pub(super) const MAX_MARKED_URI: usize = 4096;

/// Change notifications of one origin, as times (ms since the epoch) they arrived. An entry
/// fetched before a mark that concerns it is stale, however fresh its row says it is.
#[derive(Debug, Default)]
pub(super) struct StaleMarks {
    /// The last `list_changed`: every entry of the origin.
    pub(super) everything: Option<u64>,
    /// The last `resources/updated` of each URI: the entry whose skill holds it.
    pub(super) files: HashMap<String, u64>,
}

impl StaleMarks {
    pub(super) fn concerns(&self, entry: &SkillEntry, fetched_at_ms: u64) -> bool {
        if self.everything.is_some_and(|t| t >= fetched_at_ms) {
            return true;
        }
        let root = format!("{}/", entry.uri().root());
        self.files
            .iter()
            .any(|(uri, &t)| t >= fetched_at_ms && uri.starts_with(&root))
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
        Err(e) => Err(Error::Source(crate::error::SourceError::Transport {
            method: "blocking task".into(),
            source: Box::new(e),
        })),
    }
}

/// What a fetched file must pass besides its size and digest before it is stored.
#[derive(Clone, Copy)]
pub(super) enum Admit<'e> {
    /// Nothing more: a supporting file (a nested `SKILL.md` among them) is ordinary content.
    Bytes,
    /// The skill's own `SKILL.md`: its frontmatter must equal the entry's (R-V6) *before* the
    /// bytes are stored, so a `SKILL.md` that fails is never kept (R-H10).
    SkillMd(&'e SkillEntry),
}

/// Stores a fetched entry. An index that cannot record it (read-only, or a full disk) must not
/// fail a read (R-H5): the validated entry is still returned, just not kept, and nothing is
/// approved by it (an approval is checked against the entry's own binding).
pub(super) fn put_or_serve(
    c: &Cache,
    origin: &Origin,
    principal: &str,
    entry: &SkillEntry,
    hints: crate::entry::CacheHints,
) -> Result<crate::index::PutOutcome, Error> {
    match c.put_entry(origin, principal, entry, hints) {
        Err(e) if e.cannot_record() => {
            tracing::debug!(origin = origin.as_str(), uri = entry.uri().as_str(), error = %e, "entry served without being kept");
            Ok(crate::index::PutOutcome::default())
        }
        other => other,
    }
}

pub(super) fn check_frontmatter(
    origin: &Origin,
    entry: &SkillEntry,
    bytes: &[u8],
) -> Result<(), Error> {
    let fail = |mismatch| {
        Error::Verify(crate::error::VerifyError {
            origin: origin.clone(),
            uri: entry.uri().file().clone(),
            mismatch,
        })
    };
    match frontmatter::parse(bytes) {
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
    /// One request to `origin`'s server, under the deadlines (R-B1): connecting (if the source is
    /// not connected yet, R-B4) under the connect deadline, then the request under its own.
    /// A result that is not `complete` is refused. A request that misses its deadline is
    /// dropped whole, so nothing of it is kept.
    pub(super) async fn ask(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        method: &'static str,
        uri: &str,
        request: SourceFuture<'_>,
    ) -> Result<Value, Error> {
        let timeout = |method: &str, after: Duration| {
            self.counters.bump(Counter::Timeouts);
            tracing::info!(
                origin = origin.as_str(),
                method,
                uri,
                ?after,
                "the server did not answer in time"
            );
            Error::Source(crate::error::SourceError::Timeout {
                origin: origin.clone(),
                method: method.to_owned(),
                after,
            })
        };
        let Deadlines {
            connect,
            request: per_request,
        } = self.deadlines;
        tokio::time::timeout(connect, source.ready())
            .await
            .map_err(|_| timeout("initialize", connect))?
            .inspect_err(|e| {
                tracing::info!(origin = origin.as_str(), error = %e, "connecting to the server failed");
            })?;
        tracing::debug!(origin = origin.as_str(), method, uri, "request sent");
        let result = tokio::time::timeout(per_request, request)
            .await
            .map_err(|_| timeout(method, per_request))?
            .inspect_err(|e| {
                tracing::info!(origin = origin.as_str(), method, uri, error = %e, "request failed");
            })?;
        check_result_type(method, &result)?;
        tracing::debug!(origin = origin.as_str(), method, uri, "answer received");
        Ok(result)
    }

    /// The approval gate (R-P1): `Ok` with the approval's grant (R-A5) only if `principal`
    /// approved `entry` exactly as it is now. Reads the index only; sends nothing.
    pub(super) async fn admit(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
    ) -> Result<Option<Value>, Error> {
        let declined = |reason| Error::Declined {
            origin: origin.clone(),
            skill: entry.uri().clone(),
            reason,
        };
        // R-A3: a dynamic skill has no binding, so no approval can hold for it.
        let Some(binding) = entry.binding() else {
            return Err(declined(Declined::NotApproved));
        };
        let (o, u, p) = (origin.clone(), entry.uri().clone(), principal.to_owned());
        let approval = blocking(&self.core, move |c| c.approval(&o, &u, &p)).await?;
        // The approval binds to this skill's own URI and file set: a nested skill's URI has no
        // row unless it was approved itself, so its parent's approval and grant never reach it.
        match approval {
            // The same file set and the same frontmatter as approved (E7): the grant is of the
            // tools this entry's `allowed-tools` asks for, which the frontmatter check (R-V6)
            // then ties to the verified `SKILL.md` before the window opens.
            Some(a) if a.holds_for(entry) => Ok(a.granted_tools),
            // Approved once, as another file set or another frontmatter (a row another
            // principal's refresh did not touch, or an entry the index could not keep): say what
            // changed. A row whose entry this version cannot read has nothing true to say, so it
            // is "not approved".
            Some(a) => Err(declined(a.entry.map_or(Declined::NotApproved, |old| {
                Declined::Revoked {
                    changes: Box::new(old.diff(entry)),
                }
            }))),
            None => match self.revocation(origin, entry, principal, binding) {
                Some(diff) => Err(declined(Declined::Revoked {
                    changes: Box::new(diff),
                })),
                None => Err(declined(Declined::NotApproved)),
            },
        }
    }

    pub(super) fn revocation_key(
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
    ) -> RevocationKey {
        (
            origin.clone(),
            entry.uri().canonical().to_owned(),
            principal.to_owned(),
        )
    }

    /// Remembers that storing `entry` revoked `principal`'s approval (R-A2), for the gate.
    pub(super) fn note_revocation(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        out: &crate::index::PutOutcome,
    ) {
        let (true, Some(binding), Some(diff)) = (out.revoked, entry.binding(), out.diff.clone())
        else {
            return;
        };
        let mut map = lock(&self.revocations);
        if map.len() >= MAX_REVOCATIONS {
            map.clear();
        }
        map.insert(
            Self::revocation_key(origin, entry, principal),
            (binding, diff),
        );
    }

    pub(super) fn forget_revocation(&self, origin: &Origin, entry: &SkillEntry, principal: &str) {
        lock(&self.revocations).remove(&Self::revocation_key(origin, entry, principal));
    }

    /// What changed, if `principal`'s approval of this skill was revoked by the very file set
    /// `entry` has (an entry that changed again since is simply not approved).
    pub(super) fn revocation(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        binding: Binding,
    ) -> Option<EntryDiff> {
        lock(&self.revocations)
            .get(&Self::revocation_key(origin, entry, principal))
            .filter(|(b, _)| *b == binding)
            .map(|(_, diff)| diff.clone())
    }

    /// Counts and reports what a cached read found (R-P4): a hit becomes the file, served; a
    /// miss or a quarantined copy is `Err(retried)`, to be fetched. The core decides hits,
    /// misses and quarantines; they are tallied here, where the result arrives.
    pub(super) fn count_cached(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        read: CachedRead,
    ) -> Result<SkillFile, bool> {
        let uri = file.uri().as_str();
        match read {
            CachedRead::Hit(v) => Ok(self.serve_hit(origin, file, v)),
            CachedRead::Miss => {
                tracing::debug!(origin = origin.as_str(), uri, "cache miss");
                self.counters.bump(Counter::Misses);
                Err(false)
            }
            // The copy was quarantined by the core; one fetch from the server, bypassing it.
            CachedRead::Failed(mismatch) => {
                self.counters.bump(Counter::Misses);
                self.note_quarantine(origin, file, &mismatch);
                Err(true)
            }
        }
    }

    /// A verified cache hit, counted by how it was verified, as the file handed out.
    pub(super) fn serve_hit(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        v: VerifiedBytes,
    ) -> SkillFile {
        let mode = if v.rehashed() { "hashed" } else { "evidence" };
        tracing::debug!(
            origin = origin.as_str(),
            uri = file.uri().as_str(),
            mode,
            "cache hit"
        );
        self.counters.hit(v.rehashed(), v.as_slice().len());
        SkillFile::listed(origin, file, v, Provenance::Cache, false)
    }

    /// A cached copy failed and the core quarantined it; the one fetch R-V9 allows follows.
    pub(super) fn note_quarantine(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        mismatch: &Mismatch,
    ) {
        tracing::info!(origin = origin.as_str(), uri = file.uri().as_str(), %mismatch, "cached copy quarantined; fetching it once more (R-V9)");
        self.counters.quarantined_and_retried();
    }

    pub(super) fn mark_stale(&self, origin: &Origin, change: Change) {
        tracing::debug!(
            origin = origin.as_str(),
            ?change,
            "the server announced a change"
        );
        let now = crate::core::now_ms();
        let mut stale = lock(&self.stale);
        let marks = stale.entry(origin.clone()).or_default();
        match change {
            Change::ListChanged => {
                marks.everything = Some(now);
                marks.files.clear();
            }
            // A server may announce anything, as often as it likes: the marks stay bounded. A
            // URI no file URI can be, or one mark too many, becomes "everything changed", which
            // costs at most one `skills/get` per held skill and no memory.
            Change::Updated { uri }
                if uri.len() > MAX_MARKED_URI || marks.files.len() >= MAX_MARKS =>
            {
                marks.everything = Some(now);
                marks.files.clear();
            }
            Change::Updated { uri } => {
                marks.files.insert(uri, now);
            }
        }
    }

    pub(super) fn is_marked_stale(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        fetched_at_ms: u64,
    ) -> bool {
        lock(&self.stale)
            .get(origin)
            .is_some_and(|m| m.concerns(entry, fetched_at_ms))
    }

    pub(super) fn gate(&self, origin: &Origin, digest: Digest) -> Gate {
        let mut map = lock(&self.inflight);
        Arc::clone(map.entry((origin.clone(), digest)).or_default())
    }

    pub(super) fn release(&self, origin: &Origin, digest: Digest, gate: &Gate) {
        let mut map = lock(&self.inflight);
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
        admit: Admit<'_>,
        shared: Option<&super::l2::Shared>,
    ) -> Result<SkillFile, Error> {
        let gate = self.gate(origin, file.digest());
        let result = {
            let mut turn = gate.lock().await;
            if let Some((method, after)) = turn.as_ref() {
                // The fetch this task waited for timed out: the same answer, not another wait.
                Err(Error::Source(crate::error::SourceError::Timeout {
                    origin: origin.clone(),
                    method: method.clone(),
                    after: *after,
                }))
            } else {
                let result = self
                    .fetch_listed_locked(origin, source, file, admit, shared)
                    .await;
                if let Err(Error::Source(crate::error::SourceError::Timeout {
                    method,
                    after,
                    ..
                })) = &result
                {
                    *turn = Some((method.clone(), *after));
                }
                result
            }
        };
        self.release(origin, file.digest(), &gate);
        result
    }

    pub(super) async fn fetch_listed_locked(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        file: &ManifestFile,
        admit: Admit<'_>,
        shared: Option<&super::l2::Shared>,
    ) -> Result<SkillFile, Error> {
        let (o, f) = (origin.clone(), file.clone());
        let read = blocking(&self.core, move |c| c.read_file(&o, &f)).await?;
        let retried = match self.count_cached(origin, file, read) {
            Ok(hit) => return Ok(hit),
            Err(retried) => retried,
        };
        // Memory → local store → L2 → server (`fetch_verified`): L2 bytes are verified like the
        // server's before they are kept; a bad or missing object means one server read, as
        // without the tier, so the retry budget (R-V9) is unchanged.
        let (verified, provenance) = self
            .fetch_verified(origin, source, file, admit, shared)
            .await?;
        let (o, f) = (origin.clone(), file.clone());
        let (verified, stored) = blocking(&self.core, move |c| {
            // A cache that cannot store (a full disk) must not fail a verified load: the bytes
            // are still served, and the file says they were not kept. The failure is reported,
            // never swallowed: counted below, logged here, and `SkillFile::stored` is false.
            let stored = match c.store_file(&o, &f, verified.as_slice()) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(origin = o.as_str(), uri = f.uri().as_str(), disk_full = e.is_disk_full(), error = %e, "store failed: served without keeping a copy");
                    false
                }
            };
            Ok((verified, stored))
        })
        .await?;
        if !stored {
            self.counters.bump(Counter::StoreFailures);
        }
        self.counters.served(verified.as_slice().len());
        let mut out = SkillFile::listed(origin, file, verified, provenance, retried);
        out.stored = stored;
        Ok(out)
    }

    /// A listed file that is not in the local store, verified and not yet stored: from the
    /// shared tier when it has a good copy (feature `l2`; only for public entries), else one
    /// `resources/read`. Bytes that reached us from the server are put to the shared tier before
    /// the local store's syncs, so hosts waiting on this host's claim wait less (issue 14).
    pub(super) async fn fetch_verified(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        file: &ManifestFile,
        admit: Admit<'_>,
        shared: Option<&super::l2::Shared>,
    ) -> Result<(VerifiedBytes, Provenance), Error> {
        if let Some(verified) = self.read_l2(shared, origin, file, admit).await {
            return Ok((verified, Provenance::L2));
        }
        let verified = self.fetch_from_server(origin, source, file, admit).await?;
        self.put_l2(shared, origin, file, &verified).await;
        Ok((verified, Provenance::Server))
    }

    /// One `resources/read` of a listed file, its bytes checked against the listing (size, then
    /// digest) and, for the skill's own `SKILL.md`, its frontmatter (R-H10) — nothing stored.
    /// Bytes from the server that fail are an error at once.
    pub(super) async fn fetch_from_server(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        file: &ManifestFile,
        admit: Admit<'_>,
    ) -> Result<VerifiedBytes, Error> {
        let result = self
            .ask(
                origin,
                source,
                "resources/read",
                file.uri().as_str(),
                source.read_resource(file.uri().as_str()),
            )
            .await?;
        let bytes = select_content(&result, file.uri())?;
        self.counters.fetched(bytes.len());
        let verified =
            VerifiedBytes::check(bytes, file.size(), file.digest()).map_err(|mismatch| {
                Error::Verify(crate::error::VerifyError {
                    origin: origin.clone(),
                    uri: file.uri().clone(),
                    mismatch,
                })
            })?;
        if let Admit::SkillMd(entry) = admit {
            check_frontmatter(origin, entry, verified.as_slice())?;
        }
        Ok(verified)
    }
}
