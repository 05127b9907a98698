//! The memory tier: bytes this process has verified, kept in memory by (origin, digest), bounded
//! by bytes, evicted by CLOCK (issue 12, item 1).
//!
//! Why it needs no re-hash under either isolation mode: process memory is write-isolated by
//! construction — no other process, and nothing in this crate, can change a `bytes::Bytes` once
//! made — so bytes that matched a digest once still match it. They are right for *any* entry that
//! lists that digest and that size (R-V2), which is why the key is the digest, not the entry, and
//! why a lookup with a different size misses (the disk path then reports the mismatch, R-V3).
//!
//! What drops an entry: a purge of its origin (R-C5), gc and verify (they change the store
//! wholesale), and a quarantine, a failed read or a miss of the same digest on disk (R-V8): the
//! cache calls [`MemoryTier::remove`] wherever it forgets a blob, so a failed verification of the
//! disk copy is never followed by a hit from memory for that digest.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::digest::Digest;
use crate::verify::VerifiedBytes;
use crate::origin::Origin;

/// The default bound of the memory tier: 64 MiB.
pub const DEFAULT_MEMORY_TIER_BYTES: u64 = 64 << 20;

/// Verified bytes kept in memory, at most `budget` bytes of them.
#[derive(Debug)]
pub(crate) struct MemoryTier {
    budget: u64,
    clock: Mutex<Clock>,
}

#[derive(Debug, Default)]
struct Clock {
    /// Where each (origin, digest) lives in `slots`. Searched by `&str` (no clone on a hit).
    at: HashMap<Origin, HashMap<Digest, usize>>,
    slots: Vec<Slot>,
    hand: usize,
    resident: u64,
}

#[derive(Debug)]
struct Slot {
    origin: Origin,
    bytes: VerifiedBytes,
    /// Set by a hit, cleared by the passing hand: a slot is evicted only when the hand finds it
    /// clear, so anything hit since the hand's last pass survives one more round.
    referenced: bool,
    /// When the blob's access time was last written to the index (gc's least-recently-used
    /// order must still see memory hits, at the same grain as disk hits).
    touched_ms: u64,
}

/// A hit: the shared bytes and, if the access time is due, the time to write back.
pub(crate) struct Hit {
    pub(crate) bytes: VerifiedBytes,
    pub(crate) touch_due: bool,
}

