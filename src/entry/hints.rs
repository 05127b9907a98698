//! The cache hints `ttlMs` and `cacheScope` of a cacheable result (R-W8).

use serde_json::{Map, Value};

use super::error::EntryError;
use crate::rule::Rule;

internal_pub! {
    /// The longest freshness honoured: 24 hours (R-W8).
    const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
}

/// Who may share a cached result (R-C6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Shared by every principal of the origin.
    Public,
    /// Stored per principal and never served to another (the default when a server says nothing).
    Private,
}

impl std::fmt::Display for Scope {
    /// `public` or `private`, as the wire spells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `"public"` or `"private"`, as the wire spells it.
impl serde::Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Scope {
    internal_pub! {
        /// `"public"` or `"private"`.
        #[must_use]
        fn as_str(self) -> &'static str {
            match self {
                Scope::Public => "public",
                Scope::Private => "private",
            }
        }
    }
}

/// A result's cache hints, with our defaults: a missing `cacheScope` is `private`, a missing
/// `ttlMs` is 0, and `ttlMs` is clamped to [`MAX_TTL_MS`].
///
/// ```
/// use skillcache::entry::{CacheHints, Scope};
/// let h = CacheHints::from_result("skills/get", serde_json::json!({"ttlMs": 9e15 as u64}).as_object().unwrap()).unwrap();
/// assert_eq!((h.ttl_ms(), h.scope()), (24 * 3_600_000, Scope::Private));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    ttl_ms: u64,
    scope: Scope,
}

impl CacheHints {
    /// Builds hints, clamping the TTL.
    #[must_use]
    pub fn new(ttl_ms: u64, scope: Scope) -> CacheHints {
        CacheHints {
            ttl_ms: ttl_ms.min(MAX_TTL_MS),
            scope,
        }
    }

    internal_pub! {
        /// Reads `ttlMs` and `cacheScope` from a result object.
        ///
        /// # Errors
        /// [`EntryError::Response`] if `ttlMs` is not a non-negative integer or `cacheScope` is
        /// neither `"public"` nor `"private"`.
        fn from_result(
            method: &'static str,
            result: &Map<String, Value>,
        ) -> Result<CacheHints, EntryError> {
            let fail = |rule| EntryError::Response { origin: None, method, rule };
            let ttl_ms = match result.get("ttlMs") {
                None | Some(Value::Null) => 0,
                Some(v) => v.as_u64().ok_or_else(|| {
                    fail(Rule::Value {
                        allowed: "ttlMs: a non-negative integer",
                    })
                })?,
            };
            let scope = match result.get("cacheScope") {
                None | Some(Value::Null) => Scope::Private,
                Some(Value::String(s)) if s == "public" => Scope::Public,
                Some(Value::String(s)) if s == "private" => Scope::Private,
                Some(_) => {
                    return Err(fail(Rule::Value {
                        allowed: "cacheScope: \"public\" or \"private\"",
                    }));
                }
            };
            Ok(CacheHints::new(ttl_ms, scope))
        }
    }

    /// Milliseconds the result may be used without asking the server again.
    #[must_use]
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// Who may share it.
    #[must_use]
    pub fn scope(&self) -> Scope {
        self.scope
    }
}

impl Default for CacheHints {
    fn default() -> CacheHints {
        CacheHints::new(0, Scope::Private)
    }
}
