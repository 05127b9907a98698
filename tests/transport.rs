//! Bounded time and memory on every path (R-B1…R-B5, issue 10), end to end through the
//! `skillcache` binary against hostile servers (`examples/hostile_server.rs`), `skillcache serve`
//! and a small Streamable HTTP server. Every hostile case runs with `--timeout 2` and ends on its
//! own; no test asserts on elapsed time. Peak memory of the CLI process is measured with GNU
//! `time` (`/usr/bin/time -f %M`, the child's `ru_maxrss`): a memory bound, not a timing.
#![allow(clippy::result_large_err)]

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;
#[path = "common/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cli_env::{Env, bin, code, serve_cmd, stderr};
use skillcache::Digest;

const MIB: usize = 1024 * 1024;
/// The whole-skill limit (R-W7 baseline), which is also the largest a single file can be.
const LIMIT: usize = 16 * MIB;
/// What "bounded memory" means for a 200 MB answer.
const PEAK_MAX_KIB: u64 = 100 * 1024;

/// The command failed with exit `code`, and its error says `needle`.
fn expect_failure(out: &std::process::Output, code_wanted: i32, needle: &str) {
    expect_failure_saying(out, code_wanted, &[needle]);
}

/// The command failed with exit `code`, and its error says every one of `needles`.
fn expect_failure_saying(out: &std::process::Output, code_wanted: i32, needles: &[&str]) {
    assert_eq!(code(out), code_wanted, "{}", stderr(out));
    for needle in needles {
        assert!(stderr(out).contains(needle), "{needle:?}: {}", stderr(out));
    }
}

fn hostile() -> PathBuf {
    common::example_bin("hostile_server")
}

impl Env {
    /// A served folder with skill `notes`: `SKILL.md` and `refs/notes.md`.
    fn served(&self) -> PathBuf {
        let served = self.path("served");
        let skill = served.join("notes");
        std::fs::create_dir_all(skill.join("refs")).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: notes\ndescription: Takes notes.\n---\n# Notes\nSee refs/notes.md.\n",
        )
        .expect("write");
        std::fs::write(skill.join("refs/notes.md"), "the notes\n").expect("write");
        served
    }
    /// A skill folder `name` holding only a `SKILL.md` with `description`, for `inspect`.
    fn skill_folder(&self, name: &str, description: &str) -> PathBuf {
        let skill = self.path(name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n"),
        )
        .expect("write");
        skill
    }
    /// A `--stdio` command serving [`Env::served`] (`serve OPTIONS FOLDER`) that leaves a marker
    /// file when it starts; returns (marker, command).
    fn marked_server(&self, options: &str) -> (PathBuf, String) {
        let served = self.served();
        let marker = self.path("server-started");
        let cmd = format!(
            "sh -c \"touch '{}' && exec '{}' serve {options}'{}'\"",
            marker.display(),
            bin().display(),
            served.display()
        );
        (marker, cmd)
    }
    /// A served skill `name` whose one extra file `data` is `bytes`, sized so the skill is
    /// exactly at the limit.
    fn big_skill(&self, name: &str, fill: impl Fn(usize) -> u8) -> (PathBuf, Vec<u8>) {
        let served = self.path(&format!("served-{name}"));
        let skill = served.join(name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        let md = format!("---\nname: {name}\ndescription: One large file.\n---\n# {name}\n");
        std::fs::write(skill.join("SKILL.md"), &md).expect("write");
        let bytes: Vec<u8> = (0..LIMIT - md.len()).map(fill).collect();
        std::fs::write(skill.join("data"), &bytes).expect("write");
        (served, bytes)
    }
    /// Runs the CLI under GNU time; returns its output and its peak resident size in KiB.
    fn run_measured(&self, args: &[&str]) -> (Output, u64) {
        let report = self.path("time-report");
        let out = Command::new("/usr/bin/time")
            .arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&report)
            .arg(bin())
            .env("SKILLCACHE_ROOT", self.path("root"))
            .args(args)
            .output()
            .expect("/usr/bin/time (GNU time) runs: the memory bounds are measured with it");
        let text = std::fs::read_to_string(&report).expect("time wrote its report");
        let kib = text
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("a peak RSS in KiB, got {text:?}"));
        (out, kib)
    }
}

