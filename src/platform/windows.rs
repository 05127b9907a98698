//! Windows: a real on-disk cache root, `Rehash` isolation only, with the standard library's
//! means and no `unsafe`.
//!
//! - **Opening beneath a folder** is a component walk over held folders. A folder handle
//!   ([`OwnedFd`]) carries the folder opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`, so a
//!   link or junction is opened, never followed), checked by its own attributes (a folder, not
//!   a reparse point), and held without `FILE_SHARE_DELETE` — so it cannot be renamed, removed
//!   or replaced by a link while held — together with its absolute path and every folder above
//!   it, held the same way. Each name is checked before any call (no `..`, no root or prefix,
//!   no `:` stream or drive, no device name, no name Win32 rewrites: `windows_names.rs`). A name
//!   below a held folder is then reached by its path, and what that opened — each folder held,
//!   each file — must be, by its handle's own final path, the entry meant ([`opened_at`]): a
//!   held folder cannot be renamed, but an emptied one can be made a junction in place, and an
//!   open through it is refused, never followed.
//! - **Durability**: `FlushFileBuffers` for a file's data; a folder's names are flushed through
//!   a second handle where NTFS allows it, and NTFS journals them in any case. There is no
//!   filesystem-wide sync, so every file is flushed on its own.
//! - **Who may write**: a root must lie inside the user's profile ([`disk_cache`]), whose
//!   inherited ACL admits only the user, `SYSTEM` and the Administrators; the standard library
//!   can neither read nor set an ACL, so a root elsewhere is refused.
//! - **Refused**: `Guaranteed` isolation ([`GUARANTEED`]): it trusts a blob's owner, link count,
//!   identity and change time, none of which the standard library reads on stable Rust.
//!
//! Metadata Windows' standard library cannot give is reported as [`of`] says.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::windows_names::{Refused, check_name, components};
use super::{Kind, Stat};

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
    /// `ERROR_DIRECTORY_NOT_SUPPORTED`: a folder where a file was meant.
    pub(crate) const EISDIR: i32 = 336;
    /// `ERROR_ALREADY_EXISTS`.
    pub(crate) const EEXIST: i32 = 183;
    /// `ERROR_SHARING_VIOLATION`: a folder another process holds open (held folders refuse
    /// delete sharing).
    pub(crate) const EHELD: i32 = 32;
    /// `ERROR_DIR_NOT_EMPTY`.
    pub(crate) const ENOTEMPTY: i32 = 145;
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

/// Every cache root on Windows lies in the user's profile (`%USERPROFILE%`, which holds the
/// default `%LOCALAPPDATA%`): the ACL that folder passes down admits only the user, `SYSTEM` and
/// the Administrators, and this layer can neither read nor set an ACL without raw system calls.
/// A root elsewhere takes whatever its parent passes down (a folder made at the top of `C:\`
/// lets every authenticated user change what is inside), so it is refused, never weakened.
///
/// # Errors
/// Why `root` (resolved) is refused, a sentence that ends before the root's path.
pub(crate) fn disk_cache(root: &Path) -> Result<(), &'static str> {
    inside_profile(root, std::env::var_os("USERPROFILE"))
}

/// [`disk_cache`] against the profile `profile` (`%USERPROFILE%`'s value, if set).
///
/// The profile must name a folder by an absolute path, and not a drive's or share's root: a
/// relative value would be resolved against whatever the current folder is, and a root would
/// make "inside the profile" mean "anywhere on the drive" — in either case the ACL the rule
/// relies on is nobody's in particular. The root must lie strictly below it (compared by
/// whole components, so `C:\Users\bob2` is not inside `C:\Users\bob`), and every folder name
/// between them must be one Windows keeps as written ([`check_name`]): the root's missing
/// folders are made from its resolved, verbatim (`\\?\`) path, where `cache.` or `NUL` would
/// become folders of those very names that no other program can open, and that the walk
/// refuses afterwards anyway.
fn inside_profile(root: &Path, profile: Option<OsString>) -> Result<(), &'static str> {
    const NO_PROFILE: &str = "on Windows a cache root must lie inside your user profile, and %USERPROFILE% does not name one (an absolute path to a folder that is not a drive's root):";
    let profile = profile
        .filter(|p| !p.is_empty() && Path::new(p).is_absolute())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p.components().any(|c| matches!(c, Component::Normal(_))))
        .ok_or(NO_PROFILE)?;
    let below = beneath(root, &profile)
        .filter(|below| !below.as_os_str().is_empty())
        .ok_or(
            "on Windows a cache root must lie inside your user profile (%USERPROFILE%), whose folders only you, SYSTEM and the Administrators may change (skillcache cannot set an ACL itself, see docs/guarantees.md):",
        )?;
    for part in below.components() {
        let kept = match part {
            Component::Normal(name) => name.to_str().is_some_and(|n| check_name(n).is_ok()),
            _ => false,
        };
        if !kept {
            return Err(
                "on Windows every folder name of a cache root must be one Windows keeps as written (no device name such as NUL or COM1, no trailing dot or space, no ':' or wildcard):",
            );
        }
    }
    Ok(())
}

/// What of `root` lies below `profile`, compared by whole components as Windows names them: a
/// drive spelled `C:` or `\\?\C:` is one drive (the profile is canonical, so verbatim; a root
/// a user gives, and the default under `%LOCALAPPDATA%`, is not), and ASCII letters compare
/// without case, as NTFS does. `None` when `root` is not below `profile`. (`strip_prefix` alone
/// refused every root not spelled verbatim, the default one too: found by loading the Windows
/// addon in `node.exe` under Wine, issue 42.)
///
/// Every other unit of a name compares exactly, as UTF-16: Rust's Unicode upper case is not
/// NTFS's one-for-one table (`ß` becomes `SS`, `ﬁ` becomes `FI`, and unpaired surrogates all
/// read as U+FFFD), so a folder outside the profile compared equal to one inside it (round 29
/// of review). A name in another case beyond ASCII, or an 8.3 short name, is refused: a false
/// refusal, never a false "inside".
fn beneath(root: &Path, profile: &Path) -> Option<PathBuf> {
    fn key(c: Component<'_>) -> Vec<u16> {
        use std::os::windows::ffi::OsStrExt as _;
        use std::path::Prefix;
        let upper = |u: u16| {
            if (0x61..=0x7a).contains(&u) {
                u - 0x20
            } else {
                u
            }
        };
        let wide = |s: &std::ffi::OsStr| s.encode_wide().map(upper).collect::<Vec<u16>>();
        match c {
            Component::Prefix(p) => match p.kind() {
                Prefix::Disk(d) | Prefix::VerbatimDisk(d) => {
                    vec![upper(u16::from(d)), u16::from(b':')]
                }
                Prefix::UNC(server, share) | Prefix::VerbatimUNC(server, share) => {
                    let mut k = wide(std::ffi::OsStr::new("\\\\"));
                    k.extend(wide(server));
                    k.push(u16::from(b'\\'));
                    k.extend(wide(share));
                    k
                }
                _ => wide(p.as_os_str()),
            },
            other => wide(other.as_os_str()),
        }
    }
    let mut rest = root.components();
    for p in profile.components() {
        if key(rest.next()?) != key(p) {
            return None;
        }
    }
    Some(rest.as_path().to_owned())
}

