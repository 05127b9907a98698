//! The POSIX part of the platform layer, shared by Linux and macOS: folder-relative calls
//! through rustix, the component walk that opens beneath a folder without following a link, and
//! metadata in the layer's own widths.
//!
//! The walk is macOS' opener and Linux's fallback (no `openat2` before 5.6, or a sandbox that
//! forbids it): each folder on the way is opened with `openat(O_NOFOLLOW | O_DIRECTORY)` relative
//! to the one before, so a link anywhere fails (`ELOOP`, or `ENOTDIR` where the link stands for a
//! folder) and so does anything else that is not a folder (`ENOTDIR`); `..` and absolute paths are refused before any call (`EXDEV`), as `RESOLVE_BENEATH`
//! refuses them; and the last name is opened `O_NOFOLLOW | O_NONBLOCK`, so neither a link nor a
//! FIFO planted there is followed or blocks. What was opened is then judged by its descriptor's
//! own metadata by the caller ([`crate::beneath::open_regular`]), never by a path.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path};

pub(crate) use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawMode};

use super::{Kind, Stat};

/// The raw OS error codes the layers above tell apart.
pub(crate) mod errno {
    pub(crate) use libc::{
        EACCES, EAGAIN, EEXIST, EISDIR, ELOOP, ENODEV, ENOENT, ENOTDIR, ENOTEMPTY, ENXIO, EPERM,
        EROFS, EXDEV,
    };
    // What the fault-injecting disk answers.
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) use libc::{EIO, ENOSPC};
    /// A folder another process holds open against removal: no such condition on POSIX, so it
    /// matches nothing.
    pub(crate) const EHELD: i32 = i32::MIN;
}

/// Every POSIX platform keeps a cache root anywhere: who may write it is checked on the opened
/// root itself (its owner and mode).
#[allow(clippy::unnecessary_wraps)] // Windows refuses some
pub(crate) fn disk_cache(root: &std::path::Path) -> Result<(), &'static str> {
    let _ = root;
    Ok(())
}

/// The user's home folder: `$HOME`, else `/`.
pub(crate) fn home() -> std::path::PathBuf {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::PathBuf::from)
}

/// Where caches live: `$XDG_CACHE_HOME`, else `~/.cache`.
pub(crate) fn cache_home() -> std::path::PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".cache"), std::path::PathBuf::from)
}

/// Where configuration lives: `$XDG_CONFIG_HOME`, else `~/.config`.
pub(crate) fn config_home() -> std::path::PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".config"), std::path::PathBuf::from)
}

/// Fills `buf` from the system's random generator (`/dev/urandom`).
///
/// # Errors
/// The read's error.
pub(crate) fn random(buf: &mut [u8]) -> io::Result<()> {
    use std::io::Read as _;
    File::open("/dev/urandom")?.read_exact(buf)
}

/// Every POSIX platform reads the evidence `Guaranteed` isolation trusts.
pub(crate) const GUARANTEED: Result<(), &str> = Ok(());

/// Whether a folder's descriptor may be kept open for later reads without getting in anyone's
/// way (the store's held blob folders, `store::held`): here an open descriptor never stops the
/// folder or anything above it from being renamed or removed.
pub(crate) const HOLD_FOLDERS: bool = true;

/// How a folder is opened: read-only, a folder or nothing, never through a link.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How a file is opened: read-only, never through a link, never blocking on a FIFO.
pub(super) const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// How a folder is opened from a path: as [`DIR_FLAGS`], following a link in the last component
/// only when the caller names the folder itself (`follow`).
pub(super) const fn dir_flags(follow: bool) -> OFlags {
    if follow {
        DIR_FLAGS.difference(OFlags::NOFOLLOW)
    } else {
        DIR_FLAGS
    }
}

/// A mode for rustix in this platform's width (`mode_t` is 16 bits on macOS).
fn mode(bits: u32) -> Mode {
    Mode::from_raw_mode(RawMode::try_from(bits & 0o7777).unwrap_or(0))
}

/// Opens the folder at `path`. Its last component must be a real folder unless `follow` (a
/// folder the caller names, such as `~/skills`, may be a link).
///
/// # Errors
/// `ELOOP`/`ENOTDIR` for something other than a folder; other system errors.
pub(crate) fn open_folder(path: &Path, follow: bool) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(path, dir_flags(follow), Mode::empty())?)
}

