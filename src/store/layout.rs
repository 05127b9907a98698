//! Where everything lives under a cache root. Pure path arithmetic: no I/O.
//!
//! ```text
//! <root>/                      0700
//!   index.sqlite3              the index (owned by index/)
//!   lock                       advisory lock: shared for use, exclusive for gc
//!   origins/<origin>/sha256/<2 hex>/<62 hex>   blobs 0444, directories 0555
//!   tmp/                       staging for publishes
//!   quarantine/                bytes that failed verification
//! ```

use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::origin::Origin;

/// Paths under one cache root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of `root`.
    #[must_use]
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_owned(),
        }
    }
    /// The cache root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The `SQLite` index file.
    #[must_use]
    pub fn index_db(&self) -> PathBuf {
        self.root.join("index.sqlite3")
    }
    /// The advisory lock file.
    #[must_use]
    pub fn lock_file(&self) -> PathBuf {
        self.root.join("lock")
    }
    /// The folder of all origins' stores.
    #[must_use]
    pub fn origins(&self) -> PathBuf {
        self.root.join("origins")
    }
    /// One origin's store: the origin is recoverable from this path alone (R-O2).
    #[must_use]
    pub fn origin_dir(&self, origin: &Origin) -> PathBuf {
        self.origins().join(origin.path_component())
    }
    /// The folder holding a blob.
    #[must_use]
    pub fn blob_dir(&self, origin: &Origin, digest: &Digest) -> PathBuf {
        self.origin_dir(origin)
            .join("sha256")
            .join(&digest.hex()[..2])
    }
    /// A blob's path.
    #[must_use]
    pub fn blob_path(&self, origin: &Origin, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.origin_dir(origin)
            .join("sha256")
            .join(&hex[..2])
            .join(&hex[2..])
    }
    /// Staging for publishes.
    #[must_use]
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    /// Bytes that failed verification.
    #[must_use]
    pub fn quarantine(&self) -> PathBuf {
        self.root.join("quarantine")
    }

    /// The (origin, digest) a blob path names, if it is one of this layout's blob paths.
    #[must_use]
    pub fn parse_blob_path(&self, path: &Path) -> Option<(Origin, Digest)> {
        let rel = path.strip_prefix(self.origins()).ok()?;
        let parts: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
        let [origin, "sha256", aa, rest] = parts.as_slice() else {
            return None;
        };
        let digest = format!("sha256:{aa}{rest}").parse().ok()?;
        let origin = Origin::from_path_component(origin)?;
        (aa.len() == 2).then_some((origin, digest))
    }
}
