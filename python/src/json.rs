//! JSON values between Rust (`serde_json::Value`) and Python (dict, list, str, int, float,
//! bool, None): frontmatter, requested and granted tools, an entry in wire form.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use skillcache::Error;
use skillcache::error::ConfigError;
use skillcache_binding::bounds::{Budget, GRANT_DEPTH};

use crate::errors::raise;
use crate::text;

/// `value` as a Python object.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// A Python object as JSON (a grant of tools): dicts with string keys, lists and tuples, str,
/// int, float (finite), bool and None; anything else is a `TypeError` naming where it is. The
/// walk is bounded as `Budget::grant` says (values and characters counted as reached, each
/// reference anew: a list built by `g = [g, g]` twenty times is a million values) and by
/// [`GRANT_DEPTH`], each a `ConfigError` before anything more is copied.
pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    convert(obj, "$", 0, &mut Budget::grant())
}

fn convert(obj: &Bound<'_, PyAny>, at: &str, depth: usize, budget: &mut Budget) -> PyResult<Value> {
    let py = obj.py();
    let refused = |why: String| {
        let what = format!("grant_tools refused: {at}: {why}");
        raise(py, &Error::Config(ConfigError::Invalid { what }))
    };
    if depth > GRANT_DEPTH {
        return Err(refused(format!("nested deeper than {GRANT_DEPTH} levels")));
    }
    if obj.is_instance_of::<PyString>() {
        // A lone surrogate is a `ConfigError` (`Text`), never a bare `UnicodeEncodeError`.
        return Ok(Value::String(text::charged(obj, at, budget)?));
    }
    budget.take(0).map_err(|e| raise(py, &e))?;
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: a Python bool is an int.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(refused("an integer out of JSON's range".into()));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| refused(format!("{} is not a JSON number", f.value())));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        budget
            .fits(d.len().saturating_mul(2))
            .map_err(|e| raise(py, &e))?;
        let mut map = Map::new();
        // A snapshot of the pairs: code a key's `__eq__` runs may change the dict, and
        // iterating the dict itself would then panic.
        for pair in d.items().iter() {
            let (k, v) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
            if !k.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(format!(
                    "{at}: a key that is not a str"
                )));
            }
            let key = text::charged(&k, at, budget)?;
            // The path names a key by its first characters: it is built for every value below
            // it, so a long key must not be copied into each.
            let shown: String = key.chars().take(40).collect();
            let ellipsis = if shown.len() < key.len() { "…" } else { "" };
            let value = convert(&v, &format!("{at}.{shown}{ellipsis}"), depth + 1, budget)?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        budget.fits(obj.len()?).map_err(|e| raise(py, &e))?;
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(convert(&item?, &format!("{at}[{i}]"), depth + 1, budget)?);
        }
        return Ok(Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{at}: a {} is not a JSON value",
        obj.get_type().name()?
    )))
}
