//! Local skill folders: the entry a server would publish for a folder on disk.
//!
//! Skill authors use it (through `skillcache inspect`) to check a skill before publishing, and
//! the bundled server (`skillcache serve`) uses it to publish a folder of skills. The entry is
//! built the way a server must build it — every file with its real digest and size, the
//! frontmatter rendered verbatim as JSON — and then validated by the same rules that apply to
//! any server's entry, so a folder that passes here passes in every skillcache host.
//!
//! Everything is reached from the folder's descriptor through the crate's one opener
//! ([`crate::beneath`]): a folder or file swapped for a link while the folder is inspected is
//! refused, never followed out of the folder (R-E1).

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::held::{Budget, Held};
use crate::beneath::{self, Refused};
use crate::digest::Digest;
use crate::entry::{SkillEntry, Validation};
use crate::error::{EntryError, Error, Limit, StoreError};
use crate::frontmatter;
use crate::platform::{self, AsFd as _, BorrowedFd, Kind, OwnedFd, errno};
use crate::uri::{FileUri, SKILL_MD, SkillUri};

/// How a folder the caller names is opened: its path is the caller's (it may run through links,
/// as `~/skills` often does); nothing below it is ever followed.
fn open_named(path: &Path) -> std::io::Result<OwnedFd> {
    platform::open_folder(path, true)
}

/// How deep folders may nest inside a skill: deeper trees are refused, so a planted tree
/// thousands of levels deep can exhaust neither the stack nor the descriptor table.
const MAX_DEPTH: usize = 64;

internal_pub! {
    /// One file of a local skill and where it lies on disk.
    #[derive(Debug, Clone)]
    struct LocalFile {
        /// The file's URI in the published skill.
        pub uri: FileUri,
        /// Its path on disk, for messages (and the benches); never opened by the server.
        pub path: PathBuf,
        /// Its path relative to the skill folder: what the server opens, from the folder's
        /// descriptor (R-E1).
        pub rel: PathBuf,
        /// Its digest.
        pub digest: Digest,
        /// Its size.
        pub size: u64,
        /// Its bytes, kept from the read that hashed them, when a watched server holds them
        /// (`held`); `None` elsewhere.
        pub(crate) held: Option<Arc<Held>>,
    }
}

internal_pub! {
    /// A validated local skill: its entry and where its files lie, for the bundled server (and
    /// the benches, which serve the corpus from memory).
    #[derive(Debug, Clone)]
    struct LocalSkill {
        /// The entry a server would publish.
        pub entry: SkillEntry,
        /// Every file, in canonical URI order, with where it lies on disk.
        pub files: Vec<LocalFile>,
    }
}

