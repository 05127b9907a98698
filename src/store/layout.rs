//! Where everything lives under a cache root. Pure path arithmetic: no I/O.
//!
//! ```text
//! <root>/                      0700 when we create it; never chmodded otherwise (R-H2)
//!   CACHEDIR.TAG               the marker that makes a folder ours (and tells backups to skip it)
//!   index.sqlite3              the index (owned by index/)
//!   lock                       advisory lock: shared for use, exclusive for gc
//!   sections/<origin>          0600 lock files, one per origin: its publishers take turns (R-Q4)
//!   origins/<origin>/          0555, one per origin (R-O2); everything of an origin is below it
//!     sha256/<2 hex>/<62 hex>  blobs 0444, folders 0555
//!     tmp/                     0700, staging for publishes
//!     quarantine/              0700, bytes that failed verification (R-H9: purge removes them)
//! ```
//!
//! The store itself opens these folders from the root's descriptor, one component at a time
//! (`store::handle`); the absolute paths here are for messages, tools and tests.

use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::origin::Origin;

/// The folder of all origins' stores, under the root.
pub(crate) const ORIGINS: &str = "origins";
/// The folder of the origins' publish-section locks, under the root (R-Q4).
pub(crate) const SECTIONS: &str = "sections";
/// The digest algorithm's folder in an origin's store.
pub(crate) const SHA256: &str = "sha256";
/// An origin's staging folder.
pub(crate) const TMP: &str = "tmp";
/// An origin's quarantine folder.
pub(crate) const QUARANTINE: &str = "quarantine";
/// The marker file of a cache root (<https://bford.info/cachedir/>).
pub(crate) const CACHEDIR_TAG: &str = "CACHEDIR.TAG";
/// The first bytes a `CACHEDIR.TAG` must have.
pub(crate) const CACHEDIR_SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";

/// A blob's path relative to the root: `origins/<origin>/sha256/<2 hex>/<62 hex>`. One
/// allocation; the hot path opens it with one `openat2` from the root's descriptor.
#[must_use]
pub(crate) fn blob_rel(origin: &Origin, digest: &Digest) -> String {
    let mut buf = [0u8; 64];
    let hex = digest.write_hex(&mut buf);
    let comp = origin.path_component();
    let mut s = String::with_capacity(ORIGINS.len() + comp.len() + SHA256.len() + 68);
    for part in [
        ORIGINS,
        "/",
        comp,
        "/",
        SHA256,
        "/",
        &hex[..2],
        "/",
        &hex[2..],
    ] {
        s.push_str(part);
    }
    s
}

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
    internal_pub! {
        /// The advisory lock file.
        #[must_use]
        fn lock_file(&self) -> PathBuf {
            self.root.join("lock")
        }
    }
    /// The folder of all origins' stores.
    #[must_use]
    pub fn origins(&self) -> PathBuf {
        self.root.join(ORIGINS)
    }
    /// One origin's store: the origin is recoverable from this path alone (R-O2).
    #[must_use]
    pub fn origin_dir(&self, origin: &Origin) -> PathBuf {
        self.origins().join(origin.path_component())
    }
    internal_pub! {
        /// The folder holding a blob.
        #[must_use]
        fn blob_dir(&self, origin: &Origin, digest: &Digest) -> PathBuf {
            self.origin_dir(origin)
                .join(SHA256)
                .join(&digest.hex()[..2])
        }
    }
    /// A blob's path.
    #[must_use]
    pub fn blob_path(&self, origin: &Origin, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.origin_dir(origin)
            .join(SHA256)
            .join(&hex[..2])
            .join(&hex[2..])
    }
    internal_pub! {
        /// One origin's staging for publishes.
        #[must_use]
        fn tmp(&self, origin: &Origin) -> PathBuf {
            self.origin_dir(origin).join(TMP)
        }
    }
    internal_pub! {
        /// One origin's bytes that failed verification.
        #[must_use]
        fn quarantine(&self, origin: &Origin) -> PathBuf {
            self.origin_dir(origin).join(QUARANTINE)
        }
    }

    internal_pub! {
        /// The (origin, digest) a blob path names, if it is one of this layout's blob paths.
        #[must_use]
        fn parse_blob_path(&self, path: &Path) -> Option<(Origin, Digest)> {
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
}
