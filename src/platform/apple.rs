//! macOS: the same guarantees as Linux with POSIX means.
//!
//! - Opening beneath a folder is the shared component walk (macOS has no `openat2`): each folder
//!   opened `O_NOFOLLOW | O_DIRECTORY` relative to the one before, `..` and absolute paths
//!   refused before any call, the last name opened `O_NOFOLLOW | O_NONBLOCK`. A link anywhere
//!   fails (`ELOOP`, or `ENOTDIR` where it stands for a folder), as under `RESOLVE_NO_SYMLINKS`; macOS has no `/proc` magic links to refuse.
//!   A folder renamed away while the walk holds its descriptor cannot lead the walk out: every
//!   step is relative to a descriptor already held, never to a path resolved again.
//! - Durability is `fcntl(F_FULLFSYNC)` for files and folders: on macOS `fsync` hands the data to
//!   the drive but lets the drive keep it in its volatile cache, so a power cut could lose a
//!   file the index already records. A filesystem that refuses `F_FULLFSYNC` (`ENOTSUP`,
//!   `EINVAL`: network and some FUSE mounts, which have no drive cache to flush through it) gets
//!   `fsync`, as `SQLite` does.
//! - There is no `syncfs`: every batch is synced file by file and folder by folder (the store's
//!   path for any filesystem Linux does not trust either).

use std::fs::File;
use std::io;
use std::path::Path;

pub(crate) use super::posix::*;
use super::posix::{open_dir_walking, open_file_walking};

/// None: macOS has no `/proc/self/fd` to open a pipe anew through, and making the standard
/// descriptors non-blocking would change them for everything that shares them (see the Linux
/// version); `serve` keeps tokio's stdin and stdout.
#[cfg(feature = "serve")]
pub(crate) fn standard_pipes() -> (Option<super::posix::PipeIn>, Option<super::posix::PipeOut>) {
    (None, None)
}

/// Opens the folder at `rel` below `dir` (`.` or empty for `dir` itself), following no link on
/// the way: the component walk.
///
/// # Errors
/// `ELOOP` for a link anywhere on the way, `EXDEV` for `..` or an absolute path, `ENOTDIR`,
/// `ENOENT`, or another system error.
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    open_dir_walking(dir, rel)
}

/// Opens the file at `rel` below `dir` for reading, following no link on the way and never
/// blocking on a FIFO: the component walk.
///
/// # Errors
/// As [`open_dir_beneath`]; `ENXIO` for a socket.
pub(crate) fn open_file_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    open_file_walking(dir, rel)
}

/// Makes a file's data, or a folder's names, durable on the disk itself: `F_FULLFSYNC`.
///
/// # Errors
/// The system call's error.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    match rustix::fs::fcntl_fullfsync(fd) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::NOTSUP | rustix::io::Errno::INVAL) => super::posix::fsync(fd),
        Err(e) => Err(e.into()),
    }
}

/// macOS has no `syncfs`: the store syncs each file and folder instead.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn sync_filesystem(fd: BorrowedFd<'_>) -> io::Result<()> {
    let _ = fd;
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Never: there is no filesystem-wide sync to trust.
pub(crate) fn filesystem_sync_is_durable(fd: BorrowedFd<'_>) -> bool {
    let _ = fd;
    false
}
