//! `LockFile`: the skills a host pins (`skills.lock`), put in force with
//! `new SkillCache({ locked })`. Reading, checking and writing are the Rust library's.

use std::sync::{Mutex, MutexGuard, PoisonError};

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
    #[napi(factory)]
    pub fn read(env: Env, path: String) -> Result<LockFile> {
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

/// A file's digest and size, as a lock pins it or a server lists it.
#[napi(object, object_to_js = false)]
#[derive(serde::Serialize)]
pub struct Pin {
    pub digest: String,
    pub size: f64,
}

/// One file that differs from its pin: `pinned` is null for a file added since, `now` for one no
/// longer listed.
#[napi(object, object_to_js = false)]
#[derive(serde::Serialize)]
pub struct FileDrift {
    pub uri: String,
    pub pinned: Option<Pin>,
    pub now: Option<Pin>,
}

/// One way a server's listing differs from the lock: its `kind`, origin, skill (null for an
/// origin that could not be listed), the library's message, and for `files` each file.
#[napi(object, object_to_js = false)]
#[derive(serde::Serialize)]
pub struct LockDrift {
    #[napi(
        ts_type = "'files' | 'became_dynamic' | 'binding' | 'removed' | 'added' | 'refused' | 'unlisted'"
    )]
    pub kind: String,
    pub origin: String,
    pub skill: Option<String>,
    pub message: String,
    pub files: Vec<FileDrift>,
}

/// What `checkLock` found: every drift in the lock's order, and the dynamic skills listed beside
/// the pins (`[origin, uri]`: not drift, nothing of them can be pinned).
#[napi(object, object_to_js = false)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LockCheck {
    pub pinned: f64,
    pub matched: f64,
    pub is_clean: bool,
    pub drift: Vec<LockDrift>,
    #[napi(ts_type = "Array<[string, string]>")]
    pub dynamic: Vec<(String, String)>,
}

#[allow(clippy::cast_precision_loss)]
impl From<&skillcache::LockCheck> for LockCheck {
    fn from(c: &skillcache::LockCheck) -> LockCheck {
        let pin = |p: &Option<(skillcache::Digest, u64)>| {
            p.map(|(digest, size)| Pin {
                digest: digest.to_string(),
                size: size as f64,
            })
        };
        LockCheck {
            pinned: c.pinned as f64,
            matched: c.matched as f64,
            is_clean: c.is_clean(),
            drift: c
                .drift
                .iter()
                .map(|d| LockDrift {
                    kind: d.kind().to_owned(),
                    origin: d.origin().as_str().to_owned(),
                    skill: d.skill().map(|s| s.as_str().to_owned()),
                    message: d.to_string(),
                    files: d
                        .files()
                        .iter()
                        .map(|f| FileDrift {
                            uri: f.uri.as_str().to_owned(),
                            pinned: pin(&f.pinned),
                            now: pin(&f.now),
                        })
                        .collect(),
                })
                .collect(),
            dynamic: c
                .dynamic
                .iter()
                .map(|(o, u)| (o.as_str().to_owned(), u.as_str().to_owned()))
                .collect(),
        }
    }
}
