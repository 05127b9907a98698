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

use crate::platform::{self, BorrowedFd};
// Whether one filesystem sync stands for the per-file ones is the platform's to say (Linux:
// `syncfs` on a kernel and filesystem that report its errors; never elsewhere).
pub(crate) use crate::platform::filesystem_sync_is_durable;

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
    /// Makes everything written to the filesystem holding `fd` durable: every file's data and
    /// every folder's names (`syncfs`). One call stands for all the per-file and per-folder
    /// syncs of a batch; only asked where that is known to hold and to report writeback errors
    /// ([`filesystem_sync_is_durable`]). A disk that cannot (the default) answers
    /// `Unsupported`, and the store syncs each file and folder instead.
    ///
    /// # Errors
    /// The system call's error (a writeback error on that filesystem since `fd` was opened
    /// among them); `Unsupported` from a disk without it.
    fn sync_filesystem(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let _ = fd;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
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

// Each call is the platform layer's (src/platform/): the same operation with each system's own
// means, e.g. `fsync` on Linux and `F_FULLFSYNC` on macOS for `sync`.
impl Disk for RealDisk {
    fn mkdir(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
        platform::mkdir_at(dir, name, mode)
    }

    fn create(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<File> {
        platform::create_at(dir, name, mode)
    }

    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }

    fn sync(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        platform::sync(fd)
    }

    fn sync_filesystem(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        platform::sync_filesystem(fd)
    }

    fn chmod(&self, fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
        platform::chmod(fd, mode)
    }

    fn link(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()> {
        platform::link_at(from_dir, from, to_dir, to)
    }

    fn rename(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()> {
        platform::rename_at(from_dir, from, to_dir, to)
    }

    fn unlink(&self, dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()> {
        platform::unlink_at(dir, name, folder)
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
///
/// It also checks the order the crash argument rests on (R-C3), which a fault on a disk that
/// keeps every write cannot show: it tracks which files hold data written since their last sync
/// and which names were added to a folder since that folder's last sync (a file or folder sync
/// covers itself; a filesystem sync covers everything on that filesystem), and records a
/// violation when a file is linked under a blob name before its data was durable, or when a blob
/// is recorded in the index while a blob name or a folder on its way is not yet durable.
///
/// By default it makes each write through this platform's [`RealDisk`]. [`FaultyDisk::per_file_syncs`]
/// makes it a disk without a filesystem-wide sync, as on macOS and Windows, so that the store's
/// per-file and per-folder sync path — the only one those platforms have — is enumerated here too.
#[cfg(any(test, feature = "fault-injection"))]
#[derive(Debug, Default)]
pub struct FaultyDisk {
    state: std::sync::Mutex<FaultState>,
    per_file_syncs: bool,
}

/// A file or folder: (device, inode).
#[cfg(any(test, feature = "fault-injection"))]
type Node = (u64, u64);

#[cfg(any(test, feature = "fault-injection"))]
#[derive(Debug, Default)]
struct FaultState {
    writes: u64,
    plan: Option<(u64, Fault)>,
    crashed: bool,
    trace: Vec<&'static str>,
    /// Files written since their last sync.
    unsynced_data: std::collections::HashSet<Node>,
    /// Names added to a folder since its last sync, that a blob depends on: (folder, name).
    unsynced_names: Vec<(Node, String)>,
    violations: Vec<String>,
}

#[cfg(any(test, feature = "fault-injection"))]
fn node(fd: BorrowedFd<'_>) -> io::Result<Node> {
    let st = platform::fstat(fd)?;
    Ok((st.dev, st.ino))
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

    /// The same disk without a filesystem-wide sync (`sync_filesystem` answers `Unsupported`
    /// and writes nothing), as on every platform but Linux.
    #[must_use]
    pub fn per_file_syncs(self) -> FaultyDisk {
        FaultyDisk {
            per_file_syncs: true,
            ..self
        }
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

    /// Every break of the durability order seen so far (empty when the protocol held).
    #[must_use]
    pub fn order_violations(&self) -> Vec<String> {
        self.lock().violations.clone()
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
                Fault::NoSpace => Err(io::Error::from_raw_os_error(platform::errno::ENOSPC)),
                Fault::Io => Err(io::Error::from_raw_os_error(platform::errno::EIO)),
            },
            _ => Ok(()),
        }
    }

    /// Notes, after a write went through, what it left not yet durable (or made durable).
    fn note(&self, change: impl FnOnce(&mut FaultState) -> io::Result<()>) -> io::Result<()> {
        change(&mut self.lock())
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
        chmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()>;
        rename(from_dir: BorrowedFd<'_>, from: &str, to_dir: BorrowedFd<'_>, to: &str) -> io::Result<()>;
        unlink(dir: BorrowedFd<'_>, name: &str, folder: bool) -> io::Result<()>;
    }

    fn mkdir(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
        self.gate("mkdir")?;
        RealDisk.mkdir(dir, name, mode)?;
        // Every folder made is tracked, staging and the quarantine too: by position a name
        // cannot be told apart (an origin may be labelled `tmp`), and every folder a blob hangs
        // from is synced before its row anyway, which covers the names made in it.
        let at = node(dir)?;
        self.note(|s| {
            s.unsynced_names.push((at, name.to_owned()));
            Ok(())
        })
    }

    fn create(&self, dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<File> {
        self.gate("create")?;
        let file = RealDisk.create(dir, name, mode)?;
        let at = node(platform::AsFd::as_fd(&file))?;
        self.note(|s| {
            s.unsynced_data.insert(at);
            Ok(())
        })?;
        Ok(file)
    }

    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        self.gate("write")?;
        RealDisk.write(file, bytes)?;
        let at = node(platform::AsFd::as_fd(file))?;
        self.note(|s| {
            s.unsynced_data.insert(at);
            Ok(())
        })
    }

    fn sync(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.gate("sync")?;
        RealDisk.sync(fd)?;
        let at = node(fd)?;
        self.note(|s| {
            s.unsynced_data.remove(&at);
            s.unsynced_names.retain(|(dir, _)| *dir != at);
            Ok(())
        })
    }

    fn sync_filesystem(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        if self.per_file_syncs {
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        }
        self.gate("sync_filesystem")?;
        RealDisk.sync_filesystem(fd)?;
        let (dev, _) = node(fd)?;
        self.note(|s| {
            s.unsynced_data.retain(|(d, _)| *d != dev);
            s.unsynced_names.retain(|((d, _), _)| *d != dev);
            Ok(())
        })
    }

    fn link(
        &self,
        from_dir: BorrowedFd<'_>,
        from: &str,
        to_dir: BorrowedFd<'_>,
        to: &str,
    ) -> io::Result<()> {
        self.gate("link")?;
        RealDisk.link(from_dir, from, to_dir, to)?;
        let st = platform::stat_at(from_dir, from)?;
        let (file, at) = ((st.dev, st.ino), node(to_dir)?);
        self.note(|s| {
            if s.unsynced_data.contains(&file) {
                s.violations
                    .push(format!("{to} was linked before its data was synced"));
            }
            s.unsynced_names.push((at, to.to_owned()));
            Ok(())
        })
    }

    fn commit_point(&self, what: &'static str) -> io::Result<()> {
        self.gate(what)?;
        self.note(|s| {
            if what == "index: record blob" && !s.unsynced_names.is_empty() {
                let names: Vec<&str> = s.unsynced_names.iter().map(|(_, n)| n.as_str()).collect();
                let v = format!("a blob was recorded while these names were not durable: {names:?}");
                s.violations.push(v);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::{Disk, FaultyDisk};
    use crate::platform::{AsFd as _, OwnedFd};

    /// A folder with a file written in it, and the disk that watched.
    fn written() -> (crate::scratch::Scratch, OwnedFd, FaultyDisk, File) {
        let dir = crate::scratch::scratch();
        let folder = crate::platform::open_folder(dir.path(), false).expect("open folder");
        let disk = FaultyDisk::counting();
        let mut f = disk.create(folder.as_fd(), "t", 0o600).expect("create");
        disk.write(&mut f, b"bytes").expect("write");
        (dir, folder, disk, f)
    }

    #[test]
    fn c3_the_order_model_flags_a_link_before_its_data_is_synced() {
        let (_dir, folder, disk, _f) = written();
        disk.link(folder.as_fd(), "t", folder.as_fd(), "blob").expect("link");
        let v = disk.order_violations();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("blob was linked before its data was synced"), "{v:?}");
    }

    #[test]
    fn c3_the_order_model_flags_a_record_before_its_name_is_durable() {
        let (_dir, folder, disk, f) = written();
        disk.sync(f.as_fd()).expect("sync file");
        disk.link(folder.as_fd(), "t", folder.as_fd(), "blob").expect("link");
        disk.commit_point("index: record blob").expect("commit");
        let v = disk.order_violations();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("not durable") && v[0].contains("blob"), "{v:?}");
    }

    #[test]
    fn c3_the_order_model_accepts_per_file_and_whole_filesystem_syncs() {
        let (_dir, folder, disk, f) = written();
        disk.sync(f.as_fd()).expect("sync file");
        disk.link(folder.as_fd(), "t", folder.as_fd(), "blob").expect("link");
        disk.sync(folder.as_fd()).expect("sync folder");
        disk.commit_point("index: record blob").expect("commit");
        let (_dir2, folder2, disk2, f2) = written();
        disk2.sync_filesystem(f2.as_fd()).expect("syncfs");
        disk2.link(folder2.as_fd(), "t", folder2.as_fd(), "blob").expect("link");
        disk2.mkdir(folder2.as_fd(), "ab", 0o700).expect("mkdir");
        disk2.sync_filesystem(folder2.as_fd()).expect("syncfs");
        disk2.commit_point("index: record blob").expect("commit");
        assert_eq!(disk.order_violations(), Vec::<String>::new());
        assert_eq!(disk2.order_violations(), Vec::<String>::new());
    }
}
