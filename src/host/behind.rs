//! Write-behind (issue 41, P1): a load hands its verified files to the host as soon as they are
//! verified, and the store makes them durable behind it, on one thread of the cache's own.
//!
//! - **Correctness does not wait for durability.** What is handed over is verified; the store
//!   is content-addressed and every cached read is verified again (or checked against the
//!   evidence the store recorded), so a copy lost to a crash before it was published is a miss
//!   later, never a wrong byte (the crash points of `core::crash_points` include this path).
//! - **Served meanwhile.** Until the store has published them, the files are held by the core
//!   (`core::pending`), and every cached read looks there first: a second load in the window
//!   gets them without a request.
//! - **Bounded.** The core holds at most `WRITE_BEHIND_BYTES`; a batch that does not fit is
//!   published by its load itself, as before, so a store that cannot keep up slows the loads to
//!   its pace instead of growing a backlog.
//! - **Flushed.** [`SkillCache::flush`](crate::SkillCache::flush) waits for everything handed
//!   over before it; maintenance that looks at the store (verify, gc, purge, inventory, the
//!   cached entries) flushes first, so a purge is never undone by a publish queued before it;
//!   and dropping the last handle of a cache waits for its thread to finish the queue.
//! - **One batch, one round of syncs.** The thread takes every batch queued when it wakes and
//!   publishes each origin's files together: a sweep of many skills costs a few rounds of syncs,
//!   not one per skill.
//! - **Forks.** A child of a fork has no keeper thread: it starts its own on first use, and what
//!   the parent had queued is the parent's to publish.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::{Cache, Kept, PurgeMark};
use crate::entry::ManifestFile;
use crate::origin::Origin;
use crate::stats::{Counter, Counters};
use crate::verify::VerifiedBytes;

/// Files of one origin handed over by a load.
type Batch = Vec<(ManifestFile, VerifiedBytes)>;

/// What the thread is sent: a batch, or word that someone waits (a flush): publish now.
enum Msg {
    Job(Job),
    Hurry,
}

/// One batch on its way to the thread, numbered in the order it was handed over.
struct Job {
    seq: u64,
    origin: Origin,
    files: Batch,
    /// The index's purge mark the load noted before it fetched these files: they are kept
    /// only if no purge came since (`Cache::store_verified`).
    mark: PurgeMark,
}

/// How far the thread has got: every batch up to `done` is published (or failed).
#[derive(Default)]
struct Progress {
    at: Mutex<(u64, u64)>,
    moved: Condvar,
    /// Set by [`flush_all`] (which holds no way to send to the thread: a sender kept there
    /// would keep the queue open forever): the thread stops gathering at its next look.
    hurry: std::sync::atomic::AtomicBool,
}

