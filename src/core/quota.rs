//! The per-origin quota (R-Q4): one origin's stored bytes never exceed it, and making room
//! evicts only that origin's bytes, least recently used first.
//!
//! What counts is what the store really holds for the origin, walked from disk under its
//! publish section ([`BlobStore::lock_origin`](crate::store::BlobStore)): its blobs, recorded or
//! not (a crash between a link and its row leaves a blob with no record), and its quarantined
//! copies (bytes on the user's disk like any other; never served, so they are the first to go).
//! Its staging holds nothing live while the section is held — every publisher of the origin
//! stages inside it — so leftovers of a crashed publisher are swept, not counted. The memory
//! tier is process memory, bounded on its own, and not counted.
//!
//! Every publisher of the origin, in every process, runs from this count to its last index row
//! inside the section, so two publishers can never both count the same free room (R-C8). No
//! state outlives the section: a crash releases the lock with the process, and whatever the
//! crash left on disk (an unrecorded blob, a temporary) is counted or swept by the next
//! publisher. Nothing can keep the quota consumed.

use std::collections::{HashMap, HashSet};

use super::Cache;
use crate::digest::Digest;
use crate::error::{Error, StoreError};
use crate::origin::Origin;
use crate::store::Item;

/// What one eviction pass may take, cheapest to lose first.
enum Victim {
    /// A quarantined copy (by its name in the quarantine): never served.
    Quarantined(String, u64),
    /// A blob with no sealed record: nothing serves it without a repair.
    Unrecorded(Digest, u64),
    /// A recorded blob, in least-recently-used order; an entry that lists it reads a miss next
    /// and fetches again.
    Recorded(Digest, u64),
}

