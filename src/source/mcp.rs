//! [`McpSource`]: a [`SkillSource`] over `rmcp`, the official Rust MCP SDK — a stdio child
//! process or a Streamable HTTP server.
//!
//! `skills/list`, `skills/get` and `resources/read` are sent as custom requests only after the
//! server declared both `io.modelcontextprotocol/skills` and `resources` (the spec's order).
//! rmcp decodes each response into its own typed model first; skillcache re-serialises it and
//! validates that JSON by its own, stricter rules. rmcp's only relaxations on the way are benign
//! (a negative `ttlMs` becomes 0, an empty `cacheScope` absent), and a response its typed model
//! refuses reaches us as raw JSON or as an empty object — which our parsers then refuse: it fails
//! closed either way.

use rmcp::ServiceExt as _;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, CustomRequest, ExtensionCapabilities,
    Implementation, ServerResult,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

use super::{SKILLS_EXTENSION, SkillSource, SourceFuture};
use crate::error::{Error, Rule};

/// A connected MCP server.
pub struct McpSource {
    service: RunningService<RoleClient, ClientConfig>,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource").finish_non_exhaustive()
    }
}

fn client_info() -> ClientConfig {
    // Declare the extension on our side too, so servers that gate on it know we speak it.
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(SKILLS_EXTENSION.to_owned(), serde_json::Map::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    let mut info = ClientConfig::default();
    info.capabilities = capabilities;
    info.client_info = Implementation::new("skillcache", env!("CARGO_PKG_VERSION"));
    info
}

fn transport_err(
    method: &str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Error + '_ {
    move |source| Error::Transport {
        method: method.to_owned(),
        source,
    }
}

impl McpSource {
    /// Spawns `command_line` (split like a shell would: spaces, quotes, backslashes; no
    /// expansion) and speaks MCP to it over stdio.
    ///
    /// # Errors
    /// [`Error::Transport`] if it cannot be started or initialised; [`Error::InvalidResponse`] if
    /// it does not declare the skills extension and resources.
    pub async fn stdio(command_line: &str) -> Result<McpSource, Error> {
        let words =
            split_command_line(command_line).map_err(|e| transport_err("connect")(e.into()))?;
        let (program, args) = words
            .split_first()
            .ok_or_else(|| transport_err("connect")("the command line is empty".into()))?;
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        let transport =
            TokioChildProcess::new(command).map_err(|e| transport_err("connect")(Box::new(e)))?;
        let service = client_info()
            .serve(transport)
            .await
            .map_err(|e| transport_err("initialize")(Box::new(e)))?;
        Self::checked(service)
    }

    /// Connects to a Streamable HTTP MCP endpoint.
    ///
    /// # Errors
    /// As [`McpSource::stdio`].
    pub async fn http(url: &str) -> Result<McpSource, Error> {
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        let service = client_info()
            .serve(transport)
            .await
            .map_err(|e| transport_err("initialize")(Box::new(e)))?;
        Self::checked(service)
    }

    fn checked(service: RunningService<RoleClient, ClientConfig>) -> Result<McpSource, Error> {
        let info = service.peer().peer_info();
        let caps = info.as_ref().map(|i| &i.capabilities);
        let fail = |missing| {
            Err(Error::InvalidResponse {
                method: "initialize",
                rule: Rule::Capability { missing },
            })
        };
        if !caps.is_some_and(rmcp::model::ServerCapabilities::supports_skills) {
            return fail("the io.modelcontextprotocol/skills extension");
        }
        if caps.is_none_or(|c| c.resources.is_none()) {
            return fail("the resources capability");
        }
        Ok(McpSource { service })
    }

    async fn call(&self, method: &'static str, params: Value) -> Result<Value, Error> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        match self.service.peer().send_request(request).await {
            Ok(result) => Ok(result_json(result)),
            Err(ServiceError::McpError(e)) => Err(Error::Server {
                method: method.to_owned(),
                code: i64::from(e.code.0),
                message: e.message.into_owned(),
            }),
            Err(e) => Err(transport_err(method)(Box::new(e))),
        }
    }
}

fn result_json(result: ServerResult) -> Value {
    match result {
        ServerResult::CustomResult(raw) => raw.0,
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

impl SkillSource for McpSource {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move {
            let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
            self.call("skills/list", params).await
        })
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(self.call("skills/get", json!({"uri": uri})))
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(self.call("resources/read", json!({"uri": uri})))
    }
}

/// Splits a command line into words like a POSIX shell would, without any expansion.
///
/// ```
/// # use skillcache::source::split_command_line;
/// assert_eq!(split_command_line(r#"node "my server.js" --x='a b' c\ d"#).unwrap(),
///            ["node", "my server.js", "--x=a b", "c d"]);
/// ```
///
/// # Errors
/// An unterminated quote or a trailing backslash.
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next().ok_or("trailing backslash")?);
            }
            ch => {
                in_word = true;
                word.push(ch);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}