/// Folder `path` (its last component not followed) as a file to `flock`: a lock between
/// processes that no file of the folder's carries (`SQLite`'s own locks are `fcntl` locks on its
/// files, which a `flock` on the folder neither takes nor releases).
///
/// # Errors
/// The system call's error.
#[allow(clippy::unnecessary_wraps)] // Windows has none to give
pub(crate) fn folder_lock_file(path: &Path) -> io::Result<Option<File>> {
    open_folder(path, false).map(|fd| Some(File::from(fd)))
}

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

/// How a folder is held for a walk that only looks things up in it (the cache root's check,
/// R-C1): on Linux `O_PATH`, which needs only search permission on the way, so a walk keeps its
/// place through a folder it may search but not read (another user's 0711 home); elsewhere a
/// read-only open.
#[cfg(target_os = "linux")]
const HOLD_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
#[cfg(not(target_os = "linux"))]
const HOLD_FLAGS: OFlags = DIR_FLAGS;

/// Holds the folder at `path` for lookups (following a link in its last component when
/// `follow`): see `HOLD_FLAGS`.
///
/// # Errors
/// The system call's error.
pub(crate) fn hold_folder(path: &Path, follow: bool) -> io::Result<OwnedFd> {
    let flags = if follow {
        HOLD_FLAGS.difference(OFlags::NOFOLLOW)
    } else {
        HOLD_FLAGS
    };
    Ok(rustix::fs::open(path, flags, Mode::empty())?)
}

/// Holds folder `name` of `dir` for lookups, without following a link. `Ok(None)` if there is
/// no such name.
///
/// # Errors
/// `ELOOP`/`ENOTDIR` if something other than a folder is there; other system errors.
pub(crate) fn hold_dir(dir: BorrowedFd<'_>, name: &Path) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::openat(dir, name, HOLD_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Holds `..` of `dir` for lookups.
///
/// # Errors
/// The system call's error.
pub(crate) fn hold_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(dir, "..", HOLD_FLAGS, Mode::empty())?)
}

/// The target of link `name` in `dir`, read relative to the descriptor: a folder whose full
/// path is longer than the system's bound is still read (round 20 of review).
///
/// # Errors
/// The system call's error.
pub(crate) fn read_link_at(dir: BorrowedFd<'_>, name: &Path) -> io::Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt as _;
    let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
    Ok(std::path::PathBuf::from(OsString::from_vec(
        target.into_bytes(),
    )))
}

/// Opens `..` of `dir`: the caller checks it is the folder it came down from.
///
/// # Errors
/// The system call's error.
pub(crate) fn open_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(dir, "..", DIR_FLAGS, Mode::empty())?)
}

/// Opens the lock file `name` in `dir` without following a link or blocking: read-write and
/// created owner-only if `writable`, else read-only.
///
/// # Errors
/// The system call's error (`EROFS`/`EACCES` on a read-only root).
pub(crate) fn open_lock(dir: BorrowedFd<'_>, name: &str, writable: bool) -> io::Result<File> {
    let flags = if writable {
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
    } else {
        FILE_FLAGS
    };
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        mode(0o600),
    )?))
}

/// `rel` as its folder components and its last component; only plain names are allowed (no
/// `..`, no root), as `RESOLVE_BENEATH` would.
///
/// # Errors
/// `EXDEV` for `..`, a root or a prefix.
pub(super) fn split(rel: &Path) -> io::Result<(Vec<&Path>, Option<&Path>)> {
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
        let parent = here.as_ref().map_or(dir, AsFd::as_fd);
        match open_dir(parent, name)? {
            Some(next) => here = Some(next),
            None => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }
    Ok(here)
}

/// The folder at `rel` below `dir`, one component at a time (macOS' opener, Linux's fallback).
///
/// # Errors
/// `ELOOP` for a link on the way, `ENOTDIR` for a non-folder, `EXDEV` for `..` or an absolute
/// path, `ENOENT`, or another system error.
pub(super) fn open_dir_walking(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let (parents, last) = split(rel)?;
    let parent = walk(dir, &parents)?;
    let here = parent.as_ref().map_or(dir, AsFd::as_fd);
    match last {
        Some(name) => {
            open_dir(here, name)?.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
        }
        None => Ok(rustix::fs::openat(here, ".", DIR_FLAGS, Mode::empty())?),
    }
}

