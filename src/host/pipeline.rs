//! The one path every listed file takes, one file or a whole skill alike (a single file is a
//! batch of one): the memory tier and small stored hits on the caller's thread (no blocking hop),
//! the rest of the local store (one hop for the batch), and
//! for what is missing — under each digest's single-flight turn — the shared tier, then the
//! server, each file verified as it arrives (size, then digest, then for the skill's own
//! `SKILL.md` the frontmatter), and the verified files handed in batches to the cache's keeper,
//! which publishes them behind the load (`behind.rs`; a batch it does not take is published here,
//! a round of syncs a batch, not a file, R-C3; the server kept busy meanwhile, R-T3). A cached copy that fails is quarantined by the core and fetched exactly once more
//! (R-V9); bytes from the server that fail are an error at once.

use std::sync::Arc;

use super::file::{Provenance, SkillFile};
use super::state::State;
use crate::core::{CachedRead, Kept, PurgeMark, QUICK_HIT_MAX_BYTES};
use crate::entry::{ManifestFile, SkillEntry, select_content};
use crate::error::{Error, Mismatch, VerifyError};
use crate::frontmatter;
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::stats::Counter;
use crate::tier::TierHandle;
use crate::verify::VerifiedBytes;

/// How many files of one batch are asked of the server at once: enough to hide a round trip,
/// few enough not to flood a server (R-B1 bounds each request, not their number).
const FETCHES_IN_FLIGHT: usize = 8;

/// A fetched file as the batch hands it back: the file, its verified bytes, where they came
/// from, and whether a copy was kept.
type Served = (ManifestFile, VerifiedBytes, Provenance, bool);

/// A publish under way: the fetch slots it answers, and the future that stores them.
type Publishing<'p> = (
    Vec<usize>,
    std::pin::Pin<Box<dyn Future<Output = Result<Vec<Served>, Error>> + Send + 'p>>,
);

/// A fetch task's result: its slot, and its checked bytes or its error.
type Fetched = (usize, Result<(VerifiedBytes, Provenance), Error>);

/// What a turn holds: the deadline a fetch under it missed, if one did.
type Turn = tokio::sync::OwnedMutexGuard<Option<(String, std::time::Duration)>>;

