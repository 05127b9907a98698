//! The host layer: the async `SkillCache` over the sync core (`crate::core`).

mod admin;
pub(crate) mod error;
mod fetch;
mod file;
mod l2;
mod loaded;
mod loading;
mod offline;
mod policy;
mod stats;

pub use admin::{CachedEntry, Inventory};
pub use file::{Provenance, SkillFile, Verification};
#[cfg(feature = "l2")]
pub use l2::L2;
pub use loaded::LoadedSkill;
pub use loading::{ApprovalPolicy, DynamicPolicy, EntryInfo, SkillCache, SkillCacheBuilder};
pub use stats::{Counter, Stats};
// Re-exported where hosts found them before the core moved out.
pub use crate::core::{GcReport, VerifyReport};
