//! The platform layer's part that the CLI needs as well as the library: opening a file the user
//! names, and setting a path's mode. One file, compiled into the library (`platform::named`) and
//! into the `skillcache` binary through `#[path]`, so both read a named file the same way.

// Not every function is used by both crates that compile this file.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// A file the user names is opened without blocking (a FIFO returns at once instead of waiting
/// for a writer) and without acquiring a controlling terminal from a tty named as a file.
#[cfg(unix)]
pub(crate) fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt as _;
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
}

/// Opening a path on Windows never blocks on a FIFO (named pipes live under `\\.\pipe\`, not in
/// folders) and never acquires a terminal: nothing to add.
#[cfg(windows)]
pub(crate) fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// Sets the mode of `path` to exactly `bits`.
///
/// # Errors
/// The system call's error.
#[cfg(unix)]
pub(crate) fn set_mode(path: &Path, bits: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits))
}

/// Sets the read-only attribute of `path` when `bits` allow no write, clears it otherwise (the
/// only part of a mode Windows keeps on a file).
///
/// # Errors
/// The system call's error.
#[cfg(windows)]
pub(crate) fn set_mode(path: &Path, bits: u32) -> io::Result<()> {
    let mut permissions = std::fs::symlink_metadata(path)?.permissions();
    permissions.set_readonly(bits & 0o222 == 0);
    std::fs::set_permissions(path, permissions)
}

/// Gives a folder's owner back full access to it (a test's scratch folder, sealed read-only by
/// the store, before it is removed): read, write and search bits for the owner.
///
/// # Errors
/// The system call's error.
#[cfg(unix)]
pub(crate) fn let_owner_in(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode();
    if mode & 0o700 == 0o700 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o700))
}

/// Clears a folder's read-only attribute (Windows' only part of a mode on a folder).
///
/// # Errors
/// The system call's error.
#[cfg(windows)]
// Windows: `set_readonly(false)` clears the one attribute; no bits for others exist to widen.
#[allow(clippy::permissions_set_readonly_false)]
pub(crate) fn let_owner_in(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    let mut permissions = meta.permissions();
    if !permissions.readonly() {
        return Ok(());
    }
    permissions.set_readonly(false);
    std::fs::set_permissions(path, permissions)
}
