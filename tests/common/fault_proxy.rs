//! A fault-injecting HTTP/1.1 proxy for an object store on loopback (the L2 tests put it in
//! front of moto): each request is matched against a script of rules, and the first rule that
//! matches decides what the client gets — the store's answer as it is, or a fault: `503
//! SlowDown`, `429`, a `404` for an object the store holds, a hang-up or a silent connection, an
//! outage (every connection refused from then on), a truncated, cut-off or altered body.
//!
//! Every request is forwarded on a fresh connection with `Connection: close` and the store's
//! whole answer read before anything is sent back, so a fault can rewrite any part of it. The
//! client side keeps its connections alive, as an S3 client expects.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the client gets for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The store's answer, unchanged.
    Pass,
    /// `503 Slow Down` with S3's `SlowDown` error body; the store is not asked.
    SlowDown,
    /// `429 Too Many Requests` (the throttling answer of S3-compatible stores); not forwarded.
    TooManyRequests,
    /// `404` with S3's `NoSuchKey` body, whatever the store holds; not forwarded.
    NotFound,
    /// The connection is closed without an answer; not forwarded.
    Hangup,
    /// The request is read and never answered; the connection stays open until the client
    /// gives up.
    Silent,
    /// From this request on the store is gone: this connection is closed unanswered, so is
    /// every other at its next request, and every later connection is refused (the listening
    /// socket is closed).
    Outage,
    /// The store's answer with its body cut to half, its `Content-Length` saying so: a
    /// truncated object.
    Truncate,
    /// The store's answer promising its whole body, half of which is sent before the connection
    /// is closed: a body cut off in transit.
    CutBody,
    /// The store's answer with the first byte of its body changed: same length, other bytes.
    Alter,
}

/// One line of a script: requests it matches, how many of them it lets by first, how many it
/// then applies to, and the fault.
#[derive(Debug, Clone)]
pub struct Rule {
    method: Option<&'static str>,
    path_contains: Option<String>,
    skip: usize,
    times: Option<usize>,
    fault: Fault,
}

impl Rule {
    /// Every request, every time.
    pub fn all(fault: Fault) -> Rule {
        Rule {
            method: None,
            path_contains: None,
            skip: 0,
            times: None,
            fault,
        }
    }

    /// Only requests with this method (`GET`, `PUT`, `DELETE`).
    pub fn method(mut self, method: &'static str) -> Rule {
        self.method = Some(method);
        self
    }

    /// Only requests whose path contains `part` (an object's key, `/claims/`).
    pub fn path(mut self, part: impl Into<String>) -> Rule {
        self.path_contains = Some(part.into());
        self
    }

    /// Lets the first `n` matching requests through untouched.
    pub fn after(mut self, n: usize) -> Rule {
        self.skip = n;
        self
    }

    /// Applies to `n` matching requests (after those let through), then no more.
    pub fn times(mut self, n: usize) -> Rule {
        self.times = Some(n);
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.is_none_or(|m| m == method)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|part| path.contains(part))
    }
}

/// One request the proxy saw and what it did with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub fault: Fault,
}

/// A running proxy; it stops serving when dropped (its threads end with their connections).
pub struct FaultProxy {
    pub endpoint: String,
    state: Arc<State>,
}

struct State {
    upstream: SocketAddr,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    /// Set by an outage (or by dropping the proxy): the listener closes, connections hang up.
    down: AtomicBool,
}

impl FaultProxy {
    /// A proxy on a free loopback port in front of the HTTP server at `upstream`
    /// (`http://127.0.0.1:PORT`), passing everything until [`FaultProxy::script`] says otherwise.
    pub fn start(upstream: &str) -> FaultProxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("an upstream http://IP:PORT");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let state = Arc::new(State {
            upstream,
            rules: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            down: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&state);
        std::thread::spawn(move || {
            // Polled, so that an outage can close the listening socket: from then on the port
            // refuses connections, as a store that went away does.
            while !accepting.down.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let state = Arc::clone(&accepting);
                        std::thread::spawn(move || {
                            // A client that hangs up is part of the tests.
                            let _ = connection(&state, stream);
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => break,
                }
            }
        });
        FaultProxy { endpoint, state }
    }

    /// Replaces the script: rules are tried in order, the first that matches applies.
    pub fn script(&self, rules: Vec<Rule>) {
        *self.state.rules.lock().expect("lock") = rules;
    }

    /// Every request seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().expect("lock").clone()
    }

    /// How many requests got `fault`.
    pub fn count(&self, fault: Fault) -> usize {
        self.seen().iter().filter(|s| s.fault == fault).count()
    }

    /// Whether an outage happened (the port now refuses connections).
    pub fn is_down(&self) -> bool {
        self.state.down.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.down.store(true, Ordering::SeqCst);
    }
}

impl State {
    /// The fault for this request; the rule that chose it is used up by one.
    fn decide(&self, method: &str, path: &str) -> Fault {
        let mut rules = self.rules.lock().expect("lock");
        for rule in rules.iter_mut() {
            if !rule.matches(method, path) {
                continue;
            }
            if rule.skip > 0 {
                rule.skip -= 1;
                return Fault::Pass;
            }
            match &mut rule.times {
                Some(0) => continue,
                Some(n) => *n -= 1,
                None => {}
            }
            return rule.fault;
        }
        Fault::Pass
    }
}

