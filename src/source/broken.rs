//! rmcp's errors, said in the words of what failed: the cause a [`SourceError::Transport`]
//! carries.
//!
//! rmcp's own `Display` names Rust types (`Transport [rmcp::transport::worker::WorkerTransport<…>]
//! error`), its internal steps (`when send discover request`) and `Debug` text. None of it may
//! reach a person (the crate's rule: no type path and no `Debug` text in a message), so each rmcp
//! error is translated here, where the source meets rmcp, into a [`Broken`]: a sentence about the
//! server, its URL or its program. The original is dropped, not kept as a `source()`: the facts a
//! host needs (the OS error, the HTTP status, the exit status) are in the sentence, and nothing
//! below it has a `Display` written for a person.
//!
//! [`SourceError::Transport`]: crate::error::SourceError::Transport

use std::error::Error as StdError;
use std::fmt;
use std::process::ExitStatus;

use super::stdio::ChildEnd;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::display::display_safe;

/// What the source was talking to, for the sentence.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    /// A Streamable HTTP endpoint: its URL.
    Http(String),
    /// A child process.
    Child,
    /// A transport or session the host opened.
    Host,
}

/// Why the connection to a server failed, as a person reads it.
#[derive(Debug)]
pub(crate) enum Broken {
    /// The HTTP endpoint could not be reached at all.
    Unreachable {
        /// The URL as the host gave it.
        url: String,
        /// Why, in the operating system's words (`connection refused`, a name not found).
        why: String,
    },
    /// The child process ended before it answered.
    Exited {
        /// How it ended, when known.
        status: Option<ExitStatus>,
        /// The last line it wrote to its stderr, when skillcache read it.
        last_line: Option<String>,
    },
    /// The peer closed the connection before it answered (the process may still run).
    Closed,
    /// The HTTP endpoint answered with an error status.
    Status {
        /// The URL as the host gave it.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// Anything else, already a sentence.
    Said(String),
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::Unreachable { url, why } => {
                write!(f, "cannot connect to {}: {why}", display_safe(url))
            }
            Broken::Exited { status, last_line } => {
                f.write_str("the server exited before answering")?;
                if let Some(s) = status {
                    write!(f, " ({})", exit(*s))?;
                }
                if let Some(line) = last_line {
                    // The server chose it: shown display-safe, and cut.
                    write!(
                        f,
                        "; its last stderr line: {}",
                        crate::display::display_cut_bare(line)
                    )?;
                }
                Ok(())
            }
            Broken::Closed => f.write_str("the server closed the connection before answering"),
            Broken::Status { url, status } => {
                write!(f, "{} answered HTTP {status}", display_safe(url))
            }
            Broken::Said(text) => f.write_str(text),
        }
    }
}

impl StdError for Broken {}

/// `exit status 1`, or the signal that ended the process.
fn exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    if let Some(signal) = crate::platform::exit_signal(status) {
        return format!("killed by signal {signal}");
    }
    "exit status unknown".to_owned()
}

/// An OS error in words: the common ones as a person says them, the rest as the OS says them.
fn os_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        ErrorKind::ConnectionReset => "the connection was reset".to_owned(),
        ErrorKind::ConnectionAborted => "the connection was aborted".to_owned(),
        ErrorKind::TimedOut => "timed out".to_owned(),
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
            "the network cannot reach it".to_owned()
        }
        ErrorKind::AddrNotAvailable => "the address is not available".to_owned(),
        _ => display_safe(&e.to_string()).to_string(),
    }
}

/// The first OS error in `e`'s cause chain.
fn io_cause<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a std::io::Error> {
    let mut next = Some(e);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        next = cause.source();
    }
    None
}

/// The first letter in lower case: rmcp's few readable sentences start with a capital.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_lowercase().chain(chars).collect::<String>()
    })
}

