//! The `skillcache` npm package's native addon: the Rust host API of `skillcache` as Promises
//! (issue 29). `index.js` loads it, gives it the error classes (`errors.js`) and re-exports it.
//!
//! The layers: `run` (every Promise is made there: a hit answered on the calling thread, the
//! rest on the tokio runtime), `cache` (`SkillCache`, `LoadedSkill`), `catalog`, `client` (`connectClient`'s source over the host's own TS SDK client), `lockfile`, `types` (the
//! values they hand out) and `errors` (every `skillcache::Error` as an instance of its JS class).

// napi-rs's glue converts each argument into an owned Rust value before the method runs, and a
// method that returns a `PromiseRaw<'env, _>` must borrow its `Env` for `'env`: the two lints'
// remedies (`&str` parameters, `Env` by value) do not apply to exported functions.
#![allow(clippy::needless_pass_by_value, clippy::trivially_copy_pass_by_ref)]

mod cache;
mod catalog;
mod client;
mod defined;
mod errors;
mod lockfile;
mod run;
mod types;

/// Called by `index.js` when the process exits (Node runs no finalizer then): waits up to
/// `within_ms` for every cache of the process to store what its loads handed over (the
/// library's `SkillCache::flush_all`); whether everything was.
#[napi_derive::napi(js_name = "_flushAll", skip_typescript)]
#[must_use]
pub fn flush_all(within_ms: u32) -> bool {
    skillcache::SkillCache::flush_all(std::time::Duration::from_millis(u64::from(within_ms)))
}

/// The bounds `index.js` walks a host's lists, tables and grants with, before the addon copies
/// any of them: the binding layer's (`skillcache_binding::bounds`), the Python package's too.
#[napi_derive::napi(js_name = "_bounds", skip_typescript)]
#[must_use]
pub fn bounds() -> Vec<u32> {
    use skillcache_binding::bounds::{
        GRANT_DEPTH, GRANT_TEXT, GRANT_VALUES, LIST_ITEMS, LIST_TEXT,
    };
    [LIST_ITEMS, LIST_TEXT, GRANT_DEPTH, GRANT_VALUES, GRANT_TEXT]
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        .to_vec()
}
