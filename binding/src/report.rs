//! Every [`skillcache::Error`] as one [`Report`]: what both bindings raise, from one table.
//!
//! The `match` over [`Error`] is exhaustive (the enum is deliberately not `non_exhaustive`), so a
//! new kind cannot ship without its class; [`KINDS`] and [`DECLINE_REASONS`] list what the
//! table produces, and a test checks each list against the table and each binding against the
//! lists.

use std::error::Error as _;

use skillcache::Error;
use skillcache::display_safe;
use skillcache::error::{
    ConfigError, Declined, EntryError, IndexError, Limit, Mismatch, OfflineMiss, SourceError,
    StoreError,
};

/// The most characters of a server's own error text a report keeps (`server_message`).
pub const SERVER_TEXT_MAX: usize = 1024;

/// One field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// Text.
    Str(String),
    /// A whole number.
    Int(i128),
    /// Seconds, as a float.
    Float(f64),
    /// A list of names (frontmatter keys).
    List(Vec<String>),
    /// What changed in an entry (a revoked approval, a drifted lock).
    Diff(Box<skillcache::entry::EntryDiff>),
    /// Absent for this error.
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
impl From<usize> for Field {
    fn from(n: usize) -> Field {
        Field::Int(i128::try_from(n).unwrap_or(i128::MAX))
    }
}
impl<T: Into<Field>> From<Option<T>> for Field {
    fn from(v: Option<T>) -> Field {
        v.map_or(Field::None, Into::into)
    }
}

/// An error as a binding raises it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The class: `ServerError`, `DeclinedError`, … (one of [`KINDS`]).
    pub class: &'static str,
    /// The kind, in snake case: `server`, `declined`, `limit_exceeded`, …
    pub kind: &'static str,
    /// The variant's fields, by name in snake case (a binding may spell them its own way).
    pub fields: Vec<(&'static str, Field)>,
    /// The library's message and its cause chain, joined by `: `, every part display-safe: no
    /// control character, no escape sequence. What `str(e)` and `e.message` are.
    pub message: String,
    /// The messages of the cause chain alone, outermost first, display-safe.
    pub causes: Vec<String>,
}

impl Report {
    fn new(class: &'static str, kind: &'static str) -> Report {
        Report {
            class,
            kind,
            fields: Vec::new(),
            message: String::new(),
            causes: Vec::new(),
        }
    }

    fn with(mut self, name: &'static str, value: impl Into<Field>) -> Report {
        self.fields.push((name, value.into()));
        self
    }
}

/// Every (class, kind) the table produces; the classes' parents are in [`CLASSES`].
pub const KINDS: &[(&str, &str)] = &[
    ("UriError", "uri"),
    ("EntryError", "digest"),
    ("EntryError", "invalid"),
    ("LimitExceededError", "limit_exceeded"),
    ("EntryError", "response"),
    ("EntryError", "frontmatter"),
    ("EntryError", "folder"),
    ("VerifyError", "verify"),
    ("ServerError", "server"),
    ("TransportError", "transport"),
    ("TimeoutError", "timeout"),
    ("MessageTooLargeError", "message_too_large"),
    ("NotConnectedError", "not_connected"),
    ("StoreError", "blob_mismatch"),
    ("StoreError", "root_refused"),
    ("StoreError", "io"),
    ("StoreError", "lock_timeout"),
    ("IndexError", "database"),
    ("IndexError", "too_new"),
    ("IndexError", "read_only"),
    ("IndexError", "io"),
    ("IndexError", "host_key"),
    ("ConfigError", "invalid"),
    ("ConfigError", "file"),
    ("ConfigError", "lock_file"),
    ("DeclinedError", "declined"),
    ("OfflineError", "offline"),
    ("L2ConfigError", "l2_config"),
];

/// Every class, with the class it extends (`None`: the package's base error).
pub const CLASSES: &[(&str, Option<&str>)] = &[
    ("UriError", None),
    ("EntryError", None),
    ("LimitExceededError", Some("EntryError")),
    ("VerifyError", None),
    ("SourceError", None),
    ("ServerError", Some("SourceError")),
    ("TransportError", Some("SourceError")),
    ("TimeoutError", Some("SourceError")),
    ("MessageTooLargeError", Some("SourceError")),
    ("NotConnectedError", Some("SourceError")),
    ("StoreError", None),
    ("IndexError", None),
    ("ConfigError", None),
    ("L2ConfigError", Some("ConfigError")),
    ("DeclinedError", None),
    ("OfflineError", None),
];

/// Every `reason` of a `DeclinedError`.
pub const DECLINE_REASONS: &[&str] = &[
    "dynamic",
    "not_approved",
    "revoked",
    "not_locked",
    "drift",
    "over_quota",
];

