//! The host API's values as JS classes and plain objects: thin wrappers that hold the Rust value
//! and hand out its fields. Nothing here decides anything; every check stays in the Rust library.

use napi::Env;
use napi::bindgen_prelude::{BufferSlice, Result};
use napi_derive::napi;
use serde_json::{Value, json};
use skillcache::entry::EntryDiff as Diff;
use skillcache::{Provenance, Verification};

/// A validated skill entry (`skillcache::SkillEntry`): what exists is valid.
#[napi]
#[derive(Clone)]
pub struct SkillEntry {
    pub(crate) inner: skillcache::SkillEntry,
}

#[napi]
impl SkillEntry {
    /// The `SKILL.md` URI.
    #[napi(getter)]
    pub fn uri(&self) -> String {
        self.inner.uri().as_str().to_owned()
    }
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }
    #[napi(getter)]
    pub fn description(&self) -> String {
        self.inner.description().to_owned()
    }
    /// `resources: "dynamic"`: no digests, nothing to verify against.
    #[napi(getter)]
    pub fn is_dynamic(&self) -> bool {
        self.inner.is_dynamic()
    }
    /// The approval binding (hex), `null` for a dynamic skill.
    #[napi(getter)]
    pub fn binding(&self) -> Option<String> {
        self.inner.binding().map(|b| b.to_string())
    }
    /// The manifest's files (empty for a dynamic skill).
    #[napi(getter)]
    pub fn files(&self) -> Vec<ManifestFile> {
        manifest_files(&self.inner)
    }
    /// The entry's frontmatter.
    #[napi(getter, ts_return_type = "Record<string, unknown>")]
    pub fn frontmatter(&self) -> Value {
        self.inner.to_json()["frontmatter"].clone()
    }
    /// What the frontmatter's `allowed-tools` asks for, verbatim (a request, never a grant).
    #[napi(getter, ts_return_type = "unknown")]
    pub fn requested_tools(&self) -> Option<Value> {
        self.inner.requested_tools().cloned()
    }
    /// The entry in wire form.
    #[napi(js_name = "toJSON", ts_return_type = "Record<string, unknown>")]
    pub fn to_json(&self) -> Value {
        self.inner.to_json()
    }
}

/// One file of a manifest: its URI, the SHA-256 it must have (hex) and its size in bytes.
#[napi(object)]
pub struct ManifestFile {
    pub uri: String,
    pub digest: String,
    pub size: f64,
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn manifest_files(entry: &skillcache::SkillEntry) -> Vec<ManifestFile> {
    entry.manifest().map_or_else(Vec::new, |m| {
        m.files()
            .iter()
            .map(|f| ManifestFile {
                uri: f.uri().as_str().to_owned(),
                digest: f.digest().to_string(),
                size: f.size() as f64,
            })
            .collect()
    })
}

/// A file whose digest changed between two entries.
#[napi(object)]
pub struct ChangedFile {
    pub uri: String,
    pub old: String,
    pub new: String,
}

/// What changed between two entries of one skill.
#[napi(object)]
pub struct EntryDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<ChangedFile>,
    /// The frontmatter keys that differ.
    pub frontmatter: Vec<String>,
    pub dynamic_changed: bool,
}

impl From<&Diff> for EntryDiff {
    fn from(d: &Diff) -> EntryDiff {
        let uris = |v: &[skillcache::FileUri]| v.iter().map(|u| u.as_str().to_owned()).collect();
        EntryDiff {
            added: uris(&d.added),
            removed: uris(&d.removed),
            changed: d
                .changed
                .iter()
                .map(|c| ChangedFile {
                    uri: c.uri.as_str().to_owned(),
                    old: c.old.to_string(),
                    new: c.new.to_string(),
                })
                .collect(),
            frontmatter: d.frontmatter.iter().map(|f| f.key.clone()).collect(),
            dynamic_changed: d.dynamic_changed,
        }
    }
}

