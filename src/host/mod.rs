//! The host layer: the async `SkillCache` a host calls, over the sync core (`crate::core`).
//!
//! - `builder`: the host's choices, each with a documented default; `cache`: the verbs.
//! - `admit`: every check before any request, in one place; `pipeline`: the one path for 1..N
//!   listed files (memory tier → store → shared tier → server → verify → publish).
//! - `window`: `LoadedSkill`, the acting window; `file`: `SkillFile`, what every read returns.
//! - `state`: what one cache shares; `ask`: one request under the deadlines; `marks`: stale
//!   marks and remembered revocations; `flight`: one fetch per digest at a time.
//! - `offline`: offline mode; `admin`: maintenance; `lock`: a lock checked against its servers;
//!   `policy`, `error`: leaves (the counters are `crate::stats`, the entry info
//!   `crate::entry::info`).

mod admin;
mod admit;
mod ask;
mod behind;
mod builder;
mod cache;
pub(crate) mod error;
mod file;
mod flight;
mod fork;
mod lock;
mod marks;
mod offline;
mod pipeline;
mod policy;
mod state;
mod window;

pub use crate::entry::info::EntryInfo;
pub use crate::stats::{Counter, Stats};
#[cfg(feature = "l2")]
pub use crate::tier::L2;
pub use crate::verify::Verification;
pub use admin::{CachedEntry, Inventory};
pub use builder::SkillCacheBuilder;
pub use cache::SkillCache;
pub use file::{Provenance, SkillFile};
pub use policy::{ApprovalPolicy, DynamicPolicy};
pub use window::LoadedSkill;
// Re-exported where hosts find them at the crate root.
pub use crate::core::{GcReport, VerifyReport};
