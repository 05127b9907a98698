//! `LockFile`: the skills a host pins (`skills.lock`), put in force with
//! `new SkillCache({ locked })`. Reading, checking and writing are the Rust library's.

use std::sync::{Mutex, MutexGuard, PoisonError};

use napi::JsValue as _;
use napi::bindgen_prelude::{Env, Result, Unknown};
use napi_derive::napi;

use crate::cache::origin;
use crate::defined;
use crate::errors::throwable;
use crate::types::SkillEntry;

/// One pinned skill: its origin, URI, approval binding and files (`[uri, digest, size]`).
#[napi(object, object_to_js = false)]
#[derive(serde::Serialize)]
pub struct LockedSkill {
    pub origin: String,
    pub uri: String,
    pub binding: String,
    #[napi(ts_type = "Array<[string, string, number]>")]
    pub files: Vec<(String, String, f64)>,
}

/// A lock file.
#[napi]
pub struct LockFile {
    inner: Mutex<skillcache::LockFile>,
}

impl LockFile {
    /// The lock as it is now, for a cache that puts it in force.
    pub(crate) fn snapshot(&self) -> skillcache::LockFile {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, skillcache::LockFile> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[napi]
impl LockFile {
    /// An empty lock file.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> LockFile {
        LockFile {
            inner: Mutex::new(skillcache::LockFile::new()),
        }
    }

    /// Reads and checks the lock file at `path` (a `ConfigError` says where it is wrong).
    ///
    /// `path` is taken as any value and checked here: napi-rs makes this static fixed, so
    /// `index.js` cannot check it first, and napi-rs's own conversion throws a bare `Error` that
    /// names Rust types and echoes the value (round 20 of review). A path that is not a string
    /// is the package's `TypeError`, as everywhere else.
    #[napi(factory, ts_args_type = "path: string")]
    pub fn read(env: Env, path: Unknown<'_>) -> Result<LockFile> {
        let kind = path.get_type()?;
        if kind != napi::ValueType::String {
            let got = format!("{kind:?}").to_lowercase();
            env.throw_type_error(
                &format!("skillcache: path must be a string, not {got}"),
                None,
            )?;
            return Err(napi::Error::new(
                napi::Status::PendingException,
                String::new(),
            ));
        }
        let path: String = path.coerce_to_string()?.into_utf8()?.into_owned()?;
        let lock = skillcache::LockFile::read(path).map_err(|e| throwable(&env, &e))?;
        Ok(LockFile {
            inner: Mutex::new(lock),
        })
    }

    /// Pins `entry` of `origin` as it is now.
    #[napi]
    pub fn insert(&self, env: Env, origin: String, entry: &SkillEntry) -> Result<()> {
        let origin = self::origin(&env, &origin)?;
        self.lock()
            .insert(&origin, &entry.inner)
            .map_err(|e| throwable(&env, &e))
    }

    /// Throws a `DeclinedError` unless `entry` of `origin` is pinned as it is.
    #[napi]
    pub fn check(&self, env: Env, origin: String, entry: &SkillEntry) -> Result<()> {
        let origin = self::origin(&env, &origin)?;
        self.lock()
            .check(&origin, &entry.inner)
            .map_err(|e| throwable(&env, &e))
    }

    /// Writes the lock file to `path`.
    #[napi]
    pub fn write(&self, env: Env, path: String) -> Result<()> {
        self.snapshot().write(path).map_err(|e| throwable(&env, &e))
    }

    /// Every pinned skill.
    #[napi(getter, ts_return_type = "LockedSkill[]")]
    pub fn skills<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        #[allow(clippy::cast_precision_loss)]
        let skills: Vec<LockedSkill> = self
            .lock()
            .skills()
            .map(|s| LockedSkill {
                origin: s.origin().as_str().to_owned(),
                uri: s.uri().as_str().to_owned(),
                binding: s.binding().to_string(),
                files: s
                    .files()
                    .map(|(u, d, n)| (u.as_str().to_owned(), d.to_string(), n as f64))
                    .collect(),
            })
            .collect();
        defined::serialized(env, &skills)
    }
}
