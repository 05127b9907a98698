//! A [`SkillSource`](skillcache::source::SkillSource) over an MCP session the Python host already holds (the official SDK's
//! `mcp.ClientSession`, or anything with its `send_request`): `SkillCache.connect_session`.
//!
//! Each request runs as a coroutine on the host's own event loop (`skillcache._session.ask`,
//! scheduled with `asyncio.run_coroutine_threadsafe`), which hands back the raw `result` as JSON
//! text. The answer's size is checked against the message bound before any of it is parsed here
//! (R-B2); the cache's request deadline applies as to any source (R-B1), and a request the
//! cache abandons (its deadline passed, or the load was cancelled) is cancelled on the loop, so
//! the host's session is not left with a request nobody waits for.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use serde_json::Value;
use skillcache::Error;
use skillcache::source::{Change, ChangeSink, OnChange, Requests, SourceFuture};
use skillcache_binding::outcome::{Reply, answer, too_large, transport};
use skillcache_binding::report::SERVER_TEXT_MAX;
use tokio::sync::oneshot;

/// How a request on the host's loop ended.
enum Outcome {
    /// The `result` object, as JSON text (a Python `str`, read after the size check).
    Answer(Py<PyAny>),
    /// The server answered with a JSON-RPC error.
    Server { code: i64, message: String },
    /// Anything else the session raised (a closed connection, a result the SDK refused).
    Failed(String),
    /// The task was cancelled on the loop (the host is shutting its session down).
    Cancelled,
}

/// The callback the loop calls when the request's future is done: it reads the outcome and hands
/// it to the waiting Rust future.
#[pyclass(frozen)]
struct Done {
    tx: Mutex<Option<oneshot::Sender<Outcome>>>,
}

#[pymethods]
impl Done {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        let outcome = outcome(future).unwrap_or_else(|e| Outcome::Failed(e.to_string()));
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(tx) = tx {
            // The receiver is gone only when the request was abandoned: nothing to tell.
            let _ = tx.send(outcome);
        }
    }
}

fn outcome(future: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    if future.call_method0("cancelled")?.is_truthy()? {
        return Ok(Outcome::Cancelled);
    }
    let exception = future.call_method0("exception")?;
    if exception.is_none() {
        return Ok(Outcome::Answer(future.call_method0("result")?.unbind()));
    }
    // The SDK's `MCPError` carries the JSON-RPC error as `.error` (`code`, `message`).
    if let Ok(error) = exception.getattr("error")
        && let (Ok(code), Ok(message)) = (
            error.getattr("code").and_then(|c| c.extract::<i64>()),
            error.getattr("message").and_then(|m| shown(&m)),
        )
    {
        return Ok(Outcome::Server { code, message });
    }
    let name = exception.get_type().name()?.to_string();
    Ok(Outcome::Failed(format!(
        "{name}: {}",
        shown(exception.str()?.as_any())?
    )))
}

/// A server's or the session's own text as a report shows it: a lone surrogate (a JSON
/// `\ud800` escape the host's session kept) replaced by U+FFFD, as this text only describes a
/// failure and names nothing, and cut to [`SERVER_TEXT_MAX`] characters (with an ellipsis), so
/// however much a server sent, no report holds more of it.
fn shown(text: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = text.cast::<PyString>()?.to_string_lossy();
    let mut cut: String = text.chars().take(SERVER_TEXT_MAX).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    Ok(cut)
}

/// Cancels the request's future on the host's loop unless the answer was taken: dropping the
/// Rust future (a deadline, a cancelled load) must not leave the request running.
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(future) = self.0.take() {
            Python::attach(|py| {
                // `concurrent.futures.Future.cancel` is thread-safe and cancels the task on its
                // loop; it can only fail if the loop is gone, and then nothing runs anyway.
                let _ = future.call_method0(py, "cancel");
            });
        }
    }
}

