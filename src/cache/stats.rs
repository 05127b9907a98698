//! The cache's counters (R-P4): what a host graphs and alerts on.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a [`SkillCache`](super::SkillCache) did since it was opened, summed over every handle
/// ([`SkillCache::for_principal`](super::SkillCache::for_principal)) of it.
///
/// Counts are of this process only; they are not kept in the cache root.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Listed files served from the cache after hashing their bytes on this access.
    pub hits_hashed: u64,
    /// Listed files served from the cache without hashing on this access: on write-isolation
    /// evidence ([`Isolation::Guaranteed`](crate::store::Isolation::Guaranteed), R-C2(b)), or
    /// from the in-memory tier of bytes this process verified before (under either mode).
    pub hits_evidence: u64,
    /// Listed files not served from the cache: absent, or a cached copy that failed and was
    /// quarantined; each is then asked of the server.
    pub misses: u64,
    /// Bytes received in `resources/read` answers (listed and dynamic files, whether they then
    /// verified or not).
    pub bytes_fetched: u64,
    /// Bytes handed to the host in [`SkillFile`](super::SkillFile)s, from the cache or the
    /// server.
    pub bytes_served: u64,
    /// Cached copies that failed verification and were quarantined (R-V9).
    pub quarantines: u64,
    /// Files fetched once more because their cached copy failed (R-V9): at most one per
    /// quarantine.
    pub retries: u64,
    /// Verified files that could not be kept (a full disk, a read-only root): served all the
    /// same, [`SkillFile::stored`](super::SkillFile::stored) false, and logged.
    pub store_failures: u64,
    /// Index rows that failed their seal check and were treated as absent (R-H3).
    pub seal_failures: u64,
    /// Requests and connection attempts that missed their deadline (R-B1).
    pub timeouts: u64,
    /// Listed files served from the shared tier (feature `l2`, issue 14) after their bytes
    /// passed size, digest and, for a `SKILL.md`, frontmatter checks against the held entry.
    pub l2_hits: u64,
    /// Public files the shared tier did not hold (then asked of the server).
    pub l2_misses: u64,
    /// Verified public files this host wrote to the shared tier (a conditional create; one
    /// another host created first is not counted).
    pub l2_puts: u64,
    /// Objects from the shared tier that failed verification: not used, logged, and the file
    /// asked of the server instead.
    pub l2_rejected: u64,
    /// Shared-tier operations that failed or were skipped because the tier did not answer in
    /// time or at all; each read fell through to the server.
    pub l2_unavailable: u64,
}

impl Stats {
    internal_pub! {
        /// Every cache hit, whatever verified it.
        #[must_use]
        fn hits(&self) -> u64 {
            self.hits_hashed + self.hits_evidence
        }
    }
}

/// The live counters behind [`Stats`]: relaxed atomics, since each is an independent tally.
#[derive(Debug, Default)]
pub(super) struct Counters {
    hits_hashed: AtomicU64,
    hits_evidence: AtomicU64,
    misses: AtomicU64,
    bytes_fetched: AtomicU64,
    bytes_served: AtomicU64,
    quarantines: AtomicU64,
    retries: AtomicU64,
    store_failures: AtomicU64,
    timeouts: AtomicU64,
    l2_hits: AtomicU64,
    l2_misses: AtomicU64,
    l2_puts: AtomicU64,
    l2_rejected: AtomicU64,
    l2_unavailable: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// A cache hit of `bytes`, re-hashed or accepted on evidence.
    pub(super) fn hit(&self, rehashed: bool, bytes: usize) {
        add(
            if rehashed {
                &self.hits_hashed
            } else {
                &self.hits_evidence
            },
            1,
        );
        self.served(bytes);
    }
    pub(super) fn miss(&self) {
        add(&self.misses, 1);
    }
    /// A cached copy failed and was quarantined; the one fetch it allows follows (R-V9).
    pub(super) fn quarantined_and_retried(&self) {
        add(&self.quarantines, 1);
        add(&self.retries, 1);
    }
    pub(super) fn fetched(&self, bytes: usize) {
        add(&self.bytes_fetched, bytes as u64);
    }
    pub(super) fn served(&self, bytes: usize) {
        add(&self.bytes_served, bytes as u64);
    }
    pub(super) fn store_failed(&self) {
        add(&self.store_failures, 1);
    }
    pub(super) fn timed_out(&self) {
        add(&self.timeouts, 1);
    }

    // The shared tier's tallies (issue 14); only `l2` calls them.
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub(super) fn l2_hit(&self) {
        add(&self.l2_hits, 1);
    }
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub(super) fn l2_miss(&self) {
        add(&self.l2_misses, 1);
    }
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub(super) fn l2_put(&self) {
        add(&self.l2_puts, 1);
    }
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub(super) fn l2_rejected(&self) {
        add(&self.l2_rejected, 1);
    }
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub(super) fn l2_unavailable(&self) {
        add(&self.l2_unavailable, 1);
    }

    pub(super) fn snapshot(&self, seal_failures: u64) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            hits_hashed: get(&self.hits_hashed),
            hits_evidence: get(&self.hits_evidence),
            misses: get(&self.misses),
            bytes_fetched: get(&self.bytes_fetched),
            bytes_served: get(&self.bytes_served),
            quarantines: get(&self.quarantines),
            retries: get(&self.retries),
            store_failures: get(&self.store_failures),
            seal_failures,
            timeouts: get(&self.timeouts),
            l2_hits: get(&self.l2_hits),
            l2_misses: get(&self.l2_misses),
            l2_puts: get(&self.l2_puts),
            l2_rejected: get(&self.l2_rejected),
            l2_unavailable: get(&self.l2_unavailable),
        }
    }
}
