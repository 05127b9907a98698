//! The one narrow seam every write under the root goes through.
//!
//! The store makes only a handful of filesystem changes: create a temporary, write it, sync a
//! file or a folder, change a mode, make a folder, link, rename, unlink. Each is a method of
//! [`Disk`], always relative to a folder handle opened without following links (R-H1). The real
//! implementation is [`RealDisk`]; tests swap in a [`FaultyDisk`] that crashes (stops every later
//! write) or fails with `ENOSPC`/`EIO` at the N-th write, so that every write point of publish,
//! quarantine, gc and purge can be reached on purpose instead of by a lucky `SIGKILL`.
//!
//! An index commit is not a filesystem call the store makes, but it is a write point all the
//! same: the cache announces each one through [`Disk::commit_point`], so a crash "between the
//! blob and its row" is one of the enumerated points.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::BorrowedFd;

use rustix::fs::{AtFlags, Mode, OFlags};

/// The filesystem changes the store makes. Reads are not here: they change nothing.
pub trait Disk: Send + Sync + std::fmt::Debug {
    /// Makes folder `name` in `dir` with `mode`.
    ///
    /// # Errors
    /// The system call's error (`EEXIST` included).
    fn mkdir(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()>;
    /// Creates file `name` in `dir` for writing: it must not exist, and a link there is never
    /// followed.
    ///
    /// # Errors
    /// The system call's error.
    fn create(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<File>;
    /// Writes all of `bytes` to `file`.
    ///
    /// # Errors
    /// The system call's error (`ENOSPC` on a full disk).
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()>;
    /// Makes a file's data, or a folder's names, durable.
    ///
    /// # Errors
    /// The system call's error.
    fn sync(&self, fd: BorrowedFd<'_>) -> io::Result<()>;
    /// Sets the mode of an open file or folder (never through a path, so never through a link).
    ///
    /// # Errors
    /// The system call's error.
    fn chmod(&self, fd: BorrowedFd<'_>, mode: u32) -> io::Result<()>;
    /// Links `from` in `from_dir` as `to` in `to_dir`; an existing `to` is never replaced.
    ///
    /// # Errors
    /// The system call's error (`EEXIST` included).
    fn link(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()>;
    /// Renames `from` in `from_dir` to `to` in `to_dir`.
    ///
    /// # Errors
    /// The system call's error.
    fn rename(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()>;
    /// Removes `name` from `dir`: an empty folder if `folder`, else any other kind of name (a
    /// link is removed itself, never its target).
    ///
    /// # Errors
    /// The system call's error.
    fn unlink(&self, dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()>;
    /// A write that is not the store's own (an index commit) is about to happen.
    ///
    /// # Errors
    /// Only an injecting double fails here.
    fn commit_point(&self, what: &'static str) -> io::Result<()>;
}

/// The real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealDisk;

impl Disk for RealDisk {
    fn mkdir(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode)).map_err(io::Error::from)
    }

    fn create(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        Ok(File::from(fd))
    }

    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }

    fn sync(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        rustix::fs::fsync(fd).map_err(io::Error::from)
    }

    fn chmod(&self, fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
        rustix::fs::fchmod(fd, Mode::from_raw_mode(mode)).map_err(io::Error::from)
    }

    fn link(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()> {
        rustix::fs::linkat(from_dir, from, to_dir, to, AtFlags::empty()).map_err(io::Error::from)
    }

    fn rename(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()> {
        rustix::fs::renameat(from_dir, from, to_dir, to).map_err(io::Error::from)
    }

    fn unlink(&self, dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()> {
        let flags = if folder {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        rustix::fs::unlinkat(dir, name, flags).map_err(io::Error::from)
    }

    fn commit_point(&self, _what: &'static str) -> io::Result<()> {
        Ok(())
    }
}

/// What a [`FaultyDisk`] does at its chosen write.
#[cfg(any(test, feature = "fault-injection"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The process "dies": that write and every later one fail and change nothing.
    Crash,
    /// That one write fails with `ENOSPC`; later ones go through.
    NoSpace,
    /// That one write fails with `EIO`; later ones go through.
    Io,
}

/// A [`Disk`] that counts writes and injects one fault at the N-th (0-based), for crash-point
/// enumeration and the model-based fuzz target.
#[cfg(any(test, feature = "fault-injection"))]
#[derive(Debug, Default)]
pub struct FaultyDisk {
    state: std::sync::Mutex<FaultState>,
}

#[cfg(any(test, feature = "fault-injection"))]
#[derive(Debug, Default)]
struct FaultState {
    writes: u64,
    plan: Option<(u64, Fault)>,
    crashed: bool,
    trace: Vec<&'static str>,
}

#[cfg(any(test, feature = "fault-injection"))]
impl FaultyDisk {
    /// A disk that injects nothing and only counts (to learn how many write points there are).
    #[must_use]
    pub fn counting() -> FaultyDisk {
        FaultyDisk::default()
    }

    /// A disk that injects `fault` at write number `at` (0-based).
    #[must_use]
    pub fn failing_at(at: u64, fault: Fault) -> FaultyDisk {
        let disk = FaultyDisk::default();
        disk.lock().plan = Some((at, fault));
        disk
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes attempted so far (including the faulted one and those refused after a crash).
    #[must_use]
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// Whether the simulated crash has happened.
    #[must_use]
    pub fn crashed(&self) -> bool {
        self.lock().crashed
    }

    /// The kinds of write attempted, in order (for messages).
    #[must_use]
    pub fn trace(&self) -> Vec<&'static str> {
        self.lock().trace.clone()
    }

    /// Counts one write of kind `what`; fails it if it is the planned one or after a crash.
    fn gate(&self, what: &'static str) -> io::Result<()> {
        let mut s = self.lock();
        let n = s.writes;
        s.writes += 1;
        s.trace.push(what);
        if s.crashed {
            return Err(io::Error::other("injected crash: no write after it"));
        }
        match s.plan {
            Some((at, fault)) if at == n => match fault {
                Fault::Crash => {
                    s.crashed = true;
                    Err(io::Error::other("injected crash"))
                }
                Fault::NoSpace => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
                Fault::Io => Err(io::Error::from_raw_os_error(libc::EIO)),
            },
            _ => Ok(()),
        }
    }
}

/// One [`FaultyDisk`] method: the write is counted (and maybe failed) under the method's own name,
/// then made on the real disk. One rule for every method, so no write point can be missed or
/// traced under another name.
#[cfg(any(test, feature = "fault-injection"))]
macro_rules! gated {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            fn $name(&self, $($arg: $ty),*) -> $out {
                self.gate(stringify!($name))?;
                RealDisk.$name($($arg),*)
            }
        )*
    };
}

#[cfg(any(test, feature = "fault-injection"))]
impl Disk for FaultyDisk {
    gated! {
        mkdir(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()>;
        create(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<File>;
        write(file: &mut File, bytes: &[u8]) -> io::Result<()>;
        sync(fd: BorrowedFd<'_>) -> io::Result<()>;
        chmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()>;
        link(from_dir: BorrowedFd<'_>, from: &str, to_dir: BorrowedFd<'_>, to: &str) -> io::Result<()>;
        rename(from_dir: BorrowedFd<'_>, from: &str, to_dir: BorrowedFd<'_>, to: &str) -> io::Result<()>;
        unlink(dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()>;
    }
    fn commit_point(&self, what: &'static str) -> io::Result<()> {
        self.gate(what)
    }
}
