//! Publishing a blob atomically and without clobbering (R-C3).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::dirs::{ensure_read_only_dir, io_err, sync_dir, with_writable};
use super::read::{Evidence, open_no_follow};
use super::{BlobRead, BlobStore, Isolation};
use crate::digest::{Digest, Hasher};
use crate::error::{Error, Mismatch};
use crate::origin::Origin;

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl BlobStore {
    /// Publishes `bytes` as the blob `digest` of `origin`, refusing them if their size or digest
    /// differs from what the entry promised. Returns the evidence recorded for
    /// [`Isolation::Guaranteed`] reads.
    ///
    /// The protocol: write to `tmp/` while hashing; compare; fsync; make it 0444; `link` it into
    /// place (which never replaces an existing name); fsync the folder; unlink the temporary name.
    /// A crash at any point leaves either no blob or a complete one under the digest name, plus
    /// perhaps a stray temporary that the next open sweeps. If a blob is already there (another
    /// publisher won the race), it is verified and kept; a corrupt one is quarantined and
    /// replaced.
    ///
    /// # Errors
    /// [`Error::BlobMismatch`] if the bytes are not the promised ones; [`Error::Io`] otherwise
    /// (a full disk among them). Nothing partial is left under the digest name either way.
    pub fn publish(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        bytes: &[u8],
    ) -> Result<Evidence, Error> {
        let tmp = self.write_tmp(origin, digest, size, bytes)?;
        let result = self.link_into_place(origin, digest, size, &tmp);
        let _ = fs::remove_file(&tmp);
        result
    }

    fn write_tmp(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        bytes: &[u8],
    ) -> Result<PathBuf, Error> {
        let name = format!(
            "{}-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            &digest.hex()[..16]
        );
        let tmp = self.layout.tmp().join(name);
        let write = || -> io::Result<(Digest, u64)> {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            let mut hasher = Hasher::new();
            for chunk in bytes.chunks(256 * 1024) {
                hasher.update(chunk);
                f.write_all(chunk)?;
            }
            f.sync_all()?;
            f.set_permissions(fs::Permissions::from_mode(0o444))?;
            Ok(hasher.finish())
        };
        let (actual, len) = match write() {
            Ok(r) => r,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(io_err("write", &tmp)(e));
            }
        };
        let mismatch = if len != size {
            Some(Mismatch::Size {
                expected: size,
                actual: len,
            })
        } else if actual != *digest {
            Some(Mismatch::Digest {
                expected: *digest,
                actual,
            })
        } else {
            None
        };
        if let Some(mismatch) = mismatch {
            let _ = fs::remove_file(&tmp);
            return Err(Error::BlobMismatch {
                origin: origin.as_str().to_owned(),
                digest: digest.to_string(),
                mismatch,
            });
        }
        Ok(tmp)
    }

    fn link_into_place(
        &self,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        tmp: &std::path::Path,
    ) -> Result<Evidence, Error> {
        let origin_dir = self.layout.origin_dir(origin);
        let algo_dir = origin_dir.join("sha256");
        let blob_dir = self.layout.blob_dir(origin, digest);
        let origins = self.layout.origins();
        ensure_read_only_dir(&origins, &origin_dir, false)
            .map_err(io_err("create", &origin_dir))?;
        ensure_read_only_dir(&origin_dir, &algo_dir, true).map_err(io_err("create", &algo_dir))?;
        ensure_read_only_dir(&algo_dir, &blob_dir, true).map_err(io_err("create", &blob_dir))?;
        let target = self.layout.blob_path(origin, digest);
        for _ in 0..2 {
            match with_writable(&blob_dir, || fs::hard_link(tmp, &target)) {
                Ok(()) => {
                    sync_dir(&blob_dir).map_err(io_err("sync", &blob_dir))?;
                    // The blob's folder chain must survive a crash too.
                    let _ = sync_dir(&algo_dir);
                    let _ = sync_dir(&origin_dir);
                    return Self::evidence(&target, tmp);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // Never clobber: keep the existing blob if it verifies, else quarantine it.
                    match self.read(origin, digest, size, Isolation::Rehash, None)? {
                        BlobRead::Verified(_) => return Self::evidence(&target, tmp),
                        BlobRead::Missing => {}
                        BlobRead::Failed(_) => self.quarantine(origin, digest)?,
                    }
                }
                Err(e) => return Err(io_err("link", &target)(e)),
            }
        }
        Err(Error::Io {
            op: "publish",
            path: target,
            source: io::Error::other("the blob kept changing under a concurrent writer"),
        })
    }

    /// The evidence of the final blob, taken after the temporary name is gone (unlinking it
    /// changes the inode's ctime and link count).
    fn evidence(target: &std::path::Path, tmp: &std::path::Path) -> Result<Evidence, Error> {
        let _ = fs::remove_file(tmp);
        let f = open_no_follow(target).map_err(io_err("open", target))?;
        let meta = f.metadata().map_err(io_err("stat", target))?;
        Ok(Evidence::of(&meta))
    }
}
