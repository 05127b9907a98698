//! Host files (R-E4): the MCP configuration (`--config`) and the lock file (`--locked`,
//! `approve --from-lock`, `lock -o`) are regular files only, read bounded in bytes and in
//! structure before parsing, and refused with the file, line, column and key path — never a
//! line of their content.
//!
//! Every command here is run under a deadline that kills it: a FIFO opened for reading without
//! `O_NONBLOCK` blocks forever, and such a test must fail, not hang the suite.

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_env::{Env, code, stderr};
use skillcache::error::{ConfigError, FileProblem};
use skillcache::{Error, LockFile, McpConfig};

/// The longest a refused host file may take the CLI: it starts, reads a few bytes, exits.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `command` to the end within [`DEADLINE`], killing it (and failing) if it is still running
/// then: what it printed either way.
fn run_within(mut command: Command, what: &str) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn skillcache");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what}: still running after {DEADLINE:?} (blocked on the file?); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// The four ways a host file reaches the CLI, each given `file`: the arguments after `--root`.
/// None of them gets as far as starting the (nonexistent) server.
fn host_file_uses(file: &Path) -> Vec<(&'static str, Vec<String>)> {
    let f = file.display().to_string();
    let skill = "skill://notes/SKILL.md".to_owned();
    let server = ["--origin", "docs", "--stdio", "/nonexistent/server"].map(str::to_owned);
    let with = |head: &[&str], tail: &[String]| {
        head.iter()
            .map(|s| (*s).to_owned())
            .chain(tail.iter().cloned())
            .collect::<Vec<_>>()
    };
    vec![
        (
            "--config",
            with(&["list", "--config", &f, "--origin", "docs"], &[]),
        ),
        (
            "load --locked",
            with(
                &["load", "--locked", &f],
                &[&server[..], std::slice::from_ref(&skill)].concat(),
            ),
        ),
        (
            "approve --from-lock",
            with(&["approve", "--from-lock", &f], &server),
        ),
        (
            "lock -o",
            with(&["lock", "-o", &f], &[&server[..], &[skill]].concat()),
        ),
    ]
}

fn run(env: &Env, args: &[String], what: &str) -> Output {
    let mut command = env.cli();
    command.args(args);
    run_within(command, what)
}

#[test]
fn e4_a_fifo_given_as_any_host_file_is_refused_at_once() {
    let env = Env::keyed();
    let fifo = env.path("skills.fifo");
    mkfifo(&fifo);
    for (what, args) in host_file_uses(&fifo) {
        let out = run(&env, &args, what);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{what}: a refused file is exit 2: {err}");
        assert!(
            err.contains("FIFO") && err.contains(&fifo.display().to_string()),
            "{what}: names the file and what it is: {err}"
        );
        assert!(
            std::fs::symlink_metadata(&fifo)
                .expect("still there")
                .file_type()
                .is_fifo(),
            "{what}: the FIFO is neither replaced nor written through"
        );
    }
}

use std::os::unix::fs::FileTypeExt as _;

