//! Windows: a documented subset, never a silent weakening.
//!
//! The cache's guarantees rest on two things Windows offers only through system calls outside
//! the standard library: opening a name *relative to a folder handle* (`NtCreateFile` with a
//! root directory, or a walk that holds each component open with `FILE_FLAG_OPEN_REPARSE_POINT`
//! and checks it), and an *owner-only ACL* on the root (`SetSecurityInfo`). Both need raw FFI,
//! and the crate allows `unsafe` in its one memory-map module only. So this version:
//!
//! - refuses to open a cache root ([`DISK_CACHE`]), with a clear error at open;
//! - refuses every folder-relative open (serving or inspecting a folder), with a clear error;
//! - keeps what needs none of that: parsing, validation, configs, lock files, MCP sources, the
//!   CLI's argument handling, and the calls on a file already open (metadata, `FlushFileBuffers`,
//!   the read-only attribute).
//!
//! Metadata a check relies on and Windows' standard library cannot give (owner, link count,
//! file identity) is reported so that the check fails closed: link count 0, no identity, and a
//! mode that is never owner-only.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

pub(crate) use std::os::windows::io::{BorrowedHandle as BorrowedFd, OwnedHandle as OwnedFd};

use super::{Kind, Stat};

/// `.as_fd()` on Windows: the handle, under the name the layers above use.
pub(crate) trait AsFd {
    /// The borrowed handle.
    fn as_fd(&self) -> BorrowedFd<'_>;
}

impl<T: std::os::windows::io::AsHandle + ?Sized> AsFd for T {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.as_handle()
    }
}

/// Win32 error codes for the conditions the layers above tell apart. Where Windows has no such
/// condition the constant is one no Windows call returns, so it matches nothing.
pub(crate) mod errno {
    /// `ERROR_ACCESS_DENIED`.
    pub(crate) const EACCES: i32 = 5;
    /// No Windows equivalent (a FIFO opened without blocking).
    pub(crate) const EAGAIN: i32 = NONE;
    /// `ERROR_IO_DEVICE` (what the fault-injecting disk answers).
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) const EIO: i32 = 1117;
    /// No Windows equivalent.
    pub(crate) const EISDIR: i32 = NONE - 1;
    /// `ERROR_CANT_RESOLVE_FILENAME`: too many links on the way.
    pub(crate) const ELOOP: i32 = 1921;
    /// No Windows equivalent.
    pub(crate) const ENODEV: i32 = NONE - 2;
    /// `ERROR_FILE_NOT_FOUND`.
    pub(crate) const ENOENT: i32 = 2;
    /// `ERROR_DISK_FULL` (what the fault-injecting disk answers).
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) const ENOSPC: i32 = 112;
    /// `ERROR_DIRECTORY`: the name is not a folder.
    pub(crate) const ENOTDIR: i32 = 267;
    /// No Windows equivalent (a socket has no name in a folder).
    pub(crate) const ENXIO: i32 = NONE - 3;
    /// `ERROR_INVALID_FUNCTION`.
    pub(crate) const EPERM: i32 = 1;
    /// `ERROR_WRITE_PROTECT`.
    pub(crate) const EROFS: i32 = 19;
    /// `ERROR_NOT_SAME_DEVICE`.
    pub(crate) const EXDEV: i32 = 17;
    const NONE: i32 = i32::MIN + 16;
}

/// Why a cache root is refused on Windows (the sentence ends with the root's path).
pub(crate) const DISK_CACHE: Result<(), &str> = Err(
    "the on-disk cache is not available on Windows in this version (it needs folder-relative opens and an owner-only ACL, see docs/guarantees.md):",
);