/// The file at `rel` below `dir` for reading, one component at a time (macOS' opener, Linux's
/// fallback).
///
/// # Errors
/// As [`open_dir_walking`]; `ENXIO` for a socket.
pub(super) fn open_file_walking(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    let (parents, last) = split(rel)?;
    let Some(last) = last else {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    };
    let parent = walk(dir, &parents)?;
    open_file_here(parent.as_ref().map_or(dir, AsFd::as_fd), last)
}

/// Nanoseconds since the epoch from seconds and nanoseconds, saturating.
fn ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// The layer's [`Stat`] of rustix's, whose field widths vary by target.
#[allow(
    clippy::useless_conversion,
    clippy::unnecessary_cast,
    clippy::cast_sign_loss,
    clippy::unnecessary_fallible_conversions
)]
fn of(st: &rustix::fs::Stat) -> Stat {
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Link,
        FileType::Unknown => Kind::Unknown,
        _ => Kind::Other,
    };
    Stat {
        kind,
        mode: u32::from(st.st_mode) & 0o7777,
        size: u64::try_from(st.st_size).unwrap_or(0),
        // `st_blocks` counts 512-byte units whatever the filesystem's block, as `du` reads it.
        allocated: u64::try_from(st.st_blocks)
            .unwrap_or(0)
            .saturating_mul(512)
            .max(u64::try_from(st.st_size).unwrap_or(0)),
        uid: st.st_uid,
        nlink: u64::from(st.st_nlink),
        // A device number is an identity, never arithmetic: its bits are kept as they are.
        dev: st.st_dev as u64,
        ino: u64::from(st.st_ino),
        mtime_ns: ns(
            i64::from(st.st_mtime),
            i64::try_from(st.st_mtime_nsec).unwrap_or(0),
        ),
        ctime_ns: ns(
            i64::from(st.st_ctime),
            i64::try_from(st.st_ctime_nsec).unwrap_or(0),
        ),
    }
}

/// The metadata of an open file or folder.
///
/// # Errors
/// The system call's error.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    Ok(of(&rustix::fs::fstat(fd)?))
}

/// The metadata of `name` in `dir` itself (a link is described, never followed).
///
/// # Errors
/// The system call's error (`ENOENT` for no such name).
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: impl AsRef<Path>) -> io::Result<Stat> {
    Ok(of(&rustix::fs::statat(
        dir,
        name.as_ref(),
        AtFlags::SYMLINK_NOFOLLOW,
    )?))
}

/// The filesystem's allocation unit under `dir` (`statvfs`'s fragment size: 4096 on ext4, XFS
/// and APFS), or `None` when the filesystem does not say.
pub(crate) fn block_size(dir: BorrowedFd<'_>) -> Option<u64> {
    // rustix's `StatVfs` is its own struct, `u64` on every target.
    rustix::fs::fstatvfs(dir)
        .ok()
        .map(|st| st.f_frsize)
        .filter(|&b| b > 0)
}

/// The bytes an unprivileged writer may still take on the filesystem under `dir` (`statvfs`'s
/// available blocks), and whether it is mounted read-only; `None` when the system will not say.
pub(crate) fn room(dir: BorrowedFd<'_>) -> Option<(u64, bool)> {
    let st = rustix::fs::fstatvfs(dir).ok()?;
    let read_only = st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY);
    Some((st.f_bavail.saturating_mul(st.f_frsize), read_only))
}

/// Lowers the calling thread's scheduling priority (nice 10), best effort: work that no caller
/// waits for (the write-behind keeper) should not take the processor from work a caller does.
/// On Linux a nice value is the thread's own; on macOS it is the process's, so nothing is done.
pub(crate) fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::setpriority_process(None, 10);
    }
}

/// The names in the folder `dir` (without `.` and `..`) and their kinds as the folder lists them.
///
/// # Errors
/// The system call's error.
pub(crate) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<(OsString, Kind)>> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            FileType::Unknown => Kind::Unknown,
            _ => Kind::Other,
        };
        out.push((std::ffi::OsStr::from_bytes(name).to_owned(), kind));
    }
    Ok(out)
}

/// Makes folder `name` in `dir` with `bits` (less the umask).
///
/// # Errors
/// The system call's error (`EEXIST` included).
pub(crate) fn mkdir_at(dir: BorrowedFd<'_>, name: impl AsRef<Path>, bits: u32) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(dir, name.as_ref(), mode(bits))?)
}