#[test]
fn e4_a_link_is_followed_only_to_a_regular_file() {
    let env = Env::keyed();
    let fifo = env.path("pipe");
    mkfifo(&fifo);
    let folder = env.path("folder");
    std::fs::create_dir(&folder).expect("mkdir");
    let socket_path = env.path("sock");
    let _socket = std::os::unix::net::UnixListener::bind(&socket_path).expect("bind a socket");
    for (target, what) in [
        (fifo.as_path(), "FIFO"),
        (Path::new("/dev/zero"), "device"),
        (Path::new("/dev/tty"), "device"),
        (folder.as_path(), "folder"),
        (socket_path.as_path(), "socket"),
    ] {
        let link = env.path("linked");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link).expect("symlink");
        for (how, args) in host_file_uses(&link) {
            let out = run(&env, &args, how);
            let err = stderr(&out);
            assert_eq!(
                code(&out),
                2,
                "{how} -> {}: refused at once: {err}",
                target.display()
            );
            assert!(err.contains(what), "{how} -> {}: {err}", target.display());
        }
        // The library's readers refuse it the same way, as a refused file with no position.
        for refused in [
            LockFile::read(&link).map(drop),
            McpConfig::read(&link).map(drop),
        ] {
            match refused {
                Err(Error::Config(
                    ConfigError::LockFile {
                        position: None,
                        problem: FileProblem::Invalid { why },
                        ..
                    }
                    | ConfigError::File {
                        position: None,
                        problem: FileProblem::Invalid { why },
                        ..
                    },
                )) => assert!(why.contains(what), "{why}"),
                other => panic!("{} refused as {what}: {other:?}", target.display()),
            }
        }
    }

    // A link to a regular file is followed: the lock it points to is read.
    let real = env.path("real.lock");
    LockFile::new().write(&real).expect("write");
    let link = env.path("lock-link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    assert_eq!(LockFile::read(&link).expect("read").skills().count(), 0);
}

/// Lines an attacker would like a CI log to show: a credentials file, an env file, JSON.
const SECRET: &str = "sk-live-0123456789abcdefSECRET";

#[test]
fn e4_a_host_file_linked_to_a_secrets_file_never_prints_the_secret() {
    let env = Env::keyed();
    let secrets = [
        format!("[default]\naws_secret_access_key = {SECRET}\n"),
        format!("export API_TOKEN={SECRET}\n"),
        format!("API_TOKEN={SECRET}\nOTHER=1\n"),
        format!("{{\"token\": \"{SECRET}\"}}\n"),
        format!("{{\"mcpServers\": {{\"x\": {{\"command\": 1, \"t\": \"{SECRET}\"}}}}}}\n"),
        format!("version = 1\n[[skill]]\norigin = \"{SECRET}\"\n"),
        format!("{SECRET} = [\n"),
        format!("\"{SECRET}\n"),
    ];
    for (i, text) in secrets.iter().enumerate() {
        let file = env.path(&format!("secret-{i}"));
        std::fs::write(&file, text).expect("write");
        let link = env.path("skills.lock");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        for (what, args) in host_file_uses(&link) {
            let out = run(&env, &args, what);
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{what} on {text:?}: {err}");
            assert!(!err.contains(SECRET), "{what} printed the secret: {err}");
            assert!(
                !err.contains("0123456789abcdef"),
                "{what} printed part of it: {err}"
            );
            assert!(err.contains("skills.lock"), "{what} names the file: {err}");
        }
    }

    // The process's own environment: a lock linked to /proc/self/environ, with a secret in it.
    let link = env.path("skills.lock");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/proc/self/environ", &link).expect("symlink");
    for (what, args) in host_file_uses(&link) {
        let mut command = env.cli();
        command.args(&args).env("DEPLOY_TOKEN", SECRET);
        let out = run_within(command, what);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{what}: {err}");
        assert!(
            !err.contains(SECRET),
            "{what} printed the environment: {err}"
        );
        assert!(!err.contains("DEPLOY_TOKEN"), "{what}: {err}");
    }
}