fn hostile_cmd(dir: &Path, mode: &str) -> String {
    format!("'{}' '{}' {mode}", hostile().display(), dir.display())
}

const NOTES: &str = "skill://notes/SKILL.md";

/// `load` of the notes skill from the hostile server in `mode`, with a 2 s deadline.
fn load_from(env: &Env, mode: &str) -> Output {
    let cmd = hostile_cmd(&env.served(), mode);
    env.run(&[
        "load",
        "--timeout",
        "2",
        NOTES,
        "--origin",
        "hostile",
        "--stdio",
        &cmd,
    ])
}

#[test]
fn b1_no_answer_at_initialize_times_out_with_exit_4_naming_origin_and_method() {
    let env = Env::new();
    let out = load_from(&env, "silent-initialize");
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("initialize to origin hostile got no answer within 2 s"),
        "{err}"
    );
}

#[test]
fn b1_cat_as_a_server_times_out_at_initialize() {
    let env = Env::new();
    let out = env.run(&[
        "load",
        "--timeout",
        "2",
        NOTES,
        "--origin",
        "cat",
        "--stdio",
        "cat",
    ]);
    expect_failure(&out, 4, "initialize to origin cat got no answer");
}

#[test]
fn b1_no_answer_at_resources_read_times_out_with_exit_4() {
    let env = Env::new();
    let out = load_from(&env, "silent-read");
    expect_failure(
        &out,
        4,
        "resources/read to origin hostile got no answer within 2 s",
    );
    assert!(out.stdout.is_empty(), "nothing was printed");
}

#[test]
fn b1_an_answer_under_a_wrong_id_is_no_answer_and_times_out() {
    let env = Env::new();
    let out = load_from(&env, "wrong-id");
    expect_failure(&out, 4, "resources/read to origin hostile got no answer");
}

