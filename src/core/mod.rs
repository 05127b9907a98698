//! The sync core: the one module that sees both the blob store and the index.
//!
//! [`Cache`] is synchronous; the async host layer (`crate::cache`) wraps it, one
//! `spawn_blocking` hop per operation and none for a memory-tier hit.
//! It keeps the cross-layer invariants:
//!
//! - a blob is on disk before an index row points to it; a row is deleted before its blob (R-C3);
//! - cached bytes come out only as [`VerifiedBytes`], checked per the isolation policy (R-C2);
//! - bytes that fail are quarantined and their record dropped, never served (R-V8);
//! - every record carries its origin (R-O1); purge removes all of an origin (R-C5);
//! - a publisher holds the shared lock until its rows are committed; gc holds the exclusive lock.

#[cfg(test)]
mod crash_points;
mod key;
mod maintenance;
mod memory;
mod pending;
mod quota;
mod root;
#[cfg(test)]
mod purge_mark_tests;
#[cfg(test)]
mod zero_copy_tests;

pub use key::default_key_file;
pub use maintenance::{GcReport, VerifyReport};
pub use memory::DEFAULT_MEMORY_TIER_BYTES;
pub(crate) use pending::Pending;
// What the quota charges beyond a blob's blocks: named in the docs here and read by the tests
// (through `internals`); nothing in the crate uses them by these names.
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use quota::{FILE_OVERHEAD, ROW_OVERHEAD};
pub use root::{default_discovery_paths, default_root};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::verify::VerifiedBytes;
use crate::entry::{CacheHints, ManifestFile, Noted, SkillEntry};
use crate::error::{Error, Mismatch};
use crate::index::{Approval, BlobRecord, EntrySummary, Index, PutOutcome, StoredEntry};
use crate::origin::Origin;
use crate::store::{
    BlobRead, BlobStore, DEFAULT_LOCK_TIMEOUT, Disk, Evidence, Isolation, LockMode, RealDisk,
};
use crate::uri::SkillUri;

/// How often a hit writes its access time back (least-recently-used gc needs no finer grain,
/// and a write per hit would cost more than the hit).
const ACCESS_GRAIN_MS: u64 = 60_000;

/// What this process knows about a blob it published or read: the isolation evidence recorded
/// at publish, and when it last wrote the blob's access time. It keeps the hit path free of
/// index queries. It is never trusted on its own: evidence only skips hashing while the file
/// still matches it, so a stale record can cost a re-hash, never a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Known {
    evidence: Option<Evidence>,
    touched_ms: u64,
}

type KnownBlobs = std::sync::Mutex<
    std::collections::HashMap<Origin, std::collections::HashMap<crate::digest::Digest, Known>>,
>;

/// Builds a [`Cache`]. Every option has a documented default.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use skillcache::core::Cache;
/// use skillcache::store::Isolation;
/// let cache = Cache::builder().root(dir.path().join("cache")).isolation(Isolation::Guaranteed).open().unwrap();
/// assert!(cache.root().ends_with("cache"));
/// ```
#[derive(Debug, Clone)]
pub struct CacheBuilder {
    root: Option<PathBuf>,
    isolation: Isolation,
    discovery_paths: Vec<PathBuf>,
    lock_timeout: Duration,
    disk: Arc<dyn Disk>,
    key_file: Option<PathBuf>,
    memory_tier: u64,
    origin_quota: Option<u64>,
}

impl Default for CacheBuilder {
    fn default() -> CacheBuilder {
        CacheBuilder {
            root: None,
            isolation: Isolation::default(),
            discovery_paths: Vec::new(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            disk: Arc::new(RealDisk),
            key_file: None,
            memory_tier: DEFAULT_MEMORY_TIER_BYTES,
            origin_quota: None,
        }
    }
}

impl CacheBuilder {
    /// The cache root. Default: [`default_root`] (`$SKILLCACHE_ROOT`, else the platform cache
    /// folder). It must lie outside every discovery path (R-C1).
    #[must_use]
    pub fn root(mut self, root: impl Into<PathBuf>) -> CacheBuilder {
        self.root = Some(root.into());
        self
    }

    /// How cached files are verified on access. Default: [`Isolation::Rehash`].
    #[must_use]
    pub fn isolation(mut self, isolation: Isolation) -> CacheBuilder {
        self.isolation = isolation;
        self
    }

    /// Adds a filesystem-skill discovery path the root must stay outside of, to the defaults
    /// ([`default_discovery_paths`]).
    #[must_use]
    pub fn discovery_path(mut self, path: impl Into<PathBuf>) -> CacheBuilder {
        self.discovery_paths.push(path.into());
        self
    }

    /// How long an operation waits for the cache's lock (another process's gc or purge, or for
    /// gc, the other processes' publishes) before it fails with [`StoreError::LockTimeout`](crate::error::StoreError::LockTimeout) (R-H11).
    /// Default: [`DEFAULT_LOCK_TIMEOUT`] (30 s).
    #[must_use]
    pub fn lock_timeout(mut self, timeout: Duration) -> CacheBuilder {
        self.lock_timeout = timeout;
        self
    }

    /// How many bytes of verified files this process keeps in memory, by origin and digest,
    /// so that a repeated read costs no syscall and no hash (process memory is write-isolated by
    /// construction). Evicted by CLOCK; purge, gc, verify and a quarantine of the same digest drop
    /// entries. Default: [`DEFAULT_MEMORY_TIER_BYTES`] (64 MiB); 0 turns the tier off.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use skillcache::core::Cache;
    /// let cache = Cache::builder().root(dir.path().join("cache")).memory_tier(0).open().unwrap();
    /// assert_eq!(cache.memory_resident(), 0);
    /// ```
    #[must_use]
    pub fn memory_tier(mut self, bytes: u64) -> CacheBuilder {
        self.memory_tier = bytes;
        self
    }

    internal_pub! {
        /// The most bytes one origin's store may take on disk (R-Q4, K2): every file and folder
        /// under its folder at its allocated size, plus [`FILE_OVERHEAD`] a file and
        /// [`ROW_OVERHEAD`] a blob (its index row). A publish
        /// first evicts that origin's least recently used blobs the publish does not itself
        /// list — never another origin's — and a batch that alone would be charged more than
        /// the quota is refused. Default: none.
        #[must_use]
        fn origin_quota(mut self, bytes: u64) -> CacheBuilder {
            self.origin_quota = Some(bytes);
            self
        }
    }

    /// Every filesystem change the store makes goes through `disk` (the fault-injection seam).
    #[cfg(any(test, feature = "fault-injection"))]
    #[doc(hidden)]
    #[must_use]
    pub fn disk(mut self, disk: Arc<dyn Disk>) -> CacheBuilder {
        self.disk = disk;
        self
    }

