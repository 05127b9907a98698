//! Skill and file URIs: parsing, percent-normalisation, containment, relative references.
//!
//! Any scheme is accepted (R-O5: a scheme proves nothing); the authority keeps its case and is
//! never resolved over the network (R-W5). Each path segment is percent-decoded exactly once and
//! re-encoded canonically, so two spellings of one URI (`Q&A.md`, `Q%26A.md`) compare equal while
//! the server's own spelling is kept for requests (R-W4, R-W9).
//!
//! - `percent`: decoding once and the canonical encoding.
//! - `parse`: an absolute hierarchical URI into checked components.
//! - `reference`: resolving references found inside a skill against its root (R-V5).

pub(crate) mod error;
mod parse;
mod percent;
mod reference;

use std::fmt;
use std::hash::{Hash, Hasher};

pub use error::UriError;

/// The longest URI or file reference taken, in bytes (8 KiB, what common HTTP servers accept
/// in a request line). A longer one is refused ([`Rule::TooLong`](crate::error::Rule)) before it
/// is parsed, sent to a server or stored: a server's, a host's or a model's choice alike.
pub const MAX_URI_BYTES: usize = 8 * 1024;

use crate::rule::Rule;

/// The URI of one file: the server's spelling and the canonical form it compares by.
///
/// ```
/// use skillcache::FileUri;
/// let a = FileUri::parse("skill://docs/refs/Q&A.md").unwrap();
/// let b = FileUri::parse("skill://docs/refs/Q%26A.md").unwrap();
/// assert_eq!(a, b);
/// assert_eq!(b.as_str(), "skill://docs/refs/Q%26A.md"); // the server's spelling is kept
/// assert!(FileUri::parse("skill://docs/a/../b.md").is_err());
/// ```
#[derive(Clone)]
pub struct FileUri {
    raw: String,
    canonical: String,
}

impl FileUri {
    /// Parses an absolute hierarchical URI with the segment rules of R-W4.
    ///
    /// # Errors
    /// [`UriError`] naming the rule.
    pub fn parse(uri: &str) -> Result<FileUri, UriError> {
        let parts = parse::absolute(uri).map_err(|rule| invalid(uri, rule))?;
        Ok(FileUri {
            raw: uri.to_owned(),
            canonical: parts.canonical,
        })
    }

    /// The URI as the server spelled it; requests to the server use this form.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    internal_pub! {
        /// The percent-normalised form that equality, hashing and storage keys use.
        #[must_use]
        fn canonical(&self) -> &str {
            &self.canonical
        }
    }

    pub(crate) fn from_canonical(canonical: String) -> FileUri {
        FileUri {
            raw: canonical.clone(),
            canonical,
        }
    }
}

impl PartialEq for FileUri {
    fn eq(&self, other: &Self) -> bool {
        self.canonical == other.canonical
    }
}
impl Eq for FileUri {}
impl Hash for FileUri {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.canonical.hash(state);
    }
}
impl PartialOrd for FileUri {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for FileUri {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.canonical.cmp(&other.canonical)
    }
}
// Display-safe (R-E5): a URI is the server's text, and may hold a bidi override or an escape
// code (only C0 controls are refused). And cut after 256 characters, with how many more there
// were: a server may choose a URI of any length, and every message naming it would carry it
// whole. `as_str` is the URI as given, for data.
impl fmt::Display for FileUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&crate::display::display_cut_bare(&self.raw), f)
    }
}
impl fmt::Debug for FileUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileUri({:?})", self.raw)
    }
}

/// The URI of a skill's `SKILL.md` (R-W5): a [`FileUri`] whose last segment is `SKILL.md`, with
/// at least one skill-path segment before it (the authority counts as one).
///
/// ```
/// use skillcache::SkillUri;
/// let s = SkillUri::parse("skill://acme/billing/refunds/SKILL.md").unwrap();
/// assert_eq!(s.root(), "skill://acme/billing/refunds");
/// assert_eq!(s.name_segment(), "refunds");
/// let r = s.resolve("references/GUIDE.md#intro").unwrap();
/// assert_eq!(r.as_str(), "skill://acme/billing/refunds/references/GUIDE.md");
/// assert!(s.resolve("../other/x.md").is_err());
/// assert!(s.resolve("file:///etc/passwd").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SkillUri {
    file: FileUri,
    /// Byte length of the canonical root (`canonical` minus `/SKILL.md`).
    root_len: usize,
    /// The last skill-path segment, decoded (lossily if not UTF-8: then it matches no name).
    name: String,
}

