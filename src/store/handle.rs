//! Folder handles under the root, reached without ever following a link (R-H1).
//!
//! Every folder below the root is opened relative to its parent's descriptor with
//! `O_DIRECTORY | O_NOFOLLOW`, and every change is made through a descriptor or relative to one
//! (through the [`Disk`] seam), so no path is resolved again after it was checked: a link planted
//! anywhere below the root can never redirect a write, a `chmod` or a read outside it. Blob reads
//! on the hot path open beneath the root descriptor in one call on Linux (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, checked by the kernel for every component at once)
//! and one component at a time on macOS ([`crate::platform`]).
//!
//! Something that is not a folder where a folder belongs (a link, a file, a socket, a FIFO, a
//! device) is removed — the link itself, never its target — and a folder is made in its place,
//! with a warning.
//!
//! The opening itself (the flags, `openat2` or the component walk) is the
//! crate's one opener, [`crate::beneath`], which `serve` uses too (R-E1).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::disk::Disk;
use crate::beneath;
use crate::platform::{self, AsFd as _, BorrowedFd, Kind, OwnedFd, errno};

/// Mode of a blob folder at rest: nobody may add or remove a name (R-C2).
pub(super) const READ_ONLY_DIR: u32 = 0o555;
/// Mode of a blob folder for the instant of an add or a remove.
const WRITABLE_DIR: u32 = 0o755;
/// Mode of the private folders (`origins/`, staging, quarantine).
pub(super) const PRIVATE_DIR: u32 = 0o700;

/// An open folder under the root, and its path for messages only (never resolved again).
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// How a folder handle was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Made {
    /// It was there.
    Found,
    /// This call made it: its parent's names changed and must be synced for durability.
    Created,
}

fn is_not_a_folder(e: &io::Error) -> bool {
    // O_NOFOLLOW on a link: ELOOP; O_DIRECTORY on anything else that is not a folder: ENOTDIR.
    platform::is(e, &[errno::ELOOP, errno::ENOTDIR])
}

impl Dir {
    /// Opens the root itself. The root's own path was resolved and checked by the caller; its
    /// last component must be a real folder, not a link.
    pub(crate) fn open_root(path: &Path) -> io::Result<Dir> {
        let fd = platform::open_folder(path, false)?;
        Ok(Dir {
            fd,
            path: path.to_owned(),
        })
    }

    /// The descriptor.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The path, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A path under this folder, for messages.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens folder `name` without following a link. `Ok(None)` if there is no such name.
    ///
    /// # Errors
    /// `ELOOP`/`ENOTDIR` if something else is there; other system errors.
    pub(super) fn child(&self, name: &str) -> io::Result<Option<Dir>> {
        Ok(beneath::open_dir(self.fd(), Path::new(name))?.map(|fd| Dir {
            fd,
            path: self.path.join(name),
        }))
    }

    /// The names in this folder (without `.` and `..`) and their types as the folder lists them.
    pub(super) fn names(&self) -> io::Result<Vec<(String, Kind)>> {
        // Every name the store makes is ASCII; anything else is a stray, listed lossily.
        Ok(platform::list(self.fd())?
            .into_iter()
            .map(|(name, kind)| (name.to_string_lossy().into_owned(), kind))
            .collect())
    }

    /// Opens a file below this folder for reading, without following any link on the way and
    /// without blocking on a FIFO (R-H1, R-H7): [`beneath::open_file`].
    pub(super) fn open_file_beneath(&self, rel: &str) -> io::Result<File> {
        beneath::open_file(self.fd(), Path::new(rel))
    }

    /// Opens file `name` in this folder for reading, without following a link or blocking.
    pub(super) fn open_file_here(&self, name: &str) -> io::Result<File> {
        beneath::open_file_here(self.fd(), Path::new(name))
    }
}

/// Runs `op` with `dir` writable, then makes it read-only again. Another process may flip the
/// mode back between our `chmod` and our `op` (each makes the folder read-only when it is done),
/// so a permission error is retried a bounded number of times. The mode is set through the
/// descriptor: a folder swapped for a link meanwhile is never the one changed.
pub(super) fn with_writable<T>(
    disk: &dyn Disk,
    dir: &Dir,
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    let mut attempts = 0;
    loop {
        disk.chmod(dir.fd(), WRITABLE_DIR)?;
        let result = op();
        let restored = disk.chmod(dir.fd(), READ_ONLY_DIR);
        match result {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && attempts < 20 => attempts += 1,
            Ok(v) => return restored.map(|()| v),
            Err(e) => return Err(e),
        }
    }
}

