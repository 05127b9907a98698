//! `skillcache::Error` as instances of the package's error classes (`errors.js`): the report of
//! `skillcache-binding` (the table both packages share, exhaustive over `Error`) made into an
//! instance of its class under `SkillcacheError`, with the fields as camelCase properties.
//!
//! `errors.js` hands the addon a factory (`registerErrors`) when the package loads; an error is
//! made by calling it on the JS thread with the class name, the message and the fields.

use std::cell::RefCell;

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, Unknown};
use napi::{Env, Result};
use serde_json::{Map, Value, json};
use skillcache::Error;
use skillcache_binding::options::Case;
use skillcache_binding::report::Field;

type Args = FnArgs<(String, String, Unknown<'static>)>;

thread_local! {
    /// The factory of this thread's JS environment (a worker has its own).
    static FACTORY: RefCell<Option<FunctionRef<Args, Unknown<'static>>>> = const { RefCell::new(None) };
}

/// Called once by `errors.js`: `(className, message, fields) => new classes[className](…)`.
// Not in the package's types: `index.js` calls it once and does not re-export it. Host code can
// still reach it (`native.js` stays in `require.cache`), so a second call is refused rather than
// obeyed: a factory a host put in place could make a server's refusal look like an abort. A call
// while the factory runs (from inside it) is refused too, not a panic across the FFI boundary.
#[napi_derive::napi(js_name = "registerErrors", skip_typescript)]
pub fn register_errors(factory: Function<'_, Args, Unknown<'static>>) -> Result<()> {
    FACTORY.with(|f| {
        let mut slot = f.try_borrow_mut().map_err(|_| {
            napi::Error::from_reason("the error factory cannot be registered while it runs")
        })?;
        if slot.is_some() {
            return Err(napi::Error::from_reason(
                "the error factory is registered once, by the package's index.js",
            ));
        }
        *slot = Some(factory.create_ref()?);
        Ok(())
    })
}

/// `e` as a JS error object of its class: the shared report (`skillcache-binding`), its fields
/// spelled in camelCase.
pub(crate) fn object<'env>(env: &'env Env, e: &Error) -> Result<Unknown<'env>> {
    let report = skillcache_binding::report::report(e);
    let mut fields = Map::new();
    fields.insert("kind".into(), Value::from(report.kind));
    for (name, value) in report.fields {
        fields.insert(Case::Camel.spell(name), field(value));
    }
    fields.insert(
        "causes".into(),
        Value::Array(report.causes.into_iter().map(Value::String).collect()),
    );
    make(env, report.class, report.message, fields)
}

/// One field as JSON.
fn field(value: Field) -> Value {
    match value {
        Field::Str(s) => Value::String(s),
        // JS numbers: a count past 2^53 loses precision, as any JS number does.
        #[allow(clippy::cast_precision_loss)]
        Field::Int(n) => i64::try_from(n).map_or_else(|_| Value::from(n as f64), Value::from),
        Field::Float(f) => Value::from(f),
        Field::List(l) => Value::from(l),
        Field::Diff(d) => crate::types::diff_json(&d),
        Field::None => Value::Null,
    }
}

/// Every error kind, class and decline reason the package maps, for its tests: `{ kinds:
/// [[class, kind]], classes: [[class, parent]], declineReasons, offlineMisses, mismatches }`.
#[napi_derive::napi(js_name = "errorKinds", skip_typescript)]
pub fn error_kinds() -> Value {
    use skillcache_binding::report::{CLASSES, DECLINE_REASONS, KINDS, MISMATCHES, OFFLINE_MISSES};
    json!({
        "kinds": KINDS,
        "classes": CLASSES,
        "declineReasons": DECLINE_REASONS,
        "offlineMisses": OFFLINE_MISSES,
        "mismatches": MISMATCHES,
    })
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
        // Registration never holds the slot across a call into JS, so this borrow is only ever
        // shared with another `make` (a factory that raises an error of ours while it runs).
        let factory = f
            .try_borrow()
            .map_err(|_| napi::Error::from_reason("the error factory is being registered"))?;
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