/// Creates file `name` in `dir` for writing: it must not exist, and a link there is never
/// followed.
///
/// # Errors
/// The system call's error.
pub(crate) fn create_at(dir: BorrowedFd<'_>, name: &str, bits: u32) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        mode(bits),
    )?))
}

/// `fsync`: durable where the kernel's `fsync` reaches the disk (Linux); macOS wraps it.
///
/// # Errors
/// The system call's error.
pub(super) fn fsync(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::fsync(fd)?)
}

/// Sets the mode of an open file or folder (never through a path, so never through a link).
///
/// # Errors
/// The system call's error.
pub(crate) fn chmod(fd: BorrowedFd<'_>, bits: u32) -> io::Result<()> {
    Ok(rustix::fs::fchmod(fd, mode(bits))?)
}

/// Links `from` in `from_dir` as `to` in `to_dir`; an existing `to` is never replaced, and a
/// link at `from` is linked itself, never followed.
///
/// # Errors
/// The system call's error (`EEXIST` included).
pub(crate) fn link_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    Ok(rustix::fs::linkat(
        from_dir,
        from,
        to_dir,
        to,
        AtFlags::empty(),
    )?)
}

/// Renames `from` in `from_dir` to `to` in `to_dir`.
///
/// # Errors
/// The system call's error.
pub(crate) fn rename_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    Ok(rustix::fs::renameat(from_dir, from, to_dir, to)?)
}

/// Removes `name` from `dir`: an empty folder if `folder`, else any other kind of name (a link
/// is removed itself, never its target).
///
/// # Errors
/// The system call's error.
pub(crate) fn unlink_at(dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()> {
    let flags = if folder {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    Ok(rustix::fs::unlinkat(dir, name, flags)?)
}

/// The user this process acts as (its effective uid): the owner every root and key must have.
pub(crate) fn user_id() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether someone other than this user and the superuser can rename or replace what a folder
/// holds: it belongs to another user, or group or others may write it without the sticky bit
/// (with it, as in `/tmp`, only an entry's owner may rename the entry).
pub(crate) fn others_can_rename_in(st: &Stat) -> bool {
    let owner_is_trusted = st.uid == user_id() || st.uid == 0;
    let shared = st.mode & 0o022 != 0 && st.mode & 0o1000 == 0;
    !owner_is_trusted || shared
}

/// Whether someone other than this user or the superuser may make a new name in a folder of
/// this kind: another user's, or writable by group or others — sticky or not, since the sticky
/// bit only keeps others from removing or renaming names they do not own (round 26 of review:
/// a missing folder below `/tmp` was made by another user, as a link, first).
pub(crate) fn others_can_create_in(st: &Stat) -> bool {
    let owner_is_trusted = st.uid == user_id() || st.uid == 0;
    !owner_is_trusted || st.mode & 0o022 != 0
}

/// What `standard_pipes` reads from.
#[cfg(feature = "serve")]
pub(crate) type PipeIn = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
/// What `standard_pipes` writes to.
#[cfg(feature = "serve")]
pub(crate) type PipeOut = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// A private file is read without following a link in its last component or blocking.
pub(crate) fn read_no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
}

/// A private file is created owner-only (`0600`), without following a link.
pub(crate) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
}

/// Folders made on the way to a private file or a new root are owner-only (`0700`).
pub(crate) fn private_dir_builder() -> std::fs::DirBuilder {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true).mode(0o700);
    b
}

/// The owner and the permission bits of a file's metadata (`path` is where it was opened).
pub(crate) fn owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> (u32, u32) {
    let _ = path;
    (meta.uid(), meta.mode() & 0o7777)
}

/// What a name that is neither a regular file nor a folder is, for a message.
pub(crate) fn special_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// How many names a file has (its hard links).
pub(crate) fn link_count(meta: &std::fs::Metadata) -> u64 {
    meta.nlink()
}

/// A file's identity (device, inode), to notice that another process replaced it.
#[allow(clippy::unnecessary_wraps)] // Windows cannot always say
pub(crate) fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    Some((meta.dev(), meta.ino()))
}

