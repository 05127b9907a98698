//! The `skillcache` binary with MCP host configuration files, lock files and offline mode
//! (issue 13, items 2–4), end to end against `skillcache serve` children named in a config file.

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use cli_env::{Env, bin, code, stderr, stdout};
use serde_json::{Value, json};

const HOUR_MS: &str = "3600000";

impl Env {
    /// A skill `name` in the served folder `folder`, with `files` (relative path, text) besides
    /// its SKILL.md.
    fn skill(&self, folder: &str, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let skill = self.path(folder).join(name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n"),
        )
        .expect("write");
        for (rel, text) in files {
            let path = skill.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        skill
    }

    /// A config file with `servers` (name → server object) under `mcpServers`.
    fn config(&self, servers: &Value) -> PathBuf {
        let path = self.path("mcp.json");
        std::fs::write(&path, json!({"mcpServers": servers}).to_string()).expect("write");
        path
    }

    /// A configured `skillcache serve FOLDER` with `ttl_ms`.
    fn serve(&self, folder: &str, ttl_ms: &str) -> Value {
        json!({"command": bin(), "args": ["serve", "--ttl-ms", ttl_ms, self.path(folder)]})
    }

    /// `run` with `--config` right after the command (`args[0]`).
    fn with_config(&self, config: &Path, args: &[&str]) -> Output {
        let config = config.display().to_string();
        let mut all = vec![args[0], "--config", config.as_str()];
        all.extend_from_slice(&args[1..]);
        self.run(&all)
    }
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

fn names(listing: &Value) -> Vec<String> {
    listing["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn cli_config_selects_a_server_by_origin_and_labels_it_with_the_key() {
    let env = Env::keyed();
    env.skill("team-skills", "notes", &[("refs/a.md", "alpha")]);
    let config = env.config(&json!({"team": env.serve("team-skills", HOUR_MS)}));
    let list = env.with_config(&config, &["list", "--json", "--origin", "team"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let listing = json_of(&list);
    assert_eq!(listing["origin"], "team");
    assert_eq!(names(&listing), ["notes"]);
    let read = env.with_config(
        &config,
        &[
            "read",
            "--origin",
            "team",
            "skill://notes/SKILL.md",
            "refs/a.md",
        ],
    );
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    assert_eq!(stdout(&read), "alpha");
    let entries = env.run(&["entries", "--json"]);
    assert_eq!(
        json_of(&entries)[0]["origin"],
        "team",
        "cached under the config key"
    );
}

#[test]
fn cli_vscode_servers_shape_is_read_too() {
    let env = Env::keyed();
    env.skill("served", "notes", &[]);
    let path = env.path("vscode-mcp.json");
    let server = env.serve("served", HOUR_MS);
    std::fs::write(
        &path,
        json!({"servers": {"local": {"type": "stdio", "command": server["command"], "args": server["args"]}},
               "inputs": []})
        .to_string(),
    )
    .expect("write");
    let list = env.with_config(&path, &["list", "--json", "--origin", "local"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(names(&json_of(&list)), ["notes"]);
}

#[test]
fn cli_list_all_lists_every_configured_server_and_reports_the_one_that_fails() {
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    env.skill("b", "beta", &[]);
    env.skill("b", "gamma", &[]);
    let config = env.config(&json!({
        "one": env.serve("a", HOUR_MS),
        "two": env.serve("b", HOUR_MS),
        "broken": {"command": env.path("no-such-server")},
    }));
    let out = env.with_config(&config, &["list", "--json", "--all"]);
    assert_eq!(code(&out), 4, "the failed server decides the exit code");
    let v = json_of(&out);
    let origins = v["origins"].as_array().expect("origins");
    let by = |name: &str| {
        origins
            .iter()
            .find(|o| o["origin"] == name)
            .unwrap_or_else(|| panic!("{name} in {v}"))
    };
    assert_eq!(names(by("one")), ["alpha"]);
    assert_eq!(names(by("two")), ["beta", "gamma"]);
    assert!(
        by("broken")["error"]
            .as_str()
            .is_some_and(|e| e.contains("connect")),
        "{v}"
    );
    assert!(stderr(&out).contains("no-such-server"), "{}", stderr(&out));
    // Not a terminal: no progress bar in the output.
    assert!(!stderr(&out).contains("servers"), "{}", stderr(&out));

    let human = env.with_config(&config, &["list", "--all"]);
    let text = stdout(&human);
    for needle in [
        "origin one",
        "origin two",
        "origin broken",
        "alpha",
        "gamma",
        "failed:",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
}

#[test]
fn cli_bad_config_files_name_the_path_and_the_field_and_exit_2() {
    let env = Env::keyed();
    let path = env.path("mcp.json");
    for (text, field) in [
        (
            r#"{"mcpServers": {"x": {"command": "s", "args": "--flag"}}}"#,
            "/mcpServers/x/args",
        ),
        (
            r#"{"mcpServers": {"x": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": 1}}}}"#,
            "/mcpServers/x/headers/A",
        ),
        (
            r#"{"servers": {"x": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}"#,
            "/servers/x/type",
        ),
        // R-E4: a syntax error is named by its line and column, in the parser's fixed words.
        (
            r#"{"mcpServers": "#,
            "line 1, column 15: cannot be parsed: EOF while parsing a value",
        ),
    ] {
        std::fs::write(&path, text).expect("write");
        let out = env.with_config(&path, &["list", "--origin", "x"]);
        assert_eq!(code(&out), 2, "{text}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&path.display().to_string()) && err.contains(field),
            "{field} in {err}"
        );
    }
    // A missing file is a usage error too (docs/cli.md): the path was given on the command line.
    // Before: exit 1, as a failure of the cache.
    let out = env.run(&["list", "--config", "/nonexistent/mcp.json", "--origin", "x"]);
    assert_eq!(code(&out), 2, "a missing --config file is a usage error");
    assert!(
        stderr(&out).contains("/nonexistent/mcp.json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn cli_a_config_that_gives_a_server_or_a_field_twice_is_refused_naming_it() {
    // R-O1: the origin label must name one server. JSON parsers keep the last of two equal
    // keys, so a file could show a reviewer one server and start another under the same name.
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    let path = env.path("mcp.json");
    let reviewed = env.serve("a", HOUR_MS).to_string();
    for (text, field) in [
        (
            format!(
                r#"{{"mcpServers": {{"docs": {reviewed}, "docs": {{"command": "/nonexistent/other"}}}}}}"#
            ),
            "/mcpServers/docs",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"docs": {{"command": "/nonexistent/other", "command": "{}"}}}}}}"#,
                bin().display()
            ),
            "/mcpServers/docs/command",
        ),
        (
            format!(r#"{{"mcpServers": {{"docs": {reviewed}}}, "mcpServers": {{}}}}"#),
            "/mcpServers",
        ),
    ] {
        std::fs::write(&path, &text).expect("write");
        let out = env.with_config(&path, &["list", "--origin", "docs"]);
        assert_eq!(code(&out), 2, "{text}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&path.display().to_string())
                && err.contains(&format!("{field}: is given twice")),
            "{field} in {err}"
        );
    }
}

#[test]
fn cli_a_server_a_process_cannot_be_given_as_written_is_refused_naming_the_field() {
    // A variable name with '=' would give the child another variable than the file shows;
    // a NUL cannot reach a process at all: both refused at read, naming the field (exit 2).
    let env = Env::keyed();
    let path = env.path("mcp.json");
    for (server, field) in [
        (
            json!({"command": bin(), "env": {"PATH=/tmp/evil:/usr/bin": "x"}}),
            "/mcpServers/x/env/PATH=~1tmp~1evil:~1usr~1bin",
        ),
        (
            json!({"command": bin(), "env": {"": "x"}}),
            "/mcpServers/x/env/",
        ),
        (
            json!({"command": bin(), "env": {"K": "a\0b"}}),
            "/mcpServers/x/env/K",
        ),
        (
            json!({"command": bin(), "args": ["serve", "a\0b"]}),
            "/mcpServers/x/args/1",
        ),
        (json!({"command": "sk\0illcache"}), "/mcpServers/x/command"),
    ] {
        std::fs::write(&path, json!({"mcpServers": {"x": server}}).to_string()).expect("write");
        let out = env.with_config(&path, &["list", "--origin", "x"]);
        assert_eq!(code(&out), 2, "{server}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{field}: ")),
            "{field} in {}",
            stderr(&out)
        );
    }
}

#[test]
fn cli_an_origin_the_config_does_not_name_is_a_usage_error() {
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    let config = env.config(&json!({"one": env.serve("a", HOUR_MS)}));
    let out = env.with_config(&config, &["list", "--origin", "two"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no server named \"two\"") && stderr(&out).contains("one"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["list", "--all"]);
    assert_eq!(code(&out), 2, "--all needs --config: {}", stderr(&out));
}

/// A loopback HTTP endpoint that records each request's headers and answers 401.
fn recording_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut out = stream;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                log.lock().expect("lock").push(line.trim_end().to_owned());
            }
            let _ = out.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (url, seen)
}

#[test]
fn cli_configured_http_headers_are_sent_with_the_requests() {
    let env = Env::keyed();
    let (url, seen) = recording_endpoint();
    let config = env.config(&json!({
        "remote": {"url": url, "headers": {"Authorization": "Bearer s3cret", "X-Team": "docs"}}
    }));
    let out = env.with_config(&config, &["list", "--timeout", "10", "--origin", "remote"]);
    assert_eq!(code(&out), 4, "the endpoint refuses: {}", stderr(&out));
    let headers = seen.lock().expect("lock").join("\n").to_ascii_lowercase();
    assert!(
        headers.contains("authorization: bearer s3cret") && headers.contains("x-team: docs"),
        "the configured headers reached the server:\n{headers}"
    );
}

#[test]
fn cli_lock_then_locked_load_refuses_drift_with_exit_5_naming_every_file() {
    let env = Env::keyed();
    let notes = env.skill(
        "served",
        "notes",
        &[("refs/a.md", "alpha"), ("refs/b.md", "beta")],
    );
    env.skill("served", "stable", &[]);
    // ttlMs 0: every command asks the server again, so drift is seen at once.
    let config = env.config(&json!({"team": env.serve("served", "0")}));
    let lock = env.with_config(&config, &["lock", "--json", "--all"]);
    assert_eq!(code(&lock), 0, "{}", stderr(&lock));
    assert_eq!(
        json_of(&lock)["locked"].as_array().expect("locked").len(),
        2
    );
    let text = std::fs::read_to_string(env.path("skills.lock")).expect("skills.lock written");
    for needle in [
        "origin = \"team\"",
        "uri = \"skill://notes/refs/a.md\"",
        "binding = ",
        "size = 5",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
    let load = |skill: &str| {
        env.with_config(
            &config,
            &["load", "--origin", "team", "--locked", "skills.lock", skill],
        )
    };
    assert_eq!(code(&load("skill://notes/SKILL.md")), 0, "unchanged: loads");

    std::fs::write(notes.join("refs/a.md"), "ALPHA").expect("change");
    std::fs::remove_file(notes.join("refs/b.md")).expect("remove");
    std::fs::write(notes.join("refs/c.md"), "gamma").expect("add");
    let out = load("skill://notes/SKILL.md");
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        "added skill://notes/refs/c.md",
        "removed skill://notes/refs/b.md",
        "changed skill://notes/refs/a.md",
    ] {
        assert!(err.contains(needle), "{needle} in {err}");
    }
    assert!(stdout(&out).is_empty(), "nothing of it was printed");
    let read = env.with_config(
        &config,
        &[
            "read",
            "--origin",
            "team",
            "--locked",
            "skills.lock",
            "skill://notes/SKILL.md",
            "refs/c.md",
        ],
    );
    assert_eq!(code(&read), 5, "{}", stderr(&read));
    assert_eq!(
        code(&load("skill://stable/SKILL.md")),
        0,
        "the other skill is untouched"
    );

    // A skill the lock does not list is refused too; re-locking accepts the change.
    env.skill("served", "newcomer", &[]);
    let out = load("skill://newcomer/SKILL.md");
    assert_eq!(code(&out), 5);
    assert!(
        stderr(&out).contains("does not list it"),
        "{}",
        stderr(&out)
    );
    let relock = env.with_config(
        &config,
        &["lock", "--origin", "team", "skill://notes/SKILL.md"],
    );
    assert_eq!(code(&relock), 0, "{}", stderr(&relock));
    assert_eq!(code(&load("skill://notes/SKILL.md")), 0, "re-locked");
}

#[test]
fn cli_approve_from_lock_approves_exactly_the_locked_bindings() {
    let env = Env::keyed();
    let pinned = env.skill("served", "pinned", &[("x.md", "x")]);
    env.skill("served", "drifted", &[("y.md", "y")]);
    env.skill("served", "unlocked", &[]);
    let config = env.config(&json!({"team": env.serve("served", "0")}));
    let lock = env.with_config(
        &config,
        &[
            "lock",
            "--origin",
            "team",
            "skill://pinned/SKILL.md",
            "skill://drifted/SKILL.md",
        ],
    );
    assert_eq!(code(&lock), 0, "{}", stderr(&lock));
    std::fs::write(env.path("served/drifted/y.md"), "Y").expect("drift");

    let approve = env.with_config(
        &config,
        &["approve", "--json", "--from-lock", "skills.lock"],
    );
    assert_eq!(
        code(&approve),
        5,
        "the drifted skill is refused: {}",
        stderr(&approve)
    );
    assert!(
        stderr(&approve).contains("changed skill://drifted/y.md"),
        "{}",
        stderr(&approve)
    );
    let approve_json = json_of(&approve);
    let approved: Vec<&str> = approve_json["approved"]
        .as_array()
        .expect("approved")
        .iter()
        .map(|a| a["uri"].as_str().expect("uri"))
        .collect();
    assert_eq!(approved, ["skill://pinned/SKILL.md"]);

    let gated = |skill: &str| {
        code(&env.with_config(
            &config,
            &["load", "--origin", "team", "--require-approval", skill],
        ))
    };
    assert_eq!(gated("skill://pinned/SKILL.md"), 0);
    assert_eq!(gated("skill://drifted/SKILL.md"), 5);
    assert_eq!(gated("skill://unlocked/SKILL.md"), 5);
    // The approval is of the locked binding: a change after it is not approved.
    std::fs::write(pinned.join("x.md"), "changed").expect("change");
    assert_eq!(gated("skill://pinned/SKILL.md"), 5);
}

#[test]
fn cli_one_stdio_or_url_server_is_never_bound_to_several_origins() {
    // R-O1, R-O6: an origin is the host's label for one server. `--stdio`/`--url` name one
    // server; without `--origin` it must not be bound to every origin a lock or a config names
    // (approving or pinning its skills under labels of servers it is not), and named skills
    // are not pinned under a guessed origin. (Tried in review; it held: kept as a guard.)
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    env.skill("b", "beta", &[]);
    let config =
        env.config(&json!({"team": env.serve("a", HOUR_MS), "infra": env.serve("b", HOUR_MS)}));
    let lock = env.with_config(&config, &["lock", "--all"]);
    assert_eq!(code(&lock), 0, "{}", stderr(&lock));
    let pins = std::fs::read_to_string(env.path("skills.lock")).expect("lock");
    let other = cli_env::serve_cmd(&env.path("a"));

    let approve = env.with_config(
        &config,
        &["approve", "--from-lock", "skills.lock", "--stdio", &other],
    );
    assert_eq!(code(&approve), 2, "{}", stderr(&approve));
    assert!(
        stderr(&approve).contains("--origin"),
        "{}",
        stderr(&approve)
    );
    let gated = env.with_config(
        &config,
        &[
            "load",
            "--origin",
            "team",
            "--require-approval",
            "skill://alpha/SKILL.md",
        ],
    );
    assert_eq!(code(&gated), 5, "nothing was approved: {}", stderr(&gated));

    let relock = env.with_config(&config, &["lock", "--all", "--stdio", &other]);
    assert_eq!(code(&relock), 2, "{}", stderr(&relock));
    let unnamed = env.with_config(&config, &["lock", "skill://alpha/SKILL.md"]);
    assert_eq!(code(&unnamed), 2, "{}", stderr(&unnamed));
    assert!(
        stderr(&unnamed).contains("--origin"),
        "{}",
        stderr(&unnamed)
    );
    assert_eq!(
        std::fs::read_to_string(env.path("skills.lock")).expect("lock"),
        pins,
        "the lock is untouched"
    );
}

/// An offline config whose every server is a command that leaves `marker` if started.
fn trap_config(env: &Env, origins: &[&str]) -> (PathBuf, PathBuf) {
    let marker = env.path("started");
    let trap = json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    let servers: serde_json::Map<String, Value> = origins
        .iter()
        .map(|o| ((*o).to_owned(), trap.clone()))
        .collect();
    let path = env.path("offline.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).expect("write");
    (path, marker)
}

fn offline(env: &Env, config: &Path, args: &[&str]) -> Output {
    let mut all = vec![args[0], "--offline"];
    all.extend_from_slice(&args[1..]);
    env.with_config(config, &all)
}

#[test]
fn cli_offline_loads_from_the_cache_without_starting_any_server() {
    let env = Env::keyed();
    env.skill(
        "served",
        "fresh",
        &[("refs/a.md", "alpha"), ("refs/b.md", "never read online")],
    );
    let config = env.config(&json!({"team": env.serve("served", HOUR_MS)}));
    let read = env.with_config(
        &config,
        &[
            "read",
            "--origin",
            "team",
            "skill://fresh/SKILL.md",
            "refs/a.md",
        ],
    );
    assert_eq!(code(&read), 0, "{}", stderr(&read));

    let (traps, marker) = trap_config(&env, &["team"]);
    let off = |args: &[&str]| offline(&env, &traps, args);
    let read = off(&[
        "read",
        "--origin",
        "team",
        "skill://fresh/SKILL.md",
        "refs/a.md",
    ]);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    assert_eq!(stdout(&read), "alpha");
    let listing = off(&["list", "--json", "--all"]);
    assert_eq!(code(&listing), 0, "{}", stderr(&listing));
    assert_eq!(json_of(&listing)["origins"][0]["origin"], "team");
    assert_eq!(names(&json_of(&listing)["origins"][0]), ["fresh"]);

    // Missing things name the origin and the URI; no server is needed even without a config.
    let missing = env.run(&[
        "load",
        "--offline",
        "--origin",
        "team",
        "skill://absent/SKILL.md",
    ]);
    assert_eq!(code(&missing), 5);
    assert!(
        stderr(&missing).contains("skill://absent/SKILL.md")
            && stderr(&missing).contains("origin team"),
        "{}",
        stderr(&missing)
    );
    // A listed file whose bytes were never fetched.
    let unread = off(&[
        "read",
        "--origin",
        "team",
        "skill://fresh/SKILL.md",
        "refs/b.md",
    ]);
    assert_eq!(code(&unread), 5, "{}", stderr(&unread));
    assert!(
        stderr(&unread).contains("skill://fresh/refs/b.md")
            && stderr(&unread).contains("not in the cache"),
        "{}",
        stderr(&unread)
    );
    assert!(!marker.exists(), "no configured server was started offline");
}

#[test]
fn cli_offline_a_stale_entry_needs_allow_stale_and_is_reported_stale() {
    let env = Env::keyed();
    env.skill("quick", "brief", &[]);
    // ttlMs 0: stale as soon as it is cached.
    let config = env.config(&json!({"short": env.serve("quick", "0")}));
    let warm = env.with_config(
        &config,
        &["load", "--origin", "short", "skill://brief/SKILL.md"],
    );
    assert_eq!(code(&warm), 0, "{}", stderr(&warm));

    let (traps, marker) = trap_config(&env, &["short"]);
    let off = |args: &[&str]| offline(&env, &traps, args);
    let stale = off(&["load", "--origin", "short", "skill://brief/SKILL.md"]);
    assert_eq!(code(&stale), 5, "{}", stderr(&stale));
    assert!(
        stderr(&stale).contains("stale") && stderr(&stale).contains("skill://brief/SKILL.md"),
        "{}",
        stderr(&stale)
    );
    let allowed = off(&[
        "load",
        "--allow-stale",
        "--json",
        "--origin",
        "short",
        "skill://brief/SKILL.md",
    ]);
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert_eq!(json_of(&allowed)["stale"], true);
    let human = off(&[
        "load",
        "--allow-stale",
        "--origin",
        "short",
        "skill://brief/SKILL.md",
    ]);
    assert!(
        stderr(&human).contains("stale"),
        "said on stderr: {}",
        stderr(&human)
    );
    assert!(
        stdout(&human).starts_with("---\nname: brief"),
        "{}",
        stdout(&human)
    );
    let entry = off(&[
        "entry",
        "--allow-stale",
        "--origin",
        "short",
        "skill://brief/SKILL.md",
    ]);
    assert!(stdout(&entry).contains("STALE"), "{}", stdout(&entry));
    let listing = off(&["list", "--allow-stale", "--json", "--origin", "short"]);
    assert_eq!(json_of(&listing)["skills"][0]["fresh"], false);
    assert!(!marker.exists(), "no configured server was started offline");
}

// ---- round 4: many servers (K4), config files as users keep them (K6) --------------------

/// `skillcache ARGS` with at most `files` descriptors (`prlimit`, as a user's `ulimit -n`).
fn with_descriptors(env: &Env, files: u32, args: &[&str]) -> Output {
    let mut command = std::process::Command::new("prlimit");
    command
        .arg(format!("--nofile={files}:{files}"))
        .arg("--")
        .arg(bin())
        .env("SKILLCACHE_ROOT", env.root())
        .env("SKILLCACHE_KEY_FILE", env.path("host.key"))
        .current_dir(env.home())
        .args(args);
    common::within(std::time::Duration::from_secs(300), move || {
        command.output().expect("run skillcache under prlimit")
    })
    .expect("the command ends within the deadline")
}

#[test]
fn k4_list_all_over_500_servers_under_1024_descriptors_lists_every_one() {
    // Before: all 500 were started at once and kept; under `ulimit -n 1024` 335 started and 165
    // failed with EMFILE, each of which works alone. Now at most `--jobs` (16) run at once, each
    // stopped once it has answered.
    const SERVERS: usize = 500;
    let env = Env::keyed();
    let mut servers = serde_json::Map::new();
    for i in 0..SERVERS {
        let folder = format!("served/s{i:03}");
        env.skill(&folder, &format!("skill-{i:03}"), &[]);
        servers.insert(format!("s{i:03}"), env.serve(&folder, HOUR_MS));
    }
    let config = env.config(&Value::Object(servers));
    let config = config.display().to_string();
    let started = std::time::Instant::now();
    let out = with_descriptors(
        &env,
        1024,
        &["list", "--config", &config, "--json", "--all"],
    );
    println!("list --all over {SERVERS} servers: {:?}", started.elapsed());
    let err = stderr(&out);
    assert!(
        !err.contains("Too many open files") && !err.contains("os error 24"),
        "no server fails for want of a descriptor: {err}"
    );
    assert_eq!(code(&out), 0, "{err}");
    let v = json_of(&out);
    let origins = v["origins"].as_array().expect("origins");
    assert_eq!(
        origins.len(),
        SERVERS,
        "every configured server is in the listing"
    );
    for (i, o) in origins.iter().enumerate() {
        assert_eq!(o["origin"], format!("s{i:03}"));
        assert!(o.get("error").is_none(), "{o}");
        assert_eq!(names(o), [format!("skill-{i:03}")], "{o}");
    }
}

#[test]
fn k4_jobs_bounds_the_servers_and_each_failure_is_named_by_its_server() {
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    let config = env.config(&json!({
        "one": env.serve("a", HOUR_MS),
        "broken": {"command": env.path("no-such-server")},
        "two": env.serve("a", HOUR_MS),
    }));
    let config = config.display().to_string();
    let out = env.run(&[
        "list", "--config", &config, "--jobs", "1", "--json", "--all",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let v = json_of(&out);
    let listed: Vec<(&str, bool)> = v["origins"]
        .as_array()
        .expect("origins")
        .iter()
        .map(|o| {
            (
                o["origin"].as_str().expect("origin"),
                o.get("error").is_some(),
            )
        })
        .collect();
    assert_eq!(listed, [("broken", true), ("one", false), ("two", false)]);
    // Its own failure, down to the cause.
    let broken = &v["origins"][0]["error"];
    assert!(
        broken.as_str().is_some_and(|e| e.contains("connect to origin broken") && e.contains("no-such-server")),
        "{broken}"
    );
    // `lock --all` and `approve --from-lock` go through the same bound.
    let lock = env.run(&[
        "lock", "--config", &config, "--jobs", "2", "--all", "-o", "k4.lock",
    ]);
    assert_eq!(code(&lock), 4, "{}", stderr(&lock));
    assert!(
        stderr(&lock).contains("no-such-server"),
        "{}",
        stderr(&lock)
    );
    let pinned = std::fs::read_to_string(env.path("k4.lock")).expect("the lock is written");
    assert_eq!(pinned.matches("[[skill]]").count(), 2, "{pinned}");
    let approve = env.run(&[
        "approve",
        "--config",
        &config,
        "--jobs",
        "1",
        "--json",
        "--from-lock",
        "k4.lock",
    ]);
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    assert_eq!(
        json_of(&approve)["approved"].as_array().map(Vec::len),
        Some(2),
        "{}",
        stdout(&approve)
    );
    for bad in ["0", "1025", "many"] {
        let out = env.run(&["list", "--config", &config, "--jobs", bad, "--all"]);
        assert_eq!(code(&out), 2, "--jobs {bad}: {}", stderr(&out));
    }
}

#[test]
fn k6_a_vscode_mcp_json_with_comments_and_trailing_commas_is_read() {
    let env = Env::keyed();
    env.skill("served", "notes", &[]);
    let server = env.serve("served", HOUR_MS);
    let path = env.path(".vscode/mcp.json");
    std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        &path,
        format!(
            "// Servers for this workspace (https://code.visualstudio.com/docs)\n{{\n  \"servers\": {{\n    /* the team's skills, é */\n    \"local\": {{\n      \"type\": \"stdio\",\n      \"command\": {},\n      \"args\": {}, // trailing comma next\n    }},\n  }},\n  \"inputs\": [],\n}}\n",
            server["command"], server["args"]
        ),
    )
    .expect("write");
    let list = env.with_config(&path, &["list", "--json", "--origin", "local"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(names(&json_of(&list)), ["notes"]);

    // A refusal in a JSONC file names the line and column in the file as written: the comment
    // before it (with its two-byte `é`) moves nothing.
    std::fs::write(
        &path,
        "{\n  /* é */ \"servers\": {\"x\": {\"command\": 7}},\n}\n",
    )
    .expect("write");
    let out = env.with_config(&path, &["list", "--origin", "x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2, column 40: /servers/x/command: must be a string"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&path, "{\"servers\": {} /* never closed\n").expect("write");
    let out = env.with_config(&path, &["list", "--origin", "x"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out)
            .contains("line 1, column 16: cannot be parsed: a /* comment is not closed with */"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn k6_a_comment_in_a_strict_json_host_file_is_refused_naming_where() {
    // Claude Desktop, Claude Code and Cursor read `mcpServers` files as strict JSON: a comment
    // there would break the host itself, so it is refused, at its place, in fixed words.
    let env = Env::keyed();
    let path = env.path("claude_desktop_config.json");
    for (text, at) in [
        (
            "{\n  \"mcpServers\": {} // none yet\n}\n",
            "line 2, column 20",
        ),
        (
            "{\"mcpServers\": {\"x\": {\"command\": \"s\",}}}",
            "line 1, column 37",
        ),
        (
            "{\"mcpServers\": {}, \"servers\": {}, /* both */}",
            "line 1, column 33",
        ),
    ] {
        std::fs::write(&path, text).expect("write");
        let out = env.with_config(&path, &["list", "--origin", "x"]);
        assert_eq!(code(&out), 2, "{text}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "{at}: cannot be parsed: a comment or a trailing comma"
            )),
            "{text}: {err}"
        );
        assert!(
            !err.contains("none yet") && !err.contains("both */"),
            "quotes nothing: {err}"
        );
    }
}

/// The label `skillcache` gives the server `name` of the Claude Code project at `project`.
fn project_label(name: &str, folder: &str, project: &str) -> String {
    format!("{name}@{folder}#{}", common::project_label_hash(project))
}

/// A `~/.claude.json`: `docs` at the top (user scope), and `github` in two projects whose
/// folders are both called `api`.
fn claude_json(env: &Env) -> (PathBuf, [String; 3]) {
    for folder in ["top", "one", "two"] {
        env.skill(folder, &format!("from-{folder}"), &[]);
    }
    let (one, two) = (
        env.path("work/one/api").display().to_string(),
        env.path("work/two/api").display().to_string(),
    );
    let mut projects = serde_json::Map::new();
    projects.insert(
        one.clone(),
        json!({"allowedTools": [], "mcpServers": {"github": env.serve("one", HOUR_MS)}}),
    );
    projects.insert(
        two.clone(),
        json!({"mcpServers": {"github": env.serve("two", HOUR_MS)}}),
    );
    projects.insert(
        env.path("work/none").display().to_string(),
        json!({"allowedTools": []}),
    );
    let path = env.path("claude.json");
    std::fs::write(
        &path,
        json!({
            "numStartups": 12,
            "mcpServers": {"docs": env.serve("top", HOUR_MS)},
            "projects": projects,
        })
        .to_string(),
    )
    .expect("write");
    let labels = [
        "docs".to_owned(),
        project_label("github", "api", &one),
        project_label("github", "api", &two),
    ];
    (path, labels)
}

#[test]
fn k6_claude_json_servers_at_the_top_and_per_project_are_read_under_distinct_stable_labels() {
    let env = Env::keyed();
    let (path, labels) = claude_json(&env);
    let out = env.with_config(&path, &["list", "--json", "--all"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = json_of(&out);
    let listed: Vec<(String, Vec<String>)> = v["origins"]
        .as_array()
        .expect("origins")
        .iter()
        .map(|o| (o["origin"].as_str().expect("origin").to_owned(), names(o)))
        .collect();
    let mut expected = vec![
        (labels[0].clone(), vec!["from-top".to_owned()]),
        (labels[1].clone(), vec!["from-one".to_owned()]),
        (labels[2].clone(), vec!["from-two".to_owned()]),
    ];
    expected.sort();
    assert_eq!(listed, expected);
    assert_ne!(
        labels[1], labels[2],
        "two projects' servers of one name are two origins"
    );
    // The label is what `--origin` takes, and the same on every read.
    let one = env.with_config(&path, &["list", "--json", "--origin", &labels[1]]);
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert_eq!(names(&json_of(&one)), ["from-one"]);
    // An SSE server keeps its refusal, naming the transport.
    std::fs::write(
        &path,
        json!({"projects": {"/p": {"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}}})
            .to_string(),
    )
    .expect("write");
    let out = env.with_config(&path, &["list", "--all"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("/projects/~1p/mcpServers/old/type: is the older HTTP+SSE transport"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn u2_a_config_beside_a_named_server_and_a_url_that_is_no_url_are_usage_errors() {
    // Each would otherwise be found out only by contacting a server: the config ignored while
    // the named command ran to its deadline, or "cannot connect to not-a-url" (exit 4).
    let env = Env::keyed();
    env.skill("a", "alpha", &[]);
    let config = env.config(&json!({"team": env.serve("a", HOUR_MS)}));
    let both = env.with_config(&config, &["list", "--origin", "team", "--stdio", "cat"]);
    assert_eq!(code(&both), 2, "{}", stderr(&both));
    assert!(
        stderr(&both).contains("give one or the other"),
        "{}",
        stderr(&both)
    );
    for url in [
        "not-a-url",
        "http://",
        "ftp://example.com/mcp",
        "https://:8080/mcp",
    ] {
        let out = env.run(&["list", "--origin", "x", "--url", url]);
        assert_eq!(code(&out), 2, "{url}: {}", stderr(&out));
        assert!(stderr(&out).contains("invalid --url"), "{}", stderr(&out));
    }
}

/// A newcomer's try: `lock` of a URI the server does not list failed (exit 4) and still wrote a
/// lock file, empty, over whatever was there. A lock that fails now writes nothing, so the one
/// CI gates on is never replaced by part of what was asked.
#[test]
fn a_lock_that_fails_writes_nothing_and_keeps_the_lock_that_was_there() {
    let env = Env::keyed();
    env.skill("served", "notes", &[("a.md", "a")]);
    let config = env.config(&json!({"team": env.serve("served", "0")}));
    let first = env.with_config(
        &config,
        &["lock", "--origin", "team", "skill://notes/SKILL.md"],
    );
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let before = std::fs::read(env.path("skills.lock")).expect("the lock");

    let failed = env.with_config(
        &config,
        &[
            "lock",
            "--origin",
            "team",
            "skill://notes/SKILL.md",
            "skill://nothere/SKILL.md",
        ],
    );
    assert_eq!(code(&failed), 4, "{}", stderr(&failed));
    assert!(
        stderr(&failed).contains("was not written"),
        "{}",
        stderr(&failed)
    );
    assert_eq!(
        std::fs::read(env.path("skills.lock")).expect("kept"),
        before
    );

    let fresh = env.with_config(
        &config,
        &[
            "lock",
            "--origin",
            "team",
            "skill://nothere/SKILL.md",
            "-o",
            "other.lock",
        ],
    );
    assert_ne!(code(&fresh), 0);
    assert!(
        !env.path("other.lock").exists(),
        "no empty lock file is left"
    );
}
