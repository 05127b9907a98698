//! Verified bytes on their way to the store (issue 41, write-behind): held in memory from the
//! moment a load hands them to the host until the store has published them, so that a second
//! load in between is served from them rather than fetching again.
//!
//! Why serving them needs no check: they are [`VerifiedBytes`], checked against a listed digest
//! and size before they were held, and process memory is write-isolated (the memory tier's
//! argument, `memory.rs`). They are right for any entry of their origin that lists that digest and
//! that size; a lookup with another size misses.
//!
//! Bounded: at most [`WRITE_BEHIND_BYTES`] are held at once. A batch that would go over is not
//! held, and its load publishes it itself, as without write-behind (so memory is bounded, and a
//! store that cannot keep up slows the loads down to its pace instead of growing a backlog).
//!
//! After a fork, what the parent held is the parent's to publish: a child that finds the map
//! stamped with another process's id empties it before anything else (it never publishes
//! those, and nothing would ever release them).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::digest::Digest;
use crate::origin::Origin;
use crate::verify::VerifiedBytes;

/// The most bytes held for the store at once: as much as the memory tier keeps by default.
pub const WRITE_BEHIND_BYTES: u64 = 64 << 20;

/// Bytes held for the store, by (origin, digest).
#[derive(Debug)]
pub(crate) struct Pending {
    budget: u64,
    /// The bytes held, read without the lock: a cache with nothing pending (every warm load)
    /// pays one atomic load to learn it.
    held: AtomicU64,
    map: Mutex<Map>,
}

#[derive(Debug, Default)]
struct Map {
    /// The process that filled it (a child of a fork finds another).
    pid: u32,
    /// Each held copy and how many queued batches hold it (the same digest may be queued twice,
    /// by two origins' batches or a repair; it is released by the last).
    at: HashMap<(Origin, Digest), (VerifiedBytes, u32)>,
}

impl Pending {
    pub(crate) fn new(budget: u64) -> Pending {
        Pending {
            budget,
            held: AtomicU64::new(0),
            map: Mutex::default(),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, Map> {
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let pid = std::process::id();
        if map.pid != pid {
            // A forked child: the parent's copies are the parent's to publish (module comment).
            map.at.clear();
            map.pid = pid;
            self.held.store(0, Ordering::Relaxed);
        }
        map
    }

    /// Holds `files` of `origin` until [`Pending::release`]; false, holding none of them, when
    /// they would take the held bytes over the budget.
    pub(crate) fn hold<'a>(
        &self,
        origin: &Origin,
        files: impl Iterator<Item = &'a VerifiedBytes> + Clone,
    ) -> bool {
        let bytes: u64 = files.clone().map(|v| v.as_slice().len() as u64).sum();
        let mut map = self.map();
        let held = self.held.load(Ordering::Relaxed);
        if held.saturating_add(bytes) > self.budget {
            return false;
        }
        for v in files {
            map.at
                .entry((origin.clone(), v.digest()))
                .and_modify(|(_, n)| *n += 1)
                .or_insert_with(|| (v.clone(), 1));
        }
        self.held.store(held + bytes, Ordering::Relaxed);
        true
    }

    /// The held copy of `digest` in `origin`, if it has `size` bytes.
    pub(crate) fn get(&self, origin: &Origin, digest: &Digest, size: u64) -> Option<VerifiedBytes> {
        if self.held.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let map = self.map();
        map.at
            .get(&(origin.clone(), *digest))
            .map(|(v, _)| v)
            .filter(|v| v.as_slice().len() as u64 == size)
            .cloned()
    }

    /// Gives back what one [`Pending::hold`] of `files` took: the store has them now, or could
    /// not keep them (either way they are no longer on their way).
    pub(crate) fn release<'a>(&self, origin: &Origin, files: impl Iterator<Item = &'a VerifiedBytes>) {
        let mut map = self.map();
        let mut freed = 0u64;
        for v in files {
            let key = (origin.clone(), v.digest());
            if let Some((_, n)) = map.at.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    map.at.remove(&key);
                }
            }
            freed += v.as_slice().len() as u64;
        }
        let held = self.held.load(Ordering::Relaxed);
        self.held.store(held.saturating_sub(freed), Ordering::Relaxed);
    }

    /// The bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(text: &str) -> VerifiedBytes {
        let b = text.as_bytes().to_vec();
        let (size, digest) = (b.len() as u64, Digest::of(&b));
        VerifiedBytes::check(b, size, digest).expect("verified")
    }

    #[test]
    fn held_bytes_are_served_until_released_and_by_origin_digest_and_size() {
        let (o, other) = (Origin::new("o").expect("o"), Origin::new("p").expect("p"));
        let p = Pending::new(1024);
        let a = bytes("alpha");
        assert!(p.hold(&o, [&a].into_iter()));
        assert_eq!(p.get(&o, &a.digest(), 5).as_ref(), Some(&a));
        assert_eq!(p.get(&o, &a.digest(), 4), None, "another size misses");
        assert_eq!(p.get(&other, &a.digest(), 5), None, "another origin misses");
        p.release(&o, [&a].into_iter());
        assert_eq!(p.get(&o, &a.digest(), 5), None);
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn a_batch_over_the_budget_is_not_held_and_one_queued_twice_stays_until_the_last_release() {
        let origin = Origin::new("o").expect("o");
        let small = Pending::new(8);
        let (alpha, beta) = (bytes("alpha"), bytes("beta!"));
        assert!(small.hold(&origin, [&alpha].into_iter()));
        assert!(!small.hold(&origin, [&beta].into_iter()), "5 + 5 > 8");
        assert_eq!(small.get(&origin, &beta.digest(), 5), None, "nothing of a refused batch is held");
        let twice = Pending::new(1024);
        assert!(twice.hold(&origin, [&alpha].into_iter()) && twice.hold(&origin, [&alpha].into_iter()));
        twice.release(&origin, [&alpha].into_iter());
        assert!(twice.get(&origin, &alpha.digest(), 5).is_some(), "still queued once");
        twice.release(&origin, [&alpha].into_iter());
        assert!(twice.get(&origin, &alpha.digest(), 5).is_none());
    }
}
