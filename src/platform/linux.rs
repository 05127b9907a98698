//! Linux: opening beneath a folder is one `openat2`, and a batch is made durable with one
//! `syncfs` where that is known to hold; the rest is the shared POSIX part.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};

pub(crate) use super::posix::*;
use super::posix::{FILE_FLAGS, dir_flags, open_dir_walking, open_file_walking};

/// stdin and stdout as tokio pipes, read and written non-blocking on the runtime's threads,
/// each where it is a pipe (`None` otherwise: a terminal, a file, a socket), for `serve`'s
/// stdio transport. Each is the pipe opened anew through `/proc/self/fd`: a description of its
/// own, so the non-blocking mode tokio sets stays ours. Set on the standard descriptors
/// themselves it was shared with whatever else holds them — stderr when it is the same pipe
/// (`2>&1`: a log line then failed with `EAGAIN` and its writer panicked) and the shell that
/// started the server (its next command read a non-blocking stdin): round 27 of review.
#[cfg(feature = "serve")]
pub(crate) fn standard_pipes() -> (Option<super::posix::PipeIn>, Option<super::posix::PipeOut>) {
    use tokio::net::unix::pipe;
    let input = pipe::OpenOptions::new()
        .open_receiver("/proc/self/fd/0")
        .ok();
    let output = pipe::OpenOptions::new().open_sender("/proc/self/fd/1").ok();
    (
        input.map(|r| Box::new(r) as super::posix::PipeIn),
        output.map(|w| Box::new(w) as super::posix::PipeOut),
    )
}

/// No symbolic link, no `/proc` magic link, no `..` out of the folder: checked by the kernel for
/// every component at once.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Whether `openat2` was refused once in this process (`ENOSYS` or `EPERM`: a kernel before 5.6,
/// or a sandbox's seccomp filter, which answers every later call the same way). Remembered so
/// that every later open goes straight to the component walk instead of paying a refused system
/// call first (issue 41: under such a filter the refused call was part of every cache hit).
/// The walk keeps the same rules, so asking `openat2` again could only cost time; a stray
/// `EPERM` for one file costs this process the faster opener, never a guarantee.
static OPENAT2_REFUSED: AtomicBool = AtomicBool::new(false);

/// `openat2` beneath `dir`; `None` where the kernel lacks it (before 5.6) or a sandbox forbids
/// it, and the component walk takes over.
fn openat2(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> Option<io::Result<OwnedFd>> {
    if OPENAT2_REFUSED.load(Ordering::Relaxed) {
        return None;
    }
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), RESOLVE) {
        Ok(fd) => Some(Ok(fd)),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            OPENAT2_REFUSED.store(true, Ordering::Relaxed);
            None
        }
        Err(e) => Some(Err(e.into())),
    }
}

/// Opens the folder at `rel` below `dir` (`.` or empty for `dir` itself), following no link on
/// the way.
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
    openat2(dir, rel, dir_flags(false)).unwrap_or_else(|| open_dir_walking(dir, rel))
}

/// Opens the file at `rel` below `dir` for reading, following no link on the way and never
/// blocking on a FIFO.
///
/// # Errors
/// `ELOOP` for a link anywhere on the way, `EXDEV` for a path that would leave `dir`, `ENXIO`
/// for a socket, `ENOENT`, or another system error.
pub(crate) fn open_file_beneath(dir: BorrowedFd<'_>, rel: &Path) -> io::Result<File> {
    match openat2(dir, rel, FILE_FLAGS) {
        Some(opened) => opened.map(File::from),
        None => open_file_walking(dir, rel),
    }
}

/// Makes a file's data, or a folder's names, durable: Linux's `fsync` reaches the disk.
///
/// # Errors
/// The system call's error.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    super::posix::fsync(fd)
}

/// `syncfs`: everything written to the filesystem holding `fd`, data and names, made durable in
/// one call. Asked only where [`filesystem_sync_is_durable`] holds.
///
/// # Errors
/// The system call's error (a writeback error on that filesystem since `fd` was opened among
/// them).
pub(crate) fn sync_filesystem(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::syncfs(fd)?)
}

/// Whether one `syncfs` of the filesystem holding `fd` makes everything written there durable
/// and says when it did not. Two conditions, both checked:
///
/// - the kernel returns the filesystem's own sync errors through it: Linux reports writeback
///   errors through `syncfs` since 5.8, and the errors of the filesystem's own sync (a journal
///   that failed to commit) since 5.17 — before, they were dropped;
/// - the filesystem really writes to its disk when asked: ext2/3/4, XFS, Btrfs and F2FS do, and
///   tmpfs has nothing to write. A FUSE or 9p mount may answer at once without asking its
///   server, and an overlay may not pass on the lower filesystem's errors: those, and anything
///   not named here, keep the per-file syncs.
pub(crate) fn filesystem_sync_is_durable(fd: BorrowedFd<'_>) -> bool {
    // statfs(2) magic numbers.
    const EXT_SUPER_MAGIC: i64 = 0xEF53;
    const XFS_SUPER_MAGIC: i64 = 0x5846_5342;
    const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;
    const F2FS_SUPER_MAGIC: i64 = 0xF2F5_2010;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    if !kernel_reports_sync_errors() {
        return false;
    }
    rustix::fs::fstatfs(fd).is_ok_and(|st| {
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)] // its width varies by target
        let kind = st.f_type as i64;
        matches!(
            kind,
            EXT_SUPER_MAGIC | XFS_SUPER_MAGIC | BTRFS_SUPER_MAGIC | F2FS_SUPER_MAGIC | TMPFS_MAGIC
        )
    })
}

/// [`filesystem_sync_is_durable`]'s first condition, read once (the kernel does not change
/// under us).
fn kernel_reports_sync_errors() -> bool {
    static REPORTS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REPORTS.get_or_init(|| {
        release_reports_sync_errors(&rustix::system::uname().release().to_string_lossy())
    })
}

/// Whether a Linux release string (`6.1.0-13-amd64`) is 5.17 or later; anything unreadable is
/// not.
fn release_reports_sync_errors(release: &str) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    matches!((parts.next(), parts.next()), (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (5, 17))
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::AsFd as _;

    #[test]
    fn c3_syncfs_is_trusted_only_on_filesystems_that_write_when_asked() {
        // procfs writes nothing anywhere: never trusted, whatever the kernel.
        let proc = File::open("/proc").expect("procfs");
        assert!(!super::filesystem_sync_is_durable(proc.as_fd()));
        // This machine's scratch folders are on ext4 (or tmpfs), and its kernel is 6.x.
        let dir = crate::scratch::scratch();
        let here = File::open(dir.path()).expect("scratch");
        assert_eq!(
            super::filesystem_sync_is_durable(here.as_fd()),
            super::kernel_reports_sync_errors()
        );
    }

    #[test]
    fn c3_syncfs_is_trusted_only_from_linux_5_17() {
        for (release, trusted) in [
            ("6.18.44-fc-v857", true),
            ("5.17.0", true),
            ("6.1.0-13-amd64", true),
            ("5.16.20", false),
            ("5.10.0-28-amd64", false),
            ("5.8.0", false),
            ("5.7.19", false),
            ("4.19.0-26-amd64", false),
            ("5", false),
            ("", false),
            ("not a release", false),
        ] {
            assert_eq!(
                super::release_reports_sync_errors(release),
                trusted,
                "{release}"
            );
        }
    }
}
