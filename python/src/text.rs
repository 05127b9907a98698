//! Python text that names something: an origin label ([`Label`]), a file reference or a skill
//! URI ([`Reference`]), and the plain text of an option ([`Text`]: a principal, a local skill
//! name, an argument, a header, a URL) (B3).
//!
//! A Python `str` can hold a lone surrogate (`"team\udcff"`, from `surrogateescape` decoding or a
//! JSON `\ud800` escape), which no Rust string can. Replaced by U+FFFD, two labels or two
//! references would become one; so such text is refused, as the library refuses a label or a
//! reference it cannot take: a `ConfigError` for a label (as for a label with an invisible
//! character) or an option, and a `UriError` for a reference or a URI (a model-chosen one is
//! caught with the other refused ones), so a host's `except skillcache.Error` catches every one.
//! The original `UnicodeEncodeError` is the cause.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use skillcache::error::{ConfigError, Rule, UriError};
use skillcache::{Error, Origin};
use skillcache_binding::bounds::Budget;

use crate::errors::raise;

/// An origin label from Python, validated by the library (`Origin::new`).
pub(crate) struct Label(pub(crate) Origin);

impl<'a, 'py> FromPyObject<'a, 'py> for Label {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Label> {
        let label = text(obj, |shown, code| {
            Error::Config(ConfigError::Invalid {
                what: format!(
                    "origin label {shown} refused: it is not well-formed Unicode (a lone \
                     surrogate, U+{code:04X}); decode the bytes it came from strictly, or choose \
                     another label"
                ),
            })
        })?;
        Origin::new(label)
            .map(Label)
            .map_err(|e| raise(obj.py(), &Error::Config(e)))
    }
}

/// A file reference or a skill URI from Python, as given (the library resolves and checks it).
pub(crate) struct Reference(pub(crate) String);

impl<'a, 'py> FromPyObject<'a, 'py> for Reference {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Reference> {
        text(obj, |shown, _| {
            Error::Uri(UriError {
                uri: shown,
                rule: Rule::NotUnicode,
            })
        })
        .map(Reference)
    }
}

/// The text of an option from Python, as given (the library checks what it must).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Text(pub(crate) String);

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Text> {
        text(obj, |shown, code| {
            Error::Config(ConfigError::Invalid {
                what: format!(
                    "text {shown} refused: it is not well-formed Unicode (a lone surrogate, \
                     U+{code:04X}); decode the bytes it came from strictly"
                ),
            })
        })
        .map(Text)
    }
}

/// `item` as an option's text, charged to `budget` (one item, its characters) before it is
/// copied: a string referenced many times is charged each time, so it cannot make the copy
/// enormous (B1: a failed allocation aborts the process).
pub(crate) fn charged(item: &Bound<'_, PyAny>, at: &str, budget: &mut Budget) -> PyResult<String> {
    let Ok(string) = item.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{at}: a {} is not a str",
            item.get_type().name()?
        )));
    };
    // Measured from the text itself, never from `len()`: a `str` subclass's `__len__` may say
    // anything (the seventeenth review's said 1 for a megabyte). `to_str` borrows the string's
    // own UTF-8, made once per string object, so a string referenced many times costs one.
    let Ok(text) = string.to_str() else {
        // A lone surrogate: refused as every other text is.
        return Ok(item.extract::<Text>()?.0);
    };
    budget.take(text.len()).map_err(|e| raise(item.py(), &e))?;
    Ok(text.to_owned())
}

