//! `verify`, `gc` and `purge_absent`: maintenance over the whole root.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use super::{Cache, now_ms};
use crate::digest::Digest;
use crate::error::Error;
use crate::origin::Origin;
use crate::store::{BlobCheck, LockMode};

/// What `verify` found. Serialized (the CLI's `verify --json`, the Python and Node packages) as
/// its fields, each blob an object `{"origin", "digest"}`, a stray its path as text, and
/// `is_clean`.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Blobs re-hashed.
    pub checked: usize,
    /// Blobs whose bytes do not match their name or their recorded size, and names that are not
    /// blobs at all (a link, FIFO, socket, folder: R-H7); quarantined and forgotten.
    pub corrupt: Vec<(Origin, Digest)>,
    /// Records whose blob is gone; forgotten.
    pub missing: Vec<(Origin, Digest)>,
    /// Blobs with no record (left by a crash between publish and record); gc removes them.
    pub orphaned: Vec<(Origin, Digest)>,
    /// Paths under `origins/` that are not blobs at all.
    pub strays: Vec<PathBuf>,
}

impl VerifyReport {
    /// Whether nothing was corrupt.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty()
    }
}

/// What `gc` did. Serialized (the CLI's `gc --json`, the Python and Node packages) as its fields.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct GcReport {
    /// Blobs no entry references, removed.
    pub unreferenced: usize,
    /// Names under `origins/` that were not blobs (a link, FIFO, socket, folder: R-H7), removed.
    pub not_blobs: usize,
    /// Blobs removed to meet the byte budget (least recently used first).
    pub evicted: usize,
    /// Temporaries swept.
    pub temporaries: usize,
    /// Bytes of blobs before.
    pub bytes_before: u64,
    /// Bytes of blobs after.
    pub bytes_after: u64,
    /// Whether the budget could not be met without touching blobs of fresh entries.
    pub over_budget: bool,
}

impl serde::Serialize for VerifyReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Blob<'a> {
            origin: &'a Origin,
            digest: &'a Digest,
        }
        fn blobs(v: &[(Origin, Digest)]) -> Vec<Blob<'_>> {
            v.iter()
                .map(|(origin, digest)| Blob { origin, digest })
                .collect()
        }
        let mut out = s.serialize_struct("VerifyReport", 6)?;
        out.serialize_field("checked", &self.checked)?;
        out.serialize_field("corrupt", &blobs(&self.corrupt))?;
        out.serialize_field("missing", &blobs(&self.missing))?;
        out.serialize_field("orphaned", &blobs(&self.orphaned))?;
        let strays: Vec<String> = self.strays.iter().map(|p| p.display().to_string()).collect();
        out.serialize_field("strays", &strays)?;
        out.serialize_field("is_clean", &self.is_clean())?;
        out.end()
    }
}

impl Cache {
    /// Re-hashes every blob (of one origin, or all) and reconciles the store with the index.
    /// Each blob is compared with its recorded size first and then hashed by streaming through a
    /// fixed buffer, so a planted file of any size costs no memory (R-H8). Corrupt blobs — and
    /// names that are not blobs at all (R-H7) — are quarantined and forgotten.
    /// `progress(done, total)` is called after each.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn verify(
        &self,
        only: Option<&Origin>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<VerifyReport, Error> {
        let _lock = self.store.lock(LockMode::Shared, "verify")?;
        let (blobs, strays) = self.store.blobs(only)?;
        let records: HashMap<(Origin, Digest), u64> = self
            .index
            .blobs()?
            .into_iter()
            .filter(|(o, _, _)| only.is_none_or(|x| x == o))
            .map(|(o, d, r)| ((o, d), r.size))
            .collect();
        let on_disk: HashSet<(Origin, Digest)> =
            blobs.iter().map(|b| (b.origin.clone(), b.digest)).collect();
        let mut report = VerifyReport {
            strays,
            ..VerifyReport::default()
        };
        let total = blobs.len();
        for (i, b) in blobs.iter().enumerate() {
            let key = (b.origin.clone(), b.digest);
            // The name is the digest; the recorded size, when there is a record, must match too.
            match self
                .store
                .check(&b.origin, &b.digest, records.get(&key).copied())?
            {
                BlobCheck::Intact | BlobCheck::Missing => {}
                BlobCheck::Failed(_) => {
                    self.commit_point("index: forget blob")?;
                    self.index.remove_blob(&b.origin, &b.digest)?;
                    self.store.quarantine(&b.origin, &b.digest)?;
                    report.corrupt.push(key.clone());
                }
            }
            if !records.contains_key(&key) {
                report.orphaned.push(key);
            }
            report.checked += 1;
            progress(i + 1, total);
        }
        for (o, d) in records.into_keys() {
            if !on_disk.contains(&(o.clone(), d)) {
                self.commit_point("index: forget blob")?;
                self.index.remove_blob(&o, &d)?;
                report.missing.push((o, d));
            }
        }
        self.forget_all();
        Ok(report)
    }