/// The user's profile folder: `%USERPROFILE%`, else the current folder's drive root.
pub(crate) fn home() -> PathBuf {
    std::env::var_os("USERPROFILE")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("\\"), PathBuf::from)
}

/// Where caches live: `%LOCALAPPDATA%` (inside the profile, never roamed), else the profile's
/// `AppData\Local`.
pub(crate) fn cache_home() -> PathBuf {
    std::env::var_os("LOCALAPPDATA")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join("AppData").join("Local"), PathBuf::from)
}

/// Where configuration lives: `%APPDATA%`, else the profile's `AppData\Roaming`.
pub(crate) fn config_home() -> PathBuf {
    std::env::var_os("APPDATA")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join("AppData").join("Roaming"), PathBuf::from)
}

/// Fills `buf` from the system's random generator (`ProcessPrng`).
///
/// # Errors
/// The generator's error.
pub(crate) fn random(buf: &mut [u8]) -> io::Result<()> {
    getrandom::fill(buf).map_err(io::Error::other)
}

/// `Guaranteed` isolation trusts a blob's evidence (owner, link count, file identity, change
/// time) instead of hashing it; Windows' standard library reads none of them on stable Rust.
pub(crate) const GUARANTEED: Result<(), &str> = Err(
    "Guaranteed isolation is not available on Windows (the standard library reads no file owner, link count or identity to hold it by); use Rehash, see docs/guarantees.md:",
);

/// Whether a folder's handle may be kept open for later reads without getting in anyone's way:
/// not here. A held folder keeps itself and every folder above it from being renamed or removed
/// (no `FILE_SHARE_DELETE`, by design), so a handle kept past the read would make gc and purge
/// fail; the store reaches each blob from the root every time.
pub(crate) const HOLD_FOLDERS: bool = false;

/// `FILE_ATTRIBUTE_DIRECTORY`.
const DIRECTORY: u32 = 0x10;
/// `FILE_FLAG_BACKUP_SEMANTICS`: needed to open a folder at all.
const BACKUP_SEMANTICS: u32 = 0x0200_0000;
/// `FILE_SHARE_READ | FILE_SHARE_WRITE`, without `FILE_SHARE_DELETE`: while a folder is held,
/// nobody can rename it, remove it, or put a link in its place.
const SHARE_HELD: u32 = 0x1 | 0x2;
/// `ERROR_INVALID_NAME`: a name Windows would read as something other than an entry.
const INVALID_NAME: i32 = 123;

/// A folder held open, with its absolute path and the folder it was opened in (held too).
#[derive(Debug)]
struct Folder {
    handle: File,
    path: PathBuf,
    up: Option<Arc<Folder>>,
}

/// A held folder: its handle, its path, and every folder above it, each opened as itself
/// (never through a link), checked to be a folder, and held without delete sharing so that no
/// folder on the path can be renamed, removed or replaced while this one is used. A name below
/// it is then reached by its path. Only this folder, the deepest held, can change what that
/// path leads to (emptied and made a junction in place: a folder with a held child is never
/// empty), so what is opened under it is judged by its own final path (`opened_at`), and the
/// calls that only name a path under it (list, stat, make, link, rename, remove) rest on who
/// may write it: for a cache root, the user alone (`disk_cache`).
// `pub` (in a private module): the `Disk` seam, public with `internals`, names these types.
#[derive(Debug, Clone)]
pub struct OwnedFd(Arc<Folder>);

/// A borrowed handle: a held folder, or a file (for the calls on an open file).
#[derive(Debug, Clone, Copy)]
pub struct BorrowedFd<'a>(Held<'a>);

#[derive(Debug, Clone, Copy)]
enum Held<'a> {
    Folder(&'a Arc<Folder>),
    File(&'a File),
}

/// `.as_fd()` on Windows: the handle, under the name the layers above use.
pub trait AsFd {
    /// The borrowed handle.
    fn as_fd(&self) -> BorrowedFd<'_>;
}

impl AsFd for OwnedFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        BorrowedFd(Held::Folder(&self.0))
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        BorrowedFd(Held::File(self))
    }
}

impl AsFd for BorrowedFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        *self
    }
}

impl BorrowedFd<'_> {
    /// The open file or folder, for the standard library's calls on it.
    fn file(&self) -> &File {
        match self.0 {
            Held::Folder(f) => &f.handle,
            Held::File(f) => f,
        }
    }

    /// The held folder; a file is not one.
    fn folder(&self) -> io::Result<&Arc<Folder>> {
        match self.0 {
            Held::Folder(f) => Ok(f),
            Held::File(_) => Err(io::Error::from_raw_os_error(errno::ENOTDIR)),
        }
    }
}

/// The error for a refused name or path.
fn refused(why: Refused) -> io::Error {
    io::Error::from_raw_os_error(match why {
        Refused::Escapes => errno::EXDEV,
        Refused::NotAName => INVALID_NAME,
    })
}

/// `name` as one checked entry name.
fn entry(name: &Path) -> io::Result<&str> {
    let name = name.to_str().ok_or_else(|| refused(Refused::NotAName))?;
    check_name(name).map_err(refused)?;
    Ok(name)
}

/// The path of `name` (checked) in the held folder `dir`.
fn at(dir: BorrowedFd<'_>, name: &Path) -> io::Result<PathBuf> {
    let folder = dir.folder()?;
    Ok(folder.path.join(entry(name)?))
}

/// Opens `path` as itself (a link or junction is opened, never followed, unless `follow`) and
/// holds it without delete sharing; it must be a real folder.
///
/// # Errors
/// `ELOOP` for a reparse point, `ENOTDIR` for anything but a folder, or the system's error.
fn hold(path: &Path, follow: bool) -> io::Result<File> {
    let flags = if follow {
        BACKUP_SEMANTICS
    } else {
        BACKUP_SEMANTICS | OPEN_REPARSE_POINT
    };
    let handle = OpenOptions::new()
        .read(true)
        .share_mode(SHARE_HELD)
        .custom_flags(flags)
        .open(path)?;
    let attributes = handle.metadata()?.file_attributes();
    if attributes & REPARSE_POINT != 0 {
        return Err(io::Error::from_raw_os_error(errno::ELOOP));
    }
    if attributes & DIRECTORY == 0 {
        return Err(io::Error::from_raw_os_error(errno::ENOTDIR));
    }
    Ok(handle)
}