impl Progress {
    fn lock(&self) -> MutexGuard<'_, (u64, u64)> {
        self.at.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until every batch handed over so far is done, or until `deadline`; whether they
    /// all are.
    fn settle(&self, deadline: Option<Instant>) -> bool {
        let mut at = self.lock();
        let target = at.0;
        while at.1 < target {
            at = match deadline {
                None => self.moved.wait(at).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.moved
                        .wait_timeout(at, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        true
    }
}

/// Every keeper thread started, with the process that started it, for [`flush_all`]: a binding
/// whose host exits without dropping its caches (Python's finalization, Node's `exit`) waits
/// here for them. A forked child inherits its parent's entries, whose threads it does not have.
static EVERY: Mutex<Vec<(u32, Weak<Progress>)>> = Mutex::new(Vec::new());

/// Waits up to `within`, in all, for every cache of this process to publish what its loads
/// handed over; whether everything was.
pub(super) fn flush_all(within: Duration) -> bool {
    let deadline = Instant::now() + within;
    // Only this process's keepers: in a forked child the parent's never move again, and a
    // child that exits would wait out `within` for them (round 28 of review: 10 s at every
    // exit of a worker forked while its parent had stores pending).
    let here = std::process::id();
    let live: Vec<Arc<Progress>> = {
        let mut every = EVERY.lock().unwrap_or_else(PoisonError::into_inner);
        every.retain(|(pid, p)| *pid == here && p.strong_count() > 0);
        every.iter().filter_map(|(_, p)| p.upgrade()).collect()
    };
    for p in &live {
        p.hurry.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    live.iter().all(|p| p.settle(Some(deadline)))
}

/// The thread of this process, and how to reach it.
struct Running {
    pid: u32,
    jobs: Sender<Msg>,
    progress: Arc<Progress>,
    thread: Option<JoinHandle<()>>,
}

/// The cache's keeper: the queue and the thread that empties it (module comment).
pub(super) struct Keeper {
    core: Arc<Cache>,
    counters: Arc<Counters>,
    running: Mutex<Option<Running>>,
}

impl Keeper {
    pub(super) fn new(core: Arc<Cache>, counters: Arc<Counters>) -> Keeper {
        Keeper {
            core,
            counters,
            running: Mutex::default(),
        }
    }

    fn running(&self) -> MutexGuard<'_, Option<Running>> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running
            .as_ref()
            .is_some_and(|r| r.pid != std::process::id())
        {
            // A forked child: the thread is the parent's, and so is its queue. Forget both
            // without waiting (nothing would answer).
            if let Some(mut parent) = running.take() {
                drop(parent.thread.take());
            }
        }
        running
    }

    /// Hands a copy of `files` of `origin` to the thread (the bytes are shared, not copied):
    /// they are held for reads until published. False when they are not taken — a read-only
    /// index or a disk without room for them (then the publish would fail, and the load says
    /// so truly by publishing itself), over the held-bytes bound, or no thread could be
    /// started: the caller publishes them itself.
    pub(super) fn hand_over(
        &self,
        origin: &Origin,
        files: &[(ManifestFile, VerifiedBytes)],
        mark: PurgeMark,
    ) -> bool {
        let bytes = files.iter().map(|(_, v)| v.as_slice().len() as u64).sum();
        if !self.core.room_behind(bytes) {
            return false;
        }
        let pending = self.core.pending();
        if !pending.hold(origin, files.iter().map(|(_, v)| v)) {
            return false;
        }
        let mut running = self.running();
        if running.is_none() {
            match self.start() {
                Ok(r) => *running = Some(r),
                Err(e) => {
                    tracing::debug!(error = %e, "no keeper thread: the load publishes itself");
                    pending.release(origin, files.iter().map(|(_, v)| v));
                    return false;
                }
            }
        }
        let r = running.as_ref().expect("started above");
        let seq = {
            let mut at = r.progress.lock();
            at.0 += 1;
            at.0
        };
        let job = Job {
            seq,
            origin: origin.clone(),
            files: files.to_vec(),
            mark,
        };
        if r.jobs.send(Msg::Job(job)).is_err() {
            // The thread is gone (it does not panic out of its loop: belt and braces). This
            // batch counts as done, and the caller publishes it.
            let mut at = r.progress.lock();
            at.1 = at.1.max(seq);
            drop(at);
            r.progress.moved.notify_all();
            pending.release(origin, files.iter().map(|(_, v)| v));
            return false;
        }
        true
    }

    fn start(&self) -> std::io::Result<Running> {
        let (jobs, queue) = channel();
        let progress = Arc::new(Progress::default());
        let worker = Worker {
            core: Arc::clone(&self.core),
            counters: Arc::clone(&self.counters),
            progress: Arc::clone(&progress),
        };
        let thread = std::thread::Builder::new()
            .name("skillcache-keeper".into())
            .spawn(move || worker.run(&queue))?;
        EVERY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((std::process::id(), Arc::downgrade(&progress)));
        Ok(Running {
            pid: std::process::id(),
            jobs,
            progress,
            thread: Some(thread),
        })
    }

    /// Waits until every batch handed over before this call is published (or failed, which
    /// is logged and counted as a store failure).
    pub(super) fn flush(&self) {
        let progress = match self.running().as_ref() {
            Some(r) => {
                // Someone waits: the thread stops gathering and publishes what it has.
                let _ = r.jobs.send(Msg::Hurry);
                Arc::clone(&r.progress)
            }
            None => return,
        };
        progress.settle(None);
    }
}

impl Drop for Keeper {
    /// The last handle of the cache is gone: the thread finishes the queue, and this waits for
    /// it (only in the process that started it).
    fn drop(&mut self) {
        let running = self.running().take();
        if let Some(Running {
            jobs, mut thread, ..
        }) = running
        {
            drop(jobs);
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// How long the keeper waits for more after a batch, while loads keep coming.
const GATHER_QUIET: Duration = Duration::from_millis(30);
/// The longest it gathers before publishing: what was handed over is durable within about this
/// (plus the publish itself), whatever the loads do.
const GATHER_AT_MOST: Duration = Duration::from_millis(500);

/// What the thread holds.
struct Worker {
    core: Arc<Cache>,
    counters: Arc<Counters>,
    progress: Arc<Progress>,
}

impl Worker {
    fn run(&self, queue: &Receiver<Msg>) {
        // Nobody waits for this thread (but a flush): the loads' own threads come first.
        crate::platform::lower_this_thread();
        while let Ok(first) = queue.recv() {
            let Msg::Job(first) = first else { continue };
            // Everything queued by now goes in this round, and what follows while loads keep
            // coming (a sweep of many skills: one round of syncs, after it, rather than one per
            // skill competing with it), each origin's files together; never later than
            // `GATHER_AT_MOST` after the first.
            let mut jobs = vec![first];
            let began = Instant::now();
            'gather: loop {
                for msg in queue.try_iter() {
                    match msg {
                        Msg::Job(job) => jobs.push(job),
                        Msg::Hurry => break 'gather,
                    }
                }
                let left = GATHER_AT_MOST.saturating_sub(began.elapsed());
                if left.is_zero()
                    || self
                        .progress
                        .hurry
                        .swap(false, std::sync::atomic::Ordering::Relaxed)
                {
                    break;
                }
                match queue.recv_timeout(GATHER_QUIET.min(left)) {
                    Ok(Msg::Job(job)) => jobs.push(job),
                    Ok(Msg::Hurry) | Err(_) => break,
                }
            }
            let last = jobs.iter().map(|j| j.seq).max().unwrap_or(0);
            let mut origins: Vec<&Origin> = jobs.iter().map(|j| &j.origin).collect();
            origins.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
            origins.dedup();
            if self.core.origin_quota().is_some() {
                // Under a quota each load's batch is published as the load would have: room is
                // made for one skill at a time, and batches gathered together could outgrow the
                // quota where each alone fits.
                for job in &jobs {
                    let files: Vec<_> = job.files.iter().map(|(f, v)| (f, v)).collect();
                    self.publish(&job.origin, &files, job.mark);
                }
            } else {
                // Each origin's files together, by the purge mark their loads noted (one mark,
                // unless a purge came between two loads of the round).
                let mut marks: Vec<PurgeMark> = Vec::new();
                for job in &jobs {
                    if !marks.contains(&job.mark) {
                        marks.push(job.mark);
                    }
                }
                for origin in origins {
                    for &mark in &marks {
                        // A digest queued twice (two skills list the same bytes) is published once.
                        let mut once = std::collections::HashSet::new();
                        let files: Vec<(&ManifestFile, &VerifiedBytes)> = jobs
                            .iter()
                            .filter(|j| &j.origin == origin && j.mark == mark)
                            .flat_map(|j| j.files.iter().map(|(f, v)| (f, v)))
                            .filter(|(f, _)| once.insert(f.digest()))
                            .collect();
                        if !files.is_empty() {
                            self.publish(origin, &files, mark);
                        }
                    }
                }
            }
            for job in &jobs {
                self.core
                    .pending()
                    .release(&job.origin, job.files.iter().map(|(_, v)| v));
            }
            let mut at = self.progress.lock();
            at.1 = at.1.max(last);
            drop(at);
            self.progress.moved.notify_all();
        }
    }

    /// Publishes one origin's files; one the store cannot keep is logged and counted. A panic
    /// in the store is caught: it fails this round's files, never the thread (a flush waiting
    /// on it would wait forever).
    fn publish(&self, origin: &Origin, files: &[(&ManifestFile, &VerifiedBytes)], mark: PurgeMark) {
        let stored = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.core.store_verified(origin, files, mark)
        }));
        let n = u64::try_from(files.len()).unwrap_or(u64::MAX);
        let failed = if let Ok(kept) = stored {
            // Not kept because the index was purged meanwhile is the purge's doing, not a
            // failure of the store: counted apart.
            if kept == Kept::Purged {
                self.counters.add(Counter::PurgeDrops, n);
            }
            if kept == Kept::Failed { files.len() } else { 0 }
        } else {
            tracing::warn!(
                origin = origin.as_str(),
                files = files.len(),
                "store failed (a panic in the store): served without keeping a copy"
            );
            files.len()
        };
        self.counters.add(
            Counter::StoreFailures,
            u64::try_from(failed).unwrap_or(u64::MAX),
        );
    }
}

#[cfg(test)]
mod fork_tests {
    use std::sync::{Arc, PoisonError};
    use std::time::Duration;

    use super::{EVERY, Progress, flush_all};

    /// Round 28 of review (F3): a forked child inherits its parent's keepers in [`EVERY`],
    /// threads it does not have, whose batches never move there. Its exit flush waits only for
    /// its own: before, every such child waited out the whole bound (10 s) on its way out.
    #[test]
    fn the_flush_at_exit_waits_for_no_keeper_of_another_process() {
        let stuck = Arc::new(Progress::default());
        stuck.lock().0 = 1; // one batch handed over, never done: a thread that is not here
        let parent = std::process::id().wrapping_add(1);
        EVERY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((parent, Arc::downgrade(&stuck)));
        // (The entry is foreign to every test of this process: a flush elsewhere drops it too.)
        assert!(
            flush_all(Duration::from_secs(5)),
            "waited for another process's keeper"
        );
        assert!(
            !EVERY
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(pid, _)| *pid == parent),
            "another process's keepers are forgotten"
        );
    }
}
