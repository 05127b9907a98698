//! A [`SkillSource`](skillcache::source::SkillSource) over a `Client` of the official TypeScript SDK the host already connected:
//! `SkillCache.connectClient` (the Node twin of the Python package's `connect_session`).
//!
//! `client.js` turns the host's `Client` into a requester, `(id, method, params)`, which sends
//! one raw request through the client and settles with the `result` object as JSON text (or the
//! error, as plain data); `(id, null, null)` aborts request `id`. Every call reaches the JS
//! thread through one thread-safe function, so an abort is never run before the request it
//! aborts. The answer's size is checked against the message bound before a byte of it is copied
//! or parsed here (R-B2); the cache's request deadline applies as to any source (R-B1), and a
//! request the cache abandons (its deadline passed, or the load was aborted) is aborted on the
//! client (its `AbortSignal`), so the host's connection is not left with a request nobody waits
//! for.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{
    CallbackContext, Either, FnArgs, Function, Object, PromiseRaw, Unknown,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsString, Status};
use serde_json::Value;
use skillcache::Error;
use skillcache::source::{Change, ChangeSink, OnChange, Requests, SourceFuture};
use skillcache_binding::outcome::{Reply, answer, too_large, transport};
use tokio::sync::oneshot;

/// The requester's arguments: the request's id, then its method and params (JSON text), or two
/// `null`s to abort it.
type CallArgs = FnArgs<(u32, Option<String>, Option<String>)>;

/// What the requester's Promise settles with: the result as JSON text, or how it failed, as
/// plain data (`client.js`): `code` and `message` for a JSON-RPC error from the server,
/// `failed` for anything else (a closed connection, an abort, the SDK's timeout).
type Settled = Either<JsString<'static>, Object<'static>>;

/// The requester, as `client.js` made it: the JS function `(id, method, params)`.
pub(crate) type Requester<'env> = Function<'env, CallArgs, PromiseRaw<'static, Settled>>;

/// One call of the requester.
enum Call {
    Ask {
        id: u32,
        method: &'static str,
        params: String,
    },
    Abort(u32),
}

/// Weak: a cache holding the client's source does not keep the process alive by itself (a
/// request in flight does, through the client's own transport).
type Tsfn = ThreadsafeFunction<Call, PromiseRaw<'static, Settled>, CallArgs, Status, false, true>;

/// How a request ended, as the JS thread saw it: the shared mapping's reply.
type Outcome = Reply;

/// The sender of one request's outcome, shared by the Promise's `then` and `catch`: the first
/// to run sends.
type Sender = Arc<Mutex<Option<oneshot::Sender<Outcome>>>>;

fn send(reply: &Sender, outcome: Outcome) {
    let tx = reply
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(tx) = tx {
        // The receiver is gone only when the request was abandoned: nothing to tell.
        let _ = tx.send(outcome);
    }
}

/// Reads the requester's settled value on the JS thread: the text's size first (R-B2), from its
/// UTF-8 length, before a byte is copied.
fn settled(value: Settled, max: u64) -> napi::Result<Outcome> {
    match value {
        Either::A(text) => {
            if too_large(text.utf8_len()?, max) {
                return Ok(Outcome::TooLarge);
            }
            Ok(Outcome::Answer(text.into_utf8()?.into_owned()?))
        }
        Either::B(failure) => {
            // A field of another type reads as absent: the failure is still reported.
            let text = |key: &str| failure.get::<String>(key).ok().flatten();
            Ok(match failure.get::<i64>("code").ok().flatten() {
                Some(code) => Outcome::Server {
                    code,
                    message: text("message").unwrap_or_default(),
                },
                None => Outcome::Failed(text("failed").unwrap_or_else(|| {
                    "the client's request failed without saying why".to_owned()
                })),
            })
        }
    }
}

/// Hands the requester's Promise its continuations. Neither may fail: a failing continuation
/// would leave a rejected Promise nobody handles, which ends a Node process.
fn on_settled(promise: &PromiseRaw<'static, Settled>, reply: Sender, max: u64) -> napi::Result<()> {
    let caught = Arc::clone(&reply);
    promise
        .then(move |ctx: CallbackContext<Settled>| {
            let outcome = settled(ctx.value, max).unwrap_or_else(|e| Outcome::Failed(e.reason));
            send(&reply, outcome);
            Ok(())
        })?
        .catch(move |_: CallbackContext<Unknown<'static>>| {
            send(
                &caught,
                Outcome::Failed("the client's requester did not answer with text".to_owned()),
            );
            Ok(())
        })?;
    Ok(())
}

/// Aborts the request on the client unless its outcome was taken: dropping the Rust future (a
/// deadline, an aborted load) must not leave the request running.
struct AbortOnDrop<'a> {
    tsfn: &'a Tsfn,
    id: Option<u32>,
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // Queued behind the request itself (one thread-safe function, in order); it can
            // only fail when the JS environment is closing, and then nothing runs anyway.
            let _ = self
                .tsfn
                .call(Call::Abort(id), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// The host's client, as a source.
pub(crate) struct ClientSource {
    tsfn: Tsfn,
    next: AtomicU32,
    /// The largest answer accepted, in bytes of JSON text (R-B2).
    max_message: u64,
    /// Where the host's forwarded change notifications go (R-B5).
    on_change: ChangeSink,
}

impl ClientSource {
    pub(crate) fn new(requester: &Requester<'_>, max_message: u64) -> napi::Result<Self> {
        let tsfn = requester
            .build_threadsafe_function::<Call>()
            .weak::<true>()
            .build_callback(|ctx| {
                Ok(match ctx.value {
                    Call::Ask { id, method, params } => {
                        FnArgs::from((id, Some(method.to_owned()), Some(params)))
                    }
                    Call::Abort(id) => FnArgs::from((id, None, None)),
                })
            })?;
        Ok(ClientSource {
            tsfn,
            next: AtomicU32::new(0),
            max_message,
            on_change: ChangeSink::default(),
        })
    }

    /// Reports a change notification the host received on its client (R-B5).
    pub(crate) fn notify(&self, change: Change) {
        self.on_change.notify(change);
    }

    async fn ask(&self, method: &'static str, params: Value) -> Result<Value, Error> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let reply: Sender = Arc::new(Mutex::new(Some(tx)));
        let max = self.max_message;
        let call = Call::Ask {
            id,
            method,
            params: params.to_string(),
        };
        let status = self.tsfn.call_with_return_value(
            call,
            ThreadsafeFunctionCallMode::NonBlocking,
            move |promise, _: Env| {
                let outcome = promise.and_then(|p| on_settled(&p, Arc::clone(&reply), max));
                if let Err(e) = outcome {
                    send(&reply, Outcome::Failed(e.reason));
                }
                Ok(())
            },
        );
        if status != Status::Ok {
            return Err(transport(
                method,
                format!("the host's client cannot be called: {status}"),
            ));
        }
        let mut pending = AbortOnDrop {
            tsfn: &self.tsfn,
            id: Some(id),
        };
        let outcome = rx.await;
        // Settled on the JS thread: nothing left to abort.
        pending.id = None;
        answer(method, outcome.unwrap_or(Outcome::Gone), self.max_message)
    }
}

impl Requests for ClientSource {
    fn request(&self, method: &'static str, params: Value) -> SourceFuture<'_> {
        Box::pin(self.ask(method, params))
    }

    fn watch_changes(&self, on_change: OnChange) {
        self.on_change.set(on_change);
    }
}
