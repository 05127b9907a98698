//! `skillcache.LockFile`: pinned skills (L1), read, built, checked and written by the Rust
//! `LockFile`.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use skillcache::LockFile;

use crate::errors::raise;
use crate::text::Label;
use crate::types::{PySkillEntry, py_repr};

/// One pinned skill.
#[pyclass(module = "skillcache", name = "LockedSkill", frozen, get_all)]
pub(crate) struct PyLockedSkill {
    origin: String,
    uri: String,
    /// The content binding when it was locked (hex).
    binding: String,
    /// `(uri, digest, size)` of each file.
    files: Vec<(String, String, u64)>,
}

#[pymethods]
impl PyLockedSkill {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "LockedSkill(origin={}, uri={}, files={})",
            py_repr(py, &self.origin)?,
            py_repr(py, &self.uri)?,
            self.files.len()
        ))
    }
}

/// A lock file (`skills.lock`): with one in force (`SkillCache(locked=...)`), a skill whose
/// entry differs from its pin is declined before any file is read.
#[pyclass(module = "skillcache", name = "LockFile", frozen)]
pub(crate) struct PyLockFile {
    inner: Mutex<LockFile>,
}

impl PyLockFile {
    /// The lock as it is now, for a cache to hold (later inserts do not change that cache).
    pub(crate) fn snapshot(&self) -> LockFile {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LockFile> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyLockFile {
    /// An empty lock.
    #[new]
    fn new() -> PyLockFile {
        PyLockFile {
            inner: Mutex::new(LockFile::new()),
        }
    }

    /// Reads and checks the lock file at `path` (a `ConfigError` names the field).
    #[staticmethod]
    fn read(py: Python<'_>, path: PathBuf) -> PyResult<PyLockFile> {
        let lock = py
            .detach(move || LockFile::read(path))
            .map_err(|e| raise(py, &e))?;
        Ok(PyLockFile {
            inner: Mutex::new(lock),
        })
    }

    /// Pins `entry` of `origin` as it is now (a dynamic skill cannot be pinned).
    fn insert(
        &self,
        py: Python<'_>,
        origin: Label,
        entry: &Bound<'_, PySkillEntry>,
    ) -> PyResult<()> {
        let origin = origin.0;
        self.lock()
            .insert(&origin, &entry.get().inner)
            .map_err(|e| raise(py, &e))
    }

    /// Whether `entry` of `origin` is exactly as pinned: a `DeclinedError` (`"not_locked"`,
    /// `"drift"` with its `changes`) if not.
    fn check(
        &self,
        py: Python<'_>,
        origin: Label,
        entry: &Bound<'_, PySkillEntry>,
    ) -> PyResult<()> {
        let origin = origin.0;
        self.lock()
            .check(&origin, &entry.get().inner)
            .map_err(|e| raise(py, &e))
    }

    /// Writes the lock to `path` (atomically).
    fn write(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let lock = self.snapshot();
        py.detach(move || lock.write(path))
            .map_err(|e| raise(py, &e))
    }

    /// Every pinned skill, by origin then URI.
    #[getter]
    fn skills(&self) -> Vec<PyLockedSkill> {
        self.lock()
            .skills()
            .map(|s| PyLockedSkill {
                origin: s.origin().as_str().to_owned(),
                uri: s.uri().as_str().to_owned(),
                binding: s.binding().to_string(),
                files: s
                    .files()
                    .map(|(u, d, n)| (u.as_str().to_owned(), d.to_string(), n))
                    .collect(),
            })
            .collect()
    }

    fn __len__(&self) -> usize {
        self.lock().skills().count()
    }
}

/// One file that differs from its pin: `pinned` is `None` for a file added since, `now` for one
/// no longer listed; each a `(digest, size)`.
#[pyclass(module = "skillcache", name = "FileDrift", frozen, get_all)]
pub(crate) struct PyFileDrift {
    uri: String,
    pinned: Option<(String, u64)>,
    now: Option<(String, u64)>,
}

/// One way a server's listing differs from the lock: `kind` (`"files"`, `"became_dynamic"`,
/// `"binding"`, `"removed"`, `"added"`, `"refused"`, `"unlisted"`), the `origin`, the `skill`
/// (`None` for an origin that could not be listed), the library's `message`, and for `"files"`
/// every file that differs.
#[pyclass(module = "skillcache", name = "LockDrift", frozen, get_all)]
pub(crate) struct PyLockDrift {
    kind: &'static str,
    origin: String,
    skill: Option<String>,
    message: String,
    files: Vec<Py<PyFileDrift>>,
}

#[pymethods]
impl PyLockDrift {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "LockDrift(kind={}, message={})",
            py_repr(py, self.kind)?,
            py_repr(py, &self.message)?
        ))
    }
}

/// What `SkillCache.check_lock` found: every drift in the lock's order, and the dynamic skills
/// the servers list beside the pins (`(origin, uri)`: not drift, nothing of them can be pinned).
#[pyclass(module = "skillcache", name = "LockCheck", frozen, get_all)]
pub(crate) struct PyLockCheck {
    pinned: usize,
    matched: usize,
    is_clean: bool,
    drift: Vec<Py<PyLockDrift>>,
    dynamic: Vec<(String, String)>,
}

#[pymethods]
impl PyLockCheck {
    fn __repr__(&self) -> String {
        format!(
            "LockCheck(pinned={}, matched={}, drift={})",
            self.pinned,
            self.matched,
            self.drift.len()
        )
    }
}

impl PyLockCheck {
    pub(crate) fn new(py: Python<'_>, check: &skillcache::LockCheck) -> PyResult<PyLockCheck> {
        let pin = |p: &Option<(skillcache::Digest, u64)>| p.map(|(d, size)| (d.to_string(), size));
        let drift = check
            .drift
            .iter()
            .map(|d| {
                let files = d
                    .files()
                    .iter()
                    .map(|f| {
                        Py::new(
                            py,
                            PyFileDrift {
                                uri: f.uri.as_str().to_owned(),
                                pinned: pin(&f.pinned),
                                now: pin(&f.now),
                            },
                        )
                    })
                    .collect::<PyResult<_>>()?;
                Py::new(
                    py,
                    PyLockDrift {
                        kind: d.kind(),
                        origin: d.origin().as_str().to_owned(),
                        skill: d.skill().map(|s| s.as_str().to_owned()),
                        message: d.to_string(),
                        files,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Ok(PyLockCheck {
            pinned: check.pinned,
            matched: check.matched,
            is_clean: check.is_clean(),
            drift,
            dynamic: check
                .dynamic
                .iter()
                .map(|(o, u)| (o.as_str().to_owned(), u.as_str().to_owned()))
                .collect(),
        })
    }
}
