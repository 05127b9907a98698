//! The platform layer (issue 31): the few filesystem operations whose means differ by operating
//! system, behind one module per platform chosen at the `mod` line below. Everything above it —
//! the store, the index, `serve`, the CLI — calls these functions and never names an operating
//! system; this is the only place with `cfg(target_os)`/`cfg(windows)`.
//!
//! What each platform promises, and why the guarantees still hold where the means differ, is in
//! `docs/guarantees.md` ("Platforms"). In short:
//!
//! - **Linux** (`linux.rs`): opening beneath a folder is one `openat2` with
//!   `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, with the component walk of
//!   `posix.rs` as the fallback where `openat2` is missing or forbidden; a batch of writes is
//!   made durable with one `syncfs` where the kernel reports its errors, else per file and
//!   folder with `fsync`.
//! - **macOS** (`apple.rs`): opening beneath a folder is the component walk (`openat` with
//!   `O_NOFOLLOW | O_DIRECTORY` for each folder, no `..`, the descriptor's own type checked at
//!   each step); durability is `fcntl(F_FULLFSYNC)` for data and folders, because a plain `fsync`
//!   there leaves the bytes in the drive's cache.
//! - **Windows** (`windows.rs`): `Rehash` isolation only, with the standard library's means and
//!   no `unsafe`. Opening beneath a folder is a walk over held folders: each name checked before
//!   any call (`windows_names.rs`: no `..`, root, drive, stream, device or rewritten name), each
//!   folder opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`), checked by its attributes and held
//!   without `FILE_SHARE_DELETE` with every folder above it, so nothing on the path can be
//!   renamed or removed while it is used; a name under a held folder is then reached by path,
//!   and each folder held and file opened must be, by its handle's own final path, the entry
//!   meant (a folder emptied and made a junction in place is refused, never followed).
//!   Durability is `FlushFileBuffers` per file. A root must lie inside the user's profile (its
//!   inherited ACL is the user's: no ACL can be set without raw calls), and `Guaranteed`
//!   isolation is refused at open (no file identity, link count or owner on stable std).
//!
//! The handle types are the platform's own: descriptors on Unix; on Windows a held folder (its
//! handle, its path and the folders above it) or an open file. They go under one set of names
//! ([`OwnedFd`], [`BorrowedFd`], [`AsFd`]) so signatures above this layer do not change from
//! one platform to another.

use std::io;

// The shared POSIX part (rustix): the component walk, `*at` calls, metadata. Linux and macOS
// build on it; it is compiled (and tested) on Linux, so the macOS opener's walk runs here too.
#[cfg(unix)]
mod posix;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;

#[cfg(target_vendor = "apple")]
#[path = "apple.rs"]
mod os;

#[cfg(windows)]
#[path = "windows.rs"]
mod os;

// The Windows walk's checks on names: plain string logic, compiled and tested everywhere.
#[cfg(any(windows, test))]
mod windows_names;

#[cfg(not(any(target_os = "linux", target_vendor = "apple", windows)))]
compile_error!(
    "skillcache's platform layer covers Linux, macOS and Windows; add a module in src/platform/"
);

pub(crate) use os::{
    AsFd, BorrowedFd, GUARANTEED, HOLD_FOLDERS, OwnedFd, block_size, chmod, create_at, disk_cache,
    errno, filesystem_sync_is_durable, fstat, hold_dir, hold_folder, hold_parent, link_at, list,
    lower_this_thread, mkdir_at, open_dir, open_dir_beneath, open_file_beneath, open_file_here,
    open_folder, open_lock, open_parent, others_can_create_in, others_can_rename_in, read_link_at,
    rename_at, room, stat_at, sync, sync_filesystem, unlink_at, user_id,
};
// `serve`'s stdio, as non-blocking pipes where they are pipes.
#[cfg(feature = "serve")]
pub(crate) use os::standard_pipes;
// Files the host names (config files, lock files, the host key): opened without blocking and
// read with the platform's idea of owner and mode.
pub(crate) use os::{
    file_identity, folder_lock_file, link_count, owner_and_mode, private_dir_builder, private_file,
    read_no_follow, special_kind,
};
// The tests' links (the layers above name no operating system).
#[cfg(test)]
pub(crate) use os::symlink;
// Where the user's folders are, and the random bytes of a new host key.
pub(crate) use os::{cache_home, config_home, home, random};
// A descriptor of the host's as a server's stderr (the bindings' `stderr` option).
pub(crate) use os::{append_to_descriptor, duplicate_stderr};
// How a server's process ended, in the MCP source's words for it, and its stderr read.
#[cfg(feature = "mcp")]
pub(crate) use os::{child_stderr_file, exit_signal};

// The part the CLI needs too: one file, compiled into the library here and into the binary by
// `#[path]` (the binary cannot reach the library's private modules).
mod named;
#[allow(unused_imports)] // `set_mode` serves the CLI and tests only
pub(crate) use named::{nonblocking, set_mode};

/// What kind of thing a name is, from the entry itself (never what a link points to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (or, on Windows, any reparse point).
    Link,
    /// A FIFO, socket or device.
    #[cfg_attr(windows, allow(dead_code))]
    Other,
    /// The listing did not say (some filesystems do not type their entries; Windows always does).
    #[cfg_attr(windows, allow(dead_code))]
    Unknown,
}

/// The metadata of an open file or folder, or of a name, in the platform's widths made one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// What it is.
    pub kind: Kind,
    /// The permission bits (`0o7777`); on Windows `0o444` for a read-only file, else `0o666`.
    pub mode: u32,
    /// Its length in bytes.
    pub size: u64,
    /// What the disk pays for it (R-Q4, K2): the bytes the filesystem allocated, as `du` counts
    /// them, never less than [`size`](Self::size) (a filesystem that keeps a small file inline,
    /// compresses it or leaves holes in it still holds its bytes somewhere).
    pub allocated: u64,
    /// The owner's user id (0 on Windows, where ownership is an ACL's business).
    pub uid: u32,
    /// The number of names it has.
    pub nlink: u64,
    /// The device it is on.
    pub dev: u64,
    /// Its inode (file index).
    pub ino: u64,
    /// The modification time, in nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// The change time (any write, chmod or link moves it), in nanoseconds since the epoch.
    pub ctime_ns: i64,
}

/// Whether an error carries one of `codes` ([`errno`]'s constants).
pub(crate) fn is(e: &io::Error, codes: &[i32]) -> bool {
    e.raw_os_error().is_some_and(|c| codes.contains(&c))
}
