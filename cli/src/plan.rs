//! The command line, checked once into typed values: every argument that can be refused without
//! the cache or a server is refused here, before anything runs (exit 2, never a started
//! server), and the commands take only what this produces — an `Origin`, a `SkillUri`, a split
//! `--stdio` line — never the raw flags, so nothing is parsed twice.

use std::path::{Path, PathBuf};

use skillcache::{
    ApprovalPolicy, DynamicPolicy, Isolation, McpConfig, Origin, SkillCache, SkillCacheBuilder,
    SkillUri, display_safe,
};

use crate::args::{
    CacheArgs, Cli, Command, FetchArgs, GateArgs, IsolationArg, JobsArg, JsonArg, PurgeArgs,
    ReachArgs, ServeArgs, ServerArgs,
};
use crate::cmdline::StdioCommand;
use crate::failure::Failure;

type Result<T> = std::result::Result<T, Failure>;

/// What every command shares: the cache as the global flags configure it, and how to print.
pub(crate) struct Ctx {
    /// `--json`.
    pub(crate) json: bool,
    /// The cache as the global flags configure it; a command adds its own policies.
    pub(crate) builder: SkillCacheBuilder,
    /// `--config`: its path, and the file read and checked.
    pub(crate) config: Option<(PathBuf, McpConfig)>,
    /// `--offline`: no server is needed, none is started.
    pub(crate) offline: bool,
    /// `--isolation`, as the builder was given it (`stats` and the demo print it).
    pub(crate) isolation: Isolation,
    /// `--jobs`: how many servers a command over many runs at once (K4).
    pub(crate) jobs: usize,
}

/// How to reach an origin's server, and as whom.
pub(crate) struct Target {
    pub(crate) reach: Reach,
    /// `--principal`.
    pub(crate) principal: String,
    /// `--allow-dynamic`.
    pub(crate) dynamic: DynamicPolicy,
}

/// Where a server is: named on the command line, or by `--config` (or, offline, nowhere).
pub(crate) enum Reach {
    Stdio(StdioCommand),
    Url(String),
    /// The server `--config` configures under the origin's name; offline, none is needed.
    Configured,
}

impl Target {
    /// The servers `--config` configures, as nobody in particular (`list --all`).
    pub(crate) fn configured() -> Target {
        Target {
            reach: Reach::Configured,
            principal: String::new(),
            dynamic: DynamicPolicy::Decline,
        }
    }
}

/// What `load`/`read` require before any file is read (R-P1, the lock).
pub(crate) struct Gate {
    /// `--require-approval`.
    pub(crate) approval: ApprovalPolicy,
    /// `--locked FILE`.
    pub(crate) locked: Option<PathBuf>,
}

/// What `lock` pins.
pub(crate) enum LockScope {
    /// The named skills of one origin.
    Skills(Origin, Vec<SkillUri>),
    /// Every skill of one origin (`--all --origin`).
    EveryOf(Origin),
    /// Every skill of every server of `--config` (`--all`).
    EveryConfigured,
}

/// `load` or `read`: a skill of one origin, its gates, and what to print.
pub(crate) struct Load {
    pub(crate) origin: Origin,
    pub(crate) uri: SkillUri,
    /// `read`'s file; `None` for `load` (the `SKILL.md`).
    pub(crate) reference: Option<String>,
    pub(crate) gate: Gate,
    /// `load --all`: every file read first.
    pub(crate) all: bool,
    /// `--framed`: framed for model context.
    pub(crate) framed: bool,
    pub(crate) target: Target,
}

/// One command, its arguments checked.
pub(crate) enum Job {
    List(Origin, Target),
    ListAll {
        /// `--local-names`, each trimmed (`"a, b"` means `a` and `b`).
        local_names: Vec<String>,
        local_names_file: Option<PathBuf>,
    },
    Lock {
        scope: LockScope,
        output: PathBuf,
        target: Target,
    },
    /// `lock --check`.
    LockCheck {
        /// `--origin`: only this origin's pins.
        only: Option<Origin>,
        lock: PathBuf,
        target: Target,
    },
    Entry(Origin, SkillUri, Target),
    Approve {
        origin: Origin,
        uri: SkillUri,
        /// `--locked`: approved only if this lock pins it exactly.
        locked: Option<PathBuf>,
        grant_tools: bool,
        target: Target,
    },
    ApproveFromLock {
        /// `--origin`: only this origin's pins.
        only: Option<Origin>,
        lock: PathBuf,
        grant_tools: bool,
        target: Target,
    },
    /// `load` (no reference) and `read`.
    Load(Load),
    Entries(Option<Origin>),
    Verify(Option<Origin>),
    Gc(Option<u64>),
    Purge(Origin),
    PurgeAbsent {
        dry_run: bool,
    },
    PurgeAll {
        dry_run: bool,
    },
    Stats,
    Inspect {
        dir: PathBuf,
        base_uri: Option<String>,
    },
    Serve(ServeArgs),
    Demo {
        root: Option<PathBuf>,
        key_file: Option<PathBuf>,
    },
}

