//! The advisory lock file: shared while publishing or reading, exclusive for gc and purge.
//!
//! A publisher holds the shared lock from its blob write until its index rows are committed, so
//! `gc`, holding the exclusive lock, can never delete a blob that is about to be referenced. The
//! locks are std's `File::lock_shared` / `try_lock` (flock), which replace the unmaintained `fs2`.
//!
//! Waiting is bounded and said (R-H11): a caller that has to wait is told who holds the lock when
//! it is known (the exclusive holder writes its pid and operation into the file), and gives up
//! with [`StoreError::LockTimeout`](StoreError::LockTimeout) after the store's lock timeout instead of blocking forever.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::time::{Duration, Instant};

use crate::platform::{self, AsFd as _, Kind, errno};

use super::error::StoreError;
use super::handle::{
    Dir, Found, PRIVATE_DIR, Parent, ensure_dir, find_dir, remove_tree, stat_file,
};
use super::layout::SECTIONS;
use super::{BlobStore, io_err};
use crate::origin::Origin;

/// The lock file's name under the root.
const LOCK: &str = "lock";

/// Which lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Many holders at once: normal use.
    Shared,
    /// One holder, no shared holders: gc, purge and sweeping.
    Exclusive,
}

/// A held lock; dropping it releases the lock. On a read-only root there is no lock file to
/// take and no writer to exclude, and the guard holds nothing.
#[derive(Debug)]
pub struct LockGuard {
    file: Option<File>,
    /// Whether this holder wrote its note into the file (exclusive, and the file has no other
    /// name), and clears it.
    noted: bool,
}

/// An opened lock file, and whether it has only the one name (the note is written only then).
struct LockFile {
    file: File,
    own: bool,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(f) = &self.file else { return };
        // The holder's note is for those who wait on *this* holder; clear it before the lock is
        // released.
        if self.noted {
            let _ = f.set_len(0);
        }
        // Released explicitly, not by closing: a `flock` belongs to the open file description,
        // which a child forked while this guard was held shares (and never closes: a binding
        // leaks what its parent opened). Closing here would leave the lock held for the child's
        // whole life — the parent's purges refused, its publishes waiting out the lock timeout,
        // and a child's own cache waiting on its inherited copy (round 28 of review). Unlocking
        // acts on the description itself, so it frees the lock for every process.
        let _ = f.unlock();
    }
}

/// How long to wait before saying that we wait.
const SAY_AFTER: Duration = Duration::from_secs(1);

impl BlobStore {
    /// The lock file, opened without following a link; `None` on a read-only root without one.
    fn lock_file(&self) -> Result<Option<LockFile>, StoreError> {
        self.open_lock_file(&self.root, LOCK)
    }

    /// A lock file `name` in `dir`, opened without following a link; `None` on a read-only
    /// folder without one.
    ///
    /// Only a regular file is a lock file: a link, a folder, a socket or a FIFO planted under the
    /// name is removed and the file made afresh (R-H1, R-H7). A regular file with another name
    /// too (a hard link to a file elsewhere, or a hard-link copy of the cache, `cp -al`) is
    /// locked but never written: removing it could leave a live holder's lock on a file nobody
    /// opens again, and the exclusive holder's note would overwrite the other name's content
    /// (round 30 of review, B).
    fn open_lock_file(&self, dir: &Dir, name: &str) -> Result<Option<LockFile>, StoreError> {
        let path = dir.join(name);
        let err = |e: std::io::Error| StoreError::Io {
            op: "open",
            path: path.clone(),
            source: e,
        };
        for _ in 0..3 {
            let file = match platform::open_lock(dir.fd(), name, true) {
                Ok(file) => file,
                // A read-only root (a pre-populated image on a read-only mount, R-H5): nobody
                // can write it, so there is nobody to exclude; use the file if there is one.
                Err(e) if platform::is(&e, &[errno::EROFS, errno::EACCES]) => {
                    return match platform::open_lock(dir.fd(), name, false) {
                        // Never written: nobody may write a read-only folder's files.
                        Ok(file) => Ok(Some(LockFile { file, own: false })),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                        Err(e) => Err(err(e)),
                    };
                }
                Err(e) if platform::is(&e, &[errno::ELOOP, errno::EISDIR, errno::ENXIO]) => {
                    replace_lock_file(self.disk.as_ref(), dir, name).map_err(err)?;
                    continue;
                }
                Err(e) => return Err(err(e)),
            };
            let st = platform::fstat(file.as_fd()).map_err(err)?;
            if st.kind == Kind::File {
                return Ok(Some(LockFile {
                    file,
                    own: st.nlink == 1,
                }));
            }
            replace_lock_file(self.disk.as_ref(), dir, name).map_err(err)?;
        }
        Err(err(std::io::Error::other(
            "the lock file keeps being replaced by something else",
        )))
    }

