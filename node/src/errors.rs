//! `skillcache::Error` as instances of the package's error classes (`errors.js`): every variant
//! maps to a class under `SkillcacheError`, with the variant's fields as camelCase properties.
//! The one place errors are mapped. The `match` over `Error` is exhaustive, so a new kind of
//! error cannot ship without a class.
//!
//! `errors.js` hands the addon a factory (`registerErrors`) when the package loads; an error is
//! made by calling it on the JS thread with the class name, the message and the fields.

use std::cell::RefCell;
use std::error::Error as _;

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, Unknown};
use napi::{Env, Result};
use serde_json::{Map, Value, json};
use skillcache::Error;
use skillcache::error::{
    ConfigError, Declined, EntryError, IndexError, Limit, Mismatch, OfflineMiss, SourceError,
    StoreError,
};

type Args = FnArgs<(String, String, Unknown<'static>)>;

thread_local! {
    /// The factory of this thread's JS environment (a worker has its own).
    static FACTORY: RefCell<Option<FunctionRef<Args, Unknown<'static>>>> = const { RefCell::new(None) };
}

/// Called once by `errors.js`: `(className, message, fields) => new classes[className](…)`.
// Not in the package's types: `index.js` calls it once and does not re-export it.
#[napi_derive::napi(js_name = "registerErrors", skip_typescript)]
pub fn register_errors(factory: Function<'_, Args, Unknown<'static>>) -> Result<()> {
    let reference = factory.create_ref()?;
    FACTORY.with(|f| *f.borrow_mut() = Some(reference));
    Ok(())
}

/// `e` as a JS error object of its class.
pub(crate) fn object<'env>(env: &'env Env, e: &Error) -> Result<Unknown<'env>> {
    let (class, mut fields) = describe(e);
    let mut causes = Vec::new();
    // `Error`'s `source()` is its layer error's own (transparent): this starts at the cause.
    let mut next = e.source();
    while let Some(cause) = next {
        causes.push(Value::String(cause.to_string()));
        next = cause.source();
    }
    fields.insert("causes".into(), Value::Array(causes));
    make(env, class, e.to_string(), fields)
}

/// The `AbortError` a call aborted through its `AbortSignal` rejects with: not a
/// `SkillcacheError` (nothing was refused), named as Node names its own aborts.
pub(crate) fn aborted(env: &Env) -> Result<Unknown<'_>> {
    let fields = json!({"code": "ABORT_ERR", "causes": []});
    let fields = fields.as_object().cloned().unwrap_or_default();
    make(
        env,
        "AbortError",
        "the operation was aborted".to_owned(),
        fields,
    )
}

/// An instance of `class` made by `errors.js`'s factory.
fn make<'env>(
    env: &'env Env,
    class: &str,
    message: String,
    fields: Map<String, Value>,
) -> Result<Unknown<'env>> {
    FACTORY.with(|f| {
        let factory = f.borrow();
        let factory = factory.as_ref().ok_or_else(|| {
            napi::Error::from_reason("the skillcache addon was loaded without its index.js")
        })?;
        // The factory's return type says `'static` (a `FunctionRef` names one type for every
        // call); the value lives in `env`'s current scope, which `Unknown`'s covariance gives it.
        // The fields with define semantics (`crate::defined`): a host's setter never sees them.
        let fields = crate::defined::json(env, &Value::Object(fields))?;
        let made: Unknown<'env> = factory
            .borrow_back(env)?
            .call((class.to_owned(), message, fields).into())?;
        Ok(made)
    })
}

/// `e` as an error that throws (or rejects) its JS object.
pub(crate) fn throwable(env: &Env, e: &Error) -> napi::Error {
    match object(env, e) {
        Ok(obj) => napi::Error::from(obj),
        Err(failed) => failed,
    }
}

fn with(mut fields: Map<String, Value>, more: Value) -> Map<String, Value> {
    if let Value::Object(more) = more {
        fields.extend(more);
    }
    fields
}

