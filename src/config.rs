//! MCP host configuration files: the servers a user already described for their host.
//!
//! Three shapes are read:
//!
//! - `{"mcpServers": {NAME: SERVER}}` — Claude Desktop, Cursor and most hosts: strict JSON, as
//!   those hosts read it;
//! - `{"servers": {NAME: SERVER}}` — VS Code (`.vscode/mcp.json`), where SERVER may carry
//!   `"type": "stdio"` or `"type": "http"`: JSONC, as VS Code reads it (`//` and `/* */`
//!   comments, trailing commas; `jsonc`);
//! - Claude Code's `~/.claude.json`: `mcpServers` at the top (user scope) and per project,
//!   `{"projects": {PATH: {"mcpServers": {NAME: SERVER}}}}`; strict JSON.
//!
//! SERVER is `{"command", "args"?, "env"?, "cwd"?}` (a stdio child) or `{"url", "headers"?}`
//! (Streamable HTTP). NAME becomes the [`Origin`]: the host's label for the server, never the
//! server's own name (R-O1); a project's server is labelled `NAME@FOLDER#HASH`
//! (`project_origin`), so two projects' servers of one name stay two origins. Fields a host adds for itself (`disabled`, `inputs`, …) are ignored;
//! the fields read here are checked, and a bad one is refused with the file's path, the line and
//! column, and a JSON pointer to the field ([`ConfigError::File`](crate::error::ConfigError::File)),
//! never quoting the file (R-E4). Variables (`${input:…}`, `${env:…}`) are not expanded: the
//! value is used as written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{ConfigError, Error, FileProblem};
use crate::hostfile::{self, Format, Refused};
use crate::origin::Origin;

/// How to reach one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    /// A child process spoken to over stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working folder, if set.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

impl ServerConfig {
    /// A source for this server. Nothing is started or contacted until a request needs it (R-B4).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for a header HTTP does not allow (the file reader refuses those
    /// first, naming the field).
    #[cfg(feature = "mcp")]
    pub fn source(&self) -> Result<crate::source::McpSource, Error> {
        use crate::source::McpSource;
        match self {
            ServerConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut c = tokio::process::Command::new(command);
                // Piped: skillcache passes the server's stderr on to this process's as it
                // arrives, and names its last line when the server exits before answering.
                c.args(args).envs(env).stderr(std::process::Stdio::piped());
                if let Some(dir) = cwd {
                    c.current_dir(dir);
                }
                Ok(McpSource::stdio(c))
            }
            // Through `http_with_headers` with no headers too: it checks the URL.
            ServerConfig::Http { url, headers } => {
                let pairs: Vec<(String, String)> = headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                McpSource::http_with_headers(url, &pairs)
            }
        }
    }
}

/// An MCP host configuration file, read and checked: every server it names, by origin, in the
/// order of the file's keys (sorted).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("mcp.json");
/// # std::fs::write(&path, r#"{"mcpServers": {"docs": {"command": "skills-server", "args": ["--dir", "skills"]},
/// #   "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}}}}"#).unwrap();
/// use skillcache::{McpConfig, ServerConfig};
/// let config = McpConfig::read(&path)?;
/// assert_eq!(config.origins().map(|o| o.as_str()).collect::<Vec<_>>(), ["docs", "remote"]);
/// assert!(matches!(config.server("remote"), Some(ServerConfig::Http { .. })));
/// # Ok::<(), skillcache::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    path: PathBuf,
    servers: BTreeMap<Origin, ServerConfig>,
}

/// The fields of a file being read, with the path every error names, the text its fields are
/// found in (comments and trailing commas blanked, `jsonc`) and the file as written, which
/// positions count in (the offsets of the two are the same).
struct Reader<'p> {
    path: &'p Path,
    text: &'p str,
    source: &'p str,
}