/// Where a folder is made: under a read-only blob folder (made writable for the instant), or
/// under a private one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parent {
    ReadOnly,
    Private,
}

/// Opens folder `name` in `parent`, making it with `mode` if it is missing, and replacing
/// whatever else is there — a link, a file, a socket, a FIFO — with a folder (R-H1).
pub(super) fn ensure_dir(
    disk: &dyn Disk,
    parent: &Dir,
    kind: Parent,
    name: &str,
    mode: u32,
) -> io::Result<(Dir, Made)> {
    let mut outcome = Made::Found;
    let change = |op: &mut dyn FnMut() -> io::Result<()>| match kind {
        Parent::ReadOnly => with_writable(disk, parent, op),
        Parent::Private => op(),
    };
    for _ in 0..4 {
        match parent.child(name) {
            Ok(Some(dir)) => return Ok((dir, outcome)),
            Ok(None) => {
                match change(&mut || disk.mkdir(parent.fd(), name, mode)) {
                    Ok(()) => outcome = Made::Created,
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                // mkdir applies the umask; a blob folder must end up exactly `mode`.
                if let Some(dir) = parent.child(name)?
                    && outcome == Made::Created
                {
                    disk.chmod(dir.fd(), mode)?;
                    return Ok((dir, outcome));
                }
            }
            Err(e) if is_not_a_folder(&e) => {
                tracing::warn!(
                    path = %parent.join(name).display(),
                    "not a folder where the cache keeps one (a link, file, socket or FIFO): removed and replaced"
                );
                match change(&mut || disk.unlink(parent.fd(), name, false)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{} keeps changing under a concurrent writer",
        parent.join(name).display()
    )))
}

/// Removes `name` from `parent` whatever it is: a whole folder tree, or any other name (a link
/// is removed itself). The caller makes `parent` writable if it is a read-only folder. Missing is
/// fine.
///
/// The walk never follows a link and holds one folder descriptor at a time whatever the depth: a
/// planted tree thousands of levels deep can exhaust neither the stack nor the descriptor table.
/// It climbs back through `..`, and checks that `..` is the very folder it came down from (device
/// and inode), so a folder moved elsewhere meanwhile can never lead it out of the tree. Each
/// folder is made writable first so a non-root owner can empty it.
pub(super) fn remove_tree(disk: &dyn Disk, parent: &Dir, name: &str) -> io::Result<()> {
    let top = match parent.child(name) {
        Ok(None) => return Ok(()),
        Ok(Some(dir)) => dir,
        Err(e) if is_not_a_folder(&e) => {
            return ignore_missing(disk.unlink(parent.fd(), name, false));
        }
        Err(e) => return Err(e),
    };
    // The way down: each folder's name in its parent and the parent's identity.
    let mut trail: Vec<(String, (u64, u64))> = Vec::new();
    let mut here = top;
    let mut here_name = name.to_owned();
    disk.chmod(here.fd(), PRIVATE_DIR)?;
    loop {
        // Remove every non-folder here; stop at the first folder and go down into it.
        let mut down = None;
        for (child, kind) in here.names()? {
            if kind == Kind::Dir {
                down = Some(child);
                break;
            }
            match disk.unlink(here.fd(), &child, false) {
                // A folder the listing did not type (some filesystems do not): go down into it.
                Err(e) if platform::is(&e, &[errno::EISDIR]) => {
                    down = Some(child);
                    break;
                }
                other => ignore_missing(other)?,
            }
        }
        if let Some(child) = down {
            match here.child(&child) {
                Ok(Some(next)) => {
                    disk.chmod(next.fd(), PRIVATE_DIR)?;
                    trail.push((std::mem::replace(&mut here_name, child), identity(&here)?));
                    here = next;
                }
                Ok(None) => {}
                Err(e) if is_not_a_folder(&e) => {
                    ignore_missing(disk.unlink(here.fd(), &child, false))?;
                }
                Err(e) => return Err(e),
            }
            continue;
        }
        // `here` is empty: remove it from its parent, and climb.
        let Some((up_name, up_id)) = trail.pop() else {
            // Its own handle goes first: a platform that holds a folder against removal while
            // it is open (Windows) would refuse to remove it otherwise.
            drop(here);
            return ignore_missing(disk.unlink(parent.fd(), name, true));
        };
        let up = Dir {
            fd: platform::open_parent(here.fd())?,
            path: here
                .path
                .parent()
                .map_or_else(PathBuf::new, Path::to_path_buf),
        };
        if identity(&up)? != up_id {
            return Err(io::Error::other(format!(
                "{} moved while it was being removed",
                here.path.display()
            )));
        }
        // As above: the emptied folder's handle goes before its name.
        here = up;
        ignore_missing(disk.unlink(here.fd(), &here_name, true))?;
        here_name = up_name;
    }
}

fn identity(dir: &Dir) -> io::Result<(u64, u64)> {
    let st = platform::fstat(dir.fd())?;
    Ok((st.dev, st.ino))
}

fn ignore_missing(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Opens folder `name` in `parent` if it is there, never making one. Something that is not a
/// folder is removed (it can only be debris or a planted link: R-H1) and reads as missing.
pub(super) fn find_dir(
    disk: &dyn Disk,
    parent: &Dir,
    kind: Parent,
    name: &str,
) -> io::Result<Option<Dir>> {
    match parent.child(name) {
        Ok(found) => Ok(found),
        Err(e) if is_not_a_folder(&e) => {
            tracing::warn!(
                path = %parent.join(name).display(),
                "not a folder where the cache keeps one (a link, file, socket or FIFO): removed"
            );
            let remove = || match disk.unlink(parent.fd(), name, false) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            };
            match kind {
                Parent::ReadOnly => with_writable(disk, parent, remove)?,
                Parent::Private => remove()?,
            }
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Walks down from `start` with [`find_dir`], each name with the kind of the folder it is in.
/// `Ok(None)` if any is missing.
pub(super) fn find_path(
    disk: &dyn Disk,
    start: &Dir,
    names: &[(&str, Parent)],
) -> io::Result<Option<Dir>> {
    let mut here: Option<Dir> = None;
    for &(name, kind) in names {
        let parent = here.as_ref().unwrap_or(start);
        match find_dir(disk, parent, kind, name)? {
            Some(d) => here = Some(d),
            None => return Ok(None),
        }
    }
    Ok(here)
}

/// Makes sure each of `names` in `dir` is absent or a regular file: a link, a folder, a socket
/// or anything else planted there is removed — the name itself, never what it points at — with
/// a warning. For the index's files, which `SQLite` opens by path and would otherwise write
/// through (R-H1).
///
/// A name is removed only under the exclusive turn of `dir` ([`crate::turn`]), looked at again
/// there: what this process saw may since have been removed by another, which then made the
/// live file under the name (round 31 of review: a live log removed, acknowledged writes lost).
///
/// A regular file with more than one name is left alone, and the first such name is returned
/// for the caller to refuse: it may be a live index that a hard-link copy (`cp -al`) shares, and
/// removing it would send every other process's writes to a file nobody opens again (round 30
/// of review, B), while writing it would change the file under its other name.
pub(super) fn scrub_to_files<'n>(
    disk: &dyn Disk,
    dir: &Dir,
    names: &[&'n str],
) -> io::Result<Option<&'n str>> {
    let mut planted = false;
    let mut shared = None;
    for &name in names {
        match stat_file(dir, name)? {
            Found::File { one_name: false } => shared = shared.or(Some(name)),
            Found::Other => planted = true,
            Found::File { one_name: true } | Found::Nothing => {}
        }
    }
    if !planted {
        return Ok(shared);
    }
    let _turn = crate::turn::Turn::take(dir.path(), true)?;
    let mut shared = None;
    for &name in names {
        match stat_file(dir, name)? {
            Found::File { one_name: false } => shared = shared.or(Some(name)),
            Found::Other => {
                tracing::warn!(path = %dir.join(name).display(), "not a regular file where the index keeps one: removed");
                remove_tree(disk, dir, name)?;
            }
            Found::File { one_name: true } | Found::Nothing => {}
        }
    }
    Ok(shared)
}

/// What a name in a folder is, as the scrubs of planted names see it.
pub(super) enum Found {
    /// Nothing.
    Nothing,
    /// A regular file, with one name or more.
    File { one_name: bool },
    /// Anything else: a link, a folder, a socket, a FIFO, a device.
    Other,
}

/// What `name` in `dir` is, the name itself (a link is a link).
pub(super) fn stat_file(dir: &Dir, name: &str) -> io::Result<Found> {
    match platform::stat_at(dir.fd(), name) {
        Ok(st) if st.kind == Kind::File => Ok(Found::File {
            one_name: st.nlink == 1,
        }),
        Ok(_) => Ok(Found::Other),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::Nothing),
        Err(e) => Err(e),
    }
}
