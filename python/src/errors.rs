//! `skillcache::Error` as Python exceptions (Y1): every variant maps to a class of
//! `skillcache._errors` (one base, `skillcache.Error`), with the variant's fields as attributes.
//! The `match` over `Error` is exhaustive (the enum is deliberately not `non_exhaustive`), so a
//! new kind of error cannot ship without a Python class.

use std::error::Error as _;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;
use skillcache::Error;
use skillcache::error::{
    ConfigError, Declined, EntryError, IndexError, Limit, Mismatch, OfflineMiss, SourceError,
    StoreError,
};

use crate::types::PyEntryDiff;

/// The Python module that defines the classes.
const MODULE: &str = "skillcache._errors";

/// One attribute of an exception: its name and value, converted when the exception is made.
enum Field {
    Str(String),
    Int(i128),
    Float(f64),
    List(Vec<String>),
    Diff(Box<skillcache::entry::EntryDiff>),
    None,
}

impl From<&str> for Field {
    fn from(s: &str) -> Field {
        Field::Str(s.to_owned())
    }
}
impl From<String> for Field {
    fn from(s: String) -> Field {
        Field::Str(s)
    }
}
impl From<u64> for Field {
    fn from(n: u64) -> Field {
        Field::Int(i128::from(n))
    }
}
impl From<i64> for Field {
    fn from(n: i64) -> Field {
        Field::Int(i128::from(n))
    }
}
impl From<u32> for Field {
    fn from(n: u32) -> Field {
        Field::Int(i128::from(n))
    }
}
impl<T: Into<Field>> From<Option<T>> for Field {
    fn from(v: Option<T>) -> Field {
        v.map_or(Field::None, Into::into)
    }
}

/// A Python exception to be: its class name, its `kind`, and its fields.
struct Raised {
    class: &'static str,
    kind: &'static str,
    fields: Vec<(&'static str, Field)>,
}

impl Raised {
    fn new(class: &'static str, kind: &'static str) -> Raised {
        Raised {
            class,
            kind,
            fields: Vec::new(),
        }
    }
    fn with(mut self, name: &'static str, value: impl Into<Field>) -> Raised {
        self.fields.push((name, value.into()));
        self
    }
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// The fields of a [`Mismatch`]: its kind, and what was expected and seen.
fn mismatch(mut r: Raised, m: &Mismatch) -> Raised {
    r = match m {
        Mismatch::Size { expected, actual } => r
            .with("mismatch", "size")
            .with("expected", *expected)
            .with("actual", *actual),
        Mismatch::Digest { expected, actual } => r
            .with("mismatch", "digest")
            .with("expected", expected.to_string())
            .with("actual", actual.to_string()),
        Mismatch::Frontmatter { diffs } => r.with("mismatch", "frontmatter").with(
            "diffs",
            Field::List(diffs.iter().map(|d| d.key.clone()).collect()),
        ),
        Mismatch::FrontmatterUnreadable { problem } => r
            .with("mismatch", "frontmatter_unreadable")
            .with("problem", problem.to_string()),
        Mismatch::Unlisted => r.with("mismatch", "unlisted"),
        Mismatch::NotARegularFile => r.with("mismatch", "not_a_regular_file"),
        // `Mismatch` is non_exhaustive: a kind added later is still reported, by its message.
        _ => r.with("mismatch", "other"),
    };
    r
}

fn entry(e: &EntryError) -> Raised {
    match e {
        EntryError::Digest { text, rule } => Raised::new("EntryError", "digest")
            .with("text", text.as_str())
            .with("rule", rule.to_string()),
        EntryError::Invalid { skill, field, rule } => Raised::new("EntryError", "invalid")
            .with("skill", skill.clone())
            .with("uri", skill.clone())
            .with("field", field.as_str())
            .with("rule", rule.to_string()),
        EntryError::LimitExceeded {
            skill,
            limit,
            declared,
            max,
        } => Raised::new("LimitExceededError", "limit_exceeded")
            .with("skill", skill.as_str())
            .with("uri", skill.as_str())
            .with(
                "limit",
                match limit {
                    Limit::Files => "files",
                    Limit::TotalBytes => "total_bytes",
                    _ => "other",
                },
            )
            .with("declared", *declared)
            .with("max", *max),
        EntryError::Response { method, rule } => Raised::new("EntryError", "response")
            .with("method", *method)
            .with("rule", rule.to_string()),
        EntryError::Frontmatter { problem } => {
            Raised::new("EntryError", "frontmatter").with("problem", problem.to_string())
        }
        EntryError::Folder { path: p, why } => Raised::new("EntryError", "folder")
            .with("path", path(p))
            .with("why", *why),
    }
}

/// An origin's label. A source's own error has none; every error a `SkillCache` returns does,
/// since the cache names the origin of every request it sends.
fn label(origin: Option<&skillcache::Origin>) -> Option<&str> {
    origin.map(skillcache::Origin::as_str)
}

fn source(e: &SourceError) -> Raised {
    match e {
        SourceError::Server {
            origin,
            method,
            code,
            message,
        } => Raised::new("ServerError", "server")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str())
            .with("code", *code)
            .with("message", message.as_str()),
        SourceError::Transport { origin, method, .. } => Raised::new("TransportError", "transport")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str()),
        SourceError::Timeout {
            origin,
            method,
            after,
        } => Raised::new("TimeoutError", "timeout")
            .with("origin", origin.as_str())
            .with("method", method.as_str())
            .with("after", Field::Float(after.as_secs_f64())),
        SourceError::MessageTooLarge {
            origin,
            method,
            max,
        } => Raised::new("MessageTooLargeError", "message_too_large")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str())
            .with("max", *max),
        SourceError::NotConnected { origin } => {
            Raised::new("NotConnectedError", "not_connected").with("origin", origin.as_str())
        }
    }
}

