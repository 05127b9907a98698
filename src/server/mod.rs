//! The skills server behind `skillcache serve`: a folder of skill folders published with the
//! skills extension (SEP-2640).
//!
//! [`SkillServer`] answers the methods as JSON ([`SkillServer::call`]) and is a [`SkillSource`]
//! in-process; with feature `serve`, [`serve_stdio`] and [`serve_http`] put it on rmcp's server
//! side (an rmcp `ServerHandler`), speaking both the `initialize` handshake and the 2026-07-28
//! flow (`server/discover`, per-request metadata), over stdio or Streamable HTTP.
//!
//! - `inspect`: a folder on disk → the entry a server would publish (behind `local::inspect`).
//! - `catalog`: the served folder as a snapshot, rescanned on the watch interval (R-E3).
//! - `read`: `resources/read` from the folder's descriptor, only the bytes published (R-E1).
//! - `held`: the bytes a watched server keeps from its scan to answer reads with, bounded.
//! - `wire`: the JSON answers, paging and cursors (R-E8).
//! - `rmcp_server`: the rmcp handler and the watcher; `stdio` and `http`: the two transports,
//!   each bounded (R-E2, R-E3).
//!
//! It publishes only folders that are valid skills by the strict Agent Skills rules (R-E8;
//! [`SkillServer::lenient`] opts out) and reports the others through `tracing`.

mod catalog;
mod held;
#[cfg(feature = "serve")]
mod http;
pub(crate) mod inspect;
#[cfg(feature = "serve")]
mod listen;
mod read;
#[cfg(feature = "serve")]
mod rmcp_server;
#[cfg(feature = "serve")]
mod stdio;
mod wire;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::entry::{Scope, Validation};
use crate::error::Error;
use crate::source::{SKILLS_EXTENSION, SkillSource, SourceFuture};
use crate::uri::FileUri;
use catalog::{Built, Shared, Snapshot};
internal_pub! {
    use catalog::Changes;
}

#[cfg(feature = "serve")]
pub use http::serve_http;
#[cfg(feature = "serve")]
internal_pub! {
    use http::{HttpLimits, serve_http_with};
}
#[cfg(feature = "serve")]
pub use rmcp_server::serve_stdio;
#[cfg(feature = "serve")]
internal_pub! {
    use stdio::read_message;
}

/// JSON-RPC "parse error": the request is not JSON.
#[cfg(any(feature = "serve", test))]
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "invalid request": JSON, but not a request.
#[cfg(any(feature = "serve", test))]
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "invalid params", also the spec's code for an unknown skill or resource.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "internal error".
pub const INTERNAL_ERROR: i64 = -32603;

/// A skills server over a folder. Clones share one catalog.
#[derive(Debug, Clone)]
pub struct SkillServer {
    root: PathBuf,
    ttl_ms: u64,
    scope: Scope,
    dynamic: HashSet<String>,
    directory_read: bool,
    lenient: bool,
    /// How often `serve_stdio`/`serve_http` scan the folder for changes to announce.
    pub(crate) watch_interval: std::time::Duration,
    shared: Arc<Shared>,
}

/// A JSON-RPC error: code and message. Messages never quote the request (R-E3: what a client
/// sent is not echoed back, whatever it holds).
pub type RpcError = (i64, String);

