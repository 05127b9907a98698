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
/// a path that does not exist yet is still compared where it would really be; as the kernel
/// would resolve it, or an error where the kernel would refuse it (`ENOTDIR`: a component after
/// one that is not a folder; `ELOOP`: more than 40 symbolic links).
///
/// The kernel's own walk, forward, holding a descriptor of the folder reached: each component
/// is one `statat` in it (one `openat` to step into a folder, one of `..` to step out), and a
/// link is read once and its target walked in its place. So a path costs a lookup per component
/// whatever its depth, and at most 40 links' targets more. A folder that can be searched but not
/// read (another user's 0711 home) cannot be held open: from there each component is looked up
/// by its full path, as the kernel still walks through it.
///
/// (Asking `canonicalize` of each ancestor in turn, as before, looked up every prefix again at
/// every step: a 4 KB path of a thousand folders took half a minute, the eighteenth review. A
/// walk that lost its place after a link to a file and a `..` took the rest as written, and let
/// a root be made inside a skills folder; each link canonicalized whole cost a thousand-hop path
/// 82 s: the nineteenth.)
pub(crate) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::io::{Error as IoError, ErrorKind};
    // The kernel's own bound on the links one lookup follows (Linux's MAXSYMLINKS).
    const MAX_LINKS: usize = 40;
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    // What is left to walk, the next first: a link's target goes in front of what followed it.
    let mut todo: VecDeque<Part> = parts(&absolute).into();
    let mut out = PathBuf::new();
    // The folder `out` names, held open while the walk is by descriptor; `None` once a folder on
    // the way could not be opened (then each component is looked up by its full path).
    let mut here: Option<platform::OwnedFd> = None;
    // Components at the end of `out` that do not exist: nothing below them is a link.
    let mut missing = 0usize;
    // `out` names something that is not a folder: any component after it is `ENOTDIR`.
    let mut not_folder = false;
    let mut links = 0usize;
    while let Some(part) = todo.pop_front() {
        if not_folder {
            return Err(IoError::from_raw_os_error(errno::ENOTDIR));
        }
        match part {
            Part::Root(root) => {
                here = platform::open_folder(&root, true).ok();
                out = root;
                missing = 0;
            }
            Part::Parent => {
                out.pop();
                if missing > 0 {
                    missing -= 1;
                } else if let Some(dir) = &here {
                    here = platform::open_parent(dir.as_fd()).ok();
                }
            }
            Part::Name(name) => {
                if missing > 0 {
                    out.push(&name);
                    missing += 1;
                    continue;
                }
                match kind_at(here.as_ref(), &out, &name) {
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        out.push(&name);
                        missing = 1;
                    }
                    Err(e) => return Err(e),
                    Ok(platform::Kind::Dir) => {
                        let next = here.as_ref().map(|d| platform::open_dir(d.as_fd(), Path::new(&name)));
                        here = next.and_then(|opened| opened.ok().flatten());
                        out.push(&name);
                    }
                    Ok(platform::Kind::Link) => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(IoError::from_raw_os_error(errno::ELOOP));
                        }
                        // Walked in the link's place, from its folder (`out`, `here`) or, for an
                        // absolute target, from its root.
                        let target = fs::read_link(out.join(&name))?;
                        for p in parts(&target).into_iter().rev() {
                            todo.push_front(p);
                        }
                    }
                    Ok(_) => {
                        out.push(&name);
                        not_folder = true;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// One step of [`resolve`]'s walk.
enum Part {
    /// Start again at a root (`/`, or a Windows drive's).
    Root(PathBuf),
    /// `..`.
    Parent,
    /// A name in the folder reached.
    Name(std::ffi::OsString),
}

/// `path`'s steps: its root (if it has one), then each `..` and name (`.` is no step).
fn parts(path: &Path) -> Vec<Part> {
    let mut root = PathBuf::new();
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => root.push(c),
            Component::CurDir => {}
            Component::ParentDir => out.push(Part::Parent),
            Component::Normal(name) => out.push(Part::Name(name.to_owned())),
        }
    }
    if !root.as_os_str().is_empty() {
        out.insert(0, Part::Root(root));
    }
    out
}

