//! The YAML frontmatter of a `SKILL.md`: extraction, YAML 1.2 core schema → JSON, comparison.
//!
//! R-V6 says a loaded `SKILL.md`'s frontmatter must equal, field by field, the `frontmatter`
//! object of the entry it was loaded from. Both sides become JSON values, so the comparison is
//! exact and independent of YAML spelling.
//!
//! - [`extract`]: finding the `---` block (BOM skipped for parsing only, CRLF
//!   accepted, trailing blanks after the delimiters accepted).
//! - `yaml`: events from `yaml-rust2` resolved under the YAML 1.2 *core* schema by our own rules
//!   (`yes`/`on` and dates stay strings, `0x1F` is 31, `1_000` is a string); anchors, aliases,
//!   tags, duplicate keys, non-string keys, `.nan`/`.inf` and deep nesting fail closed. Work is
//!   bounded by [`MAX_BYTES`], [`MAX_DEPTH`] and [`MAX_NODES`] for any input.
//! - [`compare`]: the differing keys, numbers compared by value.
//!
//! ```
//! use skillcache::frontmatter;
//! let md = b"---\nname: demo\ndescription: A demo.\nversion: 1.0\n---\n# Demo\n";
//! let fm = frontmatter::parse(md).unwrap();
//! let entry = serde_json::json!({"name": "demo", "description": "A demo.", "version": 1});
//! assert!(frontmatter::compare(entry.as_object().unwrap(), &fm).is_empty());
//! ```

mod compare;
mod extract;
mod problem;
mod yaml;

pub use compare::{FieldDiff, compare};
internal_pub! {
    // The comparison's parts, for the frontmatter tests.
    use compare::{DiffKind, json_equal};
}
pub use extract::extract;
pub use problem::FrontmatterProblem;


/// A frontmatter rendered as a JSON object.
pub type Frontmatter = serde_json::Map<String, serde_json::Value>;

/// The largest frontmatter block parsed, in bytes. Real frontmatters are a few hundred bytes.
pub const MAX_BYTES: usize = 1024 * 1024;
/// The deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 64;
/// The most YAML nodes (scalars and collections) accepted.
pub const MAX_NODES: usize = 100_000;

/// Extracts and parses the frontmatter of a `SKILL.md` into a JSON object.
///
/// # Errors
/// A [`FrontmatterProblem`] saying why it cannot be read; every such case fails closed. It
/// converts into [`EntryError::Frontmatter`](crate::error::EntryError::Frontmatter) (and so into
/// [`Error`](crate::Error)) with `?`.
pub fn parse(skill_md: &[u8]) -> Result<Frontmatter, FrontmatterProblem> {
    let text = extract(skill_md)?;
    yaml::to_json(text)
}
