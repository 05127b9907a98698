//! The crate's one opener: files and folders under a folder's descriptor, reached without
//! following any link (R-H1, R-E1).
//!
//! The store reads its blobs through here, and `serve` (with `inspect`) reads the served folder
//! through here, so both follow the same rules:
//!
//! - everything is opened relative to a descriptor the caller holds, never by a path resolved
//!   again later, so a folder swapped for a link between a check and a use cannot redirect it;
//! - a file is opened with one `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS`, which the kernel checks for every component at once: no symbolic
//!   link, no `/proc` magic link, no `..` out of the folder;
//! - files are opened `O_NONBLOCK`, so a FIFO planted under a name never blocks the open
//!   (R-H7); [`open_regular`] then refuses anything that is not a regular file (a FIFO, a socket,
//!   a device such as `/dev/zero`) and anything longer than the caller's bound, from the
//!   descriptor's own metadata, before a byte is read.
//!
//! A kernel without `openat2` (before 5.6), or a sandbox that forbids it, gets the same rules
//! one component at a time (`openat` with `O_NOFOLLOW | O_DIRECTORY` for each folder), only
//! slower.

use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};

/// How a folder is opened: read-only, a folder or nothing, never through a link.
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How a file is opened: read-only, never through a link, never blocking on a FIFO.
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Opens folder `name` directly in `dir` without following a link. `Ok(None)` if there is no
/// such name.
///
/// # Errors
/// `ELOOP`/`ENOTDIR` if something other than a folder is there; other system errors.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &Path) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens the folder at `rel` below `dir` (`.` or empty for `dir` itself), following no link
/// on the way.
///
/// # Errors
/// `ELOOP` for a link anywhere on the way, `EXDEV` for a path that would leave `dir`,
/// `ENOTDIR`, `ENOENT`, or another system error.
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match rustix::fs::openat2(dir, rel, DIR_FLAGS, Mode::empty(), RESOLVE) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            let (parents, last) = split(rel)?;
            let parent = walk(dir, &parents)?;
            let here = parent.as_ref().map_or(dir, std::os::fd::AsFd::as_fd);
            match last {
                Some(name) => {
                    open_dir(here, name)?.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
                }
                None => Ok(rustix::fs::openat(here, ".", DIR_FLAGS, Mode::empty())?),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Opens the file at `rel` below `dir` for reading, following no link on the way and never
/// blocking on a FIFO (R-H1, R-H7). The store's blob reads use this directly: a blob that is
/// not a regular file fails its own checks (R-C2) without a `fstat` on the hot path.
///
/// # Errors
/// `ELOOP` for a link anywhere on the way, `EXDEV` for a path that would leave `dir`, `ENXIO`
/// for a socket, `ENOENT`, or another system error.
pub(crate) fn open_file(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    match rustix::fs::openat2(dir, rel, FILE_FLAGS, Mode::empty(), RESOLVE) {
        Ok(fd) => Ok(File::from(fd)),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => open_file_walking(dir, rel),
        Err(e) => Err(e.into()),
    }
}

/// Opens file `name` directly in `dir` for reading, without following a link or blocking.
///
/// # Errors
/// The system call's error.
pub(crate) fn open_file_here(dir: BorrowedFd<'_>, name: &Path) -> io::Result<File> {
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        FILE_FLAGS,
        Mode::empty(),
    )?))
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
    let st = rustix::fs::fstat(&file).map_err(|e| Refused::Open(e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Refused::NotRegular);
    }
    let len = u64::try_from(st.st_size).unwrap_or(u64::MAX);
    if len > max {
        return Err(Refused::TooLong { len, max });
    }
    Ok((file, len))
}

/// `rel` as its folder components and its last component; only plain names are allowed (no
/// `..`, no root), as `RESOLVE_BENEATH` would.
fn split(rel: &Path) -> io::Result<(Vec<&Path>, Option<&Path>)> {
    let mut names = Vec::new();
    for part in rel.components() {
        match part {
            Component::Normal(name) => names.push(Path::new(name)),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
        }
    }
    let last = names.pop();
    Ok((names, last))
}

/// Opens each of `names` in turn below `dir` with [`open_dir`]; `None` for no names (`dir`
/// itself).
fn walk(dir: BorrowedFd<'_>, names: &[&Path]) -> io::Result<Option<OwnedFd>> {
    let mut here: Option<OwnedFd> = None;
    for name in names {
        let parent = here.as_ref().map_or(dir, std::os::fd::AsFd::as_fd);
        match open_dir(parent, name)? {
            Some(next) => here = Some(next),
            None => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }
    Ok(here)
}

/// [`open_file`] one component at a time, for kernels without `openat2`.
fn open_file_walking(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    let (parents, last) = split(rel)?;
    let Some(last) = last else {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    };
    let parent = walk(dir, &parents)?;
    open_file_here(parent.as_ref().map_or(dir, std::os::fd::AsFd::as_fd), last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd as _;

    fn root(path: &Path) -> OwnedFd {
        rustix::fs::open(path, DIR_FLAGS, Mode::empty()).expect("open the folder")
    }

    #[test]
    fn e1_a_link_anywhere_on_the_way_is_refused_and_a_plain_file_opens() {
        let tmp = crate::scratch::scratch();
        std::fs::create_dir_all(tmp.path().join("a/b")).expect("mkdir");
        std::fs::write(tmp.path().join("a/b/f"), b"inside").expect("write");
        std::fs::write(tmp.path().join("outside"), b"outside").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("a"), tmp.path().join("l")).expect("link");
        std::os::unix::fs::symlink(tmp.path().join("outside"), tmp.path().join("a/lf"))
            .expect("link");
        let fd = root(tmp.path());
        assert!(open_file(fd.as_fd(), Path::new("a/b/f")).is_ok());
        for rel in ["l/b/f", "a/lf", "../outside", "/etc/passwd"] {
            let e = open_file(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert!(
                matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)),
                "{rel}: {e}"
            );
            let e = open_file_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert!(
                matches!(
                    e.raw_os_error(),
                    Some(libc::ELOOP | libc::EXDEV | libc::ENOTDIR)
                ),
                "walking {rel}: {e}"
            );
        }
        assert!(open_dir_beneath(fd.as_fd(), Path::new("a/b")).is_ok());
        assert!(open_dir_beneath(fd.as_fd(), Path::new("l/b")).is_err());
    }

    #[test]
    fn e1_open_regular_refuses_a_fifo_without_blocking_and_a_file_over_the_bound() {
        let tmp = crate::scratch::scratch();
        let fifo = tmp.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        std::fs::write(tmp.path().join("ten"), [7u8; 10]).expect("write");
        let fd = root(tmp.path());
        assert!(matches!(
            open_regular(fd.as_fd(), Path::new("fifo"), 100),
            Err(Refused::NotRegular)
        ));
        assert!(matches!(
            open_regular(fd.as_fd(), Path::new("ten"), 9),
            Err(Refused::TooLong { len: 10, max: 9 })
        ));
        let (_, len) = open_regular(fd.as_fd(), Path::new("ten"), 10).expect("inside the bound");
        assert_eq!(len, 10);
    }
}
