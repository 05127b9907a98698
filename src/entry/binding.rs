//! Content binding (R-A1) and the difference between two entries (R-A2).

use std::fmt;

use sha2::{Digest as _, Sha256};

use super::{ManifestFile, SkillEntry};
use crate::digest::Digest;
use crate::frontmatter::{FieldDiff, compare};
use crate::uri::FileUri;

/// A SHA-256 fingerprint of a skill's complete (URI, digest) set, in canonical URI order.
///
/// Reordering the array or respelling a URI (`%41` for `A`) leaves it unchanged; adding, removing
/// or changing any file changes it. It is full width (32 bytes), and domain-separated so it can
/// never equal a file digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding([u8; 32]);

const DOMAIN: &[u8] = b"skillcache/binding/v1\n";

impl Binding {
    /// `files` must be in canonical URI order with no duplicates (a [`super::Manifest`] is).
    pub(super) fn of(files: &[ManifestFile]) -> Binding {
        let mut h = Sha256::new();
        h.update(DOMAIN);
        for f in files {
            // Length-prefixed, so no two sets can produce the same byte stream.
            let uri = f.uri().canonical().as_bytes();
            h.update((uri.len() as u64).to_be_bytes());
            h.update(uri);
            h.update(f.digest().as_bytes());
        }
        Binding(h.finalize().into())
    }

    internal_pub! {
        /// Rebuilds a binding from its 32 bytes (as stored by the index).
        #[must_use]
        const fn from_bytes(bytes: [u8; 32]) -> Binding {
            Binding(bytes)
        }
    }

    internal_pub! {
        /// The 32 bytes.
        #[must_use]
        const fn as_bytes(&self) -> &[u8; 32] {
            &self.0
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&Digest::from_bytes(self.0).hex())
    }
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Binding({self})")
    }
}

/// A file whose digest (or size) changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangedFile {
    /// The file.
    pub uri: FileUri,
    /// Its digest before.
    pub old: Digest,
    /// Its digest now.
    pub new: Digest,
}

/// What changed between two entries of one skill, for a person to read (R-A2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryDiff {
    /// Files listed now and not before.
    pub added: Vec<FileUri>,
    /// Files listed before and not now.
    pub removed: Vec<FileUri>,
    /// Files listed in both with different digests.
    pub changed: Vec<ChangedFile>,
    /// Frontmatter keys that differ (the old entry on the "entry" side).
    pub frontmatter: Vec<FieldDiff>,
    /// Whether the skill went from a manifest to `"dynamic"` or back.
    pub dynamic_changed: bool,
}

impl EntryDiff {
    /// Whether the two entries are the same.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.frontmatter.is_empty()
            && !self.dynamic_changed
    }

    internal_pub! {
        /// Whether the file set changed, which is what revokes an approval (a host reads it
        /// as [`EntryInfo::revoked`](crate::EntryInfo::revoked)).
        #[must_use]
        fn files_changed(&self) -> bool {
            !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
                || self.dynamic_changed
        }
    }
}

impl fmt::Display for EntryDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no change");
        }
        let mut parts: Vec<String> = Vec::new();
        if self.dynamic_changed {
            parts.push("switched between a manifest and \"dynamic\"".into());
        }
        parts.extend(self.added.iter().map(|u| format!("added {u}")));
        parts.extend(self.removed.iter().map(|u| format!("removed {u}")));
        parts.extend(
            self.changed
                .iter()
                .map(|c| format!("changed {} ({} -> {})", c.uri, c.old, c.new)),
        );
        parts.extend(
            self.frontmatter
                .iter()
                .map(|d| format!("frontmatter {}", d.key)),
        );
        f.write_str(&parts.join("; "))
    }
}

pub(super) fn diff(old: &SkillEntry, new: &SkillEntry) -> EntryDiff {
    let mut out = EntryDiff {
        frontmatter: compare(old.frontmatter(), new.frontmatter()),
        ..EntryDiff::default()
    };
    match (old.manifest(), new.manifest()) {
        (Some(a), Some(b)) => {
            for f in b.files() {
                match a.file(f.uri()) {
                    None => out.added.push(f.uri().clone()),
                    Some(o) if o.digest() != f.digest() || o.size() != f.size() => {
                        out.changed.push(ChangedFile {
                            uri: f.uri().clone(),
                            old: o.digest(),
                            new: f.digest(),
                        });
                    }
                    Some(_) => {}
                }
            }
            out.removed = a
                .files()
                .iter()
                .filter(|f| b.file(f.uri()).is_none())
                .map(|f| f.uri().clone())
                .collect();
        }
        (None, None) => {}
        _ => out.dynamic_changed = true,
    }
    out
}
