//! The host key that seals index rows (R-H3): where it lives, how it is created, and which key
//! files are refused.
//!
//! Invariants: the key lies outside the cache root (anyone who may write the root must not be
//! able to read or replace it); it is a regular file of exactly 32 bytes, owned by the user
//! running skillcache, readable by nobody else (0600, in a 0700 folder when we create it). Two
//! processes that create it at the same moment agree on one key: each writes a private
//! temporary and hard-links it to the name; the link that loses reads the winner's key.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use crate::error::{Error, KeyProblem};
use crate::platform::{self, errno};
use crate::index::{KEY_LEN, SealKey};

/// The default key file: `$SKILLCACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/skillcache/host.key`,
/// else `~/.config/skillcache/host.key`. Empty variables count as unset. It is a configuration
/// folder, not a cache one, on purpose: the key must not live where the cache lives.
#[must_use]
pub fn default_key_file() -> PathBuf {
    if let Some(k) = std::env::var_os("SKILLCACHE_KEY_FILE").filter(|v| !v.is_empty()) {
        return PathBuf::from(k);
    }
    platform::config_home().join("skillcache").join("host.key")
}

/// Reads the key at `path`, creating it on first use, after refusing a path inside `root`
/// (already resolved) or inside a skill discovery path (an agent would load it as a skill's
/// file, and the model would read the key: round 23 of review); and whether it was created
/// just now.
pub(crate) fn load_or_create(
    path: &Path,
    root: &Path,
    discovery: &[PathBuf],
) -> Result<(SealKey, bool), Error> {
    let refused = |problem| Error::Index(crate::error::IndexError::HostKey {
        path: path.to_owned(),
        problem,
    });
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    // The key is checked, read and made at one spelling: its folder resolved (no link left on
    // it), and its own name, never followed (`read`). Checking the resolved path but making the
    // key by the path as given let a link in another user's folder point elsewhere between the
    // two (round 25 of review); a folder that cannot be resolved is refused, as for the root.
    let name = path
        .file_name()
        .ok_or_else(|| refused(KeyProblem::NotARegularFile))?;
    let given_folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = super::root::resolve(given_folder.unwrap_or(Path::new(".")))
        .ok()
        .filter(|f| fs::symlink_metadata(f).map_or(true, |m| m.is_dir()))
        .ok_or_else(|| refused(KeyProblem::FolderUnreachable))?;
    let at = folder.join(name);
    // By path, and by identity (a path whose real spelling is too long to resolve, a bind
    // mount: round 20 of review).
    if at.starts_with(&root) || super::root::lies_within(&folder, &root) {
        return Err(refused(KeyProblem::InsideRoot { root }));
    }
    // Nobody else may be able to swap a folder on that path for a link between these checks
    // and the key's creation (round 24 of review), as for the root.
    if let Some(folder) = super::root::changeable_by_others(&folder) {
        return Err(refused(KeyProblem::FolderNotOurs { folder }));
    }
    for d in discovery {
        // By its resolved spelling (it may not exist yet), names compared without case as for
        // the root: where the filesystem folds case, a key at `~/.Claude/skills/k` is read by
        // the agent that scans `~/.claude/skills`, and while neither exists `resolve` spells
        // both as given. And by identity (a link or a bind mount into it).
        let by_path = super::root::resolve(d).is_ok_and(|d| super::root::within(&at, &d));
        if by_path || super::root::lies_within(&folder, d) {
            return Err(refused(KeyProblem::InsideDiscovery { folder: d.clone() }));
        }
    }
    match read(&at) {
        Err(Error::Store(crate::error::StoreError::Io { source, .. })) if source.kind() == io::ErrorKind::NotFound => {
            create(&at)?;
            read(&at).map(|key| (key, true))
        }
        other => other.map(|key| (key, false)),
    }
}

fn io_err(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Store(crate::error::StoreError::Io {
        op,
        path: path.to_owned(),
        source,
    })
}

/// Opens without following a link and without blocking on a FIFO, then checks what it opened.
fn read(path: &Path) -> Result<SealKey, Error> {
    let refused = |problem| Error::Index(crate::error::IndexError::HostKey {
        path: path.to_owned(),
        problem,
    });
    let mut file = match platform::read_no_follow(OpenOptions::new().read(true)).open(path) {
        Ok(f) => f,
        // O_NOFOLLOW on a symlink.
        Err(e) if platform::is(&e, &[errno::ELOOP]) => {
            return Err(refused(KeyProblem::NotARegularFile));
        }
        Err(e) => return Err(io_err("read the host key", path)(e)),
    };
    let meta = file.metadata().map_err(io_err("read the host key", path))?;
    if !meta.is_file() {
        return Err(refused(KeyProblem::NotARegularFile));
    }
    let (owner, mode) = platform::owner_and_mode(path, &meta);
    if owner != platform::user_id() {
        return Err(refused(KeyProblem::NotOwned { owner }));
    }
    if mode & 0o077 != 0 {
        return Err(refused(KeyProblem::Accessible { mode }));
    }
    if meta.len() != KEY_LEN as u64 {
        return Err(refused(KeyProblem::WrongLength { len: meta.len() }));
    }
    let mut bytes = [0u8; KEY_LEN];
    file.read_exact(&mut bytes)
        .map_err(io_err("read the host key", path))?;
    Ok(SealKey::from_bytes(bytes))
}

/// Creates the key file race-free: a private temporary in the same folder, linked to the name.
fn create(path: &Path) -> Result<(), Error> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match platform::private_dir_builder().create(parent) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err("create the host key folder", parent)(e)),
    }
    let mut key = [0u8; KEY_LEN];
    platform::random(&mut key).map_err(io_err("read random bytes for", path))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = parent.join(format!(".host.key.{}.{nanos}.tmp", std::process::id()));
    let written = platform::private_file(OpenOptions::new().write(true).create_new(true))
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(&key)?;
            f.sync_all()
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        // The error names the key file the user gave, not the temporary beside it: a person
        // looks for the one and has never heard of the other.
        return Err(io_err("write the host key", path)(e));
    }
    // Whoever links first wins; a loser finds the name taken and reads the winner's key.
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            // The name must survive a crash too.
            if let Ok(dir) = File::open(parent) {
                let _ = dir.sync_all();
            }
            tracing::info!(path = %path.display(), "created the host key that seals the cache index");
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_err("create the host key", path)(e)),
    }
}
