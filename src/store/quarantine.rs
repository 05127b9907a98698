//! Quarantine: bytes that failed verification are moved aside, never served, kept for
//! inspection, and bounded (R-V8). Each origin has its own quarantine inside its store, so purging
//! the origin removes them too (R-H9).

use std::time::{SystemTime, UNIX_EPOCH};

use super::handle::{Dir, PRIVATE_DIR, Parent, ensure_dir, find_path, remove_tree, with_writable};
use super::layout::{ORIGINS, QUARANTINE, SHA256};
use super::{BlobStore, io_err};
use crate::digest::Digest;
use super::error::StoreError;
use crate::origin::Origin;

/// The most items kept in one origin's `quarantine/`; the oldest go first.
pub const MAX_QUARANTINED: usize = 64;

impl BlobStore {
    /// Moves the blob `digest` of `origin` (whatever it has become: a file, a link, a folder, a
    /// FIFO) into the origin's `quarantine/`. Missing is fine. Folders on the way that are not
    /// folders are removed (R-H1), which also leaves nothing to move.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if it cannot be moved.
    pub fn quarantine(&self, origin: &Origin, digest: &Digest) -> Result<(), StoreError> {
        let disk = self.disk.as_ref();
        let hex = digest.hex();
        let origin_path = self.layout.origin_dir(origin);
        let Some(odir) = self.origin_folder(origin, &origin_path)?
        else {
            return Ok(());
        };
        let Some(aa) = find_path(
            disk,
            &odir,
            &[(SHA256, Parent::ReadOnly), (&hex[..2], Parent::ReadOnly)],
        )
        .map_err(io_err("open", &origin_path))?
        else {
            return Ok(());
        };
        match crate::platform::stat_at(aa.fd(), &hex[2..]) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err("stat", &aa.join(&hex[2..]))(e)),
            Ok(_) => {}
        }
        let (q, _) = ensure_dir(disk, &odir, Parent::ReadOnly, QUARANTINE, PRIVATE_DIR)
            .map_err(io_err("create", &odir.join(QUARANTINE)))?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let to = format!("{nanos:024}-{hex}");
        let moved = with_writable(disk, &aa, || {
            match disk.rename(aa.fd(), &hex[2..], q.fd(), &to) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            }
        });
        moved.map_err(io_err("quarantine", &aa.join(&hex[2..])))?;
        tracing::warn!(origin = %origin, digest = %digest, to = %q.join(&to).display(), "quarantined a cached blob that failed verification");
        self.bound_quarantine(&q);
        Ok(())
    }

    fn bound_quarantine(&self, q: &Dir) {
        let Ok(mut names) = q.names() else {
            return;
        };
        if names.len() <= MAX_QUARANTINED {
            return;
        }
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (old, _) in &names[..names.len() - MAX_QUARANTINED] {
            let _ = remove_tree(self.disk.as_ref(), q, old);
        }
    }

    /// Removes one quarantined item of `origin` (whatever it is). Missing is fine.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if it cannot be removed.
    pub(crate) fn remove_quarantined(&self, origin: &Origin, name: &str) -> Result<(), StoreError> {
        let Some(q) = self.origin_quarantine(origin)? else {
            return Ok(());
        };
        remove_tree(self.disk.as_ref(), &q, name).map_err(io_err("remove", &q.join(name)))
    }

    fn origin_quarantine(&self, origin: &Origin) -> Result<Option<Dir>, StoreError> {
        let path = self.layout.quarantine(origin);
        find_path(
            self.disk.as_ref(),
            &self.root,
            &[
                (ORIGINS, Parent::Private),
                (origin.path_component(), Parent::Private),
                (QUARANTINE, Parent::ReadOnly),
            ],
        )
        .map_err(io_err("open", &path))
    }

    /// The number of items in quarantine, over every origin.
    #[must_use]
    pub fn quarantined(&self) -> usize {
        let Ok(Some(origins)) = self.root.child(ORIGINS) else {
            return 0;
        };
        let Ok(names) = origins.names() else {
            return 0;
        };
        names
            .iter()
            .filter_map(|(o, _)| origins.child(o).ok().flatten())
            .filter_map(|odir| odir.child(QUARANTINE).ok().flatten())
            .map(|q| q.names().map_or(0, |n| n.len()))
            .sum()
    }
}