#[test]
fn e4_a_refused_host_file_names_its_line_column_and_key() {
    let env = Env::keyed();
    let config = env.path("mcp.json");
    std::fs::write(
        &config,
        "{\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"x\",\n             \"args\": [\"a\", 7]}\n  }\n}\n",
    )
    .expect("write");
    let out = run(
        &env,
        &[
            "list".into(),
            "--config".into(),
            config.display().to_string(),
            "--origin".into(),
            "docs".into(),
        ],
        "--config",
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("line 4, column 28: /mcpServers/docs/args/1: must be a string"),
        "{}",
        stderr(&out)
    );

    let lock = env.path("skills.lock");
    std::fs::write(
        &lock,
        "version = 1\n\n[[skill]]\norigin = \"docs\"\nuri = 5\n",
    )
    .expect("write");
    let out = run(
        &env,
        &[
            "load".into(),
            "--locked".into(),
            lock.display().to_string(),
            "--origin".into(),
            "docs".into(),
            "--stdio".into(),
            "/nonexistent/server".into(),
            "skill://notes/SKILL.md".into(),
        ],
        "--locked",
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("line 5, column 7: skill[0].uri: must be a string"),
        "{}",
        stderr(&out)
    );

    // Syntax: the parser's fixed words and the position, not the line it stopped at.
    std::fs::write(&lock, "version = 1\nnot toml at all = = =\n").expect("write");
    match LockFile::read(&lock) {
        Err(Error::Config(ConfigError::LockFile {
            position: Some((2, _)),
            problem: FileProblem::Syntax { message },
            ..
        })) => assert!(!message.contains("not toml"), "{message}"),
        other => panic!("a syntax error at line 2: {other:?}"),
    }
}

/// Peak resident memory, in KiB, of the CLI run with `args` under GNU time; and its output.
fn peak_kib(env: &Env, args: &[String]) -> (u64, Output) {
    let report = env.path("time-report");
    let mut command = Command::new("/usr/bin/time");
    command
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(cli_env::bin())
        .env("SKILLCACHE_ROOT", env.root())
        .env("SKILLCACHE_KEY_FILE", env.path("host.key"))
        .args(args);
    let out = run_within(command, "under /usr/bin/time");
    let text = std::fs::read_to_string(&report).expect("time wrote its report");
    let kib = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("a peak RSS in KiB, got {text:?}"));
    (kib, out)
}

/// A file of exactly `len` bytes: `head`, then `unit` repeated, then `tail`.
fn dense_file(path: &Path, head: &str, unit: &str, tail: &str, len: usize) -> PathBuf {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    f.write_all(head.as_bytes()).expect("write");
    let chunk = unit.repeat((1 << 16) / unit.len());
    let mut left = len - head.len() - tail.len();
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk.as_bytes()[..n]).expect("write");
        left -= n;
    }
    f.write_all(tail.as_bytes()).expect("write");
    f.flush().expect("flush");
    path.to_owned()
}

#[test]
fn e4_a_dense_64_mib_lock_and_a_dense_16_mib_lock_are_refused_in_bounded_memory() {
    // Before: a 64 MiB lock parsed into 4.9 GiB before it was refused, a 16 MiB config into
    // 281 MiB. The structure is counted while the bytes arrive, so a dense file is refused after
    // reading a few MiB, unparsed: the CLI's peak stays near its baseline.
    let env = Env::keyed();
    let locked = |lock: &Path| {
        peak_kib(
            &env,
            &[
                "load".into(),
                "--locked".into(),
                lock.display().to_string(),
                "--origin".into(),
                "docs".into(),
                "--stdio".into(),
                "/nonexistent/server".into(),
                "skill://notes/SKILL.md".into(),
            ],
        )
    };
    // 64 MiB: over the byte bound, refused from the descriptor's size before a byte is read.
    let lock = dense_file(
        &env.path("dense.lock"),
        "version = 1\nx = [",
        "0,",
        "0]\n",
        64 << 20,
    );
    let (kib, out) = locked(&lock);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        kib < 48 * 1024,
        "a 64 MiB dense lock took the CLI to {} MiB",
        kib / 1024
    );
    // Just under the byte bound: only the structure count can refuse it, and does, unparsed.
    let lock = dense_file(
        &env.path("dense.lock"),
        "version = 1\nx = [",
        "0,",
        "0]\n",
        (16 << 20) - 64,
    );
    let (kib, out) = locked(&lock);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("structure"), "{}", stderr(&out));
    assert!(
        kib < 48 * 1024,
        "a 16 MiB dense lock took the CLI to {} MiB",
        kib / 1024
    );
}

