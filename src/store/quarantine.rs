//! Quarantine: bytes that failed verification are moved aside, never served, kept for
//! inspection, and bounded (R-V8).

use std::fs;
use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use super::BlobStore;
use super::dirs::{io_err, remove_tree, with_writable};
use crate::digest::Digest;
use crate::error::Error;
use crate::origin::Origin;

/// The most items kept in `quarantine/`; the oldest go first.
pub const MAX_QUARANTINED: usize = 64;

impl BlobStore {
    /// Moves the blob `digest` of `origin` (whatever it has become: a file, a link, a folder)
    /// into `quarantine/`. Missing is fine.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be moved.
    pub fn quarantine(&self, origin: &Origin, digest: &Digest) -> Result<(), Error> {
        let from = self.layout.blob_path(origin, digest);
        let dir = self.layout.blob_dir(origin, digest);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let to = self.layout.quarantine().join(format!(
            "{nanos:024}-{}-{}",
            origin.path_component(),
            digest.hex()
        ));
        let moved = with_writable(&dir, || match fs::rename(&from, &to) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        });
        match moved {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err("quarantine", &from)(e)),
        }
        self.bound_quarantine();
        Ok(())
    }

    fn bound_quarantine(&self) {
        let Ok(entries) = fs::read_dir(self.layout.quarantine()) else {
            return;
        };
        let mut names: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        if names.len() <= MAX_QUARANTINED {
            return;
        }
        names.sort();
        for old in &names[..names.len() - MAX_QUARANTINED] {
            let _ = remove_tree(old);
            let _ = fs::remove_file(old);
        }
    }

    /// The number of items in quarantine.
    #[must_use]
    pub fn quarantined(&self) -> usize {
        fs::read_dir(self.layout.quarantine()).map_or(0, Iterator::count)
    }
}