/// The error of every folder-relative call.
fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "opening beneath a folder without following links is not available on Windows in this version",
    )
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_folder(path: &Path, follow: bool) -> io::Result<OwnedFd> {
    let _ = (path, follow);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &Path) -> io::Result<Option<OwnedFd>> {
    let _ = (dir, name);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let _ = (dir, rel);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_file_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    let _ = (dir, rel);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_file_here(dir: BorrowedFd<'_>, name: &Path) -> io::Result<File> {
    let _ = (dir, name);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let _ = dir;
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn open_lock(dir: BorrowedFd<'_>, name: &str, writable: bool) -> io::Result<File> {
    let _ = (dir, name, writable);
    Err(unsupported())
}

/// `FILE_ATTRIBUTE_READONLY`.
const READONLY: u32 = 0x1;
/// `FILE_ATTRIBUTE_REPARSE_POINT`: a symbolic link, a junction, or another redirection.
const REPARSE_POINT: u32 = 0x400;
/// `FILE_FLAG_OPEN_REPARSE_POINT`: open a link itself, never what it points to.
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// The layer's [`Stat`] of an open file's metadata; what Windows' standard library cannot say
/// is reported so that every check on it fails closed.
fn of(meta: &std::fs::Metadata) -> Stat {
    let attributes = meta.file_attributes();
    let kind = if attributes & REPARSE_POINT != 0 {
        Kind::Link
    } else if meta.is_dir() {
        Kind::Dir
    } else if meta.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    let ns = |t: io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    };
    Stat {
        kind,
        // Never owner-only: who may write is an ACL's business, which this layer cannot read.
        mode: if attributes & READONLY != 0 {
            0o444
        } else {
            0o666
        },
        size: meta.len(),
        // The standard library does not say what NTFS allocated: the length in 4 KiB clusters,
        // NTFS's default (the quota needs a root, which this version refuses here anyway).
        allocated: meta.len().div_ceil(4096).saturating_mul(4096),
        uid: 0,
        // Unknown: 0, so "exactly one name" never holds.
        nlink: 0,
        // Unknown: no identity, so no evidence is ever taken on it.
        dev: 0,
        ino: 0,
        mtime_ns: ns(meta.modified()),
        // Windows' change time is not in the standard library; the last write time stands in.
        ctime_ns: ns(meta.modified()),
    }
}

/// A `File` for a borrowed handle, for the standard library's calls on it.
fn file_of(fd: BorrowedFd<'_>) -> io::Result<File> {
    Ok(File::from(fd.try_clone_to_owned()?))
}

/// The metadata of an open file or folder.
///
/// # Errors
/// The system call's error.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    Ok(of(&file_of(fd)?.metadata()?))
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: impl AsRef<Path>) -> io::Result<Stat> {
    let _ = (dir, name.as_ref());
    Err(unsupported())
}

/// Not known without a root (which this version refuses): the caller's default.
pub(crate) fn block_size(dir: BorrowedFd<'_>) -> Option<u64> {
    let _ = dir;
    None
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<(OsString, Kind)>> {
    let _ = dir;
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn mkdir_at(dir: BorrowedFd<'_>, name: &str, bits: u32) -> io::Result<()> {
    let _ = (dir, name, bits);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn create_at(dir: BorrowedFd<'_>, name: &str, bits: u32) -> io::Result<File> {
    let _ = (dir, name, bits);
    Err(unsupported())
}

/// `FlushFileBuffers`: the file's data and metadata written through to the disk.
///
/// # Errors
/// The system call's error.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    file_of(fd)?.sync_all()
}

/// Windows has no filesystem-wide sync the store could trust.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn sync_filesystem(fd: BorrowedFd<'_>) -> io::Result<()> {
    let _ = fd;
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Never.
pub(crate) fn filesystem_sync_is_durable(fd: BorrowedFd<'_>) -> bool {
    let _ = fd;
    false
}

/// The read-only attribute: set when `bits` allow no write, cleared otherwise.
///
/// # Errors
/// The system call's error.
pub(crate) fn chmod(fd: BorrowedFd<'_>, bits: u32) -> io::Result<()> {
    let file = file_of(fd)?;
    let mut permissions = file.metadata()?.permissions();
    permissions.set_readonly(bits & 0o222 == 0);
    file.set_permissions(permissions)
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn link_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    let _ = (from_dir, from, to_dir, to);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn rename_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    let _ = (from_dir, from, to_dir, to);
    Err(unsupported())
}

/// Refused: see the module's documentation.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn unlink_at(dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()> {
    let _ = (dir, name, folder);
    Err(unsupported())
}

/// No user id: ownership on Windows is an ACL's business. 0, which [`Stat::uid`] also reports.
pub(crate) fn user_id() -> u32 {
    0
}

/// A private file is read without following a link in its last component: the link itself is
/// opened, and the caller's "is it a regular file" check refuses it.
pub(crate) fn read_no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(OPEN_REPARSE_POINT)
}

/// A private file is created without following a link; it takes its folder's ACL (on a user's
/// profile, the user's own), which this layer cannot check — so reading it back refuses it
/// ([`owner_and_mode`]).
pub(crate) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(OPEN_REPARSE_POINT)
}

/// Folders on the way to a private file take their parent's ACL.
pub(crate) fn private_dir_builder() -> std::fs::DirBuilder {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    b
}

/// The owner and permission bits as [`Stat`] reports them: never owner-only, so a check that
/// needs an owner-only file fails closed.
pub(crate) fn owner_and_mode(meta: &std::fs::Metadata) -> (u32, u32) {
    (
        0,
        if meta.permissions().readonly() {
            0o444
        } else {
            0o666
        },
    )
}

/// What a name that is neither a regular file nor a folder is, for a message.
pub(crate) fn special_kind(kind: std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "a link"
    } else {
        "a special file"
    }
}

/// Unknown on Windows' standard library.
pub(crate) fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    let _ = meta;
    None
}
