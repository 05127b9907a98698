//! skillcache
pub mod digest;
pub mod entry;
pub mod error;
pub mod frontmatter;
pub mod local;
pub mod uri;
pub use digest::Digest;
pub use entry::SkillEntry;
pub use error::{Error, Result};
pub use uri::{FileUri, SkillUri};
