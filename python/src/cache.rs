//! The native halves of `skillcache.SkillCache` and `skillcache.LoadedSkill` (whose `async def`
//! methods are in `skillcache/_cache.py`): the host API for asyncio.
//!
//! Each asynchronous call starts the Rust method's future and hands back what the package's
//! coroutine awaits. `load`, `load_all`, `read` and `read_all` are first polled on the calling
//! thread with the GIL released ([`crate::start`]): a hit the memory tier or a small stored copy
//! answers is the result itself, with no hop (T4). Everything else — and whatever of those four
//! must wait (a miss, a larger file, the index, the server) — runs on the package's tokio
//! runtime (`pyo3_async_runtimes`) as an asyncio future ([`crate::spawn`]), and the Rust work
//! never holds the GIL (Y1). The few synchronous calls that touch the disk (opening the cache)
//! release the GIL while they do.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList};
use skillcache::entry::Limits;
use skillcache::source::{Change, message_bound};
use skillcache::{Error, Origin, SkillCache, SkillUri};
use skillcache_binding::connect;
use skillcache_binding::options::{Case, Number, Options, Spelling, Stderr};

use crate::catalog::PyCatalog;
use crate::errors::{as_value, raise, to_py_err};
use crate::fork::Owned;
use crate::json;
use crate::lockfile::PyLockFile;
use crate::session::{SessionSource, Shared};
use crate::text::{self, Label, Reference, Text};
use crate::types::{Loaded, PyEntryInfo, PySkillEntry, PySkillFile, py_repr};

fn skill_uri(uri: Reference) -> PyResult<SkillUri> {
    let Reference(uri) = uri;
    SkillUri::parse(&uri).map_err(|e| to_py_err(&Error::Uri(e)))
}

fn err(e: &Error) -> PyErr {
    to_py_err(e)
}

/// The native half of `skillcache.SkillCache` (`skillcache/_cache.py`), which documents it.
#[pyclass(module = "skillcache._skillcache", name = "SkillCache", frozen)]
pub(crate) struct PySkillCache {
    /// The library's cache, used only in the process that opened it (B4, `fork.rs`).
    inner: Owned<SkillCache>,
    /// The limits in force: MCP sources get their message bound from them.
    limits: Option<Limits>,
    /// A session source's message bound, for the limits in force (R-B2).
    message_bound: u64,
    /// The sessions bound with `connect_session`, by origin, for `notify` (R-B5).
    sessions: Arc<Mutex<HashMap<String, Shared>>>,
}

/// What a forked child is told to do instead of using its parent's cache (B4).
const OPEN_IN_CHILD: &str = "open a new SkillCache in this process (after the fork: in a \
    post-fork hook, or on first use), with the same root if you like";

impl PySkillCache {
    /// The library's cache: in a forked child, a `RuntimeError` at once (B4).
    fn cache(&self) -> PyResult<&SkillCache> {
        self.inner.get("SkillCache", OPEN_IN_CHILD)
    }

    fn bind(
        &self,
        origin: Origin,
        source: Arc<dyn skillcache::source::SkillSource>,
    ) -> PyResult<()> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin.as_str());
        self.cache()?.connect(origin, source);
        Ok(())
    }
}

/// How this package names options in a refusal: snake case, Python's `repr`.
fn spelling<T>(py: Python<'_>, f: impl FnOnce(&Spelling<'_>) -> T) -> T {
    let quote = |s: &str| py_repr(py, s).unwrap_or_else(|_| s.to_owned());
    f(&Spelling {
        case: Case::Snake,
        quote: &quote,
    })
}

