//! Each command, on the values `plan` checked: open the cache, bind the server if the command
//! needs one, do one thing, and hand what came of it to `render`.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use skillcache::local::{SkillServer, inspect};
use skillcache::source::{McpSource, SkillSource};
use skillcache::{ApprovalPolicy, Catalog, SkillCache, display_safe};
use skillcache::{Error, LockFile, Origin, SkillEntry, SkillUri};

use crate::Outcome;
use crate::failure::Failure;
use crate::many;
use crate::plan::{Ctx, Job, Load, LockScope, Plan, Reach, Target};
use crate::render;

type Result<T> = std::result::Result<T, Failure>;

/// One arm per command: the arguments were checked into typed values once, by `plan`.
pub(crate) async fn run(plan: Plan) -> Result<Outcome> {
    let Plan { ctx, job } = plan;
    let ctx = &ctx;
    match job {
        Job::ListAll {
            local_names,
            local_names_file,
        } => list_all(ctx, local_names, local_names_file.as_deref()).await,
        Job::List(origin, target) => list(ctx, origin, &target).await,
        Job::Lock {
            scope,
            output,
            target,
        } => lock(ctx, scope, &output, &target).await,
        Job::LockCheck { only, lock, target } => {
            lock_check(ctx, only.as_ref(), &lock, &target).await
        }
        Job::Entry(origin, uri, target) => entry(ctx, origin, &uri, &target).await,
        Job::Approve {
            origin,
            uri,
            locked,
            grant_tools,
            target,
        } => approve(ctx, origin, &uri, locked.as_deref(), grant_tools, &target).await,
        Job::ApproveFromLock {
            only,
            lock,
            grant_tools,
            target,
        } => approve_from_lock(ctx, only.as_ref(), &lock, grant_tools, &target).await,
        Job::Load(job) => load(ctx, job).await,
        Job::Entries(origin) => entries(ctx, origin.as_ref()).await,
        Job::Verify(origin) => verify(ctx, origin.as_ref()).await,
        Job::Gc(max_bytes) => gc(ctx, max_bytes).await,
        Job::Purge(origin) => purge(ctx, &origin).await,
        Job::PurgeAbsent { dry_run } => purge_absent(ctx, dry_run).await,
        Job::PurgeAll { dry_run } => purge_every(ctx, None, dry_run).await,
        Job::Stats => stats(ctx).await,
        Job::Inspect { dir, base_uri } => inspect_dir(&dir, base_uri),
        Job::Serve(args) => run_serve(args).await,
        Job::Demo { root, key_file } => {
            crate::demo::run(ctx.builder.clone(), ctx.isolation, root, key_file).await
        }
    }
}

/// `serve`: a folder of skills on rmcp's server side, over stdio or Streamable HTTP.
async fn run_serve(args: crate::args::ServeArgs) -> Result<Outcome> {
    let crate::args::ServeArgs {
        dir,
        ttl_ms,
        dynamic,
        http,
        directory_read,
        watch_ms,
        held_mib,
        lenient,
        // Checked before anything ran (`plan`).
        allow_remote: _,
    } = args;
    // A mistyped `--dynamic` would publish the skill it meant as static, without a word (a
    // newcomer's try). Not refused: the folder is watched, and the skill may appear later.
    for path in dynamic
        .iter()
        .filter(|p| !dir.join(p).join("SKILL.md").is_file())
    {
        eprintln!(
            "skillcache: notice: --dynamic {} names no skill under {} (no SKILL.md there yet); it applies once one appears",
            display_safe(path),
            display_safe(&dir.to_string_lossy())
        );
    }
    let options = dynamic.into_iter().fold(
        SkillServer::new(dir)
            .ttl_ms(ttl_ms)
            .directory_read(directory_read)
            .lenient(lenient)
            .watch_interval(std::time::Duration::from_millis(watch_ms))
            .held_bytes(held_mib * 1024 * 1024),
        SkillServer::dynamic,
    );
    match http {
        None => skillcache::serve_stdio(options).await?,
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)?;
            // The one line a caller waits for (port 0 picks the port).
            eprintln!(
                "skillcache serve: listening on http://{}/mcp",
                listener.local_addr()?
            );
            skillcache::serve_http(options, listener).await?;
        }
    }
    Ok(Outcome::Ok)
}

