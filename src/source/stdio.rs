//! The child-process transport: newline-delimited JSON-RPC over a child's stdin and stdout,
//! with a bound on each incoming message enforced while it is read (R-B2).
//!
//! rmcp's own stdio codec drops an oversized line and keeps waiting, so the request it answered
//! hangs until its deadline. Here an oversized line, or a stream that ends inside a message,
//! ends the connection at once and says why: every pending request fails with that reason.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::json_weight::{JsonWeight, MAX_JSON_WEIGHT};

/// Why a child connection ended, when it was not an orderly close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// A message grew past the bound; it was discarded while being read.
    TooLarge {
        /// The bound in bytes.
        max: usize,
    },
    /// A message within the byte bound would have parsed into more JSON values than any answer
    /// within the limits holds (R-B2: bounded memory once parsed, not only while read).
    TooManyValues {
        /// The weight allowed (see [`JsonWeight`]).
        max: u64,
    },
    /// The child closed its stdout in the middle of a message.
    MidMessage {
        /// The bytes of the unfinished message.
        received: usize,
    },
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::TooLarge { max } => write!(
                f,
                "a message from the server exceeded the bound of {max} bytes and was refused while reading"
            ),
            Ended::TooManyValues { max } => write!(
                f,
                "a message from the server holds more JSON values than an answer within the limits can (weight over {max}); refused before parsing"
            ),
            Ended::MidMessage { received } => write!(
                f,
                "the server closed its output {received} bytes into a message"
            ),
        }
    }
}

impl std::error::Error for Ended {}

/// Where the transport leaves the reason it ended, for the source to report per request.
pub(crate) type EndSlot = Arc<Mutex<Option<Ended>>>;

/// Newline-delimited messages read from `R`, each bounded in bytes and in JSON structure while
/// it arrives (R-B2): the framing of both sides of stdio, the child transport here and
/// `serve`'s own (R-E3).
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    read: BufReader<R>,
    /// The message read so far. It survives a cancelled [`LineReader::next_line`] (rmcp polls
    /// it in a `select!`), so a message split across reads is resumed, never lost.
    line: Vec<u8>,
    /// The weight of the line being read.
    weight: JsonWeight,
    max: usize,
}

impl<R: tokio::io::AsyncRead + Unpin> LineReader<R> {
    /// Reads lines of at most `max` bytes from `read`, through a buffer of `capacity` bytes.
    pub(crate) fn new(read: R, capacity: usize, max: usize) -> LineReader<R> {
        LineReader {
            read: BufReader::with_capacity(capacity, read),
            line: Vec::new(),
            weight: JsonWeight::default(),
            max,
        }
    }

    /// The next whole line (without its newline), `Ok(None)` at the end of the stream.
    /// Never holds more than `max` bytes of one line (R-B2).
    ///
    /// # Errors
    /// Why the line was refused; the rest of it is still unread ([`LineReader::skip_line`]).
    pub(crate) async fn next_line(&mut self) -> Result<Option<Vec<u8>>, Ended> {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "reading from the peer failed");
                    return Ok(None);
                }
            };
            if available.is_empty() {
                return if self.line.iter().all(u8::is_ascii_whitespace) {
                    Ok(None)
                } else {
                    Err(Ended::MidMessage {
                        received: self.line.len(),
                    })
                };
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let content = newline.unwrap_or(available.len());
            // Checked before the bytes are appended: the line never grows past the bound.
            if self.line.len() + content > self.max {
                return Err(Ended::TooLarge { max: self.max });
            }
            // Counted as it arrives: a message too dense in JSON values is refused now, long
            // before it is whole (R-B2: bounded memory once parsed, not only while read).
            if self.weight.feed(&available[..content], MAX_JSON_WEIGHT) {
                return Err(Ended::TooManyValues {
                    max: MAX_JSON_WEIGHT,
                });
            }
            self.line.extend_from_slice(&available[..content]);
            self.read.consume(take);
            if newline.is_some() {
                self.weight = JsonWeight::default();
                return Ok(Some(std::mem::take(&mut self.line)));
            }
        }
    }

    /// Drops what was read of a refused line and reads past its end, holding nothing (a peer
    /// that keeps a connection after a refused message, as `serve` does). `false` if the
    /// stream ended first.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) async fn skip_line(&mut self) -> bool {
        self.line = Vec::new();
        self.weight = JsonWeight::default();
        loop {
            let available = match self.read.fill_buf().await {
                Ok(a) if !a.is_empty() => a,
                _ => return false,
            };
            if let Some(i) = available.iter().position(|&b| b == b'\n') {
                self.read.consume(i + 1);
                return true;
            }
            let n = available.len();
            self.read.consume(n);
        }
    }
}

