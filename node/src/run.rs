//! Every Promise of the addon is made by [`start`] (or [`start_abortable`]), and every read's
//! answer by [`now_or_later`]: a hit never leaves the calling thread.
//!
//! A memory-tier or disk hit finishes on its first poll, and handing it to the runtime's
//! threads and back (a thread-safe call into the event loop) costs more than the hit itself.
//! So the future is first polled once here, on the JS thread, inside the runtime's context: if
//! it is ready, the Promise is made already settled (or, for a read, `index.js` is handed the
//! value and makes the Promise itself). Otherwise the same, already-started future
//! goes to the runtime and settles the Promise when it ends. Polling with a waker that does
//! nothing is sound: a future registers the waker of each poll, and the runtime polls it again.
//!
//! An aborted call ([`Aborter`], which `index.js` links to the host's `AbortSignal`) drops its
//! future where it stands, as a deadline does: the cache's futures leave nothing half-written
//! when dropped.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use napi::bindgen_prelude::{Either, PromiseRaw, ToNapiValue, within_runtime_if_available};
use napi::{Env, Result};
use napi_derive::napi;
use tokio::sync::watch;

use crate::errors;

/// How a call ended without its value.
enum Stop {
    Failed(skillcache::Error),
    Aborted,
}

/// Calls whose Promise was not settled on the calling thread: each went to the runtime and
/// came back through a thread-safe call (a hop). `hops()` reads it; a hit adds nothing.
static HOPS: AtomicUsize = AtomicUsize::new(0);

/// How many calls of this process went to the runtime's threads and back (the Python package's
/// `_hops()`): a memory-tier or disk hit settles on the calling thread and adds none.
// Not in the package's types: a measure for its tests and benchmark, as `_hops` in Python.
#[napi(js_name = "_hops", skip_typescript)]
pub fn hops() -> u32 {
    u32::try_from(HOPS.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
}

/// The abort of one call: `index.js` makes one for a call given `{ signal }` and calls `abort()`
/// when the signal aborts.
#[napi]
pub struct Aborter {
    aborted: watch::Sender<bool>,
}

impl Default for Aborter {
    fn default() -> Self {
        Aborter {
            aborted: watch::Sender::new(false),
        }
    }
}

#[napi]
impl Aborter {
    #[napi(constructor)]
    #[must_use]
    pub fn new() -> Self {
        Aborter::default()
    }

    /// Drops the call's future where it stands; its Promise rejects with an `AbortError`.
    #[napi]
    pub fn abort(&self) {
        self.aborted.send_replace(true);
    }

    /// Ready once aborted; never ready otherwise (the `Aborter` dropped included).
    fn until_aborted(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut aborted = self.aborted.subscribe();
        async move {
            if aborted.wait_for(|a| *a).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// `fut` as a Promise of `convert(its value)`; its error rejects as the matching error class.
pub(crate) fn start<'env, T, V, F, C>(
    env: &'env Env,
    fut: F,
    convert: C,
) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, skillcache::Error>> + Send + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    begin(env, async move { fut.await.map_err(Stop::Failed) }, convert)
}

/// [`start`], and with an `aborter`, the future is dropped when it aborts (checked before the
/// first poll too: a call made with an aborted signal starts nothing) and the Promise rejects
/// with an `AbortError`.
pub(crate) fn start_abortable<'env, T, V, F, C>(
    env: &'env Env,
    fut: F,
    convert: C,
    aborter: Option<&Aborter>,
) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, skillcache::Error>> + Send + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    match aborter {
        None => start(env, fut, convert),
        Some(aborter) => begin(env, abortable(fut, aborter), convert),
    }
}

fn begin<'env, T, V, F, C>(env: &'env Env, fut: F, convert: C) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, Stop>> + Send + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    match poll_first(fut) {
        First::Ready(Ok(value)) => PromiseRaw::resolve(env, convert(env, value)?),
        First::Ready(Err(stop)) => PromiseRaw::reject(env, rejection(env, &stop)?),
        First::Pending(fut) => later(env, fut, convert),
    }
}