/// The cache, and `origin` bound to its server. Nothing is started yet: the server starts on
/// the first request that needs it (R-B4), so a warm load of a fresh entry never starts it.
/// `approval` is passed explicitly: the library requires approval by default, the CLI only with
/// `--require-approval` (as the README documents). The source is returned too, to report the
/// protocol revision it negotiated.
pub(crate) fn connect(
    ctx: &Ctx,
    origin: &Origin,
    target: &Target,
    approval: ApprovalPolicy,
    lock: Option<LockFile>,
) -> Result<(SkillCache, Option<Arc<McpSource>>)> {
    let cache = open(ctx, target, approval, lock)?;
    let source = bind(ctx, &cache, origin, &target.reach)?;
    Ok((cache, source))
}

/// The cache as `target` and the gate ask; nothing is connected yet.
fn open(
    ctx: &Ctx,
    target: &Target,
    approval: ApprovalPolicy,
    lock: Option<LockFile>,
) -> Result<SkillCache> {
    let mut builder = ctx
        .builder
        .clone()
        .principal(target.principal.clone())
        .dynamic(target.dynamic)
        .approval(approval);
    if let Some(lock) = lock {
        builder = builder.locked(lock);
    }
    let cache = builder.open()?;
    notice_healed(&cache);
    Ok(cache)
}

/// Binds `origin` to its server ([`source`]). Offline, with no server named, nothing is bound
/// (nothing would be asked). The source is returned to report the protocol revision it
/// negotiated.
fn bind(
    ctx: &Ctx,
    cache: &SkillCache,
    origin: &Origin,
    reach: &Reach,
) -> Result<Option<Arc<McpSource>>> {
    let source = source(ctx, origin, reach)?;
    if let Some(source) = &source {
        cache.connect(origin.clone(), Arc::clone(source) as Arc<dyn SkillSource>);
    }
    Ok(source)
}

