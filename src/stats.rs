//! The cache's counters (R-P4): what a host graphs and alerts on. A leaf below every layer that
//! counts (the host layer, the shared tier), so none of them imports another for its counters.
//!
//! One enum names the counters and one array holds them, live (atomics) and in a snapshot: a
//! new counter is one variant and one line of doc, and the CLI's `stats` and a host's exporter
//! iterate a snapshot's `(Counter, value)` pairs instead of naming fields one by one.

use std::fmt;
use std::ops::Index;
use std::sync::atomic::{AtomicU64, Ordering};

/// One of a [`SkillCache`](crate::SkillCache)'s counters. Read a snapshot's value with
/// `stats[counter]`, or iterate the snapshot for every `(counter, value)`; a counter's `Display`
/// is the snake-case name the CLI prints (`hits_hashed`).
///
/// ```
/// use skillcache::{Counter, Stats};
/// let stats = Stats::default();
/// assert_eq!(stats[Counter::Misses], 0);
/// for (counter, value) in stats {
///     println!("{counter} {value}");
/// }
/// assert_eq!(Counter::L2Hits.to_string(), "l2_hits");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Counter {
    /// Listed files served from the cache after hashing their bytes on this access.
    HitsHashed,
    /// Listed files served from the cache without hashing on this access: on write-isolation
    /// evidence ([`Isolation::Guaranteed`](crate::Isolation::Guaranteed), R-C2(b)), or from the
    /// in-memory tier of bytes this process verified before (under either mode).
    HitsEvidence,
    /// Listed files not served from the cache: absent, or a cached copy that failed and was
    /// quarantined; each is then asked of the server.
    Misses,
    /// Bytes received in `resources/read` answers (listed and dynamic files, whether they then
    /// verified or not).
    BytesFetched,
    /// Bytes handed to the host in [`SkillFile`](crate::SkillFile)s, from the cache or the
    /// server.
    BytesServed,
    /// Cached copies that failed verification and were quarantined (R-V9).
    Quarantines,
    /// Files fetched once more because their cached copy failed (R-V9): at most one per
    /// quarantine.
    Retries,
    /// Verified files that could not be kept (a full disk, a read-only root): served all the
    /// same, [`SkillFile::stored`](crate::SkillFile::stored) false, and logged.
    StoreFailures,
    /// Verified files not kept because the index was purged (of any origin, by any cache or
    /// process) between the request for them and their publish: served all the same, and a
    /// later load fetches them again (a purge is never undone by bytes fetched before it).
    PurgeDrops,
    /// Index rows that failed their seal check and were treated as absent (R-H3).
    SealFailures,
    /// Requests and connection attempts that missed their deadline (R-B1).
    Timeouts,
    /// Listed files served from the shared tier (feature `l2`, issue 14) after their bytes
    /// passed size, digest and, for a `SKILL.md`, frontmatter checks against the held entry.
    L2Hits,
    /// Public files the shared tier did not hold (then asked of the server).
    L2Misses,
    /// Verified public files this host wrote to the shared tier (a conditional create; one
    /// another host created first is not counted).
    L2Puts,
    /// Objects from the shared tier that failed verification: not used, logged, and the file
    /// asked of the server instead.
    L2Rejected,
    /// Shared-tier operations that failed or were skipped because the tier did not answer in
    /// time or at all; each read fell through to the server.
    L2Unavailable,
    /// Shared-tier requests sent again after the store asked this host to slow down (`503
    /// SlowDown`, `429`), failed with a server error, or dropped the connection before an
    /// answer: a few at most per operation, after a randomised pause, and never past the
    /// operation's deadline (`L2::timeout`).
    L2Retries,
}

/// How many counters there are: the length of [`Counter::ALL`].
const COUNT: usize = 17;

impl Counter {
    /// Every counter, in the order of the enum (and of a snapshot's iteration).
    pub(crate) const ALL: [Counter; COUNT] = [
        Counter::HitsHashed,
        Counter::HitsEvidence,
        Counter::Misses,
        Counter::BytesFetched,
        Counter::BytesServed,
        Counter::Quarantines,
        Counter::Retries,
        Counter::StoreFailures,
        Counter::PurgeDrops,
        Counter::SealFailures,
        Counter::Timeouts,
        Counter::L2Hits,
        Counter::L2Misses,
        Counter::L2Puts,
        Counter::L2Rejected,
        Counter::L2Unavailable,
        Counter::L2Retries,
    ];

