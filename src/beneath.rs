//! The crate's one opener: files and folders under a folder's descriptor, reached without
//! following any link (R-H1, R-E1).
//!
//! The store reads its blobs through here, and `serve` (with `inspect`) reads the served folder
//! through here, so both follow the same rules:
//!
//! - everything is opened relative to a descriptor the caller holds, never by a path resolved
//!   again later, so a folder swapped for a link between a check and a use cannot redirect it;
//! - no symbolic link is followed anywhere on the way, no `/proc` magic link, no `..` out of
//!   the folder (on Linux one `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS`, which the kernel checks for every component at once);
//! - files are opened `O_NONBLOCK`, so a FIFO planted under a name never blocks the open
//!   (R-H7); [`open_regular`] then refuses anything that is not a regular file (a FIFO, a socket,
//!   a device such as `/dev/zero`) and anything longer than the caller's bound, from the
//!   descriptor's own metadata, before a byte is read.
//!
//! How each platform does it is the platform layer's business ([`crate::platform`]): Linux
//! asks the kernel with one `openat2` (the component walk where `openat2` is missing), macOS
//! walks one component at a time (`openat` with `O_NOFOLLOW | O_DIRECTORY` for each folder, `..`
//! refused), and Windows walks held folders, each opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`)
//! and kept from being renamed or replaced while held. The rules above hold on every platform.
//! Their tests are each platform's, beside its opener.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::platform::{self, BorrowedFd, Kind};
pub(crate) use crate::platform::{open_dir, open_dir_beneath, open_file_here};

/// Opens the file at `rel` below `dir` for reading, following no link on the way and never
/// blocking on a FIFO (R-H1, R-H7). The store's blob reads use this directly: a blob that is
/// not a regular file fails its own checks (R-C2) without a `fstat` on the hot path.
///
/// # Errors
/// `ELOOP` for a link anywhere on the way, `EXDEV` for a path that would leave `dir`, `ENXIO`
/// for a socket, `ENOENT`, or another system error.
pub(crate) fn open_file(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    platform::open_file_beneath(dir, rel)
}

/// Why [`open_regular`] refused a name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// It could not be opened: missing, a link on the way, a socket, unreadable.
    #[error("cannot be opened")]
    Open(#[source] io::Error),
    /// It is not a regular file (a FIFO, a device, a folder).
    #[error("is not a regular file")]
    NotRegular,
    /// It is longer than the bound.
    #[error("is {len} bytes, over the bound of {max}")]
    TooLong {
        /// Its length.
        len: u64,
        /// The bound.
        max: u64,
    },
}

/// Opens the file at `rel` below `dir` as [`open_file`] does, and accepts it only if the
/// descriptor is a regular file of at most `max` bytes (R-E1: a FIFO, a device such as
/// `/dev/zero`, or a file over the limits is refused before a byte is read). Returns the file
/// and its length.
///
/// # Errors
/// [`Refused`] with the reason.
pub(crate) fn open_regular(
    dir: BorrowedFd<'_>,
    rel: &Path,
    max: u64,
) -> Result<(File, u64), Refused> {
    let file = open_file(dir, rel).map_err(Refused::Open)?;
    let st = platform::fstat(platform::AsFd::as_fd(&file)).map_err(Refused::Open)?;
    if st.kind != Kind::File {
        return Err(Refused::NotRegular);
    }
    let len = st.size;
    if len > max {
        return Err(Refused::TooLong { len, max });
    }
    Ok((file, len))
}