/// `~` and `/` escaped as in RFC 6901, so a server named `a/b` is one pointer segment.
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl Reader<'_> {
    fn fail(&self, field: &str, problem: FileProblem) -> Error {
        Error::Config(ConfigError::File {
            path: self.path.to_owned(),
            field: field.to_owned(),
            position: Some(hostfile::position(self.source, locate(self.text, field))),
            problem,
        })
    }

    fn wrong(&self, field: &str, expected: &'static str) -> Error {
        self.fail(field, FileProblem::WrongType { expected })
    }

    fn invalid(&self, field: &str, why: impl Into<String>) -> Error {
        self.fail(field, FileProblem::Invalid { why: why.into() })
    }

    fn string(
        &self,
        server: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<Option<String>, Error> {
        match server.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.wrong(&format!("{at}/{key}"), "a string")),
        }
    }

    fn strings(
        &self,
        server: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<Vec<String>, Error> {
        let Some(value) = server.get(key) else {
            return Ok(Vec::new());
        };
        let list = value
            .as_array()
            .ok_or_else(|| self.wrong(&format!("{at}/{key}"), "an array of strings"))?;
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.wrong(&format!("{at}/{key}/{i}"), "a string"))
            })
            .collect()
    }

    fn table(
        &self,
        server: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<BTreeMap<String, String>, Error> {
        let Some(value) = server.get(key) else {
            return Ok(BTreeMap::new());
        };
        let map = value
            .as_object()
            .ok_or_else(|| self.wrong(&format!("{at}/{key}"), "an object of strings"))?;
        map.iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|s| (k.clone(), s.to_owned()))
                    .ok_or_else(|| self.wrong(&format!("{at}/{key}/{}", segment(k)), "a string"))
            })
            .collect()
    }

    /// A refusal of the text at byte `at`, in the fixed words `message`.
    fn syntax(&self, at: usize, message: &'static str) -> Error {
        syntax(self.path, self.source, at, message)
    }

    /// The text as JSON, every object's keys given once.
    fn json(&self) -> Result<Value, Error> {
        no_duplicates(self.text).map_err(|(at, e)| {
            // serde_json's position is a line and a byte column of the text it read, which has
            // the offsets of the file: the position is counted in the file as written.
            let position = Some(hostfile::position(
                self.source,
                json_error_offset(self.text, &e),
            ));
            match at {
                Parsed::Dense => Error::Config(ConfigError::File {
                    path: self.path.to_owned(),
                    field: String::new(),
                    position: None,
                    problem: too_dense_servers(),
                }),
                // A name or field given twice: serde_json would keep the last silently, so
                // the server a reviewer reads in the file need not be the one started. Its
                // position is where the parser stopped: the second time.
                Parsed::Twice(at) => Error::Config(ConfigError::File {
                    path: self.path.to_owned(),
                    field: at,
                    position,
                    problem: FileProblem::Invalid {
                        why: "is given twice; the host and a reader of the file could take different values".into(),
                    },
                }),
                Parsed::Syntax => Error::Config(ConfigError::File {
                    path: self.path.to_owned(),
                    field: String::new(),
                    position,
                    problem: FileProblem::Syntax {
                        message: json_syntax(&e),
                    },
                }),
            }
        })
    }

    /// One block of servers by name at `at` (`/mcpServers`, `/servers`, or a Claude Code
    /// project's `/projects/PATH/mcpServers`, whose origins are labelled with `project`), added
    /// to `servers`; a label configured twice is refused.
    fn block(
        &self,
        at: &str,
        block: &Value,
        project: Option<&str>,
        servers: &mut BTreeMap<Origin, ServerConfig>,
    ) -> Result<(), Error> {
        let block = block
            .as_object()
            .ok_or_else(|| self.wrong(at, "an object of servers by name"))?;
        for (name, server) in block {
            let at = format!("{at}/{}", segment(name));
            // The problem alone, not `Origin::new`'s message: that one quotes the label, and a
            // host file's refusal quotes nothing of the file (R-E4).
            let origin = match project {
                None => Origin::new(name.clone())
                    .map_err(|_| crate::origin::label_problem(name).unwrap_or_default()),
                Some(project) => project_origin(project, name),
            }
            .map_err(|why| self.invalid(&at, format!("the name is not a usable origin: {why}")))?;
            let config = self.server(&at, server)?;
            if servers.insert(origin, config).is_some() {
                return Err(self.invalid(
                    &at,
                    if project.is_none() {
                        "this name is configured in both \"mcpServers\" and \"servers\""
                    } else {
                        "this project server's origin is configured elsewhere in the file too"
                    },
                ));
            }
        }
        Ok(())
    }

    /// Claude Code's `~/.claude.json` keeps servers per project too, in
    /// `projects.PATH.mcpServers`; each is labelled by [`project_origin`]. Whether any project
    /// has servers.
    fn projects(
        &self,
        top: &Map<String, Value>,
        servers: &mut BTreeMap<Origin, ServerConfig>,
    ) -> Result<bool, Error> {
        let Some(projects) = top.get("projects") else {
            return Ok(false);
        };
        let projects = projects
            .as_object()
            .ok_or_else(|| self.wrong("/projects", "an object of projects by folder"))?;
        let mut found = false;
        for (project, settings) in projects {
            let at = format!("/projects/{}", segment(project));
            let settings = settings
                .as_object()
                .ok_or_else(|| self.wrong(&at, "an object"))?;
            if let Some(block) = settings.get("mcpServers") {
                found = true;
                self.block(&format!("{at}/mcpServers"), block, Some(project), servers)?;
            }
        }
        Ok(found)
    }

    fn server(&self, at: &str, value: &Value) -> Result<ServerConfig, Error> {
        let server = value
            .as_object()
            .ok_or_else(|| self.wrong(at, "an object"))?;
        let command = self.string(server, at, "command")?;
        let url = self.string(server, at, "url")?;
        let kind = self.string(server, at, "type")?;
        let stdio = match (kind.as_deref(), &command, &url) {
            (Some("stdio"), _, _) | (None, Some(_), None) => true,
            (Some("http"), _, _) | (None, None, Some(_)) => false,
            (None, Some(_), Some(_)) => {
                return Err(self.invalid(at, "has both \"command\" and \"url\"; keep one"));
            }
            (None, None, None) => {
                return Err(self.invalid(
                    at,
                    "has neither \"command\" (a stdio server) nor \"url\" (an HTTP server)",
                ));
            }
            (Some("sse"), _, _) => {
                return Err(self.invalid(
                    &format!("{at}/type"),
                    "is the older HTTP+SSE transport, which skillcache does not speak; use \"http\" (Streamable HTTP) if the server offers it",
                ));
            }
            (Some(_), _, _) => {
                // The value is not quoted: an error shows no text of the file (R-E4).
                return Err(self.invalid(
                    &format!("{at}/type"),
                    "is not a supported type; use \"stdio\" or \"http\" (Streamable HTTP)",
                ));
            }
        };
        if stdio {
            self.stdio(at, server, command)
        } else {
            self.http(at, server, url)
        }
    }

    /// A stdio server: its command, args, env and cwd.
    fn stdio(
        &self,
        at: &str,
        server: &Map<String, Value>,
        command: Option<String>,
    ) -> Result<ServerConfig, Error> {
        let command = command
            .filter(|c| !c.is_empty())
            .ok_or_else(|| self.fail(&format!("{at}/command"), FileProblem::Missing))?;
        let args = self.strings(server, at, "args")?;
        let env = self.table(server, at, "env")?;
        let cwd = self.string(server, at, "cwd")?;
        // What a process cannot be given as written is refused here, naming the field, not at
        // spawn: a NUL anywhere, and a variable name with `=` (the child would see another
        // variable than the one the file shows).
        let nul = |field: String, text: &str| {
            if text.contains('\0') {
                Err(self.invalid(&field, "contains a NUL character"))
            } else {
                Ok(())
            }
        };
        nul(format!("{at}/command"), &command)?;
        for (i, a) in args.iter().enumerate() {
            nul(format!("{at}/args/{i}"), a)?;
        }
        for (k, v) in &env {
            let field = format!("{at}/env/{}", segment(k));
            if k.is_empty() || k.contains('=') {
                return Err(self.invalid(
                    &field,
                    "is not a usable variable name (empty, or contains '=')",
                ));
            }
            nul(field.clone(), k)?;
            nul(field, v)?;
        }
        if let Some(dir) = &cwd {
            nul(format!("{at}/cwd"), dir)?;
        }
        Ok(ServerConfig::Stdio {
            command,
            args,
            env,
            cwd: cwd.map(PathBuf::from),
        })
    }

    /// A Streamable HTTP server: its URL and headers.
    fn http(
        &self,
        at: &str,
        server: &Map<String, Value>,
        url: Option<String>,
    ) -> Result<ServerConfig, Error> {
        let url = url
            .filter(|u| !u.is_empty())
            .ok_or_else(|| self.fail(&format!("{at}/url"), FileProblem::Missing))?;
        if let Some(why) = crate::source::http_url_problem(&url) {
            return Err(self.invalid(&format!("{at}/url"), why));
        }
        let headers = self.table(server, at, "headers")?;
        #[cfg(feature = "mcp")]
        for (name, value) in &headers {
            let field = format!("{at}/headers/{}", segment(name));
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(self.invalid(&field, "is not a valid HTTP header name"));
            }
            if http::HeaderValue::from_str(value).is_err() {
                return Err(self.invalid(&field, "is not a valid HTTP header value"));
            }
        }
        Ok(ServerConfig::Http { url, headers })
    }
}

