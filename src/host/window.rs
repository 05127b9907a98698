//! `LoadedSkill`, the acting window (R-V4): what a loaded skill may read, and from where.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::file::SkillFile;
use super::pipeline::{Pipeline, check_frontmatter};
use super::state::State;
use crate::digest::Digest;
use crate::entry::{ManifestFile, SkillEntry, select_content};
use crate::error::{Error, Limit, Mismatch};
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::tier::TierHandle;
use crate::uri::FileUri;
use crate::verify::Verification;

/// A loaded skill: the acting window (R-V4). It holds the entry it was loaded from and its
/// origin's source; every read through it is restricted to that entry's files and goes to that
/// source only (R-O6). Dropping it ends the window.
pub struct LoadedSkill {
    state: Arc<State>,
    origin: Origin,
    source: Arc<dyn SkillSource>,
    entry: SkillEntry,
    skill_md: Option<SkillFile>,
    /// What the approval that admitted this load granted (R-A5); `None` without one.
    granted_tools: Option<Value>,
    /// Bytes received for a dynamic skill, against the total-size limit (R-V7).
    received: AtomicU64,
    /// The shared tier, only for a public entry: decided once, at admission.
    tier: Option<TierHandle>,
    /// The purge count noted on the entry when the cache handed it out (else the one the cache
    /// had seen when this skill was loaded): a file fetched after a purge of its origin is
    /// served, not kept (`Cache::purge_mark_for`, `Cache::purges_seen_for`).
    seen_purges: Option<u64>,
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
        state: Arc<State>,
        origin: Origin,
        source: Arc<dyn SkillSource>,
        entry: SkillEntry,
        granted_tools: Option<Value>,
        tier: Option<TierHandle>,
    ) -> LoadedSkill {
        LoadedSkill {
            seen_purges: state.core().purges_seen_for(&origin, &entry),
            state,
            origin,
            source,
            entry,
            skill_md: None,
            granted_tools,
            received: AtomicU64::new(0),
            tier,
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

    /// What the principal *granted* of the requested tools when approving this skill as it is
    /// now (R-A5): the only permissions a host should apply. `None` when nothing was granted, and
    /// always under [`ApprovalPolicy::NotRequired`](crate::ApprovalPolicy::NotRequired). A grant
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
    /// [`UriError`](crate::error::UriError) for a reference that leaves the skill, [`VerifyError`](crate::error::VerifyError), and
    /// the errors of the verified path.
    pub async fn read(&self, reference: &str) -> Result<SkillFile, Error> {
        let uri = self.entry.uri().resolve(reference)?;
        if self.entry.manifest().is_none() {
            return self.read_dynamic(&uri).await;
        }
        let file = self.listed(&uri)?;
        self.through(false, std::slice::from_ref(file))
            .await
            .map(first)
    }

    /// Every file of the held entry, in manifest order: the cached ones verified in parallel on
    /// every core (one blocking hop); the rest fetched from the server a few at a time, each
    /// verified as it arrives, and published in batches while the rest are still fetched (a
    /// round of syncs a batch instead of one per file, R-C3). A cached copy that failed is
    /// fetched exactly once more (R-V9). A dynamic skill has no list to read.
    ///
    /// # Errors
    /// The first error of any file; no partial result is returned (files fetched and verified
    /// before another one failed may have been stored — each a verified copy of a listed file;
    /// the next load fetches the rest).
    pub async fn read_all(&self) -> Result<Vec<SkillFile>, Error> {
        self.through(false, self.files()).await
    }

    /// [`LoadedSkill::read_all`] for `load_all`: the skill's own `SKILL.md` is checked against
    /// the entry's frontmatter whether it was cached or fetched (R-V6).
    pub(super) async fn read_all_loading(&self) -> Result<Vec<SkillFile>, Error> {
        self.through(true, self.files()).await
    }

    /// The skill's own `SKILL.md`, admitted only with the frontmatter the entry declares
    /// (R-V6, R-H10) — for a dynamic skill too.
    pub(super) async fn read_skill_md(&self) -> Result<SkillFile, Error> {
        let own = self.entry.uri().file();
        if self.entry.manifest().is_none() {
            let file = self.read_dynamic(own).await?;
            check_frontmatter(&self.origin, &self.entry, file.bytes())?;
            return Ok(file);
        }
        let file = self.listed(own)?;
        self.through(true, std::slice::from_ref(file))
            .await
            .map(first)
    }

    /// The frame (R-Q2) of `bytes` that a host kept from an earlier read of this skill's file
    /// `uri` — a host, or a binding, that keeps a file's bytes rather than its [`SkillFile`]. The
    /// bytes are checked again against the held entry's size and digest before they are framed,
    /// so a frame never calls bytes verified that changed since they were read (R-V2); a dynamic
    /// skill's file has nothing to check against and is framed as unverified, as it was read.
    /// Equal to [`SkillFile::framed`] of the read that gave the bytes.
    ///
    /// # Errors
    /// [`UriError`](crate::error::UriError) for a URI outside the skill, [`VerifyError`](crate::error::VerifyError)
    /// for a file the entry does not list or bytes that no longer match it.
    pub fn frame_kept(&self, uri: &str, bytes: &[u8]) -> Result<String, Error> {
        let uri = self.entry.uri().resolve(uri)?;
        let verification = if self.entry.manifest().is_none() {
            Verification::Unverified
        } else {
            let file = self.listed(&uri)?;
            let len = bytes.len() as u64;
            // Size first, then the hash (R-V3): a wrong length is known without hashing.
            let actual = if len == file.size() {
                Digest::of(bytes)
            } else {
                file.digest()
            };
            crate::verify::expect(file.size(), file.digest(), len, actual).map_err(|mismatch| {
                Error::Verify(crate::error::VerifyError {
                    origin: self.origin.clone(),
                    uri: uri.clone(),
                    mismatch,
                })
            })?;
            Verification::Verified(file.digest())
        };
        Ok(crate::frame::frame(&self.origin, &uri, verification, bytes))
    }

    /// The held entry's listing of `uri` (R-V4): an unlisted file is refused, nothing is sent.
    fn listed(&self, uri: &FileUri) -> Result<&ManifestFile, Error> {
        self.entry
            .manifest()
            .and_then(|m| m.file(uri))
            .ok_or_else(|| {
                Error::Verify(crate::error::VerifyError {
                    origin: self.origin.clone(),
                    uri: uri.clone(),
                    mismatch: Mismatch::Unlisted,
                })
            })
    }

    async fn through(
        &self,
        check_hits: bool,
        files: &[ManifestFile],
    ) -> Result<Vec<SkillFile>, Error> {
        Pipeline {
            state: &self.state,
            origin: &self.origin,
            source: &self.source,
            entry: &self.entry,
            tier: self.tier.as_ref(),
            check_hits,
            seen_purges: self.seen_purges,
        }
        .read(files)
        .await
    }

    /// A dynamic skill's file: fetched every time, never stored, marked unverified, and counted
    /// against the total-size limit (R-V7).
    async fn read_dynamic(&self, uri: &FileUri) -> Result<SkillFile, Error> {
        let max = self
            .state
            .settings()
            .validation
            .current_limits()
            .max_total_bytes();
        let over = |declared| {
            Error::Entry(crate::error::EntryError::LimitExceeded {
                origin: Some(self.origin.clone()),
                skill: self.entry.uri().clone(),
                limit: Limit::TotalBytes,
                declared,
                max,
            })
        };
        if self.received.load(Ordering::Relaxed) >= max {
            return Err(over(self.received.load(Ordering::Relaxed)));
        }
        let result = self
            .state
            .ask(
                &self.origin,
                self.source.as_ref(),
                "resources/read",
                Some(uri.as_str()),
                self.source.read_resource(uri.as_str()),
            )
            .await?;
        let bytes = select_content(&result, uri).map_err(|e| e.sent_by(&self.origin))?;
        self.state.counters().fetched(bytes.len());
        let total = self
            .received
            .fetch_add(bytes.len() as u64, Ordering::Relaxed)
            + bytes.len() as u64;
        if total > max {
            return Err(over(total));
        }
        self.state.counters().served(bytes.len());
        Ok(SkillFile::dynamic(&self.origin, uri, bytes))
    }
}

/// The one file a one-file read returns.
fn first(files: Vec<SkillFile>) -> SkillFile {
    files
        .into_iter()
        .next()
        .expect("the pipeline returns one file for each it was given")
}
