//! The verified read (R-C2, R-V2): cached bytes leave the store only through here.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use super::BlobStore;
use super::dirs::io_err;
use crate::digest::{Digest, VerifiedBytes};
use crate::error::{Error, Mismatch};
use crate::origin::Origin;

/// How cached files are checked on every access (R-C2). The host chooses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Re-hash the cached bytes on every access and compare with the entry (the default).
    #[default]
    Rehash,
    /// The host declares that only it can write the cache. The store skips hashing when the
    /// evidence it can see holds — a regular file opened without following a symlink, owned by
    /// the cache owner, no write bits, one link, the expected size, and the inode and ctime
    /// recorded at publish — and re-hashes when any of it is off.
    Guaranteed,
}

/// What the store recorded about a blob when it published it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evidence {
    /// The inode number.
    pub ino: u64,
    /// The device.
    pub dev: u64,
    /// The change time in nanoseconds since the epoch; any write, chmod or link changes it.
    pub ctime_ns: i64,
}

impl Evidence {
    pub(super) fn of(meta: &Metadata) -> Evidence {
        Evidence {
            ino: meta.ino(),
            dev: meta.dev(),
            ctime_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
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
}

impl BlobStore {
    /// Reads the blob `digest` of `origin` and verifies it against `size` and `digest` under
    /// `isolation` (R-C2). The returned buffer is private: nothing that happens to the file after
    /// this call can change what the caller holds.
    ///
    /// # Errors
    /// [`Error::Io`] for I/O failures other than "not there".
    pub fn read(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        isolation: Isolation,
        evidence: Option<Evidence>,
    ) -> Result<BlobRead, Error> {
        let path = self.layout.blob_path(origin, digest);
        let file = match open_no_follow(&path) {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(BlobRead::Missing);
            }
            // O_NOFOLLOW on a symlink: ELOOP. A link is never a blob, whatever it points at.
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Ok(BlobRead::Failed(Mismatch::NotARegularFile));
            }
            Err(e) => return Err(io_err("open", &path)(e)),
        };
        // Only the isolated policy needs the metadata; re-hashing needs no fstat: the length is
        // checked on the bytes read, before any hashing (R-V3).
        let trusted = match (isolation, evidence) {
            (Isolation::Guaranteed, Some(ev)) => {
                let meta = file.metadata().map_err(io_err("stat", &path))?;
                if !meta.is_file() {
                    return Ok(BlobRead::Failed(Mismatch::NotARegularFile));
                }
                if meta.len() != size {
                    return Ok(BlobRead::Failed(Mismatch::Size {
                        expected: size,
                        actual: meta.len(),
                    }));
                }
                self.evidence_holds(&meta, ev, size)
            }
            _ => false,
        };
        let bytes = match read_at_most(file, size) {
            Ok(b) => b,
            // A folder (EISDIR) or a FIFO with no writer (EAGAIN, opened O_NONBLOCK): not a blob.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::IsADirectory | io::ErrorKind::WouldBlock
                ) =>
            {
                return Ok(BlobRead::Failed(Mismatch::NotARegularFile));
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let checked = if trusted {
            // C2(b): the host guarantees write isolation and every piece of evidence holds.
            VerifiedBytes::by_isolation(bytes, size, *digest)
        } else {
            VerifiedBytes::check(bytes, size, *digest)
        };
        Ok(match checked {
            Ok(v) => BlobRead::Verified(v),
            Err(m) => BlobRead::Failed(m),
        })
    }

    fn evidence_holds(&self, meta: &Metadata, ev: Evidence, size: u64) -> bool {
        meta.uid() == self.owner_uid
            && meta.mode() & 0o222 == 0
            && meta.nlink() == 1
            && meta.len() == size
            && Evidence::of(meta) == ev
    }
}

pub(super) fn open_no_follow(path: &std::path::Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Reads up to `size + 1` bytes: one byte more than expected is enough to know it is too long
/// (R-V3), and a file that grew meanwhile can never make us read without bound.
fn read_at_most(file: File, size: u64) -> io::Result<Vec<u8>> {
    let cap = usize::try_from(size.saturating_add(1))
        .unwrap_or(usize::MAX)
        .min(64 << 20);
    let mut buf = Vec::with_capacity(cap);
    file.take(size.saturating_add(1)).read_to_end(&mut buf)?;
    Ok(buf)
}
