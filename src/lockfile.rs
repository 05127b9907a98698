//! The lock file (`skills.lock`): what was pinned, so a skill that changed is refused (fail
//! closed on drift — "rug-pull" protection).
//!
//! A lock records, per (origin, skill URI), the content binding (R-A1) and every file's URI,
//! digest and size. With a lock in force ([`SkillCacheBuilder::locked`]), `load` compares the
//! skill's current entry with it *before any request* and declines one that is not listed
//! ([`Declined::NotLocked`]) or whose file set differs ([`Declined::Drift`], naming every file
//! added, removed or changed). It is TOML, written in a stable order, so it diffs well in review.
//!
//! [`SkillCacheBuilder::locked`]: crate::host::SkillCacheBuilder::locked

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::entry::{Binding, ChangedFile, EntryDiff, SkillEntry};
use crate::error::{Declined, Error, FileProblem};
use crate::origin::Origin;
use crate::uri::{FileUri, SkillUri};

/// The largest lock file read: room for hundreds of skills at the file limit (R-W7).
const MAX_LOCK_BYTES: u64 = 64 << 20;

/// The longest parser message an error carries.
const MAX_MESSAGE_CHARS: usize = 512;

/// The format version written and read.
const VERSION: u32 = 1;

const HEADER: &str = "# skills.lock: skills pinned by `skillcache lock`. A skill whose files differ from what is\n# pinned here is refused by `load --locked` / `read --locked`. Re-lock to accept a change.\n\n";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    version: u32,
    #[serde(default, rename = "skill")]
    skills: Vec<RawSkill>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkill {
    origin: String,
    uri: String,
    binding: String,
    #[serde(rename = "file")]
    files: Vec<RawFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    uri: String,
    digest: String,
    size: u64,
}

/// One pinned skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedSkill {
    origin: Origin,
    uri: SkillUri,
    binding: Binding,
    /// By canonical URI.
    files: BTreeMap<String, (FileUri, Digest, u64)>,
}

impl LockedSkill {
    /// The origin it was locked from.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }
    /// Its `SKILL.md` URI.
    #[must_use]
    pub fn uri(&self) -> &SkillUri {
        &self.uri
    }
    /// Its content binding when it was locked (R-A1).
    #[must_use]
    pub fn binding(&self) -> Binding {
        self.binding
    }
    /// Its files: URI, digest, size.
    pub fn files(&self) -> impl Iterator<Item = (&FileUri, Digest, u64)> {
        self.files.values().map(|(u, d, s)| (u, *d, *s))
    }

    /// What changed from this pin to `entry` (files only: the lock pins bytes).
    fn diff(&self, entry: &SkillEntry) -> EntryDiff {
        let mut out = EntryDiff::default();
        let Some(manifest) = entry.manifest() else {
            out.dynamic_changed = true;
            return out;
        };
        for f in manifest.files() {
            match self.files.get(f.uri().canonical()) {
                None => out.added.push(f.uri().clone()),
                Some((_, digest, size)) if *digest != f.digest() || *size != f.size() => {
                    out.changed.push(ChangedFile {
                        uri: f.uri().clone(),
                        old: *digest,
                        new: f.digest(),
                    });
                }
                Some(_) => {}
            }
        }
        out.removed = self
            .files
            .values()
            .filter(|(u, _, _)| manifest.file(u).is_none())
            .map(|(u, _, _)| u.clone())
            .collect();
        out
    }
}

/// A lock file: pinned skills by (origin, skill URI).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use skillcache::{Digest, LockFile, Origin, SkillEntry, entry::Validation};
/// let md = b"---\nname: demo\ndescription: A demo.\n---\n";
/// let entry = SkillEntry::from_json(&serde_json::json!({
///     "uri": "skill://demo/SKILL.md",
///     "frontmatter": {"name": "demo", "description": "A demo."},
///     "resources": [{"uri": "skill://demo/SKILL.md", "digest": Digest::of(md).to_string(), "size": md.len()}]
/// }), &Validation::default())?;
/// let origin = Origin::new("docs")?;
/// let mut lock = LockFile::new();
/// lock.insert(&origin, &entry)?;
/// lock.write(dir.path().join("skills.lock"))?;
/// let read = LockFile::read(dir.path().join("skills.lock"))?;
/// read.check(&origin, &entry)?; // as locked: admitted
/// # Ok::<(), skillcache::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockFile {
    /// Where it was read from (named in errors); `None` for one built in memory.
    path: Option<PathBuf>,
    /// By (origin, canonical skill URI): the order it is written in.
    skills: BTreeMap<(Origin, String), LockedSkill>,
}

