//! `LoadedSkill`, the acting window (R-V4), and `SkillFile`, what every read returns (R-O4).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::loading::{Admit, Inner};
use crate::digest::{Digest, VerifiedBytes};
use crate::entry::{ManifestFile, SkillEntry, select_content};
use crate::error::{Error, Limit, Mismatch};
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::uri::FileUri;

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
    /// `"cache"`, `"server"` or `"l2"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Cache => "cache",
            Provenance::Server => "server",
            Provenance::L2 => "l2",
        }
    }
}

/// One file's bytes, always with their origin (R-O4).
#[derive(Debug, Clone)]
pub struct SkillFile {
    origin: Origin,
    uri: FileUri,
    digest: Option<Digest>,
    /// Shared with the memory tier: a hit copies nothing.
    bytes: bytes::Bytes,
    verified: bool,
    provenance: Provenance,
    pub(super) retried: bool,
    pub(super) stored: bool,
}

impl SkillFile {
    pub(super) fn listed(
        origin: &Origin,
        file: &ManifestFile,
        bytes: VerifiedBytes,
        provenance: Provenance,
        retried: bool,
    ) -> SkillFile {
        SkillFile {
            origin: origin.clone(),
            uri: file.uri().clone(),
            digest: Some(bytes.digest()),
            bytes: bytes.into_shared(),
            verified: true,
            provenance,
            retried,
            stored: provenance == Provenance::Cache,
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
    /// The digest the bytes matched; `None` for a dynamic skill's file.
    #[must_use]
    pub fn digest(&self) -> Option<Digest> {
        self.digest
    }
    /// The bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// Whether the bytes were verified against a manifest (false only for dynamic skills, R-V7).
    #[must_use]
    pub fn verified(&self) -> bool {
        self.verified
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

/// A loaded skill: the acting window (R-V4). It holds the entry it was loaded from and its
/// origin's source; every read through it is restricted to that entry's files and goes to that
/// source only (R-O6). Dropping it ends the window.
pub struct LoadedSkill {
    inner: Arc<Inner>,
    origin: Origin,
    source: Arc<dyn SkillSource>,
    entry: SkillEntry,
    skill_md: Option<SkillFile>,
    /// What the approval that admitted this load granted (R-A5); `None` without one.
    granted_tools: Option<Value>,
    /// Bytes received for a dynamic skill, against the total-size limit (R-V7).
    received: AtomicU64,
    /// The shared tier, only for a public entry (issue 14): decided once, at load.
    shared: Option<super::l2::Shared>,
}

impl std::fmt::Debug for LoadedSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSkill")
            .field("origin", &self.origin)
            .field("uri", self.entry.uri())
            .finish_non_exhaustive()
    }
}

impl LoadedSkill {
    pub(super) fn new(
        inner: Arc<Inner>,
        origin: Origin,
        source: Arc<dyn SkillSource>,
        entry: SkillEntry,
        granted_tools: Option<Value>,
        shared: Option<super::l2::Shared>,
    ) -> LoadedSkill {
        LoadedSkill {
            inner,
            origin,
            source,
            entry,
            skill_md: None,
            granted_tools,
            received: AtomicU64::new(0),
            shared,
        }
    }

    pub(super) fn with_skill_md(mut self, file: SkillFile) -> LoadedSkill {
        self.skill_md = Some(file);
        self
    }

    /// The origin.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The held entry.
    #[must_use]
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The verified `SKILL.md` (unverified for a dynamic skill).
    ///
    /// # Panics
    /// Never: a `LoadedSkill` is only handed out with its `SKILL.md`.
    #[must_use]
    pub fn skill_md(&self) -> &SkillFile {
        self.skill_md
            .as_ref()
            .expect("a LoadedSkill is only built with its SKILL.md")
    }

    /// What the frontmatter's `allowed-tools` *requests* (R-A5). It is never applied by the
    /// cache; a host may grant it only explicitly, with the approval.
    #[must_use]
    pub fn requested_tools(&self) -> Option<&Value> {
        self.entry.requested_tools()
    }

    /// What the principal *granted* of the requested tools when approving this skill as it is
    /// now (R-A5): the only permissions a host should apply. `None` when nothing was granted, and
    /// always under [`ApprovalPolicy::NotRequired`](super::ApprovalPolicy::NotRequired). A grant
    /// belongs to the approved skill alone: a skill nested inside it carries its own.
    #[must_use]
    pub fn granted_tools(&self) -> Option<&Value> {
        self.granted_tools.as_ref()
    }

    /// The files this window may read: the held entry's manifest (empty for a dynamic skill).
    #[must_use]
    pub fn files(&self) -> &[ManifestFile] {
        self.entry.manifest().map_or(&[], |m| m.files())
    }

    /// Reads a file of the skill: `reference` is resolved against the skill root (R-V5) — a
    /// relative path or an absolute URI inside the root — then must be listed in the held entry
    /// (R-V4: an unlisted file is a verification failure and *no request is sent*), then goes
    /// through the verified path.
    ///
    /// # Errors
    /// [`Error::InvalidUri`] for a reference that leaves the skill, [`Error::Verification`], and
    /// the errors of the verified path.
    pub async fn read(&self, reference: &str) -> Result<SkillFile, Error> {
        let uri = self.entry.uri().resolve(reference)?;
        self.read_file(&uri).await
    }

    /// Every file of the held entry, in manifest order: the cached ones verified in parallel on
    /// every core (one blocking hop), the rest fetched through the verified path — a cached copy
    /// that failed is fetched exactly once more (R-V9). A dynamic skill has no list to read.
    ///
    /// # Errors
    /// The first error of any file; no partial result is returned.
    pub async fn read_all(&self) -> Result<Vec<SkillFile>, Error> {
        let files: Vec<ManifestFile> = self.files().to_vec();
        let (origin, batch) = (self.origin.clone(), files.clone());
        let cached =
            super::loading::blocking(&self.inner.core, move |c| Ok(c.read_files(&origin, &batch)))
                .await?;
        let mut out = Vec::with_capacity(files.len());
        for (file, read) in files.iter().zip(cached) {
            // A miss is looked up (and counted, R-P4) again by `fetch_listed`, so only hits and
            // quarantines are counted here.
            out.push(match read? {
                super::CachedRead::Hit(v) => self.inner.serve_hit(&self.origin, file, v),
                super::CachedRead::Miss => {
                    self.inner
                        .fetch_listed(
                            &self.origin,
                            self.source.as_ref(),
                            file,
                            Admit::Bytes,
                            self.shared.as_ref(),
                        )
                        .await?
                }
                super::CachedRead::Failed(mismatch) => {
                    self.inner.note_quarantine(&self.origin, file, &mismatch);
                    let mut f = self
                        .inner
                        .fetch_listed(
                            &self.origin,
                            self.source.as_ref(),
                            file,
                            Admit::Bytes,
                            self.shared.as_ref(),
                        )
                        .await?;
                    f.retried = true;
                    f
                }
            });
        }
        Ok(out)
    }

    /// The skill's own `SKILL.md`, admitted only with the frontmatter the entry declares (R-H10).
    pub(super) async fn read_skill_md(&self) -> Result<SkillFile, Error> {
        let entry = self.entry.clone();
        self.read_file_admitting(entry.uri().file(), Admit::SkillMd(&entry))
            .await
    }

    async fn read_file(&self, uri: &FileUri) -> Result<SkillFile, Error> {
        self.read_file_admitting(uri, Admit::Bytes).await
    }

    async fn read_file_admitting(
        &self,
        uri: &FileUri,
        admit: Admit<'_>,
    ) -> Result<SkillFile, Error> {
        match self.entry.manifest() {
            Some(m) => {
                let Some(file) = m.file(uri) else {
                    return Err(Error::Verification {
                        origin: self.origin.as_str().to_owned(),
                        uri: uri.as_str().to_owned(),
                        mismatch: Mismatch::Unlisted,
                    });
                };
                self.inner
                    .fetch_listed(
                        &self.origin,
                        self.source.as_ref(),
                        file,
                        admit,
                        self.shared.as_ref(),
                    )
                    .await
            }
            None => self.read_dynamic(uri).await,
        }
    }

    /// A dynamic skill's file: fetched every time, never stored, marked unverified, and counted
    /// against the total-size limit (R-V7).
    async fn read_dynamic(&self, uri: &FileUri) -> Result<SkillFile, Error> {
        let max = self.inner.validation.current_limits().max_total_bytes();
        let over = |declared| Error::LimitExceeded {
            skill: self.entry.uri().as_str().to_owned(),
            limit: Limit::TotalBytes,
            declared,
            max,
        };
        if self.received.load(Ordering::Relaxed) >= max {
            return Err(over(self.received.load(Ordering::Relaxed)));
        }
        let result = self
            .inner
            .ask(
                &self.origin,
                self.source.as_ref(),
                "resources/read",
                uri.as_str(),
                self.source.read_resource(uri.as_str()),
            )
            .await?;
        let bytes = select_content(&result, uri)?;
        self.inner.counters.fetched(bytes.len());
        let total = self
            .received
            .fetch_add(bytes.len() as u64, Ordering::Relaxed)
            + bytes.len() as u64;
        if total > max {
            return Err(over(total));
        }
        self.inner.counters.served(bytes.len());
        Ok(SkillFile {
            origin: self.origin.clone(),
            uri: uri.clone(),
            digest: None,
            bytes: bytes.into(),
            verified: false,
            provenance: super::loaded::Provenance::Server,
            retried: false,
            stored: false,
        })
    }
}
