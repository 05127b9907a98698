//! The wire model: what a server sends, validated into values that cannot be invalid.
//!
//! Every field a server sends is untrusted. [`SkillEntry::from_json`] is the only way to build a
//! [`SkillEntry`]; it refuses an invalid entry as a whole with an error naming the field and the
//! rule (R-W1…R-W7), so nothing from a bad entry is ever cached or loaded.
//!
//! - `validate`: the rules of R-W1…R-W7.
//! - [`Limits`]: 512 files / 16 MiB, raised never lowered (R-W7).
//! - `CacheHints`: `ttlMs` and `cacheScope` with our defaults (R-W8).
//! - [`Binding`] and [`EntryDiff`]: content-bound approval (R-A1, R-A2).
//! - `wire`: `skills/list` pages, `skills/get` and the `Listing` that pages safely (R-W9).
//! - `contents`: picking a file's bytes out of a `resources/read` result (R-W9).

mod binding;
mod contents;
pub(crate) mod error;
mod hints;
pub(crate) mod info;
mod limits;
#[cfg(feature = "mcp")]
mod rmcp_skill;
mod validate;
mod wire;

pub use binding::{Binding, ChangedFile, EntryDiff};
internal_pub! { use contents::select_content; }
pub use hints::Scope;
internal_pub! { use hints::CacheHints; }
internal_pub! { use hints::MAX_TTL_MS; }
pub use limits::Limits;
pub use validate::Validation;
pub(crate) use validate::check_name;
internal_pub! {
    use wire::{ListPage, Listing, MAX_PAGES, check_result_type, parse_get_result, parse_list_result};
}

use serde_json::{Value, json};

use crate::digest::Digest;
use crate::frontmatter::Frontmatter;
use crate::uri::{FileUri, SkillUri};
use error::EntryError;

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    uri: FileUri,
    digest: Digest,
    size: u64,
}

impl ManifestFile {
    /// The file's URI (the server's spelling; compares by canonical form).
    #[must_use]
    pub fn uri(&self) -> &FileUri {
        &self.uri
    }
    /// The SHA-256 of its bytes.
    #[must_use]
    pub fn digest(&self) -> Digest {
        self.digest
    }
    /// Its length in bytes.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// A validated, complete manifest: every file once, the `SKILL.md` among them, all inside the
/// skill root, within the limits. Files are kept in canonical URI order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    files: Vec<ManifestFile>,
    total_bytes: u64,
    binding: Binding,
}

impl Manifest {
    /// The files, in canonical URI order.
    #[must_use]
    pub fn files(&self) -> &[ManifestFile] {
        &self.files
    }
    /// The sum of the declared sizes.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }
    internal_pub! {
        /// The content binding of the file set (R-A1).
        #[must_use]
        fn binding(&self) -> Binding {
            self.binding
        }
    }
    internal_pub! {
        /// The listed file with this URI (compared after percent-normalisation), if any.
        #[must_use]
        fn file(&self, uri: &FileUri) -> Option<&ManifestFile> {
            self.files
                .binary_search_by(|f| f.uri.canonical().cmp(uri.canonical()))
                .ok()
                .map(|i| &self.files[i])
        }
    }
}

internal_pub! {
    /// What a skill's `resources` says.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Resources {
        /// A complete manifest with digests.
        Manifest(Manifest),
        /// `"dynamic"`: no digests; content is unverifiable and cannot be content-bound (R-V7, R-A3).
        Dynamic,
    }
}