#[test]
fn b1_a_timed_out_read_leaves_nothing_and_the_next_call_succeeds() {
    let env = Env::new();
    let served = env.served();
    let silent = hostile_cmd(&served, "silent-read");
    let first = env.run(&[
        "load",
        "--timeout",
        "2",
        NOTES,
        "--origin",
        "o",
        "--stdio",
        &silent,
    ]);
    assert_eq!(code(&first), 4, "{}", stderr(&first));
    let stats = env.run(&["stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("stats json");
    assert_eq!(stats["blobs"], 0, "a timed-out read stored nothing");
    let honest = serve_cmd(&served);
    let second = env.run(&[
        "load",
        "--timeout",
        "2",
        NOTES,
        "--origin",
        "o",
        "--stdio",
        &honest,
    ]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(String::from_utf8_lossy(&second.stdout).contains("# Notes"));
}

#[test]
fn b2_a_200_mb_answer_for_a_small_file_is_refused_while_reading_with_bounded_memory() {
    let env = Env::new();
    let cmd = hostile_cmd(&env.served(), "huge-read");
    let (out, peak_kib) = env.run_measured(&[
        "load",
        "--timeout",
        "30",
        NOTES,
        "--origin",
        "hostile",
        "--stdio",
        &cmd,
    ]);
    eprintln!("peak memory over stdio: {peak_kib} KiB");
    expect_failure(
        &out,
        4,
        "resources/read to origin hostile: the server sent a message larger than the bound",
    );
    assert!(
        peak_kib < PEAK_MAX_KIB,
        "peak memory {peak_kib} KiB, bound {PEAK_MAX_KIB} KiB"
    );
}

#[test]
fn b2_a_200_mb_http_answer_is_refused_while_reading_with_bounded_memory() {
    let env = Env::new();
    let url = http::serve_http(
        skillcache::server::SkillServer::new(env.served()),
        http::HttpMode::HugeRead,
    );
    let (out, peak_kib) = env.run_measured(&[
        "load",
        "--timeout",
        "30",
        NOTES,
        "--origin",
        "web",
        "--url",
        &url,
    ]);
    eprintln!("peak memory over http: {peak_kib} KiB");
    expect_failure_saying(
        &out,
        4,
        &[
            "resources/read to origin web: the connection to the server failed",
            &format!(
                "the server's answer is larger than the bound of {} bytes",
                skillcache::source::message_bound(&skillcache::entry::Limits::default())
            ),
        ],
    );
    assert!(
        peak_kib < PEAK_MAX_KIB,
        "peak memory {peak_kib} KiB, bound {PEAK_MAX_KIB} KiB"
    );
}

/// Reads `data` of the big skill `name` through `server_args` and checks the bytes.
fn read_big(env: &Env, name: &str, server_args: &[&str], expected: &[u8]) {
    let uri = format!("skill://{name}/SKILL.md");
    let mut args = vec!["read", "--timeout", "60", &uri, "data", "--origin", "big"];
    args.extend_from_slice(server_args);
    let out = env.run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout.len(), expected.len());
    assert_eq!(
        Digest::of(&out.stdout),
        Digest::of(expected),
        "verified bytes"
    );
}

/// Bytes that are not UTF-8 (sent as base64).
fn binary(i: usize) -> u8 {
    [0xff, 0x00, 0x80, 0x7f][i % 4]
}

/// UTF-8 text made only of characters JSON escapes in two bytes: it doubles as text.
fn escapes(i: usize) -> u8 {
    [b'"', b'\t', b'\\', b'\n'][i % 4]
}

#[test]
fn b2_a_16_mib_binary_file_loads_over_stdio_from_serve() {
    let env = Env::new();
    let (served, bytes) = env.big_skill("binary", binary);
    read_big(&env, "binary", &["--stdio", &serve_cmd(&served)], &bytes);
}

#[test]
fn b2_a_16_mib_text_file_heavy_in_escapes_loads_over_stdio_sent_as_text() {
    let env = Env::new();
    let (served, bytes) = env.big_skill("escapes", escapes);
    // `always-text` sends it as JSON text, twice its size on the wire.
    read_big(
        &env,
        "escapes",
        &["--stdio", &hostile_cmd(&served, "always-text")],
        &bytes,
    );
}

#[test]
fn b2_a_16_mib_binary_and_escape_heavy_text_file_load_over_streamable_http() {
    let env = Env::new();
    let (served, bytes) = env.big_skill("binary", binary);
    let url = http::serve_http(
        skillcache::server::SkillServer::new(served),
        http::HttpMode::Honest,
    );
    read_big(&env, "binary", &["--url", &url], &bytes);
    let (served, bytes) = env.big_skill("escapes", escapes);
    let url = http::serve_http(
        skillcache::server::SkillServer::new(served),
        http::HttpMode::Honest,
    );
    read_big(&env, "escapes", &["--url", &url], &bytes);
}

#[test]
fn b2_death_mid_message_is_a_transport_error_with_exit_4() {
    let env = Env::new();
    let out = load_from(&env, "die-mid-read");
    expect_failure_saying(
        &out,
        4,
        &["the server closed its output", "bytes into a message"],
    );
}

#[test]
fn b8_a_result_type_other_than_complete_is_a_protocol_error_with_exit_4() {
    let env = Env::new();
    let out = load_from(&env, "input-required");
    expect_failure(&out, 4, "resultType is \"input_required\"");
}

#[test]
fn b8_skills_calls_need_both_resources_and_the_extension() {
    for (mode, missing) in [
        ("no-resources", "the resources capability"),
        (
            "no-extension",
            "the io.modelcontextprotocol/skills extension",
        ),
    ] {
        let env = Env::new();
        let out = load_from(&env, mode);
        assert_eq!(code(&out), 4, "{mode}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("the server did not declare {missing}")),
            "{mode}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn b4_a_warm_load_of_a_fresh_entry_never_starts_the_server() {
    let env = Env::new();
    // The server leaves a marker when it starts; entries are fresh for an hour.
    let (marker, cmd) = env.marked_server("--ttl-ms 3600000 ");
    let cold = env.run(&["load", NOTES, "--origin", "o", "--stdio", &cmd]);
    assert_eq!(code(&cold), 0, "{}", stderr(&cold));
    assert!(marker.exists(), "the cold load started the server");
    std::fs::remove_file(&marker).expect("rm marker");
    let warm = env.run(&["load", NOTES, "--origin", "o", "--stdio", &cmd]);
    assert_eq!(code(&warm), 0, "{}", stderr(&warm));
    assert_eq!(warm.stdout, cold.stdout);
    assert!(!marker.exists(), "the warm load started the server");
    // A server that cannot even start is never needed either.
    let gone = env.run(&[
        "load",
        NOTES,
        "--origin",
        "o",
        "--stdio",
        "/nonexistent/server",
    ]);
    assert_eq!(code(&gone), 0, "{}", stderr(&gone));
    assert_eq!(gone.stdout, cold.stdout);
}

#[test]
fn b6_usage_errors_exit_2_before_any_server_starts() {
    let env = Env::new();
    let (marker, cmd) = env.marked_server("");
    let long = "o".repeat(81);
    for args in [
        vec!["load", NOTES, "--origin", "", "--stdio", &cmd],
        vec!["load", NOTES, "--origin", &long, "--stdio", &cmd],
        vec!["load", "not a uri", "--origin", "o", "--stdio", &cmd],
        vec![
            "entry",
            "skill://x/README.md",
            "--origin",
            "o",
            "--stdio",
            &cmd,
        ],
        vec!["list", "--origin", "o", "--stdio", "'unterminated"],
        vec!["list", "--timeout", "0", "--origin", "o", "--stdio", &cmd],
        vec![
            "list",
            "--timeout",
            "soon",
            "--origin",
            "o",
            "--stdio",
            &cmd,
        ],
        vec!["purge", "--origin", ""],
        vec!["serve", "/nonexistent/folder"],
        vec!["inspect", "/nonexistent/folder"],
    ] {
        let out = env.run(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("error"),
            "{args:?} says why: {}",
            stderr(&out)
        );
        assert!(!marker.exists(), "{args:?} started the server");
    }
}

#[test]
fn b6_an_empty_skillcache_root_is_unset() {
    let env = Env::new();
    let out = Command::new(bin())
        .args(["stats", "--json"])
        .env("SKILLCACHE_ROOT", "")
        .env("XDG_CACHE_HOME", env.path("xdg"))
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        stats["root"],
        env.path("xdg/skillcache").display().to_string()
    );
}

#[test]
fn b3_a_sparse_3_gib_file_is_refused_from_metadata_without_reading_it() {
    let env = Env::new();
    let skill = env.skill_folder("huge", "Too big.");
    let f = std::fs::File::create(skill.join("sparse.bin")).expect("create");
    f.set_len(3 << 30).expect("a sparse 3 GiB file");
    let (out, peak_kib) = env.run_measured(&["inspect", &skill.display().to_string()]);
    expect_failure(&out, 4, "the total size in bytes is 3221225");
    assert!(
        peak_kib < 50 * 1024,
        "inspect read the file: peak {peak_kib} KiB"
    );
}

#[test]
fn b3_a_folder_with_more_files_than_the_limit_is_refused_before_reading() {
    let env = Env::new();
    let skill = env.skill_folder("many", "Too many files.");
    std::fs::create_dir_all(skill.join("files")).expect("mkdir");
    for i in 0..600 {
        std::fs::write(skill.join(format!("files/{i:04}.txt")), "x").expect("write");
    }
    let out = env.run(&["inspect", &skill.display().to_string()]);
    expect_failure_saying(
        &out,
        4,
        &[
            "the number of files is 513, above the limit of 512",
            "counting stopped at the first one over",
        ],
    );
}

#[test]
fn b3_a_fifo_in_a_skill_folder_does_not_hang_inspect() {
    let env = Env::new();
    let skill = env.skill_folder("piped", "Has a pipe.");
    let made = Command::new("mkfifo")
        .arg(skill.join("pipe"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let mut child = env
        .cli()
        .args(["inspect", &skill.display().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // A guard against a hang, not a speed check: a FIFO nobody writes blocks a reader forever.
    let mut waited = 0;
    while child.try_wait().expect("try_wait").is_none() {
        if waited > 600 {
            let _ = child.kill();
            panic!("inspect hung on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    let out = child.wait_with_output().expect("output");
    expect_failure(&out, 4, "pipe: is not a regular file or folder");
}

mod library {
    //! The same bounds through the library API, where a test needs to look inside.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use skillcache::server::SkillServer;
    use skillcache::source::{McpSource, SkillSource, SourceFuture};
    use skillcache::{ApprovalPolicy, SkillCache};
    use skillcache::{Error, Origin, SkillUri};

    use super::{Env, NOTES, hostile};

    fn cache(env: &Env) -> SkillCache {
        SkillCache::builder()
            .approval(ApprovalPolicy::NotRequired)
            .root(env.path("root"))
            .open()
            .expect("cache opens")
    }

    /// Waits (boundedly) until `entry()` stops answering from the index; that is the stale mark.
    async fn refreshed(
        cache: &SkillCache,
        origin: &Origin,
        uri: &SkillUri,
    ) -> skillcache::EntryInfo {
        for _ in 0..1000 {
            let info = cache.entry(origin, uri).await.expect("entry");
            if !info.from_cache {
                return info;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the notification never made the entry stale");
    }

    async fn notified_entry_is_refreshed_and_approval_rechecked(mode: &str) {
        let env = Env::new();
        let served = env.served();
        // Entries are fresh for an hour: only the notification can make them stale.
        let cmd = format!(
            "'{}' '{}' {mode} 3600000",
            hostile().display(),
            served.display()
        );
        let cache = cache(&env);
        let origin = Origin::new("notifying").expect("origin");
        let source = McpSource::stdio(super::common::sh(&cmd));
        cache.connect(origin.clone(), Arc::new(source));
        let uri = SkillUri::parse(NOTES).expect("uri");
        let first = cache.entry(&origin, &uri).await.expect("entry");
        assert!(!first.from_cache);
        cache
            .approve(&origin, &first.entry, None)
            .await
            .expect("approve");
        std::fs::write(served.join("notes/refs/notes.md"), "edited notes\n").expect("edit");
        let before = cache.entry(&origin, &uri).await.expect("entry");
        assert!(
            before.from_cache,
            "{mode}: without a notification the fresh row is trusted"
        );
        // Loading reads SKILL.md; the server then announces the change.
        cache.load(&origin, &first.entry).await.expect("load");
        let after = refreshed(&cache, &origin, &uri).await;
        assert!(
            after.revoked,
            "{mode}: the approval was re-checked and revoked"
        );
        let diff = after.diff.map(|d| d.to_string()).unwrap_or_default();
        assert!(diff.contains("refs/notes.md"), "{mode}: {diff}");
        assert_ne!(after.entry.binding(), first.entry.binding());
        // A mark is compared with a row's fetch time in milliseconds, conservatively: a refresh
        // in the very millisecond the notification arrived is not known to be after it, so it is
        // fetched once more (a load that no longer waits for the store's syncs made that
        // millisecond common). After that, the row is trusted: one more entry at most asks.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let settled = cache.entry(&origin, &uri).await.expect("entry").from_cache
            || cache.entry(&origin, &uri).await.expect("entry").from_cache;
        assert!(settled, "{mode}: once refreshed, the row is trusted again");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn b5_resources_updated_marks_the_skill_stale_and_rechecks_approval() {
        notified_entry_is_refreshed_and_approval_rechecked("notify-updated").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn b5_list_changed_marks_the_origins_entries_stale_and_rechecks_approval() {
        notified_entry_is_refreshed_and_approval_rechecked("notify-list").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn b2_a_line_over_a_configured_bound_is_refused_naming_the_method_and_bound() {
        let env = Env::new();
        let served = env.served();
        std::fs::write(served.join("notes/refs/notes.md"), "n".repeat(10_000)).expect("write");
        let cmd = format!("'{}' serve '{}'", super::bin().display(), served.display());
        let source = McpSource::stdio(super::common::sh(&cmd)).max_message_bytes(4096);
        let cache = cache(&env);
        let origin = Origin::new("small").expect("origin");
        cache.connect(origin.clone(), Arc::new(source));
        let uri = SkillUri::parse(NOTES).expect("uri");
        let info = cache
            .entry(&origin, &uri)
            .await
            .expect("a small entry fits");
        let skill = cache
            .load(&origin, &info.entry)
            .await
            .expect("SKILL.md fits");
        match skill.read("refs/notes.md").await {
            Err(Error::Source(skillcache::error::SourceError::MessageTooLarge {
                method,
                max,
                ..
            })) => {
                assert_eq!((method.as_str(), max), ("resources/read", 4096));
            }
            other => panic!("expected MessageTooLarge, got {other:?}"),
        }
    }

    /// A source whose reads never answer while `hang` is set; it counts them.
    struct Stalling {
        server: SkillServer,
        hang: AtomicBool,
        reads: AtomicUsize,
    }

    impl SkillSource for Stalling {
        fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
            self.server.list_skills(cursor)
        }
        fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
            self.server.get_skill(uri)
        }
        fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            if self.hang.load(Ordering::SeqCst) {
                Box::pin(std::future::pending())
            } else {
                self.server.read_resource(uri)
            }
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn b1_single_flight_waiters_get_the_timeout_and_the_next_call_retries() {
        let env = Env::new();
        let source = Arc::new(Stalling {
            server: SkillServer::new(env.served()),
            hang: AtomicBool::new(true),
            reads: AtomicUsize::new(0),
        });
        let cache = SkillCache::builder()
            .approval(ApprovalPolicy::NotRequired)
            .root(env.path("root"))
            .request_timeout(Duration::from_secs(2))
            .open()
            .expect("cache");
        let origin = Origin::new("stalling").expect("origin");
        cache.connect(origin.clone(), source.clone());
        let uri = SkillUri::parse(NOTES).expect("uri");
        let entry = cache.entry(&origin, &uri).await.expect("entry").entry;
        let loads: Vec<_> = (0..3)
            .map(|_| {
                let (cache, origin, entry) = (cache.clone(), origin.clone(), entry.clone());
                tokio::spawn(async move { cache.load(&origin, &entry).await })
            })
            .collect();
        for load in loads {
            match load.await.expect("task") {
                Err(Error::Source(skillcache::error::SourceError::Timeout {
                    origin: o,
                    method,
                    ..
                })) => {
                    assert_eq!(
                        (o.as_str(), method.as_str()),
                        ("stalling", "resources/read")
                    );
                }
                other => panic!("expected a timeout, got {other:?}"),
            }
        }
        assert_eq!(
            source.reads.load(Ordering::SeqCst),
            1,
            "the waiters shared the one request's timeout"
        );
        source.hang.store(false, Ordering::SeqCst);
        let skill = cache
            .load(&origin, &entry)
            .await
            .expect("the next call asks again");
        assert!(matches!(
            skill.skill_md().verification(),
            skillcache::Verification::Verified(_)
        ));
        assert_eq!(source.reads.load(Ordering::SeqCst), 2);
    }
}