#[test]
fn e4_a_dense_16_mib_config_is_refused_where_servers_are_read_and_skipped_elsewhere() {
    let env = Env::keyed();
    // Just under the byte bound, dense where the reader builds values (a server's arguments):
    // refused while it is parsed, once what was built reaches the message bound. The file and
    // its comment-blanked copy are in memory then, and at most that bound's values.
    let config = dense_file(
        &env.path("dense.json"),
        "{\"mcpServers\": {\"docs\": {\"command\": \"x\", \"args\": [",
        "0,",
        "0]}}}",
        (16 << 20) - 64,
    );
    let args = |config: &std::path::Path| -> Vec<String> {
        vec![
            "list".into(),
            "--config".into(),
            config.display().to_string(),
            "--origin".into(),
            "docs".into(),
        ]
    };
    let (kib, out) = peak_kib(&env, &args(&config));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("structure"), "{}", stderr(&out));
    assert!(
        kib < 96 * 1024,
        "a 16 MiB dense config took the CLI to {} MiB",
        kib / 1024
    );
    // Dense where no reader of servers looks (as Claude Code keeps each project's history):
    // skipped unbuilt, so the file is read in the memory the text takes.
    let config = dense_file(
        &env.path("dense.json"),
        "{\"mcpServers\": {}, \"x\": [",
        "0,",
        "0]}",
        (16 << 20) - 64,
    );
    let (kib, out) = peak_kib(&env, &args(&config));
    assert!(!stderr(&out).contains("structure"), "{}", stderr(&out));
    assert!(
        kib < 64 * 1024,
        "a 16 MiB config dense outside its servers took the CLI to {} MiB",
        kib / 1024
    );
}

#[test]
fn k6_a_dense_jsonc_config_hidden_from_the_pre_scan_by_a_quote_in_a_comment_is_refused_in_bounded_memory()
 {
    // The reader's pre-scan counts no structure inside what it takes for a string, and a
    // comment's quote opens one: the array below is invisible to it. What the config reader
    // builds of the text left once the comments are blanked (a server's arguments) is charged
    // as it is built, so the quote hides nothing from that count. In memory: the file, its
    // blanked copy and at most the message bound's values (asserted under 96 MiB).
    let env = Env::keyed();
    let config = dense_file(
        &env.path("dense.jsonc"),
        "{\"servers\": {\"docs\": {\"command\": \"x\", // \"\n\"args\": [",
        "0,",
        "0]}}} // \"",
        (16 << 20) - 64,
    );
    let (kib, out) = peak_kib(
        &env,
        &[
            "list".into(),
            "--config".into(),
            config.display().to_string(),
            "--origin".into(),
            "docs".into(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("structure"), "{}", stderr(&out));
    assert!(
        kib < 96 * 1024,
        "a 16 MiB dense JSONC config took the CLI to {} MiB",
        kib / 1024
    );
}

#[test]
fn e4_a_lock_as_large_as_the_structure_bound_allows_parses_in_tens_of_mib() {
    // The worst file the pre-scan lets through: just under 2^19 tokens, all of them values. The
    // parser's cost follows from the bound (about 80 bytes a token): tens of MiB, not GiB.
    let env = Env::keyed();
    let lock = dense_file(
        &env.path("max.lock"),
        "version = 1\nx = [",
        "0,",
        "0]\n",
        (1 << 19) - 64,
    );
    let (kib, out) = peak_kib(
        &env,
        &[
            "load".into(),
            "--locked".into(),
            lock.display().to_string(),
            "--origin".into(),
            "docs".into(),
            "--stdio".into(),
            "/nonexistent/server".into(),
            "skill://notes/SKILL.md".into(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("has a key a lock file does not have"),
        "parsed, then refused for its key: {err}"
    );
    assert!(
        kib < 96 * 1024,
        "the densest lock the bound admits took the CLI to {} MiB",
        kib / 1024
    );
}