/// A validated skill entry. Once built, it is valid: there is no other constructor than
/// [`SkillEntry::from_json`].
///
/// ```
/// use skillcache::{Digest, SkillEntry, entry::Validation};
/// let md = b"---\nname: demo\ndescription: A demo.\n---\n";
/// let json = serde_json::json!({
///     "uri": "skill://demo/SKILL.md",
///     "frontmatter": {"name": "demo", "description": "A demo."},
///     "resources": [{"uri": "skill://demo/SKILL.md", "digest": Digest::of(md).to_string(), "size": md.len()}]
/// });
/// let entry = SkillEntry::from_json(&json, &Validation::default()).unwrap();
/// assert_eq!(entry.name(), "demo");
/// assert!(entry.binding().is_some());
/// ```
#[derive(Debug, Clone)]
pub struct SkillEntry {
    uri: SkillUri,
    frontmatter: Frontmatter,
    resources: Resources,
    /// What the cache that handed this entry out had seen of purges then; `None` for an entry
    /// the host validated itself. Not part of the entry's value (equality ignores it).
    noted: Option<Noted>,
}

/// The purge count of one index, noted on an entry the cache hands out before it asked for (or
/// read) the entry: a skill loaded from that entry after a purge of its origin keeps nothing
/// it fetches, however recently the cache asked its origin about another skill
/// (`Cache::purge_mark_for`; round 27 of review). Opaque outside the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Noted {
    /// Which index: the count of another root says nothing of this one.
    pub(crate) index: u64,
    /// Its purge count, read before the entry was asked for or read.
    pub(crate) purges: u64,
}

/// Two entries are equal when the server published the same thing: what the cache noted on
/// them when it handed them out is not part of it.
impl PartialEq for SkillEntry {
    fn eq(&self, other: &SkillEntry) -> bool {
        self.uri == other.uri
            && self.frontmatter == other.frontmatter
            && self.resources == other.resources
    }
}
impl Eq for SkillEntry {}

impl SkillEntry {
    /// Validates one `Skill` object from `skills/list` or `skills/get`.
    ///
    /// # Errors
    /// [`EntryError::Invalid`] naming the field and rule, or [`EntryError::LimitExceeded`] (R-W7).
    pub fn from_json(value: &Value, validation: &Validation) -> Result<SkillEntry, EntryError> {
        validate::entry(value, validation)
    }

    /// The URI of the skill's `SKILL.md`.
    #[must_use]
    pub fn uri(&self) -> &SkillUri {
        &self.uri
    }
    /// The frontmatter the server published, verbatim.
    #[must_use]
    pub fn frontmatter(&self) -> &Frontmatter {
        &self.frontmatter
    }
    /// `frontmatter.name` (validated; equals the last skill-path segment).
    #[must_use]
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    /// `frontmatter.description` (validated).
    #[must_use]
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    internal_pub! {
        /// The manifest, or `"dynamic"`.
        #[must_use]
        fn resources(&self) -> &Resources {
            &self.resources
        }
    }
    /// The manifest, unless the skill is dynamic.
    #[must_use]
    pub fn manifest(&self) -> Option<&Manifest> {
        match &self.resources {
            Resources::Manifest(m) => Some(m),
            Resources::Dynamic => None,
        }
    }
    /// Whether `resources` is `"dynamic"`.
    #[must_use]
    pub fn is_dynamic(&self) -> bool {
        matches!(self.resources, Resources::Dynamic)
    }
    /// The content binding (R-A1); `None` for a dynamic skill, which cannot be bound (R-A3).
    #[must_use]
    pub fn binding(&self) -> Option<Binding> {
        self.manifest().map(Manifest::binding)
    }
    /// The listed file with this URI, if any.
    #[must_use]
    pub fn file(&self, uri: &FileUri) -> Option<&ManifestFile> {
        self.manifest().and_then(|m| m.file(uri))
    }
    /// What the frontmatter's `allowed-tools` asks for, verbatim (R-A5: a request, never a grant).
    #[must_use]
    pub fn requested_tools(&self) -> Option<&Value> {
        self.frontmatter.get("allowed-tools")
    }

    /// What the cache noted when it handed this entry out ([`Noted`]).
    pub(crate) fn noted(&self) -> Option<Noted> {
        self.noted
    }

    /// This entry as handed out by a cache that had seen `noted`.
    pub(crate) fn noted_as(mut self, noted: Option<Noted>) -> SkillEntry {
        self.noted = noted;
        self
    }

