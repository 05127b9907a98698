//! The served folder as a snapshot: the skills it publishes, built once and rebuilt only where a
//! metadata scan says the folder changed.
//!
//! The scan reads directory entries and `lstat`s them — it never opens a file — so it is cheap
//! enough to run before every catalog query and on a timer. A skill folder whose scanned
//! metadata (kind, size, inode, modification and change times of every entry under it) is
//! unchanged keeps its built entry; any other is inspected again ([`crate::local::inspect`]),
//! which re-hashes its files. What changed is remembered until [`Catalog::take_changes`] so the
//! watcher can notify peers even when a request saw the change first.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::entry::Validation;
use crate::error::Error;
use crate::local::{LocalSkill, inspect_folder};
use crate::uri::{SKILL_MD, encode_segment};

/// What an entry's metadata says, without opening it. Any write to a file changes its
/// modification or change time (or size); a file swapped for another changes its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mode: u32,
    size: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            mode: meta.mode() & libc::S_IFMT,
            size: meta.size(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// Every entry under the root, by path relative to it.
type Scan = BTreeMap<PathBuf, Stamp>;

/// One skill folder and what inspecting it found.
#[derive(Debug)]
struct Built {
    /// The stamps of everything under the folder when it was inspected.
    stamps: Vec<(PathBuf, Stamp)>,
    /// The skill's path in its URIs (`skill://<rel>/SKILL.md`), percent-encoded.
    rel: String,
    outcome: Result<LocalSkill, Vec<Error>>,
}

/// What changed since the last [`Catalog::take_changes`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Changes {
    /// The set of published skills, or any entry, changed (`notifications/resources/list_changed`).
    pub list_changed: bool,
    /// Every file URI whose bytes were added, removed or changed
    /// (`notifications/resources/updated` to the peers that subscribed to it).
    pub uris: BTreeSet<String>,
}

/// The published skills of one folder.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    scan: Option<Scan>,
    /// Skill folders by relative path.
    built: BTreeMap<PathBuf, Built>,
    pending: Changes,
}

impl Catalog {
    /// Scans `root` and rebuilds what changed. Returns whether anything did.
    ///
    /// # Errors
    /// `root` cannot be read as a folder.
    pub(crate) fn refresh(&mut self, root: &Path) -> Result<bool, Error> {
        let meta = fs::metadata(root).map_err(|source| Error::Store(crate::error::StoreError::Io {
            op: "stat",
            path: root.to_owned(),
            source,
        }))?;
        if !meta.is_dir() {
            return Err(Error::Entry(crate::error::EntryError::Folder {
                path: root.to_owned(),
                why: "is not a folder",
            }));
        }
        let mut scan = Scan::new();
        scan_dir(root, Path::new(""), &mut scan);
        if self.scan.as_ref() == Some(&scan) {
            return Ok(false);
        }
        let before = self.published_files();
        let mut built = BTreeMap::new();
        for (path, stamp) in &scan {
            // A skill is a folder with a regular `SKILL.md`; the served folder itself is not one.
            let is_skill_md = path.file_name() == Some(OsStr::new(SKILL_MD))
                && stamp.mode == libc::S_IFREG
                && path.parent().is_some_and(|p| !p.as_os_str().is_empty());
            let Some(dir) = path.parent().filter(|_| is_skill_md) else {
                continue;
            };
            let stamps = under(&scan, dir);
            let reused = self.built.remove(dir).filter(|old| old.stamps == stamps);
            let next = reused.unwrap_or_else(|| build(root, dir, stamps));
            built.insert(dir.to_owned(), next);
        }
        self.built = built;
        self.scan = Some(scan);
        let after = self.published_files();
        let changed: BTreeSet<String> = before
            .iter()
            .filter(|(uri, v)| after.get(*uri) != Some(v))
            .chain(after.iter().filter(|(uri, v)| before.get(*uri) != Some(v)))
            .map(|(uri, _)| uri.clone())
            .collect();
        let listed_changed = before.len() != after.len() || !changed.is_empty();
        self.pending.list_changed |= listed_changed;
        self.pending.uris.extend(changed);
        Ok(listed_changed)
    }

    /// The published skills, in path order: (percent-encoded path, skill).
    pub(crate) fn skills(&self) -> impl Iterator<Item = (&str, &LocalSkill)> {
        self.built
            .values()
            .filter_map(|b| b.outcome.as_ref().ok().map(|s| (b.rel.as_str(), s)))
    }

    /// The skill folders not published, with every reason.
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn refused(&self) -> impl Iterator<Item = (&str, &[Error])> {
        self.built.values().filter_map(|b| {
            b.outcome
                .as_ref()
                .err()
                .map(|e| (b.rel.as_str(), e.as_slice()))
        })
    }