impl Cache {
    /// Makes room in `origin`'s store for `items`, the batch about to be published, so that
    /// the origin holds at most `quota` bytes once it is (R-Q4). Runs inside the origin's
    /// publish section. Evicts, until the batch fits: quarantined copies (oldest first), then
    /// unrecorded blobs, then recorded blobs least recently used first — never one the batch
    /// itself lists, never another origin's. A recorded blob's row goes before its file (R-C3).
    ///
    /// # Errors
    /// A batch that alone is larger than the quota is refused before anything is evicted
    /// ([`StoreError::Io`] of kind `QuotaExceeded`, naming both numbers: admission declines such
    /// a skill before any request, so only a direct caller of the core meets it); I/O and
    /// index errors.
    pub(super) fn make_room(
        &self,
        origin: &Origin,
        quota: u64,
        items: &[Item<'_>],
    ) -> Result<(), Error> {
        self.store.sweep_origin_tmp(origin)?;
        let mut batch: Vec<(Digest, u64)> = Vec::with_capacity(items.len());
        for (d, size, _) in items {
            if !batch.iter().any(|(e, _)| e == d) {
                batch.push((*d, *size));
            }
        }
        let declared: u64 = batch.iter().map(|(_, s)| s).sum();
        if declared > quota {
            return Err(self.over_quota(origin, quota, declared));
        }
        let (blobs, _) = self.store.blobs(Some(origin))?;
        let quarantined = self.store.quarantined_of(origin)?;
        let on_disk: HashMap<Digest, (u64, bool)> =
            blobs.iter().map(|b| (b.digest, (b.len, b.regular))).collect();
        // A listed blob already in place as a regular file of its size is kept (a damaged one is
        // quarantined by the publish, and its new copy is new bytes).
        let incoming: u64 = batch
            .iter()
            .filter(|(d, s)| on_disk.get(d) != Some(&(*s, true)))
            .map(|(_, s)| s)
            .sum();
        let mut used: u64 = blobs.iter().map(|b| b.len).sum::<u64>()
            + quarantined.iter().map(|(_, len)| len).sum::<u64>();
        if used.saturating_add(incoming) <= quota {
            return Ok(());
        }
        for victim in self.victims(origin, &batch, &on_disk, quarantined)? {
            if used.saturating_add(incoming) <= quota {
                break;
            }
            used = used.saturating_sub(self.evict(origin, &victim)?);
        }
        if used.saturating_add(incoming) > quota {
            // Only what no eviction can remove (names under the origin that are not blobs at
            // all) is left over: refuse rather than go over.
            return Err(self.over_quota(origin, quota, used.saturating_add(incoming)));
        }
        Ok(())
    }

    /// Everything of `origin` an eviction may take, cheapest to lose first.
    fn victims(
        &self,
        origin: &Origin,
        batch: &[(Digest, u64)],
        on_disk: &HashMap<Digest, (u64, bool)>,
        quarantined: Vec<(String, u64)>,
    ) -> Result<Vec<Victim>, Error> {
        let needed: HashSet<Digest> = batch.iter().map(|(d, _)| *d).collect();
        let records = self.index.blobs_of(origin)?;
        let recorded: HashSet<Digest> = records.iter().map(|(d, _)| *d).collect();
        let mut out: Vec<Victim> = quarantined
            .into_iter()
            .map(|(name, len)| Victim::Quarantined(name, len))
            .collect();
        let mut unrecorded: Vec<(Digest, u64)> = on_disk
            .iter()
            .filter(|(d, _)| !recorded.contains(d) && !needed.contains(d))
            .map(|(d, (len, _))| (*d, *len))
            .collect();
        unrecorded.sort_unstable();
        out.extend(unrecorded.into_iter().map(|(d, len)| Victim::Unrecorded(d, len)));
        // The index lists least recently used first; its sizes are sealed claims, the disk's
        // length is what eviction frees.
        out.extend(records.into_iter().filter_map(|(d, _)| {
            let &(len, _) = on_disk.get(&d)?;
            (!needed.contains(&d)).then_some(Victim::Recorded(d, len))
        }));
        Ok(out)
    }

    /// Evicts one victim; returns the bytes it freed.
    fn evict(&self, origin: &Origin, victim: &Victim) -> Result<u64, Error> {
        match victim {
            Victim::Quarantined(name, len) => {
                self.store.remove_quarantined(origin, name)?;
                tracing::info!(origin = %origin, item = %name, bytes = len, "quota: removed a quarantined copy");
                Ok(*len)
            }
            Victim::Unrecorded(digest, len) => {
                self.forget(origin, Some(digest));
                self.store.remove(origin, digest)?;
                tracing::info!(origin = %origin, %digest, bytes = len, "quota: removed an unrecorded blob");
                Ok(*len)
            }
            Victim::Recorded(digest, len) => {
                // Row first, then the blob (R-C3): a crash in between leaves an unrecorded blob,
                // which the next count sees and evicts first.
                self.forget(origin, Some(digest));
                self.commit_point("index: quota evict")?;
                self.index.remove_blob(origin, digest)?;
                self.store.remove(origin, digest)?;
                tracing::info!(origin = %origin, %digest, bytes = len, "quota: evicted the least recently used blob");
                Ok(*len)
            }
        }
    }

    fn over_quota(&self, origin: &Origin, quota: u64, size: u64) -> Error {
        Error::Store(StoreError::Io {
            op: "publish",
            path: self.store.layout().origin_dir(origin),
            source: std::io::Error::new(
                std::io::ErrorKind::QuotaExceeded,
                format!("{size} bytes would exceed the origin's quota of {quota} bytes"),
            ),
        })
    }

    internal_pub! {
        /// How many bytes `origin`'s store holds now: its blobs and quarantined copies, as
        /// [`CacheBuilder::origin_quota`](super::CacheBuilder) counts them (R-Q4). For tests and
        /// tools.
        ///
        /// # Errors
        /// I/O errors.
        fn origin_usage(&self, origin: &Origin) -> Result<u64, Error> {
            let (blobs, _) = self.store.blobs(Some(origin))?;
            let quarantined = self.store.quarantined_of(origin)?;
            Ok(blobs.iter().map(|b| b.len).sum::<u64>()
                + quarantined.iter().map(|(_, len)| len).sum::<u64>())
        }
    }
}