/// [`start_abortable`] for a method that `index.js` wraps, which makes the Promise itself: the
/// value, converted by `now`, is returned at once when the first poll answered it (an error is
/// thrown); otherwise a Promise of it, converted by `later`. Making a Promise in JS, and no
/// wrapped object, is what lets a hit cost what `docs/performance.md` (J3) measures.
pub(crate) fn now_or_later<'env, T, N, V, F, CN, CL>(
    env: &'env Env,
    fut: F,
    now: CN,
    later_convert: CL,
    aborter: Option<&Aborter>,
) -> Result<Either<N, PromiseRaw<'env, V>>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, skillcache::Error>> + Send + 'static,
    CN: FnOnce(&'env Env, T) -> Result<N>,
    CL: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    let first = match aborter {
        None => poll_first(async move { fut.await.map_err(Stop::Failed) }).boxed(),
        Some(aborter) => poll_first(abortable(fut, aborter)).boxed(),
    };
    match first {
        First::Ready(Ok(value)) => Ok(Either::A(now(env, value)?)),
        First::Ready(Err(stop)) => Err(napi::Error::from(rejection(env, &stop)?)),
        First::Pending(fut) => Ok(Either::B(later(env, fut, later_convert)?)),
    }
}

/// `fut`, ended early (with [`Stop::Aborted`]) when `aborter` aborts — checked before `fut` on
/// every poll, the first included: a call made with an aborted signal starts nothing.
fn abortable<T, F>(
    fut: F,
    aborter: &Aborter,
) -> std::pin::Pin<Box<dyn Future<Output = std::result::Result<T, Stop>> + Send>>
where
    T: Send + 'static,
    F: Future<Output = std::result::Result<T, skillcache::Error>> + Send + 'static,
{
    let mut abort = Box::pin(aborter.until_aborted());
    let mut fut = Box::pin(fut);
    Box::pin(poll_fn(move |cx| {
        if abort.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(Stop::Aborted));
        }
        fut.as_mut().poll(cx).map(|r| r.map_err(Stop::Failed))
    }))
}

/// What the first poll, on the calling thread, gave.
enum First<T, F: ?Sized> {
    Ready(std::result::Result<T, Stop>),
    /// Not done: the same, already-started future, to finish on the runtime.
    Pending(std::pin::Pin<Box<F>>),
}

impl<T: Send + 'static, F: Future<Output = std::result::Result<T, Stop>> + Send + 'static>
    First<T, F>
{
    /// The same, its future's type erased: what either kind of call gave, as one type.
    fn boxed(self) -> First<T, dyn Future<Output = std::result::Result<T, Stop>> + Send> {
        match self {
            First::Ready(r) => First::Ready(r),
            First::Pending(fut) => First::Pending(fut),
        }
    }
}

/// Polls `fut` once here, inside the runtime's context, with a waker that does nothing (the
/// runtime registers its own when it polls again).
fn poll_first<T, F>(fut: F) -> First<T, F>
where
    F: Future<Output = std::result::Result<T, Stop>>,
{
    let mut fut = Box::pin(fut);
    let first = within_runtime_if_available(|| {
        let mut cx = Context::from_waker(Waker::noop());
        pin!(&mut fut).poll(&mut cx)
    });
    match first {
        Poll::Ready(r) => First::Ready(r),
        Poll::Pending => First::Pending(fut),
    }
}

/// The Promise of a future the first poll did not finish: it goes to the runtime (a hop) and
/// settles the Promise when it ends.
fn later<'env, T, V, F, C>(
    env: &'env Env,
    fut: std::pin::Pin<Box<F>>,
    convert: C,
) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, Stop>> + Send + ?Sized + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    HOPS.fetch_add(1, Ordering::Relaxed);
    env.spawn_future_with_callback(async move { Ok(fut.await) }, {
        move |env, out| match out {
            Ok(value) => convert(env, value),
            Err(stop) => Err(match rejection(env, &stop) {
                Ok(obj) => napi::Error::from(obj),
                Err(failed) => failed,
            }),
        }
    })
}

fn rejection<'env>(env: &'env Env, stop: &Stop) -> Result<napi::bindgen_prelude::Unknown<'env>> {
    match stop {
        Stop::Failed(e) => errors::object(env, e),
        Stop::Aborted => errors::aborted(env),
    }
}