    /// The host key file that seals index rows (R-H3). Default: [`default_key_file`]
    /// (`$SKILLCACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/skillcache/host.key`, else
    /// `~/.config/skillcache/host.key`). Created (0600, 32 random bytes) on first use; it must
    /// lie outside the root, be a regular file of 32 bytes, and be readable by its owner only.
    #[must_use]
    pub fn key_file(mut self, path: impl Into<PathBuf>) -> CacheBuilder {
        self.key_file = Some(path.into());
        self
    }

    /// Opens the cache: checks the root (R-C1), creates it 0700 or adopts it only if it is ours
    /// (R-H2), reads (or creates) the host key (R-H3), opens the store and the index without
    /// writing anything that a warm read does not need (R-H5), and sweeps stale temporaries when
    /// no other process is using the root (without a quota, an origin's own are swept at the
    /// first publish into it instead, and by `gc`).
    ///
    /// # Errors
    /// [`StoreError::RootRefused`](crate::error::StoreError::RootRefused) for a root inside or around a discovery path, or one that is not
    /// ours to fill, or for `Guaranteed` isolation where the platform cannot hold it (Windows);
    /// [`IndexError::HostKey`](crate::error::IndexError::HostKey) for a key file that is refused;
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for a root, key file or
    /// discovery path longer than 4,096 bytes; I/O and index errors.
    pub fn open(self) -> Result<Cache, Error> {
        // Longer than any path the system opens (PATH_MAX, 4,096 bytes, on Linux): refused
        // before anything walks it (resolving a root asks for each of its ancestors in turn, so
        // a megabyte of path cost the caller half a minute: the seventeenth review).
        const MAX_PATH_BYTES: usize = 4096;
        // And at most 256 discovery paths: each is resolved and compared with the root.
        const MAX_DISCOVERY_PATHS: usize = 256;
        if self.discovery_paths.len() > MAX_DISCOVERY_PATHS {
            return Err(Error::Config(crate::error::ConfigError::Invalid {
                what: format!(
                    "{} discovery paths were given: at most {MAX_DISCOVERY_PATHS}",
                    self.discovery_paths.len()
                ),
            }));
        }
        let given = [("root", self.root.as_ref()), ("key file", self.key_file.as_ref())];
        let extra = self.discovery_paths.iter().map(|p| ("discovery path", Some(p)));
        for (what, path) in given.into_iter().chain(extra) {
            let len = path.map_or(0, |p| p.as_os_str().len());
            if len > MAX_PATH_BYTES {
                return Err(Error::Config(crate::error::ConfigError::Invalid {
                    what: format!("the {what} is {len} bytes long: at most {MAX_PATH_BYTES}"),
                }));
            }
        }
        let mut discovery = default_discovery_paths();
        discovery.extend(self.discovery_paths);
        let root = self.root.unwrap_or_else(default_root);
        // A platform that cannot read the evidence `Guaranteed` trusts refuses it here, before
        // anything is made, rather than trust less than it says.
        if self.isolation == Isolation::Guaranteed
            && let Err(why) = crate::platform::GUARANTEED
        {
            return Err(Error::Store(crate::error::StoreError::RootRefused {
                root: root.clone(),
                why,
                path: root,
            }));
        }
        let dir = root::prepare(&root, &discovery, self.disk.as_ref())?;
        let root = dir.path().to_owned();
        let key_file = self.key_file.unwrap_or_else(default_key_file);
        let (key, new_key) = key::load_or_create(&key_file, &root, &discovery)?;
        let store = BlobStore::open(dir, self.disk, self.lock_timeout)?;
        store.scrub_index_files()?;
        let index = Index::open(&store.layout().index_db(), key)?;
        // A key made just now beside an index that holds rows: those rows were sealed by another
        // key (a mistyped `--key-file`, a home folder restored without its key), and each will
        // fail its seal and be fetched again. Said once, here, rather than only row by row.
        if new_key && index.origins().is_ok_and(|o| !o.is_empty()) {
            tracing::warn!(
                key = %key_file.display(),
                root = %root.display(),
                "created a new host key for a cache whose index holds rows sealed by another key: each will fail its seal and be fetched again (is the key file the one this cache was made with?)"
            );
        }
        if let Ok(Some(_guard)) = store.try_lock_exclusive() {
            // Nobody else holds the root: every temporary is a crashed publisher's leftover. On a
            // read-only or full disk this may fail; nothing depends on it (R-H5). Under a quota
            // every origin's staging is swept here, so that no origin holds more than its quota
            // once the cache is open again (R-Q4). Without one, only the first layout's shared
            // staging: a look at every origin would make `open` grow with the origins (G1: 3.4
            // ms at 100 origins against 1.0 at 10), and an origin's own leftovers are swept at
            // this handle's first publish into it (`store_files`) and by `gc`.
            let swept = if self.origin_quota.is_some() {
                store.sweep_tmp(Duration::ZERO)
            } else {
                store.sweep_first_layout()
            };
            if let Err(e) = swept {
                tracing::debug!(error = %e, "could not sweep temporaries");
            }
            if !index.is_read_only() {
                store.keep_reserve();
            }
        }
        let seen_purges = std::sync::atomic::AtomicU64::new(index.purges().unwrap_or(NOT_SEEN));
        Ok(Cache {
            index_id: index_id(&root),
            root,
            store,
            index,
            isolation: self.isolation,
            known: KnownBlobs::default(),
            swept: std::sync::Mutex::default(),
            memory: memory::MemoryTier::new(self.memory_tier),
            origin_quota: self.origin_quota,
            pending: Pending::new(pending::WRITE_BEHIND_BYTES),
            seen_purges,
            seen_by_origin: std::sync::Mutex::default(),
        })
    }
}

/// The largest file [`Cache::quick_hit`] reads on the caller's thread: 64 KiB is read and
/// hashed in tens of microseconds, within what an async task may take between two awaits.
pub const QUICK_HIT_MAX_BYTES: u64 = 64 * 1024;

/// Below this many listed bytes, [`Cache::read_files`] reads on the calling thread: starting
/// threads costs more than hashing this much (and a cold batch, all misses, hashes nothing).
const PARALLEL_READ_MIN_BYTES: u64 = 1024 * 1024;

/// What the store held for a file, before the caller records it.
enum Stored {
    /// Verified bytes and the blob's record as the read leaves it.
    Hit(VerifiedBytes, Known),
    /// Verified bytes (re-hashed) after confirmed evidence did not hold: the record must be
    /// read again from the index.
    Unconfirmed(VerifiedBytes, Known),
    /// The copy failed verification.
    Failed(Mismatch),
    /// No copy.
    Missing,
}

/// What a cached read found.
#[derive(Debug)]
pub enum CachedRead {
    /// Verified bytes from the cache.
    Hit(VerifiedBytes),
    /// Not cached: fetch it.
    Miss,
    /// A cached copy failed verification; it was quarantined and its record dropped. The caller
    /// may fetch from the server once (R-V9).
    Failed(Mismatch),
}

/// How many purges the index had seen when a load began to fetch ([`Cache::purge_mark`]);
/// `None` when the index could not say, which keeps nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PurgeMark(Option<u64>);

/// What a request whose answer is kept notes before it is sent ([`Cache::asked`]): the purge
/// mark, and the time, which becomes the fetch time of the entries it answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    mark: PurgeMark,
    at_ms: u64,
}

