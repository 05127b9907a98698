//! The verified read (R-C2, R-V2): cached bytes leave the store only through here.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::platform::{self, AsFd as _, Kind, Stat, errno};

use super::layout::blob_rel;
use super::{BlobStore, io_err};
use crate::digest::Digest;
use crate::verify::VerifiedBytes;
use super::error::StoreError;
use crate::mismatch::Mismatch;
pub use crate::isolation::Isolation;
use crate::origin::Origin;

/// What the store recorded about a blob when it published it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evidence {
    /// The inode number.
    pub ino: u64,
    /// The device.
    pub dev: u64,
    /// The change time in nanoseconds since the epoch; any write, chmod or link changes it.
    pub ctime_ns: i64,
    /// Whether a hashed read, made once the change time had settled, found the bytes intact
    /// under exactly this evidence (R-H4). Only confirmed evidence replaces hashing.
    ///
    /// Why: file times tick coarsely (a few milliseconds). A write in the same tick as the
    /// publish leaves the change time as recorded, so evidence taken at publish cannot tell that
    /// write from no write. Once the wall clock is well past the recorded change time, any later
    /// write moves it; a hashed read made after that point covers every earlier write.
    pub confirmed: bool,
}

/// From this size up, a [`Isolation::Guaranteed`] hit whose confirmed evidence holds is a
/// read-only map of the blob instead of a private copy (issue 12): the hit costs the same at any
/// size. Below it a copy is cheaper, because a map costs a few system calls and a page fault per
/// page touched while a copy of a small file is one `read` (measured: `cache_hit/map_crossover`
/// in `benches/cache_hit.rs`; docs/performance.md).
pub const MAP_ABOVE: u64 = 2 << 20;

/// How far the wall clock must be past a blob's change time before a hashed read can confirm
/// its evidence: many timestamp ticks, so no later write can share the recorded change time.
const SETTLE_NS: i64 = 100_000_000;

impl Evidence {
    /// Unconfirmed evidence of the file `meta` describes.
    pub(super) fn of(meta: &Stat) -> Evidence {
        Evidence {
            ino: meta.ino,
            dev: meta.dev,
            ctime_ns: meta.ctime_ns,
            confirmed: false,
        }
    }

    /// Whether `meta` describes the file this evidence was taken of, unchanged since.
    fn matches(&self, meta: &Stat) -> bool {
        let now = Evidence::of(meta);
        (now.ino, now.dev, now.ctime_ns) == (self.ino, self.dev, self.ctime_ns)
    }

    pub(super) fn of_fd(file: &File) -> io::Result<Evidence> {
        Ok(Evidence::of(&platform::fstat(file.as_fd())?))
    }
}

/// What may not move while a `Guaranteed` read trusts evidence instead of hashing (R-H4): the
/// same inode, the same length, and no change or modification since the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Snapshot {
    ino: u64,
    dev: u64,
    size: u64,
    ctime_ns: i64,
    mtime_ns: i64,
}

impl Snapshot {
    fn of(meta: &Stat) -> Snapshot {
        Snapshot {
            ino: meta.ino,
            dev: meta.dev,
            size: meta.size,
            ctime_ns: meta.ctime_ns,
            mtime_ns: meta.mtime_ns,
        }
    }
}

/// The outcome of a verified read.
#[derive(Debug)]
pub enum BlobRead {
    /// The bytes, verified against the expected size and digest.
    Verified(VerifiedBytes),
    /// No blob under that digest: fetch it.
    Missing,
    /// Something is there, but it is not the expected bytes. It must not be used (R-V8).
    Failed(Mismatch),
    /// The bytes, verified by hashing, and the evidence they were read under is now confirmed
    /// (R-H4): remember it, and later reads may skip hashing while it holds.
    Confirmed(VerifiedBytes, Evidence),
}

