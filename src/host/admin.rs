//! What a host or an operator asks of the cache as a whole: what it holds, verify, gc, purge
//! (one origin, or every origin the host no longer configures).
//!
//! These are the maintenance calls of the host API. Each runs the sync core on the blocking pool
//! (one hop), like the loading calls; none of them contacts a server. Those that look at the
//! store wait first for what loads handed to the keeper (`State::settled`): they see every load
//! that returned before them, and a purge is never undone by a publish queued before it.

use std::path::Path;

use super::cache::SkillCache;
use crate::core::now_ms;
use crate::core::{GcReport, VerifyReport};
use crate::entry::Scope;
use crate::error::Error;
use crate::index::EntrySummary;
use crate::origin::Origin;
use crate::uri::SkillUri;

/// One entry the cache holds, as [`SkillCache::cached_entries`] lists it. Serialized (the CLI's
/// `entries --json`, the Python and Node packages) as its fields and `dynamic` (`files == 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CachedEntry {
    /// The origin it came from (R-O1).
    pub origin: Origin,
    /// The skill's URI.
    pub uri: SkillUri,
    /// Its cache scope; a private entry belongs to [`principal`](Self::principal) (R-C6).
    pub scope: Scope,
    /// The principal of a private entry (empty for a public one).
    pub principal: String,
    /// How many files its manifest lists; 0 for a dynamic skill (R-V7: no manifest), so `files
    /// == 0` is how a dynamic entry is told apart.
    pub files: u64,
    /// The sum of their declared sizes.
    pub bytes: u64,
    /// Whether its `ttlMs` has not run out yet: a fresh entry is used without asking the server.
    pub fresh: bool,
}

impl serde::Serialize for CachedEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("CachedEntry", 8)?;
        out.serialize_field("origin", &self.origin)?;
        out.serialize_field("uri", &self.uri)?;
        out.serialize_field("scope", &self.scope)?;
        out.serialize_field("principal", &self.principal)?;
        out.serialize_field("files", &self.files)?;
        out.serialize_field("bytes", &self.bytes)?;
        out.serialize_field("dynamic", &(self.files == 0))?;
        out.serialize_field("fresh", &self.fresh)?;
        out.end()
    }
}

impl CachedEntry {
    fn from_summary(s: EntrySummary, now: u64) -> Option<CachedEntry> {
        // Rows are written from validated entries and sealed, so the URI parses; a row that
        // does not is left out rather than shown with a made-up value.
        let uri = SkillUri::parse(&s.skill_uri).ok()?;
        Some(CachedEntry {
            origin: s.origin,
            uri,
            scope: s.scope,
            principal: s.principal,
            files: s.files,
            bytes: s.bytes,
            fresh: now < s.fetched_at_ms.saturating_add(s.ttl_ms),
        })
    }
}

/// What is in the cache root, as [`SkillCache::inventory`] counts it. (Rows that fail their
/// seal are counted in [`SkillCache::stats`].) Serialized (the CLI's `stats --json`, the Python
/// and Node packages) as its fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Inventory {
    /// Origins with entries or blobs.
    pub origins: usize,
    /// Stored entries, over every origin and principal.
    pub entries: usize,
    /// Recorded blobs.
    pub blobs: usize,
    /// Their total size.
    pub blob_bytes: u64,
    /// Files in quarantine (copies that failed verification, kept for inspection).
    pub quarantined: usize,
    /// The index's schema version.
    pub schema_version: u32,
    /// Whether the index could only be opened read-only (a read-only mount, R-H5).
    pub index_read_only: bool,
}

impl SkillCache {
    /// Every entry the cache holds, of one origin or of all, for every principal.
    ///
    /// # Errors
    /// Index errors.
    pub async fn cached_entries(&self, origin: Option<&Origin>) -> Result<Vec<CachedEntry>, Error> {
        let origin = origin.cloned();
        let rows = self
            .state()
            .settled(move |core| core.entries(origin.as_ref()))
            .await?;
        let now = now_ms();
        Ok(rows
            .into_iter()
            .filter_map(|s| CachedEntry::from_summary(s, now))
            .collect())
    }

    /// Whether this handle's principal holds a fresh entry for (`origin`, `uri`): one that
    /// [`entry`](Self::entry) would use without asking the server.
    ///
    /// # Errors
    /// Index errors.
    pub async fn is_fresh(&self, origin: &Origin, uri: &SkillUri) -> Result<bool, Error> {
        let (origin, uri, principal) = (origin.clone(), uri.clone(), self.principal().to_owned());
        self.state()
            .blocking(move |core| {
                Ok(core
                    .entry(&origin, &uri, &principal)?
                    .is_some_and(|s| s.fresh))
            })
            .await
    }