#[pymethods]
impl PySkillCache {
    /// Opens (or creates) the cache. Every argument has the Rust builder's default.
    #[new]
    #[pyo3(signature = (
        root=None, *, key_file=None, isolation=Text("rehash".into()),
        approval=Text("required".into()), dynamic=Text("decline".into()),
        memory_tier=None, origin_quota=None, offline=false, allow_stale=false, locked=None,
        principal=None, request_timeout=None, connect_timeout=None, lock_timeout=None,
        max_files=None, max_total_bytes=None, strict=false, discovery_paths=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        root: Option<PathBuf>,
        key_file: Option<PathBuf>,
        isolation: Text,
        approval: Text,
        dynamic: Text,
        memory_tier: Option<i128>,
        origin_quota: Option<i128>,
        offline: bool,
        allow_stale: bool,
        locked: Option<PyRef<'_, PyLockFile>>,
        principal: Option<Text>,
        request_timeout: Option<f64>,
        connect_timeout: Option<f64>,
        lock_timeout: Option<f64>,
        max_files: Option<i128>,
        max_total_bytes: Option<i128>,
        strict: bool,
        discovery_paths: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PySkillCache> {
        let discovery_paths = discovery_paths
            .map(|p| text::paths(&p, "discovery_paths"))
            .transpose()?;
        let n = |v: Option<i128>| v.map(Number::Int);
        let options = Options {
            root,
            key_file,
            isolation: Some(isolation.0),
            approval: Some(approval.0),
            dynamic: Some(dynamic.0),
            memory_tier: n(memory_tier),
            origin_quota: n(origin_quota),
            offline,
            allow_stale,
            locked: locked.map(|lock| lock.snapshot()),
            principal: principal.map(|p| p.0),
            request_timeout,
            connect_timeout,
            lock_timeout,
            max_files: n(max_files),
            max_total_bytes: n(max_total_bytes),
            strict,
            discovery_paths: discovery_paths.unwrap_or_default(),
        };
        let opened = spelling(py, |s| skillcache_binding::options::builder(options, s))
            .map_err(|e| raise(py, &e))?;
        let (b, limits) = (opened.builder, opened.limits);
        // Opening creates folders and opens SQLite: off the GIL.
        let inner = py.detach(move || b.open()).map_err(|e| raise(py, &e))?;
        Ok(PySkillCache {
            inner: Owned::new(inner),
            limits,
            message_bound: message_bound(&limits.unwrap_or_default()),
            sessions: Arc::default(),
        })
    }

    /// The cache root.
    #[getter]
    fn root(&self) -> PyResult<PathBuf> {
        Ok(self.inner.peek()?.root().to_path_buf())
    }

    /// Where a damaged index was moved when the cache was opened, if it was.
    #[getter]
    fn healed_index(&self) -> PyResult<Option<PathBuf>> {
        Ok(self
            .inner
            .peek()?
            .healed_index()
            .map(std::path::Path::to_path_buf))
    }

    /// A handle on the same cache acting as `principal` (whose approvals it checks and
    /// records); a principal with an invisible character is refused as a `ConfigError`.
    fn for_principal(&self, principal: Text) -> PyResult<PySkillCache> {
        Ok(PySkillCache {
            inner: Owned::new(
                self.cache()?
                    .for_principal(principal.0)
                    .map_err(|e| err(&Error::from(e)))?,
            ),
            limits: self.limits,
            message_bound: self.message_bound,
            sessions: Arc::clone(&self.sessions),
        })
    }

    /// Binds `origin` to a server spawned from `argv` over stdio. Nothing starts until a request
    /// needs it. `env` adds to the inherited environment; `cwd` is its working folder;
    /// `stderr` is where the server's stderr goes ([`stderr_target`]).
    #[pyo3(signature = (origin, argv, env=None, cwd=None, stderr=None))]
    fn connect_stdio(
        &self,
        py: Python<'_>,
        origin: Label,
        argv: &Bound<'_, PyAny>,
        env: Option<Bound<'_, PyAny>>,
        cwd: Option<PathBuf>,
        stderr: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let argv = text::texts(argv, "argv")?;
        let env = env.map(|e| text::table(&e, "env")).transpose()?;
        let stderr = match stderr {
            Some(target) => stderr_target(py, &target)?,
            None => None,
        };
        let source = connect::stdio(
            argv,
            env.unwrap_or_default(),
            cwd,
            stderr,
            self.limits.as_ref(),
        )
        .map_err(|e| err(&e))?;
        self.bind(origin.0, source)
    }

