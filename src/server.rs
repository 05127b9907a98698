//! A small MCP server with the skills extension over a folder of skill folders — what
//! `skillcache serve` runs. It serves `initialize`, `ping`, `skills/list`, `skills/get` and
//! `resources/read` as newline-delimited JSON-RPC over stdio, and is also a [`SkillSource`]
//! in-process.
//!
//! It re-reads the folder on every call, so an edited file is served as it now is (a host's held
//! entry then catches the change), and it publishes only folders that are valid skills
//! ([`crate::local::inspect`]), reporting the others on stderr.

use std::collections::HashSet;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::entry::{Scope, Validation};
use crate::error::Error;
use crate::local::{LocalSkill, find_skills, inspect};
use crate::source::{SKILLS_EXTENSION, SkillSource, SourceFuture};
use crate::uri::FileUri;

/// JSON-RPC "invalid params", also the spec's code for an unknown skill or resource.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

/// A skills server over a folder.
#[derive(Debug, Clone)]
pub struct SkillServer {
    root: PathBuf,
    ttl_ms: u64,
    scope: Scope,
    dynamic: HashSet<String>,
}

/// A JSON-RPC error: code and message.
pub type RpcError = (i64, String);

/// The folder's valid skills (path, skill) and its invalid ones (path, reasons).
pub type Catalog = (Vec<(String, LocalSkill)>, Vec<(String, Vec<Error>)>);

impl SkillServer {
    /// Serves every skill folder under `root` as `skill://<path>/SKILL.md`.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> SkillServer {
        SkillServer {
            root: root.into(),
            ttl_ms: 0,
            scope: Scope::Public,
            dynamic: HashSet::new(),
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

    /// The valid skills now in the folder, and the invalid ones with their reasons.
    #[must_use]
    pub fn catalog(&self) -> Catalog {
        let mut ok = Vec::new();
        let mut bad = Vec::new();
        for segments in find_skills(&self.root) {
            if segments.is_empty() {
                continue; // the served folder itself is not a skill
            }
            let rel = segments.join("/");
            match inspect(
                &self.root.join(&rel),
                &format!("skill://{rel}"),
                &Validation::default(),
            ) {
                Ok(skill) => ok.push((rel, skill)),
                Err(errors) => bad.push((rel, errors)),
            }
        }
        (ok, bad)
    }

    fn entry_json(&self, rel: &str, skill: &LocalSkill) -> Value {
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

    /// Answers one method call.
    ///
    /// # Errors
    /// A JSON-RPC error for unknown methods, skills and resources.
    pub fn call(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let uri_param = || {
            params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or((INVALID_PARAMS, "params.uri is required".to_owned()))
        };
        match method {
            "initialize" => Ok(json!({
                "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or("2025-11-25"),
                "capabilities": {"resources": {}, "extensions": {SKILLS_EXTENSION: {}}},
                "serverInfo": {"name": "skillcache-serve", "version": env!("CARGO_PKG_VERSION")},
            })),
            "ping" => Ok(json!({})),
            "skills/list" => {
                let skills: Vec<Value> = self
                    .catalog()
                    .0
                    .iter()
                    .map(|(rel, s)| self.entry_json(rel, s))
                    .collect();
                Ok(self.hints(json!({"skills": skills})))
            }
            "skills/get" => {
                let uri =
                    FileUri::parse(uri_param()?).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
                self.catalog()
                    .0
                    .iter()
                    .find(|(_, s)| s.entry.uri().file() == &uri)
                    .map(|(rel, s)| self.hints(json!({"skill": self.entry_json(rel, s)})))
                    .ok_or((INVALID_PARAMS, format!("No skill is served at {uri}")))
            }
            "resources/read" => {
                let uri =
                    FileUri::parse(uri_param()?).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
                let (skills, _) = self.catalog();
                let path = skills
                    .iter()
                    .flat_map(|(_, s)| s.files.iter())
                    .find(|f| f.uri == uri)
                    .map(|f| f.path.clone())
                    .ok_or((INVALID_PARAMS, format!("No resource is served at {uri}")))?;
                let bytes = std::fs::read(&path)
                    .map_err(|e| (-32603, format!("cannot read {}: {e}", path.display())))?;
                let item = match String::from_utf8(bytes) {
                    Ok(text) => json!({"uri": uri.as_str(), "mimeType": mime(&path), "text": text}),
                    Err(e) => json!({"uri": uri.as_str(), "mimeType": "application/octet-stream",
                                     "blob": base64::engine::general_purpose::STANDARD.encode(e.as_bytes())}),
                };
                Ok(self.hints(json!({"contents": [item]})))
            }
            other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        }
    }

    /// Answers one JSON-RPC message; `None` for notifications.
    #[must_use]
    pub fn handle(&self, message: &Value) -> Option<Value> {
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

    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes. Reports the folders
    /// it does not publish on stderr once at start.
    ///
    /// # Errors
    /// I/O errors on stdin/stdout.
    pub fn serve_stdio(&self) -> io::Result<()> {
        for (rel, errors) in self.catalog().1 {
            for e in errors {
                eprintln!("skillcache serve: not publishing {rel}: {e}");
            }
        }
        let stdin = io::stdin();
        let mut stdout = io::stdout().lock();
        for line in stdin.lock().lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let reply = match serde_json::from_str::<Value>(&line) {
                Ok(msg) => self.handle(&msg),
                Err(e) => Some(
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {e}")}}),
                ),
            };
            if let Some(reply) = reply {
                serde_json::to_writer(&mut stdout, &reply)?;
                stdout.write_all(b"\n")?;
                stdout.flush()?;
            }
        }
        Ok(())
    }
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("json") => "application/json",
        _ => "text/plain",
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
    Error::Server {
        method: method.to_owned(),
        code,
        message,
    }
}
