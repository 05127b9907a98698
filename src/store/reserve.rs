//! A reserve of free space under the root, given back when the disk is full (R-H5).
//!
//! Deleting rows is itself a write for `SQLite` (the write-ahead log grows before the space is
//! reclaimed), so on a disk with no byte left, `gc` and `purge` — the very operations that free
//! space — could not commit. The store therefore keeps a small file of zeros; when the index
//! reports a full disk, the cache gives it back, commits, and takes it again afterwards.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::platform::{self, Kind};

use super::BlobStore;

/// Staging names unique per process and call.
static STAGED: AtomicU64 = AtomicU64::new(0);

/// The reserve's name under the root.
pub(crate) const RESERVE: &str = "reserve";
/// Its size: room for the log of a purge or gc transaction of hundreds of rows (a larger one
/// frees blobs first).
pub const RESERVE_BYTES: u64 = 256 * 1024;

impl BlobStore {
    /// Whether the filesystem under the root has room for `bytes` more beside the reserve and
    /// a margin for the index (and is not mounted read-only); true when the system will not
    /// say. What decides whether a publish may be left behind a load (write-behind): where it
    /// would fail, the load publishes itself, and says truly that it kept no copy.
    pub(crate) fn has_room_for(&self, bytes: u64) -> bool {
        const MARGIN: u64 = 1 << 20;
        platform::room(self.root.fd()).is_none_or(|(free, read_only)| {
            !read_only && free >= bytes.saturating_mul(2).saturating_add(RESERVE_BYTES + MARGIN)
        })
    }

    /// Makes sure the reserve is there (best effort: a read-only or full disk has no room for
    /// it, and nothing depends on it but the next full-disk maintenance). Its bytes need no sync:
    /// writing them is what takes the space, and a reserve lost in a crash is made again.
    pub(crate) fn keep_reserve(&self) -> bool {
        let present = platform::stat_at(self.root.fd(), RESERVE)
            .is_ok_and(|st| st.kind == Kind::File && st.size == RESERVE_BYTES);
        if present {
            return true;
        }
        let staging = format!(
            "{RESERVE}.tmp-{}-{}",
            std::process::id(),
            STAGED.fetch_add(1, Ordering::Relaxed)
        );
        let disk = self.disk.as_ref();
        let made = (|| -> io::Result<()> {
            let mut f = disk.create(self.root.fd(), &staging, 0o600)?;
            let zeros = vec![0u8; 64 * 1024];
            for _ in 0..RESERVE_BYTES / 64 / 1024 {
                disk.write(&mut f, &zeros)?;
            }
            // A link or anything else planted under the name is replaced, never followed.
            disk.rename(self.root.fd(), &staging, self.root.fd(), RESERVE)
        })();
        if let Err(e) = &made {
            let _ = disk.unlink(self.root.fd(), &staging, false);
            tracing::debug!(error = %e, "no room for the cache's reserve");
        }
        made.is_ok()
    }

    /// Gives the reserve back to the filesystem. Whether there was one to give.
    pub(crate) fn release_reserve(&self) -> bool {
        self.disk.unlink(self.root.fd(), RESERVE, false).is_ok()
    }
}
