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
/// whatever its depth, and at most 40 links' targets more (and 4,096 steps in all). Folders are
/// held with `O_PATH` on Linux, which needs only search permission, so a folder that can be
/// searched but not read (another user's 0711 home) keeps the walk's place; where a folder
/// cannot be held (elsewhere), each component from there is looked up by its full path, as the
/// kernel still walks through it. A path this walk cannot resolve is still checked, by
/// identity, once the root is open.
///
/// (Asking `canonicalize` of each ancestor in turn, as before, looked up every prefix again at
/// every step: a 4 KB path of a thousand folders took half a minute, the eighteenth review. A
/// walk that lost its place after a link to a file and a `..` took the rest as written, and let
/// a root be made inside a skills folder; each link canonicalized whole cost a thousand-hop path
/// 82 s: the nineteenth.)
pub(crate) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    walk(path).map(|w| w.path)
}

/// What [`walk`] reached: the resolved path, and the deepest existing folder on it, held (the
/// folder itself when it exists), where it could be held.
struct Walked {
    path: PathBuf,
    held: Option<platform::OwnedFd>,
}

/// A walk that gave up after [`MAX_STEPS`]: the kernel may still resolve the path, so what it
/// names is unknown (unlike `ENOTDIR` or `ELOOP`, where the kernel refuses it too).
#[derive(Debug)]
struct TooManySteps;

impl std::fmt::Display for TooManySteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the path takes more than {MAX_STEPS} steps to resolve")
    }
}

impl std::error::Error for TooManySteps {}

/// Whether `e` is [`TooManySteps`].
fn gave_up(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TooManySteps>())
        .is_some()
}

/// [`resolve`]'s walk, keeping the deepest existing folder held.
fn walk(path: &Path) -> std::io::Result<Walked> {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut walk = Walk {
        todo: parts(&absolute).into(),
        out: PathBuf::new(),
        here: None,
        missing: 0,
        not_folder: false,
        links: 0,
    };
    let mut steps = 0usize;
    while let Some(part) = walk.todo.pop_front() {
        steps += 1;
        if steps > MAX_STEPS {
            return Err(io::Error::other(TooManySteps));
        }
        if walk.not_folder {
            return Err(io::Error::from_raw_os_error(errno::ENOTDIR));
        }
        match part {
            Part::Root(root) => {
                walk.here = platform::hold_folder(&root, true).ok();
                walk.out = root;
                walk.missing = 0;
            }
            Part::Parent => {
                walk.out.pop();
                if walk.missing > 0 {
                    walk.missing -= 1;
                } else if let Some(dir) = &walk.here {
                    walk.here = platform::hold_parent(dir.as_fd()).ok();
                }
            }
            Part::Name(name) => walk.name(&name)?,
        }
    }
    Ok(Walked {
        path: walk.out,
        held: walk.here,
    })
}

/// The kernel's own bound on the links one lookup follows (Linux's MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// And on a walk's steps: each link's target may be 4 KB of `x/../`, so forty of them are
/// 80,000 lookups, which the kernel makes in a millisecond and a walk by system calls in a tenth
/// of a second: 256 discovery paths of them took 40 s (round 20 of review). No path a person
/// writes comes near this.
const MAX_STEPS: usize = 4096;

/// Where [`resolve`]'s walk is.
struct Walk {
    /// What is left to walk, the next first: a link's target goes in front of what followed it.
    todo: std::collections::VecDeque<Part>,
    /// The path walked so far, links resolved.
    out: PathBuf,
    /// The folder `out` names, held while the walk is by descriptor; `None` once a folder on the
    /// way could not be held (then each component is looked up by its full path).
    here: Option<platform::OwnedFd>,
    /// Components at the end of `out` that do not exist: nothing below them is a link.
    missing: usize,
    /// `out` names something that is not a folder: any component after it is `ENOTDIR`.
    not_folder: bool,
    links: usize,
}