/// The component walk — macOS' opener, Linux's fallback — against what a hostile folder plants:
/// links to folders and files (inside and outside), `..`, absolute paths, a file where a folder
/// belongs, a FIFO, a socket, and a folder swapped for a link after it was opened. Run on Linux
/// through the very functions macOS calls.
/// A symbolic link at `link` to `target`, for the tests of the layers above, which name no
/// operating system (`tests/layers.rs`).
#[cfg(test)]
pub(crate) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::path::Path;

    use super::{AsFd as _, OwnedFd, fstat, open_dir_walking, open_file_walking, open_folder};
    use crate::platform::Kind;

    /// A folder with `a/b/f` inside, `outside` beside it, and links planted inside pointing at
    /// both; returns the scratch folder and a descriptor of `inside`.
    fn planted() -> (crate::scratch::Scratch, OwnedFd) {
        let tmp = crate::scratch::scratch();
        let inside = tmp.path().join("inside");
        std::fs::create_dir_all(inside.join("a/b")).expect("mkdir");
        std::fs::write(inside.join("a/b/f"), b"inside").expect("write");
        std::fs::write(inside.join("a/file"), b"a file where a folder belongs").expect("write");
        std::fs::create_dir(tmp.path().join("outside")).expect("mkdir");
        std::fs::write(tmp.path().join("outside/secret"), b"outside").expect("write");
        let link =
            |to: &Path, at: &str| std::os::unix::fs::symlink(to, inside.join(at)).expect("link");
        link(&inside.join("a"), "to-a");
        link(Path::new("a"), "relative-to-a");
        link(&tmp.path().join("outside"), "to-outside");
        link(&tmp.path().join("outside/secret"), "a/b/to-secret");
        link(Path::new("../../../outside/secret"), "a/b/dotdot-secret");
        link(Path::new("/proc/self/root/etc/passwd"), "a/magic");
        let fd = open_folder(&inside, false).expect("open inside");
        (tmp, fd)
    }

    fn code(e: &std::io::Error) -> i32 {
        e.raw_os_error().expect("an OS error")
    }

    fn is_link_refusal(e: &std::io::Error) -> bool {
        matches!(code(e), libc::ELOOP | libc::ENOTDIR)
    }

    #[test]
    fn x2_the_walk_opens_plain_files_and_folders_beneath() {
        let (_tmp, fd) = planted();
        let mut text = String::new();
        open_file_walking(fd.as_fd(), Path::new("a/b/f"))
            .expect("a plain file")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "inside");
        let b = open_dir_walking(fd.as_fd(), Path::new("./a/b")).expect("a plain folder");
        assert_eq!(fstat(b.as_fd()).expect("stat").kind, Kind::Dir);
        let itself = open_dir_walking(fd.as_fd(), Path::new("")).expect("the folder itself");
        assert_eq!(
            fstat(itself.as_fd()).expect("stat").ino,
            fstat(fd.as_fd()).expect("stat").ino
        );
    }

    #[test]
    fn x2_the_walk_refuses_a_link_anywhere_on_the_way() {
        let (_tmp, fd) = planted();
        // A link as the last name: `O_NOFOLLOW` refuses it (`ELOOP`).
        for rel in ["a/b/to-secret", "a/b/dotdot-secret", "a/magic"] {
            let e = open_file_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), libc::ELOOP, "{rel}: {e}");
        }
        // A link where a folder belongs: `O_NOFOLLOW | O_DIRECTORY` refuses it (`ENOTDIR` on
        // Linux, which checks the kind first; `ELOOP` elsewhere).
        for rel in ["to-a/b/f", "relative-to-a/b/f", "to-outside/secret"] {
            let e = open_file_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert!(is_link_refusal(&e), "{rel}: {e}");
        }
        for rel in ["to-a", "to-a/b", "to-outside"] {
            let e = open_dir_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert!(is_link_refusal(&e), "{rel}: {e}");
        }
    }

    #[test]
    fn x2_the_walk_refuses_dotdot_and_absolute_paths_before_any_call() {
        let (_tmp, fd) = planted();
        for rel in [
            "..",
            "../outside/secret",
            "a/../../outside/secret",
            "a/b/../f",
            "/etc/passwd",
        ] {
            let e = open_file_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), libc::EXDEV, "{rel}: {e}");
            let e = open_dir_walking(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), libc::EXDEV, "{rel}: {e}");
        }
    }

    #[test]
    fn x2_the_walk_refuses_a_file_where_a_folder_belongs_and_reports_a_missing_name() {
        let (_tmp, fd) = planted();
        let e =
            open_file_walking(fd.as_fd(), Path::new("a/file/f")).expect_err("a file on the way");
        assert_eq!(code(&e), libc::ENOTDIR, "{e}");
        let e = open_dir_walking(fd.as_fd(), Path::new("a/file")).expect_err("not a folder");
        assert_eq!(code(&e), libc::ENOTDIR, "{e}");
        let e = open_file_walking(fd.as_fd(), Path::new("a/nothing/f")).expect_err("missing");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        let e = open_file_walking(fd.as_fd(), Path::new("")).expect_err("no name");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    }

    #[test]
    fn x2_the_walk_opens_a_fifo_without_blocking_and_refuses_a_socket() {
        let (tmp, fd) = planted();
        let inside = tmp.path().join("inside");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            inside.join("a/fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        // Returns at once (O_NONBLOCK), and the descriptor says what it is.
        let fifo = open_file_walking(fd.as_fd(), Path::new("a/fifo")).expect("opened");
        assert_eq!(fstat(fifo.as_fd()).expect("stat").kind, Kind::Other);
        let _socket =
            std::os::unix::net::UnixListener::bind(inside.join("a/socket")).expect("socket");
        let e = open_file_walking(fd.as_fd(), Path::new("a/socket")).expect_err("a socket");
        assert_eq!(code(&e), libc::ENXIO, "{e}");
    }

    #[test]
    fn x2_a_folder_swapped_for_a_link_after_it_was_opened_cannot_redirect_the_walk() {
        let (tmp, fd) = planted();
        let inside = tmp.path().join("inside");
        let a = open_dir_walking(fd.as_fd(), Path::new("a")).expect("a");
        // The folder moves away and a link to the outside takes its name.
        std::fs::rename(inside.join("a"), tmp.path().join("moved")).expect("move");
        std::os::unix::fs::symlink(tmp.path().join("outside"), inside.join("a")).expect("link");
        // From the descriptor already held: still the moved folder, never the outside.
        let mut text = String::new();
        open_file_walking(a.as_fd(), Path::new("b/f"))
            .expect("the held folder")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "inside");
        assert!(open_file_walking(a.as_fd(), Path::new("secret")).is_err());
        // From the top: the link is refused.
        let e = open_file_walking(fd.as_fd(), Path::new("a/secret")).expect_err("the link");
        assert!(is_link_refusal(&e), "{e}");
    }
}