    /// The entry in wire form (server spellings kept); [`SkillEntry::from_json`] accepts it back.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let resources = match &self.resources {
            Resources::Dynamic => json!("dynamic"),
            Resources::Manifest(m) => Value::Array(
                m.files
                    .iter()
                    .map(|f| json!({"uri": f.uri.as_str(), "digest": f.digest.to_string(), "size": f.size}))
                    .collect(),
            ),
        };
        json!({"uri": self.uri.as_str(), "frontmatter": self.frontmatter, "resources": resources})
    }

    /// [`SkillEntry::to_json`] as text, written straight from the entry (no intermediate
    /// `Value`, no copy of the frontmatter): the form the index stores and compares on every
    /// listing. The same text as `to_json().to_string()`, key for key (`serde_json`'s maps sort
    /// their keys, so the fields below are declared in that order; a test holds the two equal).
    pub(crate) fn to_json_text(&self) -> String {
        /// `"dynamic"`, or the files.
        #[derive(serde::Serialize)]
        #[serde(untagged)]
        enum ResourcesText<'a> {
            Dynamic(&'static str),
            Files(Vec<FileText<'a>>),
        }
        #[derive(serde::Serialize)]
        struct FileText<'a> {
            digest: Shown<'a>,
            size: u64,
            uri: &'a str,
        }
        /// A digest as its text, written through `Display` (no `String` per file).
        struct Shown<'a>(&'a Digest);
        impl serde::Serialize for Shown<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self.0)
            }
        }
        #[derive(serde::Serialize)]
        struct EntryText<'a> {
            frontmatter: &'a Frontmatter,
            resources: ResourcesText<'a>,
            uri: &'a str,
        }
        let resources = match &self.resources {
            Resources::Dynamic => ResourcesText::Dynamic("dynamic"),
            Resources::Manifest(m) => ResourcesText::Files(
                m.files
                    .iter()
                    .map(|f| FileText {
                        digest: Shown(&f.digest),
                        size: f.size,
                        uri: f.uri.as_str(),
                    })
                    .collect(),
            ),
        };
        serde_json::to_string(&EntryText {
            frontmatter: &self.frontmatter,
            resources,
            uri: self.uri.as_str(),
        })
        .expect("an entry's JSON has string keys only")
    }

    internal_pub! {
        /// What changed from `self` to `newer` (R-A2), for a person to read.
        #[must_use]
        fn diff(&self, newer: &SkillEntry) -> EntryDiff {
            binding::diff(self, newer)
        }
    }
}

#[cfg(test)]
mod text_tests {
    use super::{SkillEntry, Validation};

    /// The index compares the text of a listed entry with the stored one: the direct writer and
    /// the `Value` must give the same text, or every stored row would read as changed.
    #[test]
    fn the_entry_text_is_the_json_value_text_key_for_key() {
        let md = "---\nname: text\n---\n";
        let entries = [
            serde_json::json!({
                "uri": "skill://text/SKILL.md",
                "frontmatter": {
                    "name": "text", "description": "Quotes \" and \\ and \u{7f} and é and \u{1F600}, a tab\t.",
                    "metadata": {"z": [1, 2.5, null, true], "a": {"nested": "yes"}},
                    "allowed-tools": ["Read", "Bash(git *)"],
                },
                "resources": [
                    {"uri": "skill://text/SKILL.md", "digest": crate::digest::Digest::of(md.as_bytes()).to_string(), "size": md.len()},
                    {"uri": "skill://text/a%20b/%C3%A9.md", "digest": crate::digest::Digest::of(b"x").to_string(), "size": 1},
                ],
            }),
            serde_json::json!({
                "uri": "skill://live/SKILL.md",
                "frontmatter": {"name": "live", "description": "A dynamic skill."},
                "resources": "dynamic",
            }),
        ];
        for wire in entries {
            let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("valid");
            assert_eq!(entry.to_json_text(), entry.to_json().to_string());
        }
    }
}
