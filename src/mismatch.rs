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
                // The file chooses how many keys differ: the first few are named, the rest
                // counted (every one is in `diffs`, as data).
                const NAMED: usize = 8;
                f.write_str("frontmatter differs from the entry: ")?;
                for (i, d) in diffs.iter().take(NAMED).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                if diffs.len() > NAMED {
                    write!(f, " and {} more", diffs.len() - NAMED)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontmatter::DiffKind;

    #[test]
    fn u1_a_frontmatter_mismatch_names_a_few_keys_cut_and_counts_the_rest() {
        // The file chooses its keys: 3,000 of them, one of 200,000 characters.
        let mut diffs: Vec<FieldDiff> = (0..3_000)
            .map(|i| FieldDiff {
                key: format!("k{i:04}"),
                kind: DiffKind::ExtraInFile,
            })
            .collect();
        diffs[0].key = "x".repeat(200_000);
        let shown = Mismatch::Frontmatter { diffs }.to_string();
        assert!(shown.len() < 1_000, "{} bytes", shown.len());
        assert!(
            shown.contains("… (199744 more characters) (not in the entry)"),
            "{shown}"
        );
        assert!(shown.ends_with(" and 2992 more"), "{shown}");
        let duplicate = FrontmatterProblem::DuplicateKey {
            key: "d".repeat(300_000),
        };
        assert!(duplicate.to_string().len() < 400, "{duplicate}");
    }
}
