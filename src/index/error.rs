//! The index layer's errors.

use std::fmt;

use crate::display::SafePath;

/// The index database failed or refused.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The index database failed.
    #[error("index error: {what}")]
    Database {
        /// What was being done.
        what: &'static str,
        /// The cause (`SQLite`'s own error, kept out of the public API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The index was written by a newer skillcache; it is left untouched (R-H6: not damage).
    #[error(
        "the index has schema version {found}, newer than this skillcache supports ({supported}); upgrade skillcache"
    )]
    TooNew {
        /// The version found in the database.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },

    /// The index could only be opened read-only (a read-only mount, no room for its shared
    /// memory file), so nothing can be recorded; cached entries are still served (R-H5).
    #[error("the index {} is open read-only (read-only mount or disk full): cannot {what}", SafePath(path))]
    ReadOnly {
        /// The database file.
        path: std::path::PathBuf,
        /// What could not be done.
        what: &'static str,
    },

    /// A file operation on the index's own files failed (moving a damaged database aside, the
    /// host key file).
    #[error("cannot {op} {}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },

    /// The host key that seals index rows is refused or unreadable (R-H3).
    #[error("host key {} refused: {problem}", SafePath(path))]
    HostKey {
        /// The key file.
        path: std::path::PathBuf,
        /// What is wrong with it, and how to fix it.
        problem: KeyProblem,
    },
}

impl IndexError {
    /// Whether the disk is full, so that maintenance that frees space (gc, purge) can carry on
    /// past it (R-H5).
    pub(crate) fn is_disk_full(&self) -> bool {
        let IndexError::Database { source, .. } = self else {
            return false;
        };
        source
            .downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error)
            .is_some_and(|f| {
                f.code == rusqlite::ErrorCode::DiskFull
                    || f.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE
                    || f.extended_code == rusqlite::ffi::SQLITE_IOERR_WRITE
            })
    }

    /// Whether nothing can be recorded now — a read-only index, or a full disk — which must not
    /// fail a read the server or the store can still serve (R-H5): the caller serves without
    /// keeping a record.
    pub(crate) fn cannot_record(&self) -> bool {
        matches!(self, IndexError::ReadOnly { .. }) || self.is_disk_full()
    }
}

/// What is wrong with a host key file (R-H3). Each message says how to fix it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    /// A symlink, folder, device or other non-regular file is where the key should be.
    NotARegularFile,
    /// The file does not hold exactly 32 bytes.
    WrongLength {
        /// Its length.
        len: u64,
    },
    /// Group or others may read or write it.
    Accessible {
        /// Its permission bits.
        mode: u32,
    },
    /// It belongs to another user.
    NotOwned {
        /// Its owner.
        owner: u32,
    },
    /// It lies inside the cache root, which anyone who may write the root could read or replace.
    InsideRoot {
        /// The cache root.
        root: std::path::PathBuf,
    },
    /// It lies inside a skill discovery path, where an agent would load it as a skill's file.
    InsideDiscovery {
        /// The discovery path.
        folder: std::path::PathBuf,
    },
    /// A folder on its path could be changed by another user (theirs, or writable by group or
    /// others without the sticky bit), who could swap it for a link while the key is made.
    FolderNotOurs {
        /// The folder.
        folder: std::path::PathBuf,
    },
    /// Its folder cannot be reached: a part of the path is not a folder, or it passes through
    /// more than 40 symbolic links.
    FolderUnreachable,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyProblem::NotARegularFile => f.write_str(
                "it is not a regular file; remove it (a new key is created on next use) or point --key-file at the key",
            ),
            KeyProblem::WrongLength { len } => write!(
                f,
                "it holds {len} bytes, a host key holds 32; remove it to start with a new key (cached entries are then fetched again)"
            ),
            KeyProblem::Accessible { mode } => write!(
                f,
                "its mode is {mode:04o}: group or others may access it; run chmod 600 on it"
            ),
            KeyProblem::NotOwned { owner } => write!(
                f,
                "it belongs to user {owner}, not to the user running skillcache; use a key of your own"
            ),
            KeyProblem::InsideRoot { root } => write!(
                f,
                "it lies inside the cache root {}; keep it outside the root (the default is ~/.config/skillcache/host.key)",
                SafePath(root)
            ),
            KeyProblem::FolderNotOurs { folder } => write!(
                f,
                "the folder {} on its path could be changed by another user (theirs, or writable by group or others), who could swap it for a link while the key is made; keep the key below folders only you or the superuser can change (the default is ~/.config/skillcache/host.key)",
                SafePath(folder)
            ),
            KeyProblem::FolderUnreachable => f.write_str(
                "its folder cannot be reached (a part of the path is not a folder, or it passes through more than 40 symbolic links); point the key file option or SKILLCACHE_KEY_FILE at a file in a folder of your own",
            ),
            KeyProblem::InsideDiscovery { folder } => write!(
                f,
                "it lies inside the skill discovery path {}, where an agent would load it as a skill's file; keep it elsewhere (the default is ~/.config/skillcache/host.key)",
                SafePath(folder)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::index::db_err;

    #[test]
    fn h5_disk_full_is_recognised_and_other_errors_are_not() {
        let full = db_err("store entry")(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        ));
        assert!(full.is_disk_full());
        let busy = db_err("store entry")(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        ));
        assert!(!busy.is_disk_full());
    }
}