/// The folder `name` (checked) in `parent`, held, and proven by its own final path to be the
/// entry of `parent` it was opened by ([`opened_at`]).
fn hold_child(parent: &Arc<Folder>, name: &str) -> io::Result<Arc<Folder>> {
    check_name(name).map_err(refused)?;
    let path = parent.path.join(name);
    let handle = hold(&path, false)?;
    if !opened_at(&handle, &path) {
        return Err(io::Error::from_raw_os_error(errno::ELOOP));
    }
    Ok(Arc::new(Folder {
        handle,
        path,
        up: Some(Arc::clone(parent)),
    }))
}

/// Whether the open `file` is the entry at `path`, as its handle says now.
///
/// Why: holding a folder without delete sharing keeps it from being renamed or removed, but not
/// from being made a junction *in place*. `FSCTL_SET_REPARSE_POINT` needs only
/// `FILE_WRITE_ATTRIBUTES`, which no share mode withholds, and an empty folder (one with a held
/// child is never empty, so only the deepest held folder qualifies). A writer of a served
/// folder can empty the folder the walk holds last and turn it into a junction to anywhere
/// before the next name under it is opened by path: the open would then follow it out. What
/// the handle itself names afterwards cannot be redirected: `GetFinalPathNameByHandleW` gives
/// the real path of what was opened, every junction and link on the way resolved. If that is
/// the path the walk meant, nothing on the way redirected the open, and the folders above it,
/// held, keep it there.
///
/// The standard library reads that path for one purpose only, `File`'s `Debug`
/// (`File { handle: …, path: "…" }`), and this layer keeps `unsafe` out, so the check compares
/// that text with the one `path` would give. ASCII case is ignored (NTFS's names are
/// case-insensitive, and a root may be named in another case than it was made); any other
/// difference refuses, and so does a `Debug` without a path (a filesystem that cannot say, or
/// a standard library that stopped saying): the check fails closed.
// The `Debug` text is the point: it is compared with `File`'s own, never shown to anyone.
#[allow(clippy::unnecessary_debug_formatting)]
fn opened_at(file: &File, path: &Path) -> bool {
    use std::os::windows::io::AsRawHandle as _;
    let shown = format!("{file:?}");
    let meant = format!(
        "File {{ handle: {:?}, path: {path:?} }}",
        file.as_raw_handle()
    );
    shown.eq_ignore_ascii_case(&meant)
}

/// Opens the folder at `path` and holds every folder from its drive down. Its last component
/// must be a real folder unless `follow` (a folder the caller names, such as `~/skills`, may be
/// a link: then what it points to is held, under its real path).
///
/// # Errors
/// `ELOOP`/`ENOTDIR` for something other than a folder; other system errors.
pub(crate) fn open_folder(path: &Path, follow: bool) -> io::Result<OwnedFd> {
    // The real path, links above the last component resolved (and the last one too if
    // `follow`): from here on every folder is opened as itself.
    let real = match (follow, path.parent(), path.file_name()) {
        (false, Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            std::fs::canonicalize(parent)?.join(name)
        }
        _ => std::fs::canonicalize(path)?,
    };
    let mut here: Option<Arc<Folder>> = None;
    let mut prefix = PathBuf::new();
    for part in real.components() {
        match part {
            Component::Prefix(p) => prefix.push(p.as_os_str()),
            Component::RootDir => {
                prefix.push(part.as_os_str());
                here = Some(Arc::new(Folder {
                    handle: hold(&prefix, false)?,
                    path: prefix.clone(),
                    up: None,
                }));
            }
            Component::Normal(name) => {
                let parent = here.as_ref().ok_or_else(|| refused(Refused::Escapes))?;
                let name = name.to_str().ok_or_else(|| refused(Refused::NotAName))?;
                here = Some(hold_child(parent, name)?);
            }
            Component::CurDir | Component::ParentDir => return Err(refused(Refused::Escapes)),
        }
    }
    here.map(OwnedFd)
        .ok_or_else(|| io::Error::from_raw_os_error(errno::ENOENT))
}

/// Walks `names` down from `dir`, holding each folder; `dir` itself for no names.
fn walk(dir: BorrowedFd<'_>, names: &[&str]) -> io::Result<Arc<Folder>> {
    let mut here = Arc::clone(dir.folder()?);
    for name in names {
        here = hold_child(&here, name)?;
    }
    Ok(here)
}

/// Opens folder `name` directly in `dir` without following a link. `Ok(None)` if there is no
/// such name.
///
/// # Errors
/// `ELOOP` for a link or junction, `ENOTDIR` for a file; other system errors.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &Path) -> io::Result<Option<OwnedFd>> {
    let parent = dir.folder()?;
    match hold_child(parent, entry(name)?) {
        Ok(folder) => Ok(Some(OwnedFd(folder))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `rel` as checked components.
fn split(rel: &Path) -> io::Result<Vec<&str>> {
    let rel = rel.to_str().ok_or_else(|| refused(Refused::NotAName))?;
    components(rel).map_err(refused)
}

/// Opens the folder at `rel` below `dir` (empty or `.` for `dir` itself), one component at a
/// time, each opened as itself, checked and held until the walk ends.
///
/// # Errors
/// `ELOOP` for a link or junction on the way, `ENOTDIR` for a file, `EXDEV` for `..` or an
/// absolute path, `ERROR_INVALID_NAME` for a stream, device or rewritten name, `ENOENT`, or
/// another system error.
pub(crate) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    Ok(OwnedFd(walk(dir, &split(rel)?)?))
}

/// Opens `name` in the held folder `parent` for reading, as itself (a link or junction is
/// refused), sharing it for delete so a reader never stands in the way of a removal. What was
/// opened must be the entry of `parent` by its own final path ([`opened_at`]): `parent` made a
/// junction in place since it was held is refused, never followed.
fn open_here(parent: &Folder, name: &str) -> io::Result<File> {
    let path = parent.path.join(name);
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
        .open(&path)?;
    if file.metadata()?.file_attributes() & REPARSE_POINT != 0 || !opened_at(&file, &path) {
        return Err(io::Error::from_raw_os_error(errno::ELOOP));
    }
    Ok(file)
}

/// Opens the file at `rel` below `dir` for reading, following no link or junction on the way.
/// A folder opens too: the caller judges the handle by its own metadata.
///
/// # Errors
/// As [`open_dir_beneath`]; `ENOENT` for an empty path.
pub(crate) fn open_file_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    let mut names = split(rel)?;
    let Some(last) = names.pop() else {
        return Err(io::Error::from_raw_os_error(errno::ENOENT));
    };
    let parent = walk(dir, &names)?;
    open_here(&parent, last)
}

