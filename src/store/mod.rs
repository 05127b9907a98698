//! The blob store: verified bytes on disk, by origin and digest. Knows nothing of SQL.
//!
//! - `layout`: pure path arithmetic, including the reversible origin encoding (R-O2).
//! - `dirs`: the read-only directory discipline (0555, writable only for the instant of an add).
//! - `publish`: write to `tmp/` while hashing, fsync, link into place without clobbering (R-C3).
//! - `read`: the verified read under each isolation policy (R-C2, R-V2).
//! - `quarantine`: where bytes that failed verification go; bounded (R-V8).
//! - `lock`: the advisory lock file that keeps `gc` from racing publishers.
//! - `walk`: enumerating blobs for `verify` and `gc`, and removing them.

mod dirs;
mod layout;
mod lock;
mod publish;
mod quarantine;
mod read;
mod walk;

pub use layout::Layout;
pub use lock::{LockGuard, LockMode};
pub use read::{BlobRead, Evidence, Isolation};
pub use walk::StoredBlob;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::Error;

/// The content-addressed blob store under one cache root.
#[derive(Debug)]
pub struct BlobStore {
    layout: Layout,
    /// The uid that owns the root: blobs owned by anyone else are not evidence of isolation.
    owner_uid: u32,
}

impl BlobStore {
    /// Opens the store under an existing root, creating its folders (0700).
    ///
    /// # Errors
    /// [`Error::Io`] if the folders cannot be created.
    pub fn open(root: &Path) -> Result<BlobStore, Error> {
        let layout = Layout::new(root);
        for dir in [layout.origins(), layout.tmp(), layout.quarantine()] {
            dirs::create_private(&dir)?;
        }
        let owner_uid = fs::metadata(root)
            .map_err(|source| Error::Io {
                op: "stat",
                path: root.to_owned(),
                source,
            })?
            .uid();
        Ok(BlobStore { layout, owner_uid })
    }

    /// The layout of this store.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}