    /// Binds `origin` to a Streamable HTTP endpoint, with `headers` on every request.
    #[pyo3(signature = (origin, url, headers=None))]
    fn connect_http(
        &self,
        origin: Label,
        url: Text,
        headers: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let headers = headers.map(|h| text::table(&h, "headers")).transpose()?;
        let source = connect::http(url.0, headers.unwrap_or_default(), self.limits.as_ref())
            .map_err(|e| err(&e))?;
        self.bind(origin.0, source)
    }

    /// Binds `origin` to an MCP session the host already holds (an `mcp.ClientSession`, or
    /// anything with its `send_request`). Call it from the event loop that runs the session:
    /// every request is sent on that loop.
    fn connect_session(&self, py: Python<'_>, origin: Label, session: Py<PyAny>) -> PyResult<()> {
        let source = Arc::new(SessionSource::new(py, session, self.message_bound)?);
        let label = origin.0.as_str().to_owned();
        self.bind(origin.0, Arc::clone(&source) as _)?;
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(label, source);
        Ok(())
    }

    /// Forwards a change notification the host's session received: `uri` for
    /// `notifications/resources/updated`, `None` for `list_changed`. Only for origins bound
    /// with `connect_session` (the others receive their notifications themselves).
    #[pyo3(signature = (origin, uri=None))]
    fn notify(&self, origin: Label, uri: Option<Reference>) -> PyResult<()> {
        self.cache()?;
        let source = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin.0.as_str())
            .cloned();
        let Some(source) = source else {
            return Err(err(&Error::Source(
                skillcache::error::SourceError::NotConnected { origin: origin.0 },
            )));
        };
        source.notify(uri.map_or(Change::ListChanged, |uri| Change::Updated { uri: uri.0 }));
        Ok(())
    }

    /// Unbinds `origin`; its cached content stays.
    fn disconnect(&self, origin: Label) -> PyResult<()> {
        let origin = origin.0;
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin.as_str());
        self.cache()?.disconnect(&origin);
        Ok(())
    }

    /// Every skill of `origin`: `skills/list`, validated, stored; no file fetched. Each
    /// item is an `EntryInfo`, or the `skillcache.Error` (not raised) that refused that entry.
    fn list<'py>(&self, py: Python<'py>, origin: Label) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin) = (self.cache()?.clone(), origin.0);
        crate::spawn(py, async move {
            let items = cache.list(&origin).await.map_err(|e| err(&e))?;
            Python::attach(|py| {
                let list = PyList::empty(py);
                for item in items {
                    match item {
                        Ok(info) => list.append(PyEntryInfo::new(py, info)?)?,
                        Err(e) => list.append(as_value(py, &e))?,
                    }
                }
                Ok(list.unbind())
            })
        })
    }

    /// The entry for `uri`: from the index while fresh, else `skills/get`. No file.
    fn entry<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        uri: Reference,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin, uri) = (self.cache()?.clone(), origin.0, skill_uri(uri)?);
        crate::spawn(py, async move {
            let info = cache.entry(&origin, &uri).await.map_err(|e| err(&e))?;
            Python::attach(|py| PyEntryInfo::new(py, info))
        })
    }

    /// `skills/get` again, whatever the index holds.
    fn refresh<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        uri: Reference,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin, uri) = (self.cache()?.clone(), origin.0, skill_uri(uri)?);
        crate::spawn(py, async move {
            let info = cache.refresh(&origin, &uri).await.map_err(|e| err(&e))?;
            Python::attach(|py| PyEntryInfo::new(py, info))
        })
    }

    /// Approves `entry` as it is now (a later change to it needs a new approval);
    /// `grant_tools` is what the user granted of the tools it
    /// requests (`entry.requested_tools` grants all it asks for).
    #[pyo3(signature = (origin, entry, grant_tools=None))]
    fn approve<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        entry: &Bound<'py, PySkillEntry>,
        grant_tools: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin) = (self.cache()?.clone(), origin.0);
        let entry = entry.get().inner.clone();
        let granted = grant_tools
            .filter(|g| !g.is_none())
            .map(|g| json::from_py(&g))
            .transpose()?;
        crate::spawn(py, async move {
            cache
                .approve(&origin, &entry, granted)
                .await
                .map_err(|e| err(&e))
        })
    }

    /// Whether this principal approved `entry` as it is now.
    fn is_approved<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        entry: &Bound<'py, PySkillEntry>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin, entry) = (self.cache()?.clone(), origin.0, entry.get().inner.clone());
        crate::spawn(py, async move {
            cache
                .is_approved(&origin, &entry)
                .await
                .map_err(|e| err(&e))
        })
    }

    /// Loads a skill: the limits, the dynamic policy, the lock and the approval are checked
    /// before any request (`DeclinedError`); then its `SKILL.md` is read, verified and checked
    /// against the entry's frontmatter.
    fn load<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        entry: &Bound<'py, PySkillEntry>,
    ) -> PyResult<Py<PyAny>> {
        let (cache, origin, entry) = (self.cache()?.clone(), origin.0, entry.get().inner.clone());
        crate::start(py, async move {
            let loaded = cache.load(&origin, &entry).await.map_err(|e| err(&e))?;
            Ok(PyLoadedSkill::new(loaded))
        })
    }

    /// `load`, then every file, as one batch: `(LoadedSkill, [SkillFile])` in manifest order.
    fn load_all<'py>(
        &self,
        py: Python<'py>,
        origin: Label,
        entry: &Bound<'py, PySkillEntry>,
    ) -> PyResult<Py<PyAny>> {
        let (cache, origin, entry) = (self.cache()?.clone(), origin.0, entry.get().inner.clone());
        crate::start(py, async move {
            let (loaded, files) = cache.load_all(&origin, &entry).await.map_err(|e| err(&e))?;
            let files: Vec<PySkillFile> = files.into_iter().map(PySkillFile::from).collect();
            Ok((PyLoadedSkill::new(loaded), files))
        })
    }

    /// Re-hashes every cached blob (of `origin`, or all); a corrupt one is quarantined.
    #[pyo3(signature = (origin=None))]
    fn verify<'py>(&self, py: Python<'py>, origin: Option<Label>) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        let origin = origin.map(|o| o.0);
        crate::spawn(py, async move {
            let report = cache
                .verify(origin.as_ref(), |_, _| {})
                .await
                .map_err(|e| err(&e))?;
            reported(&report)
        })
    }

    /// Whether every origin `lock` pins still publishes exactly what it pins: one listing per
    /// origin, no file fetched; an origin that cannot be listed is drift, never raised.
    fn check_lock<'py>(
        &self,
        py: Python<'py>,
        lock: &Bound<'py, PyLockFile>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (cache, lock) = (self.cache()?.clone(), lock.get().snapshot());
        crate::spawn(py, async move {
            let check = cache.check_lock(&lock).await;
            reported(&check)
        })
    }

    /// Removes unreferenced blobs and temporaries; with `max_bytes`, evicts until the store fits.
    #[pyo3(signature = (max_bytes=None))]
    fn gc<'py>(&self, py: Python<'py>, max_bytes: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            let report = cache.gc(max_bytes).await.map_err(|e| err(&e))?;
            reported(&report)
        })
    }

    /// Removes everything of `origin`: its entries, files and approvals.
    fn purge<'py>(&self, py: Python<'py>, origin: Label) -> PyResult<Bound<'py, PyAny>> {
        let (cache, origin) = (self.cache()?.clone(), origin.0);
        crate::spawn(py, async move {
            cache.purge(&origin).await.map_err(|e| err(&e))
        })
    }

    /// Every origin the root holds anything of (entries, approvals, blobs, staged or quarantined
    /// copies), sorted by label; bound or not.
    fn origins<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            let origins = cache.origins().await.map_err(|e| err(&e))?;
            Ok(labels(origins))
        })
    }

    /// Removes everything of every origin the root holds that `keep` does not name — the
    /// servers the host no longer configures — and returns the labels removed. `keep` is
    /// any iterable of labels, all checked before anything is removed; a bare `str` is refused,
    /// since its characters would be taken for the labels to keep.
    fn purge_absent<'py>(
        &self,
        py: Python<'py>,
        keep: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // Bounded as every list is (an endless iterator stops at 65,536 labels).
        let keep = text::labels(keep, "keep")?;
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            let removed = cache.purge_absent(&keep).await.map_err(|e| err(&e))?;
            Ok(labels(removed))
        })
    }

    /// Lists every bound origin, concurrently, into one `Catalog`: every skill under a
    /// handle unique across origins and stable across runs, every name collision reported —
    /// including with `local_names`, the host's own filesystem skills, which an MCP skill never
    /// shadows. An origin that cannot be listed is in `failures`, not raised.
    #[pyo3(signature = (local_names=None))]
    fn catalog<'py>(
        &self,
        py: Python<'py>,
        local_names: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let local_names = match local_names {
            Some(names) => text::texts(&names, "local_names")?,
            None => Vec::new(),
        };
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            let names: Vec<&str> = local_names.iter().map(String::as_str).collect();
            let catalog = cache.catalog(&names).await.map_err(|e| err(&e))?;
            Python::attach(|py| PyCatalog::new(py, catalog))
        })
    }

    /// Counts what the cache root holds.
    fn inventory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            let inventory = cache.inventory().await.map_err(|e| err(&e))?;
            reported(&inventory)
        })
    }

    /// Every entry the cache holds (of `origin`, or all), for every principal.
    #[pyo3(signature = (origin=None))]
    fn cached_entries<'py>(
        &self,
        py: Python<'py>,
        origin: Option<Label>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        let origin = origin.map(|o| o.0);
        crate::spawn(py, async move {
            let entries = cache
                .cached_entries(origin.as_ref())
                .await
                .map_err(|e| err(&e))?;
            reported(&entries)
        })
    }

    /// Waits until every file that loads handed over before this call is in the store (the
    /// library's `SkillCache::flush`: loads return before their files are durable).
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache()?.clone();
        crate::spawn(py, async move {
            cache.flush().await;
            Ok(())
        })
    }

    /// What this cache did since it was opened: each counter by name.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (counter, value) in self.cache()?.stats() {
            dict.set_item(counter.to_string(), value)?;
        }
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "SkillCache(root={})",
            py_repr(py, self.inner.peek()?.root().display().to_string())?
        ))
    }
}