/// The source of `origin`'s server: `--stdio`/`--url`, else the server `--config` names
/// `origin`; offline, with neither, none. Nothing is started (R-B4) and nothing is bound.
fn source(ctx: &Ctx, origin: &Origin, reach: &Reach) -> Result<Option<Arc<McpSource>>> {
    let source = match (reach, &ctx.config) {
        (Reach::Stdio(command), _) => McpSource::stdio(command.command()),
        (Reach::Url(url), _) => McpSource::http(url),
        (Reach::Configured, Some((path, config))) => match config.server(origin.as_str()) {
            Some(server) => server.source()?,
            None if ctx.offline => return Ok(None),
            None => {
                return Err(Failure::Usage(format!(
                    "no server named {:?} in {} (configured: {})",
                    origin.as_str(),
                    display_safe(&path.to_string_lossy()),
                    config
                        .servers()
                        .map(|(o, _)| o.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        },
        // `plan` chooses `Configured` without `--config` only offline; anything else is refused
        // as it always was, never bound to nothing.
        (Reach::Configured, None) if ctx.offline => return Ok(None),
        (Reach::Configured, None) => {
            return Err(Failure::Usage(
                "a server is required: --stdio, --url, or --config".into(),
            ));
        }
    };
    Ok(Some(Arc::new(source)))
}

/// The protocol revision the source negotiated (`None`: the server was never contacted).
fn revision(source: Option<&Arc<McpSource>>) -> Option<String> {
    source.and_then(|s| s.protocol_version()).map(str::to_owned)
}

/// One skill of a listing, with whether its cached entry is fresh.
async fn entry_row(cache: &SkillCache, origin: &Origin, e: &SkillEntry) -> Value {
    let fresh = cache.is_fresh(origin, e.uri()).await.unwrap_or(false);
    render::entry_row(e, fresh)
}

/// One origin's listing as rows (a refused entry is a row with its error).
async fn list_rows(cache: &SkillCache, origin: &Origin) -> std::result::Result<Vec<Value>, Error> {
    let listed = cache.list(origin).await?;
    let mut rows = Vec::with_capacity(listed.len());
    for r in &listed {
        rows.push(match r {
            Ok(info) => entry_row(cache, origin, &info.entry).await,
            Err(e) => json!({"error": e.to_string()}),
        });
    }
    Ok(rows)
}

async fn list(ctx: &Ctx, origin: Origin, target: &Target) -> Result<Outcome> {
    let (cache, source) = connect(ctx, &origin, target, ApprovalPolicy::NotRequired, None)?;
    let rows = list_rows(&cache, &origin).await?;
    render::listing(ctx.json, &origin, revision(source.as_ref()), &rows);
    Ok(Outcome::Ok)
}

/// The cache, and every configured server with its source: nothing is bound or started yet
/// (`many::each` binds each for the time of its work).
fn every_configured(ctx: &Ctx, target: &Target) -> Result<(SkillCache, Vec<many::Server>)> {
    let (_, config) = ctx
        .config
        .as_ref()
        .ok_or_else(|| Failure::Usage("--all needs --config".into()))?;
    let cache = open(ctx, target, ApprovalPolicy::NotRequired, None)?;
    let servers = config
        .servers()
        .map(|(o, _)| Ok((o.clone(), source(ctx, o, &target.reach)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok((cache, servers))
}

/// The exit code a set of failures ends with: the first one's.
fn failed(errors: Vec<Error>) -> Result<Outcome> {
    match errors.first() {
        None => Ok(Outcome::Ok),
        Some(first) => Err(Failure::Many(crate::exit_code(first), errors)),
    }
}

/// `list --all`: every configured server's skills in one catalog (R-Q1), one origin each, each
/// skill with its handle and the handles it collides with; the host's local skill names take
/// part. A server that fails is reported (stderr, and in the JSON) and the others are still
/// listed; so is a refused entry.
async fn list_all(ctx: &Ctx, mut local: Vec<String>, file: Option<&Path>) -> Result<Outcome> {
    if let Some(path) = file {
        local.extend(crate::local_names::read(path)?);
    }
    let names: Vec<&str> = local.iter().map(String::as_str).collect();
    // The local names are checked before any server is started.
    Catalog::from_listings(Vec::new(), &names)?;
    let (cache, servers) = every_configured(ctx, &Target::configured())?;
    let origins: Vec<Origin> = servers.iter().map(|(o, _)| o.clone()).collect();
    let listings = many::each(&cache, servers, ctx.jobs, |cache, origin| async move {
        cache.list(&origin).await
    })
    .await;
    let catalog = Catalog::from_listings(listings, &names)?;
    let mut out = Vec::new();
    for origin in &origins {
        let mut rows = Vec::new();
        for skill in catalog.skills().iter().filter(|s| s.origin() == origin) {
            let mut row = entry_row(&cache, origin, skill.entry()).await;
            row["handle"] = json!(skill.handle());
            row["collides_with"] = json!(skill.collides_with());
            rows.push(row);
        }
        let errors: Vec<String> = catalog
            .failures()
            .iter()
            .filter(|(o, _)| o == origin)
            .map(|(_, e)| crate::chain(e))
            .collect();
        let mut listed = json!({"origin": origin.as_str(), "skills": rows});
        if let Some(first) = errors.first() {
            listed["error"] = json!(first);
            listed["errors"] = json!(errors);
        }
        out.push(listed);
    }
    render::catalog(ctx.json, &out, &collisions(&catalog, &local));
    // Every failure is reported; the first one's kind decides the exit code.
    for (_, e) in catalog.failures() {
        crate::report(e);
    }
    Ok(catalog
        .failures()
        .first()
        .map_or(Outcome::Ok, |(_, e)| Outcome::Code(crate::exit_code(e))))
}

/// Every name the catalog holds more than once, or shares with a local skill (compared by the
/// library's rule: case and Unicode form aside, K8): the name, whether a local skill has it, the
/// handles of every party and those of the local skills among them (a local skill's handle is
/// its name as the host gave it).
fn collisions(catalog: &skillcache::Catalog, local: &[String]) -> Vec<Value> {
    use std::collections::{BTreeMap, BTreeSet};
    // name → (every party's handle, the local ones).
    let mut by_name: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for skill in catalog.skills() {
        if skill.collides_with().is_empty() {
            continue;
        }
        let (parties, locals) = by_name.entry(skill.entry().name()).or_default();
        parties.insert(skill.handle());
        // A local name never equals an MCP skill's handle: one among the parties is local.
        for other in skill.collides_with() {
            if local.contains(other) {
                parties.insert(other);
                locals.insert(other);
            }
        }
    }
    by_name
        .into_iter()
        .map(|(name, (handles, locals))| {
            json!({"name": name, "local": !locals.is_empty(), "handles": handles, "local_handles": locals})
        })
        .collect()
}

/// `lock`: pins the named skills (or every skill) as they are now; an existing lock file is
/// updated, keeping its other pins.
async fn lock(ctx: &Ctx, scope: LockScope, output: &Path, target: &Target) -> Result<Outcome> {
    // An existing lock is updated. It is read as every host file is (R-E4): a FIFO or a link to
    // something that is not a regular file is refused at once, before any server is asked,
    // and never written through; only a lock that is not there at all starts a new one.
    let mut lock = match LockFile::read(output) {
        Ok(lock) => lock,
        Err(Error::Store(skillcache::error::StoreError::Io { source, .. }))
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            LockFile::new()
        }
        Err(e) => return Err(e.into()),
    };
    let mut errors = Vec::new();
    // What `--all` listed: the origins listed whole, whose pins the listing no longer holds are
    // dropped (the server stopped publishing the skill, or publishes it as dynamic, which no lock
    // can pin), and their dynamic skills. A listing that failed drops nothing.
    let mut listed = Listed::default();
    let pinned = match scope {
        LockScope::Skills(origin, uris) => {
            let (cache, _) = connect(ctx, &origin, target, ApprovalPolicy::NotRequired, None)?;
            let mut pinned = Vec::new();
            for uri in &uris {
                match cache.entry(&origin, uri).await {
                    Ok(info) => pinned.push((origin.clone(), info.entry)),
                    Err(e) => errors.push(e),
                }
            }
            pinned
        }
        LockScope::EveryOf(origin) => {
            let (cache, _) = connect(ctx, &origin, target, ApprovalPolicy::NotRequired, None)?;
            every_skill(ctx, &cache, vec![(origin, None)], &mut errors, &mut listed).await
        }
        LockScope::EveryConfigured => {
            let (cache, servers) = every_configured(ctx, target)?;
            every_skill(ctx, &cache, servers, &mut errors, &mut listed).await
        }
    };
    let gone: Vec<render::Dropped> = lock
        .skills()
        .filter(|l| listed.whole.contains(l.origin()))
        .filter(|l| {
            !pinned
                .iter()
                .any(|(o, e)| o == l.origin() && e.uri() == l.uri())
        })
        .map(|l| render::Dropped {
            origin: l.origin().clone(),
            uri: l.uri().clone(),
            dynamic: listed
                .dynamic
                .contains(&(l.origin().clone(), l.uri().clone())),
        })
        .collect();
    for d in &gone {
        lock.remove(&d.origin, &d.uri);
    }
    let mut rows: Vec<Value> = Vec::new();
    for (origin, entry) in &pinned {
        match lock.insert(origin, entry) {
            Ok(()) => rows.push(render::pin_row(origin, entry)),
            Err(e) => errors.push(e),
        }
    }
    // A lock is what CI gates on. After a failure, one that pins nothing is not written, and
    // one that exists is not replaced by part of what was asked (a server down would drop its
    // pins); a new one holds what could be pinned (and the exit code says what could not).
    if !errors.is_empty() && (rows.is_empty() || output.exists()) {
        not_written(output, rows.is_empty());
        return failed(errors);
    }
    lock.write(output)?;
    render::locked(ctx.json, output, &rows, &gone, lock.skills().count());
    failed(errors)
}

/// Says why a lock that failed was not written (`lock`).
fn not_written(output: &Path, nothing: bool) {
    let why = if nothing {
        "nothing could be pinned"
    } else {
        "it would replace the lock there with part of what was asked"
    };
    eprintln!(
        "skillcache: notice: {} was not written: {why}",
        display_safe(&output.to_string_lossy())
    );
}

/// What `lock --all` listed, beside the entries it pins.
#[derive(Default)]
struct Listed {
    /// Origins whose listing succeeded with no refused entry.
    whole: Vec<Origin>,
    /// The dynamic skills they list.
    dynamic: Vec<(Origin, SkillUri)>,
}

/// Every origin `lock` pins (only `only`, if given), each once, in order.
fn pinned_origins(lock: &LockFile, only: Option<&Origin>) -> Vec<Origin> {
    let mut origins: Vec<Origin> = lock
        .skills()
        .map(|l| l.origin().clone())
        .filter(|o| only.is_none_or(|only| only == o))
        .collect();
    origins.sort();
    origins.dedup();
    origins
}

/// `lock --check`: every origin the lock pins (of `only`, if given) listed — no file fetched —
/// at most `--jobs` servers at once, and compared with the lock by the library
/// (`LockCheck::from_listings`). A pinned origin the config does not name is not started: the
/// library reports it as drift, like a server that could not be listed. Exit 6 on any drift.
async fn lock_check(
    ctx: &Ctx,
    only: Option<&Origin>,
    path: &Path,
    target: &Target,
) -> Result<Outcome> {
    let lock = LockFile::read(path).map_err(Failure::given)?;
    let cache = open(ctx, target, ApprovalPolicy::NotRequired, None)?;
    let servers = pinned_origins(&lock, only)
        .into_iter()
        .filter_map(|o| match source(ctx, &o, &target.reach) {
            Ok(source) => Some(Ok((o, source))),
            // Not configured: left out, and so reported as not connected.
            Err(Failure::Usage(_)) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<Result<Vec<_>>>()?;
    let listings = many::each(&cache, servers, ctx.jobs, |cache, origin| async move {
        cache.list(&origin).await
    })
    .await;
    let mut check = skillcache::LockCheck::from_listings(&lock, listings);
    if let Some(only) = only {
        check.drift.retain(|d| d.origin() == only);
    }
    render::lock_checked(ctx.json, path, &check);
    Ok(if check.is_clean() {
        Outcome::Ok
    } else {
        Outcome::Code(crate::EXIT_LOCK_DRIFT)
    })
}

/// `lock --all`: every skill each origin lists, but its dynamic ones (they have no digests to
/// pin: said, not fatal); a refused entry or a failed listing goes to `errors`. At most `--jobs`
/// servers run at once.
async fn every_skill(
    ctx: &Ctx,
    cache: &SkillCache,
    servers: Vec<many::Server>,
    errors: &mut Vec<Error>,
    seen: &mut Listed,
) -> Vec<(Origin, SkillEntry)> {
    let bar = render::progress(
        ctx.json,
        servers.len(),
        "locking {bar:30} {pos}/{len} servers {msg}",
    );
    let listings = many::each(cache, servers, ctx.jobs, |cache, origin| {
        let bar = bar.clone();
        async move {
            bar.set_message(origin.as_str().to_owned());
            let listed = cache.list(&origin).await;
            bar.inc(1);
            listed
        }
    })
    .await;
    bar.finish_and_clear();
    let mut pinned = Vec::new();
    for (origin, listed) in listings {
        match listed {
            Ok(listed) => {
                // A refused entry may be a pinned skill still published: its origin's pins stay.
                if listed.iter().all(std::result::Result::is_ok) {
                    seen.whole.push(origin.clone());
                }
                for r in listed {
                    match r {
                        Ok(info) if info.entry.is_dynamic() => {
                            eprintln!(
                                "skillcache: notice: {} from {origin} is dynamic and cannot be locked",
                                info.entry.uri()
                            );
                            seen.dynamic
                                .push((origin.clone(), info.entry.uri().clone()));
                        }
                        Ok(info) => pinned.push((origin.clone(), info.entry)),
                        Err(e) => errors.push(e),
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    pinned
}

async fn entry(ctx: &Ctx, origin: Origin, uri: &SkillUri, target: &Target) -> Result<Outcome> {
    let (cache, source) = connect(ctx, &origin, target, ApprovalPolicy::NotRequired, None)?;
    let info = cache.entry(&origin, uri).await?;
    render::entry(ctx.json, &origin, &info, revision(source.as_ref()));
    Ok(Outcome::Ok)
}

async fn approve(
    ctx: &Ctx,
    origin: Origin,
    uri: &SkillUri,
    locked: Option<&Path>,
    grant_tools: bool,
    target: &Target,
) -> Result<Outcome> {
    // The lock is read before any server starts: a missing or refused one is a usage error.
    let lock = locked
        .map(LockFile::read)
        .transpose()
        .map_err(Failure::given)?;
    let (cache, source) = connect(ctx, &origin, target, ApprovalPolicy::NotRequired, None)?;
    let info = cache.entry(&origin, uri).await?;
    // `--locked`: the entry as the server lists it now must be the pinned one (Declined, exit 5).
    if let Some(lock) = &lock {
        lock.check(&origin, &info.entry)?;
    }
    let grant = grant_tools
        .then(|| info.entry.requested_tools().cloned())
        .flatten();
    cache.approve(&origin, &info.entry, grant.clone()).await?;
    let version = revision(source.as_ref());
    render::approved(ctx.json, &origin, &info.entry, grant.as_ref(), version);
    Ok(Outcome::Ok)
}

/// `approve --from-lock`: approves each pinned skill whose entry is still exactly as pinned,
/// and nothing else; a skill that drifted is reported (exit 5) and left unapproved. At most
/// `--jobs` servers run at once.
async fn approve_from_lock(
    ctx: &Ctx,
    only: Option<&Origin>,
    path: &Path,
    grant_tools: bool,
    target: &Target,
) -> Result<Outcome> {
    let lock = Arc::new(LockFile::read(path).map_err(Failure::given)?);
    let cache = open(ctx, target, ApprovalPolicy::NotRequired, None)?;
    let servers = pinned_origins(&lock, only)
        .into_iter()
        .map(|o| {
            let source = source(ctx, &o, &target.reach)?;
            Ok((o, source))
        })
        .collect::<Result<Vec<_>>>()?;
    let done = many::each(&cache, servers, ctx.jobs, |cache, origin| {
        let lock = Arc::clone(&lock);
        async move { approve_pinned(&cache, &lock, &origin, grant_tools).await }
    })
    .await;
    let (mut approved, mut errors) = (Vec::new(), Vec::new());
    for (_, (rows, failed)) in done {
        approved.extend(rows);
        errors.extend(failed);
    }
    render::approved_from_lock(ctx.json, path, &approved);
    failed(errors)
}

/// Approves each skill `lock` pins of `origin` whose entry is still exactly as pinned: the rows
/// approved, and what failed.
async fn approve_pinned(
    cache: &SkillCache,
    lock: &LockFile,
    origin: &Origin,
    grant_tools: bool,
) -> (Vec<Value>, Vec<Error>) {
    let (mut approved, mut errors) = (Vec::new(), Vec::new());
    for locked in lock.skills().filter(|l| l.origin() == origin) {
        let info = match cache.entry(origin, locked.uri()).await {
            Ok(info) => info,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Err(e) = lock.check(origin, &info.entry) {
            errors.push(e);
            continue;
        }
        let grant = grant_tools
            .then(|| info.entry.requested_tools().cloned())
            .flatten();
        match cache.approve(origin, &info.entry, grant.clone()).await {
            Ok(()) => approved.push(render::approval_row(origin, &info.entry, grant.as_ref())),
            Err(e) => errors.push(e),
        }
    }
    (approved, errors)
}

/// `load`/`read`: the SKILL.md or one file, every file read first (`--all`), framed for model
/// context or not.
async fn load(ctx: &Ctx, load: Load) -> Result<Outcome> {
    // The gates are the library's (R-P1, the lock): with --require-approval or --locked, `load`
    // itself refuses the skill (exit 5) before any file is read.
    let lock = load
        .gate
        .locked
        .as_deref()
        .map(LockFile::read)
        .transpose()
        .map_err(Failure::given)?;
    let (cache, source) = connect(ctx, &load.origin, &load.target, load.gate.approval, lock)?;
    let info = cache.entry(&load.origin, &load.uri).await?;
    // `--all`: every file through the verified path; on a cold cache the whole skill (its
    // SKILL.md included) is published as one batch.
    let (skill, every) = if load.all {
        let (skill, every) = cache.load_all(&load.origin, &info.entry).await?;
        (skill, Some(every))
    } else {
        (cache.load(&load.origin, &info.entry).await?, None)
    };
    let file = match &load.reference {
        Some(r) => skill.read(r).await?,
        None => skill.skill_md().clone(),
    };
    if !ctx.json {
        if info.stale {
            render::stale_notice(&info.entry);
        }
        render::file_bytes(&file, load.framed);
        return Ok(Outcome::Ok);
    }
    let mut out = render::file_json(&file, &info.entry);
    out["stale"] = json!(info.stale);
    // What the approval in force granted (E7): `null` when nothing was granted, or when
    // approval was not required (then nothing is ever granted).
    out["granted_tools"] = json!(skill.granted_tools());
    if let Some(every) = &every {
        out["files"] = every
            .iter()
            .map(|f| render::file_json(f, &info.entry))
            .collect();
    }
    out["counters"] = render::counters_json(&cache);
    out["protocol_version"] = render::revision(revision(source.as_ref()));
    if load.framed {
        out["framed"] = json!(file.framed());
    }
    render::print_json(&out);
    Ok(Outcome::Ok)
}

fn local_cache(ctx: &Ctx) -> Result<SkillCache> {
    let cache = ctx.builder.clone().open()?;
    notice_healed(&cache);
    Ok(cache)
}

/// One line on stderr when the index was damaged and replaced at open (R-H6).
fn notice_healed(cache: &SkillCache) {
    if let Some(moved) = cache.healed_index() {
        eprintln!(
            "skillcache: notice: the cache index was damaged; moved it to {} and started a fresh one (cached files kept, approvals lost: approve again)",
            display_safe(&moved.to_string_lossy())
        );
    }
}

async fn entries(ctx: &Ctx, origin: Option<&Origin>) -> Result<Outcome> {
    let rows = local_cache(ctx)?.cached_entries(origin).await?;
    render::entries(ctx.json, &rows);
    Ok(Outcome::Ok)
}

async fn verify(ctx: &Ctx, origin: Option<&Origin>) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let bar = render::progress(ctx.json, 0, "verifying {bar:30} {pos}/{len} blobs");
    let progress = bar.clone();
    let report = cache
        .verify(origin, move |done, total| {
            progress.set_length(total as u64);
            progress.set_position(done as u64);
        })
        .await?;
    bar.finish_and_clear();
    render::verified(ctx.json, &report);
    Ok(if report.is_clean() {
        Outcome::Ok
    } else {
        Outcome::Code(3)
    })
}

async fn gc(ctx: &Ctx, max_bytes: Option<u64>) -> Result<Outcome> {
    let report = local_cache(ctx)?.gc(max_bytes).await?;
    render::collected(ctx.json, &report);
    Ok(Outcome::Ok)
}

/// `purge --origin`: everything of one origin. An origin the root holds nothing of is said to
/// be so, and the command still succeeds (exit 0): what was asked for, that nothing of it is
/// cached, holds. The purge runs anyway, as cheap as it is harmless, so that nothing a listing
/// missed survives it.
async fn purge(ctx: &Ctx, origin: &Origin) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let held = cache.origins().await?.contains(origin);
    cache.purge(origin).await?;
    render::purged(ctx.json, origin, held);
    Ok(Outcome::Ok)
}

/// `purge --absent`: every origin in the cache that `--config` does not name is removed (or,
/// with `--dry-run`, only listed). A config that names no server is refused (exit 2) before the
/// cache is opened: read as "keep nothing", it would remove every origin and its approvals,
/// which is `purge --all`, said explicitly (K7).
async fn purge_absent(ctx: &Ctx, dry_run: bool) -> Result<Outcome> {
    let (path, config) = ctx
        .config
        .as_ref()
        .ok_or_else(|| Failure::Usage("purge --absent needs --config".into()))?;
    let keep: Vec<Origin> = config.servers().map(|(o, _)| o.clone()).collect();
    if keep.is_empty() {
        return Err(Failure::Usage(format!(
            "{} names no server, so purge --absent would remove every origin in the cache and its approvals; nothing was removed (to remove every origin, say purge --all)",
            display_safe(&path.to_string_lossy())
        )));
    }
    purge_every(ctx, Some((path.as_path(), &keep)), dry_run).await
}

/// `purge --absent` (every origin but `keep`'s) and `purge --all` (`keep` is `None`): each origin
/// removed through the library's per-origin purge (R-Q3), one at a time, and named; with
/// `dry_run`, only listed. A purge that fails halfway names the origins it already removed
/// and those left (K7).
async fn purge_every(
    ctx: &Ctx,
    keep: Option<(&Path, &[Origin])>,
    dry_run: bool,
) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let mut absent = cache.origins().await?;
    if let Some((_, keep)) = keep {
        absent.retain(|o| !keep.contains(o));
    }
    let config = keep.map(|(path, _)| path);
    if dry_run {
        render::purged_many(ctx.json, config, &absent, true);
        return Ok(Outcome::Ok);
    }
    let mut removed = Vec::with_capacity(absent.len());
    for origin in &absent {
        if let Err(e) = cache.purge(origin).await {
            // The failing purge may have removed its origin before failing (its rows and files
            // go first; rewriting the index comes last): what is gone is what the cache no
            // longer holds, asked again, not what the loop got through.
            let (gone, left): (Vec<Origin>, Vec<Origin>) = match cache.origins().await {
                Ok(still) => absent.iter().cloned().partition(|o| !still.contains(o)),
                Err(_) => (removed.clone(), absent[removed.len()..].to_vec()),
            };
            render::purged_many(ctx.json, config, &gone, false);
            render::purge_stopped(&gone, &left);
            return Err(e.into());
        }
        removed.push(origin.clone());
    }
    render::purged_many(ctx.json, config, &removed, false);
    Ok(Outcome::Ok)
}

async fn stats(ctx: &Ctx) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let inventory = cache.inventory().await?;
    render::stats(ctx.json, &cache, &inventory);
    Ok(Outcome::Ok)
}

/// `inspect` takes one skill; given the folder `serve` takes (skill folders inside, no
/// `SKILL.md` of its own), say so and name the skills in it, rather than "SKILL.md is missing".
fn a_folder_of_skills(dir: &Path) -> Option<String> {
    if dir.join("SKILL.md").exists() {
        return None;
    }
    let mut skills: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(std::result::Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    skills.sort();
    let first = skills.first()?;
    let shown = skills
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if skills.len() > 5 { ", …" } else { "" };
    Some(format!(
        "{} is a folder of {} skills ({shown}{more}), not a skill: inspect one of them, e.g. `skillcache inspect {}`",
        dir.display(),
        skills.len(),
        dir.join(first).display()
    ))
}

fn inspect_dir(dir: &Path, base_uri: Option<String>) -> Result<Outcome> {
    let name = dir
        .canonicalize()?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let root = base_uri.unwrap_or_else(|| format!("skill://{name}"));
    let root = root
        .strip_suffix("/SKILL.md")
        .unwrap_or(&root)
        .trim_end_matches('/')
        .to_owned();
    if let Some(hint) = a_folder_of_skills(dir) {
        return Err(Failure::Usage(hint));
    }
    // One refusal of the root the user gave, not one per file URI made from it.
    if let Err(e) = SkillUri::parse(&format!("{root}/SKILL.md")) {
        return Err(Failure::Usage(format!("--base-uri: {e}")));
    }
    match inspect(dir, &root, &skillcache::entry::Validation::default()) {
        Ok(entry) => {
            render::print_json(&entry.to_json());
            Ok(Outcome::Ok)
        }
        Err(errors) => Err(Failure::Many(4, errors)),
    }
}