/// One request as read from the client: its head (request line and headers, as sent) and body.
struct Request {
    method: String,
    path: String,
    head: Vec<u8>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut head = line.clone().into_bytes();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let trimmed = header.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            if name.eq_ignore_ascii_case("connection") {
                // The store is asked on a connection of its own, closed after one answer.
                continue;
            }
        }
        head.extend_from_slice(header.as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(Request {
        method,
        path,
        head,
        body,
    }))
}

/// The store's answer: status line, headers (without framing ones) and the decoded body.
struct Answer {
    status_line: String,
    headers: Vec<String>,
    body: Vec<u8>,
    /// A HEAD's `Content-Length`: the object's size, with no body.
    head_length: Option<usize>,
}

fn forward(upstream: SocketAddr, request: &Request) -> std::io::Result<Answer> {
    let mut store = TcpStream::connect(upstream)?;
    store.write_all(&request.head)?;
    store.write_all(&request.body)?;
    let mut reader = BufReader::new(store);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let mut headers = Vec::new();
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let trimmed = header.trim_end().to_owned();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':').unwrap_or((&trimmed, ""));
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if !name.eq_ignore_ascii_case("connection") {
            headers.push(trimmed);
        }
    }
    let mut body = Vec::new();
    let no_body =
        request.method == "HEAD" || status_line.contains(" 204 ") || status_line.contains(" 304 ");
    if no_body {
        // Nothing follows the head, whatever its Content-Length says.
    } else if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(Answer {
        head_length: if request.method == "HEAD" {
            length
        } else {
            None
        },
        status_line,
        headers,
        body,
    })
}

fn error_answer(status: &str, code: &str, message: &str) -> Answer {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>fault-proxy</RequestId></Error>"
    );
    Answer {
        status_line: format!("HTTP/1.1 {status}\r\n"),
        headers: vec!["Content-Type: application/xml".to_owned()],
        body: body.into_bytes(),
        head_length: None,
    }
}

/// Closes `stream` both ways, whatever was or was not answered on it.
fn hang_up(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The head of `answer` as the client is sent it: its own headers but its length, then the
/// `Content-Length` the fault calls for (`whole`: the body's length before any cut).
fn head_of(answer: &Answer, method: &str, fault: Fault, whole: usize) -> String {
    let mut head = answer.status_line.clone();
    for h in &answer.headers {
        if !h.to_ascii_lowercase().starts_with("content-length") {
            head.push_str(h);
            head.push_str("\r\n");
        }
    }
    let promised = if method == "HEAD" {
        answer.head_length
    } else if answer.status_line.contains(" 204 ") || answer.status_line.contains(" 304 ") {
        None
    } else if fault == Fault::CutBody {
        Some(whole)
    } else {
        Some(answer.body.len())
    };
    if let Some(n) = promised {
        head.push_str("Content-Length: ");
        head.push_str(&n.to_string());
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

fn connection(state: &State, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let Some(request) = read_request(&mut reader)? else {
            return Ok(());
        };
        if state.down.load(Ordering::SeqCst) {
            hang_up(&out);
            return Ok(());
        }
        let fault = state.decide(&request.method, &request.path);
        state.seen.lock().expect("lock").push(Seen {
            method: request.method.clone(),
            path: request.path.clone(),
            fault,
        });
        let mut answer = match fault {
            Fault::SlowDown => error_answer(
                "503 Slow Down",
                "SlowDown",
                "Please reduce your request rate.",
            ),
            Fault::TooManyRequests => {
                error_answer("429 Too Many Requests", "SlowDown", "Too many requests.")
            }
            Fault::NotFound => error_answer(
                "404 Not Found",
                "NoSuchKey",
                "The specified key does not exist.",
            ),
            Fault::Hangup => {
                hang_up(&out);
                return Ok(());
            }
            Fault::Outage => {
                state.down.store(true, Ordering::SeqCst);
                hang_up(&out);
                return Ok(());
            }
            Fault::Silent => {
                // Held open, unanswered, until the client hangs up.
                let mut sink = Vec::new();
                let _ = reader.read_to_end(&mut sink);
                return Ok(());
            }
            Fault::Pass | Fault::Truncate | Fault::CutBody | Fault::Alter => {
                forward(state.upstream, &request)?
            }
        };
        let whole = answer.body.len();
        match fault {
            Fault::Truncate => answer.body.truncate(whole / 2),
            Fault::Alter => {
                if let Some(b) = answer.body.first_mut() {
                    *b ^= 0x20;
                }
            }
            _ => {}
        }
        let head = head_of(&answer, &request.method, fault, whole);
        out.write_all(head.as_bytes())?;
        if fault == Fault::CutBody {
            out.write_all(&answer.body[..whole / 2])?;
            out.flush()?;
            hang_up(&out);
            return Ok(());
        }
        out.write_all(&answer.body)?;
        out.flush()?;
    }
}
