//! Enumerating and removing blobs, for verify, gc and purge.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::BlobStore;
use super::dirs::{io_err, remove_tree, with_writable};
use crate::digest::Digest;
use crate::error::Error;
use crate::origin::Origin;

/// A blob found on disk.
#[derive(Debug, Clone)]
pub struct StoredBlob {
    /// Its origin, recovered from the path (R-O2).
    pub origin: Origin,
    /// Its name.
    pub digest: Digest,
    /// Where it is.
    pub path: PathBuf,
    /// Its length on disk (not a verified size).
    pub len: u64,
}

impl BlobStore {
    /// Every blob on disk (of one origin, or all), and every path under `origins/` that is not a
    /// well-formed blob path (a stray file, an unknown origin encoding).
    ///
    /// # Errors
    /// [`Error::Io`] if a folder cannot be read.
    pub fn blobs(&self, only: Option<&Origin>) -> Result<(Vec<StoredBlob>, Vec<PathBuf>), Error> {
        let mut blobs = Vec::new();
        let mut strays = Vec::new();
        let origins = self.layout.origins();
        let dirs: Vec<PathBuf> = match only {
            Some(o) => vec![self.layout.origin_dir(o)],
            None => read_dir_paths(&origins)?,
        };
        for origin_dir in dirs {
            for algo in read_dir_paths(&origin_dir)? {
                for aa in read_dir_paths(&algo)? {
                    for path in read_dir_paths(&aa)? {
                        match self.layout.parse_blob_path(&path) {
                            Some((origin, digest)) => {
                                let len = fs::symlink_metadata(&path).map_or(0, |m| m.len());
                                blobs.push(StoredBlob {
                                    origin,
                                    digest,
                                    path,
                                    len,
                                });
                            }
                            None => strays.push(path),
                        }
                    }
                }
            }
        }
        Ok((blobs, strays))
    }

    /// Removes one blob. Returns whether it was there.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be removed.
    pub fn remove(&self, origin: &Origin, digest: &Digest) -> Result<bool, Error> {
        let path = self.layout.blob_path(origin, digest);
        let dir = self.layout.blob_dir(origin, digest);
        let removed = with_writable(&dir, || match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => remove_tree(&path).map(|()| true),
            Ok(_) => fs::remove_file(&path).map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        });
        match removed {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            other => other.map_err(io_err("remove", &path)),
        }
    }

    /// Removes an origin's whole blob tree (R-C5).
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be removed.
    pub fn remove_origin(&self, origin: &Origin) -> Result<(), Error> {
        let dir = self.layout.origin_dir(origin);
        remove_tree(&dir).map_err(io_err("remove", &dir))
    }

    /// Removes temporaries older than `age` (a crashed publisher's leftovers). The caller holds
    /// the exclusive lock, so no live publisher owns any of them.
    ///
    /// # Errors
    /// [`Error::Io`] if `tmp/` cannot be read.
    pub fn sweep_tmp(&self, age: Duration) -> Result<usize, Error> {
        let now = SystemTime::now();
        let mut removed = 0;
        for path in read_dir_paths(&self.layout.tmp())? {
            let old = fs::symlink_metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() >= age);
            if old && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

fn read_dir_paths(dir: &std::path::Path) -> Result<Vec<PathBuf>, Error> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(entries.filter_map(Result::ok).map(|e| e.path()).collect()),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(Vec::new())
        }
        Err(e) => Err(io_err("read directory", dir)(e)),
    }
}
