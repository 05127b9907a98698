//! The advisory lock file: shared while publishing or reading, exclusive for gc.
//!
//! A publisher holds the shared lock from its blob write until its index rows are committed, so
//! `gc`, holding the exclusive lock, can never delete a blob that is about to be referenced. The
//! locks are std's `File::lock` / `lock_shared` (flock), which replace the unmaintained `fs2`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use super::BlobStore;
use super::dirs::io_err;
use crate::error::Error;

/// Which lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Many holders at once: normal use.
    Shared,
    /// One holder, no shared holders: gc and sweeping.
    Exclusive,
}

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

impl BlobStore {
    fn lock_file(&self) -> Result<File, Error> {
        let path = self.layout.lock_file();
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io_err("open", &path))
    }

    /// Waits for and takes the lock.
    ///
    /// # Errors
    /// [`Error::Io`] if the lock file cannot be opened or locked.
    pub fn lock(&self, mode: LockMode) -> Result<LockGuard, Error> {
        let file = self.lock_file()?;
        let path = self.layout.lock_file();
        match mode {
            LockMode::Shared => file.lock_shared(),
            LockMode::Exclusive => file.lock(),
        }
        .map_err(io_err("lock", &path))?;
        Ok(LockGuard { _file: file })
    }

    /// Takes the exclusive lock if nobody holds any lock now.
    ///
    /// # Errors
    /// [`Error::Io`] if the lock file cannot be opened.
    pub fn try_lock_exclusive(&self) -> Result<Option<LockGuard>, Error> {
        let file = self.lock_file()?;
        Ok(file.try_lock().is_ok().then_some(LockGuard { _file: file }))
    }
}
