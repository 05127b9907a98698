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
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::digest::Digest;
use crate::entry::{Binding, ChangedFile, EntryDiff, SkillEntry};
use crate::error::{ConfigError, Declined, Error, FileProblem};
use crate::hostfile::{self, Format, Refused};
use crate::origin::Origin;
use crate::uri::{FileUri, SkillUri};

/// The format version written and read.
const VERSION: u32 = 1;

const HEADER: &str = "# skills.lock: skills pinned by `skillcache lock`. A skill whose files differ from what is\n# pinned here is refused by `load --locked` / `read --locked`. Re-lock to accept a change.\n\n";

/// What the TOML parser can say about a text that is not TOML, in its own fixed words: its
/// message is shown only if it starts with one of these, so no text of the file can reach an
/// error (R-E4) — the parser's full message quotes the offending line.
const TOML_SYNTAX: &[&str] = &[
    "duplicate key",
    "carriage return must be followed by newline",
    "missing opening quote",
    "missing comma between array elements",
    "integers with a radix cannot be signed",
    "radix must be lowercase",
    "missing assignment between key-value pairs",
    "unexpected leading zero",
    "unclosed array table",
    "missing key for inline table element",
    "missing inline table opening",
    "missing escaped value",
    "missing array opening",
    "invalid unquoted key",
    "cannot recurse further; max recursion depth met",
    "unquoted keys cannot be empty",
    "unexpected sign",
    "unexpected key or value",
    "unexpected content between comment and newline",
    "unexpected content",
    "unexpected `=` in array",
    "unclosed table",
    "unclosed inline table",
    "unclosed array",
    "too few unicode value digits",
    "string values must be quoted",
    "redundant numeric sign",
    "redundant integer number prefix",
    "recursion limit",
    "missing value for key",
    "missing value",
    "missing table open",
    "missing comment start",
    "missing comma between key-value pairs",
    "keys cannot be multi-line literal strings",
    "keys cannot be multi-line basic strings",
    "key with no value",
    "invalid value",
    "invalid key-value pair",
    "invalid inline table element",
    "invalid comment character",
    "extra comma in inline table",
    "extra comma in array",
    "extra assignment between key-value pairs",
    "extra `=`",
    "`_` may only go between digits",
];

impl LockFile {
    internal_pub! {
        /// [`TOML_SYNTAX`]: every syntax message a lock file's refusal can show, for the fuzz
        /// oracle that checks a refusal quotes nothing of the file (R-E4).
        #[must_use]
        fn syntax_messages() -> &'static [&'static str] {
            TOML_SYNTAX
        }
    }
}

