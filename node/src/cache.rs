//! `SkillCache` and `LoadedSkill`: the host API as Promises. Every async method is the Rust
//! method's future, started by [`crate::run::start`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Either, Env, PromiseRaw, Reference, Result, ToNapiValue, Unknown};
use napi_derive::napi;
use serde_json::Value;
use skillcache::entry::Limits;
use skillcache::error::SourceError;
use skillcache::source::{Change, SkillSource, message_bound};
use skillcache::{Error, Origin, SkillUri};
use skillcache_binding::connect;
use skillcache_binding::options::{Case, Number, Opened, Options, Spelling, Stderr};

use crate::catalog::Catalog;
use crate::client::{ClientSource, Connect};
use crate::defined;
use crate::errors::throwable;
use crate::lockfile::LockFile;
use crate::run::{Aborter, Settles, now_or_later, start, start_abortable};
use crate::types::{EntryInfo, Held, SkillEntry, held};

/// `new SkillCache(options)`: every option has the Rust builder's default.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct CacheOptions {
    /// The cache root (default: the platform's user cache folder).
    pub root: Option<String>,
    /// The host key file (default: `host.key` beside the index).
    pub key_file: Option<String>,
    /// `"rehash"` (default) or `"guaranteed"`.
    #[napi(ts_type = "'rehash' | 'guaranteed'")]
    pub isolation: Option<String>,
    /// `"required"` (default) or `"notRequired"`.
    #[napi(ts_type = "'required' | 'notRequired'")]
    pub approval: Option<String>,
    /// `"decline"` (default) or `"allowUnverified"`.
    #[napi(ts_type = "'decline' | 'allowUnverified'")]
    pub dynamic: Option<String>,
    /// Bytes of verified files kept in memory (off by default).
    pub memory_tier: Option<f64>,
    /// Bytes each origin may take on disk (no quota by default); a skill larger than it is
    /// declined from its entry.
    pub origin_quota: Option<f64>,
    pub offline: Option<bool>,
    pub allow_stale: Option<bool>,
    pub principal: Option<String>,
    /// Seconds.
    pub request_timeout: Option<f64>,
    /// Seconds.
    pub connect_timeout: Option<f64>,
    /// Seconds.
    pub lock_timeout: Option<f64>,
    /// A lock file put in force: a skill it does not pin, or pins otherwise, is declined.
    #[napi(ts_type = "LockFile")]
    pub locked: Option<Reference<LockFile>>,
    /// The most files a skill may list (default 512; may be raised, never lowered).
    pub max_files: Option<f64>,
    /// The most bytes a skill's files may total (default 16 MiB; may be raised, never lowered).
    /// The message bound of every source follows it.
    pub max_total_bytes: Option<f64>,
    /// The strict Agent Skills rules (default off): `metadata` must map strings to strings and
    /// `allowed-tools` must be a string; real published skills break both.
    pub strict: Option<bool>,
    /// Where the host's own skills are, for the catalog's collisions.
    pub discovery_paths: Option<Vec<String>>,
}

/// `connectStdio`'s options.
#[napi(object)]
pub struct StdioOptions {
    /// Added to the inherited environment.
    pub env: Option<BTreeMap<String, String>>,
    /// The server's working folder.
    pub cwd: Option<String>,
    /// Where the server's stderr goes: `"inherit"` (default), `"ignore"`, or a file descriptor
    /// (`fs.openSync(path, "a")`, `process.stderr.fd`), opened anew for appending.
    #[napi(ts_type = "'inherit' | 'ignore' | number")]
    pub stderr: Option<Either<String, u32>>,
}

/// `connectHttp`'s options.
#[napi(object)]
pub struct HttpOptions {
    /// Sent with every request.
    pub headers: Option<BTreeMap<String, String>>,
}

fn config_error(what: String) -> Error {
    Error::Config(skillcache::error::ConfigError::Invalid { what })
}

