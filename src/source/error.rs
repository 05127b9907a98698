//! The source layer's errors: what talking to a server can fail with.

use crate::display::display_safe;
use crate::origin::Origin;

/// A request to a server failed: the server refused it, the connection failed, no answer came in
/// time, or the answer was too large.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The server answered a request with a JSON-RPC error — an unknown skill's `skills/get`,
    /// for one. Its message is the server's text, shown display-safe (R-E5): escape codes in it
    /// reach no terminal; and cut to its first 1,024 characters, so a server cannot make one
    /// error line megabytes long.
    #[error(
        "{method}{}{} failed on the server: {} (code {code})",
        OfUri(uri.as_deref()),
        ToOrigin(origin.as_ref()),
        ServerText(message)
    )]
    Server {
        /// The origin the request went to. A source does not know the host's label for it and
        /// leaves this `None`; the cache fills it in for every request it sends, so an error a
        /// [`SkillCache`](crate::SkillCache) returns names its origin.
        origin: Option<Origin>,
        /// The method.
        method: String,
        /// The skill's or file's URI the request named (`skills/get`, `resources/read`), filled
        /// in by the cache as `origin` is: a server's own words need not quote the request, so
        /// the error does. `None` for `skills/list`, and from a source.
        uri: Option<String>,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },

    /// The connection to the server failed. The cause is the transport's own error, which may
    /// carry text the server sent: show it display-safe too
    /// ([`display_safe`](crate::display_safe)), as the `skillcache` command line does.
    #[error(
        "{method}{}: the connection to the server failed",
        ToOrigin(origin.as_ref())
    )]
    Transport {
        /// The origin the request went to: filled in by the cache, as for `Server`.
        origin: Option<Origin>,
        /// The method (or `connect`).
        method: String,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A server did not answer in time (R-B1). The request was abandoned whole: nothing of it
    /// was stored, and the next call asks again.
    #[error("{method} to origin {origin} got no answer within {} s", after.as_secs_f64())]
    Timeout {
        /// The origin the request went to.
        origin: Origin,
        /// The method (`initialize` for the connection itself).
        method: String,
        /// The deadline that passed.
        after: std::time::Duration,
    },

    /// A message from the server is larger than the bound that follows from the limits (R-B2).
    /// It was refused while being read, never buffered whole.
    #[error(
        "{method}{}: the server sent a message larger than the bound of {max} bytes",
        ToOrigin(origin.as_ref())
    )]
    MessageTooLarge {
        /// The origin the request went to: filled in by the cache, as for `Server`.
        origin: Option<Origin>,
        /// The method whose answer was too large (or `connect` before any request).
        method: String,
        /// The bound in bytes.
        max: u64,
    },

    /// No source is connected for this origin.
    #[error("origin {origin} is not connected to a server")]
    NotConnected {
        /// The origin.
        origin: Origin,
    },
}

impl SourceError {
    /// The error as the cache hands it out: a server's refusal, a failed connection and a
    /// message over the bound name the origin the request went to (a source cannot know the
    /// host's label for it).
    /// A server's refusal names the URI the request named, `about`, as well.
    pub(crate) fn sent_to(self, to: &Origin, about: Option<&str>) -> SourceError {
        let to = || Some(to.clone());
        match self {
            SourceError::Server {
                origin: None,
                method,
                uri,
                code,
                message,
            } => SourceError::Server {
                origin: to(),
                method,
                uri: uri.or_else(|| about.map(str::to_owned)),
                code,
                message,
            },
            SourceError::Transport {
                origin: None,
                method,
                source,
            } => SourceError::Transport {
                origin: to(),
                method,
                source,
            },
            SourceError::MessageTooLarge {
                origin: None,
                method,
                max,
            } => SourceError::MessageTooLarge {
                origin: to(),
                method,
                max,
            },
            other => other,
        }
    }
}

/// ` of skill://docs/a.md` after a method, when the request named a URI: cut as every URI a
/// message shows is, since a server may choose one of any length.
struct OfUri<'a>(Option<&'a str>);

impl std::fmt::Display for OfUri<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(uri) => write!(f, " of {}", crate::display::display_cut_bare(uri)),
            None => Ok(()),
        }
    }
}

/// ` to origin docs` after a method, when the origin is known.
struct ToOrigin<'a>(Option<&'a Origin>);

impl std::fmt::Display for ToOrigin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(origin) => write!(f, " to origin {origin}"),
            None => Ok(()),
        }
    }
}

/// A server's own error text as a message shows it: display-safe, its first 1,024 characters.
struct ServerText<'a>(&'a str);

impl std::fmt::Display for ServerText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 1024;
        match self.0.char_indices().nth(SHOWN) {
            Some((cut, _)) => write!(f, "{}…", display_safe(&self.0[..cut])),
            None => write!(f, "{}", display_safe(self.0)),
        }
    }
}