    /// Hands out what changed since the last call, and forgets it.
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.pending)
    }

    /// Every published file: URI → (digest, size).
    fn published_files(&self) -> BTreeMap<String, (String, u64)> {
        self.skills()
            .flat_map(|(_, s)| s.files.iter())
            .map(|f| (f.uri.as_str().to_owned(), (f.digest.to_string(), f.size)))
            .collect()
    }
}

/// Inspects the skill folder `dir` (relative to `root`) and reports a refusal through `tracing`
/// (never on stderr from library code).
fn build(root: &Path, dir: &Path, stamps: Vec<(PathBuf, Stamp)>) -> Built {
    let rel = dir
        .iter()
        .map(|segment| encode_segment(segment.as_bytes()))
        .collect::<Vec<_>>()
        .join("/");
    let outcome = inspect_folder(
        &root.join(dir),
        &format!("skill://{rel}"),
        &Validation::default(),
    );
    match &outcome {
        Ok(skill) => {
            tracing::debug!(skill = %skill.entry.uri(), files = skill.files.len(), "published");
        }
        Err(errors) => {
            for e in errors {
                tracing::warn!(skill = %rel, error = %e, "not publishing");
            }
        }
    }
    Built {
        stamps,
        rel,
        outcome,
    }
}

/// The stamps of everything strictly under `dir`: a contiguous range, since paths order by
/// component.
fn under(scan: &Scan, dir: &Path) -> Vec<(PathBuf, Stamp)> {
    scan.range::<Path, _>((Bound::Excluded(dir), Bound::Unbounded))
        .take_while(|(p, _)| p.starts_with(dir))
        .map(|(p, s)| (p.clone(), *s))
        .collect()
}

/// Records every entry under `root.join(rel)` without following links or opening files. An
/// entry that vanishes mid-scan is simply absent; the next scan sees the folder as it is then.
fn scan_dir(root: &Path, rel: &Path, out: &mut Scan) {
    let Ok(entries) = fs::read_dir(root.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = rel.join(entry.file_name());
        let Ok(meta) = fs::symlink_metadata(root.join(&path)) else {
            continue;
        };
        let stamp = Stamp::of(&meta);
        out.insert(path.clone(), stamp);
        if meta.is_dir() {
            scan_dir(root, &path, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, name: &str, extra: &str) {
        let dir = root.join(name);
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill.\n---\n"),
        )
        .expect("write");
        fs::write(dir.join("notes.md"), extra).expect("write");
    }

    #[test]
    fn unchanged_folder_is_not_rebuilt_and_reports_no_change() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        let mut catalog = Catalog::default();
        assert!(catalog.refresh(tmp.path()).expect("first scan"));
        assert_eq!(catalog.skills().count(), 1);
        let first = catalog.take_changes();
        assert!(first.list_changed);
        assert!(first.uris.contains("skill://alpha/notes.md"));
        assert!(!catalog.refresh(tmp.path()).expect("second scan"));
        assert_eq!(catalog.take_changes(), Changes::default());
    }

    #[test]
    fn an_edited_file_changes_only_its_uri_and_keeps_the_other_skill() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        skill(tmp.path(), "beta", "b");
        let mut catalog = Catalog::default();
        catalog.refresh(tmp.path()).expect("scan");
        catalog.take_changes();
        fs::write(tmp.path().join("beta/notes.md"), "b, longer now").expect("edit");
        assert!(catalog.refresh(tmp.path()).expect("rescan"));
        let changes = catalog.take_changes();
        assert!(changes.list_changed);
        assert_eq!(
            changes.uris.into_iter().collect::<Vec<_>>(),
            ["skill://beta/notes.md"]
        );
    }

    #[test]
    fn a_removed_skill_and_a_refused_one_leave_the_listing() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        skill(tmp.path(), "beta", "b");
        let mut catalog = Catalog::default();
        catalog.refresh(tmp.path()).expect("scan");
        fs::remove_dir_all(tmp.path().join("alpha")).expect("rm");
        // A name that does not match its folder is refused, with the reason kept.
        fs::write(
            tmp.path().join("beta/SKILL.md"),
            "---\nname: gamma\ndescription: Wrong folder.\n---\n",
        )
        .expect("edit");
        catalog.refresh(tmp.path()).expect("rescan");
        assert_eq!(catalog.skills().count(), 0);
        let refused: Vec<&str> = catalog.refused().map(|(rel, _)| rel).collect();
        assert_eq!(refused, ["beta"]);
        assert!(
            catalog
                .take_changes()
                .uris
                .contains("skill://alpha/SKILL.md")
        );
    }
}