impl Asked {
    /// The purge count read before the request was sent, for the entries it answers
    /// ([`Cache::noted`]).
    pub(crate) fn purges(&self) -> Option<u64> {
        self.mark.0
    }
}

/// Whether a batch of verified files was kept ([`Cache::store_verified`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Published and recorded.
    Stored,
    /// The store could not keep it (logged): a full disk, an I/O or index error.
    Failed,
    /// The index saw a purge after the load noted its mark: nothing was written.
    Purged,
}

/// The synchronous cache core over one root.
#[derive(Debug)]
pub struct Cache {
    root: PathBuf,
    store: BlobStore,
    index: Index,
    isolation: Isolation,
    known: KnownBlobs,
    /// The origins whose staging this handle has swept (at its first publish into each).
    swept: std::sync::Mutex<std::collections::HashSet<Origin>>,
    /// Verified bytes kept in memory; consulted before the disk under both isolation modes.
    memory: memory::MemoryTier,
    /// The most bytes one origin's store may hold (R-Q4); `None`: no quota.
    origin_quota: Option<u64>,
    /// Verified bytes handed to the host and not yet published (write-behind, `pending.rs`);
    /// consulted before the memory tier and the disk.
    pending: Pending,
    /// The purge count this handle read when it opened ([`NOT_SEEN`]: it could not), and the
    /// highest it read since for each origin it asked about ([`Cache::purges_seen`]).
    seen_purges: std::sync::atomic::AtomicU64,
    seen_by_origin: std::sync::Mutex<std::collections::HashMap<Origin, u64>>,
    /// Which index this is, for the counts noted on the entries this handle hands out
    /// ([`Noted`]): every handle on one root has the same.
    index_id: u64,
}

/// [`Cache::index_id`]: the root's resolved path, hashed. Entries do not leave the process, so
/// the hasher need not be stable across builds; two roots that hash alike would only compare
/// counts that mean different things, which errs towards keeping a fetch as before this mark.
fn index_id(root: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    h.finish()
}

