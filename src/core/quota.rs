//! The per-origin quota (R-Q4): one origin's stored bytes never exceed it, and making room
//! evicts only that origin's bytes, least recently used first.
//!
//! What counts is what the disk pays for the origin (K2), walked from disk under its publish
//! section ([`BlobStore::lock_origin`](crate::store::BlobStore)) — the [`Charge`] rule:
//!
//! - every file and folder under `origins/<origin>/` at its allocated size, what `du` reports
//!   for that folder: its blobs, recorded or not (a crash between a link and its row leaves a
//!   blob with no record), its quarantined copies (bytes on the user's disk like any other;
//!   never served, so they are the first to go), its fan-out folders (`sha256/<2 hex>/`, whose
//!   blocks a tiny file can cost more than itself), staging and its own folders;
//! - plus [`FILE_OVERHEAD`] for every file and [`ROW_OVERHEAD`] for every blob: what each
//!   costs beyond that, its names in growing folders and its row in the index.
//!
//! Its staging holds nothing live while the section is held — every publisher of the origin
//! stages inside it — so leftovers of a crashed publisher are swept, not counted. The memory
//! tier is process memory, bounded on its own, and not counted. Nor are the origin's entries and
//! file lists (a catalog, bounded by the listing's limits, not content the quota could evict).
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
use crate::store::{Item, Usage, in_blocks};

/// What every file under an origin's folder is charged beyond its allocated bytes: its names
/// in folders, which grow by a block at a time. Measured on ext4 (4 KiB blocks): a fan-out folder
/// turns indexed at its 57th 62-character name and costs three blocks, 144 bytes a name beyond
/// its first block, then about 100; staging, where each file is also named while it is
/// published, about 80 bytes a name beyond its first block. 144 + 80, rounded up.
pub const FILE_OVERHEAD: u64 = 256;

/// What every blob is charged for its row in the index (`blobs`: digest, size, inode evidence,
/// times, seal). Measured: 124 bytes a row, 10,000 rows of random digests in the `WITHOUT ROWID`
/// B-tree at its usual fill, rounded up.
pub const ROW_OVERHEAD: u64 = 128;

/// The folders every publish needs beside a blob's fan-out folder: the origin's own, `sha256/`
/// and `tmp/`.
const PUBLISH_FOLDERS: u64 = 3;

/// The charge rule (K2): what the quota counts of what an origin's folder holds, and what it
/// charges in advance for what a publish will add.
#[derive(Debug, Clone, Copy)]
pub(super) struct Charge {
    /// The filesystem's allocation unit: what a new folder costs, and what a new file's length
    /// is rounded up to.
    block: u64,
}

impl Charge {
    /// The rule on a filesystem of `block`-byte blocks.
    pub(super) fn new(block: u64) -> Charge {
        Charge { block }
    }

    /// Everything `usage` found, as the quota counts it.
    fn of(usage: &Usage) -> u64 {
        usage
            .allocated()
            .saturating_add(FILE_OVERHEAD.saturating_mul(count(usage.files())))
            .saturating_add(ROW_OVERHEAD.saturating_mul(count(usage.blobs.len())))
    }

    /// A blob on disk: its allocated bytes, its names, its row.
    fn blob(allocated: u64) -> u64 {
        allocated + FILE_OVERHEAD + ROW_OVERHEAD
    }

    /// A blob a publish will add, charged before it exists: its length in whole blocks, its
    /// names, its row.
    fn new_blob(self, size: u64) -> u64 {
        Charge::blob(in_blocks(size, self.block))
    }