impl BlobStore {
    /// Reads the blob `digest` of `origin` and verifies it against `size` and `digest` under
    /// `isolation` (R-C2). The returned buffer is private: nothing that happens to the file after
    /// this call can change what the caller holds.
    ///
    /// The file is opened from the root's descriptor with one `openat2` that follows no link
    /// (R-H1) and does not block on a FIFO (R-H7). Anything under the name that is not a regular
    /// file we can read — a link, a FIFO, a socket, a device, a folder, an unreadable file — is
    /// [`BlobRead::Failed`], exactly like tampered bytes: the caller quarantines it and fetches
    /// once (R-V9).
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) for I/O failures other than "not there" and "not a blob".
    pub fn read(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        isolation: Isolation,
        evidence: Option<Evidence>,
    ) -> Result<BlobRead, StoreError> {
        let rel = blob_rel(origin, digest);
        // `origins/<origin>/sha256` and `<2 hex>/<62 hex>`: the digest's 64 hex digits end it.
        let (folder, in_folder) = (&rel[..rel.len() - 66], &rel[rel.len() - 65..]);
        if let Some(held) = self.held.get(origin) {
            // A shortcut to a hit only (`store::held`): anything else is read again from the
            // root, which alone decides a miss, a failure or an error.
            let hit = crate::beneath::open_file(held.as_fd(), Path::new(in_folder))
                .ok()
                .and_then(|file| self.read_opened(&file, digest, size, isolation, evidence, &rel).ok())
                .filter(is_hit);
            if let Some(hit) = hit {
                return Ok(hit);
            }
            self.held.drop_origin(origin);
        }
        let file = match self.root.open_file_beneath(&rel) {
            Ok(f) => f,
            Err(e) => {
                return open_failure(e).map_err(|e| io_err("open", &self.layout.root().join(&rel))(e));
            }
        };
        let read = self.read_opened(&file, digest, size, isolation, evidence, &rel)?;
        if crate::platform::HOLD_FOLDERS
            && is_hit(&read)
            && let Ok(fd) = crate::platform::open_dir_beneath(self.root.fd(), Path::new(folder))
        {
            self.held.hold(origin, fd);
        }
        Ok(read)
    }

    /// [`BlobStore::read`] of the blob opened as `file` (`rel` names it in an error).
    fn read_opened(
        &self,
        file: &File,
        digest: &Digest,
        size: u64,
        isolation: Isolation,
        evidence: Option<Evidence>,
        rel: &str,
    ) -> Result<BlobRead, StoreError> {
        let path = || self.layout.root().join(rel);
        // Only the isolated policy needs the metadata; re-hashing needs no fstat: the length is
        // checked on the bytes read, before any hashing (R-V3).
        let before = match (isolation, evidence) {
            (Isolation::Guaranteed, Some(ev)) => {
                match self.before_read(file, ev, size).map_err(|e| io_err("stat", &path())(e))? {
                    Ok(before) => before,
                    Err(m) => return Ok(BlobRead::Failed(m)),
                }
            }
            _ => None,
        };
        if let Some(b) = before
            && b.ev.confirmed
            && size >= MAP_ABOVE
            && let Some(mapped) = map_if_still(file, b.snap, size)
        {
            // C2(b) without a copy: the same evidence, held before and after the map was made.
            return Ok(verified_or_failed(VerifiedBytes::mapped(mapped, size, *digest)));
        }
        let read = if before.is_some_and(|b| b.ev.confirmed) {
            read_on_evidence(file, before, size, *digest)
        } else {
            read_hashed(file, before, size, *digest)
        };
        read.or_else(|e| not_a_blob(e).map_err(|e| io_err("read", &path())(e)))
    }

    /// The evidence seen before a `Guaranteed` read: `Ok(Some(..))` when it holds,
    /// `Ok(None)` when it does not (the bytes are then hashed), `Err` for a file that is not the
    /// blob at all (not a regular file, another size).
    fn before_read(
        &self,
        file: &std::fs::File,
        ev: Evidence,
        size: u64,
    ) -> io::Result<Result<Option<Before>, Mismatch>> {
        let meta = platform::fstat(file.as_fd())?;
        if meta.kind != Kind::File {
            return Ok(Err(Mismatch::NotARegularFile));
        }
        let len = meta.size;
        if len != size {
            return Ok(Err(Mismatch::Size {
                expected: size,
                actual: len,
            }));
        }
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Ok(Ok(self.evidence_holds(&meta, ev, size).then(|| Before {
            snap: Snapshot::of(&meta),
            ev,
            wall,
        })))
    }

    fn evidence_holds(&self, meta: &Stat, ev: Evidence, size: u64) -> bool {
        meta.uid == self.owner_uid
            && meta.mode & 0o222 == 0
            && meta.nlink == 1
            && meta.size == size
            && ev.matches(meta)
    }
}

/// A read-only map of `file` if it still matches `snap` once mapped (R-H4: a file that moved
/// between the check and the map is read and hashed instead); `None` to fall back to a copy.
fn map_if_still(file: &File, snap: Snapshot, size: u64) -> Option<bytes::Bytes> {
    let mapped = super::map::map_read_only(file, size).ok()?;
    platform::fstat(file.as_fd())
        .is_ok_and(|after| Snapshot::of(&after) == snap)
        .then_some(mapped)
}

