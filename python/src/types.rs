//! The host API's values as Python classes: thin wrappers that hold the Rust value and hand out
//! its fields. Nothing here decides anything; every check stays in the Rust library.

use std::sync::Arc;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};
use skillcache::entry::EntryDiff;
use skillcache::{EntryInfo, Provenance, SkillEntry, SkillFile, Verification};

use crate::json;

/// `value` as Python's `repr` writes it: what every `__repr__` of the package shows of a string
/// or a list, never Rust's `Debug` form (whose escapes and quotes are not Python's).
pub(crate) fn py_repr<'py, T: IntoPyObject<'py>>(py: Python<'py>, value: T) -> PyResult<String> {
    Ok(value.into_bound_py_any(py)?.repr()?.to_string())
}

/// One file of a skill's manifest: what its bytes must match.
#[pyclass(module = "skillcache", name = "ManifestFile", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct PyManifestFile {
    /// The file's URI (the server's spelling).
    uri: String,
    /// `sha256:` and 64 hex digits.
    digest: String,
    /// Bytes.
    size: u64,
}

#[pymethods]
impl PyManifestFile {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ManifestFile(uri={}, digest={}, size={})",
            py_repr(py, &self.uri)?,
            py_repr(py, &self.digest)?,
            self.size
        ))
    }
}

/// A validated skill entry (`skillcache::SkillEntry`): what exists is valid.
#[pyclass(module = "skillcache", name = "SkillEntry", frozen)]
pub(crate) struct PySkillEntry {
    pub(crate) inner: SkillEntry,
}

impl PySkillEntry {
    pub(crate) fn files_list(&self) -> Vec<PyManifestFile> {
        self.inner.manifest().map_or_else(Vec::new, |m| {
            m.files()
                .iter()
                .map(|f| PyManifestFile {
                    uri: f.uri().as_str().to_owned(),
                    digest: f.digest().to_string(),
                    size: f.size(),
                })
                .collect()
        })
    }
}

#[pymethods]
impl PySkillEntry {
    /// The `SKILL.md` URI.
    #[getter]
    fn uri(&self) -> &str {
        self.inner.uri().as_str()
    }
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }
    #[getter]
    fn description(&self) -> &str {
        self.inner.description()
    }
    /// `resources: "dynamic"`: no digests, nothing to verify against (the host's `dynamic` policy decides
    /// whether it loads).
    #[getter]
    fn is_dynamic(&self) -> bool {
        self.inner.is_dynamic()
    }
    /// The approval binding (hex), `None` for a dynamic skill.
    #[getter]
    fn binding(&self) -> Option<String> {
        self.inner.binding().map(|b| b.to_string())
    }
    /// The manifest's files (empty for a dynamic skill).
    #[getter]
    fn files(&self) -> Vec<PyManifestFile> {
        self.files_list()
    }
    /// The entry's frontmatter, as a dict.
    #[getter]
    fn frontmatter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::to_py(py, &self.inner.to_json()["frontmatter"])
    }
    /// What the frontmatter's `allowed-tools` asks for, verbatim (a request, never a grant).
    #[getter]
    fn requested_tools<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .requested_tools()
            .map(|v| json::to_py(py, v))
            .transpose()
    }
    /// The entry in wire form (a dict).
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::to_py(py, &self.inner.to_json())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PySkillEntry>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
    fn __hash__(&self) -> u64 {
        // Entries are equal when their wire forms are: hash the URI and the binding.
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(self.inner.uri().as_str(), &mut h);
        std::hash::Hash::hash(&self.binding(), &mut h);
        std::hash::Hasher::finish(&h)
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "SkillEntry(uri={}, name={})",
            py_repr(py, self.uri())?,
            py_repr(py, self.name())?
        ))
    }
}

/// What changed between two entries of one skill.
#[pyclass(module = "skillcache", name = "EntryDiff", frozen, get_all)]
pub(crate) struct PyEntryDiff {
    /// Files listed now and not before.
    added: Vec<String>,
    /// Files listed before and not now.
    removed: Vec<String>,
    /// `(uri, old digest, new digest)` for each file whose digest changed.
    changed: Vec<(String, String, String)>,
    /// Frontmatter keys that differ.
    frontmatter: Vec<String>,
    /// Whether the skill went from a manifest to `"dynamic"` or back.
    dynamic_changed: bool,
}

impl From<EntryDiff> for PyEntryDiff {
    fn from(d: EntryDiff) -> PyEntryDiff {
        PyEntryDiff {
            added: d.added.iter().map(|u| u.as_str().to_owned()).collect(),
            removed: d.removed.iter().map(|u| u.as_str().to_owned()).collect(),
            changed: d
                .changed
                .iter()
                .map(|c| {
                    (
                        c.uri.as_str().to_owned(),
                        c.old.to_string(),
                        c.new.to_string(),
                    )
                })
                .collect(),
            frontmatter: d.frontmatter.iter().map(|f| f.key.clone()).collect(),
            dynamic_changed: d.dynamic_changed,
        }
    }
}

