//! Publishing a blob atomically and without clobbering (R-C3), never outside the root (R-H1).

use std::fs::File;
use std::io;
use crate::platform::AsFd as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::handle::{Dir, PRIVATE_DIR, Parent, READ_ONLY_DIR, ensure_dir, with_writable};
use super::layout::{ORIGINS, SHA256, TMP};
use super::read::Evidence;
use super::disk::filesystem_sync_is_durable;
use super::{BlobRead, BlobStore, Isolation, io_err};
use crate::digest::{Digest, Hasher};
use super::error::StoreError;
use crate::origin::Origin;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// From this many blobs a batch, a publish syncs whole filesystems (twice) instead of each file
/// and each folder it touched: fewer calls and no threads to overlap them, against waiting on
/// whatever else is dirty on that filesystem, which a few files are not worth.
pub(crate) const FILESYSTEM_SYNC_MIN_FILES: usize = 4;

/// What publishing one blob did (R-C3). The store never calls into the caller's records: when a
/// damaged blob is in the way, it says so and leaves the order of the repair to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// These bytes are now the blob, linked under the digest name and durable; the evidence is
    /// the inode written, for [`Isolation::Guaranteed`] reads.
    Linked(Evidence),
    /// An identical blob was already there (another publisher won the race); it verified and is
    /// kept, with its own evidence.
    Kept(Evidence),
    /// A blob that fails verification is in the way; nothing was linked. The caller drops its
    /// record of the blob first (row first, then blob: R-C3), quarantines it
    /// ([`BlobStore::quarantine`]) and publishes again.
    Blocked,
}

impl Published {
    /// The evidence of a blob that is now in place; `None` when it was blocked.
    #[must_use]
    pub fn evidence(self) -> Option<Evidence> {
        match self {
            Published::Linked(ev) | Published::Kept(ev) => Some(ev),
            Published::Blocked => None,
        }
    }
}

/// The folders one publish writes into, each opened from the root without following links, once
/// a batch: the origin's chain down to `sha256/`, then each fan-out folder the batch needs.
struct Chain {
    dirs: Vec<Dir>,
    /// The fan-out folders opened so far: the digest's first two hex digits, and the position.
    fans: Vec<(String, usize)>,
}

/// Positions in [`Chain::dirs`] (fan-out folders follow, from [`FANS_FROM`] on).
const ORIGINS_AT: usize = 0;
const ORIGIN_AT: usize = 1;
const TMP_AT: usize = 2;
const SHA_AT: usize = 3;
const FANS_FROM: usize = 4;

impl Chain {
    fn dir(&self, at: usize) -> &Dir {
        &self.dirs[at]
    }
    fn parent<'a>(&'a self, root: &'a Dir, at: Option<usize>) -> &'a Dir {
        at.map_or(root, |i| self.dir(i))
    }

    /// Opens (making where missing) folder `name` under position `parent_at` and keeps it.
    fn push(
        &mut self,
        disk: &dyn super::Disk,
        root: &Dir,
        (parent_at, name, kind, mode): (Option<usize>, &str, Parent, u32),
    ) -> Result<usize, StoreError> {
        let parent = self.parent(root, parent_at);
        // Whether it was made here or found does not matter: every folder of the chain is synced
        // before a row (`touched`), whoever made it.
        let (dir, _) =
            ensure_dir(disk, parent, kind, name, mode).map_err(io_err("create", &parent.join(name)))?;
        self.dirs.push(dir);
        Ok(self.dirs.len() - 1)
    }

    /// The position of `digest`'s fan-out folder, opened (or made) the first time the batch
    /// needs it.
    fn fan(
        &mut self,
        disk: &dyn super::Disk,
        root: &Dir,
        digest: &Digest,
    ) -> Result<usize, StoreError> {
        let hex = digest.hex();
        if let Some(&(_, at)) = self.fans.iter().find(|(h, _)| *h == hex[..2]) {
            return Ok(at);
        }
        let at = self.push(disk, root, (Some(SHA_AT), &hex[..2], Parent::ReadOnly, READ_ONLY_DIR))?;
        self.fans.push((hex[..2].to_owned(), at));
        Ok(at)
    }
}

/// One blob to publish: its digest, its size, and the bytes, which must be exactly those.
pub type Item<'b> = (Digest, u64, &'b [u8]);

