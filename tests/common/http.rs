//! A tiny Streamable HTTP MCP server for tests: HTTP/1.1 on a loopback port, one thread per
//! connection, answering each JSON-RPC POST with one `application/json` body from a
//! [`SkillServer`]. It declines the optional GET stream (405), as servers without
//! server-initiated messages may.

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
