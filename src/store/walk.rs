//! Enumerating, checking and removing blobs, for verify, gc and purge. Every folder is walked
//! from the root's descriptor without following links (R-H1); checks stream with a fixed buffer
//! (R-H8).

use std::io::{self, Read};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::platform::{self, AsFd as _, Kind};

use super::handle::{Dir, Parent, find_dir, find_path, remove_tree, with_writable};
use super::layout::{ORIGINS, QUARANTINE, SHA256, TMP, blob_rel};
use super::read::open_failure;
use super::{BlobRead, BlobStore, io_err};
use crate::digest::{Digest, Hasher};
use super::error::StoreError;
use crate::mismatch::Mismatch;
use crate::origin::Origin;

/// The buffer a streaming check hashes through: memory stays flat whatever a file's size.
const CHECK_BUFFER: usize = 1 << 20;

/// A blob found on disk.
#[derive(Debug, Clone)]
pub struct StoredBlob {
    /// Its origin, recovered from the path (R-O2).
    pub origin: Origin,
    /// Its name.
    pub digest: Digest,
    /// Its length on disk (not a verified size).
    pub len: u64,
    /// What it costs on disk: its allocated bytes, never less than its length (R-Q4, K2).
    pub allocated: u64,
    /// Whether a regular file is there (anything else is a failed blob: R-H7).
    pub regular: bool,
}

/// What a streaming check of a blob found (R-H8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobCheck {
    /// The bytes hash to the name (and have the expected size).
    Intact,
    /// Nothing is there.
    Missing,
    /// Something is there that is not the blob.
    Failed(Mismatch),
}

impl BlobStore {
    /// Every blob on disk (of one origin, or all), and every path under `origins/` that is not a
    /// well-formed blob path (a stray file, an unknown origin encoding).
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if a folder cannot be read.
    pub fn blobs(&self, only: Option<&Origin>) -> Result<(Vec<StoredBlob>, Vec<PathBuf>), StoreError> {
        let disk = self.disk.as_ref();
        let mut blobs = Vec::new();
        let mut strays = Vec::new();
        let origins_path = self.layout.origins();
        let Some(origins) = find_dir(disk, &self.root, Parent::Private, ORIGINS)
            .map_err(io_err("open", &origins_path))?
        else {
            return Ok((blobs, strays));
        };
        let names = origins
            .names()
            .map_err(io_err("read directory", &origins_path))?;
        for (component, _) in names {
            if only.is_some_and(|o| o.path_component() != component) {
                continue;
            }
            let Some(origin) = Origin::from_path_component(&component) else {
                strays.push(origins.join(&component));
                continue;
            };
            let odir = match origins.child(&component) {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(_) => {
                    strays.push(origins.join(&component));
                    continue;
                }
            };
            let mut found = Found::default();
            walk_origin(&origin, &odir, &mut found)?;
            blobs.append(&mut found.blobs);
            strays.append(&mut found.strays);
        }
        Ok((blobs, strays))
    }

