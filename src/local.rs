//! Local skill folders: the entry a server would publish for a folder on disk, and the bundled
//! server that publishes a folder of them.
//!
//! Skill authors use [`inspect`] (through `skillcache inspect`) to check a skill before
//! publishing; [`SkillServer`] (behind `skillcache serve`) publishes a folder of skills. Both
//! live in the server's layer (`server::inspect`, `server`); this module is where hosts find
//! them, so the two never import each other in a cycle (D3).

/// The skills server behind `skillcache serve`, over a folder of skills: the publisher the tests
/// and the CLI use.
pub use crate::server::SkillServer;
pub use crate::server::inspect::inspect;

internal_pub! {
    use crate::server::inspect::{LocalFile, LocalSkill, find_skills, inspect_folder};
}