impl BlobStore {
    /// Publishes blobs of `origin`, each as `(digest, size, bytes)`, refusing bytes whose size or
    /// digest differs from what the entry promised. One file is a batch of one: the same
    /// protocol, the same guarantees, whatever the count. Returns what happened to each item, in
    /// order; a digest listed twice is published once.
    ///
    /// The protocol (R-C3): write each temporary in the origin's `tmp/` while hashing; compare;
    /// sync them all; make them 0444; `link` each into place (which never replaces an existing
    /// name); sync every folder a linked or kept blob hangs from, up to the root, whoever made
    /// it; unlink the temporary names. A batch of [`FILESYSTEM_SYNC_MIN_FILES`] or more, where
    /// one `syncfs` is known to be durable and to report errors (Linux 5.17 on, and a filesystem
    /// that writes when asked: `filesystem_sync_is_durable`), makes each of the two sync steps
    /// one sync of the filesystem holding staging (two calls a batch, not one per file and per
    /// folder); fewer files are synced each (concurrently when there are several: the
    /// filesystem folds concurrent syncs into shared commits). A crash at any point leaves either no blob or
    /// a complete one under each digest name — a name is linked only after its temporary's sync
    /// returned — plus perhaps stray temporaries that the next exclusive open sweeps. Names not
    /// yet made durable by their folder's sync may be lost, which is a miss, never wrong bytes;
    /// the caller records rows only after this returns. An identical blob already in place is
    /// verified and kept ([`Published::Kept`]); a damaged one is reported
    /// ([`Published::Blocked`]), never replaced by the store on its own.
    ///
    /// # Errors
    /// [`StoreError::BlobMismatch`] for bytes that are not the promised ones (nothing of the
    /// batch is linked then); [`StoreError::Io`] otherwise (a full disk among them). Blobs linked
    /// before an I/O error stay (complete; with no row they are orphans that gc removes).
    pub fn publish(&self, origin: &Origin, items: &[Item<'_>]) -> Result<Vec<Published>, StoreError> {
        let mut unique: Vec<usize> = Vec::with_capacity(items.len());
        for (i, (d, _, _)) in items.iter().enumerate() {
            if !unique.iter().any(|&j| items[j].0 == *d) {
                unique.push(i);
            }
        }
        if unique.is_empty() {
            return Ok(Vec::new());
        }
        let mut chain = self.chain(origin)?;
        let mut staged: Vec<(usize, String, File)> = Vec::with_capacity(unique.len());
        let result = self.publish_staged(&mut chain, origin, items, &unique, &mut staged);
        // The temporary names go whatever happened; linked blobs keep their inodes.
        for (_, name, _) in &staged {
            let _ = self.disk.unlink(chain.dir(TMP_AT).fd(), name, false);
        }
        let outcomes = result?;
        let mut done: Vec<(Digest, Published)> = Vec::with_capacity(unique.len());
        for ((fan, _, file), (&i, outcome)) in staged.iter().zip(unique.iter().zip(outcomes)) {
            let outcome = match outcome {
                // Linked by us: the evidence is the inode we wrote, after its temporary name is
                // gone (unlinking changes its ctime and link count).
                Linked::Ours => Published::Linked(
                    Evidence::of_fd(file).map_err(io_err("stat", chain.dir(*fan).path()))?,
                ),
                Linked::Kept(ev) => Published::Kept(ev),
                Linked::Blocked => Published::Blocked,
            };
            done.push((items[i].0, outcome));
        }
        Ok(items
            .iter()
            .map(|(d, _, _)| {
                done.iter()
                    .find(|(e, _)| e == d)
                    .map_or(Published::Blocked, |&(_, p)| p)
            })
            .collect())
    }

    /// Opens (making where missing, repairing where something else is there) the origin's
    /// folders a publish writes into, down to `sha256/`; the batch opens its fan-out folders
    /// ([`Chain::fan`]). Every folder of the chain is synced after the links (`touched`).
    fn chain(&self, origin: &Origin) -> Result<Chain, StoreError> {
        let disk = self.disk.as_ref();
        let steps: [(Option<usize>, &str, Parent, u32); FANS_FROM] = [
            (None, ORIGINS, Parent::Private, PRIVATE_DIR),
            (
                Some(ORIGINS_AT),
                origin.path_component(),
                Parent::Private,
                READ_ONLY_DIR,
            ),
            (Some(ORIGIN_AT), TMP, Parent::ReadOnly, PRIVATE_DIR),
            (Some(ORIGIN_AT), SHA256, Parent::ReadOnly, READ_ONLY_DIR),
        ];
        let mut chain = Chain {
            dirs: Vec::with_capacity(FANS_FROM + 8),
            fans: Vec::new(),
        };
        for step in steps {
            chain.push(disk, &self.root, step)?;
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
    ) -> Result<(String, File), StoreError> {
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
        if let Err(mismatch) = crate::verify::expect(size, *digest, len, actual) {
            let _ = disk.unlink(tmp.fd(), &name, false);
            return Err(StoreError::BlobMismatch {
                origin: origin.clone(),
                digest: *digest,
                mismatch,
            });
        }
        Ok((name, file))
    }

    /// Makes a written temporary durable and read-only: after this, and only after this, it may
    /// be linked under its digest name (R-C3: a blob name appears only complete and durable).
    fn seal_tmp(&self, file: &File) -> io::Result<()> {
        let disk = self.disk.as_ref();
        disk.sync(file.as_fd())?;
        disk.chmod(file.as_fd(), 0o444)
    }

    /// The folders every blob the caller will record hangs from, to be made durable before any
    /// row (R-C3): the fan-out folder of each blob linked or kept (`recorded`: positions in the
    /// chain) and every folder above it, up to the root — whoever made them. A folder made or a
    /// name linked by another publisher that crashed before its syncs, or whose sync failed, is
    /// found here like any other and synced too (a clean folder's sync is cheap). Staging is not
    /// among them: a lost temporary is only a lost temporary. None when nothing is recorded.
    fn touched<'c>(&'c self, chain: &'c Chain, recorded: &[usize]) -> Vec<&'c Dir> {
        if recorded.is_empty() {
            return Vec::new();
        }
        let mut dirs: Vec<&Dir> = vec![
            &self.root,
            chain.dir(ORIGINS_AT),
            chain.dir(ORIGIN_AT),
            chain.dir(SHA_AT),
        ];
        let mut fans: Vec<usize> = Vec::new();
        for &fan in recorded {
            if !fans.contains(&fan) {
                fans.push(fan);
                dirs.push(chain.dir(fan));
            }
        }
        dirs
    }

    /// Writes, syncs and links the `unique` items, pushing each temporary to `staged` (with its
    /// fan-out folder's position) as soon as it exists, so the caller removes every one,
    /// whatever fails.
    fn publish_staged(
        &self,
        chain: &mut Chain,
        origin: &Origin,
        items: &[Item<'_>],
        unique: &[usize],
        staged: &mut Vec<(usize, String, File)>,
    ) -> Result<Vec<Linked>, StoreError> {
        for &i in unique {
            let (digest, size, bytes) = items[i];
            let fan = chain.fan(self.disk.as_ref(), &self.root, &digest)?;
            let (name, file) = self.write_tmp(chain, origin, &digest, size, bytes)?;
            staged.push((fan, name, file));
        }
        let chain = &*chain;
        let files: Vec<&File> = staged.iter().map(|(_, _, f)| f).collect();
        let tmp_path = |k: usize| chain.dir(TMP_AT).join(&staged[k].1);
        // A batch of several is made durable by one filesystem sync before its links and one
        // after, instead of a sync per file and per folder (and the threads to overlap them),
        // where that sync is known to be durable and to report writeback errors. Its handle is
        // staging's, opened before any temporary was written: every error since then is ours
        // to hear (the kernel samples a filesystem's error count when a handle is opened).
        let tmp = chain.dir(TMP_AT);
        let mut whole =
            staged.len() >= FILESYSTEM_SYNC_MIN_FILES && filesystem_sync_is_durable(tmp.fd());
        if whole {
            match self.disk.sync_filesystem(tmp.fd()) {
                Ok(()) => {
                    for (k, f) in files.iter().enumerate() {
                        self.disk
                            .chmod(f.as_fd(), 0o444)
                            .map_err(io_err("write", &tmp_path(k)))?;
                    }
                }
                // A disk that cannot sync a whole filesystem syncs each file instead.
                Err(e) if e.kind() == io::ErrorKind::Unsupported => whole = false,
                Err(e) => return Err(io_err("sync", tmp.path())(e)),
            }
        }
        if !whole && let Some((k, e)) = for_each_concurrently(&files, |f| self.seal_tmp(f)) {
            return Err(io_err("write", &tmp_path(k))(e));
        }
        let mut linked = Vec::with_capacity(staged.len());
        let mut recorded = Vec::new();
        for ((fan, name, _), &i) in staged.iter().zip(unique) {
            let (digest, size, _) = items[i];
            let outcome = self.link_into_place(chain, *fan, origin, &digest, size, name)?;
            if outcome != Linked::Blocked {
                recorded.push(*fan);
            }
            linked.push(outcome);
        }
        let touched = self.touched(chain, &recorded);
        // R-C3: every new name, and every folder this publish made, is durable before the caller
        // records a blob. One file's few folders are synced in turn (threads would cost more).
        if touched.is_empty() {
        } else if whole && on_filesystem_of(tmp, &touched) {
            self.disk
                .sync_filesystem(tmp.fd())
                .map_err(io_err("sync", tmp.path()))?;
        } else if staged.len() == 1 {
            for dir in touched {
                self.disk.sync(dir.fd()).map_err(io_err("sync", dir.path()))?;
            }
        } else {
            sync_dirs(self.disk.as_ref(), &touched)?;
        }
        Ok(linked)
    }

    /// Links the (synced, read-only) temporary into place, never clobbering: an identical blob
    /// already there is kept, a damaged one is reported, never replaced here.
    fn link_into_place(
        &self,
        chain: &Chain,
        fan: usize,
        origin: &Origin,
        digest: &Digest,
        size: u64,
        tmp_name: &str,
    ) -> Result<Linked, StoreError> {
        let disk = self.disk.as_ref();
        let (tmp, aa) = (chain.dir(TMP_AT), chain.dir(fan));
        let hex = digest.hex();
        let rest = &hex[2..];
        let target = aa.join(rest);
        // Twice: a blob in the way that vanishes before it is read (gc, another host's
        // quarantine) leaves the name free for a second try.
        for _ in 0..2 {
            match with_writable(disk, aa, || disk.link(tmp.fd(), tmp_name, aa.fd(), rest)) {
                // The caller then syncs every folder the new name hangs from (`touched`), or a
                // crash could lose the name, or the whole chain of folders above it.
                Ok(()) => return Ok(Linked::Ours),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    match self.read(origin, digest, size, Isolation::Rehash, None)? {
                        BlobRead::Verified(_) | BlobRead::Confirmed(..) => {
                            let f = aa.open_file_here(rest).map_err(io_err("open", &target))?;
                            return Evidence::of_fd(&f)
                                .map(Linked::Kept)
                                .map_err(io_err("stat", &target));
                        }
                        BlobRead::Missing => {}
                        BlobRead::Failed(_) => return Ok(Linked::Blocked),
                    }
                }
                Err(e) => return Err(io_err("link", &target)(e)),
            }
        }
        Err(StoreError::Io {
            op: "publish",
            path: target,
            source: io::Error::other("the blob kept changing under a concurrent writer"),
        })
    }
}

/// What one link did, before the evidence of a new blob is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linked {
    Ours,
    Kept(Evidence),
    Blocked,
}

/// Whether every folder of `dirs` is on the filesystem of `tmp` (a folder inside the root may be
/// another mount: then the folders are synced each). One that cannot be examined is not.
fn on_filesystem_of(tmp: &Dir, dirs: &[&Dir]) -> bool {
    let dev = |d: &Dir| crate::platform::fstat(d.fd()).ok().map(|st| st.dev);
    let Some(here) = dev(tmp) else { return false };
    dirs.iter().all(|d| dev(d) == Some(here))
}

/// Syncs every folder in `dirs` (concurrently when there are several).
fn sync_dirs(disk: &dyn super::Disk, dirs: &[&Dir]) -> Result<(), StoreError> {
    match for_each_concurrently(dirs, |d| disk.sync(d.fd())) {
        Some((k, e)) => Err(io_err("sync", dirs[k].path())(e)),
        None => Ok(()),
    }
}

/// Runs `op` on every item, on up to 16 threads (they wait on the disk, not the CPU); returns
/// the first failure by position, if any.
fn for_each_concurrently<T: Sync>(
    items: &[T],
    op: impl Fn(&T) -> io::Result<()> + Sync,
) -> Option<(usize, io::Error)> {
    let threads = items.len().min(16);
    if threads <= 1 {
        return items
            .iter()
            .enumerate()
            .find_map(|(k, t)| op(t).err().map(|e| (k, e)));
    }
    let chunk = items.len().div_ceil(threads);
    let op = &op;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    part.iter()
                        .enumerate()
                        .find_map(|(k, t)| op(t).err().map(|e| (c * chunk + k, e)))
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|w| {
                w.join()
                    .unwrap_or_else(|_| Some((0, io::Error::other("a sync thread panicked"))))
            })
            .min_by_key(|(k, _)| *k)
    })
}
