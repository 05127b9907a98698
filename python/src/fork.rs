//! The runtime a process's calls run on, and what a forked child may use (B4).
//!
//! A child forked after the parent used skillcache (gunicorn, `multiprocessing` with the fork
//! start method) inherits the parent's memory but only the thread that forked: the tokio
//! runtime's workers, timers and blocking threads are gone, so a call handed to the parent's
//! runtime would wait forever, past any deadline (a timer needs a worker to fire). It inherits
//! the parent's open SQLite connection and lock-file descriptors too, which a child must never
//! use or close (SQLite: "do not carry an open database connection across a fork"; closing an
//! inherited descriptor drops POSIX locks the child's own connection to the same file holds).
//!
//! So:
//! - every process has its own runtime ([`runtime`]): a call made in a forked child starts one
//!   afresh, and the parent's (its threads gone) is leaked, never dropped — dropping it would
//!   wait for threads this process does not have;
//! - what a process opened is [`Owned`] by it: used from another process (the forked child) it
//!   raises at once, saying how to open a cache in the child, and it is leaked rather than
//!   dropped there, so the child never closes the parent's database connection or descriptors.
//!   A `SkillCache` opened in the child is the child's own, with its own connection, threads,
//!   memory tier and servers, and its deadlines hold.

use std::pin::Pin;
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use pyo3_async_runtimes::generic::{ContextExt, Runtime as GenericRuntime};
use tokio::runtime::{Handle, Runtime};

/// The runtime of the process that made it.
struct Current {
    pid: u32,
    runtime: &'static Runtime,
}

/// This process's runtime. Locked only with the GIL held (every caller holds a `Python` token
/// and does not release the GIL while it holds the lock), so no other thread can hold it when
/// `os.fork()` runs — the forking thread holds the GIL — and a child never finds it locked by a
/// thread it does not have. The runtime's own threads never lock it: their tasks use
/// [`Handle::current`].
static CURRENT: Mutex<Option<Current>> = Mutex::new(None);

/// The runtime of this process, started on first use (again in a forked child).
pub(crate) fn runtime(_py: Python<'_>) -> PyResult<&'static Runtime> {
    let pid = std::process::id();
    let mut current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(c) = current.as_ref()
        && c.pid == pid
    {
        return Ok(c.runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("skillcache")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start skillcache's threads: {e}")))?;
    // Leaked: a process keeps its runtime until it exits. The one this replaces, a forked
    // parent's, is leaked with it (see the module's documentation).
    let runtime: &'static Runtime = Box::leak(Box::new(runtime));
    if current.is_some() {
        // A forked child: the parent's futures counted at the fork never end here, and the exit
        // hook must not wait for them.
        crate::IN_FLIGHT.store(0, std::sync::atomic::Ordering::SeqCst);
    }
    *current = Some(Current { pid, runtime });
    Ok(runtime)
}

/// Whether this process started a runtime (a forked child whose parent did has not, until its
/// first call).
pub(crate) fn started_here(_py: Python<'_>) -> bool {
    let current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    current
        .as_ref()
        .is_some_and(|c| c.pid == std::process::id())
}

/// The runtime `pyo3_async_runtimes` runs the module's futures on: this process's ([`runtime`]),
/// where `pyo3_async_runtimes::tokio` would keep one runtime for the life of the module, and
/// hand a forked child the parent's, whose threads it does not have.
pub(crate) struct Rt;

tokio::task_local! {
    /// The asyncio loop and context of the call a task runs for (`pyo3_async_runtimes`).
    static LOCALS: TaskLocals;
}

/// The runtime a spawn from the current thread goes to: the one it runs on (a task of the
/// runtime, or a caller that entered it, as [`crate::spawn`] does), else this process's.
fn handle() -> Handle {
    Handle::try_current().unwrap_or_else(|_| {
        Python::attach(|py| runtime(py).map(|r| r.handle().clone()))
            .unwrap_or_else(|e| panic!("skillcache has no runtime to run a call on: {e}"))
    })
}

impl GenericRuntime for Rt {
    type JoinError = tokio::task::JoinError;
    type JoinHandle = tokio::task::JoinHandle<()>;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        handle().spawn(fut)
    }

    fn spawn_blocking<F>(f: F) -> Self::JoinHandle
    where
        F: FnOnce() + Send + 'static,
    {
        handle().spawn_blocking(f)
    }
}

impl ContextExt for Rt {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        Box::pin(LOCALS.scope(locals, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        LOCALS.try_with(Clone::clone).ok()
    }
}

/// A value that belongs to the process that made it: a `SkillCache`'s handle on the library,
/// or a loaded skill's (each holds the database connection, the lock file and the servers).
pub(crate) struct Owned<T> {
    pid: u32,
    /// Always `Some` until dropped; taken on drop in another process, and forgotten.
    value: Option<T>,
}

impl<T> Owned<T> {
    pub(crate) fn new(value: T) -> Owned<T> {
        Owned {
            pid: std::process::id(),
            value: Some(value),
        }
    }

    /// The value in any process, for what reads only the value's own memory (a loaded skill's
    /// entry, a cache's root): nothing of it is shared with the parent but that memory.
    pub(crate) fn peek(&self) -> PyResult<&T> {
        self.value
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("this object is being dropped"))
    }

    /// The value, in the process that made it; in a forked child, a `RuntimeError` that says
    /// what to do instead (`then`: "open a new `SkillCache` …").
    pub(crate) fn get(&self, what: &str, then: &str) -> PyResult<&T> {
        let now = std::process::id();
        match &self.value {
            Some(value) if self.pid == now => Ok(value),
            _ => Err(PyRuntimeError::new_err(format!(
                "this {what} belongs to process {}, and this process ({now}) is a child forked \
                 from it: a cache does not survive a fork (its threads are gone, and its database \
                 and server connections stay the parent's); {then}",
                self.pid
            ))),
        }
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            // A forked child's copy: dropping it would close the parent's database connection
            // and descriptors from the child (see the module's documentation).
            std::mem::forget(self.value.take());
        }
    }
}

/// How long a fork waits for index work already under way in other threads (see
/// [`_before_fork`]): a `purge`'s rewrite of a large index is the longest.
const FORK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// `os.register_at_fork(before=...)`: closes the library's fork gate, so that no thread is
/// inside SQLite at the instant the child is made (a lock a parent thread held then would stay
/// held in the child forever, and its own `SkillCache` would hang opening the index). New index
/// work waits; work under way gets [`FORK_WAIT`] to end. The threads inside never need the GIL,
/// so waiting with it held cannot deadlock.
#[pyfunction]
pub(crate) fn _before_fork() -> bool {
    skillcache::SkillCache::before_fork(FORK_WAIT)
}

/// `os.register_at_fork(after_in_parent=...)`: the parent's index work goes on.
#[pyfunction]
pub(crate) fn _after_fork_in_parent() {
    skillcache::SkillCache::after_fork(false);
}

/// `os.register_at_fork(after_in_child=...)`: the child's own caches may use the index.
#[pyfunction]
pub(crate) fn _after_fork_in_child() {
    skillcache::SkillCache::after_fork(true);
}