/// Every `missing` of an `OfflineError`.
pub const OFFLINE_MISSES: &[&str] = &["entry", "stale", "file", "server"];

/// Every `mismatch` of a `VerifyError` and a blob mismatch.
pub const MISMATCHES: &[&str] = &[
    "size",
    "digest",
    "frontmatter",
    "frontmatter_unreadable",
    "unlisted",
    "not_a_regular_file",
];

/// The name a binding gives a value the library added after this table (the library's
/// `non_exhaustive` enums): still reported, by its message.
pub const OTHER: &str = "other";

/// `e` as a binding raises it.
#[must_use]
pub fn report(e: &Error) -> Report {
    let mut r = describe(e);
    // A source's causes carry what a server (or the host's session) said, of any length: each
    // is cut as `server_message` is, so the report stays bounded however much was sent.
    let from_source = matches!(e, Error::Source(_));
    // `Error`'s `source()` is its layer error's own (transparent): this starts at the cause.
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        r.causes
            .push(safe(if from_source { cut(&text) } else { text }.as_str()));
        next = cause.source();
    }
    let mut message = safe(&e.to_string());
    for cause in &r.causes {
        message.push_str(": ");
        message.push_str(cause);
    }
    r.message = message;
    r
}

/// `text` with every hidden character escaped. The library's own messages are display-safe
/// already (an escape is left as it is, `\x1b` stays four visible characters); a cause from below
/// it may not be, so every part is passed through once more where it still holds anything hidden.
fn safe(text: &str) -> String {
    let escaped = display_safe(text).to_string();
    // Already inert when the only change would be doubling backslashes of earlier escapes.
    if escaped.replace(r"\\", r"\") == text {
        text.to_owned()
    } else {
        escaped
    }
}

/// A server's own text, display-safe and cut to [`SERVER_TEXT_MAX`] characters.
#[must_use]
pub fn server_text(text: &str) -> String {
    display_safe(&cut(text)).to_string()
}

/// `text` cut to [`SERVER_TEXT_MAX`] characters, with an ellipsis where it was cut.
fn cut(text: &str) -> String {
    let mut cut: String = text.chars().take(SERVER_TEXT_MAX).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn label(origin: Option<&skillcache::Origin>) -> Option<&str> {
    origin.map(skillcache::Origin::as_str)
}

fn mismatch(r: Report, m: &Mismatch) -> Report {
    match m {
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
        _ => r.with("mismatch", OTHER),
    }
}

fn entry(e: &EntryError) -> Report {
    match e {
        EntryError::Digest { text, rule } => Report::new("EntryError", "digest")
            .with("text", text.as_str())
            .with("rule", rule.to_string()),
        EntryError::Invalid {
            origin,
            skill,
            field,
            rule,
        } => Report::new("EntryError", "invalid")
            .with("origin", label(origin.as_ref()))
            .with("skill", skill.clone())
            .with("uri", skill.clone())
            .with("field", field.as_str())
            .with("rule", rule.to_string()),
        EntryError::LimitExceeded {
            origin,
            skill,
            limit,
            declared,
            max,
        } => Report::new("LimitExceededError", "limit_exceeded")
            .with("origin", label(origin.as_ref()))
            .with("skill", skill.as_str())
            .with("uri", skill.as_str())
            .with(
                "limit",
                match limit {
                    Limit::Files => "files",
                    Limit::TotalBytes => "total_bytes",
                    _ => OTHER,
                },
            )
            .with("declared", *declared)
            .with("max", *max),
        EntryError::Response {
            origin,
            method,
            rule,
        } => Report::new("EntryError", "response")
            .with("origin", label(origin.as_ref()))
            .with("method", *method)
            .with("rule", rule.to_string()),
        EntryError::Frontmatter { problem } => {
            Report::new("EntryError", "frontmatter").with("problem", problem.to_string())
        }
        EntryError::Folder { path: p, why } => Report::new("EntryError", "folder")
            .with("path", path(p))
            .with("why", *why),
    }
}

fn source(e: &SourceError) -> Report {
    match e {
        SourceError::Server {
            origin,
            method,
            uri,
            code,
            message,
        } => Report::new("ServerError", "server")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str())
            .with("uri", uri.clone())
            .with("code", *code)
            .with("server_message", server_text(message)),
        SourceError::Transport { origin, method, .. } => Report::new("TransportError", "transport")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str()),
        SourceError::Timeout {
            origin,
            method,
            after,
        } => Report::new("TimeoutError", "timeout")
            .with("origin", origin.as_str())
            .with("method", method.as_str())
            .with("after", Field::Float(after.as_secs_f64())),
        SourceError::MessageTooLarge {
            origin,
            method,
            max,
        } => Report::new("MessageTooLargeError", "message_too_large")
            .with("origin", label(origin.as_ref()))
            .with("method", method.as_str())
            .with("max", *max),
        SourceError::NotConnected { origin } => {
            Report::new("NotConnectedError", "not_connected").with("origin", origin.as_str())
        }
    }
}

