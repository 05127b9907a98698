//! The served folder as a snapshot: the skills it publishes, built once and rebuilt only where a
//! metadata scan says the folder changed.
//!
//! The scan reads directory entries and `lstat`s them from the folder's descriptor — it never
//! opens a file, and follows no link (R-E1) — so it is cheap enough to run on a timer. A skill
//! folder whose scanned metadata (kind, size, inode, modification and change times of every
//! entry under it) is unchanged keeps its built entry; any other is inspected again
//! ([`super::inspect`]), which re-hashes its files.
//!
//! Requests never scan the whole folder (R-E3): they read the current [`Snapshot`], an
//! immutable value swapped in whole after each build, with indexes by skill URI and file URI, so
//! a request costs the same in a folder of ten files or of a hundred thousand. Under
//! `serve_stdio`/`serve_http` the watcher rescans every watch interval; an in-process server
//! with no watcher rescans on a request once its snapshot is older than the interval. What
//! changed is remembered until [`Catalog::take_changes`] so the watcher can notify peers even
//! when a request saw the change first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, TryLockError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::held::Budget;
use super::inspect::{LocalSkill, inspect_beneath, open_root};
use crate::entry::Validation;
use crate::error::{EntryError, Error, StoreError};
use crate::platform::{self, AsFd as _, BorrowedFd, Kind, OwnedFd, Stat, errno};
use crate::uri::{FileUri, SKILL_MD, encode_segment};

/// How deep the scan goes: deeper folders cannot hold a publishable skill file anyway
/// (`inspect` refuses them), and a planted tree thousands of levels deep must not exhaust the
/// stack or the descriptor table.
const MAX_SCAN_DEPTH: usize = 80;

/// What an entry's metadata says, without opening it. Any write to a file changes its
/// modification or change time (or size); a file swapped for another changes its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    kind: Kind,
    size: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Stamp {
    fn of(st: &Stat) -> Stamp {
        Stamp {
            kind: st.kind,
            size: st.size,
            ino: st.ino,
            mtime_ns: st.mtime_ns,
            ctime_ns: st.ctime_ns,
        }
    }
}

/// Every entry under a folder, by path relative to the served folder.
type Scan = BTreeMap<PathBuf, Stamp>;

/// One skill folder and what inspecting it found.
#[derive(Debug)]
pub(crate) struct Built {
    /// The stamps of everything under the folder when it was inspected.
    stamps: Vec<(PathBuf, Stamp)>,
    /// The folder, relative to the served folder.
    pub(crate) dir: PathBuf,
    /// The skill's path in its URIs (`skill://<rel>/SKILL.md`), percent-encoded.
    pub(crate) rel: String,
    outcome: Result<Entry, Vec<Error>>,
}

/// A published skill: the inspected skill and its entry as JSON, with the length of that JSON
/// (for paging by size).
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) skill: LocalSkill,
    pub(crate) json: Value,
    pub(crate) json_len: usize,
}

impl Built {
    /// The published entry, if the folder is a valid skill.
    pub(crate) fn entry(&self) -> Option<&Entry> {
        self.outcome.as_ref().ok()
    }
}

internal_pub! {
/// What changed since the last [`Catalog::take_changes`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Changes {
    /// The set of published skills, or any entry, changed (`notifications/resources/list_changed`).
    pub list_changed: bool,
    /// Every file URI whose bytes were added, removed or changed
    /// (`notifications/resources/updated` to the peers that subscribed to it).
    pub uris: BTreeSet<String>,
}
}

/// What requests read: the published skills at one moment, with indexes. Immutable; a rebuild
/// makes a new one.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// The served folder's descriptor the skills were built from: files are read from it.
    root: Option<Arc<OwnedFd>>,
    /// Published skills by their URI path (the listing's order, and the cursor's key).
    skills: BTreeMap<String, Arc<Built>>,
    /// Published skills by `SKILL.md` URI.
    by_uri: HashMap<FileUri, Arc<Built>>,
    /// Every published file: its skill and its index in the skill's files.
    by_file: HashMap<FileUri, (Arc<Built>, usize)>,
    /// Published skills by root URI (`skill://<rel>`), for directory reads.
    by_root: HashMap<String, Arc<Built>>,
    /// The longest root URI in `by_root`, in bytes: no longer prefix can be one.
    longest_root: usize,
}

