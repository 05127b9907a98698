//! # skillcache
//!
//! The cache backend an MCP host links in to load skills served over MCP — the Skills extension
//! `io.modelcontextprotocol/skills` (SEP-2640) — safely and fast.
//!
//! A skill is a folder (`SKILL.md` with YAML frontmatter, plus supporting files) that a server
//! publishes with a manifest: every file's URI, SHA-256 digest and size. Skill text goes into a
//! model's context and can direct what the agent does, so a host must never use bytes the server
//! did not publish and must keep every skill tied to the server it came from.
//!
//! ## Architecture (bottom to top; each a module with one job)
//!
//! | module | owns |
//! |---|---|
//! | [`digest`] | [`Digest`] (strict `sha256:<hex>`), the streaming hasher — the hot path |
//! | [`uri`] | [`SkillUri`] / [`FileUri`]: parsing, percent-normalisation, containment, references |
//! | [`frontmatter`] | `SKILL.md` frontmatter under the YAML 1.2 core schema, field-by-field comparison |
//! | [`entry`] | the wire model validated into a [`SkillEntry`]; limits, cache hints, binding, diff |
//! | [`local`] | the entry a server would publish for a skill folder on disk |
//! | [`origin`] | [`Origin`], the host's label for a server, and its reversible path encoding |
//! | [`store`] | verified bytes on disk by origin and digest: publish, verified read, quarantine, locks |
//! | [`index`] | `SQLite`: entries, files, approvals, blob records; the only module with SQL |
//! | [`cache`] | the only layer that sees both: the sync core ([`cache::Cache`]) and the async loading path ([`SkillCache`], [`LoadedSkill`]) |
//! | [`source`] | the [`source::SkillSource`] trait and, with feature `mcp`, `McpSource` over rmcp |
//! | [`server`] | the skills server behind `skillcache serve`: a kept catalog of a folder, on rmcp's server side |
//! | [`error`] | the one [`Error`] type |
//!
//! ## Guarantees
//!
//! - **What exists is valid.** A [`Digest`], [`SkillUri`], [`FileUri`] or [`SkillEntry`] can only
//!   be built through a constructor that checks every rule of the spec (R-W1…R-W7); an invalid
//!   entry is refused as a whole, naming the field and the rule.
//! - **Equal spellings are equal.** URIs compare after decoding each segment exactly once, so
//!   `Q&A.md` and `Q%26A.md` are one file (and a duplicate if listed twice); the server's own
//!   spelling is kept for requests.
//! - **Nothing escapes a skill.** Every manifest file and every resolved reference lies inside the
//!   skill root; `..`, encoded dots, `%2F`, `\`, other authorities and other schemes are refused.
//! - **Frontmatter parsing fails closed and is bounded**: anchors, aliases, tags, duplicate keys,
//!   non-finite numbers and deep nesting are refused; size, depth and node count are capped.
//! - **Approval binds to content.** [`entry::Binding`] fingerprints the complete (URI, digest)
//!   set; any file added, removed or changed changes it, and [`entry::EntryDiff`] says what.
//! - **Verification cannot be forgotten.** Cached bytes leave the store only as
//!   [`VerifiedBytes`], checked on that access per the isolation policy; a copy that fails is
//!   quarantined and fetched from the server exactly once (R-V9).
//! - **Identity is (origin, URI)** everywhere (R-O1); a [`LoadedSkill`] reads only files its held
//!   entry lists (R-V4), only through its own origin's source (R-O6).
//!
//! ## Example
//!
//! ```
//! use skillcache::{Digest, SkillEntry, entry::Validation, frontmatter};
//!
//! // What a server sent for one skill…
//! let md = b"---\nname: demo\ndescription: A demo skill.\n---\n# Demo\n";
//! let wire = serde_json::json!({
//!     "uri": "skill://demo/SKILL.md",
//!     "frontmatter": {"name": "demo", "description": "A demo skill."},
//!     "resources": [{"uri": "skill://demo/SKILL.md", "digest": Digest::of(md).to_string(), "size": md.len()}],
//! });
//! let entry = SkillEntry::from_json(&wire, &Validation::default())?;
//!
//! // …and the bytes it later served for the SKILL.md: size, digest, then frontmatter (R-V6).
//! let listed = entry.file(entry.uri().file()).expect("SKILL.md is always listed");
//! assert_eq!((md.len() as u64, Digest::of(md)), (listed.size(), listed.digest()));
//! assert!(frontmatter::compare(entry.frontmatter(), &frontmatter::parse(md)?).is_empty());
//! # Ok::<(), skillcache::Error>(())
//! ```

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

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

// The host API: five public modules and the types re-exported below (issue 11's bound, checked by
// `scripts/api-surface.py`). Everything else is the crate's own business: a caller cannot reach
// the store or the index, so it cannot break "a row never points at a missing blob" or forge a
// binding. Tests and benches that need the layers below enable the non-default `internals`
// feature (the crate's own dev-dependency on itself does so for `cargo test` and `cargo bench`).
mod config;
pub mod entry;
pub mod error;
pub mod local;
mod lockfile;
mod mismatch;
mod rule;
pub mod source;
pub mod uri;

/// Declares a module that is public only with the `internals` feature (tests, benches, fuzzing):
/// not part of the supported API, and absent from the documented surface.
macro_rules! internal_mod {
    ($($(#[$meta:meta])* $name:ident;)*) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        $(#[$meta])*
        pub mod $name;
        // What only the tests and benches call looks unused without the feature. Builds with it
        // (`cargo test`, `cargo clippy --all-targets`) still find private dead code.
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        $(#[$meta])*
        pub(crate) mod $name;
    )*};
}

mod isolation;

internal_mod! {
    cache;
    digest;
    frontmatter;
    index;
    origin;
    server;
    store;
}

pub use cache::{
    ApprovalPolicy, CachedEntry, DynamicPolicy, EntryInfo, GcReport, Inventory, LoadedSkill,
    Provenance, SkillCache, SkillCacheBuilder, SkillFile, Stats, Verification, VerifyReport,
};
pub use config::{McpConfig, ServerConfig};
pub use digest::Digest;
pub use entry::{Binding, Limits, SkillEntry};
pub use error::{Error, Result};
pub use isolation::Isolation;
pub use lockfile::{LockFile, LockedSkill};
pub use origin::Origin;
/// `skillcache serve` for hosts and tools that embed it: a folder of skills on rmcp's server
/// side, over stdio or Streamable HTTP.
#[cfg(feature = "serve")]
pub use server::{serve_http, serve_stdio};
pub use uri::{FileUri, SkillUri};
