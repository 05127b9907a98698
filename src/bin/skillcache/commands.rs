//! Each command: open the cache, connect the server if the command needs one, do one thing,
//! print it for a person or as JSON.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use skillcache::local::{SkillServer, inspect};
use skillcache::source::{McpSource, SkillSource};
use skillcache::{ApprovalPolicy, Counter, DynamicPolicy, EntryInfo, SkillCache, display_safe};
use skillcache::{
    Error, LockFile, McpConfig, Origin, SkillEntry, SkillFile, SkillUri, Verification,
};

use crate::failure::Failure;
use crate::{Cli, Command, Outcome, ServeArgs, ServerArgs};

type Result<T> = std::result::Result<T, Failure>;

pub(crate) struct Ctx {
    pub(crate) json: bool,
    pub(crate) builder: skillcache::SkillCacheBuilder,
    /// `--config`: its path, and the file read and checked.
    config: Option<(std::path::PathBuf, McpConfig)>,
    /// `--offline`: no server is needed, none is started.
    offline: bool,
    /// `--isolation`, as the builder was given it (`stats` and the demo print it).
    isolation: skillcache::Isolation,
}

/// `--json`: one value whose text is inert (R-E5) and whose strings are exactly the server's.
fn print_json(v: &Value) {
    outln!("{}", crate::inert::json(v));
}

/// A string of a JSON row, display-safe for a person (R-E5).
fn shown(v: &Value) -> impl std::fmt::Display + '_ {
    display_safe(v.as_str().unwrap_or_default())
}

/// A usage error for an argument: `what` (e.g. `--origin`) and why.
fn usage(what: &str, e: &dyn std::fmt::Display) -> Failure {
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
fn validate(cli: &Cli) -> Result<()> {
    let has_config = cli.config.is_some();
    // `all`: the command may go without `--origin` (every configured server, or every origin
    // of a lock file).
    let server = |s: &ServerArgs, all: bool| -> Result<()> {
        let direct = s.stdio.is_some() || s.url.is_some();
        match &s.origin {
            Some(o) => drop(origin_usage(o)?),
            None if all && !direct => {}
            None => return Err(Failure::Usage("--origin is required".into())),
        }
        if let Some(cmd) = &s.stdio {
            crate::cmdline::command(cmd).map_err(|e| stdio_usage(&e))?;
        }
        if !(direct || has_config || cli.offline) {
            return Err(Failure::Usage(
                "a server is required: --stdio, --url, or --config with --origin NAME (or --offline)"
                    .into(),
            ));
        }
        Ok(())
    };
    let every_configured = |s: &ServerArgs| -> Result<()> {
        if s.origin.is_none() && !has_config {
            return Err(Failure::Usage(
                "--all without --origin means every server of --config: give --config".into(),
            ));
        }
        server(s, true)
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
            Err(Failure::Usage(format!(
                "{} is not a folder",
                display_safe(&dir.to_string_lossy())
            )))
        }
    };
    match &cli.command {
        Command::List {
            all: true,
            server: s,
            ..
        } => every_configured(s),
        Command::List { server: s, .. } => server(s, false),
        Command::Lock {
            skill_uris,
            all,
            server: s,
            ..
        } => {
            if *all {
                return every_configured(s);
            }
            if skill_uris.is_empty() {
                return Err(Failure::Usage("name the skills to lock, or --all".into()));
            }
            skill_uris.iter().try_for_each(|u| uri(u))?;
            server(s, false)
        }
        Command::Approve {
            skill_uri,
            server: s,
            ..
        } => {
            if let Some(u) = skill_uri {
                uri(u)?;
            }
            server(s, skill_uri.is_none())
        }
        Command::Entry {
            skill_uri,
            server: s,
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
            server(s, false)
        }
        Command::Entries { origin } | Command::Verify { origin } => origin
            .as_deref()
            .map_or(Ok(()), |o| origin_usage(o).map(drop)),
        Command::Purge { origin, .. } => purge_args(origin.as_deref(), has_config),
        Command::Inspect { dir, .. } => folder(dir),
        Command::Serve(args) => serve_usage(args).and_then(|()| folder(&args.dir)),
        Command::Gc { .. } | Command::Stats | Command::Demo => Ok(()),
    }
}

/// `purge`: one origin by a valid label, or `--absent` against `--config`.
// `Error` is large (see `origin_arg`); this is the cold path.
#[allow(clippy::result_large_err)]
fn purge_args(origin: Option<&str>, has_config: bool) -> Result<()> {
    match origin {
        Some(o) => origin_usage(o).map(drop),
        None if has_config => Ok(()),
        None => Err(Failure::Usage(
            "purge --absent removes every origin --config does not name: give --config".into(),
        )),
    }
}