/// Builds and validates the entry for the skill folder `dir`, published with root URI `root`
/// (for example `skill://pdf-processing`, no trailing slash).
///
/// Nested skills' files are ordinary supporting files of the enclosing skill (they are listed
/// too). Symbolic links, FIFOs, sockets and devices are refused: a published skill is the
/// folder's own regular files.
///
/// The folder is checked against the limits of `validation` from metadata alone — the number
/// of files and their sizes — before any file is opened (R-B3): a folder over the limits is
/// refused with the reason without reading a byte, and the walk stops as soon as it has seen
/// more files than the limit allows. Files are then hashed by streaming; only `SKILL.md` is
/// held whole (its frontmatter is parsed).
///
/// # Errors
/// Every reason the folder is not a valid skill, not just the first.
///
/// ```
/// use skillcache::entry::Validation;
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::write(dir.path().join("SKILL.md"),
/// #     "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n").unwrap();
/// let entry = skillcache::local::inspect(dir.path(), "skill://notes", &Validation::default())
///     .expect("a valid skill folder");
/// assert_eq!(entry.uri().as_str(), "skill://notes/SKILL.md");
/// ```
pub fn inspect(dir: &Path, root: &str, validation: &Validation) -> Result<SkillEntry, Vec<Error>> {
    inspect_folder(dir, root, validation).map(|skill| skill.entry)
}

internal_pub! {
    /// [`inspect`], keeping where each file lies on disk (the bundled server reads them).
    fn inspect_folder(
        dir: &Path,
        root: &str,
        validation: &Validation,
    ) -> Result<LocalSkill, Vec<Error>> {
        let fd = open_named(dir).map_err(|e| vec![folder_error(dir, e)])?;
        inspect_at(fd.as_fd(), dir, root, validation, None)
    }
}

/// [`inspect_folder`] for the skill folder `rel` below the served folder `base` (whose path,
/// for messages, is `base_path`), reached without following a link on the way (R-E1); keeping
/// each file's bytes while `hold` has room.
pub(crate) fn inspect_beneath(
    base: BorrowedFd<'_>,
    base_path: &Path,
    rel: &Path,
    root: &str,
    validation: &Validation,
    hold: Option<&Arc<Budget>>,
) -> Result<LocalSkill, Vec<Error>> {
    let path = base_path.join(rel);
    let fd = beneath::open_dir_beneath(base, rel).map_err(|e| vec![folder_error(&path, e)])?;
    inspect_at(fd.as_fd(), &path, root, validation, hold)
}

internal_pub! {
    /// Every folder under `root` (itself included) that holds a `SKILL.md`, as path segments
    /// relative to `root`, in sorted order. Nested skills are found too.
    #[must_use]
    fn find_skills(root: &Path) -> Vec<Vec<String>> {
        let Ok(fd) = open_named(root) else {
            return Vec::new();
        };
        let mut walk = Walk::new(usize::MAX);
        walk.folder(fd.as_fd(), root, Path::new(""), &mut Vec::new(), 0);
        walk.found
            .into_iter()
            .filter(|f| f.segments.last().map(String::as_str) == Some(SKILL_MD))
            .map(|f| f.segments[..f.segments.len() - 1].to_vec())
            .collect()
    }
}

/// What opening a folder failed with, as the problem it is.
fn folder_error(path: &Path, e: std::io::Error) -> Error {
    if platform::is(&e, &[errno::ENOTDIR, errno::ELOOP, errno::EXDEV]) {
        return Error::Entry(EntryError::Folder {
            path: path.to_owned(),
            why: "is not a folder (or a link on the way to it)",
        });
    }
    Error::Store(StoreError::Io {
        op: "open",
        path: path.to_owned(),
        source: e,
    })
}

/// The inspection itself, on the folder's descriptor `dir` (at `path`, for messages).
fn inspect_at(
    dir: BorrowedFd<'_>,
    path: &Path,
    root: &str,
    validation: &Validation,
    hold: Option<&Arc<Budget>>,
) -> Result<LocalSkill, Vec<Error>> {
    let limits = validation.current_limits();
    let skill_uri_text = format!("{root}/{SKILL_MD}");
    let mut problems = Vec::new();
    let skill_uri = SkillUri::parse(&skill_uri_text)
        .map_err(|e| problems.push(e.into()))
        .ok();
    // One file past the limit is enough to refuse; the walk stops there (`inspect /`).
    let budget = usize::try_from(limits.max_files())
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let mut walk = Walk::new(budget);
    walk.folder(dir, path, Path::new(""), &mut Vec::new(), 0);
    problems.append(&mut walk.problems);
    // R-B3: the limits, from metadata, before any file is read.
    if let Err(mut over) = within_limits(&walk.found, validation, skill_uri.as_ref(), path) {
        problems.append(&mut over);
        return Err(problems);
    }
    let has_skill_md = walk.found.iter().any(|f| f.segments == [SKILL_MD]);
    let hashed = hash_all(dir, walk.found, root, skill_uri.as_ref(), hold, &mut problems);
    if !has_skill_md {
        problems.push(Error::Entry(EntryError::Folder {
            path: path.join(SKILL_MD),
            why: "is missing",
        }));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let Hashed {
        mut files,
        resources,
        frontmatter: Some(fm),
    } = hashed
    else {
        return Err(problems);
    };
    let value =
        json!({"uri": skill_uri_text, "frontmatter": Value::Object(fm), "resources": resources});
    match SkillEntry::from_json(&value, validation) {
        Ok(entry) => {
            files.sort_by(|a, b| a.uri.cmp(&b.uri));
            Ok(LocalSkill { entry, files })
        }
        Err(e) => Err(vec![e.into()]),
    }
}

/// The number of files and their total size against the limits, from metadata alone (R-B3).
/// Without a valid skill URI (its problem is already reported) the limit is named by the folder.
fn within_limits(
    found: &[Found],
    validation: &Validation,
    skill_uri: Option<&SkillUri>,
    path: &Path,
) -> Result<(), Vec<Error>> {
    let limits = validation.current_limits();
    let over = |limit, declared, max| match skill_uri {
        Some(skill) => Error::Entry(EntryError::LimitExceeded {
            origin: None,
            skill: skill.clone(),
            limit,
            declared,
            max,
        }),
        None => Error::Entry(EntryError::Folder {
            path: path.to_owned(),
            why: "is larger than the limits allow",
        }),
    };
    let count = found.len() as u64;
    if count > limits.max_files() {
        return Err(vec![
            over(Limit::Files, count, limits.max_files()),
            Error::Entry(EntryError::Folder {
                path: path.to_owned(),
                why: "holds more files than the limit allows (counting stopped at the first one over)",
            }),
        ]);
    }
    let total = found
        .iter()
        .map(|f| f.size)
        .fold(0u64, u64::saturating_add);
    if total > limits.max_total_bytes() {
        return Err(vec![over(
            Limit::TotalBytes,
            total,
            limits.max_total_bytes(),
        )]);
    }
    Ok(())
}

/// What hashing every found file gave.
struct Hashed {
    files: Vec<LocalFile>,
    resources: Vec<Value>,
    frontmatter: Option<serde_json::Map<String, Value>>,
}

/// Hashes every found file by streaming, and parses the frontmatter of the skill's `SKILL.md`.
fn hash_all(
    dir: BorrowedFd<'_>,
    found: Vec<Found>,
    root: &str,
    skill_uri: Option<&SkillUri>,
    hold: Option<&Arc<Budget>>,
    problems: &mut Vec<Error>,
) -> Hashed {
    let mut out = Hashed {
        files: Vec::with_capacity(found.len()),
        resources: Vec::with_capacity(found.len()),
        frontmatter: None,
    };
    for f in found {
        let is_skill_md = f.segments == [SKILL_MD];
        let claim = hold.and_then(|budget| budget.claim(f.size));
        let (digest, size, bytes) = match hash_file(dir, &f, is_skill_md || claim.is_some()) {
            Ok(read) => read,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let uri_text = format!("{root}/{}", f.segments.join("/"));
        let uri = match FileUri::parse(&uri_text) {
            Ok(u) => u,
            Err(e) => {
                problems.push(e.into());
                continue;
            }
        };
        if skill_uri.is_some_and(|s| s.file() == &uri)
            && let Some(bytes) = &bytes
        {
            match frontmatter::parse(bytes) {
                Ok(map) => out.frontmatter = Some(map),
                Err(e) => problems.push(e.into()),
            }
        }
        // The bytes just hashed into `digest`, never read again (R-E1).
        let kept = claim
            .zip(bytes)
            .and_then(|(claim, bytes)| claim.hold(bytes))
            .map(Arc::new);
        out.resources
            .push(json!({"uri": uri_text, "digest": digest.to_string(), "size": size}));
        out.files.push(LocalFile {
            uri,
            path: f.path,
            rel: f.rel,
            digest,
            size,
            held: kept,
        });
    }
    out
}

/// Opens the found file from the folder's descriptor (no link on the way, no FIFO, a regular
/// file no longer than the walk saw), and hashes it by streaming; keeps the bytes only when
/// `keep` (`SKILL.md`, and a file a watched server holds).
fn hash_file(
    dir: BorrowedFd<'_>,
    found: &Found,
    keep: bool,
) -> Result<(Digest, u64, Option<Vec<u8>>), Error> {
    let path = &found.path;
    let io = |op, source| {
        Error::Store(StoreError::Io {
            op,
            path: path.clone(),
            source,
        })
    };
    let changed = || {
        Error::Entry(EntryError::Folder {
            path: path.clone(),
            why: "changed while it was being read",
        })
    };
    let file = match beneath::open_regular(dir, &found.rel, found.size) {
        Ok((file, _)) => file,
        Err(Refused::NotRegular) => {
            return Err(Error::Entry(EntryError::Folder {
                path: path.clone(),
                why: "is not a regular file or folder",
            }));
        }
        Err(Refused::TooLong { .. }) => return Err(changed()),
        Err(Refused::Open(e)) => return Err(io("open", e)),
    };
    // At most one byte past the size the limits were checked against: a file that grew since
    // is caught, never read whole.
    let mut limited = file.take(found.size.saturating_add(1));
    let (digest, read, bytes) = if keep {
        // Sized to the file: grown by doubling, a held file would cost up to twice its bytes
        // while it is read, and leave the allocator that much to reuse (issue 41, peak RSS).
        let mut bytes = Vec::with_capacity(usize::try_from(found.size).unwrap_or(0));
        limited.read_to_end(&mut bytes).map_err(|e| io("read", e))?;
        (Digest::of(&bytes), bytes.len() as u64, Some(bytes))
    } else {
        let (digest, read) = Digest::of_reader(limited).map_err(|e| io("read", e))?;
        (digest, read, None)
    };
    if read != found.size {
        return Err(changed());
    }
    Ok((digest, read, bytes))
}

/// A regular file found by the walk.
struct Found {
    /// Its path as percent-encoded URI segments.
    segments: Vec<String>,
    /// Its path on disk, for messages.
    path: PathBuf,
    /// Its path relative to the inspected folder.
    rel: PathBuf,
    /// Its size from metadata.
    size: u64,
}

/// A walk over a folder's descriptors, collecting regular files from metadata alone (nothing
/// is opened but folders) and reporting links and oddities.
struct Walk {
    found: Vec<Found>,
    problems: Vec<Error>,
    /// The walk stops once this many files are found.
    budget: usize,
}

impl Walk {
    fn new(budget: usize) -> Walk {
        Walk {
            found: Vec::new(),
            problems: Vec::new(),
            budget,
        }
    }

    fn problem(&mut self, path: PathBuf, why: &'static str) {
        self.problems
            .push(Error::Entry(EntryError::Folder { path, why }));
    }

    /// Walks the folder `dir` (at `path` on disk, `rel` below the inspected folder, `prefix` its
    /// URI segments), `depth` levels down, in name order.
    fn folder(
        &mut self,
        dir: BorrowedFd<'_>,
        path: &Path,
        rel: &Path,
        prefix: &mut Vec<String>,
        depth: usize,
    ) {
        let mut names = match list(dir) {
            Ok(names) => names,
            Err(source) => {
                self.problems.push(Error::Store(StoreError::Io {
                    op: "read directory",
                    path: path.to_owned(),
                    source,
                }));
                return;
            }
        };
        names.sort();
        for name in names {
            if self.found.len() >= self.budget {
                return;
            }
            let (path, rel) = (path.join(&name), rel.join(&name));
            prefix.push(crate::uri::encode_segment(name.as_encoded_bytes()));
            self.entry(dir, &name, path, rel, prefix, depth);
            prefix.pop();
        }
    }

    /// One entry of a folder: recorded, walked into, or reported.
    fn entry(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        path: PathBuf,
        rel: PathBuf,
        prefix: &mut Vec<String>,
        depth: usize,
    ) {
        // The entry itself, never what a link points to.
        let st = match platform::stat_at(dir, name) {
            Ok(st) => st,
            // Gone since it was listed: the folder is as it is now.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.problems.push(Error::Store(StoreError::Io {
                    op: "stat",
                    path,
                    source: e,
                }));
                return;
            }
        };
        match st.kind {
            Kind::File => self.found.push(Found {
                segments: prefix.clone(),
                path,
                rel,
                size: st.size,
            }),
            Kind::Link => self.problem(path, "is a symbolic link"),
            Kind::Dir if depth >= MAX_DEPTH => {
                self.problem(path, "is nested deeper than a skill may be (64 folders)");
            }
            Kind::Dir => match beneath::open_dir(dir, Path::new(name)) {
                Ok(Some(child)) => self.folder(child.as_fd(), &path, &rel, prefix, depth + 1),
                Ok(None) => {}
                Err(e) => self.problems.push(folder_error(&path, e)),
            },
            _ => self.problem(path, "is not a regular file or folder"),
        }
    }
}

/// The names in the folder `dir`, without `.` and `..`.
fn list(dir: BorrowedFd<'_>) -> std::io::Result<Vec<OsString>> {
    Ok(platform::list(dir)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// A descriptor for the served folder itself, for the catalog (its path is the caller's to
/// name; nothing below it is followed).
pub(crate) fn open_root(path: &Path) -> std::io::Result<OwnedFd> {
    open_named(path)
}
