//! What one origin's folder costs on disk, walked from disk for the quota (R-Q4, K2): every file
//! and folder the store makes under `origins/<origin>/` at its allocated size, as `du` counts
//! them — blobs, fan-out folders, staging, quarantine, the origin's own folders, and any stray
//! name (at its own allocation: a planted folder is not descended into).

use std::io;

use super::error::StoreError;
use super::handle::{Dir, Parent, find_dir, find_path, with_writable};
use super::layout::{ORIGINS, QUARANTINE, SHA256, TMP};
use super::walk::{Fan, Found, StoredBlob, allocated_at, dir_bytes, walk_origin};
use super::{BlobStore, io_err};
use crate::origin::Origin;
use crate::platform::errno;

/// What one origin's folder holds and what each part costs on disk.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    /// Its blobs, recorded or not, each with its allocated bytes.
    pub(crate) blobs: Vec<StoredBlob>,
    /// Its quarantined items, oldest first (the names sort by the time they were moved), each
    /// with its allocated bytes.
    pub(crate) quarantined: Vec<(String, u64)>,
    /// Its fan-out folders (`sha256/<2 hex>/`).
    pub(crate) fans: Vec<Fan>,
    /// What the quarantine folder itself costs, if it is there.
    pub(crate) quarantine_folder: Option<u64>,
    /// The allocated bytes of everything else: the origin's own folders (itself, `sha256/`,
    /// `tmp/`), temporaries and stray names.
    pub(crate) other: u64,
    /// How many files are among everything else (temporaries, strays).
    pub(crate) other_files: usize,
    /// How many of the folders every publish needs (the origin's own, `sha256/`, `tmp/`) are
    /// not there: the next publish makes them.
    pub(crate) missing_folders: u64,
}

impl Usage {
    /// What `du` reports for the origin's folder: the allocated bytes of everything in it.
    pub(crate) fn allocated(&self) -> u64 {
        self.blobs.iter().map(|b| b.allocated).sum::<u64>()
            + self.quarantined.iter().map(|(_, a)| a).sum::<u64>()
            + self.fans.iter().map(|f| f.allocated).sum::<u64>()
            + self.quarantine_folder.unwrap_or(0)
            + self.other
    }

    /// How many files (not folders) the origin's folder holds.
    pub(crate) fn files(&self) -> usize {
        self.blobs.len() + self.quarantined.len() + self.other_files
    }
}

impl BlobStore {
    /// What `origin`'s folder holds and costs on disk (R-Q4, K2). For a caller inside the
    /// origin's publish section ([`BlobStore::lock_origin`]), so that no publisher of the origin
    /// changes it meanwhile.
    ///
    /// # Errors
    /// [`StoreError::Io`] if a folder cannot be read.
    pub(crate) fn usage(&self, origin: &Origin) -> Result<Usage, StoreError> {
        let disk = self.disk.as_ref();
        let path = self.layout.origin_dir(origin);
        let Some(odir) = self.origin_folder(origin, &path)?
        else {
            return Ok(Usage {
                missing_folders: 3,
                ..Usage::default()
            });
        };
        let mut found = Found::default();
        walk_origin(origin, &odir, &mut found)?;
        let mut usage = Usage {
            other: dir_bytes(&odir) + found.sha256.unwrap_or(0) + found.stray_bytes,
            other_files: found.strays.len(),
            missing_folders: u64::from(found.sha256.is_none()),
            blobs: found.blobs,
            fans: found.fans,
            quarantined: Vec::new(),
            quarantine_folder: None,
        };
        match find_dir(disk, &odir, Parent::ReadOnly, TMP).map_err(io_err("open", &path))? {
            Some(tmp) => {
                usage.other += dir_bytes(&tmp);
                for (name, _) in tmp.names().map_err(io_err("read directory", tmp.path()))? {
                    usage.other += allocated_at(&tmp, &name);
                    usage.other_files += 1;
                }
            }
            None => usage.missing_folders += 1,
        }
        if let Some(q) =
            find_dir(disk, &odir, Parent::ReadOnly, QUARANTINE).map_err(io_err("open", &path))?
        {
            usage.quarantine_folder = Some(dir_bytes(&q));
            usage.quarantined = quarantined_in(&q)?;
        }
        Ok(usage)
    }

    /// Removes `origin`'s fan-out folder `name` if it is empty, and says whether it did (R-Q4,
    /// K2: a folder a quota eviction emptied costs its blocks until it goes). Only for a caller
    /// inside the origin's publish section or under the exclusive lock: a publisher of the
    /// origin may be about to link into it otherwise.
    ///
    /// # Errors
    /// [`StoreError::Io`] if it cannot be examined or removed (a folder that is not empty, or
    /// gone, is no error).
    pub(crate) fn remove_empty_fan(&self, origin: &Origin, name: &str) -> Result<bool, StoreError> {
        // Only a name the store makes: two hex digits, nothing that could leave `sha256/`.
        if name.len() != 2 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(false);
        }
        self.remove_empty(
            origin,
            &[(SHA256, Parent::ReadOnly)],
            name,
        )
    }

    /// Removes `origin`'s quarantine folder if it is empty (every copy in it evicted), and says
    /// whether it did: [`BlobStore::remove_empty_fan`]'s reason and rules. The next quarantine
    /// makes it again.
    ///
    /// # Errors
    /// As [`BlobStore::remove_empty_fan`].
    pub(crate) fn remove_empty_quarantine(&self, origin: &Origin) -> Result<bool, StoreError> {
        self.remove_empty(origin, &[], QUARANTINE)
    }

    /// Removes folder `name` from the read-only folder `below` leads to from `origin`'s, if it
    /// is empty.
    fn remove_empty(
        &self,
        origin: &Origin,
        below: &[(&str, Parent)],
        name: &str,
    ) -> Result<bool, StoreError> {
        let disk = self.disk.as_ref();
        let mut steps = vec![
            (ORIGINS, Parent::Private),
            (origin.path_component(), Parent::Private),
        ];
        steps.extend_from_slice(below);
        let mut path = self.layout.origin_dir(origin);
        for (step, _) in below {
            path.push(step);
        }
        path.push(name);
        let Some(parent) = find_path(disk, &self.root, &steps).map_err(io_err("open", &path))?
        else {
            return Ok(false);
        };
        match with_writable(disk, &parent, || disk.unlink(parent.fd(), name, true)) {
            Ok(()) => Ok(true),
            Err(e) if is_busy_or_gone(&e) => Ok(false),
            Err(e) => Err(io_err("remove", &path)(e)),
        }
    }
}

/// A folder that is not empty, not there, or held open by another process (Windows): left as
/// it is.
fn is_busy_or_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || crate::platform::is(e, &[errno::ENOTEMPTY, errno::EEXIST, errno::EHELD])
}

/// The items of a quarantine folder, oldest first, each with its allocated bytes.
fn quarantined_in(q: &Dir) -> Result<Vec<(String, u64)>, StoreError> {
    let mut names = q.names().map_err(io_err("read directory", q.path()))?;
    names.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(names
        .into_iter()
        .map(|(name, _)| {
            let allocated = allocated_at(q, &name);
            (name, allocated)
        })
        .collect())
}