fn store(e: &StoreError) -> Raised {
    match e {
        StoreError::BlobMismatch {
            origin,
            digest,
            mismatch: m,
        } => mismatch(
            Raised::new("StoreError", "blob_mismatch")
                .with("origin", origin.as_str())
                .with("digest", digest.to_string()),
            m,
        ),
        StoreError::RootRefused { root, why, path: p } => Raised::new("StoreError", "root_refused")
            .with("root", path(root))
            .with("why", *why)
            .with("path", path(p)),
        StoreError::Io {
            op,
            path: p,
            source,
        } => Raised::new("StoreError", "io")
            .with("op", *op)
            .with("path", path(p))
            .with("errno", source.raw_os_error().map(i64::from)),
        StoreError::LockTimeout {
            path: p,
            waited,
            holder,
        } => Raised::new("StoreError", "lock_timeout")
            .with("path", path(p))
            .with("waited", Field::Float(waited.as_secs_f64()))
            .with("holder", holder.clone()),
    }
}

fn index(e: &IndexError) -> Raised {
    match e {
        IndexError::Database { what, .. } => {
            Raised::new("IndexError", "database").with("what", *what)
        }
        IndexError::TooNew { found, supported } => Raised::new("IndexError", "too_new")
            .with("found", *found)
            .with("supported", *supported),
        IndexError::ReadOnly { path: p, what } => Raised::new("IndexError", "read_only")
            .with("path", path(p))
            .with("what", *what),
        IndexError::Io {
            op,
            path: p,
            source,
        } => Raised::new("IndexError", "io")
            .with("op", *op)
            .with("path", path(p))
            .with("errno", source.raw_os_error().map(i64::from)),
        IndexError::HostKey { path: p, problem } => Raised::new("IndexError", "host_key")
            .with("path", path(p))
            .with("problem", problem.to_string()),
    }
}

/// The 1-based line of a host file's refusal, when it has a place.
fn line(position: Option<(usize, usize)>) -> Field {
    position.map_or(Field::None, |(l, _)| Field::Int(l as i128))
}

/// The 1-based column (in characters) of a host file's refusal, when it has a place.
fn column(position: Option<(usize, usize)>) -> Field {
    position.map_or(Field::None, |(_, c)| Field::Int(c as i128))
}

