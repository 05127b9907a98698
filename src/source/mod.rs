//! Where skills come from: the [`SkillSource`] trait the cache calls, and (feature `mcp`) its
//! implementation over the official Rust MCP SDK.
//!
//! A source returns each result as the raw JSON object the server sent, so every field reaches
//! skillcache's own validation (R-W*): the cache never trusts a transport's typing.

#[cfg(feature = "mcp")]
mod broken;
pub(crate) mod error;
#[cfg(feature = "mcp")]
mod mcp;
// Its line framing and JSON weight are `serve`'s too (R-E2, R-E3): one bound, not two copies.
#[cfg(feature = "mcp")]
pub(crate) mod stdio;

#[cfg(feature = "mcp")]
pub use mcp::McpSource;

/// What is wrong with `url` as a Streamable HTTP server's address, if anything: it must be an
/// `http://` or `https://` URL with a host. One rule for every place a URL is given (a host's
/// `McpSource::http_with_headers`, an MCP configuration file, the CLI's `--url`, the Python and
/// Node packages' `connect_http`), checked before any server is contacted, so a typo is a
/// refusal that names it rather than a failed connection.
///
/// ```
/// use skillcache::source::http_url_problem;
/// assert_eq!(http_url_problem("https://skills.example.com/mcp"), None);
/// assert!(http_url_problem("notaurl").is_some());
/// assert!(http_url_problem("http://:8080/mcp").is_some());
/// ```
#[must_use]
pub fn http_url_problem(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    match host {
        Some(h) if !h.is_empty() && !h.starts_with(':') => None,
        _ => Some("an http:// or https:// URL with a host is needed"),
    }
}

internal_pub! {
    /// The Skills extension's identifier, declared by servers (and by our client) in `extensions`.
    const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
}

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::entry::Limits;
use crate::error::Error;

/// A boxed future of a source's answer: a raw JSON result by default, `()` for
/// [`SkillSource::ready`].
pub type SourceFuture<'a, T = Value> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

internal_pub! {
    /// Room for everything in a `resources/read` answer besides the file's own encoding: the
    /// JSON-RPC envelope, the URI, the MIME type and the cache hints.
    const MESSAGE_OVERHEAD: u64 = 64 * 1024;
}

/// The largest message a client accepts and `skillcache serve` reads, for `limits` (R-B2).
///
/// The largest file a skill may have is `max_total_bytes`. Sent as a `blob` it grows to 4/3 (base64);
/// sent as `text`, every quote, backslash, tab or newline becomes two characters, so text made of
/// them doubles. The bound covers the larger of the two — twice the file — plus
/// 64 KiB for the envelope: every file inside the limits arrives whole, whichever way a server encodes
/// it, unless its text is mostly other control characters (`\u00XX`, six bytes each). Such a file
/// is refused with [`SourceError::MessageTooLarge`](crate::error::SourceError::MessageTooLarge); a server should send it as a `blob`, which
/// `skillcache serve` does whenever that is the shorter encoding. Hosts that raise the limits raise
/// the bound with them. A source over a connection the host holds (the Python package's
/// `connect_session`, the Node package's `connectClient`) checks each answer's size against it
/// before parsing it.
///
/// ```
/// use skillcache::entry::Limits;
/// use skillcache::source::message_bound;
/// assert_eq!(message_bound(&Limits::default()), 32 * 1024 * 1024 + 64 * 1024);
/// ```
#[must_use]
pub fn message_bound(limits: &Limits) -> u64 {
    limits
        .max_total_bytes()
        .saturating_mul(2)
        .saturating_add(MESSAGE_OVERHEAD)
}

/// Where a stdio server's stderr goes when the host names one of its own open file descriptors
/// (`fs.openSync(path, "a")`, `sys.stderr.fileno()`): the descriptor opened anew for appending,
/// so the host may close its own and a regular file gets the output at its end. For the
/// `Command` a host builds for [`McpSource::stdio`](crate::source::McpSource::stdio).
///
/// # Errors
/// The operating system's, for a descriptor that is not open (or not reopenable, as a socket on
/// Linux); on Windows, always.
pub fn stderr_to_descriptor(fd: u32) -> std::io::Result<std::process::Stdio> {
    crate::platform::append_to_descriptor(fd).map(std::process::Stdio::from)
}

