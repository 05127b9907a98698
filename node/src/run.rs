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
//!
//! Every value a call settles with is frozen, deep, before any JS sees it ([`frozen`]): a Promise
//! hook (`v8.promiseHooks`, `async_hooks`) is handed each Promise at its birth and may register a
//! reaction of its own that runs before anyone else's, which could otherwise write into the
//! value (swap a skill's files for another origin's, define an own `read` on a `LoadedSkill`).
//! And a call whose Promise `index.js` waits on (it unpacks or paces the answer) settles
//! [`Settles::Pair`]: always fulfilled, so one `index.js` must refuse to wait on (a hook altered
//! it) never rejects unobserved, which would end the process.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use napi::bindgen_prelude::{
    Either, FromNapiValue, JsObjectValue, JsValue, KeyCollectionMode, KeyConversion, KeyFilter,
    Null, Object, PromiseRaw, ToNapiValue, Unknown, within_runtime_if_available,
};
use napi::{Env, Result, ValueType};
use napi_derive::napi;
use tokio::sync::watch;

use crate::errors;

/// How a call's Promise settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settles {
    /// As the host sees it: fulfilled with the value, or rejected with the error.
    Plain,
    /// For `index.js`, which unpacks it: always fulfilled, with `[true, value]` or
    /// `[false, error]` (frozen), `[false, null]` for an abort.
    Pair,
}

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
    let promise = begin(
        env,
        async move { fut.await.map_err(Stop::Failed) },
        convert,
        Settles::Plain,
    )?;
    Ok(retyped(env, &promise))
}

/// [`start`], and with an `aborter`, the future is dropped when it aborts (checked before the
/// first poll too: a call made with an aborted signal starts nothing) and the call ends with an
/// `AbortError`. Settled as `settles` says.
pub(crate) fn start_abortable<'env, T, V, F, C>(
    env: &'env Env,
    fut: F,
    convert: C,
    aborter: Option<&Aborter>,
    settles: Settles,
) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, skillcache::Error>> + Send + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    let promise = match aborter {
        None => begin(
            env,
            async move { fut.await.map_err(Stop::Failed) },
            convert,
            settles,
        )?,
        Some(aborter) => begin(env, abortable(fut, aborter), convert, settles)?,
    };
    Ok(retyped(env, &promise))
}

/// `promise`, typed as the value it settles with before [`frozen`] made that an `Unknown`: what
/// the package's type definitions say the method returns.
fn retyped<'env, V>(
    env: &'env Env,
    promise: &PromiseRaw<'env, Unknown<'env>>,
) -> PromiseRaw<'env, V> {
    PromiseRaw::new(env.raw(), promise.raw())
}

/// The most levels of a settled value [`frozen`] walks: the deepest the addon makes is a lock
/// check's drift (report → drift → file → change), far within it.
const FREEZE_DEPTH: u32 = 16;

/// `value` as JS, frozen with every object and array it holds (own properties, to
/// [`FREEZE_DEPTH`] levels): what a call settles with cannot be written to by a hook that reacts
/// to the call's Promise before the host does.
fn frozen<V: ToNapiValue>(env: &Env, value: V) -> Result<Unknown<'_>> {
    let value = value.into_unknown(env)?;
    freeze(value, 0)?;
    Ok(value)
}

fn freeze(value: Unknown<'_>, depth: u32) -> Result<()> {
    if depth > FREEZE_DEPTH || value.get_type()? != ValueType::Object {
        return Ok(());
    }
    let mut object = Object::from_unknown(value)?;
    object.freeze()?;
    let names = object.get_all_property_names(
        KeyCollectionMode::OwnOnly,
        KeyFilter::SkipSymbols,
        KeyConversion::NumbersToStrings,
    )?;
    for i in 0..names.get_array_length_unchecked()? {
        let name: String = names.get_element(i)?;
        // An error's `stack` is V8's own accessor, which runs the host's
        // `Error.prepareStackTrace` when first read: never read here (it holds a string).
        if name == "stack" {
            continue;
        }
        freeze(
            object.get_named_property_unchecked::<Unknown>(&name)?,
            depth + 1,
        )?;
    }
    Ok(())
}

