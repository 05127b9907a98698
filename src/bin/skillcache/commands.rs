//! Each command: open the cache, connect the server if the command needs one, do one thing,
//! print it for a person or as JSON.

use std::io::Write as _;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use skillcache::cache::{ApprovalPolicy, DynamicPolicy, EntryInfo, SkillCache};
use skillcache::local::inspect;
use skillcache::server::SkillServer;
use skillcache::source::{McpSource, SkillSource};
use skillcache::{Error, Origin, SkillEntry, SkillFile, SkillUri};

use crate::{Cli, Command, Outcome, ServerArgs};

/// How a command failed.
pub(crate) enum Failure {
    /// One skillcache error (its kind picks the exit code).
    Skill(Box<Error>),
    /// Several reasons, with the exit code they share.
    Many(u8, Vec<Error>),
    /// A bad argument, found before any server was started (exit 2).
    Usage(String),
    /// Anything else (exit 1).
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Skill(Box::new(e))
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Other(Box::new(e))
    }
}

type Result<T> = std::result::Result<T, Failure>;

pub(crate) struct Ctx {
    pub(crate) json: bool,
    pub(crate) builder: skillcache::cache::SkillCacheBuilder,
}

fn print_json(v: &Value) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// A usage error for an argument: `what` (e.g. `--origin`) and why.
fn usage(what: &str, e: &Error) -> Failure {
    Failure::Usage(format!("invalid {what}: {e}"))
}

/// A `--stdio` line that does not split into a command.
fn stdio_usage(why: &str) -> Failure {
    Failure::Usage(format!("invalid --stdio: {why}"))
}

// `Error` is large (see `origin_arg`); this is the cold path.
#[allow(clippy::result_large_err)]
fn origin_usage(label: &str) -> Result<Origin> {
    Origin::new(label.to_owned()).map_err(|e| usage("--origin", &e))
}

/// Every argument of the command that can be checked without the cache or a server, checked
/// before anything else runs: a bad one is a usage error (exit 2), never a started server.
// `Error` is large (see `origin_arg`); this is the cold path.
#[allow(clippy::result_large_err)]
fn validate(command: &Command) -> Result<()> {
    let server = |s: &ServerArgs| -> Result<()> {
        origin_usage(&s.origin)?;
        if let Some(cmd) = &s.stdio {
            crate::cmdline::command(cmd).map_err(|e| stdio_usage(&e))?;
        }
        Ok(())
    };
    let uri = |text: &str| -> Result<()> {
        SkillUri::parse(text)
            .map(drop)
            .map_err(|e| usage("SKILL_URI", &e))
    };
    let folder = |dir: &std::path::Path| -> Result<()> {
        if dir.is_dir() {
            Ok(())
        } else {
            Err(Failure::Usage(format!("{} is not a folder", dir.display())))
        }
    };
    match command {
        Command::List { server: s } => server(s),
        Command::Entry {
            skill_uri,
            server: s,
        }
        | Command::Approve {
            skill_uri,
            server: s,
            ..
        }
        | Command::Load {
            skill_uri,
            server: s,
            ..
        }
        | Command::Read {
            skill_uri,
            server: s,
            ..
        } => {
            uri(skill_uri)?;
            server(s)
        }
        Command::Entries { origin } | Command::Verify { origin } => origin
            .as_deref()
            .map_or(Ok(()), |o| origin_usage(o).map(drop)),
        Command::Purge { origin } => origin_usage(origin).map(drop),
        Command::Inspect { dir, .. } | Command::Serve { dir, .. } => folder(dir),
        Command::Gc { .. } | Command::Stats | Command::Demo => Ok(()),
    }
}

