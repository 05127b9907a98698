//! The command line as clap parses it: flags and their help, nothing checked beyond their
//! syntax. `plan` turns it into typed, checked values once; nothing else reads these.
//!
//! Each command takes only the options that mean something to it (a `serve` has no cache root,
//! `gc` asks no server): the options come in groups (`CacheArgs`, `ReachArgs`, `FetchArgs`, …)
//! that each command flattens after its name, so `skillcache CMD --help` lists exactly what `CMD`
//! accepts and anything else is refused by clap (exit 2). Only `-v` is global: every command
//! logs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use skillcache::Isolation;

#[derive(Parser, Debug)]
#[command(
    name = "skillcache",
    version,
    about = "A verified, write-isolated cache for skills served over MCP"
)]
pub(crate) struct Cli {
    /// Say more on stderr: `-v` every failed request, missed deadline and quarantine (info),
    /// `-vv` every request sent and answered, cache hit and miss too (debug). Warnings (a file
    /// that could not be stored, a row that failed its seal) are always shown. `RUST_LOG`, when
    /// set, decides instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Where the cache is: every command that opens it.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct CacheArgs {
    /// The cache root [default: `$SKILLCACHE_ROOT` unless empty, else
    /// `$XDG_CACHE_HOME/skillcache`, else ~/.cache/skillcache].
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// The host key that seals the index, kept outside the root (created 0600 on first use)
    /// [default: `$SKILLCACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/skillcache/host.key`, else
    /// ~/.config/skillcache/host.key].
    // Not clap's `env`: clap refuses an empty variable, which must count as unset; the library's
    // default (`default_key_file`) reads SKILLCACHE_KEY_FILE and skips it when empty.
    #[arg(long, value_name = "FILE")]
    pub(crate) key_file: Option<PathBuf>,
}

/// Where the demo's cache is: a temporary folder unless given (never `$SKILLCACHE_ROOT`: the
/// tour tampers with what it stores).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct DemoCacheArgs {
    /// The tour's cache root, kept afterwards to look at [default: a temporary folder, removed
    /// at the end].
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// The host key that seals the tour's index [default: beside the temporary root; with
    /// `--root`, `$SKILLCACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/skillcache/host.key`, else
    /// ~/.config/skillcache/host.key].
    #[arg(long, value_name = "FILE")]
    pub(crate) key_file: Option<PathBuf>,
}

impl From<DemoCacheArgs> for CacheArgs {
    fn from(demo: DemoCacheArgs) -> CacheArgs {
        CacheArgs {
            root: demo.root,
            key_file: demo.key_file,
        }
    }
}

/// Machine-readable output.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct JsonArg {
    /// Machine-readable output: one JSON value on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How servers are reached and waited for: every command that asks one.
#[derive(Args, Debug, Clone)]
pub(crate) struct ReachArgs {
    #[command(flatten)]
    pub(crate) timeout: TimeoutArg,
    /// An MCP host configuration file (`{"mcpServers": …}` or VS Code's `{"servers": …}`):
    /// `--origin NAME` then selects the server configured as NAME, which is also its origin.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Contact no server: entries and bytes come only from the cache; anything missing fails
    /// (exit 5). `--stdio`/`--url`/`--config` are then not needed.
    #[arg(long)]
    pub(crate) offline: bool,
    /// With `--offline`: use a cached entry past its ttlMs (reported as stale) instead of
    /// refusing it.
    #[arg(long, requires = "offline")]
    pub(crate) allow_stale: bool,
}

/// `--jobs`: the commands over many servers.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct JobsArg {
    /// How many servers a command over many of them (`list --all`, `lock --all`,
    /// `approve --from-lock`) starts and asks at once; each is stopped as soon as it has answered.
    #[arg(long, value_name = "N", default_value_t = crate::many::DEFAULT_JOBS, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) jobs: u16,
}

/// How a skill's files are fetched, stored and checked: `load` and `read`.
#[derive(Args, Debug, Clone)]
pub(crate) struct FetchArgs {
    #[command(flatten)]
    pub(crate) isolation: IsolationArgs,
    /// The most bytes one origin's cached content may take on disk (e.g. `10485760`, `10MiB`,
    /// `512KiB`), counted as `du` counts its folder (files in whole blocks, folders too) plus
    /// its index rows: its least recently used files go first, never another origin's; a skill
    /// too large for it is declined (exit 5).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) origin_quota: Option<u64>,
    #[command(flatten)]
    pub(crate) l2: L2Arg,
}

