//! The cache root: where it is by default, and the check that keeps it outside every
//! filesystem-skill discovery path (R-C1).

use std::fs;
use std::io::{self, Read as _};
use std::path::{Component, Path, PathBuf};

use crate::error::Error;
use crate::platform::{self, AsFd as _, errno};
use crate::store::handle::Dir;
use crate::store::{CACHEDIR_SIGNATURE, CACHEDIR_TAG, Disk};

/// Agent skill folders under the home directory that hosts scan for filesystem skills.
pub const HOME_DISCOVERY_PATHS: &[&str] = &[
    ".claude/skills",
    ".agents/skills",
    ".codex/skills",
    ".cursor/skills",
    ".copilot/skills",
    ".gemini/skills",
    ".config/agents/skills",
    ".config/opencode/skills",
];

/// Project-relative skill folders (resolved against the current directory).
pub const PROJECT_DISCOVERY_PATHS: &[&str] =
    &[".claude/skills", ".agents/skills", ".github/skills"];

/// The default root: `$SKILLCACHE_ROOT`, else `$XDG_CACHE_HOME/skillcache`, else
/// `~/.cache/skillcache` (on Windows `%LOCALAPPDATA%\skillcache`).
#[must_use]
pub fn default_root() -> PathBuf {
    if let Some(r) = std::env::var_os("SKILLCACHE_ROOT").filter(|v| !v.is_empty()) {
        return PathBuf::from(r);
    }
    platform::cache_home().join("skillcache")
}

/// The well-known discovery paths: the home ones and the project ones.
#[must_use]
pub fn default_discovery_paths() -> Vec<PathBuf> {
    let home = platform::home();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    HOME_DISCOVERY_PATHS
        .iter()
        .map(|p| home.join(p))
        .chain(PROJECT_DISCOVERY_PATHS.iter().map(|p| cwd.join(p)))
        .collect()
}

/// Resolves symlinks in the longest existing prefix of `path` and appends the rest lexically, so
/// a path that does not exist yet is still compared where it would really be.
///
/// One forward walk holding a descriptor of the folder reached: each component is one `statat`
/// in it (and one `openat` to step into a folder, one of `..` to step out), so a path costs a
/// lookup per component whatever its depth; a symlink is resolved where it is met. (Asking
/// `canonicalize` of each ancestor in turn, as before, looked up every prefix again at every
/// step: a path of a thousand folders that exist and a thousand that do not took half a minute,
/// the eighteenth review; and a `..` after a missing folder fell back to the path as written,
/// symlinks and all.)
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    // The folder `out` names while it exists (then `out` holds no symlink); below it, `missing`
    // components that do not exist, where nothing is a link.
    let mut here: Option<platform::OwnedFd> = None;
    let mut missing = 0usize;
    for c in absolute.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {
                out.push(c);
                here = platform::open_folder(&out, true).ok();
                missing = usize::from(here.is_none());
            }
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
                if missing > 0 {
                    missing -= 1;
                } else if let Some(dir) = &here {
                    here = platform::open_parent(dir.as_fd()).ok();
                }
            }
            Component::Normal(name) => {
                out.push(name);
                let Some(dir) = here.as_ref().filter(|_| missing == 0) else {
                    missing += 1;
                    continue;
                };
                match platform::stat_at(dir.as_fd(), name).map(|st| st.kind) {
                    Ok(platform::Kind::Dir) => {
                        match platform::open_dir(dir.as_fd(), Path::new(name)) {
                            Ok(Some(next)) => here = Some(next),
                            _ => missing += 1,
                        }
                    }
                    Ok(platform::Kind::Link) => match fs::canonicalize(&out) {
                        Ok(real) => {
                            here = platform::open_folder(&real, true).ok();
                            missing = usize::from(here.is_none());
                            out = real;
                        }
                        // A dangling link: kept as named, as a folder that does not exist.
                        Err(_) => missing += 1,
                    },
                    // A file, or nothing: nothing below it exists.
                    _ => missing += 1,
                }
            }
        }
    }
    out
}

