//! `skillcache::Error` as Python exceptions (Y1): the report of `skillcache-binding` (the table
//! both packages share, exhaustive over `Error`) raised as its class of `skillcache._errors` (one
//! base, `skillcache.Error`), with the fields as attributes. `str(e)` is the report's message:
//! the library's, display-safe, with its cause chain.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use skillcache::Error;
use skillcache_binding::report::{self, Field};

use crate::types::PyEntryDiff;

/// The Python module that defines the classes.
const MODULE: &str = "skillcache._errors";

/// Every class of [`CLASSES`](report::CLASSES) (and `AbortError`'s kin the table names), taken
/// from [`MODULE`] once, when the extension module is initialised: an error raised later is of
/// the class the package defined, even if a host's code has since rebound a name in
/// `skillcache._errors` (to `KeyError`, say, so a handler for `VerifyError` would miss it).
static TAKEN: PyOnceLock<Vec<(&'static str, Py<PyAny>)>> = PyOnceLock::new();

/// Takes the classes from [`MODULE`]; called by the module's initialisation, before any error
/// can be raised. `skillcache/__init__.py` imports `_errors` before the extension.
pub(crate) fn take_classes(py: Python<'_>) -> PyResult<()> {
    TAKEN.get_or_try_init(py, || {
        let module = py.import(MODULE)?;
        report::CLASSES
            .iter()
            .map(|(name, _)| Ok((*name, module.getattr(*name)?.unbind())))
            .collect::<PyResult<Vec<_>>>()
    })?;
    Ok(())
}

/// The class named `name`, as taken at initialisation.
fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    take_classes(py)?;
    TAKEN
        .get(py)
        .and_then(|taken| taken.iter().find(|(n, _)| *n == name))
        .map(|(_, class)| class.bind(py).clone())
        .ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "skillcache: no error class {name} in {MODULE}"
            ))
        })
}

/// The exception for `e`, with its fields set.
fn exception(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let report = report::report(e);
    let class = class(py, report.class)?;
    let exc = class.call1((report.message,))?;
    exc.setattr("kind", report.kind)?;
    for (name, value) in report.fields {
        match value {
            Field::Str(s) => exc.setattr(name, s)?,
            Field::Int(n) => exc.setattr(name, n)?,
            Field::Float(f) => exc.setattr(name, f)?,
            Field::List(l) => exc.setattr(name, l)?,
            Field::Diff(d) => exc.setattr(name, Py::new(py, PyEntryDiff::from(*d))?)?,
            Field::None => exc.setattr(name, py.None())?,
        }
    }
    // The cause chain alone, as messages: the Rust causes (an I/O error, the transport's) have
    // no Python class of their own.
    exc.setattr("causes", report.causes)?;
    Ok(PyErr::from_value(exc))
}

/// Every error kind, class and decline reason the package maps, for its tests.
#[pyfunction]
pub(crate) fn error_kinds(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    use skillcache_binding::report::{CLASSES, DECLINE_REASONS, KINDS, MISMATCHES, OFFLINE_MISSES};
    let d = pyo3::types::PyDict::new(py);
    d.set_item("kinds", KINDS.to_vec())?;
    d.set_item("classes", CLASSES.to_vec())?;
    d.set_item("decline_reasons", DECLINE_REASONS.to_vec())?;
    d.set_item("offline_misses", OFFLINE_MISSES.to_vec())?;
    d.set_item("mismatches", MISMATCHES.to_vec())?;
    Ok(d)
}

/// `e` as a Python exception. Needs the interpreter: call it where Python is attached, or use
/// [`to_py_err`] from a Rust thread.
pub(crate) fn raise(py: Python<'_>, e: &Error) -> PyErr {
    exception(py, e).unwrap_or_else(|failed| failed)
}

/// `e` as a Python exception, from any thread (attaches to the interpreter to build it).
pub(crate) fn to_py_err(e: &Error) -> PyErr {
    Python::attach(|py| raise(py, e))
}

/// A per-entry error of a listing, as an exception *value* (not raised).
pub(crate) fn as_value(py: Python<'_>, e: &Error) -> Py<PyAny> {
    raise(py, e).into_value(py).into_any()
}