/// The handshake (`server/discover`, or `initialize`) failed.
pub(crate) fn handshake(e: &ClientInitializeError, peer: &Place, exited: &ChildEnd) -> Broken {
    match e {
        ClientInitializeError::TransportError { error, .. } => {
            transport(error.error.as_ref(), peer, exited)
        }
        ClientInitializeError::ConnectionClosed(_) => closed(peer, exited),
        ClientInitializeError::JsonRpcError(data) => Broken::Said(format!(
            "the server refused the handshake: {} (code {})",
            crate::display::display_cut_bare(&data.message),
            data.code.0
        )),
        // The revision of 2026-07-28 was tried first; the fallback's failure is the one that
        // ended the attempt, and says more.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            handshake(fallback, peer, exited)
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => {
            let offered: Vec<String> = server_supported
                .iter()
                .map(|v| display_safe(&v.to_string()).to_string())
                .collect();
            Broken::Said(format!(
                "the server speaks none of the protocol revisions skillcache does (it offers {})",
                if offered.is_empty() {
                    "none".to_owned()
                } else {
                    offered.join(", ")
                }
            ))
        }
        ClientInitializeError::Cancelled => Broken::Said("the handshake was cancelled".to_owned()),
        _ => Broken::Said(
            "the server answered the handshake with something other than its result".to_owned(),
        ),
    }
}

/// A request after the handshake failed (a JSON-RPC error is the caller's own case).
pub(crate) fn request(e: &ServiceError, peer: &Place, exited: &ChildEnd) -> Broken {
    match e {
        ServiceError::TransportSend(error) => transport(error.error.as_ref(), peer, exited),
        ServiceError::TransportClosed => closed(peer, exited),
        ServiceError::UnexpectedResponse => {
            Broken::Said("the server answered with something other than a result".to_owned())
        }
        ServiceError::Cancelled { .. } => Broken::Said("the request was cancelled".to_owned()),
        ServiceError::Timeout { timeout } => {
            Broken::Said(format!("no answer within {} s", timeout.as_secs_f64()))
        }
        _ => Broken::Said("the request failed in the MCP client".to_owned()),
    }
}

fn closed(peer: &Place, exited: &ChildEnd) -> Broken {
    match peer {
        Place::Child => gone(exited),
        _ => Broken::Closed,
    }
}

/// The child is gone, as `end` tells it.
fn gone(end: &ChildEnd) -> Broken {
    Broken::Exited {
        status: end.status,
        last_line: end.last_line.clone(),
    }
}

/// What a transport's own error says: the HTTP client's, or an OS error of the child's pipes.
fn transport(
    e: &(dyn StdError + Send + Sync + 'static),
    peer: &Place,
    exited: &ChildEnd,
) -> Broken {
    if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        let url = match peer {
            Place::Http(url) => url.clone(),
            _ => "the server".to_owned(),
        };
        return streamable(http, url);
    }
    match (io_cause(e), peer) {
        // Writing to a child that is gone: it exited (or closed its input) before answering.
        (Some(io), Place::Child) if io.kind() == std::io::ErrorKind::BrokenPipe => gone(exited),
        (Some(io), _) => Broken::Said(os_words(io)),
        (None, _) => Broken::Said("the transport failed".to_owned()),
    }
}

/// The status of rmcp's `HTTP 404: …` text.
fn http_status(text: &str) -> Option<u16> {
    let code = text.strip_prefix("HTTP ")?.get(..3)?;
    code.parse().ok().filter(|c| (100..600).contains(c))
}

/// The HTTP client's own error, for `url`: a status, a timeout, or why it could not connect.
fn http_client(client: &reqwest::Error, url: String) -> Broken {
    if let Some(status) = client.status() {
        return Broken::Status {
            url,
            status: status.as_u16(),
        };
    }
    if client.is_timeout() {
        return Broken::Unreachable {
            url,
            why: "timed out".to_owned(),
        };
    }
    let why = io_cause(client).map_or_else(
        || {
            if client.is_connect() {
                "the connection failed".to_owned()
            } else {
                "the HTTP request failed".to_owned()
            }
        },
        os_words,
    );
    Broken::Unreachable { url, why }
}

