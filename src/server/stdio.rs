//! `serve` over stdio: newline-delimited JSON-RPC on stdin and stdout, bounded both ways (R-E3).
//!
//! - **In**: each line is framed by the client transport's own reader (`source::stdio`): at
//!   most the message bound in bytes and in JSON weight, counted while it arrives (R-B2). A line
//!   over either bound is answered with `-32600` (id null) and skipped; the session goes on.
//! - **Parsing**: a line that is not JSON is answered with `-32700` (Parse error, id null), JSON
//!   that is not a request with `-32600`, a request whose params do not fit its method with
//!   `-32602` (JSON-RPC 2.0). No answer quotes the line.
//! - **Out, and backpressure**: at most [`IN_FLIGHT`] requests are between "read" and "its
//!   answer written to stdout". While a client does not read its answers, the writes block,
//!   no permit comes back, and no further request is read: the pipe fills up on the client's
//!   side, not in our memory (no unbounded queue of answers).
//! - **Notifications** the server sends on its own (a watched folder changed) wait for stdout
//!   like answers do, but no request bounds them: a client that subscribes and never reads
//!   would collect one waiting copy per change. A notification already waiting (not yet being
//!   written) is not queued again — the client will read that one after the change, which is
//!   all either copy tells it — and at most [`NOTIFICATIONS_WAITING`] distinct ones wait.
//!   Each notification of a change is handed over on its own task (`rmcp_server::notify`), so
//!   one held up does not keep the others from waiting their turn.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId, ResourceContents, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR};
use crate::source::stdio::{Ended, LineReader};

/// How many requests may wait for their answer to be written. Enough for a host loading a
/// batch of files at once; few enough that answers a client does not read stay bounded (each
/// at most one message bound).
pub(crate) const IN_FLIGHT: usize = 8;

/// Answers held for the requests read and not yet answered, by request id.
type Held = Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>;

/// How many distinct notifications may wait for stdout: one per published file a client
/// subscribed to, and the list's; each is one short line (about 200 bytes with its set entry,
/// 3 MiB at most). Past it a client that reads nothing loses the newest (logged).
pub(crate) const NOTIFICATIONS_WAITING: usize = 16 * 1024;

/// The notifications waiting for stdout, as the lines they are: one is taken out when its
/// write begins, so a copy sent during that write waits again (nothing is lost).
type Waiting = Arc<Mutex<std::collections::HashSet<Vec<u8>>>>;

/// What the transport reads requests from.
pub(crate) type Input = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
/// What the transport writes answers to.
pub(crate) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// This process's stdin and stdout for the transport. A pipe (what an MCP host gives the server
/// it starts) is read and written non-blocking, on the runtime's own threads: tokio's
/// `stdin()`/`stdout()` hand every read and every write to the blocking pool, and a sweep's
/// hundreds of small messages spent more time waking those threads than answering (issue 41,
/// P3: 46% of `serve`'s samples in the kernel, waking and switching). Anything else (a
/// terminal, a file) goes through tokio's own, as before. The descriptors are duplicates, so
/// the standard handles stay open; the pipes become non-blocking for this process.
pub(crate) fn standard_streams() -> (Input, Output) {
    let (input, output) = crate::platform::standard_pipes();
    (
        input.unwrap_or_else(|| Box::new(tokio::io::stdin())),
        output.unwrap_or_else(|| Box::new(tokio::io::stdout())),
    )
}

/// The stdio transport of `serve`.
pub(crate) struct StdioTransport<R, W> {
    read: LineReader<R>,
    write: Arc<tokio::sync::Mutex<W>>,
    permits: Arc<Semaphore>,
    held: Held,
    waiting: Waiting,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin + Send + 'static> StdioTransport<R, W> {
    /// Reads requests of at most `max` bytes from `read` and writes answers to `write`.
    pub(crate) fn new(read: R, write: W, max: usize) -> StdioTransport<R, W> {
        StdioTransport {
            read: LineReader::new(read, 256 * 1024, max),
            write: Arc::new(tokio::sync::Mutex::new(write)),
            permits: Arc::new(Semaphore::new(IN_FLIGHT)),
            held: Arc::default(),
            waiting: Arc::default(),
        }
    }