// The builder, then one arm per command: a dispatch table grows with the commands' flags.
#[allow(clippy::too_many_lines)]
pub(crate) async fn run(cli: Cli) -> Result<Outcome> {
    validate(&cli)?;
    // Read before anything starts: a refused file is exit 2 with its path and field.
    let config = match cli.config.as_deref() {
        Some(path) => Some((path.to_owned(), McpConfig::read(path)?)),
        None => None,
    };
    let mut builder = SkillCache::builder()
        .isolation(cli.isolation.into())
        .request_timeout(cli.timeout)
        .connect_timeout(cli.timeout)
        .offline(cli.offline)
        .allow_stale(cli.allow_stale);
    // Without `--root`, the library's default applies: `$SKILLCACHE_ROOT` unless it is empty (an
    // empty `SKILLCACHE_ROOT=` is unset, as in the shell convention), else the XDG cache folder.
    if let Some(root) = &cli.root {
        builder = builder.root(root);
    }
    // Without --key-file the library's default applies (SKILLCACHE_KEY_FILE when not empty).
    if let Some(key) = cli.key_file.as_ref().filter(|k| !k.as_os_str().is_empty()) {
        builder = builder.key_file(key);
    }
    if let Some(quota) = cli.origin_quota {
        builder = builder.origin_quota(quota);
    }
    // A bad URL is a usage error (exit 2); an unreachable tier is not an error at all.
    #[cfg(feature = "l2")]
    if let Some(url) = &cli.l2 {
        builder = builder.l2(skillcache::L2::from_url(url)?);
    }
    let ctx = Ctx {
        json: cli.json,
        builder,
        config,
        offline: cli.offline,
        isolation: cli.isolation.into(),
    };
    match cli.command {
        Command::List {
            all: true,
            local_names,
            local_names_file,
            ..
        } => list_all(&ctx, &local_names, local_names_file.as_deref()).await,
        Command::List { server, .. } => list(&ctx, &server).await,
        Command::Lock {
            skill_uris,
            all,
            output,
            server,
        } => lock(&ctx, &server, &skill_uris, all, &output).await,
        Command::Entry { skill_uri, server } => entry(&ctx, &server, &skill_uri).await,
        Command::Approve {
            skill_uri: Some(skill_uri),
            grant_tools,
            server,
            ..
        } => approve(&ctx, &server, &skill_uri, grant_tools).await,
        Command::Approve {
            from_lock,
            grant_tools,
            server,
            ..
        } => {
            let lock =
                from_lock.ok_or_else(|| Failure::Usage("name a skill or --from-lock".into()))?;
            approve_from_lock(&ctx, &server, &lock, grant_tools).await
        }
        Command::Load {
            skill_uri,
            require_approval,
            locked,
            all,
            framed,
            server,
        } => {
            let gate = Gate {
                require_approval,
                locked,
            };
            load(&ctx, &server, &skill_uri, None, gate, all, framed).await
        }
        Command::Read {
            skill_uri,
            reference,
            require_approval,
            locked,
            framed,
            server,
        } => {
            let gate = Gate {
                require_approval,
                locked,
            };
            load(
                &ctx,
                &server,
                &skill_uri,
                Some(&reference),
                gate,
                false,
                framed,
            )
            .await
        }
        Command::Entries { origin } => entries(&ctx, origin.as_deref()).await,
        Command::Verify { origin } => verify(&ctx, origin.as_deref()).await,
        Command::Gc { max_bytes } => gc(&ctx, max_bytes).await,
        Command::Purge {
            origin, dry_run, ..
        } => purge(&ctx, origin.as_deref(), dry_run).await,
        Command::Stats => stats(&ctx).await,
        Command::Inspect { dir, base_uri } => inspect_dir(&dir, base_uri),
        Command::Serve(args) => run_serve(args).await,
        Command::Demo => crate::demo::run(ctx.builder, ctx.isolation, cli.root, cli.key_file).await,
    }
}

/// R-E2: `--http` on an address other than loopback would make every published skill
/// readable from the network; only an explicit flag may ask for that.
#[allow(clippy::result_large_err)]
fn serve_usage(args: &ServeArgs) -> Result<()> {
    match args.http {
        Some(addr) if !addr.ip().is_loopback() && !args.allow_remote => {
            Err(Failure::Usage(format!(
                "--http {addr} is not a loopback address: it would serve every published skill to anyone who can reach it; pass --allow-remote to mean that"
            )))
        }
        _ => Ok(()),
    }
}

