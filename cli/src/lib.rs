//! `skillcache`: the verified skill cache from the command line.
//!
//! This crate is the command line as a library, [`run`]: the `skillcache` binary (src/main.rs)
//! runs it with the process's arguments, and the Python package's `skillcache` command calls it
//! too. Nothing else of it is public; a host links the `skillcache` library crate, which has
//! none of the command line's dependencies.
//!
//! Exit codes (a public contract): 0 ok; 2 usage (bad arguments, checked before any server is
//! started: an empty or over-long `--origin`, an unparsable `SKILL_URI`, a `serve`/`inspect`
//! folder that does not exist, a bad `--timeout`, a `--config` or lock file that is missing,
//! unreadable or refused, an origin the config does not name, an option the command does not
//! take); 3 verification failure (size, digest, frontmatter, unlisted); 4 the server: an invalid
//! entry, a protocol error, a timeout, a message over the bound, a connection that failed or
//! died; 5 declined by policy (limits, dynamic — loaded or approved —, approval missing or
//! revoked, a skill not locked or drifted from the lock, a skill larger than `--origin-quota`,
//! offline and not in the cache, a reference that leaves the skill); 6 `lock --check` found
//! drift (a pinned skill changed, added, removed or refused, or a pinned server that could not be
//! listed); 1 a local failure (the cache root, the index, I/O).
//! Errors go to stderr as one line each, with their cause chain. `list --all` and `lock --all`
//! go on past a server that fails, and exit with the code of the first failure. Every string a
//! server or a file chose is printed display-safe (R-E5, `inert`).

/// `println!` for the CLI: a closed stdout (`skillcache demo | head`) ends the program quietly
/// instead of panicking, as command-line tools are expected to.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            $crate::stdout_failed(&e);
        }
    }};
}

/// `lock --check`: what the servers publish differs from the lock (a CI gate's failure).
pub(crate) const EXIT_LOCK_DRIFT: u8 = 6;

mod args;
mod cmdline;
mod commands;
mod demo;
mod failure;
mod inert;
mod local_names;
mod logline;
mod many;
mod plan;
// The library's platform layer for named files (src/platform/named.rs), the same file.
#[path = "../../src/platform/named.rs"]
mod platform;
mod render;

/// Stdout is gone: a reader that stopped reading (broken pipe) is not an error.
pub(crate) fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("skillcache: error: cannot write to stdout: {e}");
    std::process::exit(1);
}

use std::fmt::Write as _;

use clap::Parser as _;
use skillcache::Error;
use skillcache::error::{ConfigError, EntryError, IndexError, SourceError, StoreError};

/// The exit code for an error (the public contract above). Exhaustive on purpose, with no
/// catch-all: a new class of error cannot silently become 1.
pub(crate) fn exit_code(e: &Error) -> u8 {
    // Exhaustive, no catch-all: a new error cannot ship without its exit code (the contract in
    // this file's doc comment).
    match e {
        Error::Verify(_) | Error::Store(StoreError::BlobMismatch { .. }) => 3,
        Error::Entry(
            EntryError::Invalid { .. }
            | EntryError::Response { .. }
            | EntryError::Digest { .. }
            | EntryError::Frontmatter { .. }
            | EntryError::Folder { .. },
        )
        | Error::Source(
            SourceError::Server { .. }
            | SourceError::Transport { .. }
            | SourceError::Timeout { .. }
            | SourceError::MessageTooLarge { .. },
        ) => 4,
        Error::Entry(EntryError::LimitExceeded { .. })
        | Error::Declined { .. }
        | Error::Uri(_)
        | Error::Offline { .. } => 5,
        Error::Config(
            ConfigError::Invalid { .. } | ConfigError::File { .. } | ConfigError::LockFile { .. },
        )
        | Error::L2Config { .. } => 2,
        Error::Store(
            StoreError::RootRefused { .. } | StoreError::Io { .. } | StoreError::LockTimeout { .. },
        )
        | Error::Index(
            IndexError::Database { .. }
            | IndexError::TooNew { .. }
            | IndexError::ReadOnly { .. }
            | IndexError::Io { .. }
            | IndexError::HostKey { .. },
        )
        | Error::Source(SourceError::NotConnected { .. }) => 1,
    }
}

