//! `LoadedSkill`, the acting window (R-V4), and `SkillFile`, what every read returns (R-O4).

use super::file::{Provenance, SkillFile};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::fetch::{Admit, Inner};
use super::stats::Counter;
use crate::digest::Digest;
use crate::entry::{ManifestFile, SkillEntry, select_content};
use crate::error::{Error, Limit, Mismatch};
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::uri::FileUri;
use crate::verify::VerifiedBytes;

/// How many files of one skill [`LoadedSkill::read_all`] asks its server for at once: enough to
/// hide a round trip, few enough not to flood a server (R-B1 bounds each request, not their
/// number).
const FETCHES_IN_FLIGHT: usize = 8;

/// A loaded skill: the acting window (R-V4). It holds the entry it was loaded from and its
/// origin's source; every read through it is restricted to that entry's files and goes to that
/// source only (R-O6). Dropping it ends the window.
pub struct LoadedSkill {
    inner: Arc<Inner>,
    origin: Origin,
    source: Arc<dyn SkillSource>,
    entry: SkillEntry,
    skill_md: Option<SkillFile>,
    /// What the approval that admitted this load granted (R-A5); `None` without one.
    granted_tools: Option<Value>,
    /// Bytes received for a dynamic skill, against the total-size limit (R-V7).
    received: AtomicU64,
    /// The shared tier, only for a public entry (issue 14): decided once, at load.
    shared: Option<super::l2::Shared>,
}

impl std::fmt::Debug for LoadedSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSkill")
            .field("origin", &self.origin)
            .field("uri", self.entry.uri())
            .finish_non_exhaustive()
    }
}

impl LoadedSkill {
    pub(super) fn new(
        inner: Arc<Inner>,
        origin: Origin,
        source: Arc<dyn SkillSource>,
        entry: SkillEntry,
        granted_tools: Option<Value>,
        shared: Option<super::l2::Shared>,
    ) -> LoadedSkill {
        LoadedSkill {
            inner,
            origin,
            source,
            entry,
            skill_md: None,
            granted_tools,
            received: AtomicU64::new(0),
            shared,
        }
    }

    pub(super) fn with_skill_md(mut self, file: SkillFile) -> LoadedSkill {
        self.skill_md = Some(file);
        self
    }

    /// The origin.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The held entry.
    #[must_use]
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The verified `SKILL.md` (unverified for a dynamic skill).
    ///
    /// # Panics
    /// Never: a `LoadedSkill` is only handed out with its `SKILL.md`.
    #[must_use]
    pub fn skill_md(&self) -> &SkillFile {
        self.skill_md
            .as_ref()
            .expect("a LoadedSkill is only built with its SKILL.md")
    }

    /// What the principal *granted* of the requested tools when approving this skill as it is
    /// now (R-A5): the only permissions a host should apply. `None` when nothing was granted, and
    /// always under [`ApprovalPolicy::NotRequired`](super::ApprovalPolicy::NotRequired). A grant
    /// belongs to the approved skill alone: a skill nested inside it carries its own.
    #[must_use]
    pub fn granted_tools(&self) -> Option<&Value> {
        self.granted_tools.as_ref()
    }

    /// The files this window may read: the held entry's manifest (empty for a dynamic skill).
    #[must_use]
    pub fn files(&self) -> &[ManifestFile] {
        self.entry.manifest().map_or(&[], |m| m.files())
    }

    /// Reads a file of the skill: `reference` is resolved against the skill root (R-V5) — a
    /// relative path or an absolute URI inside the root — then must be listed in the held entry
    /// (R-V4: an unlisted file is a verification failure and *no request is sent*), then goes
    /// through the verified path.
    ///
    /// # Errors
    /// [`UriError`](crate::error::UriError) for a reference that leaves the skill, [`VerifyError`](crate::error::VerifyError), and
    /// the errors of the verified path.
    pub async fn read(&self, reference: &str) -> Result<SkillFile, Error> {
        let uri = self.entry.uri().resolve(reference)?;
        self.read_file(&uri).await
    }