    /// Checks one blob by streaming it through the hasher with a fixed buffer (R-H8). With an
    /// `expected` size, a length that differs fails before a single byte is read.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) for I/O failures other than "not there" and "not a blob".
    pub fn check(
        &self,
        origin: &Origin,
        digest: &Digest,
        expected: Option<u64>,
    ) -> Result<BlobCheck, StoreError> {
        let rel = blob_rel(origin, digest);
        let path = self.layout.root().join(&rel);
        let file = match self.root.open_file_beneath(&rel) {
            Ok(f) => f,
            Err(e) => {
                return match open_failure(e).map_err(io_err("open", &path))? {
                    BlobRead::Failed(m) => Ok(BlobCheck::Failed(m)),
                    _ => Ok(BlobCheck::Missing),
                };
            }
        };
        let meta = platform::fstat(file.as_fd()).map_err(io_err("stat", &path))?;
        if meta.kind != Kind::File {
            return Ok(BlobCheck::Failed(Mismatch::NotARegularFile));
        }
        let len = meta.size;
        if let Some(size) = expected
            && size != len
        {
            return Ok(BlobCheck::Failed(Mismatch::Size {
                expected: size,
                actual: len,
            }));
        }
        let mut hasher = Hasher::new();
        let mut buf = vec![0u8; CHECK_BUFFER];
        // Never read past the length we saw: a file that grows meanwhile cannot make this run
        // without bound.
        let mut reader = (&file).take(len.saturating_add(1));
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err("read", &path)(e)),
            }
        }
        let (actual, read) = hasher.finish();
        Ok(if read != len {
            BlobCheck::Failed(Mismatch::Size {
                expected: len,
                actual: read,
            })
        } else if actual != *digest {
            BlobCheck::Failed(Mismatch::Digest {
                expected: *digest,
                actual,
            })
        } else {
            BlobCheck::Intact
        })
    }

    /// Removes one blob (whatever is under its name). Returns whether something was there.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if it cannot be removed.
    pub fn remove(&self, origin: &Origin, digest: &Digest) -> Result<bool, StoreError> {
        let disk = self.disk.as_ref();
        let hex = digest.hex();
        let path = self.layout.blob_path(origin, digest);
        let aa = find_path(
            disk,
            &self.root,
            &[
                (ORIGINS, Parent::Private),
                (origin.path_component(), Parent::Private),
                (SHA256, Parent::ReadOnly),
                (&hex[..2], Parent::ReadOnly),
            ],
        )
        .map_err(io_err("open", &path))?;
        let Some(aa) = aa else { return Ok(false) };
        let there = platform::stat_at(aa.fd(), &hex[2..]).is_ok();
        if there {
            with_writable(disk, &aa, || remove_tree(disk, &aa, &hex[2..]))
                .map_err(io_err("remove", &path))?;
        }
        Ok(there)
    }

    /// Every origin that has a folder under `origins/` (whatever it holds: blobs, staging,
    /// quarantine), recovered from its name (R-O2). A name that is no origin's encoding is left
    /// to `blobs`, which reports it as a stray.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if the folder cannot be read.
    pub fn origins(&self) -> Result<Vec<Origin>, StoreError> {
        let path = self.layout.origins();
        let Some(origins) = find_dir(self.disk.as_ref(), &self.root, Parent::Private, ORIGINS)
            .map_err(io_err("open", &path))?
        else {
            return Ok(Vec::new());
        };
        Ok(origins
            .names()
            .map_err(io_err("read directory", &path))?
            .into_iter()
            .filter_map(|(component, _)| Origin::from_path_component(&component))
            .collect())
    }

    /// Removes an origin's whole store: blobs, staging and quarantine (R-C5, R-H9).
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if it cannot be removed.
    pub fn remove_origin(&self, origin: &Origin) -> Result<(), StoreError> {
        let disk = self.disk.as_ref();
        let dir = self.layout.origin_dir(origin);
        let Some(origins) =
            find_dir(disk, &self.root, Parent::Private, ORIGINS).map_err(io_err("open", &dir))?
        else {
            return Ok(());
        };
        remove_tree(disk, &origins, origin.path_component()).map_err(io_err("remove", &dir))
    }

    /// Removes the shared `tmp/` and `quarantine/` of the first layout (one look at the root,
    /// whatever the number of origins). The caller holds the exclusive lock, so no live
    /// publisher owns any of them.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if a folder cannot be read.
    pub(crate) fn sweep_first_layout(&self) -> Result<usize, StoreError> {
        let disk = self.disk.as_ref();
        let mut removed = 0;
        for (legacy, ours) in [
            (TMP, is_first_layout_temporary as fn(&str) -> bool),
            (QUARANTINE, is_first_layout_quarantined),
        ] {
            // Only names the first layout made are removed, and the folder only once empty.
            let Ok(Some(dir)) = self.root.child(legacy) else {
                continue;
            };
            for (name, _) in dir.names().map_err(io_err("read directory", dir.path()))? {
                if ours(&name) {
                    remove_tree(disk, &dir, &name).map_err(io_err("remove", &dir.join(&name)))?;
                    removed += 1;
                }
            }
            // Its handle goes first (Windows refuses to remove a folder held open).
            drop(dir);
            let _ = disk.unlink(self.root.fd(), legacy, true);
        }
        Ok(removed)
    }

    /// Removes temporaries older than `age` in every origin's staging (a crashed publisher's
    /// leftovers), and the shared `tmp/` and `quarantine/` of the first layout. The caller holds
    /// the exclusive lock, so no live publisher owns any of them. A look at every origin: `gc`
    /// and `purge` run it, not `open` (whose cost would grow with the origins, G1).
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if a folder cannot be read.
    pub fn sweep_tmp(&self, age: Duration) -> Result<usize, StoreError> {
        let disk = self.disk.as_ref();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut removed = self.sweep_first_layout()?;
        let Some(origins) = find_dir(disk, &self.root, Parent::Private, ORIGINS)
            .map_err(io_err("open", &self.layout.origins()))?
        else {
            return Ok(removed);
        };
        for (component, _) in origins
            .names()
            .map_err(io_err("read directory", &self.layout.origins()))?
        {
            let Ok(Some(odir)) = origins.child(&component) else {
                continue;
            };
            let Ok(Some(tmp)) = odir.child(TMP) else {
                continue;
            };
            for (name, _) in tmp.names().map_err(io_err("read directory", tmp.path()))? {
                let old = platform::stat_at(tmp.fd(), name.as_str()).is_ok_and(|st| {
                    let mtime = Duration::from_nanos(u64::try_from(st.mtime_ns).unwrap_or(0));
                    now.saturating_sub(mtime) >= age
                });
                if old && remove_tree(disk, &tmp, &name).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

impl BlobStore {
    /// Removes every temporary in `origin`'s staging. Only for a
    /// caller inside the origin's publish section ([`BlobStore::lock_origin`]): every publisher
    /// of the origin stages inside it, so whatever is there is a crashed publisher's leftover,
    /// which would otherwise count against the quota (R-Q4) and hold its room until `gc`. The
    /// cache runs it at its first publish into each origin, and at every publish under a quota.
    /// Staging that a large batch grew past one block (a folder does not shrink when emptied)
    /// is removed too, so that it is not charged for ever (K2): the next publish makes it again.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if the folder cannot be read or a leftover removed.
    pub(crate) fn sweep_origin_tmp(&self, origin: &Origin) -> Result<usize, StoreError> {
        let disk = self.disk.as_ref();
        let path = self.layout.tmp(origin);
        let Some(odir) = self.origin_folder(origin, &path)?
        else {
            return Ok(0);
        };
        let Some(tmp) = find_dir(disk, &odir, Parent::ReadOnly, TMP).map_err(io_err("open", &path))?
        else {
            return Ok(0);
        };
        let mut removed = 0;
        for (name, _) in tmp.names().map_err(io_err("read directory", &path))? {
            remove_tree(disk, &tmp, &name).map_err(io_err("remove", &tmp.join(&name)))?;
            removed += 1;
        }
        if dir_bytes(&tmp) > self.block() {
            // Best effort: a folder that will not go is only charged as it is. Its handle goes
            // first (Windows refuses to remove a folder held open).
            drop(tmp);
            let _ = with_writable(disk, &odir, || disk.unlink(odir.fd(), TMP, true));
        }
        Ok(removed)
    }
}

/// A fan-out folder of an origin's store (`sha256/<2 hex>/`) as a walk found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fan {
    /// Its name: the first two hex digits of the digests it holds.
    pub name: String,
    /// What it costs on disk (a folder never shrinks on most filesystems: this is the most
    /// names it ever held, not the names it holds).
    pub allocated: u64,
    /// How many names it holds now.
    pub names: usize,
}

/// What a walk of one origin's blob tree found.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub(super) blobs: Vec<StoredBlob>,
    /// Names that are not blobs, and what they cost on disk (the name itself: a stray folder's
    /// own allocation, not its contents').
    pub(super) strays: Vec<PathBuf>,
    pub(super) stray_bytes: u64,
    pub(super) fans: Vec<Fan>,
    /// What `sha256/` itself costs on disk, if it is there.
    pub(super) sha256: Option<u64>,
}

impl Found {
    fn stray(&mut self, parent: &Dir, name: &str) {
        self.stray_bytes += allocated_at(parent, name);
        self.strays.push(parent.join(name));
    }
}

/// What name `name` in `dir` costs on disk (without following a link); 0 if it is gone.
pub(super) fn allocated_at(dir: &Dir, name: &str) -> u64 {
    platform::stat_at(dir.fd(), name).map_or(0, |st| st.allocated)
}

/// What an open folder itself costs on disk (its names, not what they name).
pub(super) fn dir_bytes(dir: &Dir) -> u64 {
    platform::fstat(dir.fd()).map_or(0, |st| st.allocated)
}

/// The blobs (and strays, and fan-out folders) of one origin's store.
pub(super) fn walk_origin(origin: &Origin, odir: &Dir, found: &mut Found) -> Result<(), StoreError> {
    for (name, _) in odir
        .names()
        .map_err(io_err("read directory", odir.path()))?
    {
        if name == TMP || name == QUARANTINE {
            continue;
        }
        let sha = match (name == SHA256).then(|| odir.child(&name)) {
            Some(Ok(Some(d))) => d,
            Some(Ok(None)) => continue,
            _ => {
                found.stray(odir, &name);
                continue;
            }
        };
        found.sha256 = Some(dir_bytes(&sha));
        for (aa_name, _) in sha.names().map_err(io_err("read directory", sha.path()))? {
            let aa = match sha.child(&aa_name) {
                Ok(Some(d)) if aa_name.len() == 2 => d,
                Ok(None) => continue,
                _ => {
                    found.stray(&sha, &aa_name);
                    continue;
                }
            };
            let names = aa.names().map_err(io_err("read directory", aa.path()))?;
            found.fans.push(Fan {
                name: aa_name.clone(),
                allocated: dir_bytes(&aa),
                names: names.len(),
            });
            for (rest, kind) in names {
                let Ok(digest) = format!("sha256:{aa_name}{rest}").parse::<Digest>() else {
                    found.stray(&aa, &rest);
                    continue;
                };
                let stat = platform::stat_at(aa.fd(), rest.as_str());
                let (len, allocated, regular) = match stat {
                    Ok(st) => (st.size, st.allocated, st.kind == Kind::File),
                    Err(_) => (0, 0, kind == Kind::File),
                };
                found.blobs.push(StoredBlob {
                    origin: origin.clone(),
                    digest,
                    len,
                    allocated,
                    regular,
                });
            }
        }
    }
    Ok(())
}

/// `<pid>-<counter>-<16 hex>.tmp`: a temporary of the first layout's shared `tmp/`.
fn is_first_layout_temporary(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".tmp") else {
        return false;
    };
    let parts: Vec<&str> = stem.split('-').collect();
    matches!(parts.as_slice(), [pid, n, hex]
        if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
            && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
            && hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `<24 digits>-<origin>-<64 hex>`: a copy in the first layout's shared `quarantine/`.
fn is_first_layout_quarantined(name: &str) -> bool {
    let (Some(nanos), Some(hex)) = (name.get(..24), name.rsplit('-').next()) else {
        return false;
    };
    nanos.bytes().all(|b| b.is_ascii_digit())
        && name.as_bytes().get(24) == Some(&b'-')
        && hex.len() == 64
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
        && name.len() > 24 + 1 + 64 + 1
}
