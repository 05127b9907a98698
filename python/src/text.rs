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

use pyo3::prelude::*;
use pyo3::types::PyString;
use skillcache::error::{ConfigError, Rule, UriError};
use skillcache::{Error, Origin};

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

/// `obj` as a Rust string; for a `str` with a lone surrogate, the error `refuse` makes from the
/// text shown with its surrogates escaped (`team\udcff`) and the first surrogate's code point.
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
            let code: u32 = py
                .import("builtins")?
                .getattr("ord")?
                .call1((string.get_item(start)?,))?
                .extract()?;
            let shown: String = string
                .call_method1("encode", ("utf-8", "backslashreplace"))?
                .call_method1("decode", ("utf-8",))?
                .extract()?;
            let refused = raise(py, &refuse(shown, code));
            refused.set_cause(py, Some(cause));
            Err(refused)
        }
    }
}