/// Refuses a root inside, or containing, any discovery path (after resolving symlinks) (R-C1);
/// creates a missing root owner-only (0700); adopts an existing folder only when it is ours
/// (R-H2); and returns it opened, so that every later step works from that one descriptor.
///
/// An existing folder is adopted when it is owned by this user, writable by nobody else, and
/// either empty, or marked by our `CACHEDIR.TAG`, or laid out as a root of the first layout
/// (nothing but the names skillcache makes). A folder we did not create is never chmodded. A
/// platform that cannot keep these guarantees everywhere (Windows: `platform::disk_cache`, a root
/// outside the user's profile) refuses the root before anything is made.
pub(crate) fn prepare(root: &Path, discovery: &[PathBuf], disk: &dyn Disk) -> Result<Dir, Error> {
    let resolved = resolve(root);
    outside_discovery(root, &resolved, discovery)?;
    let refuse = |why| Error::Store(crate::error::StoreError::RootRefused {
        root: root.to_owned(),
        why,
        path: resolved.clone(),
    });
    let io = |op, source| Error::Store(crate::error::StoreError::Io {
        op,
        path: resolved.clone(),
        source,
    });
    // A platform that cannot keep the root's guarantees refuses here, before anything is made.
    platform::disk_cache(&resolved).map_err(refuse)?;
    let created = match fs::symlink_metadata(&resolved) {
        Ok(_) => false,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match platform::private_dir_builder().create(&resolved) {
                Ok(()) => true,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
                Err(source) => return Err(io("create", source)),
            }
        }
        Err(source) => return Err(io("stat", source)),
    };
    let dir = match Dir::open_root(&resolved) {
        Ok(d) => d,
        Err(e) if platform::is(&e, &[errno::ENOTDIR, errno::ELOOP]) => {
            return Err(refuse("it is not a folder:"));
        }
        Err(source) => return Err(io("open", source)),
    };
    // Every check is on the descriptor we keep, not on a path someone could swap meanwhile.
    let st = platform::fstat(dir.fd()).map_err(|e| io("stat", e))?;
    if st.uid != platform::user_id() {
        return Err(refuse("it is owned by another user:"));
    }
    if st.mode & 0o022 != 0 {
        return Err(refuse(
            "it is writable by group or others (skillcache never chmods a folder it did not create):",
        ));
    }
    if created {
        write_tag(disk, &dir).map_err(|e| io("mark", e))?;
        return Ok(dir);
    }
    match adoption(&dir).map_err(|e| io("read", e))? {
        Adoption::Ours => {}
        Adoption::Empty | Adoption::FirstLayout => {
            // A read-only mount cannot take the marker; a first-layout root there is still ours.
            if let Err(e) = write_tag(disk, &dir)
                && !platform::is(&e, &[errno::EROFS])
            {
                return Err(io("mark", e));
            }
        }
        Adoption::Foreign => {
            return Err(refuse(
                "it is not empty and not a skillcache root (no CACHEDIR.TAG from skillcache):",
            ));
        }
    }
    Ok(dir)
}

/// R-C1: the root lies neither inside nor around a discovery path (both resolved).
fn outside_discovery(root: &Path, resolved: &Path, discovery: &[PathBuf]) -> Result<(), Error> {
    for d in discovery {
        let dr = resolve(d);
        let why = if within(resolved, &dr) {
            "it lies inside the skill discovery path"
        } else if within(&dr, resolved) {
            "it would contain a skill discovery path (even if that path does not exist yet):"
        } else {
            continue;
        };
        return Err(Error::Store(crate::error::StoreError::RootRefused {
            root: root.to_owned(),
            why,
            path: d.clone(),
        }));
    }
    Ok(())
}

/// Whether `path` is `base` or lies below it, names compared without ASCII case. macOS and
/// Windows fold case by default (and Linux may, on a casefolded or foreign mount), so there
/// `~/.Claude/skills` is the discovery path `~/.claude/skills`; `resolve` cannot say so when
/// neither exists yet (it spells a missing name as given), and a root made as `~/.CLAUDE/x`
/// would then be found by the agent that scans `~/.claude`. Refusing such a root where the
/// filesystem keeps case too costs nothing.
fn within(path: &Path, base: &Path) -> bool {
    let mut names = path.components();
    base.components().all(|b| {
        names.next().is_some_and(|p| {
            p.as_os_str()
                .as_encoded_bytes()
                .eq_ignore_ascii_case(b.as_os_str().as_encoded_bytes())
        })
    })
}

/// What an existing folder is to us.
enum Adoption {
    /// It carries our marker.
    Ours,
    /// Nothing in it.
    Empty,
    /// A root of the first layout (before the marker): only names skillcache makes.
    FirstLayout,
    /// Something else: never ours to fill.
    Foreign,
}