impl Walk {
    /// One name in the folder reached.
    fn name(&mut self, name: &std::ffi::OsStr) -> io::Result<()> {
        if self.missing > 0 {
            self.out.push(name);
            self.missing += 1;
            return Ok(());
        }
        match kind_at(self.here.as_ref(), &self.out, name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.out.push(name);
                self.missing = 1;
            }
            Err(e) => return Err(e),
            Ok(platform::Kind::Dir) => {
                let next = self
                    .here
                    .as_ref()
                    .map(|d| platform::hold_dir(d.as_fd(), Path::new(name)));
                self.here = next.and_then(|held| held.ok().flatten());
                self.out.push(name);
            }
            Ok(platform::Kind::Link) => {
                self.links += 1;
                if self.links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(errno::ELOOP));
                }
                // Walked in the link's place, from its folder (`out`, `here`) or, for an
                // absolute target, from its root.
                let target = read_link(self.here.as_ref(), &self.out, name)?;
                for p in parts(&target).into_iter().rev() {
                    self.todo.push_front(p);
                }
            }
            Ok(_) => {
                self.out.push(name);
                self.not_folder = true;
            }
        }
        Ok(())
    }
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

/// The target of link `name` in the folder reached: read through `here` while it is held (a
/// folder whose full path passes the system's bound is read all the same: round 20 of review),
/// else by its full path under `out`.
fn read_link(
    here: Option<&platform::OwnedFd>,
    out: &Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<PathBuf> {
    match here.map(|dir| platform::read_link_at(dir.as_fd(), Path::new(name))) {
        Some(Err(e)) if e.kind() == io::ErrorKind::Unsupported => fs::read_link(out.join(name)),
        Some(read) => read,
        None => fs::read_link(out.join(name)),
    }
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
    let walked = outside_discovery(root, &resolved, discovery)?;
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
    let made = make(&resolved).map_err(|failed| unmade(root, failed))?;
    let created = !made.is_empty();
    let dir = match Dir::open_root(&resolved) {
        Ok(d) => d,
        Err(e) if platform::is(&e, &[errno::ENOTDIR, errno::ELOOP]) => {
            return Err(refuse("it is not a folder:"));
        }
        Err(source) => return Err(io("open", source)),
    };
    // The check above compared paths; this one asks the descriptor we keep where the folder
    // really is (round 20 of review: a link swapped between the check and the `mkdir`, a bind
    // mount, a discovery path whose real path is too long to spell all got past paths alone).
    let folders = ancestry(dir.fd());
    let checked = outside_discovery_by_identity(root, &folders, &walked)
        .and_then(|()| above_is_ours(root, &resolved, folders.get(1..).unwrap_or_default()))
        .and_then(|()| path_is_ours(root, &resolved, folders.first().map(|f| f.0)));
    if let Err(refused) = checked {
        forget_made(&dir, &resolved, &made);
        return Err(refused);
    }
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

/// Why [`make`] failed: a folder on the way replaced by a link or a file is a refusal (K2),
/// anything else the step's error; either names the folder the step was at.
fn unmade(root: &Path, (op, path, source): Unmade) -> Error {
    use crate::error::StoreError;
    if platform::is(&source, &[errno::ENOTDIR, errno::ELOOP]) {
        return Error::Store(StoreError::RootRefused {
            root: root.to_owned(),
            why: "a folder on the way to it was replaced by something that is not a folder while it was made:",
            path,
        });
    }
    Error::Store(StoreError::Io { op, path, source })
}

/// A step of [`make`] that failed: what it did, at which folder, and why.
type Unmade = (&'static str, PathBuf, io::Error);

/// Makes the root folder (owner-only) if nothing is there, and every missing folder above it,
/// one at a time; the folders it made, outermost first (empty: the root was there).
///
/// Each folder is made inside the one above it *as held*, and held in turn without following
/// a link: a missing folder below a folder others may write (`/tmp`) can be made first by
/// someone else, as a link into a discovery path, and a path-based `mkdir` of the next name
/// would then make it there (round 26 of review, K2). Such a link ends the walk with `ELOOP`
/// or `ENOTDIR`, before anything is made through it. Folders are held for lookups only
/// (`platform::hold_folder`: on Linux `O_PATH`), so a folder this user may write and search
/// but not read (a `0300` one, a `1733` drop folder) still takes the root, as a path-based
/// `mkdir` did (round 28 of review).
fn make(resolved: &Path) -> Result<Vec<PathBuf>, Unmade> {
    match fs::symlink_metadata(resolved) {
        Ok(_) => return Ok(Vec::new()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(("stat", resolved.to_owned(), source)),
    }
    let missing: Vec<&Path> = resolved
        .ancestors()
        .take_while(|p| fs::symlink_metadata(p).is_err_and(|e| e.kind() == io::ErrorKind::NotFound))
        .collect();
    let Some(base) = missing.last().and_then(|outermost| outermost.parent()) else {
        // Nothing above the root exists, not even `/`: nothing can be made.
        let gone = io::Error::from(io::ErrorKind::NotFound);
        return Err(("create", resolved.to_owned(), gone));
    };
    let mut made = make_below(base, missing.into_iter().rev())?;
    // Another open made the root itself meanwhile: it is that open's, not this one's.
    if made.last().map(PathBuf::as_path) != Some(resolved) {
        made.clear();
    }
    Ok(made)
}

/// [`make`]'s steps: each of `folders` (outermost first, each directly below the one before,
/// the first directly below `base`) made if missing and held without following a link. The
/// folders this call made.
fn make_below<'a>(
    base: &Path,
    folders: impl Iterator<Item = &'a Path>,
) -> Result<Vec<PathBuf>, Unmade> {
    // `resolved` has no link in what exists of it (`resolve`), so `base` is a real folder.
    let mut held = platform::hold_folder(base, false).map_err(|e| ("open", base.to_owned(), e))?;
    let mut made = Vec::new();
    for p in folders {
        let name = p.file_name().unwrap_or_default();
        match platform::mkdir_at(held.as_fd(), name, 0o700) {
            Ok(()) => made.push(p.to_owned()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(("create", p.to_owned(), source)),
        }
        held = match platform::hold_dir(held.as_fd(), Path::new(name)) {
            Ok(Some(next)) => next,
            Ok(None) => return Err(("open", p.to_owned(), io::Error::from(io::ErrorKind::NotFound))),
            Err(source) => return Err(("open", p.to_owned(), source)),
        };
    }
    Ok(made)
}

/// R-C1: the root lies neither inside nor around a discovery path (both resolved). Each
/// distinct discovery path is walked once; what each walk reached is handed on to the check by
/// identity ([`outside_discovery_by_identity`]), once the root is open. A discovery path the
/// walk gives up on ([`TooManySteps`]: the kernel may still resolve it, into the root for all
/// anyone knows) refuses the root; one the kernel would refuse too (`ENOTDIR`, `ELOOP`, a name
/// too long) names no folder and is passed over.
fn outside_discovery(
    root: &Path,
    resolved: &Path,
    discovery: &[PathBuf],
) -> Result<Vec<(PathBuf, Walked)>, Error> {
    let refuse = |why, d: &Path| {
        Error::Store(crate::error::StoreError::RootRefused {
            root: root.to_owned(),
            why,
            path: d.to_owned(),
        })
    };
    let mut once = std::collections::HashSet::new();
    let mut walked = Vec::new();
    for d in discovery.iter().filter(|d| once.insert(d.as_path())) {
        let w = match walk(d) {
            Ok(w) => w,
            Err(e) if gave_up(&e) => {
                return Err(refuse(
                    "a skill discovery path takes more steps to resolve than skillcache follows, so where it leads cannot be told; refusing the root beside it:",
                    d,
                ));
            }
            Err(_) => continue,
        };
        if within(resolved, &w.path) {
            return Err(refuse("it lies inside the skill discovery path", d));
        }
        if within(&w.path, resolved) {
            return Err(refuse(
                "it would contain a skill discovery path (even if that path does not exist yet):",
                d,
            ));
        }
        walked.push((d.clone(), w));
    }
    Ok(walked)
}

/// A folder's identity (device, inode), as the descriptor says; `None` where the platform
/// gives none.
type Id = (u64, u64);

fn identity(fd: platform::BorrowedFd<'_>) -> Option<Id> {
    described(fd).map(|(id, _)| id)
}

/// A folder's identity and its metadata.
fn described(fd: platform::BorrowedFd<'_>) -> Option<(Id, platform::Stat)> {
    let st = platform::fstat(fd).ok()?;
    (st.ino != 0).then_some(((st.dev, st.ino), st))
}

/// How many folders up a walk by `..` goes at most (a path of 4 KB has fewer).
const MAX_DEPTH: usize = 4096;

/// The folder `dir` holds and every folder above it, each as its identity and metadata, by
/// walking `..` from the descriptor: where the folder is, whatever path named it. Stops at the
/// filesystem's root, at a folder it cannot hold, or after [`MAX_DEPTH`] levels.
fn ancestry(dir: platform::BorrowedFd<'_>) -> Vec<(Id, platform::Stat)> {
    let mut folders: Vec<(Id, platform::Stat)> = described(dir).into_iter().collect();
    let mut up = platform::hold_parent(dir).ok();
    while let Some(here) = up.take() {
        let Some(folder) = described(here.as_fd()) else { break };
        // `..` of the root is the root.
        if folders.last().map(|f| f.0) == Some(folder.0) || folders.len() >= MAX_DEPTH {
            break;
        }
        folders.push(folder);
        up = platform::hold_parent(here.as_fd()).ok();
    }
    folders
}

/// The folders on `resolved` itself, walked by name from its first folder without following a
/// link: none may be one another user can rename entries in, and the walk must end at the root
/// the cache holds (`me`). The folders above the held root ([`above_is_ours`]) are not enough
/// alone: a link on the path, a real folder while the path was resolved, then a link to a safe
/// place while the root was opened and checked, then a link into a skills folder while SQLite
/// opened the index by the path, passed them (round 22 of review). Checked here, the path is
/// one only this user or the superuser can change afterwards. Where the platform gives no
/// identity (Windows, whose held folders cannot be renamed), there is nothing to compare.
fn path_is_ours(root: &Path, resolved: &Path, me: Option<Id>) -> Result<(), Error> {
    let Some(me) = me else {
        return Ok(());
    };
    let refuse = |why, path: &Path| {
        Error::Store(crate::error::StoreError::RootRefused {
            root: root.to_owned(),
            why,
            path: path.to_owned(),
        })
    };
    let changed = "a folder on its path changed while the cache opened it (a link where a folder was), so where its files would go cannot be told:";
    let mut names = resolved.components().peekable();
    let Some(mut at) = first_step(&mut names) else {
        return Ok(());
    };
    let mut here = platform::hold_folder(&at, false).map_err(|_| refuse(changed, &at))?;
    for name in names {
        let std::path::Component::Normal(name) = name else {
            return Err(refuse(changed, resolved));
        };
        if described(here.as_fd()).is_some_and(|(_, st)| platform::others_can_rename_in(&st)) {
            return Err(refuse(
                "a folder on its path lets another user rename what it holds (it belongs to another user, or is writable by group or others without the sticky bit), who could swap the path for a link while the cache opens its files; make it writable only by its owner, or set a root below folders only you or the superuser can change (the root option, or SKILLCACHE_ROOT):",
                &at,
            ));
        }
        at.push(name);
        here = match platform::hold_dir(here.as_fd(), Path::new(name)) {
            Ok(Some(next)) => next,
            // Where a folder is held by a read-only open (no `O_PATH`: macOS), one this user
            // may search but not read cannot be held to be checked.
            Err(e) if platform::is(&e, &[errno::EACCES]) => {
                return Err(refuse(
                    "a folder on its path cannot be opened to check who can change it (it is not readable by you); make it readable, or set a root elsewhere (the root option, or SKILLCACHE_ROOT):",
                    &at,
                ));
            }
            _ => return Err(refuse(changed, &at)),
        };
    }
    if identity(here.as_fd()) != Some(me) {
        return Err(refuse(changed, resolved));
    }
    Ok(())
}

/// The first folder of a walk by name over `names`: the filesystem's root as one step — `/`,
/// or a drive's `C:` and `\\` together (the drive alone, `C:`, names that drive's *current*
/// folder, no folder on the way: taken alone it refused every key on Windows, found by loading
/// the Windows addon under Wine, issue 42) — else the first name of a relative path.
fn first_step(names: &mut std::iter::Peekable<std::path::Components<'_>>) -> Option<PathBuf> {
    use std::path::Component;
    let mut at = PathBuf::new();
    while let Some(c) = names.next_if(|c| matches!(c, Component::Prefix(_) | Component::RootDir)) {
        at.push(c);
    }
    if at.as_os_str().is_empty() {
        at.push(names.next()?);
    }
    Some(at)
}

/// The first folder on the existing part of `resolved` (walked by name from its first folder,
/// without following a link) that someone other than this user or the superuser could change
/// — another user's, or writable by group or others without the sticky bit — or the first link
/// met; or, where the path goes on past its existing part, that last existing folder when
/// others may make a name in it (sticky or not: round 26 of review); `None` when there is none. The host key's check (round 24 of review): the key is made
/// and read by its path, so nobody else may be able to swap a folder on it for a link.
pub(crate) fn changeable_by_others(resolved: &Path) -> Option<PathBuf> {
    let mut names = resolved.components().peekable();
    let mut at = first_step(&mut names)?;
    let mut here = platform::hold_folder(&at, false).ok()?;
    for name in names {
        if described(here.as_fd()).is_some_and(|(_, st)| platform::others_can_rename_in(&st)) {
            return Some(at);
        }
        let std::path::Component::Normal(name) = name else {
            return Some(at);
        };
        at.push(name);
        here = match platform::hold_dir(here.as_fd(), Path::new(name)) {
            Ok(Some(next)) => next,
            // Past the existing part: what is made there is made by this user, unless someone
            // else may make that name first — a link, in a sticky shared folder (round 26).
            Ok(None) => {
                let shared = described(here.as_fd())
                    .is_some_and(|(_, st)| platform::others_can_create_in(&st));
                return shared.then(|| at.parent().map(Path::to_path_buf).unwrap_or_default());
            }
            // A link (or a file) where a folder was, or a folder that cannot be held.
            Err(_) => return Some(at),
        };
    }
    described(here.as_fd())
        .is_some_and(|(_, st)| platform::others_can_rename_in(&st))
        .then_some(at)
}

/// The root's files are opened by path where the platform gives no other way (`SQLite` opens
/// the index, its log and its shared memory by name): a folder above the root that someone
/// else can rename entries in lets that someone swap the path for a link while the cache opens
/// (round 21 of review put `index.sqlite3` in a skill discovery path that way). Such a root is
/// refused, as `ssh` refuses a key below one: each folder above it must be this user's or the
/// superuser's, and writable by nobody else unless sticky ([`platform::others_can_rename_in`]).
/// Whoever can rename in a folder this user owns is this user, who can write a discovery path
/// as easily. `above` is [`ancestry`] without the root itself; `resolved` names the folders in
/// the message (the same folders, unless one was swapped meanwhile).
fn above_is_ours(root: &Path, resolved: &Path, above: &[(Id, platform::Stat)]) -> Result<(), Error> {
    let Some(at) = above.iter().position(|(_, st)| platform::others_can_rename_in(st)) else {
        return Ok(());
    };
    let st = above[at].1;
    Err(Error::Store(crate::error::StoreError::RootRefused {
        root: root.to_owned(),
        why: if st.uid == platform::user_id() || st.uid == 0 {
            "a folder above it is writable by group or others (without the sticky bit), who could swap the path for a link while the cache opens its files; make it writable only by its owner (chmod go-w), or set a root elsewhere (the root option, or SKILLCACHE_ROOT):"
        } else {
            "a folder above it belongs to another user, who could swap the path for a link while the cache opens its files; set a root below folders only you or the superuser own (the root option, or SKILLCACHE_ROOT):"
        },
        path: resolved.ancestors().nth(at + 1).unwrap_or(resolved).to_owned(),
    }))
}

/// Whether the folder `held` (a discovery path, or its deepest existing folder, as its walk
/// left it) is the folder `target` or lies below it, by identity: the walk goes up by `..`. It
/// stops at a folder in `stop` (an ancestor of `target`'s: the paths have parted there) or in
/// `seen` (walked before, without meeting `target`), which it fills.
fn below(
    held: &platform::OwnedFd,
    target: Id,
    stop: &[Id],
    seen: &mut std::collections::HashSet<Id>,
) -> bool {
    let mut up = platform::hold_parent(held.as_fd()).ok();
    let mut here = identity(held.as_fd());
    for _ in 0..MAX_DEPTH {
        let Some(id) = here else { break };
        if id == target {
            return true;
        }
        if stop.contains(&id) || !seen.insert(id) {
            break;
        }
        let Some(dir) = up.take() else { break };
        here = identity(dir.as_fd());
        up = platform::hold_parent(dir.as_fd()).ok();
    }
    false
}

/// R-C1 by identity, on the root as opened (`folders`: its [`ancestry`]): no discovery path is the root or one of the
/// folders above it, and none lies below it (nor would, created: its deepest existing folder,
/// as its walk left it held, is compared).
fn outside_discovery_by_identity(
    root: &Path,
    folders: &[(Id, platform::Stat)],
    walked: &[(PathBuf, Walked)],
) -> Result<(), Error> {
    let above: Vec<Id> = folders.iter().map(|(id, _)| *id).collect();
    let Some(&me) = above.first() else {
        return Ok(());
    };
    let mut seen = std::collections::HashSet::new();
    for (d, w) in walked {
        // The discovery path as the kernel opens it now (the walk's folder may be its parent,
        // when it did not exist then).
        let now = platform::hold_folder(d, true).ok();
        let why = if now.and_then(|fd| identity(fd.as_fd())).is_some_and(|id| above.contains(&id)) {
            "it lies inside the skill discovery path"
        } else if w.held.as_ref().is_some_and(|h| below(h, me, &above[1..], &mut seen)) {
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

/// Whether `path` (or its deepest existing folder) is the folder at `folder` or below it, by
/// identity (the host key's check: a key inside the root would be readable with the cache). A
/// path the walk gives up on is taken as inside: where it leads cannot be told.
pub(crate) fn lies_within(path: &Path, folder: &Path) -> bool {
    let Some(target) = platform::hold_folder(folder, true)
        .ok()
        .and_then(|fd| identity(fd.as_fd()))
    else {
        return false;
    };
    match walk(path) {
        Ok(w) => w
            .held
            .as_ref()
            .is_some_and(|h| below(h, target, &[], &mut std::collections::HashSet::new())),
        Err(e) => gave_up(&e),
    }
}

/// Removes the folders this open made (`made`, outermost first), once the check by identity
/// refused the root: they are empty (nothing is written before the check). Best effort: the
/// root by descriptor (its own parent, and its name there), the folders above it by name,
/// innermost first, each only while empty (round 21 of review: `skills/a/b/cache` left `a/b`).
fn forget_made(dir: &Dir, resolved: &Path, made: &[PathBuf]) {
    if made.is_empty() {
        return;
    }
    let name = resolved.file_name().and_then(|n| n.to_str());
    if let (Some(name), Ok(parent)) = (name, platform::hold_parent(dir.fd())) {
        let _ = platform::unlink_at(parent.as_fd(), name, true);
    }
    for folder in made.iter().rev().skip(1) {
        let _ = fs::remove_dir(folder);
    }
}

/// Whether `path` is `base` or lies below it, names compared without ASCII case. macOS and
/// Windows fold case by default (and Linux may, on a casefolded or foreign mount), so there
/// `~/.Claude/skills` is the discovery path `~/.claude/skills`; `resolve` cannot say so when
/// neither exists yet (it spells a missing name as given), and a root made as `~/.CLAUDE/x`
/// would then be found by the agent that scans `~/.claude`. Refusing such a root where the
/// filesystem keeps case too costs nothing.
///
/// Names that are Unicode are compared case-folded, not only in ASCII: APFS and NTFS fold
/// `ſ` (U+017F) to `s` and the Kelvin sign (U+212A) to `k`, so `~/.claude/ſkills` names the
/// discovery path there (round 25 of review).
pub(super) fn within(path: &Path, base: &Path) -> bool {
    let mut names = path.components();
    base.components().all(|b| {
        names
            .next()
            .is_some_and(|p| same_name(p.as_os_str(), b.as_os_str()))
    })
}

/// Whether two names are one where the filesystem folds case.
fn same_name(a: &std::ffi::OsStr, b: &std::ffi::OsStr) -> bool {
    match (a.to_str(), b.to_str()) {
        (Some(a), Some(b)) if !(a.is_ascii() && b.is_ascii()) => {
            // Upper then lower: the simple mappings std offers, composed, fold `ſ` to `s`.
            let fold = |s: &str| s.to_uppercase().to_lowercase();
            fold(a) == fold(b)
        }
        _ => a.as_encoded_bytes().eq_ignore_ascii_case(b.as_encoded_bytes()),
    }
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
mod within_tests {
    use super::within;
    use std::path::Path;

    /// A folder-case filesystem (APFS, NTFS) names the discovery path by any spelling that
    /// folds to it, in ASCII and in Unicode; a name that only starts the same is not it.
    #[test]
    fn a_path_spelled_with_another_case_or_a_unicode_fold_of_a_name_lies_within_it() {
        let base = Path::new("/h/.claude/skills");
        for p in ["/h/.claude/skills/x", "/h/.CLAUDE/Skills", "/h/.claude/\u{17f}kills/x", "/h/.claude/s\u{212a}ills"] {
            assert!(within(Path::new(p), base), "{p}");
        }
        for p in ["/h/.claude/skillsx", "/h/.claude", "/h/.claud/skills"] {
            assert!(!within(Path::new(p), base), "{p}");
        }
    }
}

#[cfg(test)]
mod make_tests {
    use super::make_below;
    use crate::platform::symlink;

    /// Round 26 of review (K2): a folder on the way to a new root, missing when the walk began,
    /// is made by someone else first, as a link into a discovery path. The next folder is not
    /// made through it: the walk stops at the link, and the discovery path stays empty.
    #[test]
    fn a_missing_folder_replaced_by_a_link_is_not_made_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (shared, skills) = (dir.path().join("shared"), dir.path().join("skills"));
        std::fs::create_dir_all(&shared).expect("mkdir");
        std::fs::create_dir_all(&skills).expect("mkdir");
        // The walk found `shared/a` missing; the link is there by the time it is made.
        symlink(&skills, &shared.join("a")).expect("symlink");
        let (a, b) = (shared.join("a"), shared.join("a/b"));
        let (_, at, e) = make_below(&shared, [a.as_path(), b.as_path()].into_iter())
            .expect_err("a link on the way is not a folder");
        assert!(crate::platform::is(&e, &[crate::platform::errno::ELOOP, crate::platform::errno::ENOTDIR]), "{e}");
        assert_eq!(at, a, "the message names the folder replaced");
        assert_eq!(std::fs::read_dir(&skills).expect("read").count(), 0);
        // Without the link, every missing folder is made, owner-only, and reported.
        std::fs::remove_file(&a).expect("unlink");
        let made = make_below(&shared, [a.as_path(), b.as_path()].into_iter()).expect("made");
        assert_eq!(made, vec![a.clone(), b.clone()]);
        assert!(std::fs::metadata(&b).expect("made").is_dir());
    }

    /// Round 28 of review: a folder this user may write and search but not read (`0300`; a
    /// `1733` drop folder) takes a new root, as a path-based `mkdir` did. (Meaningful as a user
    /// other than root, which CI runs the suite as too: root reads every folder.)
    #[test]
    fn a_folder_writable_and_searchable_but_not_readable_takes_a_new_root() {
        use crate::platform::{self, AsFd as _};
        let dir = tempfile::tempdir().expect("tempdir");
        let wx = dir.path().join("wx");
        std::fs::create_dir(&wx).expect("mkdir");
        let held = platform::open_folder(&wx, false).expect("open");
        platform::chmod(held.as_fd(), 0o300).expect("chmod");
        let (a, c) = (wx.join("a"), wx.join("a/c"));
        let made = make_below(&wx, [a.as_path(), c.as_path()].into_iter());
        platform::chmod(held.as_fd(), 0o700).expect("chmod back");
        assert_eq!(made.map_err(|(op, at, e)| format!("{op} {}: {e}", at.display())), Ok(vec![a, c]));
    }
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

    /// The twentieth review: a discovery path the walk could not resolve (there, a folder whose
    /// real path was too long to spell; here, links whose targets take more steps than the walk
    /// allows, which the kernel follows all the same) was skipped, and a root inside it was made.
    #[test]
    fn a_root_beside_a_discovery_path_the_walk_cannot_resolve_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let skills = dir.path().join("real/skills");
        std::fs::create_dir_all(&skills).expect("mkdir");
        std::fs::create_dir(dir.path().join("x")).expect("mkdir");
        // Each link: 800 `x/..` pairs (1,600 steps), then the next; three are past 4,096 steps.
        let detour = "x/../".repeat(800);
        symlink(std::path::Path::new(&format!("{detour}real")), &dir.path().join("l1")).expect("link");
        symlink(std::path::Path::new(&format!("{detour}l1")), &dir.path().join("l2")).expect("link");
        symlink(std::path::Path::new(&format!("{detour}l2")), &dir.path().join("l3")).expect("link");
        let discovery = dir.path().join("l3/skills");
        assert!(std::fs::metadata(&discovery).is_ok_and(|m| m.is_dir()), "the kernel resolves it");
        assert!(resolve(&discovery).is_err(), "the walk does not");
        // Where the walk gives up, where the path leads cannot be told: refused, nothing made
        // (round 21 of review: such a link, dangling, to the root's future `origins/`).
        let root = skills.join("cache");
        let refused = super::prepare(&root, std::slice::from_ref(&discovery), &crate::store::RealDisk)
            .expect_err("a root beside a discovery path that cannot be resolved");
        assert!(refused.to_string().contains("more steps to resolve"), "{refused}");
        assert!(!root.exists(), "nothing made");
        let elsewhere = dir.path().join("elsewhere/cache");
        assert!(super::prepare(&elsewhere, &[discovery], &crate::store::RealDisk).is_err());
    }

    /// Round 22 of review: a path component a link while the root was opened (to a safe place)
    /// and later (into a skills folder, when SQLite opens the index by the path). The path is
    /// walked by name without following a link, each folder on it checked, and must end at the
    /// root held.
    #[test]
    fn a_path_that_is_not_the_held_roots_own_or_passes_a_shared_folder_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let safe = dir.path().join("safe/cache");
        std::fs::create_dir_all(&safe).expect("mkdir");
        symlink(&dir.path().join("safe"), &dir.path().join("swapped")).expect("link");
        let through = dir.path().join("swapped/cache");
        let held = crate::store::handle::Dir::open_root(&through).expect("opens through the link");
        let me = super::ancestry(held.fd()).first().map(|f| f.0);
        let refused = super::path_is_ours(&through, &through, me).expect_err("a link on the path");
        assert!(refused.to_string().contains("changed while the cache opened it"), "{refused}");
        super::path_is_ours(&safe, &safe, me).expect("the real path is the root's own");

        let shared = dir.path().join("shared");
        std::fs::create_dir_all(shared.join("cache")).expect("mkdir");
        crate::platform::set_mode(&shared, 0o775).expect("chmod");
        let root = shared.join("cache");
        let held = crate::store::handle::Dir::open_root(&root).expect("open");
        let me = super::ancestry(held.fd()).first().map(|f| f.0);
        let refused = super::path_is_ours(&root, &root, me).expect_err("a shared folder on the path");
        assert!(refused.to_string().contains("lets another user rename"), "{refused}");
    }

    /// What the path check cannot see (a bind mount, a parent swapped for a link after it),
    /// the check by identity does: on the root as opened, a discovery path that is the root's
    /// folder or one above it, or that lies below it, refuses it; and the folders the refused
    /// open made are removed, the root and every folder it made above it.
    #[test]
    fn the_check_by_identity_sees_where_the_opened_root_is_and_removes_what_it_made() {
        let dir = tempfile::tempdir().expect("tempdir");
        let skills = dir.path().join("skills");
        std::fs::create_dir_all(&skills).expect("mkdir");
        let root = skills.join("a/b/cache");
        let made = super::make(&root).expect("made");
        assert_eq!(made.len(), 3, "a, a/b and the root: {made:?}");
        let opened = crate::store::handle::Dir::open_root(&root).expect("open");
        let walked = vec![(skills.clone(), super::walk(&skills).expect("walks"))];
        let refused = super::outside_discovery_by_identity(&root, &super::ancestry(opened.fd()), &walked)
            .expect_err("inside, by identity");
        assert!(refused.to_string().contains("lies inside"), "{refused}");
        super::forget_made(&opened, &root, &made);
        assert!(!skills.join("a").exists(), "every folder it made is gone");
        // Around: a root that holds the discovery path's deepest existing folder.
        let around = dir.path().join("around");
        std::fs::create_dir_all(around.join("x")).expect("mkdir");
        let held = crate::store::handle::Dir::open_root(&around).expect("open");
        let d = around.join("x/not/yet/skills");
        let walked = vec![(d.clone(), super::walk(&d).expect("walks"))];
        let refused = super::outside_discovery_by_identity(&around, &super::ancestry(held.fd()), &walked)
            .expect_err("around, by identity");
        assert!(refused.to_string().contains("would contain"), "{refused}");
    }
}