/// One line: the error and its cause chain, each inert (R-E5).
pub(crate) fn report(e: &(dyn std::error::Error + 'static)) {
    eprintln!("skillcache: error: {}", chain(e));
}

/// The error and its cause chain, each inert (R-E5), joined by `: ` — what `report` prints, and
/// what `--json` gives a failed server (its own failure named, down to the cause: K4).
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = inert::error_text(e);
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(line, ": {}", inert::error_text(s));
        source = s.source();
    }
    line
}

/// What a command ends with.
pub(crate) enum Outcome {
    Ok,
    /// A finished command whose result means failure (e.g. `verify` found corruption).
    Code(u8),
}

/// Warnings from the library (a link replaced under the root, a seal that failed, a damaged
/// index moved aside, a file that could not be stored) go to stderr; `-v`/`-vv` or `RUST_LOG`
/// select more (`RUST_LOG=skillcache=debug`).
///
/// Only skillcache's own events are shown, each one line written for a person. The libraries
/// below (rmcp above all) log an ordinary error answer to a client — "no skill is served at that
/// URI" — as a warning in its `Debug` form, which is the client's business and no text for a
/// person (N4): they speak only when `RUST_LOG` asks for them.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "off,skillcache=warn",
        1 => "off,skillcache=info",
        _ => "off,skillcache=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(logline::LogLine)
        .try_init();
}

/// Runs one command line to its end and returns its exit code (the contract above). `argv` is
/// the whole command line, the program's name first, as the process received it.
///
/// The `skillcache` binary's `main` (src/main.rs) is this with the process's own arguments. The
/// Python package's `skillcache` command calls it too, so both commands are this one
/// implementation. It returns instead of exiting wherever it can (a bad argument, `--help`);
/// only a closed stdout ends the process at once (`stdout_failed`).
#[must_use]
pub fn run<I, T>(argv: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    // Asked for before the arguments are known to parse: a usage error is JSON too (exit 2).
    let mut json = argv.iter().skip(1).any(|a| a == "--json");
    let cli = match args::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            // What clap's own `exit` does, without leaving: usage errors on stderr (exit 2),
            // `--help` and `--version` on stdout (exit 0). A usage error starts as every other
            // error of the command does, `skillcache: error:` (clap writes `error:`).
            if e.use_stderr() {
                let said = e.render().to_string();
                eprint!("skillcache: {said}");
            } else {
                let _ = e.print();
            }
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            if json && code != 0 {
                let said = e.render().to_string();
                let first = said.lines().next().unwrap_or_default();
                let line = first.strip_prefix("error: ").unwrap_or(first);
                render::print_json(&serde_json::json!({ "exit": code, "errors": [line] }));
            }
            return code;
        }
    };
    init_logging(cli.verbose);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if matches!(cli.command, args::Command::Serve(_)) {
        // `serve` answers from memory and hands reads of large files to the blocking pool:
        // one worker does it in less memory (a thread's allocator arena) and faster (no hand-off
        // between workers): 101 ms against 112 for a sweep over stdio, peak RSS 22.8 against
        // 23.2 MiB (issue 41).
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            report(&e);
            return 1;
        }
    };
    // Every argument is checked first (`plan`, exit 2); only then is anything opened or started.
    let run = async {
        let plan = plan::Plan::new(cli)?;
        json = plan.ctx.json;
        commands::run(plan).await
    };
    let outcome = runtime.block_on(run);
    match outcome {
        Ok(Outcome::Ok) => 0,
        Ok(Outcome::Code(c)) => c,
        Err(failure) => failed(&failure, json),
    }
}

/// Reports a failed command on stderr, one line per error with its cause chain, and with
/// `--json`, unless the command printed its own value before it failed, also as the one JSON
/// value on stdout (`{"exit": N, "errors": ["…"]}`, each error as that line says it); returns
/// its exit code.
fn failed(failure: &failure::Failure, json: bool) -> u8 {
    let (code, lines): (u8, Vec<String>) = match failure {
        failure::Failure::Skill(e) => (exit_code(e), vec![chain(e.as_ref())]),
        failure::Failure::Many(code, errors) => (*code, errors.iter().map(|e| chain(e)).collect()),
        failure::Failure::Given(e) => (2, vec![chain(e.as_ref())]),
        failure::Failure::Usage(message) => (2, vec![message.clone()]),
        failure::Failure::Other(e) => (1, vec![chain(e.as_ref())]),
    };
    for line in &lines {
        eprintln!("skillcache: error: {line}");
    }
    if json && !render::printed_json() {
        render::print_json(&serde_json::json!({ "exit": code, "errors": lines }));
    }
    code
}
