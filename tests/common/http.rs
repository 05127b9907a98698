//! HTTP for the tests, both sides.
//!
//! - A tiny Streamable HTTP MCP server: HTTP/1.1 on a loopback port, one thread per
//!   connection, answering each JSON-RPC POST with one `application/json` body from a
//!   [`SkillServer`]. It declines the optional GET stream (405), as servers without
//!   server-initiated messages may.
//! - A raw HTTP/1.1 client and a `skillcache serve --http` child ([`ServeChild`]), for the
//!   tests of `serve` itself.
//!
//! Each test file uses one side or the other.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::Value;
use skillcache::server::SkillServer;

/// How the server behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMode {
    /// Honest answers.
    Honest,
    /// `resources/read` is answered with a 200 MB body with no length announced.
    HugeRead,
}

/// Starts the server in the background; returns its MCP endpoint URL.
pub fn serve_http(server: SkillServer, mode: HttpMode) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let server = server.clone();
            std::thread::spawn(move || {
                // A client that hangs up mid-answer is part of the tests.
                let _ = connection(&server, stream, mode);
            });
        }
    });
    format!("http://{addr}/mcp")
}

fn connection(server: &SkillServer, stream: TcpStream, mode: HttpMode) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let verb = request_line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if verb != "POST" {
            out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            out.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        if mode == HttpMode::HugeRead && method == "resources/read" {
            return huge(&mut out, &message);
        }
        let Some(reply) = server.handle(&message) else {
            out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        let reply = serde_json::to_vec(&reply)?;
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nMcp-Session-Id: test-session\r\n\r\n",
            reply.len()
        )?;
        out.write_all(&reply)?;
        out.flush()?;
    }
}

/// 200 MB of text for any file, with no `Content-Length`: the client must count as it reads.
fn huge(out: &mut TcpStream, message: &Value) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: test-session\r\nConnection: close\r\n\r\n"
    )?;
    write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"contents":[{{"uri":{},"text":""#,
        message["id"], message["params"]["uri"]
    )?;
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        out.write_all(&chunk)?;
    }
    out.write_all(b"\"}]}}")?;
    out.flush()
}

// ---------------------------------------------------------------------------------------------
// The other side: a raw HTTP/1.1 client and a `skillcache serve --http` child, for the tests of
// `serve` itself (R-E1, R-E2, R-E8). Raw on purpose: an attacker's requests are not what a
// well-behaved client library would send.

/// The protocol revision the stateless requests below speak.
pub const MODERN: &str = "2026-07-28";

/// A running `skillcache serve DIR --http 127.0.0.1:0 …`, killed when dropped.
pub struct ServeChild {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
}

impl ServeChild {
    /// Starts `skillcache serve dir --http 127.0.0.1:0` with `extra` arguments and waits for
    /// the line that names its URL.
    pub fn start(dir: &std::path::Path, extra: &[&str]) -> ServeChild {
        ServeChild::start_at(dir, "127.0.0.1:0", extra)
    }

    /// As [`ServeChild::start`], on `addr`.
    pub fn start_at(dir: &std::path::Path, addr: &str, extra: &[&str]) -> ServeChild {
        ServeChild::spawn(std::process::Command::new(serve_bin()), dir, addr, extra)
    }

    /// As [`ServeChild::start`], with at most `files` descriptors (`prlimit`; 1024 is the
    /// usual default a server meets).
    pub fn start_with_descriptors(dir: &std::path::Path, files: u32, extra: &[&str]) -> ServeChild {
        let mut command = std::process::Command::new("prlimit");
        command
            .arg(format!("--nofile={files}:{files}"))
            .arg("--")
            .arg(serve_bin());
        ServeChild::spawn(command, dir, "127.0.0.1:0", extra)
    }

    fn spawn(
        mut command: std::process::Command,
        dir: &std::path::Path,
        addr: &str,
        extra: &[&str],
    ) -> ServeChild {
        use std::process::Stdio;
        let mut child = command
            .arg("serve")
            .arg(dir)
            .args(["--http", addr])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start skillcache serve --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| {
                line.split_once("listening on ")
                    .map(|(_, url)| url.trim().to_owned())
            })
            .expect("serve prints the URL it listens on");
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let authority = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        ServeChild {
            child,
            url,
            authority,
        }
    }

    /// The server's peak resident memory so far, in KiB (`VmHWM`).
    pub fn peak_kib(&self) -> u64 {
        proc_status(self.child.id(), "VmHWM:")
    }

    /// The server's thread count now.
    pub fn threads(&self) -> u64 {
        proc_status(self.child.id(), "Threads:")
    }

    /// Whether the server is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `skillcache` the serve tests run: this build's, or `$SKILLCACHE_SERVE_BIN` (to run the
/// same attacks against another build, such as the last release).
pub fn serve_bin() -> std::path::PathBuf {
    std::env::var_os("SKILLCACHE_SERVE_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(|| crate::common::bin().to_path_buf(), Into::into)
}

/// A number from `/proc/PID/status` (the first on the line named `key`).
pub fn proc_status(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON: a plain JSON body, or the first `data:` event of an SSE stream that
    /// holds a JSON-RPC message.
    pub fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_slice(&self.body) {
            return v;
        }
        let text = String::from_utf8_lossy(&self.body);
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("jsonrpc").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {text:?}"))
    }
}

/// `name: value` lines of an HTTP head.
pub fn header_lines(headers: &[(&str, &str)]) -> String {
    use std::fmt::Write as _;
    headers
        .iter()
        .fold(String::new(), |mut out, (name, value)| {
            let _ = write!(out, "{name}: {value}\r\n");
            out
        })
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer.
pub fn request(
    authority: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    request_to(authority, method, "/mcp", headers, body)
}

/// [`request`] to another path than the endpoint.
pub fn request_to(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    head.push_str(&header_lines(headers));
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> std::io::Result<Reply> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&rest[..eol])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        rest = &rest[eol + 2..];
        if size == 0 || size > rest.len() {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
    out
}

/// The headers of an MCP POST.
pub const MCP_POST: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// A 2026-07-28 request body (stateless: the revision and capabilities ride in `_meta`).
pub fn modern_body(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/skills": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "serve-tests", "version": "1"},
    });
    serde_json::to_vec(
        &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .expect("JSON")
}

/// Sends a 2026-07-28 request and returns the answer. The standard headers go with it
/// (SEP-2243: `Mcp-Method`, and `Mcp-Name` for `resources/read`).
pub fn modern(authority: &str, id: u64, method: &str, params: Value) -> std::io::Result<Reply> {
    let mut headers = MCP_POST.to_vec();
    headers.push(("MCP-Protocol-Version", MODERN));
    headers.push(("Mcp-Method", method));
    let name = params["uri"].as_str().unwrap_or_default().to_owned();
    if method == "resources/read" {
        headers.push(("Mcp-Name", &name));
    }
    request(
        authority,
        "POST",
        &headers,
        &modern_body(id, method, params),
    )
}
