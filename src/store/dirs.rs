//! The read-only directory discipline of R-C2(b): blob directories are 0555 and become writable
//! only for the instant the store adds to or removes from them.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use crate::error::Error;

const READ_ONLY: u32 = 0o555;
const WRITABLE: u32 = 0o755;

pub(super) fn io_err<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> Error + 'p {
    move |source| Error::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// Creates an owner-only folder (and its parents) if missing.
pub(super) fn create_private(dir: &Path) -> Result<(), Error> {
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_err("create", dir)(e)),
    }
}

fn set_mode(dir: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(mode))
}

/// Runs `op` with `dir` writable, then makes it read-only again. Another process may flip the
/// mode back between our chmod and our `op` (each makes the folder read-only when it is done),
/// so a permission error is retried a bounded number of times.
pub(super) fn with_writable<T>(dir: &Path, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut attempts = 0;
    loop {
        set_mode(dir, WRITABLE)?;
        let result = op();
        let _ = set_mode(dir, READ_ONLY);
        match result {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && attempts < 20 => attempts += 1,
            other => return other,
        }
    }
}

/// Makes sure `dir` exists as a read-only blob folder under `parent`, which is itself a
/// read-only blob folder (or, for an origin folder, the private `origins/`).
pub(super) fn ensure_read_only_dir(
    parent: &Path,
    dir: &Path,
    parent_is_read_only: bool,
) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let make = || match fs::DirBuilder::new().mode(READ_ONLY).create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    };
    if parent_is_read_only {
        with_writable(parent, make)
    } else {
        make()
    }
}

/// Makes every folder under `dir` writable again so the tree can be removed.
pub(super) fn make_tree_writable(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Ok(());
    }
    set_mode(dir, 0o700)?;
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            make_tree_writable(&e.path())?;
        }
    }
    Ok(())
}

/// Removes a whole blob tree (read-only folders included). Missing is fine.
pub(super) fn remove_tree(dir: &Path) -> io::Result<()> {
    match make_tree_writable(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    }
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// fsyncs a folder, so a rename or link in it survives a crash.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}