/// The fixed words for a comment or trailing comma in a file whose host reads strict JSON.
const JSONC_IN_STRICT: &str = "a comment or a trailing comma; only VS Code's \"servers\" files may have them (JSONC), a file with \"mcpServers\" or \"projects\" is strict JSON as its hosts read it";

/// A refusal of the text of the file at `path` at byte `at`, in the fixed words `message`.
fn syntax(path: &Path, source: &str, at: usize, message: &'static str) -> Error {
    Error::Config(ConfigError::File {
        path: path.to_owned(),
        field: String::new(),
        position: Some(hostfile::position(source, at)),
        problem: FileProblem::Syntax { message },
    })
}

/// `text` with its comments and trailing commas blanked (`jsonc`), bounded as the file was: the
/// reader's pre-scan counted structure inside what it took for strings, and a comment can hold a
/// quote, so the text that will be parsed is counted again (R-E4: bounded before parsing).
fn jsonc(path: &Path, text: &str) -> Result<crate::jsonc::Blanked, Error> {
    let blanked = crate::jsonc::blank(text)
        .map_err(|crate::jsonc::Unclosed(at)| syntax(path, text, at, crate::jsonc::UNCLOSED))?;
    let max = hostfile::Format::Json.max_weight();
    if blanked.first.is_some()
        && crate::json_weight::JsonWeight::default().feed(blanked.text.as_bytes(), max)
    {
        return Err(Error::Config(ConfigError::File {
            path: path.to_owned(),
            field: String::new(),
            position: None,
            problem: hostfile::too_dense(hostfile::Format::Json),
        }));
    }
    Ok(blanked)
}

/// The refusal of a file whose server blocks (and the keys on the way to them) hold more
/// structure than one message may: what the reader builds stays within tens of MB.
fn too_dense_servers() -> FileProblem {
    FileProblem::Invalid {
        why: format!(
            "holds more server settings than a host file needs (over {} units of JSON \
             structure in its server blocks); refused",
            crate::json_weight::MAX_JSON_WEIGHT
        ),
    }
}

/// The origin of the server `name` of the Claude Code project at folder `project`:
/// `NAME@FOLDER#HASH` — the server's name, the project folder's last component, and the first
/// 160 bits of the SHA-256 of the project's path as the file spells it, in 32 characters of
/// lower-case base32 (RFC 4648's alphabet, `a-z2-7`). Two projects' servers of one name are two
/// origins (the hash tells apart two folders of one name), and the label is the same on every
/// read of the file. 160 bits because an approval follows the label: two paths with one label
/// would pass one project's approvals to the other's server, and a search for such a pair costs
/// about 2^80 hashes (at 32 bits, as labels were first made, it took seconds). The folder part is in Unicode NFC (macOS writes
/// paths decomposed) and cut to keep the label within [`crate::origin::MAX_LABEL_BYTES`]; a
/// folder a label could not show (an invisible character) is shown with each character
/// outside `A-Z a-z 0-9 . _ -` as `_`. `Err`: why no label can be made (the name's own problem).
fn project_origin(project: &str, name: &str) -> Result<Origin, String> {
    use unicode_normalization::UnicodeNormalization as _;
    // The name is a label in its own right, as at the top of the file.
    if let Some(why) = crate::origin::label_problem(name) {
        return Err(why);
    }
    let digest = crate::digest::Digest::of(project.as_bytes());
    let hash = base32(&digest.as_bytes()[..20]);
    let folder: String = project
        .rsplit(['/', '\\'])
        .find(|c| !c.is_empty())
        .unwrap_or_default()
        .nfc()
        .collect();
    let room = crate::origin::MAX_LABEL_BYTES.saturating_sub(name.len() + 2 + hash.len());
    let label = |folder: &str| {
        let mut cut = room.min(folder.len());
        while !folder.is_char_boundary(cut) {
            cut -= 1;
        }
        Origin::new(format!("{name}@{}#{hash}", &folder[..cut]))
    };
    let plain: String = folder
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    label(&folder)
        .or_else(|_| label(&plain))
        .map_err(|_| crate::origin::label_problem(&format!("{name}@#{hash}")).unwrap_or_default())
}