/// Opens file `name` directly in `dir` for reading, without following a link.
///
/// # Errors
/// The system call's error; `ELOOP` for a link.
pub(crate) fn open_file_here(dir: BorrowedFd<'_>, name: &Path) -> io::Result<File> {
    open_here(dir.folder()?, entry(name)?)
}

/// The folder `dir` was opened in: held since, so it is the very folder the walk came down
/// from.
///
/// # Errors
/// `ENOENT` for a drive's root.
pub(crate) fn open_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    dir.folder()?
        .up
        .as_ref()
        .map(|up| OwnedFd(Arc::clone(up)))
        .ok_or_else(|| io::Error::from_raw_os_error(errno::ENOENT))
}

/// Holds the folder at `path` for lookups: here, [`open_folder`] (the walk's handles record
/// their path and parent).
///
/// # Errors
/// As [`open_folder`].
pub(crate) fn hold_folder(path: &Path, follow: bool) -> io::Result<OwnedFd> {
    open_folder(path, follow)
}

/// Holds folder `name` of `dir` for lookups: here, [`open_dir`].
///
/// # Errors
/// As [`open_dir`].
pub(crate) fn hold_dir(dir: BorrowedFd<'_>, name: &Path) -> io::Result<Option<OwnedFd>> {
    open_dir(dir, name)
}

/// Holds `..` of `dir` for lookups: here, [`open_parent`].
///
/// # Errors
/// As [`open_parent`].
pub(crate) fn hold_parent(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    open_parent(dir)
}

/// A link's target read through its folder's handle: not offered here (the caller reads it by
/// its full path).
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn read_link_at(_dir: BorrowedFd<'_>, _name: &Path) -> io::Result<std::path::PathBuf> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Opens the lock file `name` in `dir` without following a link: read-write and created if
/// `writable`, else read-only.
///
/// # Errors
/// The system call's error; `ELOOP` for a link.
pub(crate) fn open_lock(dir: BorrowedFd<'_>, name: &str, writable: bool) -> io::Result<File> {
    let path = at(dir, Path::new(name))?;
    let file = OpenOptions::new()
        .read(true)
        .write(writable)
        .create(writable)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(&path)?;
    if file.metadata()?.file_attributes() & REPARSE_POINT != 0 || !opened_at(&file, &path) {
        return Err(io::Error::from_raw_os_error(errno::ELOOP));
    }
    Ok(file)
}

/// `FILE_ATTRIBUTE_READONLY`.
const READONLY: u32 = 0x1;
/// `FILE_ATTRIBUTE_REPARSE_POINT`: a symbolic link, a junction, or another redirection.
const REPARSE_POINT: u32 = 0x400;
/// `FILE_FLAG_OPEN_REPARSE_POINT`: open a link itself, never what it points to.
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// The layer's [`Stat`] of a file's or folder's metadata. What Windows' standard library
/// cannot say on stable Rust (owner, link count, identity, change time) is reported as fixed
/// values, and the checks that would rest on it are made otherwise or refused (see
/// `docs/guarantees.md`): the owner is the user whose profile holds the root ([`disk_cache`]),
/// the link count one, the identity the held handles (no folder on the way can be replaced),
/// and `Guaranteed` isolation, which needs identity and change time, is refused ([`GUARANTEED`]).
fn of(meta: &std::fs::Metadata) -> Stat {
    let attributes = meta.file_attributes();
    let kind = if attributes & REPARSE_POINT != 0 {
        Kind::Link
    } else if attributes & DIRECTORY != 0 {
        Kind::Dir
    } else {
        // Windows keeps no FIFO, socket or device in a folder, and device names are refused
        // before any call ([`check_name`]).
        Kind::File
    };
    let ns = |t: io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    };
    Stat {
        kind,
        // The owner's bits from the read-only attribute (folders ignore it on Windows); the
        // others' are the ACL's, which `disk_cache` vouches for: none may write.
        mode: match (kind, attributes & READONLY != 0) {
            (Kind::Dir, _) => 0o755,
            (_, true) => 0o444,
            (_, false) => 0o644,
        },
        size: meta.len(),
        // The standard library does not say what NTFS allocated: the length in 4 KiB clusters,
        // NTFS's default.
        allocated: meta.len().div_ceil(4096).saturating_mul(4096),
        uid: 0,
        nlink: 1,
        // No identity: `Guaranteed` evidence, the one reader of it, is refused on Windows.
        dev: 0,
        ino: 0,
        mtime_ns: ns(meta.modified()),
        // Windows' change time is not in the standard library; the last write time stands in.
        ctime_ns: ns(meta.modified()),
    }
}

/// The metadata of an open file or folder.
///
/// # Errors
/// The system call's error.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    Ok(of(&fd.file().metadata()?))
}

/// The metadata of `name` in `dir` itself (a link or junction is described, never followed).
///
/// # Errors
/// The system call's error (`ENOENT` for no such name), or a refused name.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: impl AsRef<Path>) -> io::Result<Stat> {
    Ok(of(&std::fs::symlink_metadata(at(dir, name.as_ref())?)?))
}

/// Not known through the standard library: the caller's default.
pub(crate) fn block_size(dir: BorrowedFd<'_>) -> Option<u64> {
    let _ = dir;
    None
}

/// Lowers the calling thread's scheduling priority: not done here (the keeper runs as any
/// thread).
pub(crate) fn lower_this_thread() {}

/// The room left under `dir`: not asked here (`None`; callers assume there is room, and learn
/// otherwise from the write).
pub(crate) fn room(dir: BorrowedFd<'_>) -> Option<(u64, bool)> {
    let _ = dir;
    None
}

/// The names in the held folder `dir` and their kinds from their own attributes (a reparse
/// point, link or junction, is [`Kind::Link`]).
///
/// # Errors
/// The system call's error.
pub(crate) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<(OsString, Kind)>> {
    let folder = dir.folder()?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&folder.path)? {
        let entry = entry?;
        // From the listing itself on Windows: no further call, no link followed.
        let attributes = entry.metadata()?.file_attributes();
        let kind = if attributes & REPARSE_POINT != 0 {
            Kind::Link
        } else if attributes & DIRECTORY != 0 {
            Kind::Dir
        } else {
            Kind::File
        };
        out.push((entry.file_name(), kind));
    }
    Ok(out)
}

