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

use crate::entry::{Limits, Scope, Validation};
use crate::error::Error;
use crate::local::{LocalSkill, find_skills, inspect};
use crate::source::{SKILLS_EXTENSION, SkillSource, SourceFuture, message_bound};
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
                    // Text only while its JSON form is no longer than base64 would be: text
                    // heavy in escapes (`\u00XX` is six bytes) goes as a blob, so every file
                    // inside the limits fits the message bound (R-B2).
                    Ok(text) if json_len(&text) <= base64_len(text.len()) => {
                        json!({"uri": uri.as_str(), "mimeType": mime(&path), "text": text})
                    }
                    Ok(text) => json!({"uri": uri.as_str(), "mimeType": mime(&path),
                                       "blob": base64::engine::general_purpose::STANDARD.encode(text.as_bytes())}),
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
    /// it does not publish on stderr once at start. Reads each request within the message bound
    /// of the baseline limits ([`message_bound`]), discarding a longer line as it arrives.
    ///
    /// # Errors
    /// A root that is not a folder; I/O errors on stdin/stdout.
    pub fn serve_stdio(&self) -> io::Result<()> {
        if !self.root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a folder", self.root.display()),
            ));
        }
        for (rel, errors) in self.catalog().1 {
            for e in errors {
                eprintln!("skillcache serve: not publishing {rel}: {e}");
            }
        }
        let max = usize::try_from(message_bound(&Limits::BASELINE)).unwrap_or(usize::MAX);
        let mut stdin = io::stdin().lock();
        let mut stdout = io::stdout().lock();
        let mut line = Vec::new();
        loop {
            let reply = match read_bounded_line(&mut stdin, &mut line, max)? {
                Line::Eof => break,
                Line::TooLong => Some(
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("message larger than {max} bytes")}}),
                ),
                Line::Ok if line.trim_ascii().is_empty() => continue,
                Line::Ok => match serde_json::from_slice::<Value>(&line) {
                    Ok(msg) => self.handle(&msg),
                    Err(e) => Some(
                        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {e}")}}),
                    ),
                },
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

/// What one bounded line read found.
enum Line {
    /// A line is in the buffer (without its newline).
    Ok,
    /// A line longer than the bound was discarded up to its newline.
    TooLong,
    /// The input ended.
    Eof,
}

/// Reads one line into `line`, never holding more than `max` bytes of it: a longer line is
/// consumed and dropped as it arrives (R-B2).
fn read_bounded_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(if too_long || !line.is_empty() {
                // A last line without its newline still counts.
                if too_long { Line::TooLong } else { Line::Ok }
            } else {
                Line::Eof
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let content = newline.unwrap_or(available.len());
        if !too_long && line.len() + content <= max {
            line.extend_from_slice(&available[..content]);
        } else {
            too_long = true;
            line.clear();
        }
        let take = newline.map_or(available.len(), |i| i + 1);
        input.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Ok });
        }
    }
}

/// The length of `text` as a JSON string.
fn json_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
        + 2
}

/// The length of `n` bytes in base64 as a JSON string.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4 + 2
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b2_serve_discards_a_line_over_the_bound_and_reads_the_next() {
        let input = format!("{}\n{{\"ok\":1}}\nlast", "x".repeat(100));
        let mut reader = io::BufReader::with_capacity(16, input.as_bytes());
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            match read_bounded_line(&mut reader, &mut line, 20).expect("read") {
                Line::Eof => break,
                Line::TooLong => {
                    assert!(line.is_empty(), "nothing of a long line is kept");
                    seen.push("too long".to_owned());
                }
                Line::Ok => seen.push(String::from_utf8(line.clone()).expect("utf-8")),
            }
        }
        assert_eq!(seen, ["too long", "{\"ok\":1}", "last"]);
    }

    #[test]
    fn b2_serve_sends_text_heavy_in_escapes_as_a_blob() {
        let dir = tempfile::tempdir().expect("tempdir");
        let skill = dir.path().join("esc");
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: esc\ndescription: Escapes.\n---\n",
        )
        .expect("write");
        std::fs::write(skill.join("plain.txt"), "plain words\n").expect("write");
        std::fs::write(skill.join("controls.txt"), "\u{1}\u{2}\u{3}".repeat(100)).expect("write");
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
        assert_eq!(json_len("a\"\u{1}"), 2 + 1 + 2 + 6);
        assert_eq!(base64_len(4), 8 + 2);
    }
}
