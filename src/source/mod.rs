//! Where skills come from: the [`SkillSource`] trait the cache calls, and (feature `mcp`) its
//! implementation over the official Rust MCP SDK.
//!
//! A source returns each result as the raw JSON object the server sent, so every field reaches
//! skillcache's own validation (R-W*): the cache never trusts a transport's typing.

#[cfg(feature = "mcp")]
mod mcp;

#[cfg(feature = "mcp")]
pub use mcp::{McpSource, split_command_line};

/// The Skills extension's identifier, declared by servers (and by our client) in `extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::error::Error;

/// A boxed future of a raw JSON result.
pub type SourceFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send + 'a>>;

/// One server connection, as the cache sees it. The host binds each origin to exactly one
/// source (R-O6); the cache never talks to a transport directly.
///
/// Implementations return the `result` object of each call verbatim; JSON-RPC errors become
/// [`Error::Server`], transport failures [`Error::Transport`].
pub trait SkillSource: Send + Sync {
    /// `skills/list`: one page, from `cursor`.
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a>;
    /// `skills/get` for the `SKILL.md` URI `uri`.
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a>;
    /// `resources/read` of `uri`.
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a>;
}