    fn name(self) -> &'static str {
        match self {
            Counter::HitsHashed => "hits_hashed",
            Counter::HitsEvidence => "hits_evidence",
            Counter::Misses => "misses",
            Counter::BytesFetched => "bytes_fetched",
            Counter::BytesServed => "bytes_served",
            Counter::Quarantines => "quarantines",
            Counter::Retries => "retries",
            Counter::StoreFailures => "store_failures",
            Counter::PurgeDrops => "purge_drops",
            Counter::SealFailures => "seal_failures",
            Counter::Timeouts => "timeouts",
            Counter::L2Hits => "l2_hits",
            Counter::L2Misses => "l2_misses",
            Counter::L2Puts => "l2_puts",
            Counter::L2Rejected => "l2_rejected",
            Counter::L2Unavailable => "l2_unavailable",
            Counter::L2Retries => "l2_retries",
        }
    }
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a [`SkillCache`](crate::SkillCache) did since it was opened, summed over every handle
/// ([`SkillCache::for_principal`](crate::SkillCache::for_principal)) of it: read a counter with
/// `stats[Counter::Misses]`.
///
/// Counts are of this process only; they are not kept in the cache root.
///
/// Iterating a snapshot yields the counters that apply to the cache it came from: the shared
/// tier's (`l2_*`) only when one is configured, so a host's exporter does not graph a tier it
/// does not have. Indexing reads any counter (zero for a tier not configured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    values: [u64; COUNT],
    shared_tier: bool,
}

impl Index<Counter> for Stats {
    type Output = u64;
    fn index(&self, counter: Counter) -> &u64 {
        &self.values[counter as usize]
    }
}

/// Every counter that applies with its value, in the order of [`Counter`]'s variants.
impl IntoIterator for Stats {
    type Item = (Counter, u64);
    type IntoIter = std::iter::Take<
        std::iter::Zip<std::array::IntoIter<Counter, COUNT>, std::array::IntoIter<u64, COUNT>>,
    >;
    fn into_iter(self) -> Self::IntoIter {
        // The shared tier's counters are the enum's last; a cache without the tier stops
        // before them.
        let applies = if self.shared_tier {
            COUNT
        } else {
            Counter::L2Hits as usize
        };
        Counter::ALL.into_iter().zip(self.values).take(applies)
    }
}

/// The live counters behind [`Stats`]: relaxed atomics, since each is an independent tally.
#[derive(Debug, Default)]
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Counters {
    /// Adds `n` to `counter`.
    pub(crate) fn add(&self, counter: Counter, n: u64) {
        self.0[counter as usize].fetch_add(n, Ordering::Relaxed);
    }
    /// Adds one to `counter`.
    pub(crate) fn bump(&self, counter: Counter) {
        self.add(counter, 1);
    }
    /// A cache hit of `bytes`, re-hashed or accepted on evidence.
    pub(crate) fn hit(&self, rehashed: bool, bytes: usize) {
        self.bump(if rehashed {
            Counter::HitsHashed
        } else {
            Counter::HitsEvidence
        });
        self.served(bytes);
    }
    /// A cached copy failed and was quarantined; the one fetch it allows follows (R-V9).
    pub(crate) fn quarantined_and_retried(&self) {
        self.bump(Counter::Quarantines);
        self.bump(Counter::Retries);
    }
    pub(crate) fn fetched(&self, bytes: usize) {
        self.add(Counter::BytesFetched, bytes as u64);
    }
    pub(crate) fn served(&self, bytes: usize) {
        self.add(Counter::BytesServed, bytes as u64);
    }

    /// A snapshot; seal failures are counted by the index (it checks the seals), not here.
    /// `shared_tier`: whether the cache has one, and so whether its counters are listed.
    pub(crate) fn snapshot(&self, seal_failures: u64, shared_tier: bool) -> Stats {
        let mut values = std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed));
        values[Counter::SealFailures as usize] = seal_failures;
        Stats {
            values,
            shared_tier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_listed_once_in_its_own_slot() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c} is out of place in Counter::ALL");
        }
        let names: std::collections::BTreeSet<_> =
            Counter::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(names.len(), COUNT, "two counters share a name");
    }

    #[test]
    fn a_snapshot_reads_each_counter_and_the_index_seal_failures() {
        let live = Counters::default();
        live.hit(true, 10);
        live.hit(false, 5);
        live.quarantined_and_retried();
        live.bump(Counter::L2Puts);
        let s = live.snapshot(3, true);
        assert_eq!(s[Counter::HitsHashed], 1);
        assert_eq!(s[Counter::HitsEvidence], 1);
        assert_eq!(s[Counter::BytesServed], 15);
        assert_eq!((s[Counter::Quarantines], s[Counter::Retries]), (1, 1));
        assert_eq!(s[Counter::L2Puts], 1);
        assert_eq!(s[Counter::SealFailures], 3);
        assert_eq!(s[Counter::Misses], 0);
        let pairs: Vec<(Counter, u64)> = s.into_iter().collect();
        assert_eq!(pairs.len(), COUNT);
        assert!(pairs.contains(&(Counter::SealFailures, 3)));
    }

    #[test]
    fn a_cache_without_a_shared_tier_lists_none_of_its_counters() {
        let live = Counters::default();
        live.bump(Counter::Misses);
        let s = live.snapshot(0, false);
        let names: Vec<String> = s.into_iter().map(|(c, _)| c.to_string()).collect();
        assert!(names.iter().all(|n| !n.starts_with("l2_")), "{names:?}");
        assert_eq!(names.len(), Counter::L2Hits as usize);
        assert_eq!(s[Counter::L2Hits], 0, "indexing still reads every counter");
        assert!(
            Counter::ALL[Counter::L2Hits as usize..]
                .iter()
                .all(|c| c.to_string().starts_with("l2_")),
            "the tier's counters come last"
        );
    }
}