/// Makes folder `name` in `dir`; a folder's mode has no meaning on Windows (its ACL is
/// inherited from the root's).
///
/// # Errors
/// The system call's error (`AlreadyExists` included).
pub(crate) fn mkdir_at(dir: BorrowedFd<'_>, name: impl AsRef<Path>, bits: u32) -> io::Result<()> {
    let _ = bits;
    std::fs::create_dir(at(dir, name.as_ref())?)
}

/// Creates file `name` in `dir` for writing (and reading, for its metadata): it must not
/// exist, and a link there is never followed. Read-only from the start when `bits` allow no
/// write; the handle returned still writes.
///
/// # Errors
/// The system call's error.
pub(crate) fn create_at(dir: BorrowedFd<'_>, name: &str, bits: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(OPEN_REPARSE_POINT);
    if bits & 0o222 == 0 {
        options.attributes(READONLY);
    }
    options.open(at(dir, Path::new(name))?)
}

/// `FlushFileBuffers` for a file: its data and metadata written through to the disk. For a
/// held folder, the same call on a second handle opened for writing (NTFS flushes the folder's
/// index and its journal); where the filesystem or the ACL does not allow it, nothing more can
/// be done from the standard library, and NTFS's journal still keeps the names consistent.
///
/// # Errors
/// The system call's error for a file.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    match fd.0 {
        Held::File(file) => file.sync_all(),
        Held::Folder(folder) => {
            // The folder is held without delete sharing: its path leads to it unless a writer
            // emptied it and made it a junction, and then only another folder is flushed.
            let flushed = OpenOptions::new()
                .write(true)
                .custom_flags(BACKUP_SEMANTICS | OPEN_REPARSE_POINT)
                .open(&folder.path)
                .and_then(|f| f.sync_all());
            if let Err(e) = flushed {
                tracing::debug!(path = %folder.path.display(), error = %e, "a folder's names could not be flushed on their own");
            }
            Ok(())
        }
    }
}

/// Windows has no filesystem-wide sync the store could trust.
///
/// # Errors
/// Always `Unsupported`.
pub(crate) fn sync_filesystem(fd: BorrowedFd<'_>) -> io::Result<()> {
    let _ = fd;
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Never: every file is flushed on its own.
pub(crate) fn filesystem_sync_is_durable(fd: BorrowedFd<'_>) -> bool {
    let _ = fd;
    false
}

/// A file's read-only attribute: set when `bits` allow no write, cleared otherwise. A folder's
/// is left alone: Windows does not enforce it on folders (who may add or remove a name is the
/// ACL's business) and Explorer reads it as "customised".
///
/// # Errors
/// The system call's error.
pub(crate) fn chmod(fd: BorrowedFd<'_>, bits: u32) -> io::Result<()> {
    match fd.0 {
        Held::Folder(_) => Ok(()),
        Held::File(file) => {
            let mut permissions = file.metadata()?.permissions();
            permissions.set_readonly(bits & 0o222 == 0);
            file.set_permissions(permissions)
        }
    }
}

/// Links `from` in `from_dir` as `to` in `to_dir` (a hard link: `CreateHardLink`); an existing
/// `to` is never replaced.
///
/// # Errors
/// The system call's error (`AlreadyExists` included).
pub(crate) fn link_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    std::fs::hard_link(at(from_dir, Path::new(from))?, at(to_dir, Path::new(to))?)
}

/// Renames `from` in `from_dir` to `to` in `to_dir`, replacing a file there.
///
/// # Errors
/// The system call's error.
pub(crate) fn rename_at(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> io::Result<()> {
    std::fs::rename(at(from_dir, Path::new(from))?, at(to_dir, Path::new(to))?)
}

/// Removes `name` from `dir`: an empty folder if `folder`, else any other kind of name. A link
/// or junction is removed itself, never its target; a read-only file is removed too (as
/// `unlink` removes a file whatever its mode).
///
/// # Errors
/// The system call's error; `EISDIR` for a folder when `folder` is not set.
pub(crate) fn unlink_at(dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()> {
    let path = at(dir, Path::new(name))?;
    if folder {
        return std::fs::remove_dir(path);
    }
    let attributes = std::fs::symlink_metadata(&path)?.file_attributes();
    match (attributes & REPARSE_POINT != 0, attributes & DIRECTORY != 0) {
        // A link to a folder, or a junction: `RemoveDirectory` removes the link itself.
        (true, true) => std::fs::remove_dir(path),
        (false, true) => Err(io::Error::from_raw_os_error(errno::EISDIR)),
        // `DeleteFile` removes a link itself.
        (_, false) => match std::fs::remove_file(&path) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && attributes & READONLY != 0 => {
                clear_readonly(&path)?;
                std::fs::remove_file(path)
            }
            other => other,
        },
    }
}

/// Clears the read-only attribute of the file at `path` through a handle to the name itself
/// (a link is changed, never what it points to), so that it can be removed: `unlink` removes a
/// file whatever its mode, and Windows versions before 10 1809 (and Wine) refuse to delete a
/// read-only file.
// Windows: `set_readonly(false)` clears the one attribute; no bits for others exist to widen.
#[allow(clippy::permissions_set_readonly_false)]
fn clear_readonly(path: &Path) -> io::Result<()> {
    /// `FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES`.
    const ATTRIBUTES: u32 = 0x80 | 0x100;
    let file = OpenOptions::new()
        .access_mode(ATTRIBUTES)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(path)?;
    let mut permissions = file.metadata()?.permissions();
    permissions.set_readonly(false);
    file.set_permissions(permissions)
}

/// Never, as far as the root's opening is concerned: a held folder is held with every folder
/// above it and without `FILE_SHARE_DELETE` (module comment), so nothing on its path can be
/// renamed while the cache uses it; and a root lies inside the user's profile.
pub(crate) fn others_can_rename_in(st: &Stat) -> bool {
    let _ = st;
    false
}

/// Never, for the same reason as [`others_can_rename_in`]: what is made on a held path stays
/// on it.
pub(crate) fn others_can_create_in(st: &Stat) -> bool {
    let _ = st;
    false
}

/// What `standard_pipes` reads from.
#[cfg(feature = "serve")]
pub(crate) type PipeIn = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
/// What `standard_pipes` writes to.
#[cfg(feature = "serve")]
pub(crate) type PipeOut = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// No pipe of the kind tokio reads readiness from: `serve` keeps tokio's stdin and stdout.
#[cfg(feature = "serve")]
pub(crate) fn standard_pipes() -> (Option<PipeIn>, Option<PipeOut>) {
    (None, None)
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

/// A private file is created without following a link; it takes its folder's ACL (inside the
/// user's profile, the user's own), which [`owner_and_mode`] checks by where it lies.
pub(crate) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(OPEN_REPARSE_POINT)
}

/// Folders on the way to a private file take their parent's ACL.
pub(crate) fn private_dir_builder() -> std::fs::DirBuilder {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    b
}

/// The owner and permission bits of a private file (the host key) opened at `path`. Who may
/// read it is its ACL's business, which this layer cannot read: inside the user's profile
/// ([`disk_cache`]'s rule) it takes the profile's, the user's own, and reads as owner-only;
/// anywhere else as open to others, so the check refuses it.
pub(crate) fn owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> (u32, u32) {
    let private = std::fs::canonicalize(path).is_ok_and(|p| disk_cache(&p).is_ok());
    let owner = if meta.permissions().readonly() {
        0o400
    } else {
        0o600
    };
    (0, if private { owner } else { owner | 0o066 })
}

/// What a name that is neither a regular file nor a folder is, for a message.
pub(crate) fn special_kind(kind: std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "a link"
    } else {
        "a special file"
    }
}