fn config(e: &ConfigError) -> Raised {
    match e {
        ConfigError::Invalid { what } => {
            Raised::new("ConfigError", "invalid").with("what", what.as_str())
        }
        ConfigError::File {
            path: p,
            position,
            field,
            problem,
        } => Raised::new("ConfigError", "file")
            .with("path", path(p))
            .with("line", line(*position))
            .with("column", column(*position))
            .with("field", field.as_str())
            .with("problem", problem.to_string()),
        ConfigError::LockFile {
            path: p,
            position,
            field,
            problem,
        } => Raised::new("ConfigError", "lock_file")
            .with("path", path(p))
            .with("line", line(*position))
            .with("column", column(*position))
            .with("field", field.as_str())
            .with("problem", problem.to_string()),
    }
}

/// What `e` becomes in Python: its class, kind and fields.
fn describe(e: &Error) -> Raised {
    match e {
        Error::Uri(u) => Raised::new("UriError", "uri")
            .with("uri", u.uri.as_str())
            .with("rule", u.rule.to_string()),
        Error::Entry(e) => entry(e),
        Error::Verify(v) => mismatch(
            Raised::new("VerifyError", "verify")
                .with("origin", v.origin.as_str())
                .with("uri", v.uri.as_str()),
            &v.mismatch,
        ),
        Error::Source(s) => source(s),
        Error::Store(s) => store(s),
        Error::Index(i) => index(i),
        Error::Config(c) => config(c),
        Error::Declined {
            origin,
            skill,
            reason,
        } => {
            let r = Raised::new("DeclinedError", "declined")
                .with("origin", origin.as_str())
                .with("skill", skill.as_str())
                .with("uri", skill.as_str());
            match reason {
                Declined::Dynamic => r.with("reason", "dynamic"),
                Declined::NotApproved => r.with("reason", "not_approved"),
                Declined::Revoked { changes } => r
                    .with("reason", "revoked")
                    .with("changes", Field::Diff(changes.clone())),
                Declined::NotLocked => r.with("reason", "not_locked"),
                Declined::Drift { changes } => r
                    .with("reason", "drift")
                    .with("changes", Field::Diff(changes.clone())),
                Declined::OverQuota { quota, size } => r
                    .with("reason", "over_quota")
                    .with("quota", *quota)
                    .with("size", *size),
                _ => r.with("reason", "other"),
            }
        }
        Error::Offline {
            origin,
            uri,
            missing,
        } => {
            let r = Raised::new("OfflineError", "offline")
                .with("origin", origin.as_str())
                .with("uri", uri.as_ref().map(|u| u.as_str().to_owned()));
            match missing {
                OfflineMiss::Entry => r.with("missing", "entry"),
                OfflineMiss::Stale { age_ms } => r.with("missing", "stale").with("age_ms", *age_ms),
                OfflineMiss::File => r.with("missing", "file"),
                OfflineMiss::Server { method } => {
                    r.with("missing", "server").with("method", *method)
                }
                _ => r.with("missing", "other"),
            }
        }
        Error::L2Config {
            location, problem, ..
        } => Raised::new("L2ConfigError", "l2_config")
            .with("location", location.as_str())
            .with("problem", problem.as_str()),
    }
}

fn module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    ERRORS
        .get_or_try_init(py, || Ok::<_, PyErr>(py.import(MODULE)?.unbind()))
        .map(|m| m.bind(py))
}

/// The exception for `e`, with its fields set.
fn exception(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let raised = describe(e);
    let class = module(py)?.getattr(raised.class)?;
    let exc = class.call1((e.to_string(),))?;
    exc.setattr("kind", raised.kind)?;
    for (name, value) in raised.fields {
        match value {
            Field::Str(s) => exc.setattr(name, s)?,
            Field::Int(n) => exc.setattr(name, n)?,
            Field::Float(f) => exc.setattr(name, f)?,
            Field::List(l) => exc.setattr(name, l)?,
            Field::Diff(d) => exc.setattr(name, Py::new(py, PyEntryDiff::from(*d))?)?,
            Field::None => exc.setattr(name, py.None())?,
        }
    }
    // The cause chain, as messages: the Rust causes (an I/O error, the transport's) have no
    // Python class of their own.
    let mut causes = Vec::new();
    // `Error`'s `source()` is its layer error's own (transparent), so this starts at the cause.
    let mut next = e.source();
    while let Some(cause) = next {
        causes.push(cause.to_string());
        next = cause.source();
    }
    exc.setattr("causes", causes)?;
    Ok(PyErr::from_value(exc))
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