    /// Every file of the held entry, in manifest order: the cached ones verified in parallel on
    /// every core (one blocking hop); the rest fetched from the server a few at a time, each
    /// verified as it arrives, then published together as one batch (one round of syncs for the
    /// whole skill instead of one per file, R-C3). A cached copy that failed is fetched exactly
    /// once more (R-V9). A dynamic skill has no list to read.
    ///
    /// # Errors
    /// The first error of any file; no partial result is returned (files fetched and verified
    /// before another one failed are not stored either: the next load fetches them again).
    ///
    /// # Panics
    /// Never: every file is either served from the cache or fetched before the list is made.
    pub async fn read_all(&self) -> Result<Vec<SkillFile>, Error> {
        let files: Vec<ManifestFile> = self.files().to_vec();
        let cached = self.read_cached(&files).await?;
        let mut out: Vec<Option<SkillFile>> = Vec::with_capacity(files.len());
        let mut wanted: Vec<(usize, bool)> = Vec::new();
        for (i, (file, read)) in files.iter().zip(cached).enumerate() {
            // A miss is looked up (and counted, R-P4) again under the fetch gates, so only hits
            // and quarantines are counted here.
            out.push(match read? {
                crate::core::CachedRead::Hit(v) => {
                    Some(self.inner.serve_hit(&self.origin, file, v))
                }
                crate::core::CachedRead::Miss => {
                    wanted.push((i, false));
                    None
                }
                crate::core::CachedRead::Failed(mismatch) => {
                    self.inner.note_quarantine(&self.origin, file, &mismatch);
                    wanted.push((i, true));
                    None
                }
            });
        }
        if !wanted.is_empty() {
            self.fetch_batch(&files, &wanted, &mut out).await?;
        }
        Ok(out
            .into_iter()
            .map(|f| f.expect("every file was served or fetched"))
            .collect())
    }

    async fn read_cached(
        &self,
        files: &[ManifestFile],
    ) -> Result<Vec<Result<crate::core::CachedRead, Error>>, Error> {
        let (origin, batch) = (self.origin.clone(), files.to_vec());
        super::fetch::blocking(&self.inner.core, move |c| Ok(c.read_files(&origin, &batch))).await
    }

    /// The misses of [`LoadedSkill::read_all`]: under the in-flight gate of each digest (taken
    /// in digest order, so two batches never wait on each other in a cycle), looked up once
    /// more (another task may have stored them meanwhile), fetched, then stored as one batch.
    async fn fetch_batch(
        &self,
        files: &[ManifestFile],
        wanted: &[(usize, bool)],
        out: &mut [Option<SkillFile>],
    ) -> Result<(), Error> {
        let mut digests: Vec<Digest> = wanted.iter().map(|&(i, _)| files[i].digest()).collect();
        digests.sort_unstable();
        digests.dedup();
        let gates: Vec<(Digest, super::fetch::Gate)> = digests
            .iter()
            .map(|&d| (d, self.inner.gate(&self.origin, d)))
            .collect();
        let mut turns = Vec::with_capacity(gates.len());
        for (_, gate) in &gates {
            turns.push(Arc::clone(gate).lock_owned().await);
        }
        let result = self.fetch_batch_gated(files, wanted, out, &mut turns).await;
        drop(turns);
        for (d, gate) in &gates {
            self.inner.release(&self.origin, *d, gate);
        }
        result
    }