/// [`Cache::seen_purges`] before any count was read.
const NOT_SEEN: u64 = u64::MAX;

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Cache {
    internal_pub! {
        /// A builder with every default.
        #[must_use]
        fn builder() -> CacheBuilder {
            CacheBuilder::default()
        }
    }

    /// The resolved root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The blob store (for inspection and tests).
    #[must_use]
    pub fn store(&self) -> &BlobStore {
        &self.store
    }

    #[cfg(any(test, feature = "internals"))]
    internal_pub! {
        /// How many bytes of verified files the memory tier holds now (never more than its bound,
        /// [`CacheBuilder::memory_tier`]): for the tests' bound checks.
        #[must_use]
        fn memory_resident(&self) -> u64 {
            self.memory.resident()
        }
    }

    /// The per-origin quota in force (R-Q4), for admission to decline a skill larger than it.
    pub(crate) fn origin_quota(&self) -> Option<u64> {
        self.origin_quota
    }

    /// The index (for inspection and tests).
    #[must_use]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// How many index rows failed their seal check since the cache was opened (R-H3): each was
    /// treated as absent (entry fetched again, approval void, record no evidence) and logged.
    #[must_use]
    pub fn seal_failures(&self) -> u64 {
        self.index.seal_failures()
    }

    /// Where a damaged index was moved when the cache was opened, if it was (R-H6): a fresh
    /// index replaced it, cached files were kept, approvals were lost.
    #[must_use]
    pub fn healed_index(&self) -> Option<&Path> {
        self.index.healed()
    }

    /// Stores a validated entry (R-C6); revokes a stale approval and says what changed (R-A2).
    ///
    /// # Errors
    /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
    // The host path keeps entries a listing (or one `skills/get`) at a time (`put_entries`).
    #[cfg(any(test, feature = "internals"))]
    pub fn put_entry(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
        hints: CacheHints,
    ) -> Result<PutOutcome, Error> {
        Ok(self
            .index
            .put_entry(origin, principal, entry, hints, now_ms())?)
    }

    /// [`Cache::put_entry`] for every entry of one listing, in one index transaction (G1).
    ///
    /// # Errors
    /// As [`Cache::put_entry`]; nothing is stored if any write fails.
    // The host path keeps what a server answered with `put_answered`.
    #[cfg(any(test, feature = "internals"))]
    pub fn put_entries(
        &self,
        origin: &Origin,
        principal: &str,
        entries: &[SkillEntry],
        hints: CacheHints,
    ) -> Result<Vec<PutOutcome>, Error> {
        Ok(self
            .index
            .put_entries(origin, principal, entries, hints, now_ms())?)
    }

    /// Keeps entries a server answered to a request sent after `asked` was noted
    /// ([`Cache::asked`]): `None`, and nothing written, when the index has seen a purge since
    /// (or could not say). Their fetch time is the time the request was sent, not the time the
    /// answer is kept: a change the server announced meanwhile still marks them stale (round 23
    /// of review). `relisted` as
    /// [`Index::put_answered`](crate::index::Index::put_answered): true unless the server
    /// announced a change within [`RELIST_SLACK_MS`](crate::index::RELIST_SLACK_MS).
    ///
    /// # Errors
    /// As [`Cache::put_entries`].
    pub(crate) fn put_answered(
        &self,
        origin: &Origin,
        principal: &str,
        entries: &[SkillEntry],
        hints: CacheHints,
        relisted: bool,
        asked: Asked,
    ) -> Result<Option<Vec<PutOutcome>>, Error> {
        let Some(purges) = asked.mark.0 else {
            return Ok(None);
        };
        Ok(self
            .index
            .put_answered(origin, principal, entries, hints, asked.at_ms, relisted, purges)?)
    }

    /// The entry for (`origin`, `uri`) visible to `principal`, with its freshness.
    ///
    /// # Errors
    /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
    pub fn entry(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Result<Option<StoredEntry>, Error> {
        Ok(self.index.entry(origin, uri, principal, now_ms())?)
    }

    /// [`Cache::entry`] from the index's memo, on the caller's thread (R-T1): `None` means ask
    /// [`Cache::entry`].
    #[must_use]
    pub fn entry_quick(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Option<StoredEntry> {
        self.index.entry_quick(origin, uri, principal, now_ms())
    }

    /// [`Cache::approval`] from the index's memo, on the caller's thread (R-T1): `None` means
    /// ask [`Cache::approval`].
    #[must_use]
    pub fn approval_quick(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Option<Approval> {
        self.index.approval_quick(origin, uri, principal)
    }

    internal_pub! {
        /// Every entry of `origin` named `name` that `principal` can see (R-O3): all of them, by URI;
        /// never one from another origin.
        ///
        /// # Errors
        /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
        fn entries_named(
            &self,
            origin: &Origin,
            name: &str,
            principal: &str,
        ) -> Result<Vec<StoredEntry>, Error> {
            Ok(self.index.entries_named(origin, name, principal, now_ms())?)
        }
    }

    /// Every stored entry (of one origin, or all).
    ///
    /// # Errors
    /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
    pub fn entries(&self, origin: Option<&Origin>) -> Result<Vec<EntrySummary>, Error> {
        Ok(self.index.entries(origin)?)
    }

    /// `principal` approves `entry` as it is now (R-A1, R-H11), optionally granting its
    /// requested tools (R-A5).
    ///
    /// # Errors
    /// A dynamic entry cannot be approved (R-A3): [`Error::Declined`] with
    /// [`Declined::Dynamic`](crate::error::Declined::Dynamic); index errors.
    pub fn approve(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
        granted_tools: Option<&serde_json::Value>,
    ) -> Result<(), Error> {
        // R-A3: only a manifest-backed entry has a binding to approve. A dynamic entry is a
        // valid entry the policy declines, not an invalid one: the same refusal as loading it.
        let Some(binding) = entry.binding() else {
            return Err(Error::Declined {
                origin: origin.clone(),
                skill: entry.uri().clone(),
                reason: crate::error::Declined::Dynamic,
            });
        };
        Ok(self
            .index
            .grant(origin, principal, entry, binding, granted_tools, now_ms())?)
    }

    /// `principal`'s approval of (`origin`, `uri`), if any and sealed (R-H3, R-H11).
    ///
    /// # Errors
    /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
    pub fn approval(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Result<Option<Approval>, Error> {
        Ok(self.index.approval(origin, uri, principal)?)
    }

    /// Whether `entry`, as it is now, is approved by `principal` (R-H11).
    ///
    /// # Errors
    /// [`IndexError::Database`](crate::error::IndexError::Database) on a database failure.
    pub fn is_approved(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
    ) -> Result<bool, Error> {
        Ok(self.index.is_approved(origin, principal, entry)?)
    }

    /// Stores the bytes of a listed file: [`Cache::store_files`] with one file.
    ///
    /// # Errors
    /// As [`Cache::store_files`].
    // The host path stores batches (`store_verified`); one file at a time is the tests' view.
    #[cfg(any(test, feature = "internals"))]
    pub fn store_file(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        bytes: &[u8],
    ) -> Result<(), Error> {
        self.store_files(origin, &[(file, bytes)])
    }

    /// Stores verified files of `origin` as one batch ([`Cache::store_files`]); whether each
    /// was kept. A cache that cannot store (a full disk) must not fail a verified load, so a
    /// batch that fails is logged and reported, never an error: none of its files is recorded
    /// (blobs it linked before the failure are complete but may not be durable yet; the next
    /// publish of the same bytes syncs and records them, gc removes the rest). The load's own
    /// publish and the write-behind keeper's both come here.
    ///
    /// (A batch that failed used to be retried file by file. The crash-point enumeration of this
    /// path showed why not: after a failure between the links and their folders' syncs, a file
    /// retried alone was recorded while names of the failed batch were not yet durable.)
    ///
    /// `fetched` is [`Cache::purge_mark`] as read before the bytes were fetched: when the
    /// index has seen a purge since, the batch is not kept ([`Kept::Purged`]: nothing is
    /// written), so that bytes fetched before a purge never bring the purged origin back.
    pub(crate) fn store_verified(
        &self,
        origin: &Origin,
        files: &[(&ManifestFile, &VerifiedBytes)],
        fetched: PurgeMark,
    ) -> Kept {
        if fetched.0.is_none() {
            // The index could not be read (or written) when the load began: it cannot keep
            // these now either; a failure of the store, not a purge (round 24 of review).
            tracing::warn!(origin = origin.as_str(), files = files.len(), "store failed (the index could not be read when the load began): served without keeping a copy");
            return Kept::Failed;
        }
        let batch: Vec<(&ManifestFile, &[u8])> =
            files.iter().map(|(f, v)| (*f, v.as_slice())).collect();
        match self.store_files_since(origin, &batch, Some(fetched)) {
            Ok(true) => Kept::Stored,
            Ok(false) => {
                tracing::debug!(origin = origin.as_str(), files = files.len(), "the origin was purged while these files were fetched: served without keeping a copy");
                Kept::Purged
            }
            Err(e) => {
                for (f, _) in files {
                    tracing::warn!(origin = origin.as_str(), uri = f.uri().as_str(), disk_full = e.is_disk_full(), error = %e, "store failed: served without keeping a copy");
                }
                Kept::Failed
            }
        }
    }

    /// What the index says of purges now, for a request about `origin` to note before it is
    /// sent (the argument `fetched` of [`Cache::store_verified`], and inside [`Asked`] of
    /// [`Cache::put_answered`]); the index is made to hold a row for the origin first
    /// ([`Index::purges_for`](crate::index::Index::purges_for)). An index that cannot be read
    /// or written gives a mark that keeps nothing: whether a purge came between cannot be told.
    pub(crate) fn purge_mark(&self, origin: &Origin) -> PurgeMark {
        match self.index.purges_for(origin) {
            Ok(n) => {
                let mut seen = self
                    .seen_by_origin
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let at = seen.entry(origin.clone()).or_insert(n);
                *at = (*at).max(n);
                PurgeMark(Some(n))
            }
            Err(e) => {
                tracing::debug!(error = %e, "could not read the index's purge count");
                PurgeMark(None)
            }
        }
    }

    /// The highest purge count this handle read for a request about `origin` (a listing, a
    /// `skills/get`, a fetch), else the count it read when it opened; without reading the
    /// index: what an entry this handle hands out is noted with ([`Cache::noted`]), and what a
    /// skill loaded from an entry without such a note uses ([`Cache::purges_seen_for`]). Counts only
    /// grow, so no purge came between this value's reading and a later mark equal to it. By
    /// origin: a request to another server after a purge must not make an entry of the purged
    /// one, obtained before it, look newer (round 26 of review).
    pub(crate) fn purges_seen(&self, origin: &Origin) -> Option<u64> {
        let seen = self
            .seen_by_origin
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .copied();
        seen.or_else(|| Some(self.seen_purges.load(Ordering::SeqCst)).filter(|&n| n != NOT_SEEN))
    }

    /// `entry` as this handle hands it out, noted with `purges`, a count read before the
    /// entry was asked for or read ([`Noted`]; `None`: none could be read).
    pub(crate) fn noted(&self, entry: SkillEntry, purges: Option<u64>) -> SkillEntry {
        let noted = purges.map(|purges| Noted {
            index: self.index_id,
            purges,
        });
        entry.noted_as(noted)
    }

    /// The purge count a skill loaded from `entry` of `origin` notes: the one noted on the
    /// entry when this index handed it out — however recently this handle asked `origin` about
    /// another skill since (round 27 of review), and whichever handle on this root loads it
    /// (round 26's residual) — else, for an entry the host validated itself or one of another
    /// root, what this handle has seen ([`Cache::purges_seen`]): its load is a new one.
    pub(crate) fn purges_seen_for(&self, origin: &Origin, entry: &SkillEntry) -> Option<u64> {
        entry
            .noted()
            .filter(|n| n.index == self.index_id)
            .map(|n| n.purges)
            .or_else(|| self.purges_seen(origin))
    }

    /// [`Cache::purge_mark`] for a fetch of a file of `skill`, a skill loaded when this handle
    /// had seen `seen` purges ([`Cache::purges_seen`]). A loaded skill reads its files lazily,
    /// possibly long after a purge of its origin: what it fetches then is served through its
    /// held entry (R-V4), but keeping it would bring the purged origin back (round 25 of
    /// review). So when the count moved since `seen` and the index no longer holds an entry
    /// for `skill` of `origin`, the mark is `seen` itself, which keeps nothing; while it holds
    /// one (the origin listed again since), the fresh mark. The lookup runs only after a purge.
    pub(crate) fn purge_mark_for(
        &self,
        origin: &Origin,
        skill: &SkillUri,
        seen: Option<u64>,
    ) -> PurgeMark {
        let now = self.purge_mark(origin);
        match (now.0, seen) {
            (Some(n), Some(s)) if n != s && !self.index.holds_entry(origin, skill).unwrap_or(false) => {
                PurgeMark(Some(s))
            }
            _ => now,
        }
    }

    /// What a request for `origin`'s entries notes before it is sent: the time, then the purge
    /// mark ([`Cache::put_answered`]).
    pub(crate) fn asked(&self, origin: &Origin) -> Asked {
        let at_ms = now_ms();
        Asked {
            mark: self.purge_mark(origin),
            at_ms,
        }
    }

    /// Whether the index has seen no purge since `mark` was taken. Called under the store's
    /// shared lock, which a purge's exclusive lock excludes: the answer holds until the lock is
    /// given back.
    fn unpurged_since(&self, mark: PurgeMark) -> bool {
        mark.0.is_some() && self.index.purges().ok() == mark.0
    }

    /// Whether a publish of `bytes` may be left to the write-behind keeper: the index takes
    /// writes and the disk has room (`BlobStore::has_room_for`). Where not, the load publishes
    /// itself, and a file it cannot keep is reported as not stored there and then.
    pub(crate) fn room_behind(&self, bytes: u64) -> bool {
        !self.index.is_read_only() && self.store.has_room_for(bytes)
    }

    /// The bytes on their way to the store (write-behind).
    pub(crate) fn pending(&self) -> &Pending {
        &self.pending
    }

    /// Whether this handle has yet to sweep `origin`'s staging; marks it swept.
    fn unswept(&self, origin: &Origin) -> bool {
        self.swept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin.clone())
    }

    /// Stores listed files of `origin`: published as one batch (all temporaries written and
    /// checked, synced together, linked, then one sync per touched folder), then recorded
    /// (R-C3, R-C4): a blob is on disk before its row. One file is a batch of one. A damaged
    /// blob in the way of a publish is repaired here, in the order R-C3 asks — its record dropped
    /// first, then the blob quarantined, then published again — so a crash in between leaves no
    /// record of a missing blob. With a quota (R-Q4), room is made first, inside the origin's
    /// publish section, evicting only that origin's least recently used blobs.
    ///
    /// # Errors
    /// [`StoreError::BlobMismatch`](crate::error::StoreError::BlobMismatch) if any bytes are not the listed ones (then nothing of the batch is
    /// published); I/O and index errors. Files recorded before an index error stay recorded.
    #[cfg(any(test, feature = "internals"))]
    pub fn store_files(
        &self,
        origin: &Origin,
        files: &[(&ManifestFile, &[u8])],
    ) -> Result<(), Error> {
        self.store_files_since(origin, files, None).map(drop)
    }

    /// [`Cache::store_files`]; with `fetched`, only if the index has seen no purge since that
    /// mark (false, and nothing written, when it has).
    fn store_files_since(
        &self,
        origin: &Origin,
        files: &[(&ManifestFile, &[u8])],
        fetched: Option<PurgeMark>,
    ) -> Result<bool, Error> {
        if files.is_empty() {
            return Ok(true);
        }
        // Shared lock from the first blob write until the last row is committed: gc cannot slip
        // between (R-H11). Inside it, the origin's publish section, taken with or without a
        // quota (so that staging holds nothing live while it is held), from the quota's count
        // to the last row: two publishers of one origin never both count the same room (R-Q4).
        let _lock = self.store.lock(LockMode::Shared, "publish")?;
        if fetched.is_some_and(|mark| !self.unpurged_since(mark)) {
            return Ok(false);
        }
        let _section = self.store.lock_origin(origin)?;
        if self.origin_quota.is_none() && self.unswept(origin) {
            // Inside the section nothing in the origin's staging is live: what is there is a
            // crashed publisher's leftover (a quota's `make_room` sweeps at every publish).
            if let Err(e) = self.store.sweep_origin_tmp(origin) {
                tracing::debug!(error = %e, "could not sweep an origin's staging");
            }
        }
        let mut items: Vec<crate::store::Item<'_>> = files
            .iter()
            .map(|(f, b)| (f.digest(), f.size(), *b))
            .collect();
        for (d, _, _) in &items {
            // A publish may quarantine a damaged copy of this digest: drop it from memory too.
            self.memory.remove(origin, d);
        }
        // A damaged blob is repaired once; one that is in the way again (a writer racing us)
        // fails the publish rather than loop.
        for round in 0..2 {
            if let Some(quota) = self.origin_quota {
                self.make_room(origin, quota, &items)?;
            }
            let outcomes = self.store.publish(origin, &items)?;
            let mut blocked = Vec::new();
            let mut placed = Vec::with_capacity(items.len());
            for ((digest, size, bytes), outcome) in items.iter().zip(outcomes) {
                match outcome.evidence() {
                    Some(ev) => placed.push((*digest, *size, ev)),
                    None => blocked.push((*digest, *size, *bytes)),
                }
            }
            self.record_blobs(origin, &placed)?;
            if blocked.is_empty() {
                return Ok(true);
            }
            for (digest, _, _) in &blocked {
                let refused = |why: &str| {
                    Error::Store(crate::error::StoreError::Io {
                        op: "publish",
                        path: self.store.layout().blob_path(origin, digest),
                        source: std::io::Error::other(why.to_owned()),
                    })
                };
                if round == 1 {
                    return Err(refused("the blob kept changing under a concurrent writer"));
                }
                // Row first, then the blob (R-C3). An index that cannot drop the row leaves the
                // damaged blob in place (it fails every read, so it is never served) and the
                // publish fails.
                if !self.forget_record_and(origin, digest)? {
                    return Err(refused(
                        "a damaged blob is in the way and its record cannot be dropped",
                    ));
                }
                self.store.quarantine(origin, digest)?;
            }
            items = blocked;
        }
        Ok(true)
    }

    /// Records blobs that are now in place, each `(digest, size, evidence)`, in the index (one
    /// write for the batch) and in this process's memory of them.
    fn record_blobs(
        &self,
        origin: &Origin,
        placed: &[(crate::digest::Digest, u64, Evidence)],
    ) -> Result<(), Error> {
        if placed.is_empty() {
            return Ok(());
        }
        self.commit_point("index: record blob")?;
        let now = now_ms();
        let rows: Vec<(crate::digest::Digest, BlobRecord)> = placed
            .iter()
            .map(|&(digest, size, ev)| {
                let record = BlobRecord {
                    size,
                    ino: ev.ino,
                    dev: ev.dev,
                    ctime_ns: ev.ctime_ns,
                    last_access_ms: 0,
                };
                (digest, record)
            })
            .collect();
        self.index.put_blobs(origin, &rows, now)?;
        for &(digest, _, ev) in placed {
            let known = Known {
                evidence: Some(ev),
                touched_ms: now,
            };
            self.remember(origin, digest, known);
        }
        Ok(())
    }

    /// Forgets what this process knows of a blob and drops its record: the first half of a
    /// repair (row first, R-C3). False when a read-only or full index cannot drop it (R-H5).
    fn forget_record_and(
        &self,
        origin: &Origin,
        digest: &crate::digest::Digest,
    ) -> Result<bool, Error> {
        self.forget(origin, Some(digest));
        self.forget_record(origin, digest)
    }

    fn known(&self, origin: &Origin, digest: &crate::digest::Digest) -> Option<Known> {
        let map = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(origin.as_str())
            .and_then(|m| m.get(digest))
            .copied()
    }

    fn remember(&self, origin: &Origin, digest: crate::digest::Digest, known: Known) {
        let mut map = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match map.get_mut(origin.as_str()) {
            Some(m) => {
                m.insert(digest, known);
            }
            None => {
                map.entry(origin.clone()).or_default().insert(digest, known);
            }
        }
    }

    /// Forgets what this process knows of a blob (or of every blob of an origin): its record
    /// and its bytes in the memory tier (R-V8: a quarantined, failed or missing disk copy is
    /// never answered from memory afterwards; R-C5: nor is a purged origin).
    fn forget(&self, origin: &Origin, digest: Option<&crate::digest::Digest>) {
        match digest {
            Some(d) => self.memory.remove(origin, d),
            None => self.memory.remove_origin(origin),
        }
        let mut map = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match digest {
            Some(d) => {
                if let Some(m) = map.get_mut(origin.as_str()) {
                    m.remove(d);
                }
            }
            None => {
                map.remove(origin.as_str());
            }
        }
    }

    /// Drops every remembered blob record (after gc or verify changed the store wholesale).
    pub(crate) fn forget_all(&self) {
        self.memory.clear();
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    fn evidence_from_index(
        &self,
        origin: &Origin,
        digest: &crate::digest::Digest,
    ) -> Result<Option<Evidence>, Error> {
        // Evidence from the index is confirmed again by one hashed read in this process (R-H4).
        Ok(self.index.blob(origin, digest)?.map(|r| Evidence {
            ino: r.ino,
            dev: r.dev,
            ctime_ns: r.ctime_ns,
            confirmed: false,
        }))
    }

    /// The memory tier alone: bytes this process verified against `file`'s digest and size,
    /// with no I/O — what a hit costs before any blocking hop (R-T1). The second value says the
    /// blob's access time is due to be written ([`Cache::touch`]), which the caller does off
    /// its fast path. Right for any entry that lists them, under both isolation modes: process
    /// memory is write-isolated, and every path that forgets a blob drops it from the tier.
    #[must_use]
    pub fn memory_hit(&self, origin: &Origin, file: &ManifestFile) -> Option<(VerifiedBytes, bool)> {
        if let Some(held) = self.pending.get(origin, &file.digest(), file.size()) {
            return Some((held, false));
        }
        self.memory
            .get(origin, &file.digest(), file.size(), now_ms(), ACCESS_GRAIN_MS)
            .map(|hit| (hit.bytes, hit.touch_due))
    }

    /// Writes a blob's access time (best effort, for least-recently-used gc; never waits).
    pub fn touch(&self, origin: &Origin, digest: &crate::digest::Digest) {
        self.index.touch_blob(origin, digest, now_ms());
    }

    /// A small stored hit served on the caller's thread (R-T1): no blocking hop, because it
    /// needs nothing that can wait — no index query, no index write, no quarantine. Anything
    /// that would need one (evidence only the index holds, a copy that is missing or fails, a
    /// file over [`QUICK_HIT_MAX_BYTES`], an I/O error) gives `None`, and the caller takes the
    /// full path (`Cache::read_file` on a blocking thread), which reads the file again and
    /// deals with it. What is verified is verified the same way: re-hashed under `Rehash`,
    /// evidence held on the same handle before and after under `Guaranteed` (R-C2). The second
    /// value says the access time is due ([`Cache::touch`], written off the fast path).
    #[must_use]
    pub fn quick_hit(&self, origin: &Origin, file: &ManifestFile) -> Option<(VerifiedBytes, bool)> {
        if file.size() > QUICK_HIT_MAX_BYTES {
            return None;
        }
        let digest = file.digest();
        let known = self.known(origin, &digest);
        let evidence = self.evidence_in_memory(known)?;
        match self.stored_copy(origin, file, known, evidence) {
            Ok(Stored::Hit(bytes, now_known)) => {
                let touch_due = self.settle(origin, digest, known, now_known, &bytes, now_ms());
                Some((bytes, touch_due))
            }
            _ => None,
        }
    }

    /// Reads a listed file from the cache, verified against the listing (R-C2, R-V2). A copy
    /// that fails is quarantined and forgotten (row first, then blob: R-V8).
    ///
    /// # Errors
    /// I/O and index errors (a failed copy is [`CachedRead::Failed`], not an error).
    // The host path reads through the batch below; one file at a time is the tests' view.
    #[cfg(any(test, feature = "internals"))]
    pub fn read_file(&self, origin: &Origin, file: &ManifestFile) -> Result<CachedRead, Error> {
        let looked_at = now_ms();
        if let Some(read) = self.read_or_missing(origin, file)? {
            return Ok(read);
        }
        self.forget_missing(origin, &[file.digest()], looked_at)?;
        Ok(CachedRead::Miss)
    }

    /// `Cache::read_file` up to a missing copy: `None` then, with the blob forgotten in this
    /// process but its record (if any) still to drop, which the caller does — for a whole batch
    /// in one index write.
    fn read_or_missing(
        &self,
        origin: &Origin,
        file: &ManifestFile,
    ) -> Result<Option<CachedRead>, Error> {
        let digest = file.digest();
        // Bytes on their way to the store first, then the memory tier: bytes this process
        // verified against this digest and size are right for any entry that lists them, under
        // both isolation modes (process memory is write-isolated). Every path that forgets the
        // blob drops them from the tier too.
        if let Some(held) = self.pending.get(origin, &digest, file.size()) {
            return Ok(Some(CachedRead::Hit(held)));
        }
        let now = now_ms();
        if let Some(hit) = self
            .memory
            .get(origin, &digest, file.size(), now, ACCESS_GRAIN_MS)
        {
            if hit.touch_due {
                self.index.touch_blob(origin, &digest, now);
            }
            return Ok(Some(CachedRead::Hit(hit.bytes)));
        }
        let known = self.known(origin, &digest);
        let evidence = match self.evidence_in_memory(known) {
            Some(evidence) => evidence,
            None => self.evidence_from_index(origin, &digest)?,
        };
        let (bytes, now_known) = match self.stored_copy(origin, file, known, evidence)? {
            Stored::Hit(bytes, now_known) => (bytes, now_known),
            Stored::Unconfirmed(bytes, mut now_known) => {
                // Confirmed evidence did not hold: another process may have republished the
                // blob. Start again from the index's (unconfirmed) record.
                now_known.evidence = self.evidence_from_index(origin, &digest)?;
                (bytes, now_known)
            }
            Stored::Failed(m) => return self.failed_copy(origin, file, m).map(Some),
            Stored::Missing => {
                self.forget(origin, Some(&digest));
                return Ok(None);
            }
        };
        if self.settle(origin, digest, known, now_known, &bytes, now) {
            // Best effort: a busy, full or read-only index skips it, never fails the hit
            // (R-H5); the next hit after the grain tries again either way.
            self.index.touch_blob(origin, &digest, now);
        }
        Ok(Some(CachedRead::Hit(bytes)))
    }

    /// The evidence a read may use from this process's memory: none under `Rehash` (re-hashing
    /// needs nothing from the index); under `Guaranteed` the blob's record. `None` when only the
    /// index has the record.
    #[allow(clippy::option_option)]
    fn evidence_in_memory(&self, known: Option<Known>) -> Option<Option<Evidence>> {
        match (self.isolation, known) {
            (Isolation::Rehash, _) => Some(None),
            (Isolation::Guaranteed, Some(k)) => Some(k.evidence),
            (Isolation::Guaranteed, None) => None,
        }
    }

    /// The stored copy of `file`, verified by the store under the isolation mode, and the
    /// blob's record as this read leaves it.
    fn stored_copy(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        known: Option<Known>,
        evidence: Option<Evidence>,
    ) -> Result<Stored, Error> {
        let read = self
            .store
            .read(origin, &file.digest(), file.size(), self.isolation, evidence)?;
        let mut now_known = known.unwrap_or(Known {
            evidence,
            touched_ms: 0,
        });
        Ok(match read {
            BlobRead::Confirmed(bytes, ev) => {
                now_known.evidence = Some(ev);
                Stored::Hit(bytes, now_known)
            }
            BlobRead::Verified(bytes)
                if self.isolation == Isolation::Guaranteed
                    && bytes.rehashed()
                    && evidence.is_some_and(|e| e.confirmed) =>
            {
                Stored::Unconfirmed(bytes, now_known)
            }
            BlobRead::Verified(bytes) => Stored::Hit(bytes, now_known),
            BlobRead::Failed(m) => Stored::Failed(m),
            BlobRead::Missing => Stored::Missing,
        })
    }

    /// Keeps what a hit taught this process: the blob's record and, for a private copy, the
    /// bytes in the memory tier. True when the blob's access time is due to be written (the
    /// caller writes it, where it may).
    fn settle(
        &self,
        origin: &Origin,
        digest: crate::digest::Digest,
        known: Option<Known>,
        mut now_known: Known,
        bytes: &VerifiedBytes,
        now: u64,
    ) -> bool {
        let touch_due = now.saturating_sub(now_known.touched_ms) >= ACCESS_GRAIN_MS;
        if touch_due {
            now_known.touched_ms = now;
        }
        if known != Some(now_known) {
            self.remember(origin, digest, now_known);
        }
        // A map is only as isolated as the file under it: the tier keeps private copies only
        // (and a mapped hit costs about what a tier hit does).
        if !bytes.is_mapped() {
            self.memory.insert(origin, bytes, now_known.touched_ms);
        }
        touch_due
    }

    /// A cached copy failed verification: forget it and move it aside.
    fn failed_copy(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        mismatch: Mismatch,
    ) -> Result<CachedRead, Error> {
        let digest = file.digest();
        tracing::warn!(origin = %origin, uri = %file.uri(), mismatch = %mismatch, "a cached copy failed verification");
        // Row first, then the blob (R-C3); the bytes are kept aside, never served (R-V8). An
        // index that cannot drop the row (read-only, full) leaves the blob in place: it is
        // verified on every read, so it is still never served, and the caller still fetches once
        // from the server (R-V9, R-H5). A quarantine that fails is said, not fatal, for the same
        // reason.
        self.forget(origin, Some(&digest));
        if self.forget_record(origin, &digest)?
            && let Err(e) = self.store.quarantine(origin, &digest)
        {
            tracing::warn!(origin = %origin, digest = %digest, error = %e, "could not quarantine a failed blob");
        }
        Ok(CachedRead::Failed(mismatch))
    }

    /// Drops a blob's record; false when a read-only or full index cannot (R-H5).
    fn forget_record(
        &self,
        origin: &Origin,
        digest: &crate::digest::Digest,
    ) -> Result<bool, Error> {
        self.forget_records(origin, std::slice::from_ref(digest), None)
    }

    /// Drops the records of blobs of `origin` whose copies a read found missing, in one index
    /// write — only records older than `looked_at_ms`, when the read began: a publisher may have
    /// linked and recorded the blob since (reads take no lock), and its fresh row must stay, or
    /// its blob would be an orphan gc removes. A row is recorded only after its blob is linked
    /// (R-C3), so a row recorded after the read began is one the read could not have seen.
    fn forget_missing(
        &self,
        origin: &Origin,
        digests: &[crate::digest::Digest],
        looked_at_ms: u64,
    ) -> Result<bool, Error> {
        self.forget_records(origin, digests, Some(looked_at_ms))
    }

    /// Drops blob records of `origin` in one index write (only those recorded before
    /// `recorded_before_ms`, when given); false when a read-only or full index cannot (R-H5). A
    /// record of a missing blob is harmless (the next read misses again), so such an index never
    /// fails a miss the server can serve.
    fn forget_records(
        &self,
        origin: &Origin,
        digests: &[crate::digest::Digest],
        recorded_before_ms: Option<u64>,
    ) -> Result<bool, Error> {
        if digests.is_empty() {
            return Ok(true);
        }
        self.commit_point("index: forget blob")?;
        match self.index.remove_blobs(origin, digests, recorded_before_ms) {
            Ok(()) => Ok(true),
            Err(e) if e.cannot_record() => {
                tracing::debug!(origin = origin.as_str(), blobs = digests.len(), error = %e, "blob record kept");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `Cache::read_file` for many files of one origin, verified in parallel on every core
    /// when there are enough bytes to hash to pay for the threads: what whole-skill operations
    /// use. The records of missing copies are dropped in one index write for the whole call.
    /// Results are in the order of `files`.
    ///
    /// # Errors
    /// I/O and index errors, per file.
    pub fn read_files(
        &self,
        origin: &Origin,
        files: &[ManifestFile],
    ) -> Vec<Result<CachedRead, Error>> {
        let looked_at = now_ms();
        let bytes: u64 = files.iter().map(ManifestFile::size).sum();
        let threads = if bytes < PARALLEL_READ_MIN_BYTES {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, std::num::NonZeroUsize::get)
                .min(files.len().max(1))
        };
        let mut slots: Vec<Option<Result<Option<CachedRead>, Error>>> =
            std::iter::repeat_with(|| None).take(files.len()).collect();
        if threads <= 1 {
            for (f, slot) in files.iter().zip(&mut slots) {
                *slot = Some(self.read_or_missing(origin, f));
            }
        } else {
            let chunk = files.len().div_ceil(threads);
            std::thread::scope(|scope| {
                for (files, slots) in files.chunks(chunk).zip(slots.chunks_mut(chunk)) {
                    scope.spawn(move || {
                        for (f, slot) in files.iter().zip(slots) {
                            *slot = Some(self.read_or_missing(origin, f));
                        }
                    });
                }
            });
        }
        let missing: Vec<crate::digest::Digest> = files
            .iter()
            .zip(&slots)
            .filter(|(_, s)| matches!(s, Some(Ok(None))))
            .map(|(f, _)| f.digest())
            .collect();
        // One write for the batch; should it fail, each file is tried on its own so that each
        // carries its own error.
        let batch_forgotten = self.forget_missing(origin, &missing, looked_at).is_ok();
        files
            .iter()
            .zip(slots)
            .map(|(f, s)| match s {
                Some(Ok(Some(read))) => Ok(read),
                Some(Ok(None)) if batch_forgotten => Ok(CachedRead::Miss),
                Some(Ok(None)) => self
                    .forget_missing(origin, &[f.digest()], looked_at)
                    .map(|_| CachedRead::Miss),
                Some(Err(e)) => Err(e),
                None => Ok(CachedRead::Miss),
            })
            .collect()
    }

    /// Removes everything of `origin`: index rows first, then its blob tree (R-C5); then
    /// erases what the index's files still hold of deleted rows (K3: [`Index::erase_deleted`]),
    /// so that nothing of the origin stays readable under the root.
    ///
    /// # Errors
    /// I/O and index errors. One from the erasing comes after the origin's rows and files are
    /// gone; purging again (any origin, even one already gone) erases again.
    pub fn purge(&self, origin: &Origin) -> Result<(), Error> {
        let _lock = self.store.lock(LockMode::Exclusive, "purge")?;
        self.purge_locked(origin)?;
        self.erase_purged()
    }

    /// [`Cache::purge`] without its lock and its erasing, for a caller holding the exclusive
    /// lock that erases once after purging several origins.
    pub(crate) fn purge_locked(&self, origin: &Origin) -> Result<(), Error> {
        self.forget(origin, None);
        let rows = self.with_room("purge", || {
            self.commit_point("index: purge")?;
            Ok(self.index.purge(origin)?)
        });
        if let Err(first) = rows {
            if !first.is_disk_full() {
                return Err(first);
            }
            // Even the reserve was not room enough: free the origin's blobs first, then try the
            // rows again (a row whose blob is gone only reads as a miss).
            tracing::warn!(origin = %origin, error = %first, "purge: the disk is full; removing the blobs before the rows");
            self.store.remove_origin(origin)?;
            self.commit_point("index: purge")?;
            self.index.purge(origin)?;
        } else {
            self.store.remove_origin(origin)?;
        }
        // Its publish-section lock too (R-C5): nobody is inside it under the exclusive lock.
        self.store.remove_section(origin)?;
        self.store.keep_reserve();
        Ok(())
    }

    /// After a purge, under the exclusive lock (K3): the first layout's shared staging and
    /// quarantine go (they may hold any origin's bytes), and the index is rewritten so that no
    /// deleted row stays readable in its files. Runs after the blobs are gone, whose room the
    /// rewrite may need; the store's reserve is given back if that is not enough (R-H5).
    pub(crate) fn erase_purged(&self) -> Result<(), Error> {
        self.store.sweep_tmp(Duration::ZERO)?;
        self.with_room("purge", || {
            self.commit_point("index: erase")?;
            Ok(self.index.erase_deleted()?)
        })?;
        self.store.keep_reserve();
        Ok(())
    }

    /// Runs an index write; if the disk is full, gives back the store's reserve and runs it once
    /// more (R-H5: gc and purge free space, so they must be able to commit on a full disk).
    pub(crate) fn with_room<T>(
        &self,
        what: &'static str,
        mut write: impl FnMut() -> Result<T, Error>,
    ) -> Result<T, Error> {
        match write() {
            Err(e) if e.is_disk_full() && self.store.release_reserve() => {
                tracing::warn!(error = %e, "the disk is full: the cache's reserve was given back so that {what} can commit");
                write()
            }
            other => other,
        }
    }

    /// Announces an index commit to the write seam: a crash point like any filesystem write.
    pub(crate) fn commit_point(&self, what: &'static str) -> Result<(), Error> {
        self.store
            .disk()
            .commit_point(what)
            .map_err(|source| Error::Store(crate::error::StoreError::Io {
                op: what,
                path: self.store.layout().index_db(),
                source,
            }))
    }
}
