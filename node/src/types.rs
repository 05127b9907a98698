//! The host API's values as JS classes and plain objects: thin wrappers that hold the Rust value
//! and hand out its fields. Nothing here decides anything; every check stays in the Rust library.

use napi::Env;
use napi::bindgen_prelude::{BufferSlice, External, Result, Unknown};
use napi_derive::napi;
use serde::Serialize;

use crate::defined;
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
    #[napi(getter, ts_return_type = "ManifestFile[]")]
    pub fn files<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::serialized(env, &manifest_files(&self.inner))
    }
    /// The entry's frontmatter.
    #[napi(getter, ts_return_type = "Record<string, unknown>")]
    pub fn frontmatter<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::json(env, &self.inner.to_json()["frontmatter"])
    }
    /// What the frontmatter's `allowed-tools` asks for, verbatim (a request, never a grant).
    #[napi(getter, ts_return_type = "unknown")]
    pub fn requested_tools<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::json(env, self.inner.requested_tools().unwrap_or(&Value::Null))
    }
    /// The entry in wire form.
    #[napi(js_name = "toJSON", ts_return_type = "Record<string, unknown>")]
    pub fn to_json<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::json(env, &self.inner.to_json())
    }
}

/// One file of a manifest: its URI, the SHA-256 it must have (hex) and its size in bytes.
#[napi(object, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
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
#[napi(object, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    pub uri: String,
    pub old: String,
    pub new: String,
}

/// What changed between two entries of one skill.
#[napi(object, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
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
    #[napi(getter, ts_return_type = "EntryDiff | null")]
    pub fn diff<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        match self.info.diff.as_ref() {
            Some(d) => defined::serialized(env, &EntryDiff::from(d)),
            None => defined::json(env, &Value::Null),
        }
    }
    /// A cached entry past its `ttlMs`, used offline because stale entries are allowed.
    #[napi(getter)]
    pub fn stale(&self) -> bool {
        self.info.stale
    }
}

/// A read's file, held in Rust: JS gets an `External`, an opaque value it cannot look into,
/// which `skillfile.js` keeps in its `SkillFile` and hands back to the functions below. The
/// verified bytes never leave the addon's custody: `_fileBytes` copies them into a new buffer on
/// each call. The size hint tells V8's collector what the external holds, so a loop of reads
/// does not pile up files it does not see.
pub(crate) type Held = External<skillcache::SkillFile>;

pub(crate) fn held(file: skillcache::SkillFile) -> Held {
    let size = file.bytes().len();
    External::new_with_size_hint(file, size)
}

/// A new `Buffer` of the file's bytes, its own memory: `napi_create_buffer_copy` makes each in
/// an `ArrayBuffer` of its own (Node's pool is only `Buffer.allocUnsafe`'s).
#[napi(js_name = "_fileBytes", skip_typescript)]
pub fn file_bytes<'env>(env: &'env Env, file: &Held) -> Result<BufferSlice<'env>> {
    BufferSlice::copy_from(env, file.bytes())
}

/// The bytes as a string, `null` for bytes that are not UTF-8 (`skillfile.js` throws).
#[napi(js_name = "_fileText", skip_typescript)]
pub fn file_text(file: &Held) -> Option<String> {
    std::str::from_utf8(file.bytes()).ok().map(str::to_owned)
}

/// The frame of the held bytes (`SkillFile::framed`): they never left custody, so nothing needs
/// checking again.
#[napi(js_name = "_fileFramed", skip_typescript)]
pub fn file_framed(file: &Held) -> String {
    file.framed()
}

#[napi(js_name = "_fileOrigin", skip_typescript)]
pub fn file_origin(file: &Held) -> String {
    file.origin().as_str().to_owned()
}

#[napi(js_name = "_fileUri", skip_typescript)]
pub fn file_uri(file: &Held) -> String {
    file.uri().as_str().to_owned()
}

#[napi(js_name = "_fileDigest", skip_typescript)]
pub fn file_digest(file: &Held) -> Option<String> {
    match file.verification() {
        Verification::Verified(d) => Some(d.to_string()),
        Verification::Unverified => None,
    }
}

#[napi(js_name = "_fileSize", skip_typescript)]
#[allow(clippy::cast_precision_loss)]
pub fn file_size(file: &Held) -> f64 {
    file.bytes().len() as f64
}

/// What a read says of a file besides its bytes, as bits (`skillfile.js` reads them): 1
/// verified, 2 and 4 the provenance (0 cache, 1 server, 2 the shared tier), 8 retried, 16
/// stored.
#[napi(js_name = "_fileFlags", skip_typescript)]
pub fn file_flags(file: &Held) -> u32 {
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