fn store(e: &StoreError) -> Report {
    match e {
        StoreError::BlobMismatch {
            origin,
            digest,
            mismatch: m,
        } => mismatch(
            Report::new("StoreError", "blob_mismatch")
                .with("origin", origin.as_str())
                .with("digest", digest.to_string()),
            m,
        ),
        StoreError::RootRefused { root, why, path: p } => Report::new("StoreError", "root_refused")
            .with("root", path(root))
            .with("why", *why)
            .with("path", path(p)),
        StoreError::Io {
            op,
            path: p,
            source,
        } => Report::new("StoreError", "io")
            .with("op", *op)
            .with("path", path(p))
            .with("errno", source.raw_os_error().map(i64::from)),
        StoreError::LockTimeout {
            path: p,
            waited,
            holder,
        } => Report::new("StoreError", "lock_timeout")
            .with("path", path(p))
            .with("waited", Field::Float(waited.as_secs_f64()))
            .with("holder", holder.clone()),
    }
}

fn index(e: &IndexError) -> Report {
    match e {
        IndexError::Database { what, .. } => {
            Report::new("IndexError", "database").with("what", *what)
        }
        IndexError::TooNew { found, supported } => Report::new("IndexError", "too_new")
            .with("found", *found)
            .with("supported", *supported),
        IndexError::ReadOnly { path: p, what } => Report::new("IndexError", "read_only")
            .with("path", path(p))
            .with("what", *what),
        IndexError::Io {
            op,
            path: p,
            source,
        } => Report::new("IndexError", "io")
            .with("op", *op)
            .with("path", path(p))
            .with("errno", source.raw_os_error().map(i64::from)),
        IndexError::HostKey { path: p, problem } => Report::new("IndexError", "host_key")
            .with("path", path(p))
            .with("problem", problem.to_string()),
    }
}

/// A host file's refusal: where, and what.
fn place(
    r: Report,
    p: &std::path::Path,
    position: Option<(usize, usize)>,
    field: &str,
    problem: String,
) -> Report {
    r.with("path", path(p))
        .with("line", position.map(|(l, _)| l))
        .with("column", position.map(|(_, c)| c))
        .with("field", field)
        .with("problem", problem)
}

fn config(e: &ConfigError) -> Report {
    match e {
        ConfigError::Invalid { what } => {
            Report::new("ConfigError", "invalid").with("what", what.as_str())
        }
        ConfigError::File {
            path: p,
            position,
            field,
            problem,
        } => place(
            Report::new("ConfigError", "file"),
            p,
            *position,
            field,
            problem.to_string(),
        ),
        ConfigError::LockFile {
            path: p,
            position,
            field,
            problem,
        } => place(
            Report::new("ConfigError", "lock_file"),
            p,
            *position,
            field,
            problem.to_string(),
        ),
    }
}

fn declined(r: Report, reason: &Declined) -> Report {
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
        _ => r.with("reason", OTHER),
    }
}

fn offline(r: Report, missing: &OfflineMiss) -> Report {
    match missing {
        OfflineMiss::Entry => r.with("missing", "entry"),
        OfflineMiss::Stale { age_ms } => r.with("missing", "stale").with("age_ms", *age_ms),
        OfflineMiss::File => r.with("missing", "file"),
        OfflineMiss::Server { method } => r.with("missing", "server").with("method", *method),
        _ => r.with("missing", OTHER),
    }
}

fn describe(e: &Error) -> Report {
    match e {
        Error::Uri(u) => Report::new("UriError", "uri")
            .with("uri", u.uri.as_str())
            .with("rule", u.rule.to_string()),
        Error::Entry(e) => entry(e),
        Error::Verify(v) => mismatch(
            Report::new("VerifyError", "verify")
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
        } => declined(
            Report::new("DeclinedError", "declined")
                .with("origin", origin.as_str())
                .with("skill", skill.as_str())
                .with("uri", skill.as_str()),
            reason,
        ),
        Error::Offline {
            origin,
            uri,
            missing,
        } => offline(
            Report::new("OfflineError", "offline")
                .with("origin", origin.as_str())
                .with("uri", uri.as_ref().map(|u| u.as_str().to_owned())),
            missing,
        ),
        Error::L2Config {
            location, problem, ..
        } => Report::new("L2ConfigError", "l2_config")
            .with("location", location.as_str())
            .with("problem", problem.as_str()),
    }
}