/// The Streamable HTTP client's error, for `url`.
fn streamable(e: &StreamableHttpError<reqwest::Error>, url: String) -> Broken {
    let said = |text: &str| Broken::Said(text.to_owned());
    match e {
        StreamableHttpError::Client(client) => http_client(client, url),
        StreamableHttpError::Io(io) => Broken::Unreachable {
            url,
            why: os_words(io),
        },
        StreamableHttpError::HttpStatus(status) => Broken::Status {
            url,
            status: status.status,
        },
        StreamableHttpError::SessionExpired => Broken::Status { url, status: 404 },
        StreamableHttpError::AuthRequired(_) => {
            said("the server requires authorization (HTTP 401)")
        }
        StreamableHttpError::InsufficientScope(_) => {
            said("the server refused the credentials for their scope (HTTP 403)")
        }
        StreamableHttpError::UnexpectedContentType(kind) => Broken::Said(format!(
            "{} answered with {}, not an MCP message",
            display_safe(&url),
            kind.as_deref().map_or_else(
                || "no content type".to_owned(),
                |k| format!("content type {}", display_safe(k))
            )
        )),
        // rmcp writes an error status it does not classify (a 404, a 405) as `HTTP 404: <body>`;
        // the status is what a person needs, the body is the server's and stays out.
        StreamableHttpError::UnexpectedServerResponse(text) => match http_status(text) {
            Some(status) => Broken::Status { url, status },
            None => said("the server's answer is not a JSON-RPC message"),
        },
        StreamableHttpError::Deserialize(_) => {
            said("the server's answer is not a JSON-RPC message")
        }
        StreamableHttpError::Sse(_) | StreamableHttpError::UnexpectedEndOfStream => {
            said("the server's event stream broke off")
        }
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Broken::Said(format!(
            "the server's answer is larger than the bound of {max_size} bytes"
        )),
        StreamableHttpError::ReinitializationFailed(data) => Broken::Said(format!(
            "the server refused to open a new session: {} (code {})",
            crate::display::display_cut_bare(&data.message),
            data.code.0
        )),
        // The rest have a readable sentence of their own (no type, no `Debug`).
        StreamableHttpError::TransportChannelClosed
        | StreamableHttpError::MissingSessionIdInResponse
        | StreamableHttpError::SessionRecoveryTimeout
        | StreamableHttpError::ControlRequestTimeout
        | StreamableHttpError::ServerDoesNotSupportSse
        | StreamableHttpError::ServerDoesNotSupportDeleteSession => {
            Broken::Said(sentence(&e.to_string()))
        }
        _ => said("the HTTP transport failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Broken, ChildEnd, Place, handshake, request};
    use rmcp::service::{ClientInitializeError, ServiceError};

    #[test]
    fn u1_a_broken_pipe_to_a_child_is_an_exit_and_names_no_type() {
        let error = ClientInitializeError::TransportError {
            error: rmcp::transport::DynamicTransportError::from_parts(
                "skillcache::source::stdio::ChildTransport",
                std::any::TypeId::of::<()>(),
                Box::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
            ),
            context: "send discover request".into(),
        };
        let said = handshake(&error, &Place::Child, &ChildEnd::default()).to_string();
        assert_eq!(said, "the server exited before answering");
        let closed = request(
            &ServiceError::TransportClosed,
            &Place::Http("http://h/".into()),
            &ChildEnd::default(),
        );
        assert!(matches!(closed, Broken::Closed));
    }

    #[test]
    fn u1_a_child_that_exits_is_named_with_its_last_stderr_line_shown_safe_and_cut() {
        let end = ChildEnd {
            status: None,
            last_line: Some(format!(
                "fatal: \u{1b}[31mno such folder{}",
                "x".repeat(400)
            )),
        };
        let said = request(&ServiceError::TransportClosed, &Place::Child, &end).to_string();
        assert!(
            said.starts_with("the server exited before answering; its last stderr line: fatal: "),
            "{said}"
        );
        assert!(!said.contains('\u{1b}'), "{said}");
        assert!(said.len() < 400, "{said}");
    }
}
