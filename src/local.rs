//! Local skill folders: the entry a server would publish for a folder on disk.
//!
//! Skill authors use it (through `skillcache inspect`) to check a skill before publishing, and
//! the bundled server (`skillcache serve`) uses it to publish a folder of skills. The entry is
//! built the way a server must build it — every file with its real digest and size, the
//! frontmatter rendered verbatim as JSON — and then validated by the same rules that apply to
//! any server's entry, so a folder that passes here passes in every skillcache host.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The skills server behind `skillcache serve`, over a folder of skills: the publisher the tests
/// and the CLI use.
pub use crate::server::SkillServer;

use crate::digest::Digest;
use crate::entry::{SkillEntry, Validation};
use crate::error::{Error, Limit};
use crate::frontmatter;
use crate::uri::{FileUri, SKILL_MD, SkillUri};

internal_pub! {
    /// One file of a local skill and where it lies on disk.
    #[derive(Debug, Clone)]
    struct LocalFile {
        /// The file's URI in the published skill.
        pub uri: FileUri,
        /// Its path on disk.
        pub path: PathBuf,
        /// Its digest.
        pub digest: Digest,
        /// Its size.
        pub size: u64,
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
        let limits = validation.current_limits();
        let mut problems = Vec::new();
        let skill_uri_text = format!("{root}/{SKILL_MD}");
        let skill_uri = match SkillUri::parse(&skill_uri_text) {
            Ok(u) => Some(u),
            Err(e) => {
                problems.push(e.into());
                None
            }
        };
        let mut paths = Vec::new();
        // One file past the limit is enough to refuse; the walk stops there (`inspect /`).
        let budget = usize::try_from(limits.max_files())
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        walk(dir, &mut Vec::new(), &mut paths, &mut problems, budget);

        // R-B3: the limits, from metadata, before any file is read.
        // Without a valid skill URI (its problem is already reported) the limit is named by the folder.
        let over = |limit, declared, max| match &skill_uri {
            Some(skill) => Error::Entry(crate::error::EntryError::LimitExceeded {
                skill: skill.clone(),
                limit,
                declared,
                max,
            }),
            None => Error::Entry(crate::error::EntryError::Folder {
                path: dir.to_owned(),
                why: "is larger than the limits allow",
            }),
        };
        let count = paths.len() as u64;
        if count > limits.max_files() {
            problems.push(over(Limit::Files, count, limits.max_files()));
            problems.push(Error::Entry(crate::error::EntryError::Folder {
                path: dir.to_owned(),
                why: "holds more files than the limit allows (counting stopped at the first one over)",
            }));
            return Err(problems);
        }
        let total = paths
            .iter()
            .map(|(_, _, size)| *size)
            .fold(0u64, u64::saturating_add);
        if total > limits.max_total_bytes() {
            problems.push(over(Limit::TotalBytes, total, limits.max_total_bytes()));
            return Err(problems);
        }

        let mut files = Vec::with_capacity(paths.len());
        let mut resources = Vec::with_capacity(paths.len());
        let mut fm = None;
        for (segments, path, listed_size) in paths {
            let is_skill_md = segments.len() == 1 && segments[0] == SKILL_MD;
            let (digest, size, bytes) = match hash_file(&path, listed_size, is_skill_md) {
                Ok(read) => read,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            let uri_text = format!("{root}/{}", segments.join("/"));
            let uri = match FileUri::parse(&uri_text) {
                Ok(u) => u,
                Err(e) => {
                    problems.push(e.into());
                    continue;
                }
            };
            if skill_uri.as_ref().is_some_and(|s| s.file() == &uri)
                && let Some(bytes) = bytes
            {
                match frontmatter::parse(&bytes) {
                    Ok(map) => fm = Some(map),
                    Err(e) => problems.push(e.into()),
                }
            }
            resources.push(json!({"uri": uri_text, "digest": digest.to_string(), "size": size}));
            files.push(LocalFile {
                uri,
                path,
                digest,
                size,
            });
        }
        if !dir.join(SKILL_MD).is_file() {
            problems.push(Error::Entry(crate::error::EntryError::Folder {
                path: dir.join(SKILL_MD),
                why: "is missing",
            }));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let Some(fm) = fm else { return Err(problems) };
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
}

internal_pub! {
    /// Every folder under `root` (itself included) that holds a `SKILL.md`, as path segments relative
    /// to `root`, in sorted order. Nested skills are found too.
    #[must_use]
    fn find_skills(root: &Path) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut paths = Vec::new();
        walk(
            root,
            &mut Vec::new(),
            &mut paths,
            &mut Vec::new(),
            usize::MAX,
        );
        for (segments, _, _) in paths {
            if segments.last().map(String::as_str) == Some(SKILL_MD) {
                out.push(segments[..segments.len() - 1].to_vec());
            }
        }
        out
    }
}

/// A regular file found by the walk: (percent-encoded segments, path, size from metadata).
type Found = (Vec<String>, PathBuf, u64);

/// Opens `path` without following a link, checks it is still the regular file of `size` bytes
/// the walk saw, and hashes it by streaming; keeps the bytes only when `keep` (`SKILL.md`).
fn hash_file(path: &Path, size: u64, keep: bool) -> Result<(Digest, u64, Option<Vec<u8>>), Error> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |op, source| {
        Error::Store(crate::error::StoreError::Io {
            op,
            path: path.to_owned(),
            source,
        })
    };
    // O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO since the walk is refused
    // instead of followed or waited on.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io("open", e))?;
    let meta = file.metadata().map_err(|e| io("stat", e))?;
    if !meta.is_file() {
        return Err(Error::Entry(crate::error::EntryError::Folder {
            path: path.to_owned(),
            why: "is not a regular file or folder",
        }));
    }
    // At most one byte past the size the limits were checked against: a file that grew since
    // is caught, never read whole.
    let mut limited = file.take(size.saturating_add(1));
    let (digest, read, bytes) = if keep {
        let mut bytes = Vec::new();
        limited.read_to_end(&mut bytes).map_err(|e| io("read", e))?;
        (Digest::of(&bytes), bytes.len() as u64, Some(bytes))
    } else {
        let (digest, read) = Digest::of_reader(limited).map_err(|e| io("read", e))?;
        (digest, read, None)
    };
    if read != size {
        return Err(Error::Entry(crate::error::EntryError::Folder {
            path: path.to_owned(),
            why: "changed while it was being read",
        }));
    }
    Ok((digest, read, bytes))
}

/// Collects regular files with their sizes from metadata alone (nothing is opened); reports
/// links and oddities. Stops once `budget` files are found.
fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<Found>,
    problems: &mut Vec<Error>,
    budget: usize,
) {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(source) => {
            problems.push(Error::Store(crate::error::StoreError::Io {
                op: "read directory",
                path: dir.to_owned(),
                source,
            }));
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for e in entries {
        if out.len() >= budget {
            return;
        }
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        prefix.push(encode_segment(&e.file_name()));
        if kind.is_symlink() {
            problems.push(Error::Entry(crate::error::EntryError::Folder {
                path,
                why: "is a symbolic link",
            }));
        } else if kind.is_dir() {
            walk(&path, prefix, out, problems, budget);
        } else if kind.is_file() {
            // `symlink_metadata`: the entry itself, never what a link points to.
            match fs::symlink_metadata(&path) {
                Ok(meta) => out.push((prefix.clone(), path, meta.len())),
                Err(source) => problems.push(Error::Store(crate::error::StoreError::Io {
                    op: "stat",
                    path,
                    source,
                })),
            }
        } else {
            problems.push(Error::Entry(crate::error::EntryError::Folder {
                path,
                why: "is not a regular file or folder",
            }));
        }
        prefix.pop();
    }
}

/// A file name as one URI path segment, in the canonical encoding.
fn encode_segment(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::uri::encode_segment(name.as_bytes())
}