    /// Takes the lock, waiting at most the store's lock timeout. `what` names the operation, so
    /// that others waiting for an exclusive holder can be told who holds it.
    ///
    /// # Errors
    /// [`StoreError::LockTimeout`](StoreError::LockTimeout) when the lock is still held after the timeout; [`StoreError::Io`](StoreError::Io) if the
    /// lock file cannot be opened or locked.
    pub fn lock(&self, mode: LockMode, what: &'static str) -> Result<LockGuard, StoreError> {
        let Some(file) = self.lock_file()? else {
            return Ok(LockGuard {
                file: None,
                noted: false,
            });
        };
        // A holder that made us wait out the whole timeout a moment ago is very likely still
        // there: one more try, not another full wait — a load of 512 files must cost one bounded
        // wait, not 512 (R-H11). The caller serves what it fetched without storing it.
        let budget = if self.recently_timed_out() {
            Duration::ZERO
        } else {
            self.lock_timeout
        };
        let taken = take(file, self.layout.root().join(LOCK), mode, what, budget);
        match &taken {
            Ok(_) => self.note_timeout(false),
            Err(StoreError::LockTimeout { .. }) => self.note_timeout(true),
            Err(_) => {}
        }
        taken
    }

    /// Enters `origin`'s publish section: an exclusive lock of its own (`sections/<origin>` under
    /// the root), so that one origin's publishers, in every process, take turns from the quota's
    /// count to their last index row (R-Q4, R-C8). The caller holds the shared root lock, so
    /// purge (which removes the file) never runs while anyone is inside. Waiting is bounded and
    /// said like the root lock's (R-H11).
    ///
    /// # Errors
    /// [`StoreError::LockTimeout`](StoreError::LockTimeout) when another publisher of the origin
    /// holds it past the timeout; [`StoreError::Io`](StoreError::Io) if it cannot be made.
    pub(crate) fn lock_origin(&self, origin: &Origin) -> Result<LockGuard, StoreError> {
        let path = self.layout.root().join(SECTIONS);
        let (sections, _) = ensure_dir(
            self.disk.as_ref(),
            &self.root,
            Parent::Private,
            SECTIONS,
            PRIVATE_DIR,
        )
        .map_err(io_err("create", &path))?;
        let name = origin.path_component();
        let Some(file) = self.open_lock_file(&sections, name)? else {
            return Ok(LockGuard {
                file: None,
                noted: false,
            });
        };
        take(
            file,
            sections.join(name),
            LockMode::Exclusive,
            "publish",
            self.lock_timeout,
        )
    }

    /// Removes `origin`'s publish-section lock file (purge, under the exclusive root lock: nobody
    /// is inside any section). Missing is fine.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if it cannot be removed.
    pub(crate) fn remove_section(&self, origin: &Origin) -> Result<(), StoreError> {
        let path = self.layout.root().join(SECTIONS);
        let Some(sections) = find_dir(self.disk.as_ref(), &self.root, Parent::Private, SECTIONS)
            .map_err(io_err("open", &path))?
        else {
            return Ok(());
        };
        remove_tree(self.disk.as_ref(), &sections, origin.path_component())
            .map_err(io_err("remove", &sections.join(origin.path_component())))
    }

    /// Takes the exclusive lock if nobody holds any lock now.
    ///
    /// # Errors
    /// [`StoreError::Io`](StoreError::Io) if the lock file cannot be opened.
    pub fn try_lock_exclusive(&self) -> Result<Option<LockGuard>, StoreError> {
        let Some(LockFile { file, own }) = self.lock_file()? else {
            return Ok(None);
        };
        // `then`, not `then_some`: a guard built eagerly and dropped would clear the holder's
        // note in the lock file. This holder writes none, but clears a stale one on release.
        Ok(file.try_lock().is_ok().then(|| LockGuard {
            file: Some(file),
            noted: own,
        }))
    }
}

