//! skillcache
pub mod digest;
pub mod error;
pub mod uri;
pub mod frontmatter;
pub use digest::Digest;
pub use error::{Error, Result};
pub use uri::{FileUri, SkillUri};