/// The host's session, as a source.
pub(crate) struct SessionSource {
    /// `skillcache._session.ask`.
    ask: Py<PyAny>,
    session: Py<PyAny>,
    /// The loop that runs the session: every request is scheduled on it.
    event_loop: Py<PyAny>,
    /// The largest answer accepted, in bytes of JSON text (R-B2).
    max_message: u64,
    /// Where the host's forwarded change notifications go (R-B5).
    on_change: ChangeSink,
}

impl SessionSource {
    pub(crate) fn new(
        py: Python<'_>,
        session: Py<PyAny>,
        max_message: u64,
    ) -> PyResult<SessionSource> {
        let ask = py.import("skillcache._session")?.getattr("ask")?.unbind();
        let event_loop = py
            .import("asyncio")?
            .call_method0("get_running_loop")
            .map_err(|e| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "connect_session must be called from the event loop that runs the session: {e}"
                ))
            })?
            .unbind();
        Ok(SessionSource {
            ask,
            session,
            event_loop,
            max_message,
            on_change: ChangeSink::default(),
        })
    }

    /// Reports a change notification the host received on its session (R-B5).
    pub(crate) fn notify(&self, change: Change) {
        self.on_change.notify(change);
    }

    /// Schedules `ask(session, method, params)` on the host's loop.
    fn schedule(
        &self,
        method: &'static str,
        params: &Value,
    ) -> PyResult<(Py<PyAny>, oneshot::Receiver<Outcome>)> {
        static RUN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        Python::attach(|py| {
            let run = RUN.get_or_try_init(py, || {
                Ok::<_, PyErr>(
                    py.import("asyncio")?
                        .getattr("run_coroutine_threadsafe")?
                        .unbind(),
                )
            })?;
            let coroutine = self
                .ask
                .call1(py, (self.session.clone_ref(py), method, params.to_string()))?;
            let future = run.call1(py, (coroutine, self.event_loop.clone_ref(py)))?;
            let (tx, rx) = oneshot::channel();
            let done = Py::new(
                py,
                Done {
                    tx: Mutex::new(Some(tx)),
                },
            )?;
            future.call_method1(py, "add_done_callback", (done,))?;
            Ok((future, rx))
        })
    }

    async fn ask(&self, method: &'static str, params: Value) -> Result<Value, Error> {
        let (future, rx) = self
            .schedule(method, &params)
            .map_err(|e| transport(method, e.to_string()))?;
        let mut pending = CancelOnDrop(Some(future));
        let outcome = rx.await;
        // Answered (or failed) on the loop: nothing left to cancel.
        pending.0 = None;
        let reply = match outcome {
            // R-B2: the size first, from the string's length (`ask` writes ASCII-only JSON, so
            // characters are bytes), before a byte of it is copied or parsed.
            Ok(Outcome::Answer(text)) => Python::attach(|py| {
                let text = text.bind(py).cast::<PyString>().map_err(PyErr::from)?;
                if too_large(text.len()?, self.max_message) {
                    return Ok(Reply::TooLarge);
                }
                text.to_str().map(|s| Reply::Answer(s.to_owned()))
            })
            .map_err(|e: PyErr| transport(method, e.to_string()))?,
            Ok(Outcome::Server { code, message }) => Reply::Server { code, message },
            Ok(Outcome::Failed(why)) => Reply::Failed(why),
            Ok(Outcome::Cancelled) => Reply::Cancelled,
            Err(_) => Reply::Gone,
        };
        answer(method, reply, self.max_message)
    }
}

impl Requests for SessionSource {
    fn request(&self, method: &'static str, params: Value) -> SourceFuture<'_> {
        Box::pin(self.ask(method, params))
    }

    fn watch_changes(&self, on_change: OnChange) {
        self.on_change.set(on_change);
    }
}

/// A session source shared between the cache (as its `SkillSource`) and the Python handle that
/// forwards notifications to it.
pub(crate) type Shared = Arc<SessionSource>;
