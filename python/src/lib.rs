//! The `skillcache._skillcache` extension module: the Rust host API of `skillcache` as asyncio
//! (Y1). The `skillcache` Python package re-exports it with its exception classes
//! (`skillcache/_errors.py`) and the session bridge (`skillcache/_session.py`).
//!
//! The layers: `cache` (the `SkillCache` and `LoadedSkill` classes), `catalog` (the `Catalog`
//! of every bound origin), `types` (the values they hand out), `lockfile`, `session` (a `SkillSource` over the host's own MCP session),
//! `errors` (every `skillcache::Error` as a Python exception) and `json`.
//!
//! The classes' asynchronous calls are not coroutines here: each native method starts its call
//! and hands back either its result (answered on the calling thread, [`start`]) or an asyncio
//! future that the runtime finishes ([`spawn`], [`Pending`]). The package's `async def` methods
//! (`skillcache/_cache.py`) call them once awaited, inside the running loop, so a coroutine can
//! be made before any loop exists (N3).

mod cache;
mod catalog;
mod errors;
mod fork;
mod json;
mod lockfile;
mod session;
mod text;
mod types;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

/// The module's futures still running on the tokio runtime (see [`spawn`]).
pub(crate) static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How many calls went to the runtime since the module was loaded (every [`spawn`]): a hit that
/// [`start`] answers on the calling thread adds nothing. The tests read it (`_hops`).
static HOPS: AtomicU64 = AtomicU64::new(0);

/// Counts one future from its creation until it is finished or dropped.
struct InFlight;

impl InFlight {
    fn new() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `fut` as an asyncio awaitable, run on the tokio runtime and counted while it runs. Every
/// awaitable of the module is made here, so the exit hook ([`_quiesce`]) knows when none is
/// left to hand a result back.
pub(crate) fn spawn<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: std::future::Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    // This process's runtime (a forked child's own, fork.rs), entered so that the bridge's
    // spawn goes to it.
    let _context = fork::runtime(py)?.enter();
    let counted = InFlight::new();
    HOPS.fetch_add(1, Ordering::Relaxed);
    pyo3_async_runtimes::generic::future_into_py::<fork::Rt, _, _>(py, async move {
        let out = fut.await;
        drop(counted);
        out
    })
}

/// `fut` answered on the calling thread when it can be, else finished on the runtime (T4).
///
/// The future is polled once here, with the GIL released and inside the runtime's context: the
/// library's hit paths (`LoadedSkill::read`, `SkillCache::load`) answer a memory-tier hit and a
/// small stored hit (at most `QUICK_HIT_MAX_BYTES`, 64 KiB a call, read and re-hashed or checked
/// against its evidence) within that poll, without a blocking hop; anything else — a miss, a
/// larger file, an index query, a request — makes the future wait on the runtime, and the
/// future, so far along, goes on there ([`spawn`]). So a hit is the result itself, and the event
/// loop's thread is held at most for what the library does on its caller's thread: reading and
/// hashing up to 64 KiB (a 16 MiB file is hashed on the runtime's blocking threads).
///
/// The poll's waker does nothing, which is sound because a future that waits is never left
/// waiting on it: it is handed to the runtime at once, which polls it again unconditionally (a
/// spawned task is scheduled to run once whatever its wakers do), and that poll registers the
/// runtime's waker wherever the first one was — tokio's join handles (`spawn_blocking`),
/// channels, timers, `Notify` and semaphores replace a waker they hold that would not wake the
/// same task. A wake that came between the two polls is not lost: each of them looks at its
/// state when polled, not only when woken. Cancelling the asyncio future drops the future on the
/// runtime (`pyo3_async_runtimes`), as for any [`spawn`]ed call.
pub(crate) fn start<F, T>(py: Python<'_>, fut: F) -> PyResult<Py<PyAny>>
where
    F: std::future::Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let mut fut = Box::pin(fut);
    let runtime = fork::runtime(py)?;
    let first = py.detach(|| {
        let _context = runtime.enter();
        fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    });
    match first {
        Poll::Ready(out) => out?.into_py_any(py),
        Poll::Pending => {
            let future = spawn(py, fut)?.unbind();
            Ok(Py::new(py, Pending { future })?.into_any())
        }
    }
}

