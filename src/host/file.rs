//! `SkillFile`, what every read hands out: bytes with their origin (R-O4), what they were
//! checked against, and where they came from.

use crate::digest::Digest;
use crate::entry::ManifestFile;
use crate::origin::Origin;
use crate::uri::FileUri;
use crate::verify::VerifiedBytes;

/// Where a file's bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// The local cache (verified on this access).
    Cache,
    /// The server (verified as they arrived).
    Server,
    /// The shared tier of a fleet (feature `l2`), verified as they arrived, like the server's.
    L2,
}

impl Provenance {
    internal_pub! {
        /// `"cache"`, `"server"` or `"l2"`.
        #[must_use]
        fn as_str(self) -> &'static str {
            match self {
                Provenance::Cache => "cache",
                Provenance::Server => "server",
                Provenance::L2 => "l2",
            }
        }
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a file's bytes were checked against. A type, not a flag: a host that wants the digest
/// has to say what it does with a dynamic skill's file, which has none (R-V7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// The bytes matched the size and digest the held entry lists — and, for a `SKILL.md`, its
    /// frontmatter — on this access (R-V2, R-V6).
    Verified(Digest),
    /// A dynamic skill's file: its server publishes no digest, so there was nothing to check it
    /// against. Served only when the host accepts dynamic skills (R-V7); never cached.
    Unverified,
}

/// One file's bytes, always with their origin (R-O4) and what they were checked against.
#[derive(Debug, Clone)]
pub struct SkillFile {
    origin: Origin,
    uri: FileUri,
    verification: Verification,
    /// Shared with the memory tier: a hit copies nothing.
    bytes: bytes::Bytes,
    provenance: Provenance,
    retried: bool,
    stored: bool,
}

impl SkillFile {
    pub(super) fn listed(
        origin: &Origin,
        file: &ManifestFile,
        bytes: VerifiedBytes,
        provenance: Provenance,
        retried: bool,
        stored: bool,
    ) -> SkillFile {
        SkillFile {
            origin: origin.clone(),
            uri: file.uri().clone(),
            verification: Verification::Verified(bytes.digest()),
            bytes: bytes.into_shared(),
            provenance,
            retried,
            stored,
        }
    }

    /// A dynamic skill's file: nothing to check it against (R-V7), never stored.
    pub(super) fn dynamic(origin: &Origin, uri: &FileUri, bytes: Vec<u8>) -> SkillFile {
        SkillFile {
            origin: origin.clone(),
            uri: uri.clone(),
            verification: Verification::Unverified,
            bytes: bytes.into(),
            provenance: Provenance::Server,
            retried: false,
            stored: false,
        }
    }

    /// The origin the bytes came from: the host tags model context with it.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }
    /// The file's URI (the server's spelling from the held entry).
    #[must_use]
    pub fn uri(&self) -> &FileUri {
        &self.uri
    }
    /// What the bytes were checked against: the digest they matched, or nothing for a dynamic
    /// skill's file.
    #[must_use]
    pub fn verification(&self) -> Verification {
        self.verification
    }
    /// The bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// The bytes, without copying them (they may be shared with the cache's memory tier).
    #[must_use]
    pub fn into_bytes(self) -> bytes::Bytes {
        self.bytes
    }
    /// Cache, server or the shared tier.
    #[must_use]
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }
    /// Whether a cached copy failed and the file was fetched once more (R-V9).
    #[must_use]
    pub fn retried(&self) -> bool {
        self.retried
    }
    /// Whether the bytes are kept in the cache (false for dynamic files, and when storing failed).
    #[must_use]
    pub fn stored(&self) -> bool {
        self.stored
    }
}