/// How this package names options in a refusal: camelCase, JS's quotes.
fn spelling<T>(f: impl FnOnce(&Spelling<'_>) -> T) -> T {
    let quote = |s: &str| Value::from(s).to_string();
    f(&Spelling {
        case: Case::Camel,
        quote: &quote,
    })
}

pub(crate) fn origin(env: &Env, label: &str) -> Result<Origin> {
    Origin::new(label).map_err(|e| throwable(env, &Error::Config(e)))
}

fn skill_uri(env: &Env, uri: &str) -> Result<SkillUri> {
    SkillUri::parse(uri).map_err(|e| throwable(env, &Error::Uri(e)))
}

/// Where a server `connectStdio` starts writes its stderr (`skillcache-binding`'s rules).
fn stderr_target(target: Either<String, u32>) -> std::result::Result<Stdio, Error> {
    let target = match target {
        Either::A(name) if name == "inherit" => Stderr::Inherit,
        Either::A(name) if name == "ignore" => Stderr::Ignore,
        Either::A(name) => {
            return Err(config_error(format!(
                "stderr must be \"inherit\", \"ignore\" or a file descriptor, not {}",
                Value::from(name)
            )));
        }
        Either::B(fd) => Stderr::Descriptor(i64::from(fd)),
    };
    skillcache_binding::options::stderr(target)
}

/// The options as JS gave them, read by `skillcache-binding`.
fn builder(o: CacheOptions) -> std::result::Result<Opened, Error> {
    let n = |v: Option<f64>| v.map(Number::Float);
    let options = Options {
        root: o.root.map(Into::into),
        key_file: o.key_file.map(Into::into),
        isolation: o.isolation,
        approval: o.approval,
        dynamic: o.dynamic,
        memory_tier: n(o.memory_tier),
        origin_quota: n(o.origin_quota),
        offline: o.offline.unwrap_or(false),
        allow_stale: o.allow_stale.unwrap_or(false),
        locked: o.locked.map(|lock| lock.snapshot()),
        principal: o.principal,
        request_timeout: o.request_timeout,
        connect_timeout: o.connect_timeout,
        lock_timeout: o.lock_timeout,
        max_files: n(o.max_files),
        max_total_bytes: n(o.max_total_bytes),
        strict: o.strict.unwrap_or(false),
        discovery_paths: o
            .discovery_paths
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect(),
    };
    spelling(|s| skillcache_binding::options::builder(options, s))
}

/// The verified skill cache.
#[napi]
pub struct SkillCache {
    inner: skillcache::SkillCache,
    /// The limits given (`None`: the baseline), for the message bound of every source.
    limits: Option<Limits>,
    /// A client's source's message bound, for the limits in force (R-B2).
    message_bound: u64,
    /// The origins bound with `connectClient`, for `notify`; shared with `forPrincipal`'s
    /// handles, which bind on the same cache.
    clients: Arc<Mutex<HashMap<String, Arc<ClientSource>>>>,
}

#[napi]
impl SkillCache {
    /// Opens (or creates) the cache.
    #[napi(constructor)]
    pub fn new(env: Env, options: Option<CacheOptions>) -> Result<Self> {
        let opened = builder(options.unwrap_or_default()).map_err(|e| throwable(&env, &e))?;
        let inner = opened.builder.open().map_err(|e| throwable(&env, &e))?;
        Ok(SkillCache {
            inner,
            limits: opened.limits,
            message_bound: message_bound(&opened.limits.unwrap_or_default()),
            clients: Arc::default(),
        })
    }

    /// Where a damaged index was moved when the cache was opened, if it was.
    #[napi(getter)]
    pub fn healed_index(&self) -> Option<String> {
        self.inner.healed_index().map(|p| p.display().to_string())
    }

    /// The cache root.
    #[napi(getter)]
    pub fn root(&self) -> String {
        self.inner.root().display().to_string()
    }

    /// A handle on the same cache acting as `principal`.
    #[napi]
    pub fn for_principal(&self, env: Env, principal: String) -> Result<SkillCache> {
        let inner = self
            .inner
            .for_principal(principal)
            .map_err(|e| throwable(&env, &Error::from(e)))?;
        Ok(SkillCache {
            inner,
            limits: self.limits,
            message_bound: self.message_bound,
            clients: Arc::clone(&self.clients),
        })
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<ClientSource>>> {
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Binds `label` to `source`, replacing an earlier binding (a client's included).
    fn bind(&self, env: &Env, label: &str, source: Arc<dyn SkillSource>) -> Result<()> {
        let origin = origin(env, label)?;
        self.clients().remove(label);
        self.inner.connect(origin, source);
        Ok(())
    }

    /// Binds `origin` to a server spawned from `argv` over stdio. Nothing starts until a request
    /// needs it.
    #[napi]
    pub fn connect_stdio(
        &self,
        env: Env,
        origin: String,
        argv: Vec<String>,
        options: Option<StdioOptions>,
    ) -> Result<()> {
        let (vars, cwd, stderr) = options.map_or((None, None, None), |o| (o.env, o.cwd, o.stderr));
        // The default is "inherit", given a duplicate as `own_stderr` says why.
        let target = stderr.unwrap_or_else(|| Either::A("inherit".to_owned()));
        let source = stderr_target(target)
            .and_then(|stderr| {
                let (vars, cwd) = (vars.unwrap_or_default(), cwd.map(PathBuf::from));
                connect::stdio(argv, vars, cwd, Some(stderr), self.limits.as_ref())
            })
            .map_err(|e| throwable(&env, &e))?;
        self.bind(&env, &origin, source)
    }

    /// Binds `origin` to a Streamable HTTP endpoint.
    #[napi]
    pub fn connect_http(
        &self,
        env: Env,
        origin: String,
        url: String,
        options: Option<HttpOptions>,
    ) -> Result<()> {
        let headers = options.and_then(|o| o.headers).unwrap_or_default();
        let source =
            connect::http(url, headers, self.limits.as_ref()).map_err(|e| throwable(&env, &e))?;
        self.bind(&env, &origin, source)
    }

    /// Binds `origin` to the host's own connected `Client` of `@modelcontextprotocol/client`:
    /// skillcache's requests (`skills/list`, `skills/get`, `resources/read`) go through it, and
    /// one the cache abandons is aborted on it. The host forwards the client's change
    /// notifications with `notify`.
    // `index.js` wraps this method: it hands over `client`'s requester factory (`client.js`),
    // not the client itself.
    #[napi(ts_args_type = "origin: string, client: import('./client').RequestClient")]
    pub fn connect_client(&self, env: Env, origin: String, connect: Connect<'_>) -> Result<()> {
        let source = Arc::new(ClientSource::new(&env, &connect, self.message_bound)?);
        self.bind(&env, &origin, Arc::clone(&source) as _)?;
        self.clients().insert(origin, source);
        Ok(())
    }

    /// Forwards a change notification the host's client received: `uri` for
    /// `notifications/resources/updated`, none for `notifications/resources/list_changed`. Only
    /// for origins bound with `connectClient` (the others receive their notifications
    /// themselves); another origin is a `NotConnectedError`.
    #[napi]
    pub fn notify(&self, env: Env, origin: String, uri: Option<String>) -> Result<()> {
        let source = self.clients().get(&origin).cloned();
        let Some(source) = source else {
            return Err(throwable(
                &env,
                &Error::Source(SourceError::NotConnected {
                    origin: self::origin(&env, &origin)?,
                }),
            ));
        };
        source.notify(uri.map_or(Change::ListChanged, |uri| Change::Updated { uri }));
        Ok(())
    }

    /// Unbinds `origin`; its cached content stays.
    #[napi]
    pub fn disconnect(&self, env: Env, origin: String) -> Result<()> {
        self.inner.disconnect(&self::origin(&env, &origin)?);
        self.clients().remove(&origin);
        Ok(())
    }

    /// Every skill of `origin`, validated and stored; no file fetched. Each item is an
    /// `EntryInfo`, or the error (not thrown) that refused that entry.
    #[napi(ts_return_type = "Promise<Array<EntryInfo | import('./errors').SkillcacheError>>")]
    pub fn list<'env>(
        &self,
        env: &'env Env,
        origin: String,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (cache, origin) = (self.inner.clone(), self::origin(env, &origin)?);
        start(
            env,
            async move { cache.list(&origin).await },
            |env, items| {
                let items = defined::array_of(env, items, |env, item| match item {
                    Ok(info) => EntryInfo::from(info).into_unknown(env),
                    Err(e) => crate::errors::object(env, &e),
                })?;
                defined::settled(env, items)
            },
        )
    }

    /// The entry for `uri`: from the index while fresh, else `skills/get`. No file.
    #[napi(ts_return_type = "Promise<EntryInfo>")]
    pub fn entry<'env>(
        &self,
        env: &'env Env,
        origin: String,
        uri: String,
    ) -> Result<PromiseRaw<'env, EntryInfo>> {
        let (cache, origin, uri) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            skill_uri(env, &uri)?,
        );
        start(
            env,
            async move { cache.entry(&origin, &uri).await },
            |_, i| Ok(EntryInfo::from(i)),
        )
    }

    /// `skills/get` again, whatever the index holds.
    #[napi(ts_return_type = "Promise<EntryInfo>")]
    pub fn refresh<'env>(
        &self,
        env: &'env Env,
        origin: String,
        uri: String,
    ) -> Result<PromiseRaw<'env, EntryInfo>> {
        let (cache, origin, uri) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            skill_uri(env, &uri)?,
        );
        start(
            env,
            async move { cache.refresh(&origin, &uri).await },
            |_, i| Ok(EntryInfo::from(i)),
        )
    }

    /// Approves `entry` as it is now; `grantTools` is what the user granted of the tools it
    /// requests (`entry.requestedTools` grants all it asks for).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn approve<'env>(
        &self,
        env: &'env Env,
        origin: String,
        entry: &SkillEntry,
        #[napi(ts_arg_type = "unknown")] grant_tools: Option<Value>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let (cache, origin, entry) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            entry.inner.clone(),
        );
        let granted = grant_tools.filter(|g| !g.is_null());
        start(
            env,
            async move { cache.approve(&origin, &entry, granted).await },
            |_, ()| Ok(()),
        )
    }

    /// Whether this principal approved `entry` as it is now.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_approved<'env>(
        &self,
        env: &'env Env,
        origin: String,
        entry: &SkillEntry,
    ) -> Result<PromiseRaw<'env, bool>> {
        let (cache, origin, entry) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            entry.inner.clone(),
        );
        start(
            env,
            async move { cache.is_approved(&origin, &entry).await },
            |_, b| Ok(b),
        )
    }

    /// Loads a skill: the limits, the dynamic policy, the lock and the approval are checked
    /// before any request (`DeclinedError`); then its `SKILL.md` is read and verified. With
    /// `signal`, an abort drops the load where it stands and rejects with an `AbortError`.
    #[napi(
        ts_args_type = "origin: string, entry: SkillEntry, options?: { signal?: AbortSignal }",
        ts_return_type = "Promise<LoadedSkill>"
    )]
    pub fn load<'env>(
        &self,
        env: &'env Env,
        origin: String,
        entry: &SkillEntry,
        aborter: Option<&Aborter>,
    ) -> Result<PromiseRaw<'env, LoadedSkill>> {
        let (cache, origin, entry) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            entry.inner.clone(),
        );
        // With a signal, `index.js` waits on the Promise (to end the signal's listener): a pair.
        let settles = if aborter.is_some() {
            Settles::Pair
        } else {
            Settles::Plain
        };
        start_abortable(
            env,
            async move { cache.load(&origin, &entry).await },
            |_, l| Ok(LoadedSkill::from(l)),
            aborter,
            settles,
        )
    }

    /// `load`, then every file, as one batch: `[LoadedSkill, SkillFile[]]` in manifest order.
    /// With `signal`, as `load`.
    // `index.js` makes the `SkillFile`s of the files the addon holds.
    #[napi(
        ts_args_type = "origin: string, entry: SkillEntry, options?: { signal?: AbortSignal }",
        ts_return_type = "Promise<[LoadedSkill, import('./skillfile').SkillFile[]]>"
    )]
    pub fn load_all<'env>(
        &self,
        env: &'env Env,
        origin: String,
        entry: &SkillEntry,
        aborter: Option<&Aborter>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (cache, origin, entry) = (
            self.inner.clone(),
            self::origin(env, &origin)?,
            entry.inner.clone(),
        );
        start_abortable(
            env,
            async move { cache.load_all(&origin, &entry).await },
            |env, (l, files)| {
                let skill = LoadedSkill::from(l).into_unknown(env)?;
                let files = held_files(env, files)?;
                defined::unthenable(env, vec![skill, files])
            },
            aborter,
            // `index.js` unpacks it.
            Settles::Pair,
        )
    }

    /// Whether every origin `lock` pins still publishes exactly what it pins, as
    /// `skillcache lock --check` asks: one `skills/list` per origin, no file fetched. A server's
    /// failure is drift (`unlisted`, `refused`), never a rejection.
    #[napi(ts_return_type = "Promise<LockCheck>")]
    pub fn check_lock<'env>(
        &self,
        env: &'env Env,
        lock: &crate::lockfile::LockFile,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (cache, lock) = (self.inner.clone(), lock.snapshot());
        start(
            env,
            async move { Ok::<_, skillcache::Error>(cache.check_lock(&lock).await) },
            |env, c| {
                let check = defined::reported(env, &c)?;
                defined::settled(env, check)
            },
        )
    }

    /// Re-hashes every cached blob (of `origin`, or all); a corrupt one is quarantined.
    #[napi(ts_return_type = "Promise<VerifyReport>")]
    pub fn verify<'env>(
        &self,
        env: &'env Env,
        origin: Option<String>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let cache = self.inner.clone();
        let origin = origin.map(|o| self::origin(env, &o)).transpose()?;
        start(
            env,
            async move { cache.verify(origin.as_ref(), |_, _| {}).await },
            |env, r| {
                let report = defined::reported(env, &r)?;
                defined::settled(env, report)
            },
        )
    }

    /// Removes unreferenced blobs and temporaries; with `maxBytes`, evicts until the store fits.
    #[napi(ts_return_type = "Promise<GcReport>")]
    pub fn gc<'env>(
        &self,
        env: &'env Env,
        max_bytes: Option<i64>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let cache = self.inner.clone();
        let max = max_bytes
            .map(|m| {
                u64::try_from(m).map_err(|_| {
                    throwable(env, &config_error("maxBytes must not be negative".into()))
                })
            })
            .transpose()?;
        start(env, async move { cache.gc(max).await }, |env, r| {
            let report = defined::reported(env, &r)?;
            defined::settled(env, report)
        })
    }

    /// Removes everything of `origin`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn purge<'env>(&self, env: &'env Env, origin: String) -> Result<PromiseRaw<'env, ()>> {
        let (cache, origin) = (self.inner.clone(), self::origin(env, &origin)?);
        start(env, async move { cache.purge(&origin).await }, |_, ()| {
            Ok(())
        })
    }

    /// Waits until every file that loads handed over before this call is in the store: a load
    /// returns its verified files at once and the cache stores them behind it. Maintenance
    /// (`verify`, `gc`, `purge`, `inventory`, …) flushes first by itself, and so does the
    /// process's exit.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn flush<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let cache = self.inner.clone();
        start(
            env,
            async move {
                cache.flush().await;
                Ok(())
            },
            |_, ()| Ok(()),
        )
    }

    /// Every origin the root holds anything of, sorted by label; bound or not.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn origins<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let cache = self.inner.clone();
        start(env, async move { cache.origins().await }, labels)
    }

    /// Removes everything of every origin the root holds that `keep` does not name, and
    /// returns the labels removed.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn purge_absent<'env>(
        &self,
        env: &'env Env,
        keep: Vec<String>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let keep = keep
            .iter()
            .map(|label| self::origin(env, label))
            .collect::<Result<Vec<Origin>>>()?;
        let cache = self.inner.clone();
        start(env, async move { cache.purge_absent(&keep).await }, labels)
    }

    /// Lists every bound origin, concurrently, into one `Catalog`: every skill under a handle
    /// unique across origins and stable across runs, every name collision reported, including
    /// with `localNames` (the host's own skills). An origin that cannot be listed is in
    /// `failures`, not thrown.
    #[napi(ts_return_type = "Promise<Catalog>")]
    pub fn catalog<'env>(
        &self,
        env: &'env Env,
        local_names: Option<Vec<String>>,
    ) -> Result<PromiseRaw<'env, Catalog>> {
        let cache = self.inner.clone();
        let names = local_names.unwrap_or_default();
        start(
            env,
            async move {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                cache.catalog(&names).await
            },
            |_, c| Ok(Catalog::from(c)),
        )
    }

    /// Counts what the cache root holds.
    #[napi(ts_return_type = "Promise<Inventory>")]
    pub fn inventory<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let cache = self.inner.clone();
        start(env, async move { cache.inventory().await }, |env, i| {
            let inventory = defined::reported(env, &i)?;
            defined::settled(env, inventory)
        })
    }

    /// Every entry the cache holds (of `origin`, or all), for every principal.
    #[napi(ts_return_type = "Promise<CachedEntry[]>")]
    pub fn cached_entries<'env>(
        &self,
        env: &'env Env,
        origin: Option<String>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let cache = self.inner.clone();
        let origin = origin.map(|o| self::origin(env, &o)).transpose()?;
        start(
            env,
            async move { cache.cached_entries(origin.as_ref()).await },
            |env, entries| {
                let entries = defined::reported(env, &entries)?;
                defined::settled(env, entries)
            },
        )
    }

    /// What this cache did since it was opened: each counter by name.
    #[napi(ts_return_type = "Record<string, number>")]
    pub fn stats<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        #[allow(clippy::cast_precision_loss)]
        let stats: BTreeMap<String, f64> = self
            .inner
            .stats()
            .into_iter()
            .map(|(counter, value)| (counter.to_string(), value as f64))
            .collect();
        defined::serialized(env, &stats)
    }
}