/// `--isolation`: the commands that read cached bytes.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct IsolationArgs {
    /// How cached files are verified on every access.
    #[arg(long, value_enum, default_value_t = IsolationArg::Rehash)]
    pub(crate) isolation: IsolationArg,
}

/// `--l2`: the shared tier of the fleet (feature `l2`).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct L2Arg {
    /// A shared tier of verified public blobs for a fleet of hosts, `s3://bucket/prefix`,
    /// configured from the standard `AWS_*` environment (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
    /// `AWS_REGION`, credentials). Asked after the local cache, before the server.
    #[cfg(feature = "l2")]
    #[arg(long, value_name = "URL")]
    pub(crate) l2: Option<String>,
    /// Not built: the flag is known only to say which feature it needs (`plan` refuses it).
    #[cfg(not(feature = "l2"))]
    #[arg(long, value_name = "URL", hide = true)]
    pub(crate) l2: Option<String>,
}

/// `--timeout`: every command that waits for a server.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct TimeoutArg {
    /// Seconds to wait for the server to start and initialise, and for each answer; a server
    /// that misses it fails the command with exit 4.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_timeout)]
    pub(crate) timeout: std::time::Duration,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub(crate) enum IsolationArg {
    /// Re-hash cached bytes on every access.
    Rehash,
    /// Only this host writes the cache: check the evidence, re-hash when it is off.
    Guaranteed,
}

impl From<IsolationArg> for Isolation {
    fn from(a: IsolationArg) -> Isolation {
        match a {
            IsolationArg::Rehash => Isolation::Rehash,
            IsolationArg::Guaranteed => Isolation::Guaranteed,
        }
    }
}

/// How to reach a server, and as whom.
#[derive(Args, Debug, Clone)]
pub(crate) struct ServerArgs {
    /// The host's label for this server (never the server's own name); with `--config`, the
    /// name of a configured server.
    #[arg(long)]
    pub(crate) origin: Option<String>,
    /// Spawn this command line and speak MCP to it over stdio.
    #[arg(long, conflicts_with = "url")]
    pub(crate) stdio: Option<String>,
    /// A Streamable HTTP MCP endpoint.
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// The authorization context for private entries.
    #[arg(long, default_value = "")]
    pub(crate) principal: String,
    /// Load dynamic skills (unverified) instead of declining them.
    #[arg(long)]
    pub(crate) allow_dynamic: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// The server's skills (name, URI, files, bytes, dynamic, fresh).
    List(ListArgs),
    /// Pin skills as they are now in a lock file (origin, URI, binding, every file's digest
    /// and size); an existing lock file is updated.
    Lock(LockArgs),
    /// The resolved entry of a skill and its binding; says if an approval was revoked.
    Entry(EntryArgs),
    /// Approve a skill as its entry is now.
    Approve(ApproveArgs),
    /// Load a skill and print its verified SKILL.md.
    Load(LoadArgs),
    /// Load a skill, then read one of its files.
    Read(ReadArgs),
    /// The entries in the cache.
    Entries(LocalArgs),
    /// Re-hash every cached blob; exit 3 if anything is corrupt.
    Verify(LocalArgs),
    /// Remove unreferenced blobs and temporaries, then least-recently-used ones over a budget.
    Gc(GcArgs),
    /// Remove everything of one origin, of every origin `--config` does not name, or of every
    /// origin.
    Purge(PurgeArgs),
    /// Counts and sizes.
    Stats {
        #[command(flatten)]
        cache: CacheArgs,
        #[command(flatten)]
        out: JsonArg,
    },
    /// The entry a server would publish for a local skill folder; exit 4 if it is not valid.
    Inspect {
        /// The skill folder.
        dir: PathBuf,
        /// The skill's root URI [default: skill://<folder name>].
        #[arg(long)]
        base_uri: Option<String>,
    },
    /// Serve a folder of skill folders as an MCP server with the skills extension, over stdio
    /// (default) or Streamable HTTP (`--http`). Changes to the folder are picked up and announced
    /// to connected peers.
    Serve(ServeArgs),
    /// A guided tour of the loading path on bundled sample skills.
    Demo {
        #[command(flatten)]
        cache: DemoCacheArgs,
        #[command(flatten)]
        isolation: IsolationArgs,
        #[command(flatten)]
        timeout: TimeoutArg,
    },
}

/// `list`.
#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// Every server of `--config` in one catalog: each skill under a handle unique across
    /// servers, name collisions reported; a server that fails is reported and the others are
    /// still listed.
    #[arg(long, conflicts_with = "origin")]
    pub(crate) all: bool,
    /// With `--all`: the host's own (filesystem) skill names, comma-separated; an MCP skill
    /// of the same name is qualified by its origin and reported as a collision.
    #[arg(long, value_name = "A,B,…", value_delimiter = ',', requires = "all")]
    pub(crate) local_names: Vec<String>,
    /// With `--all`: a file of local skill names, one a line (blank lines and `#` comments
    /// skipped).
    #[arg(long, value_name = "FILE", requires = "all")]
    pub(crate) local_names_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) jobs: JobsArg,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `lock`.
