//! A turn at the cache root's own files: the root folder `flock`ed, shared by whoever opens the
//! index, exclusive by whoever moves or removes one of the files `SQLite` and the lock open by
//! path (a damaged index moved aside, a planted link removed).
//!
//! Without it, a process that looked at a name and acted on it later acted on whatever was there
//! by then: a healer moved another's fresh index aside (round 30 of review, E), and a scrub that
//! had seen a planted link removed the live log another process had made since, or the lock file
//! another held (round 31: acknowledged writes lost, two exclusive lock holders). Under the
//! exclusive turn the name is looked at again before anything is done to it.
//!
//! `SQLite` takes no `flock` and no lock on a folder, so the turn orders these steps and nothing
//! else. Released explicitly: a child forked meanwhile shares the lock's open description and
//! never closes it. Windows cannot lock a folder (`platform::folder_lock_file`): there the turn
//! is empty and these steps go unordered (docs/guarantees.md).

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long to wait for a turn: moving a file aside and opening an index take milliseconds, so
/// a turn held this long is a process stopped inside it, or something else holding the folder.
const WAIT: Duration = Duration::from_secs(20);

/// A held turn; dropping it ends it.
pub(crate) struct Turn(Option<File>);

impl Turn {
    /// Takes the turn on `folder`, shared or exclusive, waiting at most 20 s.
    ///
    /// # Errors
    /// `TimedOut` when another process holds the folder's lock past the wait; the error of
    /// opening or locking the folder.
    pub(crate) fn take(folder: &Path, exclusive: bool) -> io::Result<Turn> {
        let Some(file) = crate::platform::folder_lock_file(folder)? else {
            return Ok(Turn(None));
        };
        let start = Instant::now();
        loop {
            let taken = if exclusive {
                file.try_lock()
            } else {
                file.try_lock_shared()
            };
            match taken {
                Ok(()) => return Ok(Turn(Some(file))),
                Err(TryLockError::WouldBlock) if start.elapsed() < WAIT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the folder has been locked by another process for 20 s (a skillcache \
                         process moving or removing an index file, or another program that \
                         locked the folder)",
                    ));
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(file) = &self.0 {
            let _ = file.unlock();
        }
    }
}