    /// Writes an answer the transport makes itself (a refused line) on its own task, holding
    /// `permit` until it is written, so a cancelled `receive` never leaves half a line on
    /// stdout and answers nobody reads still count against [`IN_FLIGHT`].
    fn answer(&self, answer: &Value, permit: OwnedSemaphorePermit) {
        let write = Arc::clone(&self.write);
        let mut bytes = answer.to_string().into_bytes();
        bytes.push(b'\n');
        tokio::spawn(async move {
            let mut out = write.lock().await;
            if let Err(e) = write_line(&mut *out, &bytes).await {
                tracing::debug!(error = %e, "cannot answer a refused line");
            }
            drop(permit);
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(out: &mut W, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes).await?;
    out.flush().await
}

fn lock(held: &Held) -> std::sync::MutexGuard<'_, HashMap<RequestId, OwnedSemaphorePermit>> {
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

fn lock_waiting(waiting: &Waiting) -> std::sync::MutexGuard<'_, std::collections::HashSet<Vec<u8>>> {
    waiting.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        let held = Arc::clone(&self.held);
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let notification = matches!(item, JsonRpcMessage::Notification(_));
        // Sized ahead for a file's contents: grown by doubling, a 2 MB answer's buffer passed
        // through 2 + 4 MB at once (issue 41, P3 peak RSS). Room not written is never touched.
        let mut line = Vec::with_capacity(line_hint(&item));
        let bytes = serde_json::to_writer(&mut line, &item).map(|()| {
            line.push(b'\n');
            line
        });
        drop(item);
        // rmcp sends each message on its own task: a notification the client will read anyway
        // (already waiting) is not queued again, so that one that does not read holds no more
        // than one copy of each.
        let queued = match &bytes {
            Ok(line) if notification => {
                let mut waiting = lock_waiting(&self.waiting);
                if waiting.contains(line) {
                    tracing::trace!("the same notification is already waiting for stdout");
                    None
                } else if waiting.len() >= NOTIFICATIONS_WAITING {
                    tracing::warn!(waiting = waiting.len(), "the client reads no notifications: one more is dropped");
                    None
                } else {
                    waiting.insert(line.clone());
                    Some(Arc::clone(&self.waiting))
                }
            }
            _ => None,
        };
        let skipped = notification && bytes.is_ok() && queued.is_none();
        async move {
            if skipped {
                return Ok(());
            }
            let bytes = bytes.map_err(io::Error::other)?;
            let mut out = write.lock().await;
            if let Some(waiting) = queued {
                lock_waiting(&waiting).remove(&bytes);
            }
            let written = write_line(&mut *out, &bytes).await;
            drop(out);
            // Only once the answer is out may another request be read (backpressure).
            if let Some(id) = answers {
                lock(&held).remove(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
            let line = match self.read.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) | Err(Ended::MidMessage { .. }) => return None,
                Err(why @ (Ended::TooLarge { .. } | Ended::TooManyValues { .. })) => {
                    tracing::warn!(%why, "refusing a request");
                    let message = match why {
                        Ended::TooLarge { max } => {
                            format!("Invalid Request: longer than the bound of {max} bytes")
                        }
                        _ => "Invalid Request: more JSON values than any request within the limits holds".to_owned(),
                    };
                    self.answer(&error(&Value::Null, INVALID_REQUEST, &message), permit);
                    if !self.read.skip_line().await {
                        return None;
                    }
                    continue;
                }
            };
            match read_message(&line) {
                Ok(Some(message)) => {
                    match &message {
                        JsonRpcMessage::Request(request) => {
                            lock(&self.held).insert(request.id.clone(), permit);
                        }
                        // A cancelled request is never answered (rmcp drops its answer): its
                        // slot comes back now.
                        JsonRpcMessage::Notification(n) => {
                            if let ClientNotification::CancelledNotification(c) = &n.notification
                                && let Some(id) = &c.params.request_id
                            {
                                lock(&self.held).remove(id);
                            }
                        }
                        _ => {}
                    }
                    return Some(message);
                }
                Ok(None) => {}
                Err(answer) => self.answer(&answer, permit),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A JSON-RPC error answer.
fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

internal_pub! {
    /// One line from a client as the message it is, or the error answer it gets: `-32700` for
    /// a line that is not JSON, `-32600` for JSON that is not a JSON-RPC message (a batch
    /// included), `-32602` for a request whose params do not fit its method (R-E3). `Ok(None)`
    /// for a blank line, or a notification that is not valid (nothing to answer). No answer
    /// quotes the line.
    ///
    /// # Errors
    /// The error answer, as JSON.
    fn read_message(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Value> {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let typed = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
            Ok(message) => return Ok(Some(message)),
            Err(e) => e,
        };
        let value = match serde_json::from_slice::<Value>(text) {
            Ok(value) => value,
            Err(e) => {
                let message = format!(
                    "Parse error: not JSON ({:?} at line {}, column {})",
                    e.classify(),
                    e.line(),
                    e.column()
                );
                return Err(error(&Value::Null, PARSE_ERROR, &message));
            }
        };
        // The id, if it is one a JSON-RPC id may be; anything else is answered with null.
        let id = value
            .get("id")
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
            .cloned();
        let is_request = value.get("method").is_some_and(Value::is_string)
            && value.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        tracing::debug!(error = %typed, "a line that is not a valid message");
        match (id, is_request) {
            (Some(id), true) => Err(error(
                &id,
                INVALID_PARAMS,
                "Invalid params: they do not fit the method",
            )),
            // A notification that does not parse: there is nobody to answer.
            (None, true) if value.get("id").is_none() => Ok(None),
            (id, _) => Err(error(
                &id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 message",
            )),
        }
    }
}

/// Room for `item` as a line when it carries a file's contents (text, or base64): their length
/// and a quarter more for escapes, plus the envelope. Other messages are short and grow as
/// they are written.
fn line_hint(item: &TxJsonRpcMessage<RoleServer>) -> usize {
    let JsonRpcMessage::Response(response) = item else {
        return 0;
    };
    let ServerResult::ReadResourceResult(read) = &response.result else {
        return 0;
    };
    read.contents
        .iter()
        .map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => text.len() + text.len() / 4,
            ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
            _ => 0,
        })
        .sum::<usize>()
        + 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(answer: &Value) -> (i64, Value) {
        (
            answer["error"]["code"].as_i64().expect("a code"),
            answer["id"].clone(),
        )
    }

    fn updated(uri: &str) -> TxJsonRpcMessage<RoleServer> {
        serde_json::from_value(json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}))
            .expect("a notification")
    }

    /// Round 27 of review (S3): a client that subscribed and never reads. rmcp sends each
    /// message on its own task, so every change used to add a copy waiting for stdout.
    #[tokio::test]
    async fn e3_a_client_reading_nothing_holds_one_waiting_copy_of_each_notification_and_gets_each() {
        // A send that never ends fails the test at the deadline instead of stalling the suite.
        tokio::time::timeout(std::time::Duration::from_secs(60), one_waiting_copy())
            .await
            .expect("every send ended within a minute");
    }

    async fn one_waiting_copy() {
        use tokio::io::AsyncReadExt as _;
        let (mut client, out) = tokio::io::duplex(64);
        let (_client_in, input) = tokio::io::duplex(64);
        let mut transport = StdioTransport::new(input, out, 1 << 20);
        let uris = ["skill://a/SKILL.md", "skill://b/SKILL.md", "skill://c/SKILL.md"];
        let mut sends = tokio::task::JoinSet::new();
        for _round in 0..2 {
            for _change in 0..1000 {
                for uri in uris {
                    sends.spawn(transport.send(updated(uri)));
                }
            }
            // The first line's write begins and blocks: the client reads nothing. Every copy
            // beyond one writing and one waiting of each ends (skipped), however slowly the
            // tasks get to run (under Wine, 20 ms was not enough for 3,000 first polls).
            let mut done = 0;
            let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
                while sends.len() > uris.len() + 1 {
                    match sends.try_join_next() {
                        Some(sent) => {
                            sent.expect("no panic").expect("a skipped copy is not an error");
                            done += 1;
                        }
                        None => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
                    }
                }
            })
            .await;
            assert!(ended.is_ok(), "{} sends still wait", sends.len());
            assert!(lock_waiting(&transport.waiting).len() <= uris.len());
            assert!(done > 0);
        }
        // Once the client reads, it gets every notification, each of them after the last change.
        let reading = tokio::spawn(async move {
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.map(|_| got)
        });
        while let Some(sent) = sends.join_next().await {
            sent.expect("no panic").expect("written");
        }
        drop(transport);
        let got = String::from_utf8(reading.await.expect("no panic").expect("read")).expect("text");
        let lines: Vec<&str> = got.lines().collect();
        assert!(lines.len() <= 2 * uris.len() + 1, "{} lines", lines.len());
        for uri in uris {
            assert!(
                lines[lines.len().saturating_sub(uris.len() + 1)..].iter().any(|l| l.contains(uri)),
                "{uri} told after the last change"
            );
        }
    }

    #[test]
    fn e3_each_kind_of_bad_line_gets_its_json_rpc_error_and_none_quotes_the_line() {
        let cases: [(&[u8], i64, Value); 5] = [
            (b"{not json SECRET", PARSE_ERROR, Value::Null),
            (b"[1,2,3]", INVALID_REQUEST, Value::Null),
            (br#"{"jsonrpc":"2.0","id":7,"nothing":"SECRET"}"#, INVALID_REQUEST, json!(7)),
            (br#"{"jsonrpc":"1.0","id":8,"method":"ping","x":"SECRET"}"#, INVALID_REQUEST, json!(8)),
            (br#"{"jsonrpc":"2.0","id":{"o":1},"method":"ping","x":"SECRET"}"#, INVALID_REQUEST, Value::Null),
        ];
        for (line, want, id) in cases {
            let answer = read_message(line).expect_err("refused");
            assert_eq!(code(&answer), (want, id), "{}", String::from_utf8_lossy(line));
            assert!(!answer.to_string().contains("SECRET"), "{answer}");
        }
        assert!(matches!(read_message(b"  \r"), Ok(None)));
        // Params that do not fit rmcp's types still make a request: our own dispatch answers
        // it (`on_custom_request`), with -32602.
        let odd = read_message(br#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":5}}"#);
        assert!(matches!(odd, Ok(Some(JsonRpcMessage::Request(_)))), "{odd:?}");
        let ping = read_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).expect("a request");
        assert!(matches!(ping, Some(JsonRpcMessage::Request(_))));
    }
}