#[derive(Args, Debug)]
pub(crate) struct LockArgs {
    /// The skills' SKILL.md URIs (of `--origin`).
    pub(crate) skill_uris: Vec<String>,
    /// Every skill: of `--origin`, or without it of every server of `--config`.
    #[arg(long, conflicts_with = "skill_uris")]
    pub(crate) all: bool,
    /// The lock file.
    #[arg(long, short, default_value = "skills.lock")]
    pub(crate) output: PathBuf,
    /// Check the lock instead of writing it: ask every server it pins (of `--origin`, or of
    /// every server of `--config`) for its skills, fetching no file, and exit 6 if anything
    /// differs from what the lock pins.
    #[arg(long, conflicts_with_all = ["skill_uris", "all"])]
    pub(crate) check: bool,
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) jobs: JobsArg,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `entry`.
#[derive(Args, Debug)]
pub(crate) struct EntryArgs {
    /// The skill's SKILL.md URI.
    pub(crate) skill_uri: String,
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `approve`.
#[derive(Args, Debug)]
pub(crate) struct ApproveArgs {
    /// The skill's SKILL.md URI.
    #[arg(required_unless_present = "from_lock", conflicts_with = "from_lock")]
    pub(crate) skill_uri: Option<String>,
    /// Approve exactly the skills this lock file pins (of `--origin`, or of every origin
    /// it names), each only if its entry is still as pinned (exit 5 otherwise).
    #[arg(long, value_name = "FILE")]
    pub(crate) from_lock: Option<PathBuf>,
    /// Refuse (exit 5) to approve the skill unless this lock file pins it exactly as it is now
    /// (the frozen mode: nothing is approved that the lock does not pin).
    #[arg(
        long,
        value_name = "FILE",
        visible_alias = "frozen",
        conflicts_with = "from_lock"
    )]
    pub(crate) locked: Option<PathBuf>,
    /// Also grant the tools its frontmatter requests (allowed-tools).
    #[arg(long)]
    pub(crate) grant_tools: bool,
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) jobs: JobsArg,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// What `load` and `read` share: the gates, the server, and how files are fetched.
#[derive(Args, Debug)]
pub(crate) struct GateArgs {
    /// Refuse (exit 5) unless the skill is approved as it is now.
    #[arg(long)]
    pub(crate) require_approval: bool,
    /// Refuse (exit 5) unless the skill is pinned in this lock file exactly as it is now, before
    /// any file is read (the frozen mode).
    #[arg(long, value_name = "FILE", visible_alias = "frozen")]
    pub(crate) locked: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) reach: ReachArgs,
    #[command(flatten)]
    pub(crate) fetch: FetchArgs,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `load`.
#[derive(Args, Debug)]
pub(crate) struct LoadArgs {
    /// The skill's SKILL.md URI.
    pub(crate) skill_uri: String,
    /// Also read every file of the skill (verified; on a cold cache the whole skill is
    /// fetched and stored as one batch), so that later reads are cache hits.
    #[arg(long)]
    pub(crate) all: bool,
    /// Print the SKILL.md framed for model context: tagged with its origin and URI as
    /// content from an MCP server, closed by a boundary the content does not contain.
    #[arg(long)]
    pub(crate) framed: bool,
    #[command(flatten)]
    pub(crate) gate: GateArgs,
}

/// `read`.
#[derive(Args, Debug)]
pub(crate) struct ReadArgs {
    /// The skill's SKILL.md URI.
    pub(crate) skill_uri: String,
    /// The file: relative to the skill root, or an absolute URI inside it.
    pub(crate) reference: String,
    /// Print the file framed for model context (see `load --framed`); a binary file is
    /// described, not inlined.
    #[arg(long)]
    pub(crate) framed: bool,
    #[command(flatten)]
    pub(crate) gate: GateArgs,
}

