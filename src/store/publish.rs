//! Publishing a blob atomically and without clobbering (R-C3), never outside the root (R-H1).

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use super::handle::{Dir, Made, PRIVATE_DIR, Parent, READ_ONLY_DIR, ensure_dir, with_writable};
use super::layout::{ORIGINS, SHA256, TMP};
use super::read::Evidence;
use super::{BlobRead, BlobStore, Isolation, io_err};
use crate::digest::{Digest, Hasher};
use crate::error::{Error, Mismatch};
use crate::origin::Origin;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The folders one publish writes into, each opened from the root without following links.
struct Chain {
    /// For each folder: whether this publish made it, and where its parent is (`None`: the root).
    made: Vec<(Made, Option<usize>)>,
    dirs: Vec<Dir>,
}

/// Positions in [`Chain::dirs`].
const ORIGINS_AT: usize = 0;
const ORIGIN_AT: usize = 1;
const TMP_AT: usize = 2;
const SHA_AT: usize = 3;
const AA_AT: usize = 4;

impl Chain {
    fn dir(&self, at: usize) -> &Dir {
        &self.dirs[at]
    }
    fn parent<'a>(&'a self, root: &'a Dir, at: Option<usize>) -> &'a Dir {
        at.map_or(root, |i| self.dir(i))
    }
}

impl BlobStore {
    /// Publishes `bytes` as the blob `digest` of `origin`, refusing them if their size or digest
    /// differs from what the entry promised. Returns the evidence recorded for
    /// [`Isolation::Guaranteed`] reads.
    ///
    /// The protocol: write a temporary in the origin's `tmp/` while hashing; compare; fsync; make
    /// it 0444; `link` it into place (which never replaces an existing name); fsync the folder
    /// (and any folder this publish made, in its parent); unlink the temporary name. A crash at
    /// any point leaves either no blob or a complete one under the digest name, plus perhaps a
    /// stray temporary that the next exclusive open sweeps. If a blob is already there (another
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
        let chain = self.chain(origin, digest)?;
        let (name, file) = self.write_tmp(&chain, origin, digest, size, bytes)?;
        let result = self.link_into_place(&chain, origin, digest, size, &name);
        // The temporary name goes whatever happened; on success the blob keeps the inode.
        let _ = self.disk.unlink(chain.dir(TMP_AT).fd(), &name, false);
        let ev = result?;
        Ok(match ev {
            Some(ev) => ev,
            // Linked by us: the evidence is the inode we wrote, after its temporary name is gone
            // (unlinking changes its ctime and link count).
            None => Evidence::of_fd(&file).map_err(io_err("stat", chain.dir(AA_AT).path()))?,
        })
    }

    /// Opens (making where missing, repairing where something else is there) the folders a
    /// publish writes into, and makes each new folder's name durable in its parent.
    fn chain(&self, origin: &Origin, digest: &Digest) -> Result<Chain, Error> {
        let disk = self.disk.as_ref();
        let hex = digest.hex();
        let steps: [(Option<usize>, &str, Parent, u32); 5] = [
            (None, ORIGINS, Parent::Private, PRIVATE_DIR),
            (
                Some(ORIGINS_AT),
                origin.path_component(),
                Parent::Private,
                READ_ONLY_DIR,
            ),
            (Some(ORIGIN_AT), TMP, Parent::ReadOnly, PRIVATE_DIR),
            (Some(ORIGIN_AT), SHA256, Parent::ReadOnly, READ_ONLY_DIR),
            (Some(SHA_AT), &hex[..2], Parent::ReadOnly, READ_ONLY_DIR),
        ];
        let mut chain = Chain {
            made: Vec::with_capacity(5),
            dirs: Vec::with_capacity(5),
        };
        for (parent_at, name, kind, mode) in steps {
            let parent = chain.parent(&self.root, parent_at);
            let (dir, made) = ensure_dir(disk, parent, kind, name, mode)
                .map_err(io_err("create", &parent.join(name)))?;
            chain.made.push((made, parent_at));
            chain.dirs.push(dir);
        }
        Ok(chain)
    }

    fn write_tmp(
        &self,
        chain: &Chain,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        bytes: &[u8],
    ) -> Result<(String, File), Error> {
        let tmp = chain.dir(TMP_AT);
        let name = format!(
            "{}-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            &digest.hex()[..16]
        );
        let disk = self.disk.as_ref();
        let write = || -> io::Result<(File, Digest, u64)> {
            let mut f = disk.create(tmp.fd(), &name, 0o600)?;
            let mut hasher = Hasher::new();
            for chunk in bytes.chunks(256 * 1024) {
                hasher.update(chunk);
                disk.write(&mut f, chunk)?;
            }
            disk.sync(std::os::fd::AsFd::as_fd(&f))?;
            disk.chmod(std::os::fd::AsFd::as_fd(&f), 0o444)?;
            let (digest, len) = hasher.finish();
            Ok((f, digest, len))
        };
        let (file, actual, len) = match write() {
            Ok(r) => r,
            Err(e) => {
                let _ = disk.unlink(tmp.fd(), &name, false);
                return Err(io_err("write", &tmp.join(&name))(e));
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
            let _ = disk.unlink(tmp.fd(), &name, false);
            return Err(Error::BlobMismatch {
                origin: origin.as_str().to_owned(),
                digest: digest.to_string(),
                mismatch,
            });
        }
        Ok((name, file))
    }

    /// Links the temporary into place. `Ok(None)`: we linked it; `Ok(Some(ev))`: an identical
    /// blob was already there and is kept, with its own evidence.
    fn link_into_place(
        &self,
        chain: &Chain,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        tmp_name: &str,
    ) -> Result<Option<Evidence>, Error> {
        let disk = self.disk.as_ref();
        let (tmp, aa) = (chain.dir(TMP_AT), chain.dir(AA_AT));
        let hex = digest.hex();
        let rest = &hex[2..];
        let target = aa.join(rest);
        for _ in 0..2 {
            match with_writable(disk, aa, || disk.link(tmp.fd(), tmp_name, aa.fd(), rest)) {
                Ok(()) => {
                    disk.sync(aa.fd()).map_err(io_err("sync", aa.path()))?;
                    // A folder this publish made must be durable in its parent too, or a crash
                    // could lose the whole chain the new name hangs from.
                    // (Staging needs no such care: a lost temporary is only a lost temporary.)
                    for (i, &(made, parent_at)) in chain.made.iter().enumerate() {
                        if made == Made::Created && i != TMP_AT {
                            let parent = chain.parent(&self.root, parent_at);
                            disk.sync(parent.fd())
                                .map_err(io_err("sync", parent.path()))?;
                        }
                    }
                    return Ok(None);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // Never clobber: keep the existing blob if it verifies, else quarantine it.
                    match self.read(origin, digest, size, Isolation::Rehash, None)? {
                        BlobRead::Verified(_) | BlobRead::Confirmed(..) => {
                            let f = aa.open_file_here(rest).map_err(io_err("open", &target))?;
                            return Evidence::of_fd(&f)
                                .map(Some)
                                .map_err(io_err("stat", &target));
                        }
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
}
