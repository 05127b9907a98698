//! The skills server behind `skillcache serve`: a folder of skill folders published with the
//! skills extension (SEP-2640).
//!
//! [`SkillServer`] answers the methods as JSON ([`SkillServer::call`]) and is a [`SkillSource`]
//! in-process; with feature `serve`, [`serve_stdio`] and [`serve_http`] put it on rmcp's server
//! side (an rmcp `ServerHandler`), speaking both the `initialize` handshake and the 2026-07-28
//! flow (`server/discover`, per-request metadata), over stdio or Streamable HTTP.
//!
//! The catalog is built once and kept: before each catalog query a metadata scan (no file is
//! opened) says whether the folder changed, and only changed skill folders are inspected and
//! hashed again (module `catalog`). It publishes only folders that are valid skills
//! ([`crate::local::inspect`]) and reports the others through `tracing`.

mod catalog;
#[cfg(feature = "serve")]
mod rmcp_server;
mod wire;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::entry::Scope;
use crate::error::Error;
use crate::source::{SKILLS_EXTENSION, SkillSource, SourceFuture};
use crate::uri::FileUri;
use catalog::Catalog;
#[cfg(any(feature = "serve", test))]
use catalog::Changes;

#[cfg(feature = "serve")]
pub use rmcp_server::{serve_http, serve_stdio};

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
    /// How often `serve_stdio`/`serve_http` scan the folder for changes to announce.
    pub(crate) watch_interval: std::time::Duration,
    catalog: Arc<Mutex<Catalog>>,
}

