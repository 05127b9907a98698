//! Every object and array the addon hands JS, built with define semantics.
//!
//! napi-rs builds a `Vec` with `napi_set_element` and an object with `napi_set_named_property`:
//! each a [[Set]], which walks the prototype chain first, so a setter a host's dependency defined
//! on `Array.prototype[0]` or `Object.prototype.uri` receives the value instead of the new object
//! and the object is made without it. [`array`], [`object`] and [`json`] define each property on
//! the new object itself (`napi_define_properties`): no prototype is consulted and no JS runs.

use napi::bindgen_prelude::{Array, FromNapiValue, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::{Env, Property, PropertyAttributes, Result, ValueType};
use serde::Serialize;
use serde_json::Value;

/// As an assignment to a fresh object would make it: writable, enumerable, configurable.
fn data() -> PropertyAttributes {
    PropertyAttributes::Writable | PropertyAttributes::Enumerable | PropertyAttributes::Configurable
}

/// An array of `items`, each defined at its index.
pub(crate) fn array<'env>(env: &'env Env, items: Vec<Unknown<'env>>) -> Result<Unknown<'env>> {
    let mut out = env.create_array(0)?;
    let properties = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            Ok(Property::new()
                .with_utf8_name(&i.to_string())?
                .with_value(item)
                .with_property_attributes(data()))
        })
        .collect::<Result<Vec<_>>>()?;
    out.define_properties(&properties)?;
    Array::into_unknown(out, env)
}

/// `value`, to resolve a Promise with. Resolving looks up `then` on the value, and a `then` a
/// host's dependency defined on `Object.prototype` or `Array.prototype` would be called with the
/// Promise's own resolve and could settle it with a forged answer (a lock check that is clean, a
/// verify report with nothing corrupt). An object gets an own `then` (`undefined`, fixed, not
/// enumerable), which answers that lookup before any prototype is consulted; a primitive is
/// looked up nowhere.
pub(crate) fn settled<'env>(env: &'env Env, value: Unknown<'env>) -> Result<Unknown<'env>> {
    if value.get_type()? != ValueType::Object {
        return Ok(value);
    }
    let mut object = Object::from_unknown(value)?;
    let undefined = ().into_unknown(env)?;
    object.define_properties(&[Property::new()
        .with_utf8_name("then")?
        .with_value(&undefined)
        .with_property_attributes(PropertyAttributes::Default)])?;
    Object::into_unknown(object, env)
}

/// An array of `items` for `index.js` alone, which unpacks it: what a Promise is resolved with
/// ([`settled`]).
pub(crate) fn unthenable<'env>(env: &'env Env, items: Vec<Unknown<'env>>) -> Result<Unknown<'env>> {
    let out = array(env, items)?;
    settled(env, out)
}

/// An array of `items`, each converted by `convert`.
pub(crate) fn array_of<'env, T>(
    env: &'env Env,
    items: impl IntoIterator<Item = T>,
    mut convert: impl FnMut(&'env Env, T) -> Result<Unknown<'env>>,
) -> Result<Unknown<'env>> {
    let items = items
        .into_iter()
        .map(|item| convert(env, item))
        .collect::<Result<Vec<_>>>()?;
    array(env, items)
}

/// An object of `fields`, each defined on it.
pub(crate) fn object<'env>(
    env: &'env Env,
    fields: Vec<(&str, Unknown<'env>)>,
) -> Result<Unknown<'env>> {
    let mut out = Object::new(env)?;
    let properties = fields
        .iter()
        .map(|(name, value)| {
            Ok(Property::new()
                .with_utf8_name(name)?
                .with_value(value)
                .with_property_attributes(data()))
        })
        .collect::<Result<Vec<_>>>()?;
    out.define_properties(&properties)?;
    Object::into_unknown(out, env)
}

/// `value` as JS: arrays and objects as [`array`] and [`object`] make them.
pub(crate) fn json<'env>(env: &'env Env, value: &Value) -> Result<Unknown<'env>> {
    match value {
        Value::Array(items) => array_of(env, items, json),
        Value::Object(map) => {
            let fields = map
                .iter()
                .map(|(k, v)| Ok((k.as_str(), json(env, v)?)))
                .collect::<Result<Vec<_>>>()?;
            object(env, fields)
        }
        // Primitives: nothing to intercept.
        other => other.clone().into_unknown(env),
    }
}

/// `value`, serialized (its fields as its `serde` attributes name them), as [`json`] makes it.
pub(crate) fn serialized<'env>(env: &'env Env, value: &impl Serialize) -> Result<Unknown<'env>> {
    let value = serde_json::to_value(value).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    json(env, &value)
}

/// `value` as the library serializes it (a maintenance report: the shape the CLI's `--json` prints
/// and the Python package reads), each key in JS's camelCase (`bytes_before` → `bytesBefore`),
/// as [`json`] makes it. reports.d.ts declares what comes out.
pub(crate) fn reported<'env>(env: &'env Env, value: &impl Serialize) -> Result<Unknown<'env>> {
    fn camel(value: Value) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.into_iter().map(camel).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(key, v)| {
                        let mut words = key.split('_');
                        let mut out = words.next().unwrap_or_default().to_owned();
                        for w in words {
                            let mut chars = w.chars();
                            out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
                            out.push_str(chars.as_str());
                        }
                        (out, camel(v))
                    })
                    .collect(),
            ),
            other => other,
        }
    }
    let value = serde_json::to_value(value).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    json(env, &camel(value))
}

/// Strings as an array of JS strings.
pub(crate) fn strings(env: &Env, items: impl IntoIterator<Item = String>) -> Result<Unknown<'_>> {
    array_of(env, items, |env, s| s.into_unknown(env))
}