impl SkillServer {
    /// Serves every skill folder under `root` as `skill://<path>/SKILL.md`.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> SkillServer {
        SkillServer {
            root: root.into(),
            ttl_ms: 0,
            scope: Scope::Public,
            dynamic: HashSet::new(),
            directory_read: false,
            lenient: false,
            watch_interval: std::time::Duration::from_secs(1),
            shared: Arc::default(),
        }
    }

    /// The `ttlMs` hint sent with every result (default 0: hosts re-check every time).
    #[must_use]
    pub fn ttl_ms(mut self, ttl_ms: u64) -> SkillServer {
        self.ttl_ms = ttl_ms;
        self
    }

    /// Publishes the skill at `path` (relative, e.g. `live-status`) as `resources: "dynamic"`.
    #[must_use]
    pub fn dynamic(mut self, path: impl Into<String>) -> SkillServer {
        // Kept as the skill's path in its URIs (each name percent-encoded), which is what a
        // built skill is known by: `my group/esc` is `my%20group/esc` there (round 26 of
        // review: a name with a space was published as static, without a word).
        // Normalised as a path is (round 27: `esc/`, `./esc` and `grp//esc` name the skill
        // `esc` and `grp/esc`, as a shell's completion types them).
        let path: String = path.into();
        let encoded = path
            .split('/')
            .filter(|segment| !segment.is_empty() && *segment != ".")
            .map(|segment| crate::uri::encode_segment(segment.as_bytes()))
            .collect::<Vec<_>>()
            .join("/");
        self.dynamic.insert(encoded);
        self
    }

    /// Also serves `resources/directory/read` and declares `directoryRead: true` (SEP-2640).
    #[must_use]
    pub fn directory_read(mut self, on: bool) -> SkillServer {
        self.directory_read = on;
        self
    }

    /// Publishes skills that break the strict Agent Skills rules too (default: off). By
    /// default a folder whose `allowed-tools` is not a string, or whose `metadata` does not map
    /// strings to strings, is not published (and logged, like any invalid folder): strict
    /// clients refuse a whole listing for one such entry (R-E8). skillcache itself accepts
    /// them as a client (R-W6).
    #[must_use]
    pub fn lenient(mut self, on: bool) -> SkillServer {
        self.lenient = on;
        self
    }

    /// How often the folder is scanned for changes (default: every second). Under
    /// [`serve_stdio`](crate::serve_stdio) and [`serve_http`](crate::serve_http) a watcher
    /// scans on this timer and announces changes to connected peers; requests never scan the
    /// whole folder, they answer from the last scan (a `skills/get` re-checks its own skill's
    /// folder). In-process, with no watcher, a request rescans once the last scan is older.
    #[must_use]
    pub fn watch_interval(mut self, every: std::time::Duration) -> SkillServer {
        self.watch_interval = every;
        self
    }

    /// How many bytes of published files a server under [`serve_stdio`](crate::serve_stdio)
    /// or [`serve_http`](crate::serve_http) keeps in memory to answer `resources/read` with
    /// (default 64 MiB; a file over 1 MiB is never kept; 0 keeps none). The bytes kept are
    /// the very ones hashed into the published digest. A kept file edited on disk is answered
    /// as published until the watcher's next scan publishes and announces the change; the
    /// others are read from the folder and checked against the digest on each request.
    #[must_use]
    pub fn held_bytes(self, max: u64) -> SkillServer {
        self.shared.held.set_max(max);
        self
    }

    /// The rules folders are published by.
    fn validation(&self) -> Validation {
        Validation::default().strict(!self.lenient)
    }

    /// The extension's settings object under `capabilities.extensions`.
    fn extension_settings(&self) -> Value {
        if self.directory_read {
            json!({"directoryRead": true})
        } else {
            json!({})
        }
    }

    /// The published size of the file at `uri`, when the snapshot answers a read of it as it
    /// is (`Shared::published_size`).
    #[cfg(feature = "serve")]
    pub(crate) fn published_size(&self, uri: &FileUri) -> Option<u64> {
        self.shared.published_size(uri)
    }

    /// The snapshot to answer from (R-E3: no scan of the whole folder per request).
    fn snapshot(&self) -> Result<Arc<Snapshot>, RpcError> {
        self.shared
            .snapshot(&self.root, &self.validation(), self.watch_interval)
            .map_err(|e| (INTERNAL_ERROR, e.to_string()))
    }

    internal_pub! {
        /// Scans the whole folder now and hands out what changed since the last call: the
        /// watcher's work (and the benches' measure of it).
        ///
        /// # Errors
        /// The served folder cannot be opened.
        fn changes(&self) -> Result<Changes, Error> {
            self.shared.rescan(&self.root, &self.validation())
        }
    }

    fn entry_json(&self, built: &Built) -> Option<Value> {
        let mut v = built.entry()?.json.clone();
        if self.dynamic.contains(&built.rel) {
            v["resources"] = json!("dynamic");
        }
        Some(v)
    }

    fn hints(&self, mut result: Value) -> Value {
        result["ttlMs"] = json!(self.ttl_ms);
        result["cacheScope"] = json!(self.scope.as_str());
        result["resultType"] = json!("complete");
        result
    }

    internal_pub! {
        /// Answers one method call: `initialize`, `ping`, `skills/list`, `skills/get`,
        /// `resources/list`, `resources/read`, and `resources/directory/read` when enabled.
        ///
        /// # Errors
        /// A JSON-RPC error for unknown methods, skills and resources (`-32602` for an unknown
        /// skill or resource URI, or a bad cursor). No message quotes the request.
        fn call(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
            match method {
                "initialize" => Ok(json!({
                    "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or("2025-11-25"),
                    // No subscriptions or list changes here: only the rmcp server sends notifications.
                    "capabilities": {"resources": {},
                                     "extensions": {SKILLS_EXTENSION: self.extension_settings()}},
                    "serverInfo": {"name": "skillcache-serve", "version": env!("CARGO_PKG_VERSION")},
                })),
                "ping" => Ok(json!({})),
                "skills/list" => self.list_skills_page(params),
                "skills/get" => self.get(params),
                "resources/list" => self.list_resources_page(params),
                "resources/directory/read" if self.directory_read => self.directory(params),
                "resources/read" => self.read(params),
                _ => Err((METHOD_NOT_FOUND, "method not found".to_owned())),
            }
        }
    }

    /// One page of `skills/list` (R-E8: a page stays far below the 1 MiB clients cap an event
    /// at; the cursor is opaque and checked).
    fn list_skills_page(&self, params: &Value) -> Result<Value, RpcError> {
        let after = wire::cursor_param(params)?;
        let snap = self.snapshot()?;
        let page = wire::page(snap.skills_after(after.as_deref()), wire::SKILLS_PAGE, |b| {
            b.entry().map_or(0, |e| e.json_len)
        });
        let mut result = json!({
            "skills": page.items.iter().filter_map(|b| self.entry_json(b)).collect::<Vec<_>>(),
        });
        if let Some(next) = page.next {
            result["nextCursor"] = json!(next);
        }
        Ok(self.hints(result))
    }

    /// One page of `resources/list`: each published `SKILL.md`.
    fn list_resources_page(&self, params: &Value) -> Result<Value, RpcError> {
        let after = wire::cursor_param(params)?;
        let snap = self.snapshot()?;
        let page = wire::page(
            snap.skills_after(after.as_deref()),
            wire::RESOURCES_PAGE,
            |b| b.entry().map_or(0, |e| wire::resource_len(&e.skill)),
        );
        let mut result = json!({
            "resources": page
                .items
                .iter()
                .filter_map(|b| b.entry().map(|e| wire::skill_md_resource(&e.skill)))
                .collect::<Vec<_>>(),
        });
        if let Some(next) = page.next {
            result["nextCursor"] = json!(next);
        }
        Ok(self.hints(result))
    }

    /// `skills/get`: the skill's folder is re-checked first (a metadata scan of that folder
    /// only), so a skill edited a moment ago is answered as it now is.
    fn get(&self, params: &Value) -> Result<Value, RpcError> {
        let uri = uri_param(params)?;
        let snap = self.snapshot()?;
        // Fixed words (R-E3: nothing a client sent is echoed back); the client knows the URI it
        // asked for, and names it (the CLI prefixes it to the error it prints).
        let unknown = || (INVALID_PARAMS, "no skill is served at that URI".to_owned());
        let built = snap.skill(&uri).ok_or_else(unknown)?.clone();
        let snap = self
            .shared
            .recheck(snap, &built, &self.root, &self.validation());
        // No cursor: a single entry is not a list (SEP-2640).
        let skill = snap.skill(&uri).and_then(|b| self.entry_json(b));
        skill
            .map(|skill| self.hints(json!({"skill": skill})))
            .ok_or_else(unknown)
    }

    /// `resources/directory/read`: the direct children of a folder of a published skill.
    fn directory(&self, params: &Value) -> Result<Value, RpcError> {
        let dir = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or((INVALID_PARAMS, "params.uri is required".to_owned()))?
            .trim_end_matches('/');
        let snap = self.snapshot()?;
        snap.skill_holding(dir)
            .and_then(|b| wire::directory_children(&b.entry()?.skill, dir))
            .map(|children| self.hints(json!({"resources": children})))
            .ok_or((
                INVALID_PARAMS,
                "that URI is not a directory served here".to_owned(),
            ))
    }

    /// `resources/read`: the published bytes, or an error (R-E1).
    fn read(&self, params: &Value) -> Result<Value, RpcError> {
        let uri = uri_param(params)?;
        let snap = self.snapshot()?;
        let item = read::published(self, &snap, &uri)?;
        Ok(self.hints(json!({"contents": [item]})))
    }

    internal_pub! {
        /// Answers one JSON-RPC message; `None` for notifications. For in-process peers and test
        /// doubles; `skillcache serve` speaks through rmcp instead.
        #[must_use]
        fn handle(&self, message: &Value) -> Option<Value> {
            let id = message.get("id")?.clone();
            let method = message
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            Some(match self.call(method, &params) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            })
        }
    }
}

/// `params.uri` as a file URI; the error never quotes the URI (R-E3), nor the rule it broke
/// (some rules name the offending segment).
fn uri_param(params: &Value) -> Result<FileUri, RpcError> {
    let text = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or((INVALID_PARAMS, "params.uri is required".to_owned()))?;
    FileUri::parse(text).map_err(|e| {
        tracing::debug!(rule = %e.rule, "a request named an invalid URI");
        (
            INVALID_PARAMS,
            "params.uri is not a valid file URI".to_owned(),
        )
    })
}

impl SkillSource for SkillServer {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move {
            let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
            self.call("skills/list", &params)
                .map_err(|e| server_err("skills/list", e))
        })
    }
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            self.call("skills/get", &json!({"uri": uri}))
                .map_err(|e| server_err("skills/get", e))
        })
    }
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            self.call("resources/read", &json!({"uri": uri}))
                .map_err(|e| server_err("resources/read", e))
        })
    }
}

fn server_err(method: &str, (code, message): RpcError) -> Error {
    Error::Source(crate::error::SourceError::Server {
        origin: None,
        uri: None,
        method: method.to_owned(),
        code,
        message,
    })
}

#[cfg(test)]
mod tests;
