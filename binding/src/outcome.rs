//! How a request sent through the host's own session ended (Python's `connect_session`, Node's
//! `connectClient`), as the answer or the error the cache takes: one mapping for both.

use serde_json::Value;
use skillcache::Error;
use skillcache::error::SourceError;

/// What the host's side said about one request.
#[derive(Debug)]
pub enum Reply {
    /// The `result` object as JSON text, already checked against the message bound.
    Answer(String),
    /// The answer was larger than the bound (its size, read before any of it was copied).
    TooLarge,
    /// The server answered with a JSON-RPC error.
    Server {
        /// The JSON-RPC code.
        code: i64,
        /// The server's text.
        message: String,
    },
    /// The host's session failed otherwise, said in its words (a closed connection, a result
    /// the SDK refused).
    Failed(String),
    /// The request was cancelled on the host's side (its session is shutting down).
    Cancelled,
    /// The host's runtime closed before the request settled.
    Gone,
}

/// Whether an answer of `len` bytes is over the bound `max` (checked before it is copied).
#[must_use]
pub fn too_large(len: usize, max: u64) -> bool {
    u64::try_from(len).unwrap_or(u64::MAX) > max
}

/// A failure of the host's side, for `method`.
#[must_use]
pub fn transport(method: &str, why: impl Into<String>) -> Error {
    Error::Source(SourceError::Transport {
        origin: None,
        method: method.to_owned(),
        source: why.into().into(),
    })
}

/// `reply` to `method` as the cache takes it; `max` is the message bound it was checked against.
///
/// # Errors
/// [`SourceError::Server`] for the server's refusal, [`SourceError::MessageTooLarge`] over the
/// bound, [`SourceError::Transport`] for everything else (an answer that is not JSON included).
pub fn answer(method: &str, reply: Reply, max: u64) -> Result<Value, Error> {
    match reply {
        Reply::Answer(text) => serde_json::from_str(&text)
            .map_err(|e| transport(method, format!("the answer is not JSON: {e}"))),
        Reply::TooLarge => Err(Error::Source(SourceError::MessageTooLarge {
            origin: None,
            method: method.to_owned(),
            max,
        })),
        Reply::Server { code, message } => Err(Error::Source(SourceError::Server {
            origin: None,
            uri: None,
            method: method.to_owned(),
            code,
            message,
        })),
        Reply::Failed(why) => Err(transport(method, why)),
        Reply::Cancelled => Err(transport(
            method,
            "the request was cancelled on the host's side",
        )),
        Reply::Gone => Err(transport(
            method,
            "the host's runtime closed before the request settled",
        )),
    }
}
