//! The `skillcache._skillcache` extension module: the Rust host API of `skillcache` as asyncio
//! (Y1). The `skillcache` Python package re-exports it with its exception classes
//! (`skillcache/_errors.py`) and the session bridge (`skillcache/_session.py`).
//!
//! The layers: `cache` (the `SkillCache` and `LoadedSkill` classes), `catalog` (the `Catalog`
//! of every bound origin), `types` (the values they hand out), `lockfile`, `session` (a `SkillSource` over the host's own MCP session),
//! `errors` (every `skillcache::Error` as a Python exception) and `json`.

mod cache;
mod catalog;
mod errors;
mod json;
mod lockfile;
mod session;
mod types;

use pyo3::prelude::*;

/// An awaitable that does nothing: the bare cost of awaiting one of this module's futures
/// (`python/bench/bench.py` measures it beside a warm read). Not part of the API.
#[pyfunction]
fn _ready(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    pyo3_async_runtimes::tokio::future_into_py(py, async { Ok(()) })
}

#[pymodule]
fn _skillcache(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_ready, m)?)?;
    m.add_class::<cache::PySkillCache>()?;
    m.add_class::<cache::PyLoadedSkill>()?;
    m.add_class::<catalog::PyCatalog>()?;
    m.add_class::<catalog::PyCatalogSkill>()?;
    m.add_class::<types::PySkillEntry>()?;
    m.add_class::<types::PyManifestFile>()?;
    m.add_class::<types::PyEntryInfo>()?;
    m.add_class::<types::PyEntryDiff>()?;
    m.add_class::<types::PySkillFile>()?;
    m.add_class::<types::PyVerifyReport>()?;
    m.add_class::<types::PyGcReport>()?;
    m.add_class::<types::PyInventory>()?;
    m.add_class::<types::PyCachedEntry>()?;
    m.add_class::<lockfile::PyLockFile>()?;
    m.add_class::<lockfile::PyLockedSkill>()?;
    Ok(())
}
