//! The `skillcache` npm package's native addon: the Rust host API of `skillcache` as Promises
//! (issue 29). `index.js` loads it, gives it the error classes (`errors.js`) and re-exports it.
//!
//! The layers: `run` (every Promise is made there: a hit answered on the calling thread, the
//! rest on the tokio runtime), `cache` (`SkillCache`, `LoadedSkill`), `types` (the values they
//! hand out) and `errors` (every `skillcache::Error` as an instance of its JS class).

mod cache;
mod errors;
mod run;
mod types;