impl LockFile {
    /// An empty lock.
    #[must_use]
    pub fn new() -> LockFile {
        LockFile::default()
    }

    /// Reads and checks the lock file at `path`.
    ///
    /// # Errors
    /// [`StoreError::Io`](crate::error::StoreError::Io) if it cannot be read; [`ConfigError::LockFile`](crate::error::ConfigError::LockFile) naming the field.
    pub fn read(path: impl AsRef<Path>) -> Result<LockFile, Error> {
        let path = path.as_ref();
        match crate::config::read_text(path, MAX_LOCK_BYTES, "read the lock file")? {
            Ok(text) => LockFile::parse(path, &text),
            Err(problem) => Err(Error::Config(crate::error::ConfigError::LockFile {
                path: path.to_owned(),
                field: String::new(),
                problem,
            })),
        }
    }

    internal_pub! {
        /// Checks `text`, the contents of the lock file at `path` (named in errors).
        ///
        /// # Errors
        /// [`ConfigError::LockFile`](crate::error::ConfigError::LockFile) naming the field: TOML that does not parse, an unknown
        /// version, an invalid origin, URI or digest, a file outside its skill, a skill twice.
        fn parse(path: impl AsRef<Path>, text: &str) -> Result<LockFile, Error> {
            let path = path.as_ref();
            let fail = |field: String, problem| Error::Config(crate::error::ConfigError::LockFile {
                path: path.to_owned(),
                field,
                problem,
            });
            let invalid = |field: String, why: String| fail(field, FileProblem::Invalid { why });
            let doc: Doc = toml::from_str(text).map_err(|e| {
                // The parser quotes the offending line, which may be the whole file: the
                // message is bounded, so an error about a huge line is not a huge error.
                let mut message = e.to_string().trim_end().replace('\n', " ");
                if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
                    message.truncate(cut);
                    message.push_str(" …");
                }
                fail(String::new(), FileProblem::Syntax { message })
            })?;
            if doc.version != VERSION {
                return Err(invalid(
                    "version".into(),
                    format!(
                        "{} is not a version this skillcache reads ({VERSION})",
                        doc.version
                    ),
                ));
            }
            let mut lock = LockFile {
                path: Some(path.to_owned()),
                skills: BTreeMap::new(),
            };
            for (i, raw) in doc.skills.into_iter().enumerate() {
                let at = format!("skill[{i}]");
                let origin = Origin::new(raw.origin)
                    .map_err(|e| invalid(format!("{at}.origin"), e.to_string()))?;
                let uri = SkillUri::parse(&raw.uri)
                    .map_err(|e| invalid(format!("{at}.uri"), e.to_string()))?;
                let binding = format!("sha256:{}", raw.binding)
                    .parse::<Digest>()
                    .map(|d| Binding::from_bytes(*d.as_bytes()))
                    .map_err(|_| {
                        invalid(
                            format!("{at}.binding"),
                            "is not 64 lowercase hex digits".into(),
                        )
                    })?;
                let mut files = BTreeMap::new();
                for (j, f) in raw.files.into_iter().enumerate() {
                    let at = format!("{at}.file[{j}]");
                    let file = FileUri::parse(&f.uri)
                        .map_err(|e| invalid(format!("{at}.uri"), e.to_string()))?;
                    if !uri.contains(&file) {
                        return Err(invalid(
                            format!("{at}.uri"),
                            format!("is not inside the skill {uri}"),
                        ));
                    }
                    let digest = f
                        .digest
                        .parse::<Digest>()
                        .map_err(|e| invalid(format!("{at}.digest"), e.to_string()))?;
                    let key = file.canonical().to_owned();
                    if files.insert(key, (file, digest, f.size)).is_some() {
                        return Err(invalid(format!("{at}.uri"), "is listed twice".into()));
                    }
                }
                if !files.contains_key(uri.file().canonical()) {
                    return Err(invalid(
                        format!("{at}.file"),
                        format!("does not list {uri}"),
                    ));
                }
                let key = (origin.clone(), uri.canonical().to_owned());
                let skill = LockedSkill {
                    origin,
                    uri,
                    binding,
                    files,
                };
                if lock.skills.insert(key, skill).is_some() {
                    return Err(invalid(
                        at,
                        "locks a skill of an origin already locked above".into(),
                    ));
                }
            }
            Ok(lock)
        }
    }

    /// Pins `entry` of `origin` as it is now, replacing an earlier pin of the same skill.
    ///
    /// # Errors
    /// [`Error::Declined`] with [`Declined::Dynamic`]: a dynamic skill has no digests to pin.
    pub fn insert(&mut self, origin: &Origin, entry: &SkillEntry) -> Result<(), Error> {
        let (Some(manifest), Some(binding)) = (entry.manifest(), entry.binding()) else {
            return Err(Error::Declined {
                origin: origin.clone(),
                skill: entry.uri().clone(),
                reason: Declined::Dynamic,
            });
        };
        let files = manifest
            .files()
            .iter()
            .map(|f| {
                (
                    f.uri().canonical().to_owned(),
                    (f.uri().clone(), f.digest(), f.size()),
                )
            })
            .collect();
        self.skills.insert(
            (origin.clone(), entry.uri().canonical().to_owned()),
            LockedSkill {
                origin: origin.clone(),
                uri: entry.uri().clone(),
                binding,
                files,
            },
        );
        Ok(())
    }

    /// Every pinned skill, by origin then URI.
    pub fn skills(&self) -> impl Iterator<Item = &LockedSkill> {
        self.skills.values()
    }

    internal_pub! {
        /// The pin of (`origin`, `uri`), if any.
        #[must_use]
        fn skill(&self, origin: &Origin, uri: &SkillUri) -> Option<&LockedSkill> {
            self.skills
                .get(&(origin.clone(), uri.canonical().to_owned()))
        }
    }

    /// Whether `entry` of `origin` is exactly as pinned. Reads nothing, sends nothing.
    ///
    /// # Errors
    /// [`Error::Declined`] with [`Declined::NotLocked`] for a skill the lock does not list,
    /// [`Declined::Drift`] naming every file added, removed or changed; [`ConfigError::LockFile`](crate::error::ConfigError::LockFile)
    /// for a pin whose binding does not match its own files (an edited lock).
    pub fn check(&self, origin: &Origin, entry: &SkillEntry) -> Result<(), Error> {
        let declined = |reason| Error::Declined {
            origin: origin.clone(),
            skill: entry.uri().clone(),
            reason,
        };
        let Some(locked) = self.skill(origin, entry.uri()) else {
            return Err(declined(Declined::NotLocked));
        };
        let diff = locked.diff(entry);
        if diff.files_changed() {
            return Err(declined(Declined::Drift {
                changes: Box::new(diff),
            }));
        }
        if entry.binding() != Some(locked.binding) {
            return Err(Error::Config(crate::error::ConfigError::LockFile {
                path: self.path.clone().unwrap_or_default(),
                field: format!("binding of {} (origin {origin})", entry.uri()),
                problem: FileProblem::Invalid {
                    why: "does not match the skill's pinned files; lock the skill again".into(),
                },
            }));
        }
        Ok(())
    }

    internal_pub! {
        /// The lock as TOML, in a stable order.
        #[must_use]
        fn to_toml(&self) -> String {
            let doc = Doc {
                version: VERSION,
                skills: self
                    .skills
                    .values()
                    .map(|s| RawSkill {
                        origin: s.origin.as_str().to_owned(),
                        uri: s.uri.as_str().to_owned(),
                        binding: s.binding.to_string(),
                        files: s
                            .files()
                            .map(|(u, d, size)| RawFile {
                                uri: u.as_str().to_owned(),
                                digest: d.to_string(),
                                size,
                            })
                            .collect(),
                    })
                    .collect(),
            };
            // Plain strings and integers only: serialising them cannot fail.
            let body = toml::to_string_pretty(&doc).unwrap_or_default();
            format!("{HEADER}{body}")
        }
    }

    /// Writes the lock to `path`, replacing it whole (a temporary beside it, then a rename: a
    /// reader never sees half a lock).
    ///
    /// # Errors
    /// [`StoreError::Io`](crate::error::StoreError::Io).
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let io = |op, p: &Path| {
            let p = p.to_owned();
            move |source| {
                Error::Store(crate::error::StoreError::Io {
                    op,
                    path: p,
                    source,
                })
            }
        };
        // A fresh name, created exclusively: whatever is already there (a link a repository
        // planted where a fixed temporary name would go) is never followed or written through.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.{nanos}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| {
                use std::io::Write as _;
                f.write_all(self.to_toml().as_bytes())?;
                f.sync_all()
            });
        if let Err(e) = written {
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                let _ = std::fs::remove_file(&tmp);
            }
            return Err(io("write the lock file", &tmp)(e));
        }
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io("replace the lock file", path)(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::LockFile;
    use crate::error::{Error, FileProblem};

    fn field_of(text: &str) -> String {
        match LockFile::parse("/p/skills.lock", text) {
            Err(Error::Config(crate::error::ConfigError::LockFile { field, problem, .. })) => {
                assert!(!matches!(problem, FileProblem::Missing), "{problem}");
                field
            }
            other => panic!("refused: {other:?}"),
        }
    }

    const MD: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    fn one(origin: &str, uri: &str, binding: &str, file_uri: &str, digest: &str) -> String {
        format!(
            "version = 1\n[[skill]]\norigin = {origin:?}\nuri = {uri:?}\nbinding = {binding:?}\n[[skill.file]]\nuri = {file_uri:?}\ndigest = {digest:?}\nsize = 1\n"
        )
    }

    #[test]
    fn each_bad_field_of_a_lock_is_named() {
        let b = "ab".repeat(32);
        assert_eq!(field_of("version = 2\n"), "version");
        assert_eq!(field_of("version = \"1\"\n"), "");
        assert_eq!(field_of("version = 1\nextra = 1\n"), "");
        assert_eq!(
            field_of(&one("", "skill://a/SKILL.md", &b, "skill://a/SKILL.md", MD)),
            "skill[0].origin"
        );
        assert_eq!(
            field_of(&one("o", "skill://a/x.md", &b, "skill://a/SKILL.md", MD)),
            "skill[0].uri"
        );
        assert_eq!(
            field_of(&one(
                "o",
                "skill://a/SKILL.md",
                "zz",
                "skill://a/SKILL.md",
                MD
            )),
            "skill[0].binding"
        );
        assert_eq!(
            field_of(&one("o", "skill://a/SKILL.md", &b, "skill://b/x.md", MD)),
            "skill[0].file[0].uri"
        );
        assert_eq!(
            field_of(&one(
                "o",
                "skill://a/SKILL.md",
                &b,
                "skill://a/SKILL.md",
                "sha256:00"
            )),
            "skill[0].file[0].digest"
        );
        assert_eq!(
            field_of(&one("o", "skill://a/SKILL.md", &b, "skill://a/x.md", MD)),
            "skill[0].file"
        );
        let twice = format!(
            "{}{}",
            one("o", "skill://a/SKILL.md", &b, "skill://a/SKILL.md", MD),
            one("o", "skill://a/SKILL.md", &b, "skill://a/SKILL.md", MD)
                .replace("version = 1\n", "")
        );
        assert_eq!(field_of(&twice), "skill[1]");
    }

    #[test]
    fn an_empty_lock_round_trips() {
        let lock = LockFile::new();
        let again = LockFile::parse("x", &lock.to_toml()).expect("parses");
        assert_eq!(again.skills().count(), 0);
    }
}