/// What changed, as the plain fields of an error (`DeclinedError.changes`): the same shape as
/// [`EntryDiff`].
pub(crate) fn diff_json(d: &Diff) -> Value {
    json!({
        "added": d.added.iter().map(skillcache::FileUri::as_str).collect::<Vec<_>>(),
        "removed": d.removed.iter().map(skillcache::FileUri::as_str).collect::<Vec<_>>(),
        "changed": d.changed.iter()
            .map(|c| json!({"uri": c.uri.as_str(), "old": c.old.to_string(),
                "new": c.new.to_string()}))
            .collect::<Vec<_>>(),
        "frontmatter": d.frontmatter.iter().map(|f| f.key.clone()).collect::<Vec<_>>(),
        "dynamicChanged": d.dynamic_changed,
    })
}

/// An entry as `entry`, `refresh` or `list` resolved it.
#[napi]
pub struct EntryInfo {
    info: skillcache::EntryInfo,
}

impl From<skillcache::EntryInfo> for EntryInfo {
    fn from(info: skillcache::EntryInfo) -> EntryInfo {
        EntryInfo { info }
    }
}

#[napi]
impl EntryInfo {
    #[napi(getter)]
    pub fn entry(&self) -> SkillEntry {
        SkillEntry {
            inner: self.info.entry.clone(),
        }
    }
    /// It was fresh in the index and the server was not asked.
    #[napi(getter, js_name = "fromCache")]
    pub fn is_from_cache(&self) -> bool {
        self.info.from_cache
    }
    /// Storing it revoked an approval.
    #[napi(getter)]
    pub fn revoked(&self) -> bool {
        self.info.revoked
    }
    /// What changed since the approved (or previously stored) entry.
    #[napi(getter)]
    pub fn diff(&self) -> Option<EntryDiff> {
        self.info.diff.as_ref().map(EntryDiff::from)
    }
    /// A cached entry past its `ttlMs`, used offline because stale entries are allowed.
    #[napi(getter)]
    pub fn stale(&self) -> bool {
        self.info.stale
    }
}

/// One file's bytes with their origin, URI and what they were checked against, as the parts
/// `index.js` makes its `SkillFile` of: `[bytes, flags, origin, uri, digest]` (`digest` is
/// `null` for a dynamic skill's file; the flags are [`flags`]'s). A `SkillFile` made in JS over
/// plain values costs a hit a fraction of a wrapped Rust object (`docs/performance.md`, J3).
pub(crate) type FileParts<'env> = (BufferSlice<'env>, u32, String, String, Option<String>);

/// `file` as [`FileParts`]: its bytes copied into memory the engine owns.
pub(crate) fn file_parts<'env>(
    env: &'env Env,
    file: &skillcache::SkillFile,
) -> Result<FileParts<'env>> {
    Ok((
        BufferSlice::copy_from(env, file.bytes())?,
        flags(file),
        file.origin().as_str().to_owned(),
        file.uri().as_str().to_owned(),
        match file.verification() {
            Verification::Verified(d) => Some(d.to_string()),
            Verification::Unverified => None,
        },
    ))
}

/// What a read says of a file besides its bytes, as bits (`skillfile.js` reads them): 1
/// verified, 2 and 4 the provenance (0 cache, 1 server, 2 the shared tier), 8 retried, 16
/// stored.
pub(crate) fn flags(file: &skillcache::SkillFile) -> u32 {
    let provenance = match file.provenance() {
        Provenance::Cache => 0,
        Provenance::Server => 1,
        Provenance::L2 => 2,
    };
    u32::from(matches!(file.verification(), Verification::Verified(_)))
        | provenance << 1
        | u32::from(file.retried()) << 3
        | u32::from(file.stored()) << 4
}

/// A blob of an origin, by digest.
#[napi(object)]
pub struct BlobRef {
    pub origin: String,
    pub digest: String,
}