/// `[ok, value]`, frozen: what a [`Settles::Pair`] call is fulfilled with.
fn pair<'env>(env: &'env Env, ok: bool, value: Unknown<'env>) -> Result<Unknown<'env>> {
    let ok = ok.into_unknown(env)?;
    let out = crate::defined::unthenable(env, vec![ok, value])?;
    Object::from_unknown(out)?.freeze()?;
    Ok(out)
}

/// What a call that ended without its value settles with: the error, frozen.
fn stopped<'env>(env: &'env Env, stop: &Stop) -> Result<Unknown<'env>> {
    let error = rejection(env, stop)?;
    freeze(error, 0)?;
    Ok(error)
}

fn begin<'env, T, V, F, C>(
    env: &'env Env,
    fut: F,
    convert: C,
    settles: Settles,
) -> Result<PromiseRaw<'env, Unknown<'env>>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, Stop>> + Send + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    match poll_first(fut) {
        First::Ready(out) => {
            let value = settled(env, out, convert, settles)?;
            match value {
                Ok(value) => PromiseRaw::resolve(env, value),
                Err(error) => PromiseRaw::reject(env, error),
            }
        }
        First::Pending(fut) => later(env, fut, convert, settles),
    }
}

/// What a call that ended settles with: `Ok` to fulfil, `Err` to reject (only
/// [`Settles::Plain`] rejects).
fn settled<'env, T, V, C>(
    env: &'env Env,
    out: std::result::Result<T, Stop>,
    convert: C,
    settles: Settles,
) -> Result<std::result::Result<Unknown<'env>, Unknown<'env>>>
where
    V: ToNapiValue + 'env,
    C: FnOnce(&'env Env, T) -> Result<V>,
{
    Ok(match (out, settles) {
        (Ok(value), Settles::Plain) => Ok(frozen(env, convert(env, value)?)?),
        (Ok(value), Settles::Pair) => Ok(pair(env, true, frozen(env, convert(env, value)?)?)?),
        (Err(stop), Settles::Plain) => Err(stopped(env, &stop)?),
        // An abort is `[false, null]`: `index.js` makes the `AbortError` itself, with the
        // signal's reason, so no error a hook could have been shown is the one the host gets.
        (Err(Stop::Aborted), Settles::Pair) => Ok(pair(env, false, Null.into_unknown(env)?)?),
        (Err(stop), Settles::Pair) => Ok(pair(env, false, stopped(env, &stop)?)?),
    })
}

/// [`start_abortable`] for a method that `index.js` wraps, which makes the Promise itself: the
/// value, converted by `now`, is returned at once when the first poll answered it (an error is
/// thrown); otherwise a [`Settles::Pair`] Promise of it, converted by `later`. Making a Promise in JS, and no
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
        First::Ready(Err(stop)) => Err(napi::Error::from(stopped(env, &stop)?)),
        First::Pending(fut) => Ok(Either::B(retyped(
            env,
            &later(env, fut, later_convert, Settles::Pair)?,
        ))),
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
    settles: Settles,
) -> Result<PromiseRaw<'env, Unknown<'env>>>
where
    T: Send + 'static,
    V: ToNapiValue + 'env,
    F: Future<Output = std::result::Result<T, Stop>> + Send + ?Sized + 'static,
    C: FnOnce(&'env Env, T) -> Result<V> + 'static,
{
    HOPS.fetch_add(1, Ordering::Relaxed);
    env.spawn_future_with_callback(async move { Ok(fut.await) }, {
        move |env, out| match settled(env, out, convert, settles)? {
            Ok(value) => Ok(value),
            Err(error) => Err(napi::Error::from(error)),
        }
    })
}

fn rejection<'env>(env: &'env Env, stop: &Stop) -> Result<napi::bindgen_prelude::Unknown<'env>> {
    match stop {
        Stop::Failed(e) => errors::object(env, e),
        Stop::Aborted => errors::aborted(env),
    }
}