/// Origins as their labels, the form Python hands them in.
/// A maintenance report as the library serializes it (the shape the CLI's `--json` prints and
/// the Node package reads), as a dict: `_reports.py` makes the typed value of it.
fn reported(report: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let value = serde_json::to_value(report)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Python::attach(|py| Ok(crate::json::to_py(py, &value)?.unbind()))
}

fn labels(origins: Vec<Origin>) -> Vec<String> {
    origins.into_iter().map(|o| o.as_str().to_owned()).collect()
}

/// Where a server `connect_stdio` starts writes its stderr: `None` inherits this process's;
/// `subprocess.DEVNULL` discards it; a file descriptor or an object with `fileno()` (an open
/// file, `sys.stderr`) receives it. The descriptor is opened anew for appending (`/dev/fd/N`:
/// no `unsafe` to adopt a raw descriptor), so a regular file gets the output at its end and the
/// caller may close its own descriptor; a pipe or a terminal is the same pipe or terminal.
fn stderr_target(py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<Option<Stdio>> {
    let refused = || {
        raise(
            py,
            &Error::Config(skillcache::error::ConfigError::Invalid {
                what: "stderr must be None (inherit), subprocess.DEVNULL, a file descriptor or an object with fileno()".to_owned(),
            }),
        )
    };
    if target.is_none() {
        return Ok(None);
    }
    if target.is_instance_of::<PyBool>() {
        return Err(refused());
    }
    let fd: i64 = match target.extract() {
        Ok(fd) => fd,
        Err(_) if target.hasattr("fileno")? => target.call_method0("fileno")?.extract()?,
        Err(_) => return Err(refused()),
    };
    let devnull: i64 = py.import("subprocess")?.getattr("DEVNULL")?.extract()?;
    if fd < 0 && fd != devnull {
        return Err(refused());
    }
    let target = if fd == devnull {
        Stderr::Ignore
    } else {
        Stderr::Descriptor(fd)
    };
    skillcache_binding::options::stderr(target)
        .map(Some)
        .map_err(|e| raise(py, &e))
}

/// The native half of `skillcache.LoadedSkill` (`skillcache/_cache.py`): the acting window.
/// Reads stay inside the held entry's files and go to its origin's source only.
#[pyclass(module = "skillcache._skillcache", name = "LoadedSkill", frozen)]
pub(crate) struct PyLoadedSkill {
    /// Read only in the process that loaded it (B4, `fork.rs`); its entry and `SKILL.md` are
    /// memory, seen anywhere.
    inner: Owned<Loaded>,
    skill_md: PyOnceLock<Py<PySkillFile>>,
}

/// What a forked child is told to do instead of reading through its parent's loaded skill.
const LOAD_IN_CHILD: &str = "open a new SkillCache in this process (after the fork) and load the \
    skill again";

impl PyLoadedSkill {
    fn new(loaded: skillcache::LoadedSkill) -> PyLoadedSkill {
        PyLoadedSkill {
            inner: Owned::new(Arc::new(loaded)),
            skill_md: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl PyLoadedSkill {
    #[getter]
    fn origin(&self) -> PyResult<&str> {
        Ok(self.inner.peek()?.origin().as_str())
    }
    /// The held entry.
    #[getter]
    fn entry(&self) -> PyResult<PySkillEntry> {
        Ok(PySkillEntry {
            inner: self.inner.peek()?.entry().clone(),
        })
    }
    /// The verified `SKILL.md` (unverified for a dynamic skill).
    #[getter]
    fn skill_md<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PySkillFile>> {
        self.skill_md
            .get_or_try_init(py, || {
                Py::new(py, PySkillFile::from(self.inner.peek()?.skill_md().clone()))
            })
            .map(|f| f.bind(py))
    }
    /// What the approval that admitted this load granted of the tools the skill requests; `None` without one.
    #[getter]
    fn granted_tools<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .peek()?
            .granted_tools()
            .map(|v| json::to_py(py, v))
            .transpose()
    }
    /// The files this window may read (the held entry's manifest).
    #[getter]
    fn files(&self) -> PyResult<Vec<crate::types::PyManifestFile>> {
        Ok(self.entry()?.files_list())
    }
    /// Reads a file: `reference` is resolved against the skill root and must be listed in the held
    /// entry (otherwise a `VerifyError`, and no request is sent).
    fn read(&self, py: Python<'_>, reference: Reference) -> PyResult<Py<PyAny>> {
        let loaded = Arc::clone(self.inner.get("LoadedSkill", LOAD_IN_CHILD)?);
        crate::start(py, async move {
            let file = loaded.read(&reference.0).await.map_err(|e| err(&e))?;
            Ok(PySkillFile::from(file))
        })
    }
    /// Every file of the held entry, in manifest order, verified (one batch on a cold cache).
    fn read_all(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let loaded = Arc::clone(self.inner.get("LoadedSkill", LOAD_IN_CHILD)?);
        crate::start(py, async move {
            let files = loaded.read_all().await.map_err(|e| err(&e))?;
            Ok(files.into_iter().map(PySkillFile::from).collect::<Vec<_>>())
        })
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "LoadedSkill(origin={}, uri={})",
            py_repr(py, self.origin()?)?,
            py_repr(py, self.inner.peek()?.entry().uri().as_str())?
        ))
    }
}