/// A list of paths (`discovery_paths`): each a `str` or an `os.PathLike` of one, bounded as
/// [`texts`] is.
pub(crate) fn paths(obj: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Vec<PathBuf>> {
    let fspath = obj.py().import("os")?.getattr("fspath")?;
    items(obj, what, |item, at, budget| {
        let path = if item.is_instance_of::<PyString>() {
            item.clone()
        } else {
            fspath.call1((item,))?
        };
        charged(&path, at, budget).map(PathBuf::from)
    })
}

/// Origin labels (`purge_absent`'s `keep`), bounded as [`texts`] is, each checked as a label.
pub(crate) fn labels(obj: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Vec<Origin>> {
    items(obj, what, |item, _, budget| {
        // The label's own refusal first (a lone surrogate, more than 80 bytes): what is copied
        // before it is at most one label.
        let label = item.extract::<Label>()?.0;
        budget
            .take(label.as_str().len())
            .map_err(|e| raise(item.py(), &e))?;
        Ok(label)
    })
}

/// A list of text (`argv`, `local_names`): any iterable of `str` but a `str` itself, bounded as
/// [`Budget::list`] says.
pub(crate) fn texts(obj: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Vec<String>> {
    items(obj, what, charged)
}

/// Each item of `obj` (any iterable but a `str`) through `take`, charged to one list's budget:
/// an endless iterator stops at the item bound.
fn items<T>(
    obj: &Bound<'_, PyAny>,
    what: &'static str,
    mut take: impl FnMut(&Bound<'_, PyAny>, &str, &mut Budget) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a list of str, not a str"
        )));
    }
    let mut budget = Budget::list(what);
    if let Ok(len) = obj.len() {
        budget.fits(len).map_err(|e| raise(obj.py(), &e))?;
    }
    obj.try_iter()?
        .enumerate()
        .map(|(i, item)| take(&item?, &format!("{what}[{i}]"), &mut budget))
        .collect()
}

/// A table of text (`env`, `headers`): a `dict` of `str` to `str`, bounded as [`Budget::list`]
/// says (a key and its value are two items).
pub(crate) fn table(
    obj: &Bound<'_, PyAny>,
    what: &'static str,
) -> PyResult<BTreeMap<String, String>> {
    let Ok(dict) = obj.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a dict of str to str, not a {}",
            obj.get_type().name()?
        )));
    };
    let mut budget = Budget::list(what);
    budget
        .fits(dict.len().saturating_mul(2))
        .map_err(|e| raise(obj.py(), &e))?;
    // A snapshot of the pairs: code a key's `__str__` or `__eq__` runs may change the dict, and
    // iterating the dict itself would then panic.
    dict.items()
        .iter()
        .map(|pair| {
            let (k, v) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
            let key = charged(&k, what, &mut budget)?;
            let shown: String = key.chars().take(40).collect();
            let value = charged(&v, &format!("{what}[{shown:?}]"), &mut budget)?;
            Ok((key, value))
        })
        .collect()
}

/// `obj` as a Rust string; for a `str` with a lone surrogate, the error `refuse` makes from the
/// text shown ([`shown`]) and the first surrogate's code point.
fn text(
    obj: Borrowed<'_, '_, PyAny>,
    refuse: impl FnOnce(String, u32) -> Error,
) -> PyResult<String> {
    let py = obj.py();
    let string = obj.cast::<PyString>()?;
    match string.to_str() {
        Ok(s) => Ok(s.to_owned()),
        Err(cause) => {
            let start: usize = cause.value(py).getattr("start")?.extract()?;
            // `str`'s own methods, never the object's: a subclass's would choose what they say.
            let exact = py.get_type::<PyString>();
            let code: u32 = py
                .import("builtins")?
                .getattr("ord")?
                .call1((exact.getattr("__getitem__")?.call1((string, start))?,))?
                .extract()?;
            let refused = raise(py, &refuse(shown(&string)?, code));
            refused.set_cause(py, Some(cause));
            Err(refused)
        }
    }
}

/// The most characters of refused text a message shows, as for a refused label (`Origin`).
const SHOWN: usize = 40;

/// `string` as a refusal shows it: its surrogates escaped (`team\udcff`) by `str.encode` itself
/// (the C-level conversion of the `str` it holds, whatever a subclass defines), cut after
/// [`SHOWN`] characters with an ellipsis, so however long it is the message stays short.
fn shown(string: &Bound<'_, PyString>) -> PyResult<String> {
    let py = string.py();
    let encoded = py.get_type::<PyString>().getattr("encode")?.call1((
        string,
        "utf-8",
        "backslashreplace",
    ))?;
    // `backslashreplace` leaves nothing but UTF-8 (escapes are ASCII): lossless.
    let text = String::from_utf8_lossy(encoded.cast::<PyBytes>()?.as_bytes()).into_owned();
    Ok(match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    })
}