/// Origins as an array of their labels.
fn labels(env: &Env, origins: Vec<Origin>) -> Result<Unknown<'_>> {
    let labels = defined::strings(env, origins.into_iter().map(|o| o.as_str().to_owned()))?;
    defined::settled(env, labels)
}

/// A loaded skill: the acting window. Reads stay inside the held entry's files and go to its
/// origin's source only.
#[napi]
pub struct LoadedSkill {
    inner: Arc<skillcache::LoadedSkill>,
}

impl From<skillcache::LoadedSkill> for LoadedSkill {
    fn from(loaded: skillcache::LoadedSkill) -> LoadedSkill {
        LoadedSkill {
            inner: Arc::new(loaded),
        }
    }
}

#[napi]
impl LoadedSkill {
    #[napi(getter)]
    pub fn origin(&self) -> String {
        self.inner.origin().as_str().to_owned()
    }
    /// The held entry.
    #[napi(getter)]
    pub fn entry(&self) -> SkillEntry {
        SkillEntry {
            inner: self.inner.entry().clone(),
        }
    }
    /// The verified `SKILL.md`.
    // `index.js` makes the `SkillFile` of the file the addon holds.
    #[napi(getter, ts_return_type = "import('./skillfile').SkillFile")]
    pub fn skill_md(&self) -> Held {
        held(self.inner.skill_md().clone())
    }
    /// What the approval that admitted this load granted; `null` without one.
    #[napi(getter, ts_return_type = "unknown")]
    pub fn granted_tools<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::json(env, self.inner.granted_tools().unwrap_or(&Value::Null))
    }
    /// The files this window may read (the held entry's manifest).
    #[napi(getter, ts_return_type = "ManifestFile[]")]
    pub fn files<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        defined::serialized(env, &crate::types::manifest_files(self.inner.entry()))
    }
    /// Reads a file: `reference` is resolved against the skill root and must be listed in the
    /// held entry (otherwise a `VerifyError` and no request). With `signal`, as `load`.
    //
    // What `index.js` calls (it makes the `SkillFile` and the Promise): when the first poll
    // answers — a hit — the file the addon holds at once, else a Promise of it (an error is
    // thrown at once, or rejects).
    #[napi(
        ts_args_type = "reference: string, options?: { signal?: AbortSignal }",
        ts_return_type = "Promise<import('./skillfile').SkillFile>"
    )]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        reference: String,
        aborter: Option<&Aborter>,
    ) -> Result<Either<Held, PromiseRaw<'env, Held>>> {
        let loaded = Arc::clone(&self.inner);
        now_or_later(
            env,
            async move { loaded.read(&reference).await },
            |_, f| Ok(held(f)),
            |_, f| Ok(held(f)),
            aborter,
        )
    }
    /// Every file of the held entry, in manifest order, verified (one batch on a cold cache).
    /// With `signal`, as `load`.
    #[napi(
        ts_args_type = "options?: { signal?: AbortSignal }",
        ts_return_type = "Promise<import('./skillfile').SkillFile[]>"
    )]
    pub fn read_all<'env>(
        &self,
        env: &'env Env,
        aborter: Option<&Aborter>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let loaded = Arc::clone(&self.inner);
        start_abortable(
            env,
            async move { loaded.read_all().await },
            held_files,
            aborter,
            // `index.js` unpacks it.
            Settles::Pair,
        )
    }
}

/// Files as an array (define semantics, no `then` a host can reach) of the `External`s the addon
/// holds them in.
fn held_files(env: &Env, files: Vec<skillcache::SkillFile>) -> Result<Unknown<'_>> {
    let held = files
        .into_iter()
        .map(|f| held(f).into_unknown(env))
        .collect::<Result<Vec<_>>>()?;
    defined::unthenable(env, held)
}