internal_pub! {
    /// The last segment of every skill URI.
    const SKILL_MD: &str = "SKILL.md";
}

impl SkillUri {
    /// Parses a skill URI.
    ///
    /// # Errors
    /// [`UriError`] naming the rule.
    pub fn parse(uri: &str) -> Result<SkillUri, UriError> {
        let parts = parse::absolute(uri).map_err(|rule| invalid(uri, rule))?;
        let Some((last, before)) = parts.segments.split_last() else {
            return Err(invalid(uri, Rule::NotSkillMd));
        };
        if last.as_slice() != SKILL_MD.as_bytes() {
            return Err(invalid(uri, Rule::NotSkillMd));
        }
        let name_bytes = match before.last() {
            Some(seg) => seg.as_slice(),
            None if !parts.authority.is_empty() => parts.authority.as_slice(),
            None => return Err(invalid(uri, Rule::NotSkillMd)),
        };
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        let root_len = parts.canonical.len() - SKILL_MD.len() - 1;
        Ok(SkillUri {
            file: FileUri {
                raw: uri.to_owned(),
                canonical: parts.canonical,
            },
            root_len,
            name,
        })
    }

    /// The URI as the server spelled it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.file.as_str()
    }

    internal_pub! {
        /// The canonical form.
        #[must_use]
        fn canonical(&self) -> &str {
            self.file.canonical()
        }
    }

    /// The `SKILL.md` as a file URI.
    #[must_use]
    pub fn file(&self) -> &FileUri {
        &self.file
    }

    internal_pub! {
        /// The canonical skill root: the `SKILL.md` URI without `/SKILL.md`, no trailing slash.
        #[must_use]
        fn root(&self) -> &str {
            &self.file.canonical[..self.root_len]
        }
    }

    internal_pub! {
        /// The last segment of the skill path, which must equal `frontmatter.name` (R-W5).
        #[must_use]
        fn name_segment(&self) -> &str {
            &self.name
        }
    }

    internal_pub! {
        /// Whether `file` is this skill's `SKILL.md` or lies inside its root (R-W4): same scheme
        /// and authority, and the root's segments followed by at least one more.
        #[must_use]
        fn contains(&self, file: &FileUri) -> bool {
            // Canonical segments and authorities never contain '/', so a string prefix followed by
            // '/' is exactly a segment-wise prefix.
            let root = self.root();
            file.canonical.len() > root.len() + 1
                && file.canonical.starts_with(root)
                && file.canonical.as_bytes()[root.len()] == b'/'
        }
    }

    /// Resolves a reference found in this skill's content against the skill root (R-V5).
    ///
    /// The fragment is dropped. `../` that climbs above the root, network-path (`//host/x`) and
    /// absolute-path (`/x`) references, and absolute URIs outside the root are refused.
    ///
    /// # Errors
    /// [`UriError`] naming the rule.
    pub fn resolve(&self, reference: &str) -> Result<FileUri, UriError> {
        reference::resolve(self, reference).map_err(|rule| invalid(reference, rule))
    }
}

// Display-safe and cut, as `FileUri`'s (R-E5).
impl fmt::Display for SkillUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&crate::display::display_cut_bare(self.as_str()), f)
    }
}
/// The URI as the server spelled it, uncut (its `Display` is cut for a person's message).
impl serde::Serialize for SkillUri {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Debug for SkillUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SkillUri({:?})", self.as_str())
    }
}

/// The canonical encoding of one decoded path segment (for building URIs from file names).
pub(crate) fn encode_segment(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    percent::encode_canonical(bytes, &mut out);
    out
}

fn invalid(uri: &str, rule: Rule) -> UriError {
    UriError {
        uri: uri.to_owned(),
        rule,
    }
}

#[cfg(test)]
mod tests;