/// `bytes` (a multiple of 5 long) in lower-case base32 without padding: 8 characters for each
/// 5 bytes, each character 5 bits, most significant first.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len() * 8 / 5);
    for group in bytes.chunks(5) {
        let mut bits =
            group.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)) << (8 * (5 - group.len()));
        for _ in 0..8 {
            out.push(char::from(
                ALPHABET[usize::try_from(bits >> 35 & 31).unwrap_or(0)],
            ));
            bits <<= 5;
        }
    }
    out
}

/// `text` as JSON, refusing an object that gives a key twice: `Err` with the key's JSON pointer,
/// or `None` for any other syntax error.
///
/// Only the parts a reader uses are built (see [`Keep`]); the rest is parsed and skipped, so it
/// costs no memory. What is built weighs at most [`MAX_JSON_WEIGHT`](crate::json_weight::MAX_JSON_WEIGHT)
/// in [`JsonWeight`](crate::json_weight::JsonWeight)'s units, counted as it is built: `Err` with
/// [`Parsed::Dense`] past it.
fn no_duplicates(text: &str) -> Result<Value, (Parsed, serde_json::Error)> {
    use serde::de::DeserializeSeed as _;
    let why = std::cell::RefCell::new(Parsed::Syntax);
    let budget = std::cell::Cell::new(crate::json_weight::MAX_JSON_WEIGHT);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Unique {
        at: None,
        keep: Keep::Top,
        why: &why,
        budget: &budget,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    value.map_err(|e| (why.take(), e))
}

/// Why [`no_duplicates`] refused a text.
#[derive(Default)]
enum Parsed {
    /// Not JSON (`serde_json`'s error says where).
    #[default]
    Syntax,
    /// A key given twice, at this JSON pointer.
    Twice(String),
    /// The parts the reader uses hold more structure than a message may.
    Dense,
}

/// Which part of a configuration file a value is, and so whether it is built. A host file can
/// be mostly what no reader of servers needs: Claude Code keeps each project's history in
/// `~/.claude.json`, megabytes of small objects. Those are skipped unbuilt; what is kept is the
/// server blocks, whole, and the keys on the way to them (to tell the file's shape and refuse a
/// key given twice there).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The file's top object: `mcpServers`, `servers` and `projects` are kept.
    Top,
    /// `projects`: each member is a project.
    Projects,
    /// One project's settings: `mcpServers` is kept.
    Project,
    /// A server block: everything in it.
    All,
}

impl Keep {
    /// What the member `key` of an object at this level is; `None`: skipped unbuilt.
    fn member(self, key: &str) -> Option<Keep> {
        match (self, key) {
            (Keep::Top, "mcpServers" | "servers")
            | (Keep::Project, "mcpServers")
            | (Keep::All, _) => Some(Keep::All),
            (Keep::Top, "projects") => Some(Keep::Projects),
            (Keep::Projects, _) => Some(Keep::Project),
            (Keep::Top | Keep::Project, _) => None,
        }
    }
}

/// One step of the path to a value: a key or an index, and the steps before it. The pointer is
/// spelled out only for a key given twice, so parsing costs no string per value, whatever the
/// length of the keys above it.
struct Step<'a> {
    before: Option<&'a Step<'a>>,
    key: Result<&'a str, usize>,
}

impl Step<'_> {
    fn pointer(&self) -> String {
        let mut steps = vec![self];
        while let Some(before) = steps.last().and_then(|s| s.before) {
            steps.push(before);
        }
        steps.iter().rev().fold(String::new(), |mut out, s| {
            out.push('/');
            match s.key {
                Ok(key) => out.push_str(&segment(key)),
                Err(i) => out.push_str(&i.to_string()),
            }
            out
        })
    }
}

/// A JSON value whose objects give every key once (the pointer of the first repeat is kept),
/// built only where [`Keep`] says, and charged to `budget` as it is built.
struct Unique<'a> {
    at: Option<&'a Step<'a>>,
    keep: Keep,
    why: &'a std::cell::RefCell<Parsed>,
    budget: &'a std::cell::Cell<u64>,
}

