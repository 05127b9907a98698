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

/// What skillcache read of a child's stderr, when the host's command handed it a pipe: the
/// last line the child wrote there, and whether the stream has ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail {
    last_line: Option<String>,
    ended: bool,
}

/// How the child ends, watched: its exit status once it has one, and what skillcache reads of
/// its stderr. The source waits on it (briefly) to say so in an error ("the server exited before
/// answering (exit status 1); its last stderr line: …").
#[derive(Debug, Clone)]
pub(crate) struct Exit {
    status: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
    stderr: Option<tokio::sync::watch::Receiver<Tail>>,
}

/// How a child ended, as an error tells it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChildEnd {
    /// Its exit status, when it ended in time to be known.
    pub(crate) status: Option<std::process::ExitStatus>,
    /// The last line it wrote to its stderr, when skillcache read it (the host's command piped
    /// it), as it was written: shown display-safe and cut.
    pub(crate) last_line: Option<String>,
}

/// Waits at most `within` for the child behind `exit` to end (and its stderr, when read, to
/// close: the last line comes with the end), and says how it did.
pub(crate) async fn child_end(exit: &mut Exit, within: std::time::Duration) -> ChildEnd {
    let deadline = tokio::time::Instant::now() + within;
    let status = tokio::time::timeout_at(deadline, exit.status.wait_for(Option::is_some))
        .await
        .ok()
        .and_then(|ended| ended.ok().and_then(|status| *status));
    let last_line = match &mut exit.stderr {
        Some(tail) => {
            let _ = tokio::time::timeout_at(deadline, tail.wait_for(|t| t.ended)).await;
            tail.borrow().last_line.clone()
        }
        None => None,
    };
    ChildEnd { status, last_line }
}

/// The most of one stderr line kept for an error (its start; a person reads a line from there).
const TAIL_MAX: usize = 1024;

/// Reads a child's piped stderr on a thread of its own: every byte goes on to this process's
/// stderr as it arrives, as an inherited stderr would show it, and the last line is kept for an
/// error. A thread, not a task: writing to this process's stderr may block (a pipe nobody
/// reads), which must hold neither the runtime's threads nor the child's other pipes. `None`
/// when the thread cannot start (the pipe is then closed: the child's stderr is lost, nothing
/// else).
fn forward_stderr(
    stderr: tokio::process::ChildStderr,
) -> Option<tokio::sync::watch::Receiver<Tail>> {
    let file = crate::platform::child_stderr_file(stderr).ok()?;
    let (tell, tail) = tokio::sync::watch::channel(Tail::default());
    let spawned = std::thread::Builder::new()
        .name("skillcache-server-stderr".to_owned())
        .spawn(move || {
            use std::io::{BufRead as _, ErrorKind, Write as _};
            let mut read = std::io::BufReader::with_capacity(8 * 1024, file);
            let mut line = Vec::new();
            loop {
                let chunk = match read.fill_buf() {
                    Ok([]) => break,
                    Ok(chunk) => chunk,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    }
                    Err(_) => break,
                };
                // A failed write (this process's stderr is closed) loses only the copy.
                let _ = std::io::stderr().write_all(chunk);
                for &b in chunk {
                    if b == b'\n' {
                        note_line(&tell, &line);
                        line.clear();
                    } else if line.len() < TAIL_MAX {
                        line.push(b);
                    }
                }
                let n = chunk.len();
                read.consume(n);
            }
            note_line(&tell, &line);
            tell.send_modify(|t| t.ended = true);
        });
    spawned.ok().map(|_| tail)
}

/// Keeps `line` as the last one, unless it is blank.
fn note_line(tell: &tokio::sync::watch::Sender<Tail>, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    if !text.trim_start().is_empty() {
        tell.send_modify(|t| t.last_line = Some(text.to_owned()));
    }
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
    /// the host set it (inherited by default), and when the host piped it, skillcache reads it
    /// ([`forward_stderr`]). The child dies with the transport; how it ended is told to the
    /// returned [`Exit`].
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
        let stderr = child.stderr.take().and_then(forward_stderr);
        let (kill, status) = watch(child);
        let exit = Exit { status, stderr };
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
fn watch(
    mut child: Child,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
) {
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