/// The frontmatter check (R-V6): `bytes` are the skill's own `SKILL.md`, whose frontmatter must
/// equal the entry's, key by key.
pub(super) fn check_frontmatter(
    origin: &Origin,
    entry: &SkillEntry,
    bytes: &[u8],
) -> Result<(), Error> {
    let fail = |mismatch| {
        Error::Verify(VerifyError {
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

/// One skill's files through the verified path.
pub(super) struct Pipeline<'a> {
    pub(super) state: &'a Arc<State>,
    pub(super) origin: &'a Origin,
    pub(super) source: &'a Arc<dyn SkillSource>,
    /// The held entry: the skill's own `SKILL.md` is admitted only with its frontmatter.
    pub(super) entry: &'a SkillEntry,
    pub(super) tier: Option<&'a TierHandle>,
    /// Whether a cached `SKILL.md` is checked against the entry's frontmatter too (what `load`
    /// asks: the entry may be newer than the bytes' first check). A fetched one always is,
    /// before it is stored (R-H10).
    pub(super) check_hits: bool,
    /// The purge count seen when the skill was loaded (`Cache::purge_mark_for`).
    pub(super) seen_purges: Option<u64>,
}

impl Pipeline<'_> {
    /// `files`, verified, in their order; the first error of any file fails the whole call
    /// (files fetched and verified before it may have been stored already — each is a verified
    /// copy of a listed file — and the rest are fetched again by the next read).
    pub(super) async fn read(&self, files: &[ManifestFile]) -> Result<Vec<SkillFile>, Error> {
        let mut out: Vec<Option<SkillFile>> =
            std::iter::repeat_with(|| None).take(files.len()).collect();
        let mut rest = Vec::new();
        // Small stored hits are read on this thread (R-T1): a blocking hop costs far more than
        // reading and hashing a few KiB. At most this many bytes a call, so a whole skill's
        // files still go to the blocking pool, in parallel.
        let mut inline_left = QUICK_HIT_MAX_BYTES;
        for (i, file) in files.iter().enumerate() {
            let core = self.state.core();
            let quick = core.memory_hit(self.origin, file).or_else(|| {
                let size = file.size();
                (size <= inline_left).then(|| {
                    inline_left -= size;
                    core.quick_hit(self.origin, file)
                })?
            });
            match quick {
                Some((bytes, touch_due)) => {
                    if touch_due {
                        self.touch_later(file);
                    }
                    out[i] = Some(self.hit(file, bytes)?);
                }
                None => rest.push(i),
            }
        }
        if !rest.is_empty() {
            // A miss is looked up (and counted, R-P4) again under the fetch turns, so only hits
            // and quarantines are counted here.
            let mut wanted = Vec::new();
            for (i, read) in rest
                .iter()
                .copied()
                .zip(self.cached(files, &rest, false).await?.0)
            {
                match read? {
                    CachedRead::Hit(v) => out[i] = Some(self.hit(&files[i], v)?),
                    CachedRead::Miss => wanted.push((i, false)),
                    CachedRead::Failed(mismatch) => {
                        self.note_quarantine(&files[i], &mismatch);
                        wanted.push((i, true));
                    }
                }
            }
            if !wanted.is_empty() {
                self.fetch(files, &wanted, &mut out).await?;
            }
        }
        Ok(out
            .into_iter()
            .map(|f| f.expect("every file was served or fetched"))
            .collect())
    }

    /// The access time of a hit served on this thread, written off the caller's path (best
    /// effort).
    fn touch_later(&self, file: &ManifestFile) {
        let (core, origin, digest) = (
            Arc::clone(self.state.core()),
            self.origin.clone(),
            file.digest(),
        );
        drop(tokio::task::spawn_blocking(move || {
            core.touch(&origin, &digest);
        }));
    }

    /// The store's reads of `files[at]`, verified in parallel (one hop); with `mark`, in the
    /// same hop, the index's purge mark, noted before anything is fetched (a publish of what is
    /// fetched next is kept only while it holds: `Cache::store_verified`).
    async fn cached(
        &self,
        files: &[ManifestFile],
        at: &[usize],
        mark: bool,
    ) -> Result<(Vec<Result<CachedRead, Error>>, Option<PurgeMark>), Error> {
        let (origin, batch) = (
            self.origin.clone(),
            at.iter().map(|&i| files[i].clone()).collect::<Vec<_>>(),
        );
        let (skill, seen) = (self.entry.uri().clone(), self.seen_purges);
        self.state
            .blocking(move |c| {
                let reads = c.read_files(&origin, &batch);
                Ok((reads, mark.then(|| c.purge_mark_for(&origin, &skill, seen))))
            })
            .await
    }

    /// A verified cache hit, counted by how it was verified, as the file handed out.
    fn hit(&self, file: &ManifestFile, v: VerifiedBytes) -> Result<SkillFile, Error> {
        if self.check_hits && self.is_skill_md(file) {
            check_frontmatter(self.origin, self.entry, v.as_slice())?;
        }
        let mode = if v.rehashed() { "hashed" } else { "evidence" };
        tracing::debug!(
            origin = self.origin.as_str(),
            uri = file.uri().as_str(),
            mode,
            "cache hit"
        );
        self.state.counters().hit(v.rehashed(), v.as_slice().len());
        Ok(SkillFile::listed(
            self.origin,
            file,
            v,
            Provenance::Cache,
            false,
            true,
        ))
    }

    fn is_skill_md(&self, file: &ManifestFile) -> bool {
        file.uri() == self.entry.uri().file()
    }

    /// A cached copy failed and the core quarantined it; the one fetch R-V9 allows follows.
    fn note_quarantine(&self, file: &ManifestFile, mismatch: &Mismatch) {
        tracing::info!(origin = self.origin.as_str(), uri = file.uri().as_str(), %mismatch, "cached copy quarantined; fetching it once more");
        self.state.counters().quarantined_and_retried();
    }

    /// The misses: under the turn of each digest (taken in digest order, so two batches never
    /// wait on each other in a cycle), looked up once more (another task may have stored them
    /// meanwhile), fetched, then stored as one batch.
    async fn fetch(
        &self,
        files: &[ManifestFile],
        wanted: &[(usize, bool)],
        out: &mut [Option<SkillFile>],
    ) -> Result<(), Error> {
        let mut digests: Vec<_> = wanted.iter().map(|&(i, _)| files[i].digest()).collect();
        digests.sort_unstable();
        digests.dedup();
        // Given back when dropped, on every path: a cancelled call drops this future at any
        // `await` below. The turns are declared after it, so they are dropped first.
        let gates = self.state.flights().gates(self.origin, &digests);
        let mut turns = Vec::with_capacity(digests.len());
        for gate in gates.iter() {
            turns.push(Arc::clone(gate).lock_owned().await);
        }
        self.fetch_in_turn(files, wanted, out, &mut turns).await
    }

    async fn fetch_in_turn(
        &self,
        files: &[ManifestFile],
        wanted: &[(usize, bool)],
        out: &mut [Option<SkillFile>],
        turns: &mut [Turn],
    ) -> Result<(), Error> {
        // The fetch another task made under one of these turns timed out: the same answer, not
        // another wait.
        if let Some((method, after)) = turns.iter().find_map(|t| t.as_ref()) {
            return Err(Error::Source(crate::error::SourceError::Timeout {
                origin: self.origin.clone(),
                method: method.clone(),
                after: *after,
            }));
        }
        let at: Vec<usize> = wanted.iter().map(|&(i, _)| i).collect();
        let mut fetch: Vec<(usize, bool)> = Vec::new();
        let (reads, mark) = self.cached(files, &at, true).await?;
        let mark = mark.expect("asked for");
        for (&(i, retried), read) in wanted.iter().zip(reads) {
            match read? {
                CachedRead::Hit(v) => out[i] = Some(self.hit(&files[i], v)?),
                CachedRead::Miss => {
                    tracing::debug!(
                        origin = self.origin.as_str(),
                        uri = files[i].uri().as_str(),
                        "cache miss"
                    );
                    self.state.counters().bump(Counter::Misses);
                    fetch.push((i, retried));
                }
                CachedRead::Failed(mismatch) => {
                    self.state.counters().bump(Counter::Misses);
                    self.note_quarantine(&files[i], &mismatch);
                    fetch.push((i, true));
                }
            }
        }
        let stored = match self.fetch_and_store(files, &fetch, mark).await {
            Ok(v) => v,
            Err(e) => {
                if let Error::Source(crate::error::SourceError::Timeout { method, after, .. }) = &e
                {
                    // Every turn of the batch answers the same to the tasks waiting on it.
                    for t in turns.iter_mut() {
                        **t = Some((method.clone(), *after));
                    }
                }
                return Err(e);
            }
        };
        for ((i, retried), (file, verified, provenance, stored)) in fetch.into_iter().zip(stored) {
            self.state.counters().served(verified.as_slice().len());
            out[i] = Some(SkillFile::listed(
                self.origin,
                &file,
                verified,
                provenance,
                retried,
                stored,
            ));
        }
        Ok(())
    }

    /// Fetches and verifies `fetch`'s files (from the shared tier or the server), up to
    /// [`FETCHES_IN_FLIGHT`] at a time, and stores them while the rest are still being fetched:
    /// whenever no publish is under way and at least [`PUBLISH_AHEAD_MIN`] verified files wait,
    /// they are handed to the keeper as one batch (or, when it does not take them, published on
    /// the blocking pool) while the fetches go on, so the server is kept busy meanwhile; what is
    /// left is handed over at the end (R-T3). Each
    /// file is fully checked — the skill's own `SKILL.md` with its frontmatter — before it is
    /// handed to a publish (R-V6, R-H10). The first failure ends the whole batch (the rest are
    /// dropped unanswered) once a publish under way has finished; files already stored stay (they
    /// are verified copies of listed files). Results are in the order of `fetch`.
    async fn fetch_and_store(
        &self,
        files: &[ManifestFile],
        fetch: &[(usize, bool)],
        mark: PurgeMark,
    ) -> Result<Vec<Served>, Error> {
        let mut slots: Vec<Option<Served>> =
            std::iter::repeat_with(|| None).take(fetch.len()).collect();
        // Fetched and verified, not yet handed to a publish: (slot, file, bytes, provenance).
        let mut waiting: Vec<(usize, ManifestFile, VerifiedBytes, Provenance)> = Vec::new();
        let mut publishing: Option<Publishing<'_>> = None;
        let mut running = tokio::task::JoinSet::new();
        let mut next = 0;
        let mut failed: Option<Error> = None;
        loop {
            while failed.is_none() && next < fetch.len() && running.len() < FETCHES_IN_FLIGHT {
                running.spawn(self.fetch_one(files, fetch, next));
                next += 1;
            }
            let fetching = !running.is_empty();
            if publishing.is_none()
                && failed.is_none()
                && fetching
                && waiting.len() >= PUBLISH_AHEAD_MIN
            {
                publishing = Some(self.start_publish(std::mem::take(&mut waiting), mark));
            }
            if !fetching && publishing.is_none() {
                break;
            }
            tokio::select! {
                Some(done) = running.join_next(), if fetching => match joined(done) {
                    Ok((slot, verified, provenance)) => {
                        waiting.push((slot, files[fetch[slot].0].clone(), verified, provenance));
                    }
                    Err(e) => {
                        // No new fetch is started; the ones in flight are dropped unanswered.
                        running.abort_all();
                        running = tokio::task::JoinSet::new();
                        failed.get_or_insert(e);
                    }
                },
                done = async { publishing.as_mut().expect("a publish is under way").1.as_mut().await }, if publishing.is_some() => {
                    let (at, _) = publishing.take().expect("a publish was under way");
                    for (slot, r) in at.into_iter().zip(done?) {
                        slots[slot] = Some(r);
                    }
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if !waiting.is_empty() {
            let (at, rest) = self.start_publish(waiting, mark);
            for (slot, r) in at.into_iter().zip(rest.await?) {
                slots[slot] = Some(r);
            }
        }
        Ok(slots
            .into_iter()
            .map(|s| s.expect("every file was fetched and offered to the store"))
            .collect())
    }

    /// The task that fetches `fetch[slot]`'s file: from the shared tier or the server, checked.
    fn fetch_one(
        &self,
        files: &[ManifestFile],
        fetch: &[(usize, bool)],
        slot: usize,
    ) -> impl Future<Output = Fetched> + Send + 'static {
        let file = files[fetch[slot].0].clone();
        let one = Fetch {
            state: Arc::clone(self.state),
            origin: self.origin.clone(),
            source: Arc::clone(self.source),
            // The skill's own SKILL.md is admitted only with the entry's frontmatter, before it
            // is stored (R-V6, R-H10).
            skill_md: self.is_skill_md(&file).then(|| self.entry.clone()),
            file,
            tier: self.tier.cloned(),
        };
        async move { (slot, one.run().await) }
    }

    /// A publish of `waiting`'s files, as the slots they answer and the future that stores them.
    fn start_publish(
        &self,
        waiting: Vec<(usize, ManifestFile, VerifiedBytes, Provenance)>,
        mark: PurgeMark,
    ) -> Publishing<'_> {
        let (at, batch): (Vec<usize>, Vec<_>) = waiting
            .into_iter()
            .map(|(slot, f, v, p)| (slot, (f, v, p)))
            .unzip();
        (at, Box::pin(self.publish(batch, mark)))
    }

    /// Stores fetched, verified files: handed to the keeper, which publishes them behind the
    /// load while they are served from memory (write-behind, `behind.rs`); or, when it does not
    /// take them (over its bound), as one batch here (one hop). A cache that cannot store (a
    /// full disk) must not fail a verified load: a file that is not kept is served with
    /// `stored() == false` (logged and counted), here or, behind the load, by the keeper.
    async fn publish(
        &self,
        fetched: Vec<(ManifestFile, VerifiedBytes, Provenance)>,
        mark: PurgeMark,
    ) -> Result<Vec<Served>, Error> {
        let (batch, provenance): (Vec<_>, Vec<_>) =
            fetched.into_iter().map(|(f, v, p)| ((f, v), p)).unzip();
        if self.state.keeper().hand_over(self.origin, &batch, mark) {
            return Ok(batch
                .into_iter()
                .zip(provenance)
                .map(|((f, v), p)| (f, v, p, true))
                .collect());
        }
        let origin = self.origin.clone();
        let n = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        let (served, outcome) = self
            .state
            .blocking(move |c| {
                let files: Vec<_> = batch.iter().map(|(f, v)| (f, v)).collect();
                let outcome = c.store_verified(&origin, &files, mark);
                drop(files);
                let kept = outcome == Kept::Stored;
                let served: Vec<Served> = batch
                    .into_iter()
                    .zip(provenance)
                    .map(|((f, v), p)| (f, v, p, kept))
                    .collect();
                Ok((served, outcome))
            })
            .await?;
        match outcome {
            Kept::Stored => {}
            Kept::Failed => self.state.counters().add(Counter::StoreFailures, n),
            // Not a failure of the store: the purge's doing, counted apart.
            Kept::Purged => self.state.counters().add(Counter::PurgeDrops, n),
        }
        Ok(served)
    }
}

/// How many verified files a batch waits for before they are published while the rest of the
/// batch is still being fetched: enough for the whole-filesystem sync (`syncfs` twice, whatever
/// the count), so each early publish costs about what the last one does.
const PUBLISH_AHEAD_MIN: usize = 8;

/// A fetch task's outcome: the slot it answers and its checked bytes, its error, or — for a task
/// that did not finish — a panic passed on as a panic.
fn joined(
    done: Result<Fetched, tokio::task::JoinError>,
) -> Result<(usize, VerifiedBytes, Provenance), Error> {
    match done {
        Ok((slot, Ok((verified, provenance)))) => Ok((slot, verified, provenance)),
        Ok((_, Err(e))) => Err(e),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(Error::Source(crate::error::SourceError::Transport {
            origin: None,
            method: "resources/read".into(),
            source: Box::new(e),
        })),
    }
}

/// One file to fetch on its own task: from the shared tier when it has a good copy, else one
/// `resources/read`. Bytes that reached us from the server are put to the shared tier before
/// the local store's syncs, so hosts waiting on this host's claim wait less.
struct Fetch {
    state: Arc<State>,
    origin: Origin,
    source: Arc<dyn SkillSource>,
    file: ManifestFile,
    skill_md: Option<SkillEntry>,
    tier: Option<TierHandle>,
}

impl Fetch {
    async fn run(self) -> Result<(VerifiedBytes, Provenance), Error> {
        if let Some(v) = self.tier_copy().await {
            return Ok((v, Provenance::L2));
        }
        let uri = self.file.uri().as_str();
        let result = self
            .state
            .ask(
                &self.origin,
                self.source.as_ref(),
                "resources/read",
                Some(uri),
                self.source.read_resource(uri),
            )
            .await?;
        let bytes =
            select_content(&result, self.file.uri()).map_err(|e| e.sent_by(&self.origin))?;
        self.state.counters().fetched(bytes.len());
        let verified = self.check(bytes)?;
        if let Some(t) = &self.tier {
            t.tier()
                .put(&self.origin, &self.file, &verified, self.state.counters())
                .await;
        }
        Ok((verified, Provenance::Server))
    }

    /// The tier's bytes, checked like the server's; a bad or missing object means one server
    /// read, as without the tier, so the retry budget (R-V9) is unchanged. Nothing here fails.
    async fn tier_copy(&self) -> Option<VerifiedBytes> {
        let t = self.tier.as_ref()?;
        let counters = self.state.counters();
        let bytes = t.tier().get(&self.origin, &self.file, counters).await?;
        match self.check(bytes) {
            Ok(v) => {
                tracing::debug!(
                    origin = self.origin.as_str(),
                    uri = self.file.uri().as_str(),
                    "l2 hit"
                );
                counters.bump(Counter::L2Hits);
                Some(v)
            }
            Err(Error::Verify(VerifyError { mismatch, .. })) => {
                t.tier()
                    .rejected(&self.origin, &self.file, &mismatch, counters);
                None
            }
            Err(e) => {
                tracing::warn!(origin = self.origin.as_str(), uri = self.file.uri().as_str(), error = %e, "an l2 object could not be checked; asking the server");
                counters.bump(Counter::L2Rejected);
                None
            }
        }
    }

    /// Size, then digest (R-V3, R-V2), then for the skill's own `SKILL.md` the frontmatter.
    fn check(&self, bytes: Vec<u8>) -> Result<VerifiedBytes, Error> {
        let verified = VerifiedBytes::check(bytes, self.file.size(), self.file.digest()).map_err(
            |mismatch| {
                Error::Verify(VerifyError {
                    origin: self.origin.clone(),
                    uri: self.file.uri().clone(),
                    mismatch,
                })
            },
        )?;
        if let Some(entry) = &self.skill_md {
            check_frontmatter(&self.origin, entry, verified.as_slice())?;
        }
        Ok(verified)
    }
}