/// The checked command line: what to do, and with what.
pub(crate) struct Plan {
    pub(crate) ctx: Ctx,
    pub(crate) job: Job,
}

/// The options a command took that configure the cache (each command takes only its own; a
/// missing one keeps the library's default).
#[derive(Default)]
struct Shared {
    cache: CacheArgs,
    timeout: Option<std::time::Duration>,
    config: Option<PathBuf>,
    offline: bool,
    allow_stale: bool,
    isolation: Option<IsolationArg>,
    origin_quota: Option<u64>,
    l2: Option<String>,
    jobs: Option<u16>,
    json: bool,
}

impl Shared {
    fn new(cache: CacheArgs, out: JsonArg) -> Shared {
        Shared {
            cache,
            json: out.json,
            ..Shared::default()
        }
    }

    /// With the options of a command that asks servers.
    fn reach(mut self, reach: ReachArgs) -> Shared {
        self.timeout = Some(reach.timeout.timeout);
        self.config = reach.config;
        self.offline = reach.offline;
        self.allow_stale = reach.allow_stale;
        self
    }

    /// With the options of a command that fetches and reads files.
    fn fetch(mut self, fetch: FetchArgs) -> Shared {
        self.isolation = Some(fetch.isolation.isolation);
        self.origin_quota = fetch.origin_quota;
        self.l2 = fetch.l2.l2;
        self
    }

    fn jobs(mut self, jobs: JobsArg) -> Shared {
        self.jobs = Some(jobs.jobs);
        self
    }

    /// The global flags a command's own arguments are checked against.
    fn flags(&self) -> Flags {
        Flags {
            has_config: self.config.is_some(),
            offline: self.offline,
        }
    }

    /// Reads `--config` (a refused or missing file is exit 2 with its path), then builds the
    /// cache's configuration. Nothing is opened or started.
    #[allow(clippy::result_large_err)]
    fn ctx(self) -> Result<Ctx> {
        let config = match self.config {
            Some(path) => {
                let read = McpConfig::read(&path).map_err(Failure::given)?;
                Some((path, read))
            }
            None => None,
        };
        let isolation: Isolation = self.isolation.unwrap_or(IsolationArg::Rehash).into();
        let mut builder = SkillCache::builder()
            .isolation(isolation)
            .offline(self.offline)
            .allow_stale(self.allow_stale);
        if let Some(timeout) = self.timeout {
            builder = builder.request_timeout(timeout).connect_timeout(timeout);
        }
        // Without `--root`, the library's default applies: `$SKILLCACHE_ROOT` unless it is empty
        // (an empty `SKILLCACHE_ROOT=` is unset, as in the shell convention), else the XDG cache
        // folder.
        if let Some(root) = &self.cache.root {
            builder = builder.root(root);
        }
        // Without --key-file the library's default applies (SKILLCACHE_KEY_FILE when not empty).
        if let Some(key) = self
            .cache
            .key_file
            .as_ref()
            .filter(|k| !k.as_os_str().is_empty())
        {
            builder = builder.key_file(key);
        }
        if let Some(quota) = self.origin_quota {
            builder = builder.origin_quota(quota);
        }
        builder = l2(builder, self.l2.as_deref())?;
        Ok(Ctx {
            json: self.json,
            builder,
            config,
            offline: self.offline,
            isolation,
            jobs: usize::from(self.jobs.unwrap_or(crate::many::DEFAULT_JOBS)),
        })
    }
}