/// The crate's opener ([`crate::beneath`]) on a POSIX platform: whichever means the platform
/// uses (`openat2`, the walk), a link, `..`, an absolute path and a FIFO are refused.
#[cfg(test)]
mod opener_tests {
    use std::path::Path;

    use super::{AsFd as _, OwnedFd};
    use crate::beneath::{Refused, open_dir_beneath, open_file, open_regular};
    use crate::platform;
    use rustix::fs::{FileType, Mode};

    fn root(path: &Path) -> OwnedFd {
        platform::open_folder(path, false).expect("open the folder")
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

/// Where a child's output goes when the host names one of its own open descriptors (the
/// bindings' `stderr` option): the descriptor opened anew for appending through `/dev/fd/N`, so
/// no `unsafe` adopts a raw descriptor, the host may close its own, and a regular file gets the
/// output at its end.
pub(crate) fn append_to_descriptor(fd: u32) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .open(format!("/dev/fd/{fd}"))
}

/// A duplicate of this process's stderr, for a child to inherit: a host that marked its
/// descriptor 2 close-on-exec (Node does) would otherwise start the child with none.
pub(crate) fn duplicate_stderr() -> io::Result<std::process::Stdio> {
    std::os::fd::AsFd::as_fd(&io::stderr())
        .try_clone_to_owned()
        .map(std::process::Stdio::from)
}

/// A child's piped stderr as a file this process reads with blocking reads (on a thread of its
/// own).
#[cfg(feature = "mcp")]
pub(crate) fn child_stderr_file(stderr: tokio::process::ChildStderr) -> io::Result<std::fs::File> {
    stderr.into_owned_fd().map(std::fs::File::from)
}

/// The signal that ended a child, if one did.
#[cfg(feature = "mcp")]
pub(crate) fn exit_signal(status: std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}
