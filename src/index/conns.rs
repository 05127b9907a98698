//! The index's connections: each is closed before a fork and opened again on its next use, so a
//! forked child inherits none (round 28 of review, F1).
//!
//! Why: `SQLite` keeps, per process, a table of the files its connections have open and of the
//! POSIX locks they hold. A child forked with a connection open inherits that table but not the
//! locks (`fcntl` locks are not inherited). A connection the child opens to the same file then
//! finds the table saying a shared lock is held, takes none of its own, and the parent, closing
//! its last connection, finds no other process reading and deletes the write-ahead log under
//! the child's feet: the child reads a log that no longer exists (a stale view, then
//! "database disk image is malformed"). `SQLite`'s own rule is "do not carry an open connection
//! across a fork"; this is how the index keeps it.
//!
//! So every connection of every index of the process is a [`Slot`], listed (weakly) in one
//! registry; [`close_all`] closes each one that no call is using, from the thread that closed
//! the fork gate ([`super::gate`]), where no other thread can be inside `SQLite`. The next call
//! that needs the connection opens it again ([`Slot::lock`], [`Slot::try_lock`]), through the
//! open that heals a damaged file.
//!
//! Memo: an answer is remembered with the reader's `data_version`, which only one connection's
//! reads can be compared with. The slot's generation, moved by every reopening, is part of the
//! version ([`Held::generation`]), so nothing remembered from a closed connection is believed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, TryLockError, Weak};

use rusqlite::Connection;

use super::error::IndexError;
use super::{gate, heal, open};

/// Every slot of the process, alive or not: the ones gone are pruned as new ones come.
static SLOTS: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

/// One connection of an index: open, or closed for a fork and opened again on next use.
#[derive(Debug)]
pub(super) struct Slot {
    conn: Mutex<Option<Connection>>,
    /// Moved by every reopening: see the module's memo note.
    generation: AtomicU64,
    path: PathBuf,
    /// How the index was opened: a connection opened again is opened the same way.
    mode: open::Mode,
}

/// A connection in use, and the fork gate's pass for it ([`gate`]): dropped in that order, so
/// the pass outlives every `SQLite` call made through the connection.
pub(crate) struct Held<'a> {
    /// Always `Some`: a `Held` is made only over an open connection.
    conn: MutexGuard<'a, Option<Connection>>,
    generation: u64,
    _pass: gate::Pass,
}

impl Held<'_> {
    /// Which opening of its slot this connection is: the memo compares versions only within one.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self.conn.as_ref() {
            Some(conn) => conn,
            None => unreachable!("a held connection is open"),
        }
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        match self.conn.as_mut() {
            Some(conn) => conn,
            None => unreachable!("a held connection is open"),
        }
    }
}

