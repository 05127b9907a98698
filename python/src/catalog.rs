//! `skillcache.Catalog` and `skillcache.CatalogSkill`: the skills of every bound origin in one
//! view (R-Q1), as `SkillCache.catalog` hands them out. The handles, the collisions and the
//! failures are the Rust `skillcache::Catalog`'s; nothing here names or ranks a skill.

use pyo3::prelude::*;
use pyo3::types::PyList;
use skillcache::{Catalog, CatalogSkill};

use crate::errors::as_value;
use crate::types::{PySkillEntry, py_repr};

/// The catalog: every listed skill under its handle, and what could not be listed.
#[pyclass(module = "skillcache", name = "Catalog", frozen)]
pub(crate) struct PyCatalog {
    inner: Catalog,
    /// `failures` as Python values (`(origin, skillcache.Error)`), made once with the GIL held:
    /// an error becomes its exception object, which needs the interpreter.
    failures: Py<PyList>,
}

impl PyCatalog {
    /// Wraps a catalog; its failures become `(origin, Error)` tuples (not raised: each is one
    /// origin's or one entry's, and the rest of the catalog stands).
    pub(crate) fn new(py: Python<'_>, inner: Catalog) -> PyResult<PyCatalog> {
        let failures = PyList::empty(py);
        for (origin, e) in inner.failures() {
            failures.append((origin.as_str(), as_value(py, e)))?;
        }
        Ok(PyCatalog {
            inner,
            failures: failures.unbind(),
        })
    }
}

#[pymethods]
impl PyCatalog {
    /// Every listed skill, by origin label and then by URI.
    #[getter]
    fn skills(&self) -> Vec<PyCatalogSkill> {
        self.inner
            .skills()
            .iter()
            .cloned()
            .map(PyCatalogSkill::from)
            .collect()
    }
    /// The skill with exactly this handle, or `None`. A bare name finds nothing once the name
    /// collides, and a local skill's name never finds an MCP skill.
    fn get(&self, handle: &str) -> Option<PyCatalogSkill> {
        self.inner.get(handle).cloned().map(PyCatalogSkill::from)
    }
    /// What could not be listed: `(origin, skillcache.Error)` for an origin whose listing failed
    /// (its skills are absent) or for one refused entry (that skill alone is absent).
    #[getter]
    fn failures<'py>(&self, py: Python<'py>) -> Bound<'py, PyList> {
        // A copy: the catalog is immutable, a caller's edits to the list stay theirs.
        let failures = self.failures.bind(py);
        failures.get_slice(0, failures.len())
    }
    fn __len__(&self) -> usize {
        self.inner.skills().len()
    }
    fn __contains__(&self, handle: &str) -> bool {
        self.inner.get(handle).is_some()
    }
    fn __repr__(&self) -> String {
        format!(
            "Catalog(skills={}, failures={})",
            self.inner.skills().len(),
            self.inner.failures().len()
        )
    }
}

/// One skill of a catalog: its handle, origin and entry, and whom its name collides with.
#[pyclass(module = "skillcache", name = "CatalogSkill", frozen)]
pub(crate) struct PyCatalogSkill {
    inner: CatalogSkill,
}

impl From<CatalogSkill> for PyCatalogSkill {
    fn from(inner: CatalogSkill) -> PyCatalogSkill {
        PyCatalogSkill { inner }
    }
}

#[pymethods]
impl PyCatalogSkill {
    /// Unique in the catalog and the same whenever it holds the same skills.
    #[getter]
    fn handle(&self) -> &str {
        self.inner.handle()
    }
    /// The origin that serves it (the host's label).
    #[getter]
    fn origin(&self) -> &str {
        self.inner.origin().as_str()
    }
    /// Its entry as listed: what `approve` and `load` take.
    #[getter]
    fn entry(&self) -> PySkillEntry {
        PySkillEntry {
            inner: self.inner.entry().clone(),
        }
    }
    /// The handles of every other skill (or local skill: its bare name) with the same name,
    /// sorted; empty when the name is unique.
    #[getter]
    fn collides_with(&self) -> Vec<String> {
        self.inner.collides_with().to_vec()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "CatalogSkill(handle={}, origin={}, uri={})",
            py_repr(py, self.inner.handle())?,
            py_repr(py, self.inner.origin().as_str())?,
            py_repr(py, self.inner.entry().uri().as_str())?
        ))
    }
}