fn mismatch(m: &Mismatch) -> Value {
    match m {
        Mismatch::Size { expected, actual } => {
            json!({"mismatch": "size", "expected": expected, "actual": actual})
        }
        Mismatch::Digest { expected, actual } => json!({"mismatch": "digest",
            "expected": expected.to_string(), "actual": actual.to_string()}),
        Mismatch::Frontmatter { diffs } => json!({"mismatch": "frontmatter",
            "diffs": diffs.iter().map(|d| d.key.clone()).collect::<Vec<_>>()}),
        Mismatch::FrontmatterUnreadable { problem } => {
            json!({"mismatch": "frontmatter_unreadable", "problem": problem.to_string()})
        }
        Mismatch::Unlisted => json!({"mismatch": "unlisted"}),
        Mismatch::NotARegularFile => json!({"mismatch": "not_a_regular_file"}),
        // `Mismatch` is non_exhaustive: a kind added later is still reported, by its message.
        _ => json!({"mismatch": "other"}),
    }
}

fn entry(e: &EntryError) -> (&'static str, Value) {
    match e {
        EntryError::Digest { text, rule } => (
            "EntryError",
            json!({"kind": "digest", "text": text, "rule": rule.to_string()}),
        ),
        EntryError::Invalid { skill, field, rule } => (
            "EntryError",
            json!({"kind": "invalid", "skill": skill, "uri": skill, "field": field,
                "rule": rule.to_string()}),
        ),
        EntryError::LimitExceeded {
            skill,
            limit,
            declared,
            max,
        } => (
            "LimitExceededError",
            json!({"kind": "limit_exceeded", "skill": skill.as_str(), "uri": skill.as_str(),
                "limit": match limit { Limit::Files => "files", Limit::TotalBytes => "total_bytes",
                _ => "other" }, "declared": declared, "max": max}),
        ),
        EntryError::Response { method, rule } => (
            "EntryError",
            json!({"kind": "response", "method": method, "rule": rule.to_string()}),
        ),
        EntryError::Frontmatter { problem } => (
            "EntryError",
            json!({"kind": "frontmatter", "problem": problem.to_string()}),
        ),
        EntryError::Folder { path, why } => (
            "EntryError",
            json!({"kind": "folder", "path": path.display().to_string(), "why": why}),
        ),
    }
}

fn source(e: &SourceError) -> (&'static str, Value) {
    match e {
        SourceError::Server {
            origin,
            method,
            code,
            message,
        } => (
            "ServerError",
            json!({"kind": "server", "origin": origin.as_ref().map(skillcache::Origin::as_str),
                "method": method, "code": code, "message": message}),
        ),
        SourceError::Transport { origin, method, .. } => (
            "TransportError",
            json!({"kind": "transport", "origin": origin.as_ref().map(skillcache::Origin::as_str),
                "method": method}),
        ),
        SourceError::Timeout {
            origin,
            method,
            after,
        } => (
            "TimeoutError",
            json!({"kind": "timeout", "origin": origin.as_str(), "method": method,
                "after": after.as_secs_f64()}),
        ),
        SourceError::MessageTooLarge {
            origin,
            method,
            max,
        } => (
            "MessageTooLargeError",
            json!({"kind": "message_too_large", "origin": origin.as_ref().map(skillcache::Origin::as_str),
                "method": method, "max": max}),
        ),
        SourceError::NotConnected { origin } => (
            "NotConnectedError",
            json!({"kind": "not_connected", "origin": origin.as_str()}),
        ),
    }
}

fn store(e: &StoreError) -> Value {
    match e {
        StoreError::BlobMismatch {
            origin,
            digest,
            mismatch: m,
        } => Value::Object(with(
            json!({"kind": "blob_mismatch", "origin": origin.as_str(),
                "digest": digest.to_string()})
            .as_object()
            .cloned()
            .unwrap_or_default(),
            mismatch(m),
        )),
        StoreError::RootRefused { root, why, path } => json!({"kind": "root_refused",
            "root": root.display().to_string(), "why": why, "path": path.display().to_string()}),
        StoreError::Io { op, path, source } => json!({"kind": "io", "op": op,
            "path": path.display().to_string(), "errno": source.raw_os_error()}),
        StoreError::LockTimeout {
            path,
            waited,
            holder,
        } => json!({"kind": "lock_timeout", "path": path.display().to_string(),
            "waited": waited.as_secs_f64(), "holder": holder}),
    }
}