    async fn fetch_batch_gated(
        &self,
        files: &[ManifestFile],
        wanted: &[(usize, bool)],
        out: &mut [Option<SkillFile>],
        turns: &mut [tokio::sync::OwnedMutexGuard<Option<(String, std::time::Duration)>>],
    ) -> Result<(), Error> {
        // The fetch another task made under one of these gates timed out: the same answer, not
        // another wait (as `fetch_listed`).
        if let Some((method, after)) = turns.iter().find_map(|t| t.as_ref()) {
            return Err(Error::Source(crate::error::SourceError::Timeout {
                origin: self.origin.clone(),
                method: method.clone(),
                after: *after,
            }));
        }
        let list: Vec<ManifestFile> = wanted.iter().map(|&(i, _)| files[i].clone()).collect();
        let again = self.read_cached(&list).await?;
        let mut fetch: Vec<(usize, bool)> = Vec::new();
        for (&(i, retried), read) in wanted.iter().zip(again) {
            match self.inner.count_cached(&self.origin, &files[i], read?) {
                Ok(hit) => out[i] = Some(hit),
                Err(again) => fetch.push((i, retried || again)),
            }
        }
        let fetched = match self.fetch_concurrently(files, &fetch).await {
            Ok(v) => v,
            Err(e) => {
                if let Error::Source(crate::error::SourceError::Timeout { method, after, .. }) = &e
                {
                    // Every gate of the batch answers the same to the tasks waiting on it.
                    for t in turns.iter_mut() {
                        **t = Some((method.clone(), *after));
                    }
                }
                return Err(e);
            }
        };
        let (fetched, provenances): (Vec<_>, Vec<_>) = fetched
            .into_iter()
            .map(|(file, verified, provenance)| ((file, verified), provenance))
            .unzip();
        let stored = self.store_batch(fetched).await?;
        for (((i, retried), (file, verified, stored)), provenance) in
            fetch.into_iter().zip(stored).zip(provenances)
        {
            if !stored {
                self.inner.counters.bump(Counter::StoreFailures);
            }
            self.inner.counters.served(verified.as_slice().len());
            let mut f = SkillFile::listed(&self.origin, &file, verified, provenance, retried);
            f.stored = stored;
            out[i] = Some(f);
        }
        Ok(())
    }

    /// Fetches and verifies `fetch`'s files (from the shared tier or the server), up to
    /// [`FETCHES_IN_FLIGHT`] at a time; the first failure ends the whole batch (the rest are
    /// dropped unanswered).
    async fn fetch_concurrently(
        &self,
        files: &[ManifestFile],
        fetch: &[(usize, bool)],
    ) -> Result<Vec<(ManifestFile, VerifiedBytes, Provenance)>, Error> {
        let mut slots: Vec<Option<(VerifiedBytes, Provenance)>> =
            std::iter::repeat_with(|| None).take(fetch.len()).collect();
        let mut running = tokio::task::JoinSet::new();
        let mut next = 0;
        loop {
            while next < fetch.len() && running.len() < FETCHES_IN_FLIGHT {
                let (inner, source, origin) = (
                    Arc::clone(&self.inner),
                    Arc::clone(&self.source),
                    self.origin.clone(),
                );
                let file = files[fetch[next].0].clone();
                // The skill's own SKILL.md is admitted only with the entry's frontmatter, before
                // anything of the batch is stored (R-V6, R-H10).
                let own = (file.uri() == self.entry.uri().file()).then(|| self.entry.clone());
                let shared = self.shared.clone();
                let slot = next;
                running.spawn(async move {
                    let admit = own.as_ref().map_or(Admit::Bytes, Admit::SkillMd);
                    let got = inner
                        .fetch_verified(&origin, source.as_ref(), &file, admit, shared.as_ref())
                        .await;
                    (slot, got)
                });
                next += 1;
            }
            let Some(done) = running.join_next().await else {
                break;
            };
            let (slot, got) = match done {
                Ok(r) => r,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => {
                    return Err(Error::Source(crate::error::SourceError::Transport {
                        method: "resources/read".into(),
                        source: Box::new(e),
                    }));
                }
            };
            slots[slot] = Some(got?);
        }
        Ok(fetch
            .iter()
            .zip(slots)
            .map(|(&(i, _), v)| {
                let (verified, provenance) = v.expect("every fetch finished");
                (files[i].clone(), verified, provenance)
            })
            .collect())
    }

