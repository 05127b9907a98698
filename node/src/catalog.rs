//! `Catalog` and `CatalogSkill`: every bound origin listed into one view (`SkillCache.catalog`).
//! The handles, collisions and failures are the Rust library's; nothing is decided here.

use napi::bindgen_prelude::{Env, Result, ToNapiValue, Unknown};
use napi_derive::napi;

use crate::defined;
use crate::errors;
use crate::types::SkillEntry;

/// Every skill of every bound origin under a handle unique across origins.
#[napi]
pub struct Catalog {
    inner: skillcache::Catalog,
}

impl From<skillcache::Catalog> for Catalog {
    fn from(inner: skillcache::Catalog) -> Catalog {
        Catalog { inner }
    }
}

#[napi]
impl Catalog {
    /// Every skill, in handle order.
    #[napi(getter, ts_return_type = "CatalogSkill[]")]
    pub fn skills<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::array_of(env, self.inner.skills().iter().cloned(), |env, s| {
            CatalogSkill::from(s).into_unknown(env)
        })
    }
    /// The skill under `handle`, or `null`.
    #[napi]
    pub fn get(&self, handle: String) -> Option<CatalogSkill> {
        self.inner.get(&handle).cloned().map(CatalogSkill::from)
    }
    /// Whether a skill has `handle`.
    #[napi]
    pub fn has(&self, handle: String) -> bool {
        self.inner.get(&handle).is_some()
    }
    /// How many skills.
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.skills().len()).unwrap_or(u32::MAX)
    }
    /// The origins that could not be listed, each with its error (not thrown).
    #[napi(
        getter,
        ts_return_type = "Array<[string, import('./errors').SkillcacheError]>"
    )]
    pub fn failures<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::array_of(env, self.inner.failures(), |env, (origin, e)| {
            let origin = origin.as_str().into_unknown(env)?;
            defined::array(env, vec![origin, errors::object(env, e)?])
        })
    }
}

/// One skill of a `Catalog`.
#[napi]
pub struct CatalogSkill {
    inner: skillcache::CatalogSkill,
}

impl From<skillcache::CatalogSkill> for CatalogSkill {
    fn from(inner: skillcache::CatalogSkill) -> CatalogSkill {
        CatalogSkill { inner }
    }
}

#[napi]
impl CatalogSkill {
    /// The skill's name while unique; qualified (`origin:name`, the root URI, or both) once
    /// another skill shares it.
    #[napi(getter)]
    pub fn handle(&self) -> String {
        self.inner.handle().to_owned()
    }
    #[napi(getter)]
    pub fn origin(&self) -> String {
        self.inner.origin().as_str().to_owned()
    }
    #[napi(getter)]
    pub fn entry(&self) -> SkillEntry {
        SkillEntry {
            inner: self.inner.entry().clone(),
        }
    }
    /// The other parties of a name collision, by handle.
    #[napi(getter, ts_return_type = "string[]")]
    pub fn collides_with<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::strings(env, self.inner.collides_with().iter().cloned())
    }
}