impl MemoryTier {
    /// A tier holding at most `budget` bytes; 0 turns it off.
    pub(crate) fn new(budget: u64) -> MemoryTier {
        MemoryTier {
            budget,
            clock: Mutex::new(Clock::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock> {
        // The clock's invariants hold between statements; a panicking holder leaves it usable.
        self.clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The bytes of `digest` of `origin`, if resident and of `size` bytes. Copies nothing.
    /// `touch_due` says the access time (recorded at most once per `grain_ms`) should be written.
    pub(crate) fn get(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        now_ms: u64,
        grain_ms: u64,
    ) -> Option<Hit> {
        if self.budget == 0 {
            return None;
        }
        let mut clock = self.lock();
        let i = *clock.at.get(origin.as_str())?.get(digest)?;
        let slot = &mut clock.slots[i];
        if slot.bytes.as_slice().len() as u64 != size {
            // Same digest, other size: the listing is wrong; the disk path reports it (R-V3).
            return None;
        }
        slot.referenced = true;
        let touch_due = now_ms.saturating_sub(slot.touched_ms) >= grain_ms;
        if touch_due {
            slot.touched_ms = now_ms;
        }
        Some(Hit {
            bytes: slot.bytes.memory_hit(),
            touch_due,
        })
    }

    /// Keeps `bytes` (verified against their digest) for `origin`, evicting by CLOCK until they
    /// fit. Bytes larger than the whole budget are not kept.
    pub(crate) fn insert(&self, origin: &Origin, bytes: &VerifiedBytes, touched_ms: u64) {
        let len = bytes.as_slice().len() as u64;
        if len > self.budget {
            return;
        }
        let mut clock = self.lock();
        let digest = bytes.digest();
        if let Some(&i) = clock.at.get(origin.as_str()).and_then(|m| m.get(&digest)) {
            clock.slots[i].touched_ms = clock.slots[i].touched_ms.max(touched_ms);
            return;
        }
        while clock.resident + len > self.budget {
            clock.evict_one();
        }
        let i = clock.slots.len();
        clock.slots.push(Slot {
            origin: origin.clone(),
            bytes: bytes.memory_hit(),
            referenced: false,
            touched_ms,
        });
        clock.resident += len;
        match clock.at.get_mut(origin.as_str()) {
            Some(m) => {
                m.insert(digest, i);
            }
            None => {
                clock
                    .at
                    .entry(origin.clone())
                    .or_default()
                    .insert(digest, i);
            }
        }
    }

    /// Drops `digest` of `origin` (a quarantine, a failed or missing disk copy, R-V8).
    pub(crate) fn remove(&self, origin: &Origin, digest: &Digest) {
        let mut clock = self.lock();
        if let Some(i) = clock
            .at
            .get_mut(origin.as_str())
            .and_then(|m| m.remove(digest))
        {
            clock.take(i);
        }
    }

    /// Drops everything of `origin` (a purge, R-C5).
    pub(crate) fn remove_origin(&self, origin: &Origin) {
        let mut clock = self.lock();
        let Some(m) = clock.at.remove(origin.as_str()) else {
            return;
        };
        let mut at: Vec<usize> = m.into_values().collect();
        // Highest first, so a swap-remove never moves a slot still to be taken.
        at.sort_unstable_by(|a, b| b.cmp(a));
        for i in at {
            clock.take(i);
        }
    }

    /// Drops everything (gc and verify change the store wholesale).
    pub(crate) fn clear(&self) {
        *self.lock() = Clock::default();
    }

    /// How many bytes are resident now (never more than the budget): for the tests' bound checks.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn resident(&self) -> u64 {
        self.lock().resident
    }

    /// How many blobs are resident now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().slots.len()
    }
}

impl Clock {
    /// Advances the hand until it finds an unreferenced slot, and evicts it.
    fn evict_one(&mut self) {
        if self.slots.is_empty() {
            return;
        }
        loop {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let slot = &mut self.slots[self.hand];
            if slot.referenced {
                slot.referenced = false;
                self.hand += 1;
                continue;
            }
            let digest = slot.bytes.digest();
            let origin = slot.origin.clone();
            if let Some(m) = self.at.get_mut(origin.as_str()) {
                m.remove(&digest);
                if m.is_empty() {
                    self.at.remove(origin.as_str());
                }
            }
            let i = self.hand;
            self.take(i);
            return;
        }
    }

    /// Removes slot `i` (already gone from `at`), moving the last slot into its place.
    fn take(&mut self, i: usize) {
        let gone = self.slots.swap_remove(i);
        self.resident -= gone.bytes.as_slice().len() as u64;
        if let Some(moved) = self.slots.get(i) {
            let digest = moved.bytes.digest();
            if let Some(slot) = self
                .at
                .get_mut(moved.origin.as_str())
                .and_then(|m| m.get_mut(&digest))
            {
                *slot = i;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified(seed: u8, len: usize) -> VerifiedBytes {
        let bytes: Vec<u8> = (0..len)
            .map(|i| seed.wrapping_add(u8::try_from(i % 256).unwrap_or(0)))
            .collect();
        let digest = Digest::of(&bytes);
        VerifiedBytes::check(bytes, len as u64, digest).expect("verified")
    }

    #[test]
    fn memory_tier_resident_bytes_never_exceed_the_bound_under_a_working_set_four_times_larger() {
        let origin = Origin::new("docs").expect("label");
        let tier = MemoryTier::new(64 * 1024);
        let set: Vec<VerifiedBytes> = (0..64u8).map(|s| verified(s, 4096)).collect();
        // 64 × 4 KiB = 256 KiB, four times the bound; cycle through it several times with hits.
        for round in 0..4 {
            for (i, v) in set.iter().enumerate() {
                if tier.get(&origin, &v.digest(), 4096, 0, 1).is_none() {
                    tier.insert(&origin, v, 0);
                }
                assert!(tier.resident() <= 64 * 1024, "round {round}, blob {i}");
            }
        }
        assert_eq!(tier.resident(), 64 * 1024);
        assert_eq!(tier.len(), 16);
        // Every resident blob answers with its own bytes.
        let resident = set
            .iter()
            .filter_map(|v| tier.get(&origin, &v.digest(), 4096, 0, 1).map(|h| (v, h)))
            .inspect(|(v, h)| assert_eq!(h.bytes.as_slice(), v.as_slice()))
            .count();
        assert_eq!(resident, 16);
    }

    #[test]
    fn memory_tier_keeps_a_referenced_blob_over_an_unreferenced_one() {
        let origin = Origin::new("docs").expect("label");
        let tier = MemoryTier::new(3 * 100);
        let (a, b, c, d) = (
            verified(1, 100),
            verified(2, 100),
            verified(3, 100),
            verified(4, 100),
        );
        for v in [&a, &b, &c] {
            tier.insert(&origin, v, 0);
        }
        assert!(tier.get(&origin, &a.digest(), 100, 0, 1).is_some());
        tier.insert(&origin, &d, 0);
        // CLOCK passes over `a` (referenced) and evicts `b`.
        assert!(tier.get(&origin, &a.digest(), 100, 0, 1).is_some());
        assert!(tier.get(&origin, &b.digest(), 100, 0, 1).is_none());
        assert!(tier.get(&origin, &d.digest(), 100, 0, 1).is_some());
        assert_eq!(tier.resident(), 300);
    }

    #[test]
    fn memory_tier_is_keyed_by_origin_and_size_and_can_be_turned_off() {
        let (docs, other) = (
            Origin::new("docs").expect("label"),
            Origin::new("other").expect("label"),
        );
        let tier = MemoryTier::new(1 << 20);
        let v = verified(9, 512);
        tier.insert(&docs, &v, 0);
        // R-O1: another origin never sees it; a listing with another size misses (R-V3).
        assert!(tier.get(&other, &v.digest(), 512, 0, 1).is_none());
        assert!(tier.get(&docs, &v.digest(), 511, 0, 1).is_none());
        let hit = tier.get(&docs, &v.digest(), 512, 0, 1).expect("hit");
        assert!(!hit.bytes.rehashed());
        // A hit shares the allocation: it copies nothing.
        assert_eq!(hit.bytes.as_slice().as_ptr(), v.as_slice().as_ptr());
        tier.remove_origin(&docs);
        assert_eq!((tier.resident(), tier.len()), (0, 0));

        let off = MemoryTier::new(0);
        off.insert(&docs, &v, 0);
        assert!(off.get(&docs, &v.digest(), 512, 0, 1).is_none());
        assert_eq!(off.resident(), 0);
    }

    #[test]
    fn memory_tier_remove_keeps_the_other_slots_reachable() {
        let origin = Origin::new("docs").expect("label");
        let tier = MemoryTier::new(1 << 20);
        let set: Vec<VerifiedBytes> = (0..8u8).map(|s| verified(s, 64)).collect();
        for v in &set {
            tier.insert(&origin, v, 0);
        }
        tier.remove(&origin, &set[2].digest());
        tier.remove(&origin, &set[0].digest());
        for (i, v) in set.iter().enumerate() {
            let hit = tier.get(&origin, &v.digest(), 64, 0, 1);
            assert_eq!(hit.is_some(), i != 0 && i != 2, "blob {i}");
            if let Some(h) = hit {
                assert_eq!(h.bytes.as_slice(), v.as_slice());
            }
        }
        assert_eq!(tier.resident(), 6 * 64);
    }
}