/// A JSON-RPC error: code and message.
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
            watch_interval: std::time::Duration::from_secs(1),
            catalog: Arc::default(),
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
        self.dynamic.insert(path.into());
        self
    }

    /// Also serves `resources/directory/read` and declares `directoryRead: true` (SEP-2640).
    #[must_use]
    pub fn directory_read(mut self, on: bool) -> SkillServer {
        self.directory_read = on;
        self
    }

    /// How often [`serve_stdio`](crate::serve_stdio) and [`serve_http`](crate::serve_http) scan
    /// the folder for changes to announce to connected peers (default: every second). Requests
    /// do not wait for it: each catalog query scans first.
    #[must_use]
    pub fn watch_interval(mut self, every: std::time::Duration) -> SkillServer {
        self.watch_interval = every;
        self
    }

    /// The extension's settings object under `capabilities.extensions`.
    fn extension_settings(&self) -> Value {
        if self.directory_read {
            json!({"directoryRead": true})
        } else {
            json!({})
        }
    }

    /// Runs `f` on the catalog after a metadata scan has brought it up to date.
    fn with_catalog<T>(&self, f: impl FnOnce(&Catalog) -> T) -> Result<T, RpcError> {
        let mut catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        catalog
            .refresh(&self.root)
            .map_err(|e| (INTERNAL_ERROR, e.to_string()))?;
        Ok(f(&catalog))
    }

    /// Scans the folder and hands out what changed since the last call (the watcher's view).
    #[cfg(any(feature = "serve", test))]
    pub(crate) fn changes(&self) -> Result<Changes, Error> {
        let mut catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        catalog.refresh(&self.root)?;
        Ok(catalog.take_changes())
    }

    fn entry_json(&self, rel: &str, skill: &crate::local::LocalSkill) -> Value {
        let mut v = skill.entry.to_json();
        if self.dynamic.contains(rel) {
            v["resources"] = json!("dynamic");
        }
        v
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
        /// skill or resource URI).
        fn call(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
            let uri_param = || {
                params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or((INVALID_PARAMS, "params.uri is required".to_owned()))
            };
            match method {
                "initialize" => Ok(json!({
                    "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or("2025-11-25"),
                    // No subscriptions or list changes here: only the rmcp server sends notifications.
                    "capabilities": {"resources": {},
                                     "extensions": {SKILLS_EXTENSION: self.extension_settings()}},
                    "serverInfo": {"name": "skillcache-serve", "version": env!("CARGO_PKG_VERSION")},
                })),
                "ping" => Ok(json!({})),
                "skills/list" => {
                    let skills = self.with_catalog(|c| {
                        c.skills()
                            .map(|(rel, s)| self.entry_json(rel, s))
                            .collect::<Vec<_>>()
                    })?;
                    Ok(self.hints(json!({"skills": skills})))
                }
                "skills/get" => {
                    let uri =
                        FileUri::parse(uri_param()?).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
                    // No cursor: a single entry is not a list (SEP-2640).
                    self.with_catalog(|c| {
                        c.skills()
                            .find(|(_, s)| s.entry.uri().file() == &uri)
                            .map(|(rel, s)| self.hints(json!({"skill": self.entry_json(rel, s)})))
                    })?
                    .ok_or((INVALID_PARAMS, format!("no skill is served at {uri}")))
                }
                "resources/list" => {
                    let resources = self.with_catalog(|c| {
                        c.skills()
                            .map(|(_, s)| wire::skill_md_resource(s))
                            .collect::<Vec<_>>()
                    })?;
                    Ok(self.hints(json!({"resources": resources})))
                }
                "resources/directory/read" if self.directory_read => {
                    let dir = uri_param()?.trim_end_matches('/');
                    self.with_catalog(|c| {
                        c.skills()
                            .find_map(|(_, s)| wire::directory_children(s, dir))
                            .map(|children| self.hints(json!({"resources": children})))
                    })?
                    .ok_or((
                        INVALID_PARAMS,
                        format!("{dir} is not a directory served here"),
                    ))
                }
                "resources/read" => {
                    let uri =
                        FileUri::parse(uri_param()?).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
                    let find = |c: &Catalog| {
                        c.skills()
                            .flat_map(|(_, s)| s.files.iter())
                            .find(|f| f.uri == uri)
                            .map(|f| f.path.clone())
                    };
                    let path = self
                        .with_catalog(find)?
                        .ok_or((INVALID_PARAMS, format!("no resource is served at {uri}")))?;
                    let bytes = std::fs::read(&path).map_err(|e| {
                        (
                            INTERNAL_ERROR,
                            format!("cannot read {}: {e}", path.display()),
                        )
                    })?;
                    let item = wire::content(uri.as_str(), &path, bytes);
                    Ok(self.hints(json!({"contents": [item]})))
                }
                other => Err((METHOD_NOT_FOUND, format!("method not found: {other}"))),
            }
        }
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

impl SkillSource for SkillServer {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move {
            self.call("skills/list", &json!({}))
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
        method: method.to_owned(),
        code,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with one skill `esc` holding `files` besides its SKILL.md.
    fn folder(files: &[(&str, &[u8])]) -> crate::scratch::Scratch {
        let dir = crate::scratch::scratch();
        let skill = dir.path().join("esc");
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: esc\ndescription: Escapes.\n---\n",
        )
        .expect("write");
        for (name, bytes) in files {
            let path = skill.join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("write");
        }
        dir
    }

    #[test]
    fn b2_serve_sends_text_heavy_in_escapes_as_a_blob() {
        let dir = folder(&[
            ("plain.txt", b"plain words\n"),
            ("controls.txt", "\u{1}\u{2}\u{3}".repeat(100).as_bytes()),
        ]);
        let server = SkillServer::new(dir.path());
        let read = |name: &str| {
            server
                .call(
                    "resources/read",
                    &json!({"uri": format!("skill://esc/{name}")}),
                )
                .expect("read")["contents"][0]
                .clone()
        };
        assert_eq!(read("plain.txt")["text"], "plain words\n");
        let controls = read("controls.txt");
        assert!(controls.get("text").is_none(), "{controls}");
        assert!(controls["blob"].as_str().is_some_and(|b| b.len() == 400));
        assert_eq!(wire::json_len("a\"\u{1}"), 2 + 1 + 2 + 6);
        assert_eq!(wire::base64_len(4), 8 + 2);
    }

    #[test]
    fn serve_lists_each_skill_md_as_markdown_named_by_its_frontmatter() {
        let dir = folder(&[]);
        let listed = SkillServer::new(dir.path())
            .call("resources/list", &json!({}))
            .expect("resources/list");
        assert_eq!(
            listed["resources"],
            json!([{"uri": "skill://esc/SKILL.md", "name": "esc", "description": "Escapes.",
                    "mimeType": "text/markdown", "size": 40}])
        );
        assert!(listed.get("nextCursor").is_none());
    }

    #[test]
    fn serve_unknown_skill_is_invalid_params_and_get_carries_hints_but_no_cursor() {
        let dir = folder(&[]);
        let server = SkillServer::new(dir.path()).ttl_ms(5_000);
        let err = server
            .call("skills/get", &json!({"uri": "skill://nope/SKILL.md"}))
            .expect_err("unknown skill");
        assert_eq!(err.0, INVALID_PARAMS, "{err:?}");
        let got = server
            .call("skills/get", &json!({"uri": "skill://esc/SKILL.md"}))
            .expect("known skill");
        assert_eq!(
            (got["ttlMs"].clone(), got["cacheScope"].clone()),
            (json!(5_000), json!("public"))
        );
        assert!(got.get("nextCursor").is_none(), "{got}");
    }

    #[test]
    fn serve_directory_read_lists_direct_children_and_refuses_a_file() {
        let dir = folder(&[("references/a.md", b"a"), ("references/deep/b.md", b"b")]);
        let server = SkillServer::new(dir.path());
        let off = server
            .call("resources/directory/read", &json!({"uri": "skill://esc"}))
            .expect_err("off unless enabled");
        assert_eq!(off.0, METHOD_NOT_FOUND);
        let server = server.directory_read(true);
        let top = server
            .call("resources/directory/read", &json!({"uri": "skill://esc"}))
            .expect("the skill root is a directory");
        let names: Vec<(&str, &str)> = top["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().expect("name"),
                    r["mimeType"].as_str().expect("mime"),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("SKILL.md", "text/markdown"),
                ("references", "inode/directory")
            ]
        );
        let sub = server
            .call(
                "resources/directory/read",
                &json!({"uri": "skill://esc/references"}),
            )
            .expect("a subfolder is a directory");
        assert_eq!(sub["resources"].as_array().map(Vec::len), Some(2));
        let file = server
            .call(
                "resources/directory/read",
                &json!({"uri": "skill://esc/SKILL.md"}),
            )
            .expect_err("a file is not a directory");
        assert_eq!(file.0, INVALID_PARAMS);
    }

    #[test]
    fn serve_an_edited_file_is_served_as_it_now_is() {
        let dir = folder(&[("notes.md", b"v1")]);
        let server = SkillServer::new(dir.path());
        let digest = |s: &SkillServer| {
            s.call("skills/get", &json!({"uri": "skill://esc/SKILL.md"}))
                .expect("get")["skill"]["resources"]
                .clone()
        };
        let before = digest(&server);
        std::fs::write(dir.path().join("esc/notes.md"), b"version two").expect("edit");
        assert_ne!(digest(&server), before, "the catalog follows the folder");
        let changes = server.changes().expect("changes");
        assert!(changes.uris.contains("skill://esc/notes.md"), "{changes:?}");
    }
}