/// `serve`: a folder of skills on rmcp's server side, over stdio or Streamable HTTP.
async fn run_serve(args: ServeArgs) -> Result<Outcome> {
    let ServeArgs {
        dir,
        ttl_ms,
        dynamic,
        http,
        directory_read,
        watch_ms,
        lenient,
        // Checked before anything ran (`validate`).
        allow_remote: _,
    } = args;
    let options = dynamic.into_iter().fold(
        SkillServer::new(dir)
            .ttl_ms(ttl_ms)
            .directory_read(directory_read)
            .lenient(lenient)
            .watch_interval(std::time::Duration::from_millis(watch_ms)),
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

/// The cache and the origin, bound to the server. Nothing is started yet: the server starts on
/// the first request that needs it (R-B4), so a warm load of a fresh entry never starts it.
/// `approval` is passed explicitly: the library requires approval by default, the CLI only with
/// `--require-approval` (as the README documents). The source is returned too, to report the
/// protocol revision it negotiated.
pub(crate) fn connect(
    ctx: &Ctx,
    s: &ServerArgs,
    approval: ApprovalPolicy,
) -> Result<(SkillCache, Origin, Option<Arc<McpSource>>)> {
    let label = s
        .origin
        .as_deref()
        .ok_or_else(|| Failure::Usage("--origin is required".into()))?;
    let origin = origin_usage(label)?;
    let cache = open(ctx, s, approval, None)?;
    let source = bind(ctx, &cache, &origin, s)?;
    Ok((cache, origin, source))
}

/// The cache as `s` and the gate ask; nothing is connected yet.
fn open(
    ctx: &Ctx,
    s: &ServerArgs,
    approval: ApprovalPolicy,
    lock: Option<LockFile>,
) -> Result<SkillCache> {
    let dynamic = if s.allow_dynamic {
        DynamicPolicy::AllowUnverified
    } else {
        DynamicPolicy::Decline
    };
    let mut builder = ctx
        .builder
        .clone()
        .principal(s.principal.clone())
        .dynamic(dynamic)
        .approval(approval);
    if let Some(lock) = lock {
        builder = builder.locked(lock);
    }
    let cache = builder.open()?;
    notice_healed(&cache);
    Ok(cache)
}

/// Binds `origin` to its server: `--stdio`/`--url`, else the server `--config` names `origin`.
/// Offline, with neither, nothing is bound (nothing would be asked). The source is returned to
/// report the protocol revision it negotiated.
fn bind(
    ctx: &Ctx,
    cache: &SkillCache,
    origin: &Origin,
    s: &ServerArgs,
) -> Result<Option<Arc<McpSource>>> {
    let source: Arc<McpSource> = match (&s.stdio, &s.url, &ctx.config) {
        (Some(cmd), _, _) => Arc::new(McpSource::stdio(
            crate::cmdline::command(cmd).map_err(|e| stdio_usage(&e))?,
        )),
        (None, Some(url), _) => Arc::new(McpSource::http(url)),
        (None, None, Some((path, config))) => match config.server(origin.as_str()) {
            Some(server) => Arc::new(server.source()?),
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
        (None, None, None) if ctx.offline => return Ok(None),
        (None, None, None) => {
            return Err(Failure::Usage(
                "a server is required: --stdio, --url, or --config".into(),
            ));
        }
    };
    cache.connect(origin.clone(), Arc::clone(&source) as Arc<dyn SkillSource>);
    Ok(Some(source))
}

/// The protocol revision the source negotiated, for `--json`: null when the server was never
/// contacted (a warm load of a fresh entry, or offline).
fn revision(source: Option<&Arc<McpSource>>) -> Value {
    source
        .and_then(|s| s.protocol_version())
        .map_or(Value::Null, |v| json!(v))
}

fn skill_uri(text: &str) -> Result<SkillUri> {
    SkillUri::parse(text).map_err(|e| usage("SKILL_URI", &e))
}

async fn entry_row(cache: &SkillCache, origin: &Origin, e: &SkillEntry) -> Value {
    let fresh = cache.is_fresh(origin, e.uri()).await.unwrap_or(false);
    let (files, bytes) = e
        .manifest()
        .map_or((0, 0), |m| (m.files().len(), m.total_bytes()));
    json!({
        "name": e.name(), "uri": e.uri().as_str(), "files": files, "bytes": bytes,
        "dynamic": e.is_dynamic(), "fresh": fresh,
        "binding": e.binding().map(|b| b.to_string()),
    })
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

async fn list(ctx: &Ctx, s: &ServerArgs) -> Result<Outcome> {
    let (cache, origin, source) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
    let rows = list_rows(&cache, &origin).await?;
    if ctx.json {
        print_json(&json!({
            "origin": origin.as_str(),
            "protocol_version": revision(source.as_ref()),
            "skills": rows,
        }));
    } else {
        print_rows(&rows, false);
    }
    Ok(Outcome::Ok)
}

/// A progress bar on stderr, drawn only for a person at a terminal.
fn progress(ctx: &Ctx, len: usize, template: &str) -> ProgressBar {
    let bar = if ctx.json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The configured servers, with the one cache they are all bound to (one origin each).
fn every_configured(ctx: &Ctx, s: &ServerArgs) -> Result<(SkillCache, Vec<Origin>)> {
    let (_, config) = ctx
        .config
        .as_ref()
        .ok_or_else(|| Failure::Usage("--all needs --config".into()))?;
    let cache = open(ctx, s, ApprovalPolicy::NotRequired, None)?;
    let origins: Vec<Origin> = config.servers().map(|(o, _)| o.clone()).collect();
    for origin in &origins {
        bind(ctx, &cache, origin, s)?;
    }
    Ok((cache, origins))
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
async fn list_all(ctx: &Ctx, given: &[String], file: Option<&Path>) -> Result<Outcome> {
    // `--local-names "a, b"` means `a` and `b`.
    let mut local: Vec<String> = given.iter().map(|n| n.trim().to_owned()).collect();
    if let Some(path) = file {
        local.extend(read_local_names(path)?);
    }
    let plain = ServerArgs {
        origin: None,
        stdio: None,
        url: None,
        principal: String::new(),
        allow_dynamic: false,
    };
    let (cache, origins) = every_configured(ctx, &plain)?;
    let names: Vec<&str> = local.iter().map(String::as_str).collect();
    let catalog = cache.catalog(&names).await?;
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
            .map(|(_, e)| e.to_string())
            .collect();
        let mut listed = json!({"origin": origin.as_str(), "skills": rows});
        if let Some(first) = errors.first() {
            listed["error"] = json!(first);
            listed["errors"] = json!(errors);
        }
        out.push(listed);
    }
    let collisions = collisions(&catalog, &local);
    if ctx.json {
        print_json(&json!({"origins": out, "collisions": collisions}));
    } else {
        for o in &out {
            outln!("origin {}", shown(&o["origin"]));
            if let Some(rows) = o.get("skills").and_then(Value::as_array) {
                print_rows(rows, true);
            }
            for e in o
                .get("errors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                outln!("  failed: {}", e.as_str().unwrap_or_default());
            }
        }
    }
    for c in &collisions {
        let parties: Vec<String> = c["handles"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|h| {
                if c["local"] == true && h == c["name"] {
                    format!("{h} (local skill)")
                } else {
                    h.to_owned()
                }
            })
            .collect();
        eprintln!(
            "skillcache: notice: {} skills are named {:?}: {}; each is listed under its own handle, none stands in for another",
            parties.len(),
            c["name"].as_str().unwrap_or_default(),
            parties.join(", ")
        );
    }
    // Every failure is reported; the first one's kind decides the exit code.
    for (_, e) in catalog.failures() {
        crate::report(e);
    }
    Ok(catalog
        .failures()
        .first()
        .map_or(Outcome::Ok, |(_, e)| Outcome::Code(crate::exit_code(e))))
}

/// Every name the catalog holds more than once, or shares with a local skill: the name, whether
/// a local skill has it, and the handles of every party (a local skill's is its bare name).
fn collisions(catalog: &skillcache::Catalog, local: &[String]) -> Vec<Value> {
    let mut by_name: std::collections::BTreeMap<&str, Vec<&str>> =
        std::collections::BTreeMap::new();
    for skill in catalog.skills() {
        if !skill.collides_with().is_empty() {
            by_name
                .entry(skill.entry().name())
                .or_default()
                .push(skill.handle());
        }
    }
    by_name
        .into_iter()
        .map(|(name, mut handles)| {
            let is_local = local.iter().any(|l| l == name);
            if is_local {
                handles.push(name);
            }
            handles.sort_unstable();
            json!({"name": name, "local": is_local, "handles": handles})
        })
        .collect()
}

/// The largest `--local-names-file` read: a list of names, far below this.
const MAX_LOCAL_NAMES_BYTES: u64 = 1 << 20;

/// `--local-names-file`: one name a line; blank lines and `#` comments skipped. Read by the host
/// file rules (R-E4) the library's reader keeps for config and lock files: opened without
/// blocking and without taking a terminal, the opened descriptor must be a regular file (a FIFO
/// is refused at once), bounded, UTF-8, and the refusal names the path display-safe and quotes
/// nothing of the file.
fn read_local_names(path: &Path) -> Result<Vec<String>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let refused = |why: &dyn std::fmt::Display| {
        Failure::Usage(format!(
            "local names file {}: {why}",
            display_safe(&path.to_string_lossy())
        ))
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refused(&e))?;
    if !file.metadata().map_err(|e| refused(&e))?.is_file() {
        return Err(refused(&"not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOCAL_NAMES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refused(&e))?;
    if bytes.len() as u64 > MAX_LOCAL_NAMES_BYTES {
        return Err(refused(&format!("over {MAX_LOCAL_NAMES_BYTES} bytes")));
    }
    let text = String::from_utf8(bytes).map_err(|_| refused(&"not UTF-8"))?;
    let mut names = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        // Checked here by the library's rule, so that a refusal names the line and quotes
        // nothing of the file (R-E4: the path may be a link to a secrets file).
        if name.contains([':', '/']) {
            return Err(refused(&format!(
                "line {}: a local skill name must contain no ':' or '/'",
                n + 1
            )));
        }
        names.push(name.to_owned());
    }
    Ok(names)
}

/// The rows of one origin's listing; with `handles`, each skill's catalog handle in place of
/// its name (the handle ends in the name).
fn print_rows(rows: &[Value], handles: bool) {
    let (title, key) = if handles {
        ("HANDLE", "handle")
    } else {
        ("NAME", "name")
    };
    outln!(
        "{:<28} {:>5} {:>9}  {:<14} URI",
        title,
        "FILES",
        "BYTES",
        "FLAGS"
    );
    for r in rows {
        if let Some(err) = r.get("error") {
            // The error's own text: skillcache's errors are display-safe already.
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
            shown(&r[key]),
            r["files"].as_u64().unwrap_or_default(),
            r["bytes"].as_u64().unwrap_or_default(),
            flags,
            shown(&r["uri"])
        );
    }
}

/// `lock`: pins the named skills (or every skill) as they are now; an existing lock file is
/// updated, keeping its other pins.
async fn lock(
    ctx: &Ctx,
    s: &ServerArgs,
    uris: &[String],
    all: bool,
    output: &Path,
) -> Result<Outcome> {
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
    let (cache, origins) = if s.origin.is_some() {
        let (cache, origin, _) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
        (cache, vec![origin])
    } else {
        every_configured(ctx, s)?
    };
    let mut pinned: Vec<(Origin, SkillEntry)> = Vec::new();
    let mut errors = Vec::new();
    if all {
        let bar = progress(
            ctx,
            origins.len(),
            "locking {bar:30} {pos}/{len} servers {msg}",
        );
        for origin in &origins {
            bar.set_message(origin.as_str().to_owned());
            match cache.list(origin).await {
                Ok(listed) => {
                    for r in listed {
                        match r {
                            // A dynamic skill has no digests to pin: said, not fatal for --all.
                            Ok(info) if info.entry.is_dynamic() => eprintln!(
                                "skillcache: notice: {} from {origin} is dynamic and cannot be locked",
                                info.entry.uri()
                            ),
                            Ok(info) => pinned.push((origin.clone(), info.entry)),
                            Err(e) => errors.push(e),
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
    } else {
        for text in uris {
            match cache.entry(&origins[0], &skill_uri(text)?).await {
                Ok(info) => pinned.push((origins[0].clone(), info.entry)),
                Err(e) => errors.push(e),
            }
        }
    }
    for (origin, entry) in &pinned {
        if let Err(e) = lock.insert(origin, entry) {
            errors.push(e);
        }
    }
    lock.write(output)?;
    let rows: Vec<Value> = pinned
        .iter()
        .map(|(o, e)| {
            json!({"origin": o.as_str(), "uri": e.uri().as_str(),
                   "binding": e.binding().map(|b| b.to_string()),
                   "files": e.manifest().map_or(0, |m| m.files().len())})
        })
        .collect();
    if ctx.json {
        print_json(&json!({"lock": output.display().to_string(), "locked": rows}));
    } else {
        for r in &rows {
            outln!(
                "locked {} from {} (files: {}, binding {})",
                shown(&r["uri"]),
                shown(&r["origin"]),
                r["files"],
                shown(&r["binding"])
            );
        }
        outln!(
            "wrote {} ({} skills pinned)",
            display_safe(&output.to_string_lossy()),
            lock.skills().count()
        );
    }
    failed(errors)
}

fn entry_json(origin: &Origin, info: &EntryInfo) -> Value {
    json!({
        "origin": origin.as_str(),
        "uri": info.entry.uri().as_str(),
        "binding": info.entry.binding().map(|b| b.to_string()),
        "from_cache": info.from_cache,
        "stale": info.stale,
        "revoked": info.revoked,
        "changes": info.diff.as_ref().map(ToString::to_string),
        "entry": info.entry.to_json(),
    })
}

async fn entry(ctx: &Ctx, s: &ServerArgs, uri: &str) -> Result<Outcome> {
    let (cache, origin, source) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
    let info = cache.entry(&origin, &skill_uri(uri)?).await?;
    if ctx.json {
        let mut out = entry_json(&origin, &info);
        out["protocol_version"] = revision(source.as_ref());
        print_json(&out);
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
            match (info.from_cache, info.stale) {
                (true, true) => "cache (STALE: offline, past its ttlMs)",
                (true, false) => "cache (fresh)",
                (false, _) => "server (skills/get)",
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
    let (cache, origin, source) = connect(ctx, s, ApprovalPolicy::NotRequired)?;
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
            &json!({"origin": origin.as_str(), "uri": info.entry.uri().as_str(), "binding": binding,
                    "granted_tools": grant, "requested_tools": info.entry.requested_tools(),
                    "protocol_version": revision(source.as_ref())}),
        );
    } else {
        outln!(
            "approved {} from {origin} (binding {})",
            info.entry.uri(),
            binding.unwrap_or_default()
        );
        outln!(
            "{}",
            grant_line(grant.as_ref(), info.entry.requested_tools())
        );
    }
    Ok(Outcome::Ok)
}

/// What an approval granted, for a person (E7): the grant is shown when it is made, beside what
/// the skill asks for, so a grant wider than expected is seen at once.
fn grant_line(granted: Option<&Value>, requested: Option<&Value>) -> String {
    // The server's text, inert (R-E5): an escape code in `allowed-tools` must not hide a tool
    // from the person granting it.
    let tools = |v: Option<&Value>| match v {
        None => "none".to_owned(),
        Some(Value::String(s)) => display_safe(s).to_string(),
        Some(other) => display_safe(&other.to_string()).to_string(),
    };
    format!(
        "  granted tools: {} (allowed-tools asks for: {})",
        tools(granted),
        tools(requested)
    )
}

/// `approve --from-lock`: approves each pinned skill whose entry is still exactly as pinned,
/// and nothing else; a skill that drifted is reported (exit 5) and left unapproved.
async fn approve_from_lock(
    ctx: &Ctx,
    s: &ServerArgs,
    path: &Path,
    grant_tools: bool,
) -> Result<Outcome> {
    let lock = LockFile::read(path)?;
    let only = s.origin.as_deref().map(origin_usage).transpose()?;
    let cache = open(ctx, s, ApprovalPolicy::NotRequired, None)?;
    let mut origins: Vec<Origin> = lock
        .skills()
        .map(|l| l.origin().clone())
        .filter(|o| only.as_ref().is_none_or(|only| only == o))
        .collect();
    origins.dedup();
    for origin in &origins {
        bind(ctx, &cache, origin, s)?;
    }
    let mut approved = Vec::new();
    let mut errors = Vec::new();
    for locked in lock.skills().filter(|l| origins.contains(l.origin())) {
        let origin = locked.origin();
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
        let requested = info.entry.requested_tools().cloned();
        match cache.approve(origin, &info.entry, grant.clone()).await {
            Ok(()) => approved.push(
                json!({"origin": origin.as_str(), "uri": locked.uri().as_str(),
                                           "binding": locked.binding().to_string(),
                                           "granted_tools": grant, "requested_tools": requested}),
            ),
            Err(e) => errors.push(e),
        }
    }
    if ctx.json {
        print_json(&json!({"lock": path.display().to_string(), "approved": approved}));
    } else {
        for a in &approved {
            outln!(
                "approved {} from {} (binding {})",
                shown(&a["uri"]),
                shown(&a["origin"]),
                shown(&a["binding"])
            );
            let present = |k: &str| Some(&a[k]).filter(|v| !v.is_null());
            outln!(
                "{}",
                grant_line(present("granted_tools"), present("requested_tools"))
            );
        }
    }
    failed(errors)
}

pub(crate) fn file_json(f: &SkillFile, entry: &SkillEntry) -> Value {
    json!({
        "origin": f.origin().as_str(),
        "uri": f.uri().as_str(),
        "verified": matches!(f.verification(), Verification::Verified(_)),
        "source": f.provenance().to_string(),
        "digest": match f.verification() {
            Verification::Verified(d) => Some(d.to_string()),
            Verification::Unverified => None,
        },
        "size": f.bytes().len(),
        "binding": entry.binding().map(|b| b.to_string()),
        "retried": f.retried(),
        "stored": f.stored(),
    })
}

/// What `load`/`read` require before any file is read.
struct Gate {
    /// `--require-approval`.
    require_approval: bool,
    /// `--locked FILE`.
    locked: Option<PathBuf>,
}

async fn load(
    ctx: &Ctx,
    s: &ServerArgs,
    uri: &str,
    reference: Option<&str>,
    gate: Gate,
    all: bool,
    framed: bool,
) -> Result<Outcome> {
    // The gates are the library's (R-P1, the lock): with --require-approval or --locked, `load`
    // itself refuses the skill (exit 5) before any file is read.
    let approval = if gate.require_approval {
        ApprovalPolicy::Required
    } else {
        ApprovalPolicy::NotRequired
    };
    let lock = gate.locked.as_deref().map(LockFile::read).transpose()?;
    let label = s
        .origin
        .as_deref()
        .ok_or_else(|| Failure::Usage("--origin is required".into()))?;
    let origin = origin_usage(label)?;
    let cache = open(ctx, s, approval, lock)?;
    let source = bind(ctx, &cache, &origin, s)?;
    let info = cache.entry(&origin, &skill_uri(uri)?).await?;
    // `--all`: every file through the verified path; on a cold cache the whole skill (its
    // SKILL.md included) is published as one batch.
    let (skill, every) = if all {
        let (skill, every) = cache.load_all(&origin, &info.entry).await?;
        (skill, Some(every))
    } else {
        (cache.load(&origin, &info.entry).await?, None)
    };
    let file = match reference {
        Some(r) => skill.read(r).await?,
        None => skill.skill_md().clone(),
    };
    if ctx.json {
        let mut out = file_json(&file, &info.entry);
        out["stale"] = json!(info.stale);
        // What the approval in force granted (E7): `null` when nothing was granted, or when
        // approval was not required (then nothing is ever granted).
        out["granted_tools"] = json!(skill.granted_tools());
        if let Some(every) = &every {
            out["files"] = every.iter().map(|f| file_json(f, &info.entry)).collect();
        }
        out["counters"] = counters_json(&cache);
        out["protocol_version"] = revision(source.as_ref());
        if framed {
            out["framed"] = json!(file.framed());
        }
        print_json(&out);
    } else {
        if info.stale {
            eprintln!(
                "skillcache: notice: offline: the cached entry of {} is stale (past its ttlMs)",
                info.entry.uri()
            );
        }
        // The bytes, unchanged; or, with `--framed`, inside the frame for model context (R-Q2).
        // To a pipe or a file, those bytes unchanged: they are what a script asked for. To a
        // person at a terminal, the text with everything hidden escaped (R-E5): a SKILL.md is
        // the server's text, and its escape codes would drive the terminal.
        let framed = framed.then(|| file.framed());
        let bytes = framed.as_ref().map_or(file.bytes(), String::as_bytes);
        let mut out = std::io::stdout().lock();
        let written = if out.is_terminal() {
            out.write_all(crate::inert::file_text(bytes).as_bytes())
        } else {
            out.write_all(bytes)
        };
        if let Err(e) = written.and_then(|()| out.flush()) {
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
    if let Some(moved) = cache.healed_index() {
        eprintln!(
            "skillcache: notice: the cache index was damaged; moved it to {} and started a fresh one (cached files kept, approvals lost: approve again)",
            display_safe(&moved.to_string_lossy())
        );
    }
}

// `Error` is 128 bytes (a verification failure carries origin, URI and both digests); errors are
// the cold path, so the closure's large `Err` costs nothing that matters.
#[allow(clippy::result_large_err)]
fn origin_arg(origin: Option<&str>) -> Result<Option<Origin>> {
    origin.map(origin_usage).transpose()
}

async fn entries(ctx: &Ctx, origin: Option<&str>) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let rows = cache.cached_entries(origin_arg(origin)?.as_ref()).await?;
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"origin": r.origin.as_str(), "uri": r.uri.as_str(), "scope": r.scope.to_string(), "principal": r.principal,
                   "files": r.files, "bytes": r.bytes, "dynamic": r.files == 0, "fresh": r.fresh})
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
                shown(&r["origin"]),
                shown(&r["scope"]),
                r["files"].as_u64().unwrap_or_default(),
                r["bytes"].as_u64().unwrap_or_default(),
                r["fresh"].as_bool().unwrap_or_default().to_string(),
                shown(&r["uri"])
            );
        }
    }
    Ok(Outcome::Ok)
}

async fn verify(ctx: &Ctx, origin: Option<&str>) -> Result<Outcome> {
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
    let progress = bar.clone();
    let report = cache
        .verify(origin_arg(origin)?.as_ref(), move |done, total| {
            progress.set_length(total as u64);
            progress.set_position(done as u64);
        })
        .await?;
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

async fn gc(ctx: &Ctx, max_bytes: Option<u64>) -> Result<Outcome> {
    let r = local_cache(ctx)?.gc(max_bytes).await?;
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

/// `purge`: one origin, or with `--absent` (no `--origin`) every origin `--config` lacks.
async fn purge(ctx: &Ctx, origin: Option<&str>, dry_run: bool) -> Result<Outcome> {
    let Some(origin) = origin else {
        return purge_absent(ctx, dry_run).await;
    };
    let origin = origin_usage(origin)?;
    local_cache(ctx)?.purge(&origin).await?;
    if ctx.json {
        print_json(&json!({"purged": origin.as_str()}));
    } else {
        outln!("purged origin {origin}");
    }
    Ok(Outcome::Ok)
}

/// `purge --absent`: every origin in the cache that `--config` does not name is removed (or,
/// with `--dry-run`, only listed), each through the library's per-origin purge (R-Q3).
async fn purge_absent(ctx: &Ctx, dry_run: bool) -> Result<Outcome> {
    let (path, config) = ctx
        .config
        .as_ref()
        .ok_or_else(|| Failure::Usage("purge --absent needs --config".into()))?;
    let keep: Vec<Origin> = config.servers().map(|(o, _)| o.clone()).collect();
    let cache = local_cache(ctx)?;
    let absent = if dry_run {
        let mut all = cache.origins().await?;
        all.retain(|o| !keep.contains(o));
        all
    } else {
        cache.purge_absent(&keep).await?
    };
    if ctx.json {
        print_json(&json!({
            "config": path.display().to_string(),
            "absent": absent.iter().map(Origin::as_str).collect::<Vec<_>>(),
            "dry_run": dry_run,
        }));
    } else if absent.is_empty() {
        outln!(
            "nothing to purge: {} names every origin in the cache",
            path.display()
        );
    } else {
        for origin in &absent {
            if dry_run {
                outln!("would purge origin {origin} (not in {})", path.display());
            } else {
                outln!("purged origin {origin} (not in {})", path.display());
            }
        }
    }
    Ok(Outcome::Ok)
}

async fn stats(ctx: &Ctx) -> Result<Outcome> {
    let cache = local_cache(ctx)?;
    let inv = cache.inventory().await?;
    let out = json!({
        "root": cache.root().display().to_string(),
        "isolation": format!("{:?}", ctx.isolation).to_lowercase(),
        "origins": inv.origins,
        "entries": inv.entries,
        "blobs": inv.blobs,
        "blob_bytes": inv.blob_bytes,
        "quarantined": inv.quarantined,
        "schema_version": inv.schema_version,
        // Rows seen while gathering these numbers that failed their seal (R-H3).
        "seal_failures": cache.stats()[Counter::SealFailures],
        "index_read_only": inv.index_read_only,
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
                    v.as_str()
                        .map_or_else(|| v.to_string(), |s| display_safe(s).to_string())
                ),
            }
        }
    }
    Ok(Outcome::Ok)
}

/// The cache's counters (R-P4), as `stats` and `load --json` print them.
pub(crate) fn counters_json(cache: &SkillCache) -> Value {
    Value::Object(
        cache
            .stats()
            .into_iter()
            .map(|(c, n)| (c.to_string(), Value::from(n)))
            .collect(),
    )
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
        Ok(entry) => {
            print_json(&entry.to_json());
            Ok(Outcome::Ok)
        }
        Err(errors) => Err(Failure::Many(4, errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::grant_line;
    use serde_json::json;

    /// R-E5, R-E7 (found in review): an escape code in the server's `allowed-tools` cannot
    /// conceal a tool on the line that shows the person what they grant.
    #[test]
    fn e5_the_grant_line_shows_the_servers_allowed_tools_inert() {
        let concealed = json!("Read \u{1b}[8mBash(*)\u{1b}[28m \u{202E}");
        let line = grant_line(Some(&concealed), Some(&concealed));
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{202E}'),
            "{line:?}"
        );
        assert!(
            line.contains(r"Read \x1b[8mBash(*)\x1b[28m \u{202E}"),
            "{line}"
        );
        let listed = json!(["Read", "Bash(\u{1b}[8m*)"]);
        assert!(!grant_line(Some(&listed), None).contains('\u{1b}'));
    }
}