    /// What `batch` (unique digests and sizes) costs stored into an origin that holds nothing:
    /// each blob, each fan-out folder it needs and the folders every publish needs.
    pub(super) fn alone(self, batch: &[(Digest, u64)]) -> u64 {
        let fans: HashSet<String> = batch.iter().map(|(d, _)| fan_of(d)).collect();
        batch
            .iter()
            .map(|&(_, size)| self.new_blob(size))
            .sum::<u64>()
            .saturating_add(self.block.saturating_mul(count(fans.len()) + PUBLISH_FOLDERS))
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The fan-out folder a digest's blob hangs from: its first two hex digits.
fn fan_of(digest: &Digest) -> String {
    digest.hex()[..2].to_owned()
}

/// What one eviction pass may take, cheapest to lose first. Folders go only once empty: what
/// they cost serves nothing then, and the next publish or quarantine that needs one makes it.
enum Victim {
    /// A fan-out folder no blob hangs from (emptied by gc or an earlier eviction): its blocks
    /// serve nothing.
    EmptyFan(String, u64),
    /// A quarantined copy (by its name in the quarantine): never served.
    Quarantined(String, u64),
    /// The quarantine folder, once every copy in it is gone.
    QuarantineFolder(u64),
    /// A blob with no sealed record: nothing serves it without a repair.
    Unrecorded(Digest, u64),
    /// A recorded blob, in least-recently-used order; an entry that lists it reads a miss next
    /// and fetches again.
    Recorded(Digest, u64),
}

/// The fan-out folders of the origin being made room in: each with its allocated bytes and the
/// names it holds, and those the batch needs (never removed, even when emptied).
struct Fans {
    held: HashMap<String, (u64, usize)>,
    needed: HashSet<String>,
}

impl Cache {
    /// Makes room in `origin`'s store for `items`, the batch about to be published, so that
    /// the origin is charged at most `quota` bytes once it is (R-Q4, K2: see [`Charge`]). Runs
    /// inside the origin's publish section. Evicts, until the batch fits: empty fan-out folders,
    /// quarantined copies (oldest first) and then their folder, unrecorded blobs, then recorded blobs least
    /// recently used first — never one the batch itself lists, never another origin's; a
    /// fan-out folder a blob's eviction empties goes with it. A recorded blob's row goes before
    /// its file (R-C3).
    ///
    /// # Errors
    /// A batch that alone would be charged more than the quota is refused before anything is
    /// evicted ([`StoreError::Io`] of kind `QuotaExceeded`, naming both numbers: admission
    /// declines such a skill before any request, so only a direct caller of the core meets it);
    /// I/O and index errors.
    pub(super) fn make_room(
        &self,
        origin: &Origin,
        quota: u64,
        items: &[Item<'_>],
    ) -> Result<(), Error> {
        self.store.sweep_origin_tmp(origin)?;
        let charge = self.charge();
        let mut batch: Vec<(Digest, u64)> = Vec::with_capacity(items.len());
        for (d, size, _) in items {
            if !batch.iter().any(|(e, _)| e == d) {
                batch.push((*d, *size));
            }
        }
        let alone = charge.alone(&batch);
        if alone > quota {
            return Err(self.over_quota(origin, quota, alone));
        }
        let usage = self.store.usage(origin)?;
        let on_disk: HashMap<Digest, (u64, bool)> = usage
            .blobs
            .iter()
            .map(|b| (b.digest, (b.len, b.regular)))
            .collect();
        let mut fans = Fans {
            held: usage
                .fans
                .iter()
                .map(|f| (f.name.clone(), (f.allocated, f.names)))
                .collect(),
            needed: batch.iter().map(|(d, _)| fan_of(d)).collect(),
        };
        let incoming = incoming(charge, &batch, &on_disk, &fans, usage.missing_folders);
        let mut used = Charge::of(&usage);
        if used.saturating_add(incoming) <= quota {
            return Ok(());
        }
        for victim in self.victims(origin, &batch, &usage, &fans)? {
            if used.saturating_add(incoming) <= quota {
                break;
            }
            used = used.saturating_sub(self.evict(origin, &victim, &mut fans)?);
        }
        if used.saturating_add(incoming) > quota {
            // Only what no eviction can remove (the origin's own folders, folders the batch
            // needs, names that are not blobs at all) is left over: refuse rather than go over.
            return Err(self.over_quota(origin, quota, used.saturating_add(incoming)));
        }
        Ok(())
    }

    /// Everything of `origin` an eviction may take, cheapest to lose first.
    fn victims(
        &self,
        origin: &Origin,
        batch: &[(Digest, u64)],
        usage: &Usage,
        fans: &Fans,
    ) -> Result<Vec<Victim>, Error> {
        let needed: HashSet<Digest> = batch.iter().map(|(d, _)| *d).collect();
        let records = self.index.blobs_of(origin)?;
        let recorded: HashSet<Digest> = records.iter().map(|(d, _)| *d).collect();
        let allocated: HashMap<Digest, u64> =
            usage.blobs.iter().map(|b| (b.digest, b.allocated)).collect();
        let mut out: Vec<Victim> = usage
            .fans
            .iter()
            .filter(|f| f.names == 0 && !fans.needed.contains(&f.name))
            .map(|f| Victim::EmptyFan(f.name.clone(), f.allocated))
            .collect();
        out.extend(
            usage
                .quarantined
                .iter()
                .map(|(name, a)| Victim::Quarantined(name.clone(), *a)),
        );
        out.extend(usage.quarantine_folder.map(Victim::QuarantineFolder));
        let mut unrecorded: Vec<(Digest, u64)> = allocated
            .iter()
            .filter(|(d, _)| !recorded.contains(d) && !needed.contains(d))
            .map(|(d, a)| (*d, *a))
            .collect();
        unrecorded.sort_unstable();
        out.extend(unrecorded.into_iter().map(|(d, a)| Victim::Unrecorded(d, a)));
        // The index lists least recently used first; what eviction frees is what the disk holds.
        out.extend(records.into_iter().filter_map(|(d, _)| {
            let &a = allocated.get(&d)?;
            (!needed.contains(&d)).then_some(Victim::Recorded(d, a))
        }));
        Ok(out)
    }

    /// Evicts one victim; returns the charge it freed.
    fn evict(
        &self,
        origin: &Origin,
        victim: &Victim,
        fans: &mut Fans,
    ) -> Result<u64, Error> {
        match victim {
            Victim::EmptyFan(name, allocated) => {
                let gone = self.store.remove_empty_fan(origin, name)?;
                Ok(if gone { *allocated } else { 0 })
            }
            Victim::QuarantineFolder(allocated) => {
                let gone = self.store.remove_empty_quarantine(origin)?;
                Ok(if gone { *allocated } else { 0 })
            }
            Victim::Quarantined(name, allocated) => {
                self.store.remove_quarantined(origin, name)?;
                tracing::info!(origin = %origin, item = %name, bytes = allocated, "quota: removed a quarantined copy");
                Ok(allocated + FILE_OVERHEAD)
            }
            Victim::Unrecorded(digest, allocated) => {
                self.forget(origin, Some(digest));
                self.store.remove(origin, digest)?;
                tracing::info!(origin = %origin, %digest, bytes = allocated, "quota: removed an unrecorded blob");
                Ok(Charge::blob(*allocated) + self.leave_fan(origin, digest, fans)?)
            }
            Victim::Recorded(digest, allocated) => {
                // Row first, then the blob (R-C3): a crash in between leaves an unrecorded blob,
                // which the next count sees and evicts first.
                self.forget(origin, Some(digest));
                self.commit_point("index: quota evict")?;
                self.index.remove_blob(origin, digest)?;
                self.store.remove(origin, digest)?;
                tracing::info!(origin = %origin, %digest, bytes = allocated, "quota: evicted the least recently used blob");
                Ok(Charge::blob(*allocated) + self.leave_fan(origin, digest, fans)?)
            }
        }
    }

    /// A blob of `digest` left its fan-out folder: the folder goes too once empty (unless the
    /// batch needs it). Returns what that freed.
    fn leave_fan(&self, origin: &Origin, digest: &Digest, fans: &mut Fans) -> Result<u64, Error> {
        let name = fan_of(digest);
        let Some((allocated, names)) = fans.held.get_mut(&name) else {
            return Ok(0);
        };
        *names = names.saturating_sub(1);
        if *names > 0 || fans.needed.contains(&name) {
            return Ok(0);
        }
        let allocated = *allocated;
        fans.held.remove(&name);
        Ok(if self.store.remove_empty_fan(origin, &name)? {
            allocated
        } else {
            0
        })
    }

    fn over_quota(&self, origin: &Origin, quota: u64, size: u64) -> Error {
        Error::Store(StoreError::Io {
            op: "publish",
            path: self.store.layout().origin_dir(origin),
            source: std::io::Error::new(
                std::io::ErrorKind::QuotaExceeded,
                format!("{size} bytes on disk would exceed the origin's quota of {quota} bytes"),
            ),
        })
    }

    fn charge(&self) -> Charge {
        Charge::new(self.store.block())
    }

    internal_pub! {
        /// What the quota would charge for `files` (each a digest and its size) stored alone
        /// into an origin that holds nothing (R-Q4, K2): each file's length in whole blocks of
        /// this root's filesystem, [`FILE_OVERHEAD`] and [`ROW_OVERHEAD`] each, a block for each
        /// fan-out folder they need, and three for the origin's own folders. A skill charged
        /// more than the quota could never be stored whole: admission declines it before any
        /// request.
        fn quota_charge(&self, files: impl IntoIterator<Item = (Digest, u64)>) -> u64 {
            let mut batch: Vec<(Digest, u64)> = Vec::new();
            for (d, size) in files {
                if !batch.iter().any(|(e, _)| *e == d) {
                    batch.push((d, size));
                }
            }
            self.charge().alone(&batch)
        }
    }

    internal_pub! {
        /// How many bytes `origin`'s store is charged now (R-Q4, K2): what `du` reports for its
        /// folder, plus [`FILE_OVERHEAD`] per file and [`ROW_OVERHEAD`] per blob, as
        /// [`CacheBuilder::origin_quota`](super::CacheBuilder) counts them. For tests and tools.
        ///
        /// # Errors
        /// I/O errors.
        fn origin_usage(&self, origin: &Origin) -> Result<u64, Error> {
            Ok(Charge::of(&self.store.usage(origin)?))
        }
    }
}

/// What the batch will add to the origin, charged in advance: each blob not already in place (a
/// regular file of its size), a block for each fan-out folder it needs that is not there, and a
/// block for each folder every publish needs that is missing.
fn incoming(
    charge: Charge,
    batch: &[(Digest, u64)],
    on_disk: &HashMap<Digest, (u64, bool)>,
    fans: &Fans,
    missing_folders: u64,
) -> u64 {
    let new: Vec<&(Digest, u64)> = batch
        .iter()
        .filter(|(d, s)| on_disk.get(d) != Some(&(*s, true)))
        .collect();
    let new_fans: HashSet<String> = new
        .iter()
        .map(|(d, _)| fan_of(d))
        .filter(|f| !fans.held.contains_key(f))
        .collect();
    new.iter()
        .map(|&&(_, size)| charge.new_blob(size))
        .sum::<u64>()
        .saturating_add(charge.block.saturating_mul(count(new_fans.len()) + missing_folders))
}