/// What a failed read of an opened blob name means: a folder (`EISDIR`) or a FIFO with no data
/// (`EAGAIN`, opened `O_NONBLOCK`) is not a blob (R-H7); anything else is an I/O error.
fn not_a_blob(e: io::Error) -> io::Result<BlobRead> {
    if matches!(
        e.kind(),
        io::ErrorKind::IsADirectory | io::ErrorKind::WouldBlock
    ) {
        Ok(BlobRead::Failed(Mismatch::NotARegularFile))
    } else {
        Err(e)
    }
}

/// The evidence a `Guaranteed` read started from, as it held before the read.
#[derive(Clone, Copy)]
struct Before {
    snap: Snapshot,
    ev: Evidence,
    /// The wall clock then, to tell whether the file's change time had settled (R-H4).
    wall: i64,
}

/// Whether a read gave verified bytes.
fn is_hit(read: &BlobRead) -> bool {
    matches!(read, BlobRead::Verified(_) | BlobRead::Confirmed(..))
}

fn verified_or_failed(checked: Result<VerifiedBytes, Mismatch>) -> BlobRead {
    match checked {
        Ok(v) => BlobRead::Verified(v),
        Err(m) => BlobRead::Failed(m),
    }
}

/// The bytes, hashed whatever the metadata says: one pass that hashes each chunk as it is read.
/// Evidence seen before is confirmed only by a hashed read of a file that did not move (R-H4).
fn read_hashed(
    file: &std::fs::File,
    before: Option<Before>,
    size: u64,
    digest: Digest,
) -> io::Result<BlobRead> {
    let checked = VerifiedBytes::read_checked(file, size, digest)?;
    let still = before.filter(|b| platform::fstat(file.as_fd()).is_ok_and(|after| Snapshot::of(&after) == b.snap));
    Ok(match checked {
        Ok(v) => match still {
            // Hashed intact under evidence whose change time had settled: confirmed.
            Some(b) if b.wall.saturating_sub(b.snap.ctime_ns) >= SETTLE_NS => BlobRead::Confirmed(
                v,
                Evidence {
                    confirmed: true,
                    ..b.ev
                },
            ),
            _ => BlobRead::Verified(v),
        },
        Err(m) => BlobRead::Failed(m),
    })
}

/// The bytes on confirmed evidence (C2(b)). The evidence was checked before the read; a writer
/// that changed the file while we read it moves its size, ctime or mtime, so only bytes read
/// from a file that did not move are taken on evidence; anything else is hashed (R-H4).
fn read_on_evidence(
    file: &std::fs::File,
    before: Option<Before>,
    size: u64,
    digest: Digest,
) -> io::Result<BlobRead> {
    // `size` bytes, not `size + 1`: the descriptor said `size` before the read, and says it
    // again after it with the same change and modification times, so there was no byte more to
    // find (one `read` a hit, not two, and a buffer exactly full: no copy to hand it out).
    let mut bytes = read_at_most_exactly(file, size)?;
    let still = before.is_some_and(|b| {
        platform::fstat(file.as_fd()).is_ok_and(|after| Snapshot::of(&after) == b.snap)
    });
    Ok(verified_or_failed(if still {
        VerifiedBytes::by_isolation(bytes, size, digest)
    } else {
        // The file moved: hashed, and one byte more looked for, as any hashed read (R-V3).
        file.take(1).read_to_end(&mut bytes)?;
        VerifiedBytes::check(bytes, size, digest)
    }))
}

/// Reads up to `size` bytes into a buffer of exactly that capacity (never more than 64 MiB
/// reserved up front, whatever a size says).
fn read_at_most_exactly(file: &File, size: u64) -> io::Result<Vec<u8>> {
    let cap = usize::try_from(size).unwrap_or(usize::MAX).min(64 << 20);
    let mut buf = Vec::with_capacity(cap);
    file.take(size).read_to_end(&mut buf)?;
    Ok(buf)
}

/// What a failed open of a blob name means (R-H7).
pub(super) fn open_failure(e: io::Error) -> io::Result<BlobRead> {
    // Nothing there, or debris where a folder belongs (the next publish repairs it).
    if platform::is(&e, &[errno::ENOENT, errno::ENOTDIR]) {
        return Ok(BlobRead::Missing);
    }
    // A link anywhere on the way (RESOLVE_NO_SYMLINKS / O_NOFOLLOW), a socket (ENXIO), a device
    // without a driver, a file we may not read, a name that would leave the root: whatever it
    // is, it is not a blob.
    let not_a_blob = [
        errno::ELOOP,
        errno::ENXIO,
        errno::ENODEV,
        errno::EACCES,
        errno::EPERM,
        errno::EXDEV,
        errno::EAGAIN,
    ];
    if platform::is(&e, &not_a_blob) {
        return Ok(BlobRead::Failed(Mismatch::NotARegularFile));
    }
    Err(e)
}