    /// Removes stale temporaries, names that are not blobs, blobs with no record, and blobs no
    /// entry references; then, if `max_bytes` is given, least-recently-used blobs until the total
    /// fits — but never a blob a fresh entry references (stale entries referencing an evicted
    /// blob are dropped with it: they would be refreshed before their next load anyway). Runs
    /// under the exclusive lock, so no publisher is between its blob write and its index rows.
    /// Works on a full disk (R-H5): where the index cannot take a delete, the blob goes first.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn gc(&self, max_bytes: Option<u64>) -> Result<GcReport, Error> {
        let _lock = self.store.lock(LockMode::Exclusive, "gc")?;
        let mut report = GcReport {
            temporaries: self.store.sweep_tmp(Duration::ZERO)?,
            ..GcReport::default()
        };
        let (blobs, _) = self.store.blobs(None)?;
        report.bytes_before = blobs.iter().filter(|b| b.regular).map(|b| b.len).sum();
        let recorded: HashSet<(Origin, Digest)> = self
            .index
            .blobs()?
            .into_iter()
            .map(|(o, d, _)| (o, d))
            .collect();
        let mut total = report.bytes_before;
        for b in &blobs {
            let key = (b.origin.clone(), b.digest);
            if !b.regular {
                self.release(&b.origin, &b.digest)?;
                report.not_blobs += 1;
            } else if !recorded.contains(&key) || !self.index.is_referenced(&b.origin, &b.digest)? {
                self.release(&b.origin, &b.digest)?;
                report.unreferenced += 1;
                total -= b.len;
            }
        }
        if let Some(max) = max_bytes {
            let now = now_ms();
            for (origin, digest, rec) in self.index.blobs()? {
                if total <= max {
                    break;
                }
                let released = self.with_room("gc", || {
                    self.commit_point("index: release blob")?;
                    Ok(self.index.release_blob(&origin, &digest, now)?)
                })?;
                if released {
                    self.store.remove(&origin, &digest)?;
                    report.evicted += 1;
                    total = total.saturating_sub(rec.size);
                }
            }
            report.over_budget = total > max;
        }
        report.bytes_after = total;
        self.forget_all();
        self.store.keep_reserve();
        Ok(report)
    }

    /// Every origin the root holds anything of: rows in the index, or a folder in the store
    /// (blobs, staging, quarantine), sorted by label.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn origins(&self) -> Result<Vec<Origin>, Error> {
        let mut all = self.index.origins()?;
        all.extend(self.store.origins()?);
        all.sort();
        all.dedup();
        Ok(all)
    }

    /// Purges ([`Cache::purge`], one origin at a time, the index erased once at the end: K3)
    /// every origin the root holds anything of that `keep` does not name, and returns them: a
    /// server the host no longer configures leaves no entry, approval, blob, temporary or
    /// quarantined copy behind, and nothing of them stays readable in the index's files (R-Q3).
    /// Stops at the first origin that cannot be purged; those before it are gone.
    ///
    /// # Errors
    /// Those of [`Cache::origins`] and [`Cache::purge`].
    pub fn purge_absent(&self, keep: &[Origin]) -> Result<Vec<Origin>, Error> {
        let absent: Vec<Origin> = self
            .origins()?
            .into_iter()
            .filter(|o| !keep.contains(o))
            .collect();
        // An origin whose row holds nothing yet — its first listing or load in flight, the row
        // made by the request's mark — is not one the cache holds and is not reported, but it
        // is purged all the same: deleting its row moves the purge count, so what that request
        // brings back is not kept (round 25 of review). Reporting it would name a server the
        // cache held nothing of.
        let mut doomed = absent.clone();
        doomed.extend(
            self.index
                .origin_rows()?
                .into_iter()
                .filter(|o| !keep.contains(o) && !absent.contains(o)),
        );
        if doomed.is_empty() {
            return Ok(absent);
        }
        let _lock = self.store.lock(LockMode::Exclusive, "purge")?;
        // The index is erased once, after every origin (K3), and also when one fails: those
        // before it are gone and leave nothing readable either.
        let purged = doomed.iter().try_for_each(|origin| self.purge_locked(origin));
        let erased = self.erase_purged();
        purged.and(erased)?;
        Ok(absent)
    }

    /// Forgets a blob's record and removes it: row first (R-C3); if the index cannot take the
    /// delete (a full disk), the blob first, which frees the room the delete needs.
    fn release(&self, origin: &Origin, digest: &Digest) -> Result<(), Error> {
        let row = self.with_room("gc", || {
            self.commit_point("index: forget blob")?;
            Ok(self.index.remove_blob(origin, digest)?)
        });
        match row {
            Ok(()) => {
                self.store.remove(origin, digest)?;
            }
            Err(first) if first.is_disk_full() => {
                // Even the reserve was not room enough: the blob goes first, which frees the
                // room the delete needs; a record whose blob is gone only reads as a miss.
                tracing::warn!(origin = %origin, digest = %digest, error = %first, "gc: the disk is full; removing the blob before its record");
                self.store.remove(origin, digest)?;
                self.commit_point("index: forget blob")?;
                self.index.remove_blob(origin, digest)?;
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}
