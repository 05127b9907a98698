//! `verify` and `gc`: maintenance over the whole root.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use super::{Cache, now_ms};
use crate::digest::Digest;
use crate::error::Error;
use crate::origin::Origin;
use crate::store::{BlobRead, Isolation, LockMode};

/// What `verify` found.
#[derive(Debug, Default, Clone)]
pub struct VerifyReport {
    /// Blobs re-hashed.
    pub checked: usize,
    /// Blobs whose bytes do not match their name; quarantined and forgotten.
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

/// What `gc` did.
#[derive(Debug, Default, Clone)]
pub struct GcReport {
    /// Blobs no entry references, removed.
    pub unreferenced: usize,
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

impl Cache {
    /// Re-hashes every blob (of one origin, or all) and reconciles the store with the index.
    /// Corrupt blobs are quarantined and forgotten. `progress(done, total)` is called after each.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn verify(
        &self,
        only: Option<&Origin>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<VerifyReport, Error> {
        let _lock = self.store.lock(LockMode::Shared)?;
        let (blobs, strays) = self.store.blobs(only)?;
        let records: Vec<_> = self
            .index
            .blobs()?
            .into_iter()
            .filter(|(o, _, _)| only.is_none_or(|x| x == o))
            .collect();
        let on_disk: HashSet<(Origin, Digest)> =
            blobs.iter().map(|b| (b.origin.clone(), b.digest)).collect();
        let recorded: HashSet<(Origin, Digest)> =
            records.iter().map(|(o, d, _)| (o.clone(), *d)).collect();
        let mut report = VerifyReport {
            strays,
            ..VerifyReport::default()
        };
        let total = blobs.len();
        for (i, b) in blobs.iter().enumerate() {
            // The name is the digest and the length on disk is what must hash to it.
            match self
                .store
                .read(&b.origin, &b.digest, b.len, Isolation::Rehash, None)?
            {
                BlobRead::Verified(_) | BlobRead::Missing => {}
                BlobRead::Failed(_) => {
                    self.index.remove_blob(&b.origin, &b.digest)?;
                    self.store.quarantine(&b.origin, &b.digest)?;
                    report.corrupt.push((b.origin.clone(), b.digest));
                }
            }
            if !recorded.contains(&(b.origin.clone(), b.digest)) {
                report.orphaned.push((b.origin.clone(), b.digest));
            }
            report.checked += 1;
            progress(i + 1, total);
        }
        for (o, d, _) in records {
            if !on_disk.contains(&(o.clone(), d)) {
                self.index.remove_blob(&o, &d)?;
                report.missing.push((o, d));
            }
        }
        self.forget_all();
        Ok(report)
    }

    /// Removes stale temporaries, blobs with no record, and blobs no entry references; then, if
    /// `max_bytes` is given, least-recently-used blobs until the total fits — but never a blob a
    /// fresh entry references (stale entries referencing an evicted blob are dropped with it:
    /// they would be refreshed before their next load anyway). Runs under the exclusive lock, so
    /// no publisher is between its blob write and its index rows.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn gc(&self, max_bytes: Option<u64>) -> Result<GcReport, Error> {
        let _lock = self.store.lock(LockMode::Exclusive)?;
        let mut report = GcReport {
            temporaries: self.store.sweep_tmp(Duration::ZERO)?,
            ..GcReport::default()
        };
        let (blobs, _) = self.store.blobs(None)?;
        report.bytes_before = blobs.iter().map(|b| b.len).sum();
        let recorded: HashSet<(Origin, Digest)> = self
            .index
            .blobs()?
            .into_iter()
            .map(|(o, d, _)| (o, d))
            .collect();
        let mut total = report.bytes_before;
        for b in &blobs {
            let key = (b.origin.clone(), b.digest);
            if !recorded.contains(&key) || !self.index.is_referenced(&b.origin, &b.digest)? {
                // Row before blob.
                self.index.remove_blob(&b.origin, &b.digest)?;
                self.store.remove(&b.origin, &b.digest)?;
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
                if self.index.release_blob(&origin, &digest, now)? {
                    self.store.remove(&origin, &digest)?;
                    report.evicted += 1;
                    total = total.saturating_sub(rec.size);
                }
            }
            report.over_budget = total > max;
        }
        report.bytes_after = total;
        self.forget_all();
        Ok(report)
    }
}