impl Unique<'_> {
    /// Charges `units` of what is built; an error once the budget is spent.
    fn charge<E: serde::de::Error>(&self, units: u64) -> Result<(), E> {
        if let Some(left) = self.budget.get().checked_sub(units) {
            self.budget.set(left);
            Ok(())
        } else {
            *self.why.borrow_mut() = Parsed::Dense;
            Err(E::custom("too dense"))
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Unique<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Unique<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.charge(2)?;
        let mut out = Vec::new();
        if self.keep != Keep::All {
            // An array where an object of projects or settings belongs: its type is refused
            // by the reader; what is in it is never needed.
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(Value::Array(out));
        }
        loop {
            let step = Step {
                before: self.at,
                key: Err(out.len()),
            };
            let Some(v) = seq.next_element_seed(Unique {
                at: Some(&step),
                ..self
            })?
            else {
                break;
            };
            self.charge(1)?;
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.charge(8)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.charge(2)?;
            let step = Step {
                before: self.at,
                key: Ok(&key),
            };
            if out.contains_key(&key) {
                *self.why.borrow_mut() = Parsed::Twice(step.pointer());
                return Err(serde::de::Error::custom("a key is given twice"));
            }
            // A skipped member stays as `null`, so a key given twice is found at every level
            // that is kept, and the reader sees the file's shape.
            let value = if let Some(keep) = self.keep.member(&key) {
                map.next_value_seed(Unique {
                    at: Some(&step),
                    keep,
                    ..self
                })?
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
                Value::Null
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// What `serde_json` can say about a text that is not JSON, in its own fixed words: its message
/// is shown only if it is one of these, so no text of the file can reach an error (R-E4).
const JSON_SYNTAX: &[&str] = &[
    "EOF while parsing a list",
    "EOF while parsing an object",
    "EOF while parsing a string",
    "EOF while parsing a value",
    "expected `:`",
    "expected `,` or `]`",
    "expected `,` or `}`",
    "expected ident",
    "expected value",
    "expected `\"`",
    "invalid escape",
    "invalid number",
    "number out of range",
    "invalid unicode code point",
    "control character (\\u0000-\\u001F) found while parsing a string",
    "key must be a string",
    "lone leading surrogate in hex escape",
    "trailing comma",
    "trailing characters",
    "unexpected end of hex escape",
    "recursion limit exceeded",
];

impl McpConfig {
    internal_pub! {
        /// [`JSON_SYNTAX`]: every syntax message a config file's refusal can show, for the fuzz
        /// oracle that checks a refusal quotes nothing of the file (R-E4).
        #[must_use]
        fn syntax_messages() -> &'static [&'static str] {
            JSON_SYNTAX
        }
    }
}

/// The fixed words for `serde_json`'s syntax error `e` (see [`JSON_SYNTAX`]).
fn json_syntax(e: &serde_json::Error) -> &'static str {
    let text = e.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    JSON_SYNTAX
        .iter()
        .find(|known| **known == message)
        .copied()
        .unwrap_or("is not valid JSON here")
}

/// The byte offset of `serde_json`'s error position (line, byte column) in `text`.
fn json_error_offset(text: &str, e: &serde_json::Error) -> usize {
    let line_start = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    line_start + e.column().saturating_sub(1)
}

/// The byte offset in `text`, a JSON text that parsed, of the value at `pointer` — or, where the
/// pointer leaves the document (a key that is missing), of the last value on its way. Only a
/// refusal calls it: errors name a line and a column (R-E4), and `serde_json::Value` keeps none.
fn locate(text: &str, pointer: &str) -> usize {
    let json = Scan { text };
    let mut at = json.blank(0);
    for raw in pointer.split('/').skip(1) {
        match json.child(at, &raw.replace("~1", "/").replace("~0", "~")) {
            Some(next) => at = next,
            None => break,
        }
    }
    at
}

/// A walk over a JSON text that parsed, by byte offsets (`locate`).
struct Scan<'a> {
    text: &'a str,
}

impl Scan<'_> {
    fn at(&self, i: usize) -> Option<u8> {
        self.text.as_bytes().get(i).copied()
    }

    /// The first offset from `i` that is not white space.
    fn blank(&self, mut i: usize) -> usize {
        while self.at(i).is_some_and(|c| b" \t\r\n".contains(&c)) {
            i += 1;
        }
        i
    }

    /// The end of the string starting at `i`.
    fn string_end(&self, i: usize) -> Option<usize> {
        let mut j = i + 1;
        loop {
            match self.at(j)? {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
    }

    /// The end of the value starting at `i`.
    fn value_end(&self, i: usize) -> Option<usize> {
        match self.at(i)? {
            b'"' => self.string_end(i),
            b'{' | b'[' => {
                let (mut depth, mut j) = (0usize, i);
                loop {
                    match self.at(j)? {
                        b'"' => {
                            j = self.string_end(j)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(j + 1);
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {
                let b = self.text.as_bytes();
                Some(
                    (i..b.len())
                        .find(|&j| b",}] \t\r\n".contains(&b[j]))
                        .unwrap_or(b.len()),
                )
            }
        }
    }

    /// The value at `key` of the object or array at `at`.
    fn child(&self, at: usize, key: &str) -> Option<usize> {
        match self.at(at)? {
            b'{' => self.member(at, key),
            b'[' => {
                let index: usize = key.parse().ok()?;
                let mut i = self.blank(at + 1);
                for _ in 0..index {
                    i = self.blank(self.value_end(i)?);
                    if self.at(i) != Some(b',') {
                        return None;
                    }
                    i = self.blank(i + 1);
                }
                (self.at(i) != Some(b']')).then_some(i)
            }
            _ => None,
        }
    }

    /// The value of the member `key` of the object at `at`.
    fn member(&self, at: usize, key: &str) -> Option<usize> {
        let mut i = self.blank(at + 1);
        while self.at(i) == Some(b'"') {
            let end = self.string_end(i)?;
            let name: String = serde_json::from_str(&self.text[i..end]).ok()?;
            let value = self.blank(self.blank(end) + 1);
            if name == key {
                return Some(value);
            }
            i = self.blank(self.value_end(value)?);
            if self.at(i) == Some(b',') {
                i = self.blank(i + 1);
            }
        }
        None
    }
}

impl McpConfig {
    /// Reads and checks the configuration file at `path`.
    ///
    /// # Errors
    /// [`StoreError::Io`](crate::error::StoreError::Io) if it cannot be read; [`ConfigError::File`](crate::error::ConfigError::File) naming the field for
    /// anything refused.
    pub fn read(path: impl AsRef<Path>) -> Result<McpConfig, Error> {
        let path = path.as_ref();
        match hostfile::read(path, Format::Json, "read the config file")? {
            Ok(text) => McpConfig::parse(path, &text),
            Err(Refused { position, problem }) => Err(Error::Config(ConfigError::File {
                path: path.to_owned(),
                field: String::new(),
                position,
                problem,
            })),
        }
    }

    internal_pub! {
        /// Checks `text`, the contents of the configuration file at `path` (named in errors).
        ///
        /// # Errors
        /// [`ConfigError::File`](crate::error::ConfigError::File) naming the field for anything refused.
        fn parse(path: impl AsRef<Path>, text: &str) -> Result<McpConfig, Error> {
            let path = path.as_ref();
            // A leading byte order mark is no content: VS Code, Notepad and PowerShell write
            // one, and VS Code reads such a file. Lines and columns count from after it.
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            let blanked = jsonc(path, text)?;
            let r = Reader {
                path,
                text: &blanked.text,
                source: text,
            };
            let value = r.json()?;
            let top = value
                .as_object()
                .ok_or_else(|| r.wrong("", "a JSON object"))?;
            // JSONC only where the host's own format is: VS Code's `servers` files. Claude
            // Desktop, Claude Code and Cursor read their `mcpServers` files as strict JSON (K6).
            let vscode = top.contains_key("servers")
                && !top.contains_key("mcpServers")
                && !top.contains_key("projects");
            if let Some(at) = blanked.first.filter(|_| !vscode) {
                return Err(r.syntax(at, JSONC_IN_STRICT));
            }
            let mut servers = BTreeMap::new();
            let mut found = false;
            for key in ["mcpServers", "servers"] {
                let Some(block) = top.get(key) else { continue };
                found = true;
                r.block(&format!("/{key}"), block, None, &mut servers)?;
            }
            found |= r.projects(top, &mut servers)?;
            if !found {
                return Err(r.fail("/mcpServers", FileProblem::Missing));
            }
            Ok(McpConfig {
                path: path.to_owned(),
                servers,
            })
        }
    }

    internal_pub! {
        /// Every configured origin, sorted.
        fn origins(&self) -> impl Iterator<Item = &Origin> {
            self.servers.keys()
        }
    }

    /// Every configured server by origin, sorted.
    pub fn servers(&self) -> impl Iterator<Item = (&Origin, &ServerConfig)> {
        self.servers.iter()
    }

    /// The server configured under `name`, if any.
    #[must_use]
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers
            .iter()
            .find(|(o, _)| o.as_str() == name)
            .map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::{McpConfig, ServerConfig};
    use crate::error::{Error, FileProblem};

    fn refused(text: &str) -> (String, FileProblem) {
        match McpConfig::parse("/etc/mcp.json", text) {
            Err(Error::Config(crate::error::ConfigError::File {
                path,
                field,
                problem,
                ..
            })) => {
                assert_eq!(path, std::path::Path::new("/etc/mcp.json"));
                (field, problem)
            }
            other => panic!("expected a refusal for {text}, got {other:?}"),
        }
    }

    #[test]
    fn claude_and_vscode_shapes_are_read_with_the_key_as_origin() {
        let claude = McpConfig::parse(
            "c.json",
            r#"{"mcpServers": {"docs": {"command": "node", "args": ["s.js"], "env": {"K": "v"}}},
                "other": 1}"#,
        )
        .expect("claude shape");
        assert_eq!(
            claude.server("docs"),
            Some(&ServerConfig::Stdio {
                command: "node".into(),
                args: vec!["s.js".into()],
                env: [("K".to_owned(), "v".to_owned())].into(),
                cwd: None,
            })
        );
        let vscode = McpConfig::parse(
            "v.json",
            r#"{"servers": {"a": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-T": "1"}},
                            "b": {"type": "stdio", "command": "srv"}}, "inputs": []}"#,
        )
        .expect("vscode shape");
        assert_eq!(
            vscode
                .origins()
                .map(crate::origin::Origin::as_str)
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(
            matches!(vscode.server("a"), Some(ServerConfig::Http { headers, .. }) if headers["X-T"] == "1")
        );
    }

    #[test]
    fn each_bad_field_is_named_by_its_json_pointer() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"mcpServers": {"d": {"command": "x", "args": ["ok", 3]}}}"#,
                "/mcpServers/d/args/1",
            ),
            (
                r#"{"mcpServers": {"d": {"command": "x", "env": {"K": true}}}}"#,
                "/mcpServers/d/env/K",
            ),
            (
                r#"{"mcpServers": {"a/b": {"url": 5}}}"#,
                "/mcpServers/a~1b/url",
            ),
            (
                r#"{"servers": {"d": {"type": "sse", "url": "http://x"}}}"#,
                "/servers/d/type",
            ),
            (r#"{"servers": {"d": {}}}"#, "/servers/d"),
            (
                r#"{"mcpServers": {"d": {"command": "x", "url": "http://x"}}}"#,
                "/mcpServers/d",
            ),
            (
                r#"{"mcpServers": {"d": {"url": "ftp://x"}}}"#,
                "/mcpServers/d/url",
            ),
            (
                r#"{"mcpServers": {"d": {"url": "http://x", "headers": {"bad name": "v"}}}}"#,
                "/mcpServers/d/headers/bad name",
            ),
            (r#"{"mcpServers": {"": {"command": "x"}}}"#, "/mcpServers/"),
            (r#"{"mcpServers": []}"#, "/mcpServers"),
            (r#"{"other": {}}"#, "/mcpServers"),
            ("[1]", ""),
            (r#"{"mcpServers": {"#, ""),
        ];
        for (text, pointer) in cases {
            let (field, problem) = refused(text);
            assert_eq!(&field, pointer, "{text}: {problem}");
        }
        let (_, problem) = refused(r#"{"mcpServers": {"#);
        assert!(matches!(problem, FileProblem::Syntax { .. }), "{problem:?}");
    }

    #[test]
    fn k6_a_project_server_is_labelled_name_at_folder_and_a_hash_of_the_path() {
        let label = |project: &str, name: &str| {
            super::project_origin(project, name).map(|o| o.as_str().to_owned())
        };
        let one = label("/home/u/one/api", "github").expect("a label");
        let two = label("/home/u/two/api", "github").expect("a label");
        assert!(
            one.starts_with("github@api#") && one.len() == "github@api#".len() + 32,
            "{one}"
        );
        assert_ne!(one, two, "two folders of one name are two origins");
        assert_eq!(
            label("/home/u/one/api", "github").expect("again"),
            one,
            "stable"
        );
        // Windows paths, and a trailing separator.
        assert!(
            label("C:\\Users\\u\\web", "x")
                .expect("a label")
                .starts_with("x@web#")
        );
        assert!(
            label("/srv/site/", "x")
                .expect("a label")
                .starts_with("x@site#")
        );
        // macOS writes paths decomposed: the label is NFC, as an origin must be.
        let nfd = label("/Users/u/Cafe\u{301}", "x").expect("a label");
        assert!(nfd.starts_with("x@Caf\u{e9}#"), "{nfd}");
        // A folder no label could show is shown plainly; a long one is cut to fit.
        let hidden = label("/p/a\u{200B}b", "x").expect("a label");
        assert!(hidden.starts_with("x@a_b#"), "{hidden}");
        let long = label(&format!("/p/{}", "f".repeat(200)), "x").expect("a label");
        assert_eq!(long.len(), crate::origin::MAX_LABEL_BYTES);
        // The name's own problem is the refusal.
        assert!(label("/p/a", "").is_err());
        assert!(label("/p/a", &"n".repeat(80)).is_err());
    }

    #[test]
    fn k6_claude_code_projects_are_read_a_bad_block_is_named_and_a_label_given_twice_refused() {
        let config = McpConfig::parse(
            "/home/u/.claude.json",
            r#"{"mcpServers": {"docs": {"command": "d"}},
                "projects": {"/w/a": {"mcpServers": {"docs": {"command": "a"}}},
                             "/w/b": {"allowedTools": []}}}"#,
        )
        .expect("read");
        let labels: Vec<&str> = config
            .origins()
            .map(crate::origin::Origin::as_str)
            .collect();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[0], "docs");
        assert!(labels[1].starts_with("docs@a#"), "{labels:?}");
        for (text, field) in [
            (r#"{"projects": []}"#, "/projects"),
            (r#"{"projects": {"/w": 1}}"#, "/projects/~1w"),
            (
                r#"{"projects": {"/w": {"mcpServers": []}}}"#,
                "/projects/~1w/mcpServers",
            ),
            (
                r#"{"projects": {"/w": {"mcpServers": {"x": {"command": 1}}}}}"#,
                "/projects/~1w/mcpServers/x/command",
            ),
            (r#"{"projects": {"/w": {}}}"#, "/mcpServers"),
        ] {
            let (got, _) = refused(text);
            assert_eq!(got, field, "{text}");
        }
        // A name at the top that spells a project server's label: one origin, two servers.
        let label = super::project_origin("/w/a", "docs").expect("a label");
        let twice = format!(
            r#"{{"mcpServers": {{"{}": {{"command": "d"}}}}, "projects": {{"/w/a": {{"mcpServers": {{"docs": {{"command": "a"}}}}}}}}}}"#,
            label.as_str()
        );
        let (field, problem) = refused(&twice);
        assert_eq!(field, "/projects/~1w~1a/mcpServers/docs");
        assert!(
            problem.to_string().contains("configured elsewhere"),
            "{problem}"
        );
    }

    #[test]
    fn k6_jsonc_only_in_vscode_files_and_then_bounded_as_parsed() {
        assert!(
            McpConfig::parse(
                "v.json",
                "{\"servers\": {\"a\": {\"command\": \"s\"},}, // c\n}"
            )
            .is_ok()
        );
        for strict in [
            "{\"mcpServers\": {}, // c\n}",
            "{\"projects\": {}, \"servers\": {},}",
        ] {
            let (field, problem) = refused(strict);
            assert_eq!(field, "");
            assert!(
                matches!(problem, FileProblem::Syntax { message } if message == super::JSONC_IN_STRICT),
                "{strict}"
            );
        }
        // A quote in a comment hides what follows from the reader's pre-scan: the text that
        // is parsed is counted again, and what is built is charged as it is built.
        let dense = format!(
            "{{\"servers\": {{}}, // \"\n\"x\": [{}0]}} // \"",
            "{},".repeat(6_000_000)
        );
        let (_, problem) = refused(&dense);
        assert!(problem.to_string().contains("structure"), "{problem}");
    }

    #[test]
    fn k6_a_server_after_a_line_comment_ended_by_a_lone_carriage_return_is_read() {
        // VS Code ends `// note` at the `\r`, and reads `b`; so must this reader, or
        // `purge --absent` would remove `b`'s origin as one the file does not name.
        let config = McpConfig::parse(
            ".vscode/mcp.json",
            "{\"servers\": {\"a\": {\"command\": \"s\"}, // note\r\"b\": {\"command\": \"t\"}\n}}",
        )
        .expect("read");
        let labels: Vec<&str> = config
            .origins()
            .map(crate::origin::Origin::as_str)
            .collect();
        assert_eq!(labels, ["a", "b"]);
    }

    #[test]
    fn project_labels_carry_160_bits_of_the_path_in_base32() {
        // RFC 4648's test vector, lower-cased.
        assert_eq!(super::base32(b"fooba"), "mzxw6ytb");
        assert_eq!(super::base32(&[0; 5]), "aaaaaaaa");
        assert_eq!(super::base32(&[0xff; 5]), "77777777");
        let label = super::project_origin("/home/u/one/api", "github").expect("a label");
        let hash = label.as_str().rsplit_once('#').expect("a hash").1;
        let digest = crate::digest::Digest::of(b"/home/u/one/api");
        assert_eq!(hash, super::base32(&digest.as_bytes()[..20]));
        assert_eq!(hash.len(), 32);
        // The longest name that leaves room for the hash still makes a label.
        let name = "n".repeat(crate::origin::MAX_LABEL_BYTES - 34);
        let longest = super::project_origin("/p/a", &name).expect("a label");
        assert_eq!(longest.as_str().len(), crate::origin::MAX_LABEL_BYTES);
    }

    #[test]
    fn a_config_file_that_starts_with_a_byte_order_mark_is_read() {
        for text in [
            "\u{feff}{\"servers\": {\"a\": {\"command\": \"s\"},}}",
            "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"s\"}}}",
        ] {
            let config = McpConfig::parse("/w/.vscode/mcp.json", text).expect("read");
            assert!(config.server("a").is_some(), "{text:?}");
        }
        // Only a leading one: a mark anywhere else is not white space in JSON.
        let (_, problem) = refused("{\u{feff}\"mcpServers\": {}}");
        assert!(matches!(problem, FileProblem::Syntax { .. }), "{problem:?}");
        // Positions count from after the mark.
        let e = McpConfig::parse(
            "/m.json",
            "\u{feff}{\"mcpServers\": {\"d\": {\"command\": 1}}}",
        )
        .expect_err("refused");
        assert!(e.to_string().contains("line 1, column 34"), "{e}");
    }

    /// A `~/.claude.json` as Claude Code writes it after long use: `projects` projects, each
    /// with `history` prompts and its settings, and one server.
    fn claude_json(projects: usize, history: usize) -> String {
        let prompt = r#"{"display":"fix the failing test in src/lib.rs and run cargo test again","pastedContents":{}}"#;
        let history = vec![prompt; history].join(",");
        let project = format!(
            r#"{{"allowedTools":[],"history":[{history}],"mcpContextUris":[],"mcpServers":{{}},"enabledMcpjsonServers":[],"disabledMcpjsonServers":[],"hasTrustDialogAccepted":true,"projectOnboardingSeenCount":1,"exampleFiles":["src/a.rs","src/b.rs"]}}"#
        );
        let all: Vec<String> = (0..projects)
            .map(|i| format!(r#""/home/u/work/project-{i}":{project}"#))
            .collect();
        format!(
            r#"{{"numStartups":412,"mcpServers":{{"docs":{{"command":"d"}}}},"projects":{{{}}}}}"#,
            all.join(",")
        )
    }

    #[test]
    fn a_claude_json_of_800_projects_with_their_history_is_read_from_disk() {
        let text = claude_json(800, 86);
        assert!(text.len() > 6_500_000, "{}", text.len());
        // Denser than one message may be: the parts no reader of servers needs are skipped.
        assert!(
            crate::json_weight::JsonWeight::default()
                .feed(text.as_bytes(), crate::json_weight::MAX_JSON_WEIGHT)
        );
        let dir = crate::scratch::scratch();
        let path = dir.path().join(".claude.json");
        std::fs::write(&path, &text).expect("write");
        let config = McpConfig::read(&path).expect("a real file loads");
        assert_eq!(config.servers().count(), 1);
        assert!(config.server("docs").is_some());
    }

    #[test]
    fn a_config_whose_server_blocks_are_dense_is_refused_and_so_is_one_dense_anywhere() {
        // Dense where the reader builds values: refused while parsing, whatever the comments.
        let args = format!("[{}0]", "0,".repeat(1_100_000));
        for text in [
            format!(r#"{{"mcpServers": {{"a": {{"command": "s", "args": {args}}}}}}}"#),
            format!(
                "{{\"servers\": {{\"a\": {{\"command\": \"s\", // \"\n\"args\": {args}}}}}}} // \""
            ),
            format!(
                r#"{{"projects": {{"/w": {{"mcpServers": {{"a": {{"command": "s", "args": {args}}}}}}}}}}}"#
            ),
        ] {
            let (field, problem) = refused(&text);
            assert_eq!(field, "");
            assert!(problem.to_string().contains("server settings"), "{problem}");
        }
        // A million keys where keys are kept (the top object) are charged too.
        let keys: Vec<String> = (0..600_000).map(|i| format!("\"k{i}\":0")).collect();
        let (_, problem) = refused(&format!("{{\"mcpServers\": {{}}, {}}}", keys.join(",")));
        assert!(problem.to_string().contains("server settings"), "{problem}");
        // Dense anywhere: the reader's pre-scan refuses it before parsing, from disk.
        let dir = crate::scratch::scratch();
        let path = dir.path().join("mcp.json");
        let empty = "{},".repeat(5_000_000);
        std::fs::write(
            &path,
            format!(r#"{{"mcpServers": {{}}, "x": [{empty}{{}}]}}"#),
        )
        .expect("write");
        let e = McpConfig::read(&path).expect_err("refused");
        assert!(e.to_string().contains("pre-scan"), "{e}");
    }

    #[test]
    fn the_message_names_the_path_and_the_field() {
        let e = McpConfig::parse(
            "/home/u/mcp.json",
            r#"{"mcpServers": {"d": {"command": 1}}}"#,
        )
        .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "config file /home/u/mcp.json: line 1, column 34: /mcpServers/d/command: must be a string"
        );
        assert!(matches!(e, Error::Config(_)), "{e:?}");
    }
}