impl BlobStore {
    fn recently_timed_out(&self) -> bool {
        self.lock_stalled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < self.lock_timeout)
    }

    fn note_timeout(&self, timed_out: bool) {
        let mut stalled = self
            .lock_stalled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *stalled = timed_out.then(Instant::now);
    }
}

/// Removes whatever is planted under a lock file's name (the name itself, never its target),
/// under the exclusive turn of its folder ([`crate::turn`]) and only if it is still not a regular
/// file there: another locker may have removed what this one saw and made, and locked, the lock
/// file since — removing that gave two exclusive holders at once (round 31 of review).
fn replace_lock_file(disk: &dyn super::Disk, dir: &Dir, name: &str) -> std::io::Result<()> {
    let _turn = crate::turn::Turn::take(dir.path(), true)?;
    if !matches!(stat_file(dir, name)?, Found::Other) {
        return Ok(());
    }
    tracing::warn!(path = %dir.join(name).display(), "the lock file was not a file of its own: replaced");
    remove_tree(disk, dir, name)
}

/// Waits (at most `budget`) for `mode` on `file`, saying so after a second (R-H11); the
/// exclusive holder writes its pid and `what` into the file for whoever waits next.
fn take(
    LockFile { mut file, own }: LockFile,
    path: std::path::PathBuf,
    mode: LockMode,
    what: &'static str,
    budget: Duration,
) -> Result<LockGuard, StoreError> {
    let start = Instant::now();
    let mut said = false;
    let mut pause = Duration::from_millis(2);
    loop {
        let attempt = match mode {
            LockMode::Shared => file.try_lock_shared(),
            LockMode::Exclusive => file.try_lock(),
        };
        match attempt {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StoreError::Io {
                    op: "lock",
                    path,
                    source,
                });
            }
        }
        let waited = start.elapsed();
        if waited >= budget {
            return Err(StoreError::LockTimeout {
                path,
                waited,
                holder: holder(&mut file),
            });
        }
        if !said && waited >= SAY_AFTER {
            said = true;
            tracing::warn!(
                lock = %path.display(),
                holder = holder(&mut file).as_deref().unwrap_or("other skillcache processes using this root"),
                timeout_secs = budget.as_secs(),
                "waiting for the cache lock"
            );
        }
        std::thread::sleep(pause.min(budget.saturating_sub(waited)));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    let noted = mode == LockMode::Exclusive && own;
    if noted {
        // Best effort: only a message for whoever waits next.
        let _ = file.set_len(0).and_then(|()| {
            file.rewind()?;
            write!(file, "pid {} ({what})", std::process::id())
        });
    }
    Ok(LockGuard {
        file: Some(file),
        noted,
    })
}

/// What the exclusive holder wrote about itself, if anything (at most a short line).
fn holder(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(200).read_to_string(&mut text).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{BlobStore, Dir, LockMode};

    /// Round 28 of review: a child forked while a lock was held shares the lock file's open
    /// description (a copy of the descriptor it never closes). Once the holder drops its guard,
    /// the lock is free for everyone, the child's copy notwithstanding.
    #[test]
    fn a_dropped_guard_frees_the_lock_though_a_forked_child_still_holds_its_descriptor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = || {
            let root = Dir::open_root(dir.path()).expect("root");
            BlobStore::open(root, Arc::new(crate::store::disk::RealDisk), Duration::ZERO).expect("store")
        };
        let (holder, other) = (open(), open());
        for mode in [LockMode::Shared, LockMode::Exclusive] {
            let guard = holder.lock(mode, "a publish").expect("held");
            // What `fork` gives the child: the same open file description.
            let childs_copy = guard.file.as_ref().expect("a lock file").try_clone().expect("dup");
            drop(guard);
            let taken = other.try_lock_exclusive().expect("asked");
            assert!(taken.is_some(), "{mode:?}: still held through the child's copy");
            drop(childs_copy);
        }
    }
}
