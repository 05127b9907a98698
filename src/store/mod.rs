//! The blob store: verified bytes on disk, by origin and digest. Knows nothing of SQL.
//!
//! - `layout`: pure path arithmetic, including the reversible origin encoding (R-O2).
//! - `disk`: the one narrow seam every write goes through (real, or fault-injecting in tests).
//! - `handle`: folders opened from the root's descriptor without following links (R-H1).
//! - `publish`: write a temporary while hashing, fsync, link into place without clobbering (R-C3).
//! - `read`: the verified read under each isolation policy (R-C2, R-V2, R-H4, R-H7).
//! - `map`: the one `unsafe` module: a read-only map of a large blob for a `Guaranteed` hit.
//! - `quarantine`: where bytes that failed verification go, per origin; bounded (R-V8, R-H9).
//! - `lock`: the advisory lock file that keeps `gc` from racing publishers; bounded waits (R-H11).
//! - `reserve`: free space kept back for gc and purge on a full disk (R-H5).
//! - `walk`: enumerating, checking and removing blobs for `verify`, `gc` and `purge` (R-H8).
//! - `usage`: what one origin's folder costs on disk, for the quota (R-Q4, K2); `space`: the
//!   allocated-bytes and block-size calls it rests on (the platform-specific part).

mod disk;
pub(crate) mod error;
pub(crate) mod handle;
mod held;
mod layout;
mod lock;
// The crate's only `unsafe`: mapping a blob read-only (issue 12); see its SAFETY argument.
#[allow(unsafe_code)]
mod map;
mod publish;
mod quarantine;
mod read;
mod reserve;
mod space;
mod usage;
mod walk;

pub use disk::{Disk, RealDisk};
#[cfg(any(test, feature = "fault-injection"))]
pub use disk::{Fault, FaultyDisk};
pub use layout::Layout;
pub(crate) use layout::{CACHEDIR_SIGNATURE, CACHEDIR_TAG};
// The shared tier keys its objects like the store names its blobs (issue 14).
#[cfg(feature = "l2")]
pub(crate) use layout::blob_rel;
pub use lock::LockMode;
pub use publish::Item;
#[cfg(test)]
pub(crate) use publish::FILESYSTEM_SYNC_MIN_FILES;
#[cfg(test)]
pub(crate) use disk::filesystem_sync_is_durable;
pub use read::{BlobRead, Evidence, Isolation};
internal_pub! {
    // The size above which a `Guaranteed` hit is mapped, for the benches.
    use read::MAP_ABOVE;
}
pub use walk::BlobCheck;
pub(crate) use space::in_blocks;
#[cfg(test)]
pub(crate) use space::block_size;
pub(crate) use usage::Usage;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::error::StoreError;
use handle::Dir;

/// How long a caller waits for the cache's lock before it is an error (R-H11).
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The content-addressed blob store under one cache root.
#[derive(Debug)]
pub struct BlobStore {
    layout: Layout,
    /// The root, opened once: every folder below it is reached from this descriptor (R-H1).
    root: Dir,
    /// Every write goes through here.
    disk: Arc<dyn Disk>,
    /// The uid that owns the root: blobs owned by anyone else are not evidence of isolation.
    owner_uid: u32,
    lock_timeout: Duration,
    /// The filesystem's allocation unit under the root: what a new folder and a file's last
    /// partial block cost (R-Q4, K2).
    block: u64,
    /// When a wait for the lock last ran out (R-H11: later waits in that window are one try).
    lock_stalled: std::sync::Mutex<Option<std::time::Instant>>,
    /// Each origin's blob folder, held after a hit: a shortcut for the next read (`held`).
    held: held::HeldFolders,
}

impl BlobStore {
    /// `origin`'s folder (`origins/<origin>`), reached without following a link; `None` if it
    /// is not there. `path` names it in an error.
    ///
    /// # Errors
    /// [`StoreError::Io`] if a folder on the way cannot be opened.
    pub(crate) fn origin_folder(
        &self,
        origin: &crate::origin::Origin,
        path: &std::path::Path,
    ) -> Result<Option<handle::Dir>, StoreError> {
        handle::find_path(
            self.disk.as_ref(),
            &self.root,
            &[
                (layout::ORIGINS, handle::Parent::Private),
                (origin.path_component(), handle::Parent::Private),
            ],
        )
        .map_err(io_err("open", path))
    }
}

impl BlobStore {
    /// Opens the store under a root the caller has checked and opened (`root` is its handle).
    /// Nothing is written: folders are made when the first blob is published (R-H5).
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if the root cannot be examined.
    pub(crate) fn open(
        root: Dir,
        disk: Arc<dyn Disk>,
        lock_timeout: Duration,
    ) -> Result<BlobStore, StoreError> {
        let path = root.path().to_owned();
        let owner_uid = crate::platform::fstat(root.fd())
            .map_err(|source| StoreError::Io {
                op: "stat",
                path: path.clone(),
                source,
            })?
            .uid;
        let block = space::block_size(root.fd());
        Ok(BlobStore {
            layout: Layout::new(&path),
            root,
            disk,
            owner_uid,
            lock_timeout,
            block,
            lock_stalled: std::sync::Mutex::new(None),
            held: held::HeldFolders::default(),
        })
    }

    /// The layout of this store.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Removes anything but a regular file planted under the index's file names (the database,
    /// its write-ahead log, shared memory and journal), so that `SQLite`, which opens them by
    /// path, never follows a link out of the root (R-H1).
    ///
    /// # Errors
    /// [`StoreError::RootRefused`](StoreError::RootRefused) if one of them is a regular file with
    /// another name ([`handle::scrub_to_files`] says why it is neither removed nor used);
    /// [`StoreError::Io`](StoreError::Io) if one cannot be examined or removed.
    pub(crate) fn scrub_index_files(&self) -> Result<(), StoreError> {
        let db = self.layout.index_db();
        let name = db
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("index.sqlite3");
        let names = [
            name.to_owned(),
            format!("{name}-wal"),
            format!("{name}-shm"),
            format!("{name}-journal"),
        ];
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        match handle::scrub_to_files(self.disk.as_ref(), &self.root, &names) {
            Ok(None) => Ok(()),
            Ok(Some(shared)) => Err(StoreError::RootRefused {
                root: self.layout.root().to_owned(),
                why: INDEX_FILE_SHARED,
                path: self.root.join(shared),
            }),
            Err(e) => Err(io_err("check", &db)(e)),
        }
    }

    /// The filesystem's allocation unit under the root (R-Q4, K2): a new folder costs one, and a
    /// new file its length rounded up to whole ones.
    pub(crate) fn block(&self) -> u64 {
        self.block
    }

    /// The seam writes go through (the cache announces index commits on it too).
    pub(crate) fn disk(&self) -> &dyn Disk {
        self.disk.as_ref()
    }
}

/// Why an index file with a second name is refused, not removed and not written (round 30 of
/// review, B); the path follows.
const INDEX_FILE_SHARED: &str = "an index file has another name too (a hard-link copy, as `cp -al` makes?): SQLite writes it in place, which would change the file under that name as well, and skillcache never removes an index that may be in use. Give the copy a file of its own (`cp` without `-l`) or remove the other name, then open the cache again:";

pub(crate) fn io_err<'p>(
    op: &'static str,
    path: &'p Path,
) -> impl FnOnce(std::io::Error) -> StoreError + 'p {
    move |source| StoreError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}