fn index(e: &IndexError) -> Value {
    match e {
        IndexError::Database { what, .. } => json!({"kind": "database", "what": what}),
        IndexError::TooNew { found, supported } => {
            json!({"kind": "too_new", "found": found, "supported": supported})
        }
        IndexError::ReadOnly { path, what } => {
            json!({"kind": "read_only", "path": path.display().to_string(), "what": what})
        }
        IndexError::Io { op, path, source } => json!({"kind": "io", "op": op,
            "path": path.display().to_string(), "errno": source.raw_os_error()}),
        IndexError::HostKey { path, problem } => json!({"kind": "host_key",
            "path": path.display().to_string(), "problem": problem.to_string()}),
    }
}

fn config(e: &ConfigError) -> Value {
    let place = |kind: &str,
                 path: &std::path::Path,
                 position: &Option<(usize, usize)>,
                 field: &str,
                 problem: String| {
        json!({"kind": kind, "path": path.display().to_string(),
            "line": position.map(|(l, _)| l), "column": position.map(|(_, c)| c),
            "field": field, "problem": problem})
    };
    match e {
        ConfigError::Invalid { what } => json!({"kind": "invalid", "what": what}),
        ConfigError::File {
            path,
            position,
            field,
            problem,
        } => place("file", path, position, field, problem.to_string()),
        ConfigError::LockFile {
            path,
            position,
            field,
            problem,
        } => place("lock_file", path, position, field, problem.to_string()),
    }
}

fn declined(reason: &Declined) -> Value {
    let (name, changes) = match reason {
        Declined::Dynamic => ("dynamic", None),
        Declined::NotApproved => ("not_approved", None),
        Declined::Revoked { changes } => ("revoked", Some(changes)),
        Declined::NotLocked => ("not_locked", None),
        Declined::Drift { changes } => ("drift", Some(changes)),
        _ => ("other", None),
    };
    json!({"reason": name, "changes": changes.map(|c| crate::types::diff_json(c))})
}

fn offline(missing: &OfflineMiss) -> Value {
    match missing {
        OfflineMiss::Entry => json!({"missing": "entry"}),
        OfflineMiss::Stale { age_ms } => json!({"missing": "stale", "ageMs": age_ms}),
        OfflineMiss::File => json!({"missing": "file"}),
        OfflineMiss::Server { method } => json!({"missing": "server", "method": method}),
        _ => json!({"missing": "other"}),
    }
}

/// `e`'s class and fields.
fn describe(e: &Error) -> (&'static str, Map<String, Value>) {
    let (class, fields) = match e {
        Error::Uri(u) => (
            "UriError",
            json!({"kind": "uri", "uri": u.uri, "rule": u.rule.to_string()}),
        ),
        Error::Entry(e) => entry(e),
        Error::Verify(v) => (
            "VerifyError",
            Value::Object(with(
                with(
                    Map::new(),
                    json!({"kind": "verify", "origin": v.origin.as_str(),
                    "uri": v.uri.as_str()}),
                ),
                mismatch(&v.mismatch),
            )),
        ),
        Error::Source(s) => source(s),
        Error::Store(s) => ("StoreError", store(s)),
        Error::Index(i) => ("IndexError", index(i)),
        Error::Config(c) => ("ConfigError", config(c)),
        Error::Declined {
            origin,
            skill,
            reason,
        } => (
            "DeclinedError",
            Value::Object(with(
                with(
                    Map::new(),
                    json!({"kind": "declined", "origin": origin.as_str(),
                    "skill": skill.as_str(), "uri": skill.as_str()}),
                ),
                declined(reason),
            )),
        ),
        Error::Offline {
            origin,
            uri,
            missing,
        } => (
            "OfflineError",
            Value::Object(with(
                with(
                    Map::new(),
                    json!({"kind": "offline", "origin": origin.as_str(),
                    "uri": uri.as_ref().map(skillcache::FileUri::as_str)}),
                ),
                offline(missing),
            )),
        ),
        Error::L2Config {
            location, problem, ..
        } => (
            "L2ConfigError",
            json!({"kind": "l2_config", "location": location, "problem": problem}),
        ),
    };
    (class, with(Map::new(), fields))
}