/// The names a skillcache root of any layout may hold.
fn is_ours(name: &str) -> bool {
    matches!(
        name,
        "index.sqlite3"
            | "index.sqlite3-wal"
            | "index.sqlite3-shm"
            | "lock"
            | "origins"
            | "tmp"
            | "quarantine"
    ) || name.starts_with("index.sqlite3.damaged-")
        || name.starts_with(TAG_STAGING)
}

const TAG_STAGING: &str = ".CACHEDIR.TAG.";

/// The line after the signature that makes a `CACHEDIR.TAG` ours: every tool that follows the
/// standard writes the same signature (cargo's `target/` has one), so the signature alone says
/// "a cache", not "our cache".
const TAG_OWNER: &str = "# This file is a cache directory tag created by skillcache.";

fn adoption(dir: &Dir) -> io::Result<Adoption> {
    // The names first, the marker second: another process creating this root links its complete
    // marker in at some instant, so a listing without the marker is judged without it, and a
    // listing with it finds it whole.
    let names = list(dir)?;
    let has = |n: &str| names.iter().any(|m| m == n);
    if has(CACHEDIR_TAG) {
        if let Ok(file) = platform::open_file_here(dir.fd(), Path::new(CACHEDIR_TAG)) {
            let mut text = String::new();
            let _ = file.take(512).read_to_string(&mut text);
            let mut lines = text.lines();
            if lines.next() == Some(CACHEDIR_SIGNATURE) && lines.next() == Some(TAG_OWNER) {
                return Ok(Adoption::Ours);
            }
        }
        return Ok(Adoption::Foreign);
    }
    // A root another process is creating this instant holds only its staged marker.
    Ok(if names.iter().all(|n| n.starts_with(TAG_STAGING)) {
        Adoption::Empty
    } else if has("index.sqlite3") && has("origins") && names.iter().all(|n| is_ours(n)) {
        // A root of the first layout always had its index and its origins folder, and nothing
        // but names skillcache makes; a folder with only a `tmp/` is somebody else's.
        Adoption::FirstLayout
    } else {
        Adoption::Foreign
    })
}

fn list(dir: &Dir) -> io::Result<Vec<String>> {
    Ok(platform::list(dir.fd())?
        .into_iter()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect())
}

/// Writes our `CACHEDIR.TAG` (it also tells backup tools to skip the cache). It appears whole or
/// not at all: written under a staging name, synced, then linked (never replacing another).
fn write_tag(disk: &dyn Disk, dir: &Dir) -> io::Result<()> {
    // Unique per process and per call: two threads opening a new root at once each stage their own.
    static STAGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let staging = format!(
        "{TAG_STAGING}{}-{}",
        std::process::id(),
        STAGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let text = format!(
        "{CACHEDIR_SIGNATURE}\n{TAG_OWNER}\n# For information about cache directory tags, see https://bford.info/cachedir/\n"
    );
    let _ = disk.unlink(dir.fd(), &staging, false);
    let mut f = disk.create(dir.fd(), &staging, 0o644)?;
    let done = disk
        .write(&mut f, text.as_bytes())
        .and_then(|()| disk.sync(f.as_fd()))
        .and_then(
            |()| match disk.link(dir.fd(), &staging, dir.fd(), CACHEDIR_TAG) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                other => other,
            },
        )
        .and_then(|()| disk.sync(dir.fd()));
    let _ = disk.unlink(dir.fd(), &staging, false);
    done
}

#[cfg(all(test, unix))]
mod resolve_tests {
    use super::resolve;

    /// A path whose first folders exist (one of them through a symlink) and whose last do not
    /// resolves to the real folder with the rest appended, as before the walk asked `stat` first.
    #[test]
    fn a_path_resolves_through_its_existing_ancestors_and_keeps_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real/a/b");
        std::fs::create_dir_all(&real).expect("mkdir");
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link"))
            .expect("symlink");
        let given = dir.path().join("link/a/b/not/yet/../there");
        let want = std::fs::canonicalize(&real).expect("real").join("not/there");
        assert_eq!(resolve(&given), want);
        // A `..` after a folder that does not exist still resolves the links before it.
        let around = dir.path().join("link/nothere/../a");
        let want = std::fs::canonicalize(dir.path().join("real/a")).expect("real");
        assert_eq!(resolve(&around), want);
        let deep = dir.path().join("d/".repeat(200)).join("x/".repeat(100));
        std::fs::create_dir_all(dir.path().join("d/".repeat(200))).expect("mkdir");
        let resolved = resolve(&deep);
        assert!(resolved.ends_with("x/".repeat(100).trim_end_matches('/')), "{resolved:?}");
    }
}