/// This process's own stderr for a stdio server to inherit, as a duplicate: a host runtime that
/// marks its stderr close-on-exec (Node does) would otherwise start the server with none, and
/// its complaints would vanish. For the `Command` a host builds for
/// [`McpSource::stdio`](crate::source::McpSource::stdio).
///
/// # Errors
/// The operating system's, when this process has no stderr to duplicate.
pub fn stderr_duplicate() -> std::io::Result<std::process::Stdio> {
    crate::platform::duplicate_stderr()
}

/// A change a server announced (R-B5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `notifications/resources/updated`: this resource changed.
    Updated {
        /// The resource's URI, as the server sent it.
        uri: String,
    },
    /// `notifications/resources/list_changed`: anything may have changed.
    ListChanged,
}

/// Where a source reports [`Change`]s: set by the cache when it binds the source to an origin.
pub type OnChange = Arc<dyn Fn(Change) + Send + Sync>;

/// Where a [`Requests`] source keeps the [`OnChange`] the cache gave it, for the changes the host
/// forwards from its own connection (R-B5). Empty until the cache binds the source; a change
/// reported before that is dropped (nothing is cached from the source yet).
#[derive(Default)]
pub struct ChangeSink(Mutex<Option<OnChange>>);

impl ChangeSink {
    /// Keeps `on_change`, replacing any earlier one: what [`Requests::watch_changes`] does.
    pub fn set(&self, on_change: OnChange) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(on_change);
    }

    /// Reports `change` to the cache, if it is watching. The callback runs outside the lock, so
    /// it may report again.
    pub fn notify(&self, change: Change) {
        let sink = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(sink) = sink {
            sink(change);
        }
    }
}

/// One server connection, as the cache sees it. The host binds each origin to exactly one
/// source (R-O6); the cache never talks to a transport directly.
///
/// Implementations return the `result` object of each call verbatim; JSON-RPC errors become
/// [`SourceError::Server`](crate::error::SourceError::Server), transport failures [`SourceError::Transport`](crate::error::SourceError::Transport).
pub trait SkillSource: Send + Sync {
    /// `skills/list`: one page, from `cursor`.
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a>;
    /// `skills/get` for the `SKILL.md` URI `uri`.
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a>;
    /// `resources/read` of `uri`.
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a>;

    /// Connects, if the source is not connected yet (R-B4: sources connect lazily). The cache
    /// calls it before each request under its own deadline, so a server that never finishes
    /// `initialize` is reported as such. The default: always ready.
    ///
    /// # Errors
    /// [`SourceError::Transport`](crate::error::SourceError::Transport) and [`EntryError::Response`](crate::error::EntryError::Response) (a server without the extension or
    /// `resources`).
    fn ready(&self) -> SourceFuture<'_, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Asks the source to report the server's change notifications to `on_change` (R-B5). The
    /// default ignores it: a source without notifications relies on `ttlMs` alone.
    fn watch(&self, on_change: OnChange) {
        let _ = on_change;
    }
}

/// A source over a connection the host already holds (the Python package's `connect_session`,
/// the Node package's `connectClient`): it sends one raw request and returns the `result` object
/// verbatim, checked against [`message_bound`] before it is parsed. Every such type is a
/// [`SkillSource`]: the three calls are mapped to their methods and params here, once, so no
/// binding writes the protocol's shapes again.
pub trait Requests: Send + Sync {
    /// Sends `method` with `params` and returns the answer's `result`, with the errors a
    /// [`SkillSource`] call has.
    fn request(&self, method: &'static str, params: Value) -> SourceFuture<'_>;

    /// As [`SkillSource::watch`]; the default ignores it.
    fn watch_changes(&self, on_change: OnChange) {
        let _ = on_change;
    }
}

impl<T: Requests> SkillSource for T {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
        let params = cursor.map_or_else(
            || serde_json::json!({}),
            |c| serde_json::json!({ "cursor": c }),
        );
        self.request("skills/list", params)
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        self.request("skills/get", serde_json::json!({ "uri": uri }))
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        self.request("resources/read", serde_json::json!({ "uri": uri }))
    }

    fn watch(&self, on_change: OnChange) {
        self.watch_changes(on_change);
    }
}
