//! Why bytes failed verification: shared by the store (which refuses bytes that are not the ones
//! promised) and the cache (which verifies what it serves), so it lives below both.

use std::fmt;

use crate::frontmatter::{FieldDiff, FrontmatterProblem};

/// Why bytes failed verification (R-V2…R-V6).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The byte length differs from the entry's `size` (checked before hashing, R-V3).
    Size {
        /// The entry's `size`.
        expected: u64,
        /// The bytes seen (for a stream cut off early, `size + 1`).
        actual: u64,
    },
    /// The SHA-256 differs from the entry's `digest`.
    Digest {
        /// The entry's `digest`.
        expected: crate::Digest,
        /// The digest of the bytes.
        actual: crate::Digest,
    },
    /// The `SKILL.md` frontmatter differs from the entry's `frontmatter` (R-V6).
    Frontmatter {
        /// Each differing key.
        diffs: Vec<FieldDiff>,
    },
    /// The `SKILL.md` frontmatter could not be parsed, so it cannot match (R-V6).
    FrontmatterUnreadable {
        /// Why.
        problem: FrontmatterProblem,
    },
    /// The file is not listed in the held entry (R-V4); no request was sent.
    Unlisted,
    /// The cached copy is not a regular file (a symlink, a folder, a device).
    NotARegularFile,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Size { expected, actual } => {
                write!(f, "size is {actual} bytes, entry says {expected}")
            }
            Mismatch::Digest { expected, actual } => {
                write!(f, "digest is {actual}, entry says {expected}")
            }
            Mismatch::Frontmatter { diffs } => {
                f.write_str("frontmatter differs from the entry: ")?;
                for (i, d) in diffs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
            Mismatch::FrontmatterUnreadable { problem } => {
                write!(f, "frontmatter cannot be read: {problem}")
            }
            Mismatch::Unlisted => f.write_str("the file is not listed in the held entry"),
            Mismatch::NotARegularFile => f.write_str("the cached copy is not a regular file"),
        }
    }
}