/// None on Windows: `LockFileEx` locks byte ranges of a file, never a folder. What it would
/// order goes unordered there (docs/guarantees.md, platforms).
#[allow(clippy::unnecessary_wraps)]
pub(crate) fn folder_lock_file(path: &Path) -> io::Result<Option<File>> {
    let _ = path;
    Ok(None)
}

/// Unknown on Windows' standard library (`number_of_links` is unstable): one, as
/// [`fstat`]'s `nlink` says.
pub(crate) fn link_count(meta: &std::fs::Metadata) -> u64 {
    let _ = meta;
    1
}

/// Unknown on Windows' standard library.
pub(crate) fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    let _ = meta;
    None
}

/// The Windows walk against what a hostile folder plants: links to folders and files (inside
/// and outside), `..`, roots, drives, streams and device names, a file where a folder belongs;
/// a held folder that someone tries to move or replace; and the calls the store makes under a
/// held folder. Run under Wine by `scripts/wine-check.sh`.
/// A symbolic link at `link` to `target` (a folder's or a file's, as `target` is), for the tests
/// of the layers above, which name no operating system (`tests/layers.rs`).
#[cfg(test)]
pub(crate) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::os::windows::fs::MetadataExt as _;
    use std::path::Path;

    use std::ffi::OsString;
    use std::path::PathBuf;

    use super::{
        AsFd as _, GUARANTEED, INVALID_NAME, OwnedFd, beneath, create_at, disk_cache, errno, fstat,
        inside_profile, link_at, list, mkdir_at, open_dir_beneath, open_file_beneath, open_folder,
        open_parent, opened_at, rename_at, stat_at, unlink_at,
    };
    use crate::platform::Kind;

    /// A folder with `a\b\f` inside and `outside` beside it; returns the scratch folder and a
    /// handle of `inside`.
    fn planted() -> (crate::scratch::Scratch, OwnedFd) {
        let tmp = crate::scratch::scratch();
        let inside = tmp.path().join("inside");
        std::fs::create_dir_all(inside.join("a").join("b")).expect("mkdir");
        std::fs::write(inside.join("a").join("b").join("f"), b"inside").expect("write");
        std::fs::write(
            inside.join("a").join("file"),
            b"a file where a folder belongs",
        )
        .expect("write");
        std::fs::create_dir(tmp.path().join("outside")).expect("mkdir");
        std::fs::write(tmp.path().join("outside").join("secret"), b"outside").expect("write");
        let fd = open_folder(&inside, false).expect("open inside");
        (tmp, fd)
    }

    fn code(e: &std::io::Error) -> i32 {
        e.raw_os_error().expect("an OS error")
    }

    #[test]
    fn x3_the_walk_opens_plain_files_and_folders_beneath() {
        let (_tmp, fd) = planted();
        let mut text = String::new();
        open_file_beneath(fd.as_fd(), Path::new("a\\b\\f"))
            .expect("a plain file")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "inside");
        let b = open_dir_beneath(fd.as_fd(), Path::new("./a/b")).expect("a plain folder");
        assert_eq!(fstat(b.as_fd()).expect("stat").kind, Kind::Dir);
        // The folder it came down from is the one held.
        let a = open_parent(b.as_fd()).expect("parent");
        assert!(a.0.path.ends_with("a"));
        let itself = open_dir_beneath(fd.as_fd(), Path::new("")).expect("the folder itself");
        assert_eq!(itself.0.path, fd.0.path);
    }

    /// Plants links inside pointing inside and outside. Creating one needs Developer Mode or
    /// the symbolic-link privilege on Windows; Wine 8 reports success and makes none, so this
    /// checks they are really there (reparse points) before anything is judged by them.
    fn plant_links(tmp: &Path) {
        let inside = tmp.join("inside");
        let planted = [
            (tmp.join("inside").join("a"), inside.join("to-a"), true),
            (tmp.join("outside"), inside.join("to-outside"), true),
            (
                tmp.join("outside").join("secret"),
                inside.join("a").join("b").join("to-secret"),
                false,
            ),
        ];
        for (to, at, folder) in planted {
            if folder {
                std::os::windows::fs::symlink_dir(&to, &at).expect("plant a link to a folder");
            } else {
                std::os::windows::fs::symlink_file(&to, &at).expect("plant a link to a file");
            }
            let there = std::fs::symlink_metadata(&at).map(|m| m.file_attributes());
            assert!(
                there.as_ref().is_ok_and(|a| a & super::REPARSE_POINT != 0),
                "{} was not planted as a link ({there:?}): this system cannot make links",
                at.display()
            );
        }
    }

    #[test]
    fn x3_the_walk_refuses_a_link_anywhere_on_the_way() {
        let (tmp, fd) = planted();
        plant_links(tmp.path());
        for rel in [
            "to-a\\b\\f",
            "to-outside\\secret",
            "a\\b\\to-secret",
            "to-a/b/f",
        ] {
            let e = open_file_beneath(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), errno::ELOOP, "{rel}: {e}");
        }
        for rel in ["to-a", "to-a\\b", "to-outside"] {
            let e = open_dir_beneath(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), errno::ELOOP, "{rel}: {e}");
        }
        // Described as links, never followed.
        assert_eq!(stat_at(fd.as_fd(), "to-a").expect("stat").kind, Kind::Link);
        let listed = list(fd.as_fd()).expect("list");
        let kind = |n: &str| listed.iter().find(|(m, _)| m == n).map(|(_, k)| *k);
        assert_eq!(kind("to-a"), Some(Kind::Link));
        assert_eq!(kind("to-outside"), Some(Kind::Link));
        assert_eq!(kind("a"), Some(Kind::Dir));
        // A file where a folder belongs.
        let e = open_file_beneath(fd.as_fd(), Path::new("a\\file\\f")).expect_err("file");
        assert_eq!(code(&e), errno::ENOTDIR, "{e}");
        // Removing a link to a folder removes the link, never what it points to.
        unlink_at(fd.as_fd(), "to-outside", false).expect("remove the link");
        assert!(
            fd.0.path
                .parent()
                .expect("parent")
                .join("outside")
                .join("secret")
                .exists()
        );
    }

    #[test]
    fn x3_the_walk_refuses_dotdot_roots_drives_streams_and_devices() {
        let (_tmp, fd) = planted();
        for rel in [
            "..",
            "..\\outside\\secret",
            "a\\..\\..\\outside",
            "\\Windows",
            "\\\\?\\C:\\",
        ] {
            let e = open_file_beneath(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), errno::EXDEV, "{rel}: {e}");
            let e = open_dir_beneath(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), errno::EXDEV, "{rel}: {e}");
        }
        for rel in [
            "C:\\Windows",
            "C:",
            "a\\b\\f:stream",
            "a\\b\\f::$DATA",
            "nul",
            "a\\con.txt",
            "a.",
        ] {
            let e = open_file_beneath(fd.as_fd(), Path::new(rel)).expect_err(rel);
            assert_eq!(code(&e), INVALID_NAME, "{rel}: {e}");
        }
        let e = stat_at(fd.as_fd(), "..").expect_err("..");
        assert_eq!(code(&e), errno::EXDEV, "{e}");
        let e = create_at(fd.as_fd(), "a\\b\\new", 0o600).expect_err("a path as a name");
        assert_eq!(code(&e), INVALID_NAME, "{e}");
    }

    #[test]
    fn x3_a_held_folder_cannot_be_moved_removed_or_replaced() {
        let (tmp, fd) = planted();
        let inside = tmp.path().join("inside");
        let b = open_dir_beneath(fd.as_fd(), Path::new("a\\b")).expect("b");
        // Held without delete sharing: neither it nor a folder above it can be renamed.
        std::fs::rename(inside.join("a").join("b"), tmp.path().join("moved-b"))
            .expect_err("b is held");
        std::fs::rename(inside.join("a"), tmp.path().join("moved-a")).expect_err("a is held");
        std::fs::create_dir(inside.join("empty")).expect("mkdir");
        let empty = open_dir_beneath(fd.as_fd(), Path::new("empty")).expect("empty");
        let e = std::fs::remove_dir(inside.join("empty")).expect_err("empty is held");
        assert_eq!(code(&e), errno::EHELD, "{e}");
        drop(empty);
        std::fs::remove_dir(inside.join("empty")).expect("let go, it goes");
        let mut text = String::new();
        open_file_beneath(b.as_fd(), Path::new("f"))
            .expect("still there")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "inside");
        // Let go, it moves.
        drop(b);
        std::fs::rename(inside.join("a").join("b"), tmp.path().join("moved-b")).expect("free");
    }

    #[test]
    fn x3_the_store_calls_make_link_rename_and_remove_names_under_a_held_folder() {
        let (_tmp, fd) = planted();
        mkdir_at(fd.as_fd(), "made", 0o700).expect("mkdir");
        let made = open_dir_beneath(fd.as_fd(), Path::new("made")).expect("made");
        {
            use std::io::Write as _;
            let mut f = create_at(made.as_fd(), "blob", 0o444).expect("create read-only");
            f.write_all(b"bytes").expect("write through the handle");
            super::sync(f.as_fd()).expect("flush");
            assert_eq!(fstat(f.as_fd()).expect("stat").mode, 0o444);
        }
        let e = create_at(made.as_fd(), "blob", 0o600).expect_err("exists");
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
        link_at(made.as_fd(), "blob", fd.as_fd(), "linked").expect("hard link");
        let e = link_at(made.as_fd(), "blob", fd.as_fd(), "linked").expect_err("exists");
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
        rename_at(fd.as_fd(), "linked", made.as_fd(), "moved").expect("rename");
        assert_eq!(stat_at(made.as_fd(), "moved").expect("stat").size, 5);
        super::sync(made.as_fd()).expect("sync a folder");
        // A read-only file goes as `unlink` removes one; a folder only as a folder.
        unlink_at(made.as_fd(), "moved", false).expect("unlink read-only");
        unlink_at(made.as_fd(), "blob", false).expect("unlink read-only");
        let e = unlink_at(fd.as_fd(), "made", false).expect_err("a folder");
        assert_eq!(code(&e), errno::EISDIR, "{e}");
        drop(made);
        unlink_at(fd.as_fd(), "made", true).expect("rmdir");
        assert!(stat_at(fd.as_fd(), "made").is_err());
    }

    /// A root spelled as users and `%LOCALAPPDATA%` spell it (`C:\`, any case) lies below the
    /// canonical (verbatim) profile; a sibling whose name only starts the same does not.
    #[test]
    fn x3_a_root_below_the_profile_is_found_whatever_its_drives_spelling_and_case() {
        let profile = Path::new(r"\\?\C:\Users\bob");
        let cases = [
            (
                r"C:\Users\bob\AppData\Local\skillcache",
                Some(r"AppData\Local\skillcache"),
            ),
            (r"c:\USERS\Bob\cache", Some("cache")),
            (r"\\?\C:\Users\bob\cache", Some("cache")),
            (r"C:\Users\bob2\cache", None),
            (r"D:\Users\bob\cache", None),
            (r"C:\Users", None),
        ];
        for (root, want) in cases {
            assert_eq!(
                beneath(Path::new(root), profile),
                want.map(PathBuf::from),
                "{root}"
            );
        }
    }

    /// Round 29 of review: names compared in Rust's Unicode upper case made folders outside
    /// the profile equal to it (`Straße` and `STRASSE`, `ﬁona` and `FIONA`, two unpaired
    /// surrogates). Only ASCII letters compare without case; everything else is compared as
    /// the UTF-16 it is.
    #[test]
    fn x3_a_name_that_only_unicode_case_folding_makes_equal_is_not_the_profile() {
        use std::os::windows::ffi::OsStringExt as _;
        let outside = [
            (r"\\?\C:\Users\Straße", r"C:\Users\STRASSE\cache"),
            ("\\\\?\\C:\\Users\\\u{fb01}ona", r"C:\Users\FIONA\cache"),
        ];
        for (profile, root) in outside {
            assert_eq!(
                beneath(Path::new(root), Path::new(profile)),
                None,
                "{root} below {profile}"
            );
        }
        let wide = |last: u16| {
            let mut w: Vec<u16> = r"C:\Users\x".encode_utf16().collect();
            w.push(last);
            PathBuf::from(OsString::from_wide(&w))
        };
        let (profile, root) = (wide(0xD800), wide(0xDC00).join("cache"));
        assert_eq!(
            beneath(&root, &profile),
            None,
            "two unpaired surrogates are two names"
        );
        assert_eq!(
            beneath(&wide(0xD800).join("cache"), &profile),
            Some(PathBuf::from("cache"))
        );
    }

    #[test]
    fn x3_a_root_outside_the_profile_and_guaranteed_isolation_are_refused() {
        let tmp = crate::scratch::scratch();
        let inside = std::fs::canonicalize(tmp.path()).expect("canonical");
        assert_eq!(disk_cache(&inside.join("cache")), Ok(()));
        let profile = std::fs::canonicalize(std::env::var_os("USERPROFILE").expect("profile"))
            .expect("canonical");
        assert!(disk_cache(&profile).is_err());
        let drive = profile
            .ancestors()
            .last()
            .expect("a root")
            .join("skillcache");
        assert!(disk_cache(&drive).is_err(), "{}", drive.display());
        assert!(GUARANTEED.is_err());
    }

    /// The in-place junction (a held, emptied folder made a junction before the next name under
    /// it is opened) cannot be planted here: Wine makes no junction. What refuses it is that
    /// every folder held and every file opened must be, by its handle's own final path, the
    /// entry the walk meant; this pins that judgement down: the entry itself (in any ASCII
    /// case) passes, anything above, beside or below it does not.
    #[test]
    fn x3_a_handle_passes_only_as_the_entry_it_was_opened_by() {
        let (tmp, fd) = planted();
        let inside = std::fs::canonicalize(tmp.path().join("inside")).expect("canonical");
        let at = inside.join("a").join("b").join("f");
        let f = open_file_beneath(fd.as_fd(), Path::new("a\\b\\f")).expect("f");
        assert!(opened_at(&f, &at), "{f:?} is not at {}", at.display());
        let upper = PathBuf::from(at.to_str().expect("utf-8").to_ascii_uppercase());
        assert!(opened_at(&f, &upper), "{}", upper.display());
        for other in [
            inside.join("a").join("b"),
            inside.join("a").join("file"),
            inside.join("a").join("c").join("f"),
            tmp.path().join("outside").join("f"),
            at.join("f"),
        ] {
            assert!(!opened_at(&f, &other), "{}", other.display());
        }
        // Every folder the walk holds passed the same judgement, under the path it keeps.
        let b = open_dir_beneath(fd.as_fd(), Path::new("a\\b")).expect("b");
        assert!(opened_at(&b.0.handle, &b.0.path));
        assert!(opened_at(&fd.0.handle, &fd.0.path));
        let a = open_parent(b.as_fd()).expect("a");
        assert!(!opened_at(&a.0.handle, &b.0.path));
    }

    #[test]
    fn x3_the_profile_is_an_absolute_folder_and_a_root_lies_strictly_inside_with_kept_names() {
        let tmp = crate::scratch::scratch();
        let base = std::fs::canonicalize(tmp.path()).expect("canonical");
        let bob = base.join("bob");
        std::fs::create_dir(&bob).expect("mkdir");
        let given = |p: &Path| Some(p.as_os_str().to_owned());
        for root in [
            bob.join("cache"),
            bob.join("AppData").join("Local").join("skillcache"),
            bob.join("..hidden").join("PROGRA~1"),
        ] {
            assert_eq!(
                inside_profile(&root, given(&bob)),
                Ok(()),
                "{}",
                root.display()
            );
        }
        // Beside the profile (a name that merely starts with the profile's), the profile itself,
        // above it: outside.
        let outside = inside_profile(&base.join("bob2").join("cache"), given(&bob))
            .expect_err("a sibling that starts with the profile's name");
        for root in [bob.clone(), base.join("cache"), base.join("bob2")] {
            assert_eq!(
                inside_profile(&root, given(&bob)),
                Err(outside),
                "{}",
                root.display()
            );
        }
        // A profile that names no folder of the user's: unset, empty, relative (the current
        // folder's business), rooted without a drive, a drive's root.
        let none = inside_profile(&bob.join("cache"), None).expect_err("unset");
        assert_ne!(none, outside);
        let drive = base.ancestors().last().expect("a root").to_path_buf();
        for profile in [
            OsString::new(),
            OsString::from("."),
            OsString::from("bob"),
            OsString::from("\\"),
            drive.into_os_string(),
        ] {
            assert_eq!(
                inside_profile(&bob.join("cache"), Some(profile.clone())),
                Err(none),
                "{profile:?}"
            );
        }
        // Names Windows would not keep as written, on the way to the root or as its last name.
        let kept = inside_profile(&bob.join("cache."), given(&bob)).expect_err("trailing dot");
        assert_ne!(kept, outside);
        for root in [
            bob.join("cache "),
            bob.join("NUL").join("cache"),
            bob.join("com1.d"),
            bob.join("CONIN$"),
            bob.join("skill:cache"),
            bob.join("what?"),
        ] {
            assert_eq!(
                inside_profile(&root, given(&bob)),
                Err(kept),
                "{}",
                root.display()
            );
        }
    }
}

/// A host's open descriptor as a child's output: Windows has no descriptor paths, and adopting a
/// raw handle needs `unsafe`; the host names a file instead.
pub(crate) fn append_to_descriptor(fd: u32) -> io::Result<std::fs::File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("file descriptor {fd} cannot be reopened on Windows"),
    ))
}

/// A duplicate of this process's stderr handle, for a child to inherit.
pub(crate) fn duplicate_stderr() -> io::Result<std::process::Stdio> {
    std::os::windows::io::AsHandle::as_handle(&io::stderr())
        .try_clone_to_owned()
        .map(std::process::Stdio::from)
}

/// A child's piped stderr as a file this process reads with blocking reads (on a thread of its
/// own).
#[cfg(feature = "mcp")]
pub(crate) fn child_stderr_file(stderr: tokio::process::ChildStderr) -> io::Result<std::fs::File> {
    stderr.into_owned_handle().map(std::fs::File::from)
}

/// A Windows process is not ended by a signal.
#[cfg(feature = "mcp")]
pub(crate) fn exit_signal(_status: std::process::ExitStatus) -> Option<i32> {
    None
}