/// What `verify` found.
#[napi(object)]
pub struct VerifyReport {
    /// Blobs re-hashed.
    pub checked: f64,
    /// Nothing corrupt, missing, orphaned or stray.
    pub is_clean: bool,
    /// Blobs whose bytes did not match: quarantined.
    pub corrupt: Vec<BlobRef>,
    pub missing: Vec<BlobRef>,
    pub orphaned: Vec<BlobRef>,
    /// Files under the root that are not the cache's.
    pub strays: Vec<String>,
}

#[allow(clippy::cast_precision_loss)]
impl From<&skillcache::VerifyReport> for VerifyReport {
    fn from(r: &skillcache::VerifyReport) -> VerifyReport {
        let blobs = |v: &[(skillcache::Origin, skillcache::Digest)]| {
            v.iter()
                .map(|(o, d)| BlobRef {
                    origin: o.as_str().to_owned(),
                    digest: d.to_string(),
                })
                .collect()
        };
        VerifyReport {
            checked: r.checked as f64,
            is_clean: r.is_clean(),
            corrupt: blobs(&r.corrupt),
            missing: blobs(&r.missing),
            orphaned: blobs(&r.orphaned),
            strays: r.strays.iter().map(|p| p.display().to_string()).collect(),
        }
    }
}

/// What `gc` removed.
#[napi(object)]
pub struct GcReport {
    pub unreferenced: f64,
    pub not_blobs: f64,
    pub evicted: f64,
    pub temporaries: f64,
    pub bytes_before: f64,
    pub bytes_after: f64,
    pub over_budget: bool,
}

#[allow(clippy::cast_precision_loss)]
impl From<&skillcache::GcReport> for GcReport {
    fn from(r: &skillcache::GcReport) -> GcReport {
        GcReport {
            unreferenced: r.unreferenced as f64,
            not_blobs: r.not_blobs as f64,
            evicted: r.evicted as f64,
            temporaries: r.temporaries as f64,
            bytes_before: r.bytes_before as f64,
            bytes_after: r.bytes_after as f64,
            over_budget: r.over_budget,
        }
    }
}

/// What the cache root holds, counted (`inventory`).
#[napi(object)]
pub struct Inventory {
    /// Origins with entries or blobs.
    pub origins: f64,
    /// Stored entries, over every origin and principal.
    pub entries: f64,
    /// Recorded blobs.
    pub blobs: f64,
    /// Their total size.
    pub blob_bytes: f64,
    /// Files in quarantine (copies that failed verification, kept for inspection).
    pub quarantined: f64,
    /// The index's schema version.
    pub schema_version: u32,
    /// Whether the index could only be opened read-only.
    pub index_read_only: bool,
}

#[allow(clippy::cast_precision_loss)]
impl From<skillcache::Inventory> for Inventory {
    fn from(i: skillcache::Inventory) -> Inventory {
        Inventory {
            origins: i.origins as f64,
            entries: i.entries as f64,
            blobs: i.blobs as f64,
            blob_bytes: i.blob_bytes as f64,
            quarantined: i.quarantined as f64,
            schema_version: i.schema_version,
            index_read_only: i.index_read_only,
        }
    }
}

/// One entry the cache holds (`cachedEntries`).
#[napi(object)]
pub struct CachedEntry {
    pub origin: String,
    pub uri: String,
    #[napi(ts_type = "'public' | 'private'")]
    pub scope: String,
    /// The principal of a private entry (empty for a public one).
    pub principal: String,
    /// How many files its manifest lists; 0 for a dynamic skill.
    pub files: f64,
    /// The sum of their declared sizes.
    pub bytes: f64,
    /// Whether its `ttlMs` has not run out yet.
    pub fresh: bool,
}

#[allow(clippy::cast_precision_loss)]
impl From<skillcache::CachedEntry> for CachedEntry {
    fn from(e: skillcache::CachedEntry) -> CachedEntry {
        CachedEntry {
            origin: e.origin.as_str().to_owned(),
            uri: e.uri.as_str().to_owned(),
            scope: e.scope.to_string(),
            principal: e.principal,
            files: e.files as f64,
            bytes: e.bytes as f64,
            fresh: e.fresh,
        }
    }
}