/// The rest of a call that [`start`] could not answer on the calling thread: awaiting it awaits
/// the asyncio future the runtime finishes. The package's coroutines await it; a result is never
/// one, so `type(r) is Pending` tells the two apart.
#[pyclass(module = "skillcache._skillcache", name = "Pending", frozen)]
pub(crate) struct Pending {
    future: Py<PyAny>,
}

#[pymethods]
impl Pending {
    fn __await__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.future.bind(py).call_method0("__await__")
    }
}

/// Runs the `skillcache` command line — the binary's own code, `skillcache_cli::run` — with
/// `argv` (the program's name first) and returns its exit code: the package's `skillcache`
/// console script (`skillcache/_cli.py`). The GIL is released for the whole command.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(move || skillcache_cli::run(argv))
}

/// How many calls went to the runtime so far (see [`HOPS`]). For the tests; not part of the API.
#[pyfunction]
fn _hops() -> u64 {
    HOPS.load(Ordering::Relaxed)
}

/// How many of the module's futures are on the runtime now (see [`IN_FLIGHT`]): a cancelled
/// call's future is dropped, so the tests see it leave. Not part of the API.
#[pyfunction]
fn _in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Registered with `atexit` by the package: a tokio thread that hands a result back to Python
/// takes the GIL, and if the interpreter is finalizing by then the process aborts
/// (`PyGILState_Release: thread state … must be current`, pyo3-async-runtimes#40). Before
/// finalizing, this waits — with the GIL released, so those threads can finish — until no
/// future of the module is running (at most 2 s: a future a dead event loop abandoned may never
/// end), then a moment longer for the last hand-off, which follows its future's end at once.
#[pyfunction]
fn _quiesce(py: Python<'_>) {
    // What loads handed to the caches' keepers is stored before the process goes (a cache the
    // interpreter never drops would otherwise lose it: a miss next time, never a wrong byte).
    py.detach(|| {
        let _ = skillcache::SkillCache::flush_all(Duration::from_secs(10));
    });
    if HOPS.load(Ordering::Relaxed) == 0 || !fork::started_here(py) {
        // Nothing ever ran on the runtime (the `skillcache` command, a process that only read
        // hits), or on this process's (a child forked from one that did): no hand-off to wait
        // for.
        return;
    }
    py.detach(|| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
    });
}

/// An awaitable that does nothing: the bare cost of awaiting one of this module's futures
/// (`python/bench/bench.py` measures it beside a warm read). Not part of the API.
#[pyfunction]
fn _ready(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    spawn(py, async { Ok(()) })
}

#[pymodule]
fn _skillcache(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::take_classes(m.py())?;
    m.add_function(wrap_pyfunction!(_ready, m)?)?;
    m.add_function(wrap_pyfunction!(_quiesce, m)?)?;
    m.add_function(wrap_pyfunction!(fork::_before_fork, m)?)?;
    m.add_function(wrap_pyfunction!(fork::_after_fork_in_parent, m)?)?;
    m.add_function(wrap_pyfunction!(fork::_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_hops, m)?)?;
    m.add_function(wrap_pyfunction!(_in_flight, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_kinds, m)?)?;
    m.add_class::<Pending>()?;
    m.add_class::<cache::PySkillCache>()?;
    m.add_class::<cache::PyLoadedSkill>()?;
    m.add_class::<catalog::PyCatalog>()?;
    m.add_class::<catalog::PyCatalogSkill>()?;
    m.add_class::<types::PySkillEntry>()?;
    m.add_class::<types::PyManifestFile>()?;
    m.add_class::<types::PyEntryInfo>()?;
    m.add_class::<types::PyEntryDiff>()?;
    m.add_class::<types::PySkillFile>()?;
    m.add_class::<lockfile::PyLockFile>()?;
    m.add_class::<lockfile::PyLockedSkill>()?;
    Ok(())
}