/// How the child ended, once it has: the source waits on it (briefly) to say so in an error
/// ("the server exited before answering (exit status 1)").
pub(crate) type Exit = tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>;

/// Waits at most `within` for the child behind `exit` to end, and says how it did.
pub(crate) async fn exit_status(
    exit: &mut Exit,
    within: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let ended = tokio::time::timeout(within, exit.wait_for(Option::is_some)).await;
    ended.ok()?.ok().and_then(|status| *status)
}

/// A spawned child speaking MCP on stdio. Dropping it kills the child.
pub(crate) struct ChildTransport {
    /// Dropped (or sent) to kill the child; the task that waits for it owns it.
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    read: LineReader<ChildStdout>,
    write: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    ended: EndSlot,
}

impl ChildTransport {
    /// Spawns the host's `command` with piped stdin/stdout (the MCP stream); its stderr is as
    /// the host set it (inherited by default). The child dies with the transport; how it ended
    /// is told to the returned [`Exit`].
    pub(crate) fn spawn(
        command: &mut tokio::process::Command,
        max: usize,
        ended: EndSlot,
    ) -> std::io::Result<(ChildTransport, Exit)> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no stdin or stdout"));
        };
        let (kill, exit) = watch(child);
        let transport = ChildTransport {
            kill: Some(kill),
            // A large buffer keeps a 32 MiB message to a few hundred reads.
            read: LineReader::new(stdout, 256 * 1024, max),
            write: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            ended,
        };
        Ok((transport, exit))
    }

    fn end(&self, why: Ended) {
        tracing::debug!(%why, "closing the connection to the server");
        *self
            .ended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
    }
}

/// Waits for `child` in a task of its own, so its exit status is known the moment it ends, even
/// after rmcp dropped the transport; the child is killed (and reaped) when the returned sender is
/// dropped or used. `kill_on_drop` stays as the last word: a runtime shutting down drops the
/// task, and with it the child.
fn watch(mut child: Child) -> (tokio::sync::oneshot::Sender<()>, Exit) {
    let (kill, killed) = tokio::sync::oneshot::channel::<()>();
    let (tell, exit) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        tokio::select! {
            // A child that already ended is seen as ended, not killed, even when the transport
            // was dropped at the same moment.
            biased;
            status = child.wait() => {
                if let Ok(status) = status {
                    let _ = tell.send(Some(status));
                }
            }
            _ = killed => {
                // A child that is ending as the transport drops (its pipe closed a moment ago)
                // gets a moment to say how it ended; then it is killed.
                let grace = std::time::Duration::from_millis(100);
                if let Ok(Ok(status)) = tokio::time::timeout(grace, child.wait()).await {
                    let _ = tell.send(Some(status));
                    return;
                }
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    });
    (kill, exit)
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut guard = write.lock().await;
            let stdin = guard.as_mut().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotConnected, "the connection is closed")
            })?;
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.read.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(why) => {
                    self.end(why);
                    return None;
                }
            };
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text) {
                Ok(message) => return Some(message),
                // Not a message: nothing to answer or correlate; the request it may have been
                // meant to answer runs into its deadline.
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring a line from the server that is not a JSON-RPC message");
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin asks the server to exit; the kill makes sure it does.
        self.write.lock().await.take();
        self.kill.take();
        Ok(())
    }
}