/// What `name` is in the folder reached: looked up in `here` while it is held open, else by its
/// full path under `out`.
fn kind_at(
    here: Option<&platform::OwnedFd>,
    out: &Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<platform::Kind> {
    match here {
        Some(dir) => platform::stat_at(dir.as_fd(), name).map(|st| st.kind),
        None => fs::symlink_metadata(out.join(name)).map(|m| kind_of(m.file_type())),
    }
}

/// What a file type is, as the platform layer names it.
fn kind_of(t: fs::FileType) -> platform::Kind {
    if t.is_symlink() {
        platform::Kind::Link
    } else if t.is_dir() {
        platform::Kind::Dir
    } else if t.is_file() {
        platform::Kind::File
    } else {
        platform::Kind::Other
    }
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
    // A root the kernel could not reach as a folder is refused before anything is made: what
    // would be made instead is somewhere the check never looked.
    let resolved = resolve(root).map_err(|_| {
        Error::Store(crate::error::StoreError::RootRefused {
            root: root.to_owned(),
            why: "it cannot be reached as a folder (a part of it is not a folder, or it passes through more than 40 symbolic links)",
            path: root.to_owned(),
        })
    })?;
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
        // A discovery path the kernel cannot resolve names no folder: nothing can be inside it.
        let Ok(dr) = resolve(d) else { continue };
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

#[cfg(test)]
mod resolve_tests {
    use super::resolve;
    use crate::platform::symlink;

    /// A path whose first folders exist (one of them through a symlink) and whose last do not
    /// resolves to the real folder with the rest appended; a `..` after a folder that does not
    /// exist still resolves the links before it.
    #[test]
    fn a_path_resolves_through_its_existing_ancestors_and_keeps_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real/a/b");
        std::fs::create_dir_all(&real).expect("mkdir");
        symlink(&dir.path().join("real"), &dir.path().join("link")).expect("symlink");
        let given = dir.path().join("link/a/b/not/yet/../there");
        let want = std::fs::canonicalize(&real).expect("real").join("not/there");
        assert_eq!(resolve(&given).expect("resolves"), want);
        let around = dir.path().join("link/nothere/../a");
        let want = std::fs::canonicalize(dir.path().join("real/a")).expect("real");
        assert_eq!(resolve(&around).expect("resolves"), want);
        let deep = dir.path().join("d/".repeat(200)).join("x/".repeat(100));
        std::fs::create_dir_all(dir.path().join("d/".repeat(200))).expect("mkdir");
        let resolved = resolve(&deep).expect("resolves");
        assert!(resolved.ends_with("x/".repeat(100).trim_end_matches('/')), "{resolved:?}");
    }

    /// The nineteenth review: after a link to a file and a `..`, the walk took the rest as
    /// written, so a later link into a skills folder was never followed and a root was made
    /// inside it. The kernel refuses such a path (`ENOTDIR`); so does `resolve`. A path through
    /// more links than the kernel follows is `ELOOP` (each link cost a walk of its target: a
    /// thousand hops took 82 s).
    #[test]
    fn a_path_the_kernel_would_refuse_is_refused_not_taken_as_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let skills = dir.path().join("home/.claude/skills");
        std::fs::create_dir_all(&skills).expect("mkdir");
        std::fs::write(dir.path().join("f"), "").expect("file");
        symlink(&dir.path().join("f"), &dir.path().join("fl")).expect("link to a file");
        symlink(&skills, &dir.path().join("sk")).expect("link to the skills");
        let around = dir.path().join("fl/../sk/cache");
        assert!(resolve(&around).is_err(), "{:?}", resolve(&around));
        assert!(resolve(&dir.path().join("f/x")).is_err(), "below a file");
        let straight = resolve(&dir.path().join("sk/cache")).expect("resolves");
        assert!(straight.starts_with(std::fs::canonicalize(&skills).expect("real")));

        symlink(dir.path(), &dir.path().join("up")).expect("link to its folder");
        let hops = dir.path().join("up/".repeat(41)).join("x");
        let e = resolve(&hops).expect_err("more than 40 links");
        assert_eq!(e.raw_os_error(), Some(crate::platform::errno::ELOOP));
        assert!(resolve(&dir.path().join("up/".repeat(40)).join("x")).is_ok());
    }
}