/// The fixed words for the TOML parser's error `e` (see [`TOML_SYNTAX`]).
fn toml_syntax(e: &toml::de::Error) -> &'static str {
    let message = e.message();
    TOML_SYNTAX
        .iter()
        .find(|known| {
            message
                .strip_prefix(**known)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(','))
        })
        .copied()
        .unwrap_or("is not valid TOML here")
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
    /// It must be a regular file (a link is followed only to one); it is read bounded in bytes
    /// and in structure before it is parsed; a refusal names the line, the column and the key,
    /// and never quotes the file (R-E4).
    ///
    /// # Errors
    /// [`StoreError::Io`](crate::error::StoreError::Io) if it cannot be read; [`ConfigError::LockFile`](crate::error::ConfigError::LockFile) naming the field.
    pub fn read(path: impl AsRef<Path>) -> Result<LockFile, Error> {
        let path = path.as_ref();
        match hostfile::read(path, Format::Toml, "read the lock file")? {
            Ok(text) => LockFile::parse(path, &text),
            Err(Refused { position, problem }) => Err(Error::Config(ConfigError::LockFile {
                path: path.to_owned(),
                field: String::new(),
                position,
                problem,
            })),
        }
    }

    internal_pub! {
        /// Checks `text`, the contents of the lock file at `path` (named in errors).
        ///
        /// # Errors
        /// [`ConfigError::LockFile`](crate::error::ConfigError::LockFile) naming the field: TOML that does not parse, an unknown
        /// version or key, an invalid origin, URI or digest, a file outside its skill, a skill
        /// twice.
        fn parse(path: impl AsRef<Path>, text: &str) -> Result<LockFile, Error> {
            let path = path.as_ref();
            let doc = DeTable::parse(text).map_err(|e| {
                Pins { path, text }.fail(
                    String::new(),
                    e.span(),
                    FileProblem::Syntax {
                        message: toml_syntax(&e),
                    },
                )
            })?;
            Pins { path, text }.lock(&doc)
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

    /// Drops the pin of (`origin`, `uri`) and returns it; `None` if the lock held none. For a
    /// lock refreshed from a server that no longer publishes the skill.
    pub fn remove(&mut self, origin: &Origin, uri: &SkillUri) -> Option<LockedSkill> {
        self.skills
            .remove(&(origin.clone(), uri.canonical().to_owned()))
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
            return Err(Error::Config(ConfigError::LockFile {
                path: self.path.clone().unwrap_or_default(),
                field: format!("binding of {} (origin {origin})", entry.uri()),
                position: None,
                problem: FileProblem::Invalid {
                    why: "does not match the skill's pinned files; lock the skill again".into(),
                },
            }));
        }
        Ok(())
    }

    internal_pub! {
        /// The lock as TOML, in a stable order: by origin, then skill URI, then file URI. The
        /// text is written here, not by a serializer, so it cannot drift, and every string is
        /// a basic string whose hidden characters (R-E5) are `\u` escapes: a reviewer reading
        /// the lock sees every character of a URI, and the value read back is unchanged.
        #[must_use]
        fn to_toml(&self) -> String {
            let mut out = String::from(HEADER);
            let _ = writeln!(out, "version = {VERSION}");
            for s in self.skills.values() {
                out.push_str("\n[[skill]]\norigin = ");
                basic_string(&mut out, s.origin.as_str());
                out.push_str("\nuri = ");
                basic_string(&mut out, s.uri.as_str());
                let _ = write!(out, "\nbinding = \"{}\"\n", s.binding);
                for (uri, digest, size) in s.files() {
                    out.push_str("\n[[skill.file]]\nuri = ");
                    basic_string(&mut out, uri.as_str());
                    let _ = write!(out, "\ndigest = \"{digest}\"\nsize = {size}\n");
                }
            }
            out
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

/// `text` as a TOML basic string: `"` and `\\` escaped, and every character that would be
/// hidden from a reader (R-E5: controls, bidi, zero-width, …) as a `\\u`/`\\U` escape.
fn basic_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if crate::display::hidden(c).is_some() => {
                let u = u32::from(c);
                let _ = if u <= 0xFFFF {
                    write!(out, "\\u{u:04X}")
                } else {
                    write!(out, "\\U{u:08X}")
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A lock file's text being checked: the path every error names and the text its positions
/// are found in.
#[derive(Clone, Copy)]
struct Pins<'a> {
    path: &'a Path,
    text: &'a str,
}

/// A TOML table as parsed, with the spans of its keys and values.
type Table<'i> = DeTable<'i>;

impl Pins<'_> {
    fn fail(self, field: String, span: Option<Range<usize>>, problem: FileProblem) -> Error {
        Error::Config(ConfigError::LockFile {
            path: self.path.to_owned(),
            field,
            position: span.map(|s| hostfile::position(self.text, s.start)),
            problem,
        })
    }

    fn invalid(self, field: String, span: Range<usize>, why: impl Into<String>) -> Error {
        self.fail(field, Some(span), FileProblem::Invalid { why: why.into() })
    }

    /// Refuses a key of `table` that is not one of `known`: a hand edit or a newer format this
    /// skillcache would silently ignore. The key itself is not quoted (R-E4); its position is.
    fn only(self, at: &str, table: &Table<'_>, known: &[&str]) -> Result<(), Error> {
        match table
            .iter()
            .find(|(k, _)| !known.contains(&k.get_ref().as_ref()))
        {
            Some((k, _)) => Err(self.invalid(
                at.to_owned(),
                k.span(),
                format!(
                    "has a key a lock file does not have here (it has {})",
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The value of `key` in `table` (at `at`, spanning `span`), which must be there.
    fn get<'t, 'i>(
        self,
        table: &'t Table<'i>,
        at: &str,
        span: &Range<usize>,
        key: &str,
    ) -> Result<&'t Spanned<DeValue<'i>>, Error> {
        table
            .get(key)
            .ok_or_else(|| self.fail(join(at, key), Some(span.clone()), FileProblem::Missing))
    }

    fn string<'t>(
        self,
        table: &'t Table<'_>,
        at: &str,
        span: &Range<usize>,
        key: &str,
    ) -> Result<(&'t str, Range<usize>), Error> {
        let value = self.get(table, at, span, key)?;
        value
            .get_ref()
            .as_str()
            .map(|s| (s, value.span()))
            .ok_or_else(|| {
                self.fail(
                    join(at, key),
                    Some(value.span()),
                    FileProblem::WrongType {
                        expected: "a string",
                    },
                )
            })
    }

    fn integer(
        self,
        table: &Table<'_>,
        at: &str,
        span: &Range<usize>,
        key: &str,
    ) -> Result<u64, Error> {
        let value = self.get(table, at, span, key)?;
        let wrong = || {
            self.fail(
                join(at, key),
                Some(value.span()),
                FileProblem::WrongType {
                    expected: "an integer from 0 to 2^64-1",
                },
            )
        };
        let int = value.get_ref().as_integer().ok_or_else(wrong)?;
        u64::from_str_radix(int.as_str(), int.radix()).map_err(|_| wrong())
    }

    /// The tables of the array at `key` (`[[key]]`), if any.
    fn tables<'t, 'i>(
        self,
        table: &'t Table<'i>,
        at: &str,
        key: &str,
    ) -> Result<Vec<(&'t Table<'i>, Range<usize>)>, Error> {
        let Some(value) = table.get(key) else {
            return Ok(Vec::new());
        };
        let wrong = |span| {
            self.fail(
                join(at, key),
                Some(span),
                FileProblem::WrongType {
                    expected: "an array of tables",
                },
            )
        };
        let list = value
            .get_ref()
            .as_array()
            .ok_or_else(|| wrong(value.span()))?;
        list.iter()
            .map(|v| {
                v.get_ref()
                    .as_table()
                    .map(|t| (t, v.span()))
                    .ok_or_else(|| wrong(v.span()))
            })
            .collect()
    }

    /// The lock `doc` holds, every value checked.
    fn lock(self, doc: &Spanned<Table<'_>>) -> Result<LockFile, Error> {
        let top = doc.get_ref();
        let whole = doc.span();
        self.only("", top, &["version", "skill"])?;
        let version = self.integer(top, "", &whole, "version")?;
        if version != u64::from(VERSION) {
            let span = top.get("version").map_or(whole.clone(), Spanned::span);
            return Err(self.invalid(
                "version".into(),
                span,
                format!("is not a version this skillcache reads ({VERSION})"),
            ));
        }
        let mut lock = LockFile {
            path: Some(self.path.to_owned()),
            skills: BTreeMap::new(),
        };
        for (i, (raw, span)) in self.tables(top, "", "skill")?.into_iter().enumerate() {
            let at = format!("skill[{i}]");
            let skill = self.skill(&at, raw, &span)?;
            let key = (skill.origin.clone(), skill.uri.canonical().to_owned());
            if lock.skills.insert(key, skill).is_some() {
                return Err(self.invalid(
                    at,
                    span,
                    "locks a skill of an origin already locked above",
                ));
            }
        }
        Ok(lock)
    }

    /// The pin `raw` (at `at`, spanning `span`): its origin, URI, binding and every file.
    fn skill(self, at: &str, raw: &Table<'_>, span: &Range<usize>) -> Result<LockedSkill, Error> {
        self.only(at, raw, &["origin", "uri", "binding", "file"])?;
        let (text, origin_span) = self.string(raw, at, span, "origin")?;
        // The problem alone: `Origin::new`'s message quotes the label (R-E4).
        let origin = Origin::new(text).map_err(|_| {
            let why = crate::origin::label_problem(text).unwrap_or_default();
            self.invalid(join(at, "origin"), origin_span, why)
        })?;
        let (text, uri_span) = self.string(raw, at, span, "uri")?;
        // The URI is not quoted: a refused one is shown by its position (R-E4).
        let uri = SkillUri::parse(text)
            .map_err(|e| self.invalid(join(at, "uri"), uri_span, uri_rule(&e.rule)))?;
        let (text, binding_span) = self.string(raw, at, span, "binding")?;
        let binding = format!("sha256:{text}")
            .parse::<Digest>()
            .map(|d| Binding::from_bytes(*d.as_bytes()))
            .map_err(|_| {
                self.invalid(
                    join(at, "binding"),
                    binding_span,
                    "is not 64 lowercase hex digits",
                )
            })?;
        let mut files = BTreeMap::new();
        for (j, (f, fspan)) in self.tables(raw, at, "file")?.into_iter().enumerate() {
            let at = format!("{at}.file[{j}]");
            let (file, digest, size, file_span) = self.file(&at, f, &fspan, &uri)?;
            let key = file.canonical().to_owned();
            if files.insert(key, (file, digest, size)).is_some() {
                return Err(self.invalid(join(&at, "uri"), file_span, "is listed twice"));
            }
        }
        if !files.contains_key(uri.file().canonical()) {
            return Err(self.invalid(
                join(at, "file"),
                span.clone(),
                "does not list the skill's own SKILL.md",
            ));
        }
        Ok(LockedSkill {
            origin,
            uri,
            binding,
            files,
        })
    }

    /// One file `f` of the pin of `uri`: its URI (inside the skill), digest and size, and the
    /// span of its URI.
    fn file(
        self,
        at: &str,
        f: &Table<'_>,
        fspan: &Range<usize>,
        uri: &SkillUri,
    ) -> Result<(FileUri, Digest, u64, Range<usize>), Error> {
        self.only(at, f, &["uri", "digest", "size"])?;
        let (text, file_span) = self.string(f, at, fspan, "uri")?;
        let file = FileUri::parse(text)
            .map_err(|e| self.invalid(join(at, "uri"), file_span.clone(), uri_rule(&e.rule)))?;
        if !uri.contains(&file) {
            return Err(self.invalid(
                join(at, "uri"),
                file_span,
                "is not inside the skill of this pin",
            ));
        }
        let (text, digest_span) = self.string(f, at, fspan, "digest")?;
        let digest = text.parse::<Digest>().map_err(|e| {
            let rule = match e {
                crate::error::EntryError::Digest { rule, .. } => rule.to_string(),
                _ => "is not a digest".into(),
            };
            self.invalid(join(at, "digest"), digest_span, rule)
        })?;
        let size = self.integer(f, at, fspan, "size")?;
        Ok((file, digest, size, file_span))
    }
}

/// The rule a lock's URI broke, without the segment it quotes (R-E4: the position names it).
fn uri_rule(rule: &crate::rule::Rule) -> String {
    match rule {
        crate::rule::Rule::Segment { why, .. } => format!("has a path segment that {why}"),
        other => other.to_string(),
    }
}

/// `at.key`, or `key` at the top.
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
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
        assert_eq!(field_of("version = \"1\"\n"), "version");
        assert_eq!(field_of("version = -1\n"), "version");
        assert_eq!(field_of("version = 1\nskill = 3\n"), "skill");
        assert_eq!(field_of("version = 1\n[[skill]]\nextra = 1\n"), "skill[0]");
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
    fn e4_a_pinned_file_costs_about_thirty_tokens_of_the_structure_bound() {
        use std::fmt::Write as _;
        // The bound's arithmetic (hostfile::Format::max_weight): what one pin weighs.
        let one = |n: usize| {
            let mut text = format!(
                "version = 1\n[[skill]]\norigin = \"docs\"\nuri = \"skill://notes/SKILL.md\"\nbinding = \"{}\"\n",
                "ab".repeat(32)
            );
            for i in 0..n {
                let _ = write!(
                    text,
                    "\n[[skill.file]]\nuri = \"skill://notes/templates/file-{i}.md\"\ndigest = \"{MD}\"\nsize = 1234\n"
                );
            }
            let mut t = crate::hostfile::TomlTokens::default();
            assert!(!t.feed(text.as_bytes(), u64::MAX));
            t
        };
        let per_file = one(101).count() - one(100).count();
        assert!(
            (25..=35).contains(&per_file),
            "{per_file} tokens a pinned file"
        );
    }

    #[test]
    fn an_empty_lock_round_trips() {
        let lock = LockFile::new();
        let again = LockFile::parse("x", &lock.to_toml()).expect("parses");
        assert_eq!(again.skills().count(), 0);
    }
}