pub(crate) async fn run(cli: Cli) -> Result<Outcome> {
    validate(&cli.command)?;
    let mut builder = SkillCache::builder()
        .isolation(cli.isolation.into())
        .request_timeout(cli.timeout)
        .connect_timeout(cli.timeout);
    // Without `--root`, the library's default applies: `$SKILLCACHE_ROOT` unless it is empty (an
    // empty `SKILLCACHE_ROOT=` is unset, as in the shell convention), else the XDG cache folder.
    if let Some(root) = &cli.root {
        builder = builder.root(root);
    }
    // Without --key-file the library's default applies (SKILLCACHE_KEY_FILE when not empty).
    if let Some(key) = cli.key_file.as_ref().filter(|k| !k.as_os_str().is_empty()) {
        builder = builder.key_file(key);
    }
    // A bad URL is a usage error (exit 2); an unreachable tier is not an error at all.
    #[cfg(feature = "l2")]
    if let Some(url) = &cli.l2 {
        builder = builder.l2(skillcache::L2::from_url(url)?);
    }
    let ctx = Ctx {
        json: cli.json,
        builder,
    };
    match cli.command {
        Command::List { server } => list(&ctx, &server).await,
        Command::Entry { skill_uri, server } => entry(&ctx, &server, &skill_uri).await,
        Command::Approve {
            skill_uri,
            grant_tools,
            server,
        } => approve(&ctx, &server, &skill_uri, grant_tools).await,
        Command::Load {
            skill_uri,
            require_approval,
            server,
        } => load(&ctx, &server, &skill_uri, None, require_approval).await,
        Command::Read {
            skill_uri,
            reference,
            require_approval,
            server,
        } => {
            load(
                &ctx,
                &server,
                &skill_uri,
                Some(&reference),
                require_approval,
            )
            .await
        }
        Command::Entries { origin } => entries(&ctx, origin.as_deref()),
        Command::Verify { origin } => verify(&ctx, origin.as_deref()),
        Command::Gc { max_bytes } => gc(&ctx, max_bytes),
        Command::Purge { origin } => purge(&ctx, &origin),
        Command::Stats => stats(&ctx),
        Command::Inspect { dir, base_uri } => inspect_dir(&dir, base_uri),
        Command::Serve {
            dir,
            ttl_ms,
            dynamic,
        } => {
            let server = dynamic
                .into_iter()
                .fold(SkillServer::new(dir).ttl_ms(ttl_ms), SkillServer::dynamic);
            tokio::task::spawn_blocking(move || server.serve_stdio())
                .await
                .map_err(|e| Failure::Other(Box::new(e)))??;
            Ok(Outcome::Ok)
        }
        Command::Demo => crate::demo::run(ctx.builder).await,
    }
}

/// The cache and the origin, bound to the server. Nothing is started yet: the server starts on
/// the first request that needs it (R-B4), so a warm load of a fresh entry never starts it.
/// `approval` is passed explicitly: the library requires approval by default, the CLI only with
/// `--require-approval` (as the README documents).
pub(crate) fn connect(
    ctx: &Ctx,
    s: &ServerArgs,
    approval: ApprovalPolicy,
) -> Result<(SkillCache, Origin)> {
    let origin = origin_usage(&s.origin)?;
    let dynamic = if s.allow_dynamic {
        DynamicPolicy::AllowUnverified
    } else {
        DynamicPolicy::Decline
    };
    let cache = ctx
        .builder
        .clone()
        .principal(s.principal.clone())
        .dynamic(dynamic)
        .approval(approval)
        .open()?;
    notice_healed(&cache);
    let source: Arc<dyn SkillSource> = match (&s.stdio, &s.url) {
        (Some(cmd), _) => Arc::new(McpSource::stdio(
            crate::cmdline::command(cmd).map_err(|e| stdio_usage(&e))?,
        )),
        (None, Some(url)) => Arc::new(McpSource::http(url)),
        (None, None) => return Err(Failure::Usage("--stdio or --url is required".into())),
    };
    cache.connect(origin.clone(), source);
    Ok((cache, origin))
}

fn skill_uri(text: &str) -> Result<SkillUri> {
    SkillUri::parse(text).map_err(|e| usage("SKILL_URI", &e))
}

fn entry_row(cache: &SkillCache, origin: &Origin, e: &SkillEntry) -> Value {
    let fresh = cache
        .core()
        .entry(origin, e.uri(), cache.principal())
        .ok()
        .flatten()
        .is_some_and(|s| s.fresh);
    let (files, bytes) = e
        .manifest()
        .map_or((0, 0), |m| (m.files().len(), m.total_bytes()));
    json!({
        "name": e.name(), "uri": e.uri().as_str(), "files": files, "bytes": bytes,
        "dynamic": e.is_dynamic(), "fresh": fresh,
        "binding": e.binding().map(|b| b.to_string()),
    })
}