impl Slot {
    /// A slot over `conn`, opened at `path` in `mode`, listed for [`close_all`].
    pub(super) fn new(conn: Connection, path: PathBuf, mode: open::Mode) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            conn: Mutex::new(Some(conn)),
            generation: AtomicU64::new(0),
            path,
            mode,
        });
        let mut slots = SLOTS.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| s.strong_count() > 0);
        slots.push(Arc::downgrade(&slot));
        slot
    }

    /// The connection, waiting for another call of this process that uses it, and opened again
    /// if a fork closed it.
    ///
    /// # Errors
    /// [`IndexError`] if it was closed and cannot be opened again (the file is gone or cannot
    /// be read any more).
    pub(super) fn lock(&self) -> Result<Held<'_>, IndexError> {
        // The pass first: a fork being prepared waits for this thread's calls, never for its lock.
        let pass = gate::enter();
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll back
        // on drop), so a poisoned lock is safe to reuse.
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        self.opened(conn, pass, false)
    }

    /// The connection if no other call of this process uses it: quick paths never wait for
    /// another call. One a fork closed is opened again here too (a file opened, never a lock
    /// waited for): an access time after a fork is recorded (round 29 of review, F1-T). `None`
    /// when it cannot be.
    pub(super) fn try_lock(&self) -> Option<Held<'_>> {
        let pass = gate::enter();
        let conn = match self.conn.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        self.opened(conn, pass, true).ok()
    }

    /// `conn` held, opened again first if a fork closed it: `quick`, without reading the file
    /// (a quick path's own statements wait for no lock); else through the open that heals.
    fn opened<'a>(
        &'a self,
        mut conn: MutexGuard<'a, Option<Connection>>,
        pass: gate::Pass,
        quick: bool,
    ) -> Result<Held<'a>, IndexError> {
        if conn.is_none() {
            *conn = Some(if quick { self.reopen_quick()? } else { self.reopen()? });
            self.generation.fetch_add(1, Ordering::SeqCst);
            tracing::debug!(index = %self.path.display(), "index connection opened again after a fork");
        }
        Ok(Held {
            conn,
            generation: self.generation.load(Ordering::SeqCst),
            _pass: pass,
        })
    }

    /// A connection as this slot's was opened: a read-write index through the open that heals
    /// (a file damaged or removed since heals, round 29 of review, F1-R); a read-only one as it
    /// was.
    ///
    /// A read-write slot takes only a read-write connection: one opened read-only at a moment
    /// the disk could not be written (or immutable, which ignores the log) would be kept until
    /// the next fork, failing writes and reading stale pages (round 30 of review, D). Such a
    /// call fails as read-only, and the next one tries again.
    fn reopen(&self) -> Result<Connection, IndexError> {
        self.regular_or_absent()?;
        if self.mode != open::Mode::ReadWrite {
            return open::reopen_read_only(&self.path, self.mode);
        }
        match heal::open_healing(&self.path)? {
            (conn, open::Mode::ReadWrite, _) => Ok(conn),
            _ => Err(IndexError::ReadOnly {
                path: self.path.clone(),
                what: "open it again after a fork",
            }),
        }
    }

    /// [`Slot::reopen`] for a quick path, which must not wait (round 30 of review, F: the
    /// healing open's busy timeout held a runtime worker for 20 s): a read-write index's
    /// connection opened without reading the file; a read-only index's not at all. The slow
    /// path heals, if healing is needed.
    fn reopen_quick(&self) -> Result<Connection, IndexError> {
        if self.mode != open::Mode::ReadWrite {
            return Err(IndexError::ReadOnly {
                path: self.path.clone(),
                what: "open it again on a quick path",
            });
        }
        self.regular_or_absent()?;
        open::reopen_quick(&self.path)
    }

    /// Refuses to open again an index whose files are no longer what the open checked
    /// (R-H1's scrub, which runs only when a cache is opened): the database, its log, shared
    /// memory or journal is now a link or a special file (round 30 of review, C: a link out of
    /// the root was followed, a FIFO hung the call), or a regular file with another name,
    /// which `SQLite` would write in place (round 30, B and C). Nothing is removed here: the
    /// next open of a cache scrubs, or says why it cannot. A missing file is the healing open's
    /// to make.
    fn regular_or_absent(&self) -> Result<(), IndexError> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let path = heal::with_suffix(&self.path, suffix);
            let why = match std::fs::symlink_metadata(&path) {
                Ok(meta) if !meta.file_type().is_file() => {
                    "is no longer a regular file (a link or a special file was put in its place)"
                }
                Ok(meta) if crate::platform::link_count(&meta) > 1 => {
                    "has another name now (a hard link), which writing it would change too"
                }
                _ => continue,
            };
            return Err(IndexError::Database {
                what: "open again",
                source: format!("{} {why}", crate::display::SafePath(&path)).into(),
            });
        }
        Ok(())
    }

    /// Closes the connection unless a call is using it; whether it is closed now.
    fn close(&self) -> bool {
        let mut conn = match self.conn.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        // Dropping closes it: statements finalized, its locks released, and if it is the last
        // connection of any process to the file, the log checkpointed — all before the fork.
        drop(conn.take());
        true
    }

    /// Closes this slot's connection, as a fork does ([`close_all`]): for tests of one index,
    /// without touching the other indexes of the process.
    #[cfg(test)]
    pub(super) fn close_for_test(&self) -> bool {
        self.close()
    }

    /// Whether the connection is open now.
    #[cfg(test)]
    pub(super) fn is_open(&self) -> bool {
        self.conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// The index files (by identity) a fork is about to leave a connection open to: a call was
/// still inside `SQLite` when the gate gave up waiting. A forked child inherits `SQLite`'s lock
/// bookkeeping for such a file with the connection, so one of its own to the file would take
/// its locks in bookkeeping only, and the parent's close could delete the log under it (round
/// 29 of review, F1′): the child refuses to open it ([`refuse_inherited`]). Written only by the
/// forking thread, before the fork and after it.
static LEFT_OPEN: RwLock<Vec<(u64, u64)>> = RwLock::new(Vec::new());

/// The index files this process inherited a connection to, from every fork on its way here:
/// kept for the life of the process, a forked child's own forks included (round 30 of
/// review, A: a child that forked again forgot what it inherited, and opened it).
static INHERITED: RwLock<Vec<(u64, u64)>> = RwLock::new(Vec::new());

/// Closes every index connection of the process that no call is using; how many are left open
/// (0 when the gate was closed in time), and their files noted for the child. Called by the
/// thread that closed the fork gate: it must not enter the gate itself (it holds it closed).
pub(crate) fn close_all() -> usize {
    let slots: Vec<Arc<Slot>> = SLOTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    let left: Vec<&Arc<Slot>> = slots.iter().filter(|s| !s.close()).collect();
    let files = left.iter().filter_map(|s| heal::identity(&s.path)).collect();
    *LEFT_OPEN.write().unwrap_or_else(PoisonError::into_inner) = files;
    left.len()
}

/// After a fork [`close_all`] prepared: the parent forgets what it left open (its connections
/// are its own); the child adds it to what it inherited, and refuses those files for good.
pub(crate) fn after_fork(in_child: bool) {
    let left = std::mem::take(&mut *LEFT_OPEN.write().unwrap_or_else(PoisonError::into_inner));
    if in_child {
        INHERITED
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(left);
    }
}

/// Refuses, in a child, an index file a parent was inside when it forked ([`INHERITED`]).
///
/// # Errors
/// [`IndexError::Database`] saying why and what to do instead.
pub(super) fn refuse_inherited(path: &std::path::Path) -> Result<(), IndexError> {
    let inherited = INHERITED.read().unwrap_or_else(PoisonError::into_inner);
    if inherited.is_empty() || !heal::identity(path).is_some_and(|id| inherited.contains(&id)) {
        return Ok(());
    }
    Err(IndexError::Database {
        what: "open",
        source: "this process was forked while its parent was still inside this index (a call \
                 waiting on another process's lock), and SQLite cannot share an index that way \
                 with a forked child: open the cache in a process started afresh, or fork while \
                 no call is running"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round 30 of review (A): a child refused the index its parent was inside at the fork,
    /// then forked again, and the fork's bookkeeping for its own child cleared the list: it
    /// opened the index after all. What a process inherited stays refused for its life.
    #[test]
    fn an_inherited_index_stays_refused_across_the_childs_own_forks() {
        // Kept for the test process's life: its inode is never another test's index.
        let dir = tempfile::tempdir().expect("tempdir").keep();
        let path = dir.join("index.sqlite3");
        std::fs::write(&path, b"").expect("file");
        let id = heal::identity(&path).expect("an identity on this platform");
        // The parent's fork left a connection to it open; this is the child.
        LEFT_OPEN.write().unwrap_or_else(PoisonError::into_inner).push(id);
        after_fork(true);
        let refused = refuse_inherited(&path).expect_err("inherited");
        assert!(std::error::Error::source(&refused).is_some_and(|c| c.to_string().contains("forked")));
        // The child forks in turn: in it (the parent now), the fork's bookkeeping ends.
        after_fork(false);
        assert!(refuse_inherited(&path).is_err(), "still refused in the child");
        assert!(refuse_inherited(&dir.join("other.sqlite3")).is_ok(), "another file opens");
    }
}