impl Snapshot {
    fn of(root: Option<Arc<OwnedFd>>, built: &BTreeMap<PathBuf, Arc<Built>>) -> Snapshot {
        let mut snap = Snapshot {
            root,
            ..Snapshot::default()
        };
        for b in built.values() {
            let Some(entry) = b.entry() else { continue };
            snap.skills.insert(b.rel.clone(), b.clone());
            snap.by_uri
                .insert(entry.skill.entry.uri().file().clone(), b.clone());
            let root_uri = entry.skill.entry.uri().root();
            snap.longest_root = snap.longest_root.max(root_uri.len());
            snap.by_root.insert(root_uri.to_owned(), b.clone());
            for (i, f) in entry.skill.files.iter().enumerate() {
                snap.by_file.insert(f.uri.clone(), (b.clone(), i));
            }
        }
        snap
    }

    /// The served folder's descriptor.
    pub(crate) fn root(&self) -> Option<BorrowedFd<'_>> {
        self.root.as_deref().map(platform::AsFd::as_fd)
    }

    /// The published skills in listing order, from just after `after` (a cursor's key).
    pub(crate) fn skills_after<'a>(
        &'a self,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Built>> + 'a {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.skills
            .range::<str, _>((start, Bound::Unbounded))
            .map(|(_, b)| b)
    }

    /// How many skills are published.
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn len(&self) -> usize {
        self.skills.len()
    }

    /// The published skill whose `SKILL.md` is `uri`.
    pub(crate) fn skill(&self, uri: &FileUri) -> Option<&Arc<Built>> {
        self.by_uri.get(uri)
    }

    /// The published file at `uri`, with its skill.
    pub(crate) fn file(&self, uri: &FileUri) -> Option<(&Arc<Built>, usize)> {
        self.by_file.get(uri).map(|(b, i)| (b, *i))
    }

    /// The published skill that holds the directory `dir` (a URI without a trailing slash): the
    /// innermost skill whose root is `dir` or one of its ancestors.
    ///
    /// Only prefixes no longer than the longest published root are looked up: a request's URI
    /// may be megabytes of `/a/a/…`, and hashing every ancestor would cost its length squared
    /// (R-E3: no request may cost more than its size).
    pub(crate) fn skill_holding(&self, dir: &str) -> Option<&Arc<Built>> {
        let mut at = dir;
        loop {
            if at.len() <= self.longest_root
                && let Some(b) = self.by_root.get(at)
            {
                return Some(b);
            }
            at = &at[..at.rfind('/')?];
        }
    }
}

/// The published skills of one folder, as they are being built.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    scan: Option<Scan>,
    /// The rules the built skills were validated by.
    validation: Option<Validation>,
    /// The served folder's descriptor of the last scan.
    root: Option<Arc<OwnedFd>>,
    /// Skill folders by relative path.
    built: BTreeMap<PathBuf, Arc<Built>>,
    pending: Changes,
}

impl Catalog {
    /// Scans `root` and rebuilds what changed; returns the new snapshot if anything did.
    ///
    /// # Errors
    /// `root` cannot be opened as a folder.
    fn refresh(
        &mut self,
        root: &Path,
        validation: &Validation,
        hold: Option<&Arc<Budget>>,
    ) -> Result<Option<Snapshot>, Error> {
        let fd = Arc::new(open_root(root).map_err(|e| root_error(root, e))?);
        let mut scan = Scan::new();
        scan_dir(fd.as_fd(), Path::new(""), &mut scan, 0);
        if self.scan.as_ref() == Some(&scan) && self.validation.as_ref() == Some(validation) {
            return Ok(None);
        }
        if self.validation.as_ref() != Some(validation) {
            // Other rules: nothing built under the old ones is kept.
            self.built.clear();
        }
        let mut built = BTreeMap::new();
        for (path, stamp) in &scan {
            // A skill is a folder with a regular `SKILL.md`; the served folder itself is not one.
            let is_skill_md = path.file_name() == Some(OsStr::new(SKILL_MD))
                && stamp.kind == Kind::File
                && path.parent().is_some_and(|p| !p.as_os_str().is_empty());
            let Some(dir) = path.parent().filter(|_| is_skill_md) else {
                continue;
            };
            let stamps = under(&scan, dir);
            let old = self.built.remove(dir);
            let next = match old {
                Some(old) if old.stamps == stamps => old,
                old => {
                    let next = Arc::new(build(fd.as_fd(), root, dir, stamps, validation, hold));
                    self.pending.record(old.as_deref(), Some(&next));
                    next
                }
            };
            built.insert(dir.to_owned(), next);
        }
        // Whatever is left was removed.
        for gone in std::mem::take(&mut self.built).into_values() {
            self.pending.record(Some(&gone), None);
        }
        self.built = built;
        self.scan = Some(scan);
        self.validation = Some(*validation);
        self.root = Some(fd.clone());
        Ok(Some(Snapshot::of(Some(fd), &self.built)))
    }