/// `--l2`: a bad URL is a usage error (exit 2); an unreachable tier is not an error at all.
/// Without the feature, the flag is refused naming the feature it needs.
#[allow(clippy::result_large_err)]
fn l2(builder: SkillCacheBuilder, url: Option<&str>) -> Result<SkillCacheBuilder> {
    #[cfg(feature = "l2")]
    if let Some(url) = url {
        return Ok(builder.l2(skillcache::L2::from_url(url)?));
    }
    #[cfg(not(feature = "l2"))]
    if url.is_some() {
        return Err(Failure::Usage(
            "--l2 needs the shared tier, which this skillcache was built without: build it with the feature `l2` (cargo install … --features l2)".into(),
        ));
    }
    Ok(builder)
}

impl Plan {
    /// Checks every argument, then reads `--config` (a refused file is exit 2 with its path and
    /// field), then builds the cache's configuration. Nothing is opened or started.
    // `Error` is large (a verification failure carries origin, URI and both digests); this is
    // the cold path.
    #[allow(clippy::result_large_err)]
    pub(crate) fn new(cli: Cli) -> Result<Plan> {
        let (job, shared) = job(cli.command)?;
        Ok(Plan {
            ctx: shared.ctx()?,
            job,
        })
    }
}

/// The command's arguments, checked, and the options it took that configure the cache; in
/// each command the order of the checks is the order its refusals are reported in.
#[allow(clippy::result_large_err)]
fn job(command: Command) -> Result<(Job, Shared)> {
    Ok(match command {
        Command::List(a) => {
            let shared = Shared::new(a.cache, a.out).reach(a.reach).jobs(a.jobs);
            let job = shared
                .flags()
                .list(a.all, &a.local_names, a.local_names_file, a.server)?;
            (job, shared)
        }
        Command::Lock(a) => {
            let shared = Shared::new(a.cache, a.out).reach(a.reach).jobs(a.jobs);
            let job = if a.check {
                let (only, target) = shared.flags().target(a.server, true)?;
                Job::LockCheck {
                    only,
                    lock: a.output,
                    target,
                }
            } else {
                shared
                    .flags()
                    .lock(&a.skill_uris, a.all, a.output, a.server)?
            };
            (job, shared)
        }
        Command::Approve(a) => {
            let shared = Shared::new(a.cache, a.out).reach(a.reach).jobs(a.jobs);
            let job = shared.flags().approve(
                a.skill_uri,
                (a.from_lock, a.locked),
                a.grant_tools,
                a.server,
            )?;
            (job, shared)
        }
        Command::Entry(a) => {
            let shared = Shared::new(a.cache, a.out).reach(a.reach);
            let uri = uri(&a.skill_uri)?;
            let (origin, target) = shared.flags().one(a.server)?;
            (Job::Entry(origin, uri, target), shared)
        }
        Command::Load(a) => load_job(&a.skill_uri, None, a.all, a.framed, a.gate)?,
        Command::Read(a) => load_job(&a.skill_uri, Some(a.reference), false, a.framed, a.gate)?,
        Command::Entries(a) => (
            Job::Entries(a.origin.map(origin).transpose()?),
            Shared::new(a.cache, a.out),
        ),
        Command::Verify(a) => (
            Job::Verify(a.origin.map(origin).transpose()?),
            Shared::new(a.cache, a.out),
        ),
        Command::Purge(a) => purge(a)?,
        Command::Gc(a) => (Job::Gc(a.max_bytes), Shared::new(a.cache, a.out)),
        Command::Stats { cache, out } => (Job::Stats, Shared::new(cache, out)),
        Command::Inspect { dir, base_uri } => {
            folder(&dir)?;
            (Job::Inspect { dir, base_uri }, Shared::default())
        }
        Command::Serve(args) => {
            serve_usage(&args)?;
            (Job::Serve(args), Shared::default())
        }
        Command::Demo {
            cache,
            isolation,
            timeout,
        } => {
            let job = Job::Demo {
                root: cache.root.clone(),
                key_file: cache.key_file.clone(),
            };
            let mut shared = Shared::new(cache.into(), JsonArg::default());
            shared.isolation = Some(isolation.isolation);
            shared.timeout = Some(timeout.timeout);
            (job, shared)
        }
    })
}

/// `load` and `read`: a skill of one origin, behind its gates.
#[allow(clippy::result_large_err)]
fn load_job(
    text: &str,
    reference: Option<String>,
    all: bool,
    framed: bool,
    a: GateArgs,
) -> Result<(Job, Shared)> {
    let shared = Shared::new(a.cache, a.out).reach(a.reach).fetch(a.fetch);
    let gate = gate(a.require_approval, a.locked);
    let load = shared
        .flags()
        .load(text, reference, gate, all, framed, a.server)?;
    Ok((Job::Load(load), shared))
}

