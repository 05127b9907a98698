#![doc = include_str!("../README.md")]
// docs.rs builds with `--cfg docsrs` on nightly: each item behind a feature (`serve`, `l2`,
// `mcp`) is labelled with it there; stable builds never see this.
#![cfg_attr(docsrs, feature(doc_cfg))]
// The docs.rs front page is the README (issue 11): its host example and "Which type do I use"
// table are what a new reader needs; its Rust examples run as this crate's doctests. The layers
// (one row per module below, checked by tests/layers.rs), the loading path and the on-disk layout
// are described in docs/design.md, and the requirement ids in docs/requirements.md.

/// Declares an item (a function, constant or re-export) that is public only with the `internals`
/// feature, for the crate's own tests and benches, and crate-visible otherwise. One definition,
/// two visibilities: never two copies of one function.
macro_rules! internal_pub {
    ($(#[$meta:meta])* $kind:ident $($rest:tt)*) => {
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        $(#[$meta])*
        pub $kind $($rest)*
        // Some of these serve only the tests: unused without the feature, by design.
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        $(#[$meta])*
        pub(crate) $kind $($rest)*
    };
}

// The host API: four public modules (entry, error, local, source) and the types re-exported below (issue 11's bound, checked by
// `scripts/api-surface.py`). Everything else is the crate's own business: a caller cannot reach
// the store or the index, so it cannot break "a row never points at a missing blob" or forge a
// binding. Tests and benches that need the layers below enable the non-default `internals`
// feature (the crate's own dev-dependency on itself does so for `cargo test` and `cargo bench`).
// The one opener of files under a folder's descriptor: the store's and serve's (R-H1, R-E1).
mod beneath;
mod catalog;
mod config;
mod config_error;
mod display;
pub mod entry;
pub mod error;
mod hostfile;
mod json_weight;
mod jsonc;
pub mod local;
mod lock_check;
mod lockfile;
mod mismatch;
// The only place that names an operating system: the few filesystem operations whose means
// differ (opening beneath a folder, durable sync, modes, identity), one module per platform.
mod platform;
mod rule;
// The counters (`Counter`, `Stats`, and the live `Counters` the host layer and the shared tier add
// to): a leaf, so neither layer imports the other for them.
mod stats;
// The turn at the root's own files (a `flock` of the root folder): a leaf shared by the store and
// the index, so that neither imports the other for it.
mod turn;
// The unit tests' temporary folders: one file shared with the integration tests and benches.
#[cfg(test)]
#[path = "../tests/common/scratch.rs"]
mod scratch;
pub mod source;

/// Declares a module that is public only with the `internals` feature (tests, benches, fuzzing):
/// not part of the supported API, and absent from the documented surface.
macro_rules! internal_mod {
    ($($(#[$meta:meta])* $name:ident;)*) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        $(#[$meta])*
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        $(#[$meta])*
        pub(crate) mod $name;
    )*};
}

mod host;
mod isolation;
mod tier;
mod verify;

internal_mod! {
    core;
    digest;
    // `SkillFile::framed`: the frame a file enters model context in (R-Q2); `frame::frame`
    // builds it from parts for the `frame` fuzz target.
    frame;
    frontmatter;
    index;
    origin;
    server;
    store;
    // Its types are the crate root's (`SkillUri`, `FileUri`) and `error::UriError`.
    uri;
}

pub use catalog::{CATALOG_LISTINGS_AT_ONCE, Catalog, CatalogSkill, Listing};
pub use config::{McpConfig, ServerConfig};
pub use digest::Digest;
pub use display::display_safe;
pub use entry::{Binding, Limits, SkillEntry};
pub use error::{Error, Result};
#[cfg(feature = "l2")]
pub use host::L2;
pub use host::{
    ApprovalPolicy, CachedEntry, Counter, DynamicPolicy, EntryInfo, GcReport, Inventory,
    LoadedSkill, Provenance, SkillCache, SkillCacheBuilder, SkillFile, Stats, Verification,
    VerifyReport,
};
pub use isolation::Isolation;
pub use lock_check::{FileDrift, Listed, LockCheck, LockDrift};
pub use lockfile::{LockFile, LockedSkill};
pub use origin::Origin;
/// `skillcache serve` for hosts and tools that embed it: a folder of skills on rmcp's server
/// side, over stdio or Streamable HTTP.
#[cfg(feature = "serve")]
pub use server::{serve_http, serve_stdio};
pub use uri::{FileUri, MAX_URI_BYTES, SkillUri};
