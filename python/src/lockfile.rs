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