/// `purge`: one origin by a valid label, `--absent` against `--config`, or `--all` (clap
/// requires exactly one of the three, and `--config` with `--absent`).
#[allow(clippy::result_large_err)]
fn purge(a: PurgeArgs) -> Result<(Job, Shared)> {
    let mut shared = Shared::new(a.cache, a.out);
    shared.config = a.config;
    let job = match a.origin {
        Some(o) => Job::Purge(origin(o)?),
        None if a.all => Job::PurgeAll { dry_run: a.dry_run },
        None if a.absent => Job::PurgeAbsent { dry_run: a.dry_run },
        None => return Err(Failure::Usage("name --origin, --absent or --all".into())),
    };
    Ok((job, shared))
}

/// The global flags a command's own arguments are checked against.
struct Flags {
    /// `--config` was given.
    has_config: bool,
    /// `--offline`.
    offline: bool,
}

/// A usage error for an argument: `what` (e.g. `--origin`) and why.
fn usage(what: &str, e: &dyn std::fmt::Display) -> Failure {
    Failure::Usage(format!("invalid {what}: {e}"))
}

// `Error` is large (see `Plan::new`); this is the cold path.
#[allow(clippy::result_large_err)]
fn origin(label: String) -> Result<Origin> {
    Origin::new(label).map_err(|e| usage("--origin", &e))
}

#[allow(clippy::result_large_err)]
fn uri(text: &str) -> Result<SkillUri> {
    SkillUri::parse(text).map_err(|e| usage("SKILL_URI", &e))
}

#[allow(clippy::result_large_err)]
fn folder(dir: &Path) -> Result<()> {
    let shown = display_safe(&dir.to_string_lossy()).to_string();
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Failure::Usage(format!("{shown} is not a folder"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Failure::Usage(format!("{shown} does not exist")))
        }
        Err(e) => Err(Failure::Usage(format!("cannot read {shown}: {e}"))),
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
        _ => {
            folder(&args.dir)?;
            // `serve` publishes the skill folders *under* DIR; given one skill's own folder it
            // would publish nothing, and a host would list nothing without a word (a
            // newcomer's try).
            if args.dir.join("SKILL.md").is_file() {
                let parent = args.dir.parent().unwrap_or(Path::new("."));
                return Err(Failure::Usage(format!(
                    "{} is a skill's own folder (it holds a SKILL.md), and serve publishes the skill folders under the one it is given: serve {} instead",
                    display_safe(&args.dir.to_string_lossy()),
                    display_safe(&parent.to_string_lossy())
                )));
            }
            Ok(())
        }
    }
}

// `Error` is large (see `Plan::new`); this is the cold path.
#[allow(clippy::result_large_err)]
impl Flags {
    /// `list`, or with `--all` the catalog of every configured server.
    fn list(
        &self,
        all: bool,
        local_names: &[String],
        local_names_file: Option<PathBuf>,
        server: ServerArgs,
    ) -> Result<Job> {
        if !all {
            let (origin, target) = self.one(server)?;
            return Ok(Job::List(origin, target));
        }
        // The flags are checked, though the catalog asks every configured server.
        self.every_configured(server)?;
        Ok(Job::ListAll {
            local_names: local_names.iter().map(|n| n.trim().to_owned()).collect(),
            local_names_file,
        })
    }

    /// `approve` one skill, or every skill a lock file pins.
    fn approve(
        &self,
        skill_uri: Option<String>,
        (from_lock, locked): (Option<PathBuf>, Option<PathBuf>),
        grant_tools: bool,
        server: ServerArgs,
    ) -> Result<Job> {
        if let Some(text) = skill_uri {
            let uri = uri(&text)?;
            let (origin, target) = self.one(server)?;
            return Ok(Job::Approve {
                origin,
                uri,
                locked,
                grant_tools,
                target,
            });
        }
        let (only, target) = self.target(server, true)?;
        // clap requires one of the two.
        let lock = from_lock.ok_or_else(|| Failure::Usage("name a skill or --from-lock".into()))?;
        Ok(Job::ApproveFromLock {
            only,
            lock,
            grant_tools,
            target,
        })
    }