async fn list(ctx: &Ctx, s: &ServerArgs) -> Result<Outcome> {
    let (cache, origin) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
    let listed = cache.list(&origin).await?;
    let rows: Vec<Value> = listed
        .iter()
        .map(|r| match r {
            Ok(info) => entry_row(&cache, &origin, &info.entry),
            Err(e) => json!({"error": e.to_string()}),
        })
        .collect();
    if ctx.json {
        print_json(&json!({"origin": origin.as_str(), "skills": rows}));
    } else {
        outln!(
            "{:<28} {:>5} {:>9}  {:<14} URI",
            "NAME",
            "FILES",
            "BYTES",
            "FLAGS"
        );
        for r in &rows {
            if let Some(err) = r.get("error") {
                outln!("{:<28} refused: {}", "-", err.as_str().unwrap_or_default());
                continue;
            }
            let flags = format!(
                "{}{}",
                if r["dynamic"] == true { "dynamic " } else { "" },
                if r["fresh"] == true { "fresh" } else { "stale" }
            );
            outln!(
                "{:<28} {:>5} {:>9}  {:<14} {}",
                r["name"].as_str().unwrap_or_default(),
                r["files"].as_u64().unwrap_or_default(),
                r["bytes"].as_u64().unwrap_or_default(),
                flags,
                r["uri"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(Outcome::Ok)
}

fn entry_json(origin: &Origin, info: &EntryInfo) -> Value {
    json!({
        "origin": origin.as_str(),
        "uri": info.entry.uri().as_str(),
        "binding": info.entry.binding().map(|b| b.to_string()),
        "from_cache": info.from_cache,
        "revoked": info.revoked,
        "changes": info.diff.as_ref().map(ToString::to_string),
        "entry": info.entry.to_json(),
    })
}

async fn entry(ctx: &Ctx, s: &ServerArgs, uri: &str) -> Result<Outcome> {
    let (cache, origin) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
    let info = cache.entry(&origin, &skill_uri(uri)?).await?;
    if ctx.json {
        print_json(&entry_json(&origin, &info));
    } else {
        let e = &info.entry;
        outln!(
            "origin   {origin}\nuri      {}\nname     {}\nbinding  {}",
            e.uri(),
            e.name(),
            e.binding()
                .map_or_else(|| "none (dynamic)".to_owned(), |b| b.to_string())
        );
        outln!(
            "from     {}",
            if info.from_cache {
                "cache (fresh)"
            } else {
                "server (skills/get)"
            }
        );
        for f in e.manifest().map_or(&[][..], |m| m.files()) {
            outln!("  {}  {:>8}  {}", f.digest(), f.size(), f.uri());
        }
        if info.revoked {
            outln!(
                "approval REVOKED: {}",
                info.diff
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
        }
    }
    Ok(Outcome::Ok)
}

async fn approve(ctx: &Ctx, s: &ServerArgs, uri: &str, grant_tools: bool) -> Result<Outcome> {
    let (cache, origin) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
    let info = cache.entry(&origin, &skill_uri(uri)?).await?;
    let grant = if grant_tools {
        info.entry.requested_tools().cloned()
    } else {
        None
    };
    cache.approve(&origin, &info.entry, grant.clone()).await?;
    let binding = info.entry.binding().map(|b| b.to_string());
    if ctx.json {
        print_json(
            &json!({"origin": origin.as_str(), "uri": info.entry.uri().as_str(), "binding": binding, "granted_tools": grant}),
        );
    } else {
        outln!(
            "approved {} from {origin} (binding {})",
            info.entry.uri(),
            binding.unwrap_or_default()
        );
    }
    Ok(Outcome::Ok)
}

pub(crate) fn file_json(f: &SkillFile, entry: &SkillEntry) -> Value {
    json!({
        "origin": f.origin().as_str(),
        "uri": f.uri().as_str(),
        "verified": f.verified(),
        "source": f.provenance().as_str(),
        "digest": f.digest().map(|d| d.to_string()),
        "size": f.bytes().len(),
        "binding": entry.binding().map(|b| b.to_string()),
        "retried": f.retried(),
        "stored": f.stored(),
    })
}

async fn load(
    ctx: &Ctx,
    s: &ServerArgs,
    uri: &str,
    reference: Option<&str>,
    require: bool,
) -> Result<Outcome> {
    // The gate is the library's (R-P1): with --require-approval, `load` itself refuses a skill
    // that is not approved as it is now (exit 5) before any file is read.
    let approval = if require {
        ApprovalPolicy::Required
    } else {
        ApprovalPolicy::NotRequired
    };
    let (cache, origin) = connect(ctx, s, approval)?;
    let info = cache.entry(&origin, &skill_uri(uri)?).await?;
    let skill = cache.load(&origin, &info.entry).await?;
    let file = match reference {
        Some(r) => skill.read(r).await?,
        None => skill.skill_md().clone(),
    };
    if ctx.json {
        let mut out = file_json(&file, &info.entry);
        out["counters"] = counters_json(&cache);
        print_json(&out);
    } else {
        // The bytes, unchanged.
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(file.bytes()).and_then(|()| out.flush()) {
            crate::stdout_failed(&e);
        }
    }
    Ok(Outcome::Ok)
}

fn local_cache(ctx: &Ctx) -> Result<SkillCache> {
    let cache = ctx.builder.clone().open()?;
    notice_healed(&cache);
    Ok(cache)
}

/// One line on stderr when the index was damaged and replaced at open (R-H6).
fn notice_healed(cache: &SkillCache) {
    if let Some(moved) = cache.core().healed_index() {
        eprintln!(
            "skillcache: notice: the cache index was damaged; moved it to {} and started a fresh one (cached files kept, approvals lost: approve again)",
            moved.display()
        );
    }
}

// `Error` is 128 bytes (a verification failure carries origin, URI and both digests); errors are
// the cold path, so the closure's large `Err` costs nothing that matters.
#[allow(clippy::result_large_err)]
fn origin_arg(origin: Option<&str>) -> Result<Option<Origin>> {
    origin.map(origin_usage).transpose()
}

fn entries(ctx: &Ctx, origin: Option<&str>) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let rows = cache.core().entries(origin_arg(origin)?.as_ref())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"origin": r.origin.as_str(), "uri": r.skill_uri, "scope": r.scope.as_str(), "principal": r.principal,
                   "files": r.files, "bytes": r.bytes, "dynamic": r.dynamic, "fresh": now < r.fetched_at_ms.saturating_add(r.ttl_ms)})
        })
        .collect();
    if ctx.json {
        print_json(&Value::Array(json_rows));
    } else {
        outln!(
            "{:<20} {:<8} {:>5} {:>9}  {:<6} URI",
            "ORIGIN",
            "SCOPE",
            "FILES",
            "BYTES",
            "FRESH"
        );
        for r in &json_rows {
            outln!(
                "{:<20} {:<8} {:>5} {:>9}  {:<6} {}",
                r["origin"].as_str().unwrap_or_default(),
                r["scope"].as_str().unwrap_or_default(),
                r["files"].as_u64().unwrap_or_default(),
                r["bytes"].as_u64().unwrap_or_default(),
                r["fresh"].as_bool().unwrap_or_default().to_string(),
                r["uri"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(Outcome::Ok)
}

fn verify(ctx: &Ctx, origin: Option<&str>) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let bar = if ctx.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("verifying {bar:30} {pos}/{len} blobs")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = cache
        .core()
        .verify(origin_arg(origin)?.as_ref(), |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
    bar.finish_and_clear();
    let pairs = |v: &[(Origin, skillcache::Digest)]| {
        v.iter()
            .map(|(o, d)| json!({"origin": o.as_str(), "digest": d.to_string()}))
            .collect::<Vec<_>>()
    };
    let out = json!({
        "checked": report.checked,
        "corrupt": pairs(&report.corrupt),
        "missing": pairs(&report.missing),
        "orphaned": pairs(&report.orphaned),
        "strays": report.strays.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    if ctx.json {
        print_json(&out);
    } else {
        outln!(
            "checked {} blobs: {} corrupt (quarantined), {} missing, {} orphaned, {} strays",
            report.checked,
            report.corrupt.len(),
            report.missing.len(),
            report.orphaned.len(),
            report.strays.len()
        );
        for (o, d) in &report.corrupt {
            outln!("  corrupt {d} (origin {o})");
        }
    }
    Ok(if report.is_clean() {
        Outcome::Ok
    } else {
        Outcome::Code(3)
    })
}

fn gc(ctx: &Ctx, max_bytes: Option<u64>) -> Result<Outcome> {
    let r = local_cache(ctx)?.core().gc(max_bytes)?;
    let out = json!({"unreferenced": r.unreferenced, "evicted": r.evicted, "temporaries": r.temporaries,
                     "bytes_before": r.bytes_before, "bytes_after": r.bytes_after, "over_budget": r.over_budget});
    if ctx.json {
        print_json(&out);
    } else {
        outln!(
            "gc: removed {} unreferenced and {} least-recently-used blobs, {} temporaries; {} -> {} bytes{}",
            r.unreferenced,
            r.evicted,
            r.temporaries,
            r.bytes_before,
            r.bytes_after,
            if r.over_budget {
                " (still over budget: the rest belongs to fresh entries)"
            } else {
                ""
            }
        );
    }
    Ok(Outcome::Ok)
}

fn purge(ctx: &Ctx, origin: &str) -> Result<Outcome> {
    let origin = origin_usage(origin)?;
    local_cache(ctx)?.core().purge(&origin)?;
    if ctx.json {
        print_json(&json!({"purged": origin.as_str()}));
    } else {
        outln!("purged origin {origin}");
    }
    Ok(Outcome::Ok)
}

fn stats(ctx: &Ctx) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let core = cache.core();
    let entries = core.entries(None)?;
    let blobs = core.index().blobs()?;
    let out = json!({
        "root": core.root().display().to_string(),
        "isolation": format!("{:?}", core.isolation()).to_lowercase(),
        "origins": core.index().origins()?.len(),
        "entries": entries.len(),
        "blobs": blobs.len(),
        "blob_bytes": blobs.iter().map(|(_, _, r)| r.size).sum::<u64>(),
        "quarantined": core.store().quarantined(),
        "schema_version": core.index().schema_version()?,
        // Rows seen while gathering these numbers that failed their seal (R-H3).
        "seal_failures": core.seal_failures(),
        "index_read_only": core.index().is_read_only(),
        // This process's counters (R-P4): the files this command served and fetched, and the
        // rows seen while gathering these numbers that failed their seal (R-H3).
        "counters": counters_json(&cache),
    });
    if ctx.json {
        print_json(&out);
    } else if let Value::Object(m) = out {
        for (k, v) in m {
            match v {
                Value::Object(counters) => {
                    for (c, n) in counters {
                        outln!("{:<15} {n}", format!("{k}.{c}"));
                    }
                }
                v => outln!(
                    "{k:<15} {}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                ),
            }
        }
    }
    Ok(Outcome::Ok)
}

/// The cache's counters (R-P4), as `stats` and `load --json` print them.
pub(crate) fn counters_json(cache: &SkillCache) -> Value {
    let s = cache.stats();
    json!({
        "hits_hashed": s.hits_hashed, "hits_evidence": s.hits_evidence, "misses": s.misses,
        "bytes_fetched": s.bytes_fetched, "bytes_served": s.bytes_served,
        "quarantines": s.quarantines, "retries": s.retries, "store_failures": s.store_failures,
        "seal_failures": s.seal_failures, "timeouts": s.timeouts,
        "l2_hits": s.l2_hits, "l2_misses": s.l2_misses, "l2_puts": s.l2_puts,
        "l2_rejected": s.l2_rejected, "l2_unavailable": s.l2_unavailable,
    })
}

fn inspect_dir(dir: &std::path::Path, base_uri: Option<String>) -> Result<Outcome> {
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
    match inspect(dir, &root, &skillcache::entry::Validation::default()) {
        Ok(skill) => {
            print_json(&skill.entry.to_json());
            Ok(Outcome::Ok)
        }
        Err(errors) => Err(Failure::Many(4, errors)),
    }
}