    /// Checks every cached blob (of one origin, or all) against its digest, whatever the
    /// isolation mode: a corrupt copy is quarantined and its record dropped, so the next load
    /// fetches it again (R-V8). `progress(done, total)` is called as blobs are checked.
    ///
    /// # Errors
    /// Index and I/O errors, the cache lock ([`StoreError::LockTimeout`](crate::error::StoreError::LockTimeout)).
    pub async fn verify(
        &self,
        origin: Option<&Origin>,
        progress: impl FnMut(usize, usize) + Send + 'static,
    ) -> Result<VerifyReport, Error> {
        let origin = origin.cloned();
        self.state()
            .settled(move |core| core.verify(origin.as_ref(), progress))
            .await
    }

    /// Removes blobs no entry refers to and temporaries left by crashes; with `max_bytes`,
    /// then evicts least-recently-used blobs of stale entries until the store fits (R-C7).
    ///
    /// # Errors
    /// Index and I/O errors, the cache lock ([`StoreError::LockTimeout`](crate::error::StoreError::LockTimeout)).
    pub async fn gc(&self, max_bytes: Option<u64>) -> Result<GcReport, Error> {
        self.state().settled(move |core| core.gc(max_bytes)).await
    }

    /// Removes everything of `origin`: entries, approvals, blobs, quarantine (R-C5). Nothing of
    /// it stays readable in any file under the root: the index is rewritten afterwards, since a
    /// database keeps deleted rows' bytes until then (this costs a copy of what the index keeps,
    /// tens of milliseconds for ten thousand rows).
    ///
    /// # Errors
    /// Index and I/O errors, the cache lock ([`StoreError::LockTimeout`](crate::error::StoreError::LockTimeout)).
    pub async fn purge(&self, origin: &Origin) -> Result<(), Error> {
        let origin = origin.clone();
        self.state().settled(move |core| core.purge(&origin)).await
    }

    /// Every origin the root holds anything of (entries, approvals, blobs, staged or
    /// quarantined copies), sorted by label; bound or not.
    ///
    /// # Errors
    /// Index and I/O errors.
    pub async fn origins(&self) -> Result<Vec<Origin>, Error> {
        self.state().settled(crate::core::Cache::origins).await
    }

    /// Removes everything of every origin the root holds that `keep` does not name — the
    /// servers the host no longer configures — through [`purge`](Self::purge), one origin at a
    /// time, and returns the origins removed (R-Q3; SEP-2640: a host SHOULD remove a server's
    /// cached content when the user removes the server). The index is rewritten once, after all
    /// of them. Stops at the first origin that cannot be purged; those before it are gone. An
    /// empty `keep` removes every origin: a host that reads `keep` from a configuration file
    /// should refuse a file that names no server rather than take it as "keep nothing"
    /// (`skillcache purge --absent` does), and a host that names its progress purges origin by
    /// origin with [`origins`](Self::origins) and [`purge`](Self::purge), as the CLI does.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), skillcache::Error> {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// use skillcache::{McpConfig, Origin, SkillCache};
    /// let cache = SkillCache::builder()
    ///     .root(tmp.path().join("cache"))
    ///     .key_file(tmp.path().join("host.key"))
    ///     .open()?;
    /// # std::fs::write(tmp.path().join("mcp.json"), r#"{"mcpServers": {"docs": {"command": "docs-server"}}}"#).unwrap();
    /// let config = McpConfig::read(tmp.path().join("mcp.json"))?;
    /// let keep: Vec<Origin> = config.servers().map(|(o, _)| o.clone()).collect();
    /// let removed = cache.purge_absent(&keep).await?;
    /// assert!(removed.is_empty()); // a new cache holds no origin
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Index and I/O errors, the cache lock ([`StoreError::LockTimeout`](crate::error::StoreError::LockTimeout)).
    pub async fn purge_absent(&self, keep: &[Origin]) -> Result<Vec<Origin>, Error> {
        let keep = keep.to_vec();
        self.state()
            .settled(move |core| core.purge_absent(&keep))
            .await
    }

    /// Counts what the cache root holds.
    ///
    /// # Errors
    /// Index errors.
    pub async fn inventory(&self) -> Result<Inventory, Error> {
        self.state()
            .settled(|core| {
                let entries = core.entries(None)?;
                let blobs = core.index().blobs()?;
                Ok(Inventory {
                    origins: core.index().origins()?.len(),
                    entries: entries.len(),
                    blobs: blobs.len(),
                    blob_bytes: blobs.iter().map(|(_, _, r)| r.size).sum(),
                    quarantined: core.store().quarantined(),
                    schema_version: core.index().schema_version()?,
                    index_read_only: core.index().is_read_only(),
                })
            })
            .await
    }

    /// Where a damaged index was moved when this cache was opened, if it was (R-H6): a fresh
    /// index replaced it, cached files were kept, approvals were lost.
    #[must_use]
    pub fn healed_index(&self) -> Option<&Path> {
        self.state().core().healed_index()
    }

    /// The cache root.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.state().core().root()
    }
}