    /// `lock`: the named skills of `--origin`, or `--all` of one origin or of every configured
    /// server.
    fn lock(
        &self,
        skill_uris: &[String],
        all: bool,
        output: PathBuf,
        server: ServerArgs,
    ) -> Result<Job> {
        let (scope, target) = if all {
            match self.every_configured(server)? {
                (Some(origin), target) => (LockScope::EveryOf(origin), target),
                (None, target) => (LockScope::EveryConfigured, target),
            }
        } else {
            if skill_uris.is_empty() {
                return Err(Failure::Usage("name the skills to lock, or --all".into()));
            }
            let uris = skill_uris
                .iter()
                .map(|u| uri(u))
                .collect::<Result<Vec<_>>>()?;
            let (origin, target) = self.one(server)?;
            (LockScope::Skills(origin, uris), target)
        };
        Ok(Job::Lock {
            scope,
            output,
            target,
        })
    }

    /// `load` and `read`: a skill of one origin.
    fn load(
        &self,
        text: &str,
        reference: Option<String>,
        gate: Gate,
        all: bool,
        framed: bool,
        server: ServerArgs,
    ) -> Result<Load> {
        let uri = uri(text)?;
        let (origin, target) = self.one(server)?;
        Ok(Load {
            origin,
            uri,
            reference,
            gate,
            all,
            framed,
            target,
        })
    }

    /// A command of exactly one origin.
    fn one(&self, server: ServerArgs) -> Result<(Origin, Target)> {
        match self.target(server, false)? {
            (Some(origin), target) => Ok((origin, target)),
            // `target` with `all: false` refuses a missing `--origin`.
            (None, _) => Err(Failure::Usage("--origin is required".into())),
        }
    }

    /// `--all`: without `--origin`, every server of `--config`.
    fn every_configured(&self, server: ServerArgs) -> Result<(Option<Origin>, Target)> {
        if server.origin.is_none() && !self.has_config {
            return Err(Failure::Usage(
                "--all without --origin means every server of --config: give --config".into(),
            ));
        }
        self.target(server, true)
    }

    /// The origin and how to reach its server. `all`: the command may go without `--origin`
    /// (every configured server, or every origin of a lock file), but not with a server named
    /// on the command line.
    fn target(&self, s: ServerArgs, all: bool) -> Result<(Option<Origin>, Target)> {
        let direct = s.stdio.is_some() || s.url.is_some();
        let origin = match s.origin {
            Some(o) => Some(origin(o)?),
            None if all && !direct => None,
            None => return Err(Failure::Usage("--origin is required".into())),
        };
        // A server named on the command line and a config would each say where `--origin` is:
        // one of them would be ignored without a word.
        if direct && self.has_config {
            return Err(Failure::Usage(
                "--config names the servers; --stdio and --url name one: give one or the other"
                    .into(),
            ));
        }
        let reach = match (s.stdio, s.url) {
            (Some(line), _) => Reach::Stdio(
                StdioCommand::parse(&line)
                    .map_err(|why| Failure::Usage(format!("invalid --stdio: {why}")))?,
            ),
            (None, Some(url)) => Reach::Url(http_url(url)?),
            (None, None) if self.has_config || self.offline => Reach::Configured,
            // A command that may ask every configured server needs no `--origin` with `--config`.
            (None, None) if all => {
                return Err(Failure::Usage(
                    "servers are required: --config FILE (every server it names, or one with \
                     --origin NAME), or --stdio/--url with --origin NAME (or --offline)"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(Failure::Usage(
                    "a server is required: --stdio, --url, or --config with --origin NAME (or --offline)"
                        .into(),
                ));
            }
        };
        let dynamic = if s.allow_dynamic {
            DynamicPolicy::AllowUnverified
        } else {
            DynamicPolicy::Decline
        };
        Ok((
            origin,
            Target {
                reach,
                principal: s.principal,
                dynamic,
            },
        ))
    }
}

/// `--url` as given, once it is an `http://` or `https://` URL with a host: anything else is a
/// usage error before any server is contacted, not a failed connection.
fn http_url(url: String) -> Result<String> {
    match skillcache::source::http_url_problem(&url) {
        None => Ok(url),
        Some(why) => Err(Failure::Usage(format!(
            "invalid --url {}: {why}",
            display_safe(&url)
        ))),
    }
}

/// `--require-approval` and `--locked`: the gates are the library's; the CLI asks for approval
/// only when told (the library requires it by default, as the README documents).
fn gate(require_approval: bool, locked: Option<PathBuf>) -> Gate {
    Gate {
        approval: if require_approval {
            ApprovalPolicy::Required
        } else {
            ApprovalPolicy::NotRequired
        },
        locked,
    }
}