    /// Rebuilds the one skill folder `dir` if its entries changed since it was built; returns
    /// the new snapshot if it did. Costs a scan of that folder only.
    fn refresh_skill(
        &mut self,
        root: &Path,
        dir: &Path,
        validation: &Validation,
        hold: Option<&Arc<Budget>>,
    ) -> Option<Snapshot> {
        let fd = self.root.clone()?;
        let old = self.built.get(dir)?.clone();
        let stamps = scan_skill(fd.as_fd(), dir)?;
        if old.stamps == stamps {
            return None;
        }
        let next = Arc::new(build(fd.as_fd(), root, dir, stamps, validation, hold));
        self.pending.record(Some(&old), Some(&next));
        self.built.insert(dir.to_owned(), next);
        Some(Snapshot::of(Some(fd), &self.built))
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

    /// Forgets every skill, as removed: the served folder could not be scanned.
    fn forget(&mut self) {
        for gone in std::mem::take(&mut self.built).into_values() {
            self.pending.record(Some(&gone), None);
        }
        self.scan = None;
        self.root = None;
    }

    /// Hands out what changed since the last call, and forgets it.
    pub(crate) fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.pending)
    }
}

impl Changes {
    /// Records the difference between a skill folder as it was built before and as it is now.
    fn record(&mut self, before: Option<&Built>, after: Option<&Built>) {
        let files = |b: Option<&Built>| -> BTreeMap<String, (crate::digest::Digest, u64)> {
            b.and_then(Built::entry)
                .map(|e| {
                    e.skill
                        .files
                        .iter()
                        .map(|f| (f.uri.as_str().to_owned(), (f.digest, f.size)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (old, new) = (files(before), files(after));
        let changed: Vec<String> = old
            .iter()
            .filter(|(uri, v)| new.get(*uri) != Some(v))
            .chain(new.iter().filter(|(uri, v)| old.get(*uri) != Some(v)))
            .map(|(uri, _)| uri.clone())
            .collect();
        let json_of = |b: Option<&Built>| b.and_then(Built::entry).map(|e| e.json.clone());
        self.list_changed |= !changed.is_empty() || json_of(before) != json_of(after);
        self.uris.extend(changed);
    }
}

/// The catalog shared by every clone of a server: the builder behind one lock, and the current
/// snapshot behind another, so a request never waits for a scan (R-E3).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    catalog: Mutex<Catalog>,
    current: RwLock<Arc<Snapshot>>,
    /// When the last full scan started.
    scanned: Mutex<Option<Instant>>,
    /// Whether a watcher rescans on a timer (then requests never scan the whole folder).
    watched: std::sync::atomic::AtomicBool,
    /// The bound on the bytes held to answer reads with (only while watched: `held`).
    pub(crate) held: Arc<Budget>,
}

impl Shared {
    fn current(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Where a build keeps the bytes it hashed: only a watched server holds them, since it
    /// learns of an edit from its watcher, not from the read that finds it (`held`).
    fn hold(&self) -> Option<&Arc<Budget>> {
        self.watched
            .load(std::sync::atomic::Ordering::SeqCst)
            .then_some(&self.held)
    }

    fn publish(&self, snap: Snapshot) -> Arc<Snapshot> {
        let snap = Arc::new(snap);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = snap.clone();
        snap
    }

    /// A watcher now rescans on its timer: requests stop rescanning the whole folder.
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn watch(&self) {
        self.watched
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The published size of the file at `uri`, when a request for it would be answered from
    /// the snapshot as it is — a watcher keeps it current, so no request scans — and `None`
    /// otherwise (no scan yet, no watcher, no such file).
    #[cfg(feature = "serve")]
    pub(crate) fn published_size(&self, uri: &FileUri) -> Option<u64> {
        let scanned = self.scanned.lock().unwrap_or_else(PoisonError::into_inner).is_some();
        if !scanned || !self.watched.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        let snap = self.current();
        let (built, i) = snap.file(uri)?;
        built.entry().map(|e| e.skill.files[i].size)
    }

    /// The snapshot a request reads. Before the first scan every caller waits for it; after
    /// that, only an unwatched server whose snapshot is older than `every` rescans, and only
    /// when no scan is running already (then the current snapshot is answered).
    ///
    /// # Errors
    /// The first scan failed: the served folder cannot be opened.
    pub(crate) fn snapshot(
        &self,
        root: &Path,
        validation: &Validation,
        every: Duration,
    ) -> Result<Arc<Snapshot>, Error> {
        let current = self.current();
        let scanned = *self.scanned.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(scanned) = scanned else {
            return self.rescan(root, validation).map(|_| self.current());
        };
        let watched = self.watched.load(std::sync::atomic::Ordering::SeqCst);
        if watched || scanned.elapsed() < every {
            return Ok(current);
        }
        match self.catalog.try_lock() {
            Ok(mut catalog) => self.rescan_locked(&mut catalog, root, validation)?,
            Err(TryLockError::WouldBlock) => return Ok(current),
            Err(TryLockError::Poisoned(p)) => {
                self.rescan_locked(&mut p.into_inner(), root, validation)?;
            }
        }
        Ok(self.current())
    }

    /// Scans the whole folder now and hands out what changed (the watcher's view).
    ///
    /// # Errors
    /// The served folder cannot be opened.
    pub(crate) fn rescan(&self, root: &Path, validation: &Validation) -> Result<Changes, Error> {
        let mut catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        self.rescan_locked(&mut catalog, root, validation)?;
        Ok(catalog.take_changes())
    }

    fn rescan_locked(
        &self,
        catalog: &mut Catalog,
        root: &Path,
        validation: &Validation,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let next = match catalog.refresh(root, validation, self.hold()) {
            Ok(next) => next,
            Err(e) => {
                // The served folder is gone (or no longer a folder): nothing is published any
                // more, and what was held goes with it — held bytes would otherwise answer for a
                // folder that no longer exists (round 26 of review).
                catalog.forget();
                self.publish(Snapshot::default());
                return Err(e);
            }
        };
        *self.scanned.lock().unwrap_or_else(PoisonError::into_inner) = Some(started);
        if let Some(snap) = next {
            self.publish(snap);
        }
        Ok(())
    }

    /// Brings the one skill `built` up to date if its folder changed since it was built, and
    /// returns the snapshot to answer from. Costs a metadata scan of that skill's folder, not
    /// of the served folder; while a full scan runs, the current snapshot is answered.
    pub(crate) fn recheck(
        &self,
        snap: Arc<Snapshot>,
        built: &Built,
        root: &Path,
        validation: &Validation,
    ) -> Arc<Snapshot> {
        let Some(fd) = snap.root() else { return snap };
        if scan_skill(fd, &built.dir).is_some_and(|now| now == built.stamps) {
            return snap;
        }
        let mut catalog = match self.catalog.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return snap,
        };
        match catalog.refresh_skill(root, &built.dir, validation, self.hold()) {
            Some(next) => self.publish(next),
            None => snap,
        }
    }

    /// Runs `f` on the builder (the first scan's log line, the watcher's changes).
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn with_catalog<T>(&self, f: impl FnOnce(&mut Catalog) -> T) -> T {
        f(&mut self.catalog.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

fn root_error(root: &Path, source: std::io::Error) -> Error {
    if platform::is(&source, &[errno::ENOTDIR]) {
        return Error::Entry(EntryError::Folder {
            path: root.to_owned(),
            why: "is not a folder",
        });
    }
    Error::Store(StoreError::Io {
        op: "open",
        path: root.to_owned(),
        source,
    })
}

/// Inspects the skill folder `dir` (relative to the served folder `fd`, at `root`) and reports a
/// refusal through `tracing` (never on stderr from library code).
fn build(
    fd: BorrowedFd<'_>,
    root: &Path,
    dir: &Path,
    stamps: Vec<(PathBuf, Stamp)>,
    validation: &Validation,
    hold: Option<&Arc<Budget>>,
) -> Built {
    let rel = dir
        .iter()
        .map(|segment| encode_segment(segment.as_encoded_bytes()))
        .collect::<Vec<_>>()
        .join("/");
    let uri_root = format!("skill://{rel}");
    let outcome = inspect_beneath(fd, root, dir, &uri_root, validation, hold).map(|skill| {
        let json = skill.entry.to_json();
        let json_len = serde_json::to_vec(&json).map_or(0, |v| v.len());
        Entry {
            skill,
            json,
            json_len,
        }
    });
    match &outcome {
        Ok(e) => {
            tracing::debug!(skill = %e.skill.entry.uri(), files = e.skill.files.len(), "published");
        }
        Err(errors) => {
            for e in errors {
                tracing::warn!(skill = %rel, error = %e, "not publishing");
            }
        }
    }
    Built {
        stamps,
        dir: dir.to_owned(),
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

/// The stamps of everything under the skill folder `dir` now, as [`under`] would give them from
/// a full scan; `None` if the folder cannot be opened.
fn scan_skill(root: BorrowedFd<'_>, dir: &Path) -> Option<Vec<(PathBuf, Stamp)>> {
    let fd = crate::beneath::open_dir_beneath(root, dir).ok()?;
    let mut scan = Scan::new();
    scan_dir(fd.as_fd(), dir, &mut scan, dir.components().count());
    Some(scan.into_iter().collect())
}

/// Records every entry under the folder `dir` (at `rel` below the served folder) without
/// following links or opening files. An entry that vanishes mid-scan is simply absent; the
/// next scan sees the folder as it is then.
fn scan_dir(dir: BorrowedFd<'_>, rel: &Path, out: &mut Scan, depth: usize) {
    let Ok(entries) = platform::list(dir) else {
        return;
    };
    for (name, _) in entries {
        let Ok(st) = platform::stat_at(dir, &name) else {
            continue;
        };
        let path = rel.join(&name);
        out.insert(path.clone(), Stamp::of(&st));
        if st.kind == Kind::Dir
            && depth < MAX_SCAN_DEPTH
            && let Ok(Some(child)) = crate::beneath::open_dir(dir, Path::new(&name))
        {
            scan_dir(child.as_fd(), &path, out, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    fn strict() -> Validation {
        Validation::default().strict(true)
    }

    #[test]
    fn unchanged_folder_is_not_rebuilt_and_reports_no_change() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        let mut catalog = Catalog::default();
        let snap = catalog
            .refresh(tmp.path(), &strict(), None)
            .expect("first scan")
            .expect("a change");
        assert_eq!(snap.len(), 1);
        let first = catalog.take_changes();
        assert!(first.list_changed);
        assert!(first.uris.contains("skill://alpha/notes.md"));
        assert!(
            catalog
                .refresh(tmp.path(), &strict(), None)
                .expect("second scan")
                .is_none()
        );
        assert_eq!(catalog.take_changes(), Changes::default());
    }

    #[test]
    fn an_edited_file_changes_only_its_uri_and_keeps_the_other_skill() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        skill(tmp.path(), "beta", "b");
        let mut catalog = Catalog::default();
        catalog.refresh(tmp.path(), &strict(), None).expect("scan");
        catalog.take_changes();
        fs::write(tmp.path().join("beta/notes.md"), "b, longer now").expect("edit");
        assert!(
            catalog
                .refresh(tmp.path(), &strict(), None)
                .expect("rescan")
                .is_some()
        );
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
        catalog.refresh(tmp.path(), &strict(), None).expect("scan");
        fs::remove_dir_all(tmp.path().join("alpha")).expect("rm");
        // A name that does not match its folder is refused, with the reason kept.
        fs::write(
            tmp.path().join("beta/SKILL.md"),
            "---\nname: gamma\ndescription: Wrong folder.\n---\n",
        )
        .expect("edit");
        let snap = catalog
            .refresh(tmp.path(), &strict(), None)
            .expect("rescan")
            .expect("a change");
        assert_eq!(snap.len(), 0);
        let refused: Vec<&str> = catalog.refused().map(|(rel, _)| rel).collect();
        assert_eq!(refused, ["beta"]);
        assert!(
            catalog
                .take_changes()
                .uris
                .contains("skill://alpha/SKILL.md")
        );
    }

    #[test]
    fn e3_a_skill_rechecked_alone_is_rebuilt_and_the_change_is_kept_for_the_watcher() {
        let tmp = crate::scratch::scratch();
        skill(tmp.path(), "alpha", "a");
        let shared = Shared::default();
        let every = Duration::from_secs(3600);
        let snap = shared
            .snapshot(tmp.path(), &strict(), every)
            .expect("first scan");
        shared.with_catalog(Catalog::take_changes);
        let uri = FileUri::parse("skill://alpha/SKILL.md").expect("uri");
        let built = snap.skill(&uri).expect("published").clone();
        // Unchanged: the same snapshot comes back.
        let same = shared.recheck(snap.clone(), &built, tmp.path(), &strict());
        assert!(Arc::ptr_eq(&same, &snap));
        fs::write(tmp.path().join("alpha/notes.md"), "a, edited").expect("edit");
        // A request within the interval does not rescan the folder...
        let still = shared
            .snapshot(tmp.path(), &strict(), every)
            .expect("snapshot");
        assert!(Arc::ptr_eq(&still, &snap));
        // ...but the skill it asks for is checked on its own.
        let next = shared.recheck(still, &built, tmp.path(), &strict());
        assert!(!Arc::ptr_eq(&next, &snap));
        let changes = shared.with_catalog(Catalog::take_changes);
        assert!(changes.uris.contains("skill://alpha/notes.md"), "{changes:?}");
    }
}