    /// Stores fetched, verified files as one batch. A cache that cannot store (a full disk)
    /// must not fail a verified load: when the batch fails, each file is tried on its own, and
    /// one that still fails is served with `stored() == false` (logged and counted).
    async fn store_batch(
        &self,
        fetched: Vec<(ManifestFile, VerifiedBytes)>,
    ) -> Result<Vec<(ManifestFile, VerifiedBytes, bool)>, Error> {
        let origin = self.origin.clone();
        super::fetch::blocking(&self.inner.core, move |c| {
            let batch: Vec<(&ManifestFile, &[u8])> =
                fetched.iter().map(|(f, v)| (f, v.as_slice())).collect();
            let whole = c.store_files(&origin, &batch);
            drop(batch);
            let mut out = Vec::with_capacity(fetched.len());
            for (f, v) in fetched {
                let stored = match &whole {
                    Ok(()) => true,
                    Err(first) => match c.store_file(&origin, &f, v.as_slice()) {
                        Ok(()) => true,
                        Err(e) => {
                            tracing::warn!(origin = origin.as_str(), uri = f.uri().as_str(), disk_full = e.is_disk_full(), error = %e, batch_error = %first, "store failed: served without keeping a copy");
                            false
                        }
                    },
                };
                out.push((f, v, stored));
            }
            Ok(out)
        })
        .await
    }

    /// The skill's own `SKILL.md`, admitted only with the frontmatter the entry declares (R-H10).
    pub(super) async fn read_skill_md(&self) -> Result<SkillFile, Error> {
        let entry = self.entry.clone();
        self.read_file_admitting(entry.uri().file(), Admit::SkillMd(&entry))
            .await
    }

    async fn read_file(&self, uri: &FileUri) -> Result<SkillFile, Error> {
        self.read_file_admitting(uri, Admit::Bytes).await
    }

    async fn read_file_admitting(
        &self,
        uri: &FileUri,
        admit: Admit<'_>,
    ) -> Result<SkillFile, Error> {
        match self.entry.manifest() {
            Some(m) => {
                let Some(file) = m.file(uri) else {
                    return Err(Error::Verify(crate::error::VerifyError {
                        origin: self.origin.clone(),
                        uri: uri.clone(),
                        mismatch: Mismatch::Unlisted,
                    }));
                };
                self.inner
                    .fetch_listed(
                        &self.origin,
                        self.source.as_ref(),
                        file,
                        admit,
                        self.shared.as_ref(),
                    )
                    .await
            }
            None => self.read_dynamic(uri).await,
        }
    }

    /// A dynamic skill's file: fetched every time, never stored, marked unverified, and counted
    /// against the total-size limit (R-V7).
    async fn read_dynamic(&self, uri: &FileUri) -> Result<SkillFile, Error> {
        let max = self.inner.validation.current_limits().max_total_bytes();
        let over = |declared| {
            Error::Entry(crate::error::EntryError::LimitExceeded {
                skill: self.entry.uri().clone(),
                limit: Limit::TotalBytes,
                declared,
                max,
            })
        };
        if self.received.load(Ordering::Relaxed) >= max {
            return Err(over(self.received.load(Ordering::Relaxed)));
        }
        let result = self
            .inner
            .ask(
                &self.origin,
                self.source.as_ref(),
                "resources/read",
                uri.as_str(),
                self.source.read_resource(uri.as_str()),
            )
            .await?;
        let bytes = select_content(&result, uri)?;
        self.inner.counters.fetched(bytes.len());
        let total = self
            .received
            .fetch_add(bytes.len() as u64, Ordering::Relaxed)
            + bytes.len() as u64;
        if total > max {
            return Err(over(total));
        }
        self.inner.counters.served(bytes.len());
        Ok(SkillFile::dynamic(&self.origin, uri, bytes))
    }
}