/// `entries` and `verify`: the cache alone.
#[derive(Args, Debug)]
pub(crate) struct LocalArgs {
    /// Only this origin.
    #[arg(long)]
    pub(crate) origin: Option<String>,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `gc`.
#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    /// The byte budget of every origin's blobs together (e.g. `10485760`, `10MiB`, `512KiB`), in
    /// their own sizes: what `stats` shows as `blob_bytes` (`du` shows more: whole blocks and
    /// folders, which `--origin-quota` counts).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) max_bytes: Option<u64>,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// `purge`: exactly one of its three modes.
#[derive(Args, Debug)]
#[group(id = "mode", required = true, multiple = false, args = ["origin", "absent", "all"])]
pub(crate) struct PurgeArgs {
    /// One origin: its entries, approvals and cached files.
    #[arg(long)]
    pub(crate) origin: Option<String>,
    /// Every origin in the cache that `--config` does not name (servers removed from the
    /// configuration): entries, approvals and cached files; each is listed. A config that
    /// names no server is refused: removing every origin is `--all`.
    #[arg(long, requires = "config")]
    pub(crate) absent: bool,
    /// Every origin in the cache: entries, approvals and cached files; each is listed.
    #[arg(long)]
    pub(crate) all: bool,
    /// With `--absent` or `--all`: list the origins that would be removed, and remove
    /// nothing.
    #[arg(long, conflicts_with = "origin")]
    pub(crate) dry_run: bool,
    /// With `--absent`: the MCP host configuration file whose servers are kept.
    #[arg(long, value_name = "FILE", requires = "absent")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) cache: CacheArgs,
    #[command(flatten)]
    pub(crate) out: JsonArg,
}

/// What `serve` takes.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// The folder.
    pub(crate) dir: PathBuf,
    /// The ttlMs hint to send.
    #[arg(long, default_value_t = 0)]
    pub(crate) ttl_ms: u64,
    /// Publish this skill path as "dynamic" (repeatable).
    #[arg(long)]
    pub(crate) dynamic: Vec<String>,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8080 or localhost:8080; port 0
    /// picks one) instead
    /// of stdio. The endpoint URL is printed on stderr once the port is bound. An address that
    /// is not loopback needs --allow-remote.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Allow --http on an address other than loopback: every published skill is then readable
    /// by anyone who can reach it (there is no authentication).
    #[arg(long, requires = "http")]
    pub(crate) allow_remote: bool,
    /// Also publish skills that break the strict Agent Skills rules (`allowed-tools` as a list,
    /// `metadata` values that are not strings); by default they are skipped and logged, since
    /// strict clients refuse a whole listing for one of them.
    #[arg(long)]
    pub(crate) lenient: bool,
    /// Also serve `resources/directory/read` (declares `directoryRead: true`).
    #[arg(long)]
    pub(crate) directory_read: bool,
    /// How often, in milliseconds, the folder is scanned for changes; changes are announced to
    /// connected peers, and requests answer from the last scan (a skills/get re-checks its own
    /// skill's folder).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) watch_ms: u64,
    /// How many MiB of published files to keep in memory to answer reads with (files up to
    /// 1 MiB; 0 keeps none and reads every file from the folder, checked, on each request). A
    /// kept file edited on disk is answered as published until the next scan announces it.
    #[arg(long, value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub(crate) held_mib: u64,
}

/// `--timeout`: positive seconds, fractions allowed.
fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        _ => Err(format!(
            "{text:?} is not a number of seconds greater than 0 and at most 86400 (one day)"
        )),
    }
}

/// `--http`: an IP address and port, or `localhost:PORT` (127.0.0.1, resolved here rather than
/// by the system's resolver, whose `localhost` may be anything).
fn parse_http_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    match text.rsplit_once(':') {
        Some((host, port)) if host.eq_ignore_ascii_case("localhost") => port
            .parse::<u16>()
            .map(|port| std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .map_err(|_| format!("{text:?}: {port:?} is not a port (0 to 65535)")),
        _ => Err(format!(
            "{text:?} is not an address and port (e.g. 127.0.0.1:8080, [::1]:8080, localhost:0)"
        )),
    }
}

/// `--origin-quota` and `gc --max-bytes`: a whole number of bytes, optionally with a binary suffix (`KiB`, `MiB`,
/// `GiB`; `K`, `M`, `G` mean the same).
fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let shift = match suffix.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        // `MB` is refused rather than guessed: tools disagree on whether it means 10^6 or 2^20,
        // and a budget off by 5% deletes what the operator meant to keep.
        unit @ ("kB" | "KB" | "MB" | "GB") => {
            let binary = format!("{digits}{}iB", unit[..1].to_ascii_uppercase());
            return Err(format!(
                "{text:?} is ambiguous: write {binary} for powers of 1024, or the number of bytes in full"
            ));
        }
        _ => {
            return Err(format!(
                "{text:?} is not a number of bytes (e.g. 10485760 or 10MiB)"
            ));
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("{text:?} is not a number of bytes (e.g. 10485760 or 10MiB)"))
}
