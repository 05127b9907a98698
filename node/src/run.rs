//! Every Promise of the addon is made by [`start`]: a hit never leaves the calling thread.
//!
//! A memory-tier or disk hit finishes on its first poll, and handing it to the runtime's
//! threads and back (a thread-safe call into the event loop) costs more than the hit itself.
//! So the future is first polled once here, on the JS thread, inside the runtime's context: if
//! it is ready, the Promise is made already settled. Otherwise the same, already-started future
//! goes to the runtime and settles the Promise when it ends. Polling with a waker that does
//! nothing is sound: a future registers the waker of each poll, and the runtime polls it again.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue, within_runtime_if_available};
use napi::{Env, Result};

use crate::errors;

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
    let mut fut = Box::pin(fut);
    let first = within_runtime_if_available(|| {
        let mut cx = Context::from_waker(Waker::noop());
        pin!(&mut fut).poll(&mut cx)
    });
    match first {
        Poll::Ready(Ok(value)) => PromiseRaw::resolve(env, convert(env, value)?),
        Poll::Ready(Err(e)) => PromiseRaw::reject(env, errors::object(env, &e)?),
        Poll::Pending => env.spawn_future_with_callback(async move { Ok(fut.await) }, {
            move |env, out| match out {
                Ok(value) => convert(env, value),
                Err(e) => Err(errors::throwable(env, &e)),
            }
        }),
    }
}