#[pymethods]
impl PyEntryDiff {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "EntryDiff(added={}, removed={}, changed={}, frontmatter={}, dynamic_changed={})",
            py_repr(py, &self.added)?,
            py_repr(py, &self.removed)?,
            py_repr(py, &self.changed)?,
            py_repr(py, &self.frontmatter)?,
            py_repr(py, self.dynamic_changed)?
        ))
    }
}

/// An entry as `SkillCache.entry`, `refresh` or `list` resolved it.
#[pyclass(module = "skillcache", name = "EntryInfo", frozen, get_all)]
pub(crate) struct PyEntryInfo {
    entry: Py<PySkillEntry>,
    /// It was fresh in the index and the server was not asked.
    from_cache: bool,
    /// Storing it revoked an approval: the skill changed since it was approved.
    revoked: bool,
    /// What changed since the approved (or previously stored) entry.
    diff: Option<Py<PyEntryDiff>>,
    /// A cached entry past its `ttlMs`, used offline because stale entries are allowed.
    stale: bool,
}

impl PyEntryInfo {
    pub(crate) fn new(py: Python<'_>, info: EntryInfo) -> PyResult<PyEntryInfo> {
        Ok(PyEntryInfo {
            entry: Py::new(py, PySkillEntry { inner: info.entry })?,
            from_cache: info.from_cache,
            revoked: info.revoked,
            diff: info
                .diff
                .map(|d| Py::new(py, PyEntryDiff::from(d)))
                .transpose()?,
            stale: info.stale,
        })
    }
}

#[pymethods]
impl PyEntryInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "EntryInfo(entry={}, from_cache={}, revoked={}, stale={})",
            self.entry.get().__repr__(py)?,
            py_bool(self.from_cache),
            py_bool(self.revoked),
            py_bool(self.stale)
        ))
    }
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// One file's bytes with their origin, URI and what they were checked against.
#[pyclass(module = "skillcache", name = "SkillFile", frozen)]
pub(crate) struct PySkillFile {
    file: SkillFile,
    /// The bytes as a Python `bytes`, made on first use and then shared.
    bytes: PyOnceLock<Py<PyBytes>>,
}

impl From<SkillFile> for PySkillFile {
    fn from(file: SkillFile) -> PySkillFile {
        PySkillFile {
            file,
            bytes: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl PySkillFile {
    /// The bytes (verified on this access unless `verified` is false: a dynamic skill's file).
    #[getter]
    fn bytes<'py>(&self, py: Python<'py>) -> &Bound<'py, PyBytes> {
        self.bytes
            .get_or_init(py, || PyBytes::new(py, self.file.bytes()).unbind())
            .bind(py)
    }
    /// The bytes decoded as UTF-8 (a `UnicodeDecodeError` for a file that is not text).
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        match std::str::from_utf8(self.file.bytes()) {
            Ok(s) => Ok(PyString::new(py, s)),
            // Python's own error, with the position, from Python's own decoder.
            Err(_) => self
                .bytes(py)
                .call_method1("decode", ("utf-8",))?
                .cast_into::<PyString>()
                .map_err(Into::into),
        }
    }
    /// The origin the bytes came from: tag model context with it.
    #[getter]
    fn origin(&self) -> &str {
        self.file.origin().as_str()
    }
    #[getter]
    fn uri(&self) -> &str {
        self.file.uri().as_str()
    }
    /// The digest the bytes matched on this access; `None` for a dynamic skill's file.
    #[getter]
    fn digest(&self) -> Option<String> {
        match self.file.verification() {
            Verification::Verified(d) => Some(d.to_string()),
            Verification::Unverified => None,
        }
    }
    /// Whether the bytes matched the held entry's size and digest (and, for a `SKILL.md`, its
    /// frontmatter) on this access.
    #[getter]
    fn verified(&self) -> bool {
        matches!(self.file.verification(), Verification::Verified(_))
    }
    /// `"cache"`, `"server"` or `"l2"`.
    #[getter]
    fn provenance(&self) -> &'static str {
        match self.file.provenance() {
            Provenance::Cache => "cache",
            Provenance::Server => "server",
            Provenance::L2 => "l2",
        }
    }
    /// Whether a cached copy failed and the file was fetched once more (at most once).
    #[getter]
    fn retried(&self) -> bool {
        self.file.retried()
    }
    /// Whether the bytes are kept in the cache.
    #[getter]
    fn stored(&self) -> bool {
        self.file.stored()
    }
    /// The file framed for model context: the origin label, the URI, that it came from
    /// an MCP server, its size and digest, and a boundary the content does not contain; text
    /// inlined unchanged, other bytes described. Off the GIL: finding the boundary hashes.
    fn framed(&self, py: Python<'_>) -> String {
        py.detach(|| self.file.framed())
    }
    fn __len__(&self) -> usize {
        self.file.bytes().len()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "SkillFile(uri={}, origin={}, digest={}, size={}, provenance={})",
            py_repr(py, self.uri())?,
            py_repr(py, self.origin())?,
            py_repr(py, self.digest())?,
            self.file.bytes().len(),
            py_repr(py, self.provenance())?
        ))
    }
}

/// Shared by a loaded skill and the reads through it.
pub(crate) type Loaded = Arc<skillcache::LoadedSkill>;
