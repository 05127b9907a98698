//! A [`SkillSource`](skillcache::source::SkillSource) over a `Client` of the official TypeScript SDK the host already connected:
//! `SkillCache.connectClient` (the Node twin of the Python package's `connect_session`).
//!
//! `client.js` turns the host's `Client` into a requester factory: given this source's settle
//! function (native, held by `client.js`'s closure alone), it returns the requester
//! `(id, method, params)`, which sends one raw request through the client and calls
//! `settle(id, outcome)` with the `result` object as JSON text (or the error, as plain data);
//! `(id, null, null)` aborts request `id`. No Promise passes from JS to the addon: one the package
//! made could be handed its own `then` by a Promise hook that sees every Promise at its birth.
//! Every call reaches the JS thread through one thread-safe function, so an abort is never run
//! before the request it aborts. The answer's size is checked against the message bound before a
//! byte of it is copied or parsed here (R-B2); the cache's request deadline applies as to any
//! source (R-B1), and a request the cache abandons (its deadline passed, or the load was aborted)
//! is aborted on the client (its `AbortSignal`), so the host's connection is not left with a
//! request nobody waits for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::{Either, FnArgs, Function, Object};
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

/// What `settle` is called with: the result as JSON text, or how it failed, as plain data
/// (`client.js`): `code` and `message` for a JSON-RPC error from the server, `failed` for
/// anything else (a closed connection, an abort, the SDK's timeout).
type Settled = Either<JsString<'static>, Object<'static>>;

/// The requester, as `client.js` made it: the JS function `(id, method, params)`.
type Requester<'env> = Function<'env, CallArgs, ()>;

/// `settle(id, outcome)`: the native function the requester reports each outcome to.
type Settle<'env> = Function<'env, FnArgs<(u32, Settled)>, ()>;

/// What `connectClient` is handed (`client.js`'s `requester(client)`): called once with the
/// source's `settle`, it returns the requester.
pub(crate) type Connect<'env> = Function<'env, Settle<'env>, Requester<'env>>;

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
type Tsfn = ThreadsafeFunction<Call, (), CallArgs, Status, false, true>;

/// How a request ended, as the JS thread saw it: the shared mapping's reply.
type Outcome = Reply;

/// The requests sent and not yet settled, by id: `settle` takes each one's sender out, so a
/// second report for the same id, or one for an id never sent, changes nothing.
type Pending = Arc<Mutex<HashMap<u32, oneshot::Sender<Outcome>>>>;

fn pending(map: &Pending) -> MutexGuard<'_, HashMap<u32, oneshot::Sender<Outcome>>> {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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

/// The native `settle` of one source: reads the outcome on the JS thread and hands it to the
/// request waiting for it. It never throws: `client.js` calls it from the client's reactions.
fn settle_fn<'env>(env: &'env Env, waiting: &Pending, max: u64) -> napi::Result<Settle<'env>> {
    let waiting = Arc::clone(waiting);
    env.create_function_from_closure("settle", move |ctx| {
        let Ok(id) = ctx.get::<u32>(0) else {
            return Ok(());
        };
        let Some(tx) = pending(&waiting).remove(&id) else {
            return Ok(());
        };
        let outcome = ctx
            .get::<Settled>(1)
            .and_then(|value| settled(value, max))
            .unwrap_or_else(|_| {
                Outcome::Failed("the client's requester did not answer with text".to_owned())
            });
        // The receiver is gone only when the request was abandoned: nothing to tell.
        let _ = tx.send(outcome);
        Ok(())
    })
}

/// Aborts the request on the client unless its outcome was taken: dropping the Rust future (a
/// deadline, an aborted load) must not leave the request running.
struct AbortOnDrop<'a> {
    tsfn: &'a Tsfn,
    waiting: &'a Pending,
    id: Option<u32>,
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            pending(self.waiting).remove(&id);
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
    waiting: Pending,
    next: AtomicU32,
    /// The largest answer accepted, in bytes of JSON text (R-B2).
    max_message: u64,
    /// Where the host's forwarded change notifications go (R-B5).
    on_change: ChangeSink,
}

impl ClientSource {
    pub(crate) fn new(env: &Env, connect: &Connect<'_>, max_message: u64) -> napi::Result<Self> {
        let waiting = Pending::default();
        let requester = connect.call(settle_fn(env, &waiting, max_message)?)?;
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
            waiting,
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
        pending(&self.waiting).insert(id, tx);
        let call = Call::Ask {
            id,
            method,
            params: params.to_string(),
        };
        let status = self
            .tsfn
            .call(call, ThreadsafeFunctionCallMode::NonBlocking);
        if status != Status::Ok {
            pending(&self.waiting).remove(&id);
            return Err(transport(
                method,
                format!("the host's client cannot be called: {status}"),
            ));
        }
        let mut sent = AbortOnDrop {
            tsfn: &self.tsfn,
            waiting: &self.waiting,
            id: Some(id),
        };
        let outcome = rx.await;
        // Settled on the JS thread: nothing left to abort.
        sent.id = None;
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
