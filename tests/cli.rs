//! The `skillcache` binary end to end: against `skillcache serve` on fixture skills, and against
//! a lying stdio server (`examples/hostile_server.rs`) where a test needs lies.
#![allow(clippy::result_large_err)]

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cli_env::{Env, bin, code, serve_cmd, stderr};
use serde_json::Value;

fn hostile_server() -> PathBuf {
    common::example_bin("hostile_server")
}

impl Env {
    /// A served folder with one skill `name` whose extra file `notes.md` holds `notes`.
    fn served(&self, folder: &str, name: &str, description: &str, notes: &str) -> PathBuf {
        let served = self.path(folder);
        let skill = served.join(name);
        std::fs::create_dir_all(skill.join("refs")).expect("mkdir");
        std::fs::write(skill.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\nallowed-tools: Read\n---\n# {name}\nSee refs/notes.md.\n")).expect("write");
        std::fs::write(skill.join("refs/notes.md"), notes).expect("write");
        served
    }
}

/// The first name in folder `dir`, which the test knows holds one.
fn first_in(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .expect("dir")
        .next()
        .expect("one")
        .expect("entry")
        .path()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

#[test]
fn cli_list_load_and_read_against_serve() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "the notes");
    let s = serve_cmd(&served);
    let list = env.run(&["list", "--json", "--origin", "local", "--stdio", &s]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(json(&list)["skills"][0]["name"], "notes");
    let load = env.run(&[
        "load",
        "skill://notes/SKILL.md",
        "--origin",
        "local",
        "--stdio",
        &s,
    ]);
    assert_eq!(code(&load), 0, "{}", stderr(&load));
    assert_eq!(
        load.stdout,
        std::fs::read(served.join("notes/SKILL.md")).expect("read"),
        "the verified bytes, unchanged"
    );
    let again = json(&env.run(&[
        "load",
        "--json",
        "skill://notes/SKILL.md",
        "--origin",
        "local",
        "--stdio",
        &s,
    ]));
    for key in [
        "origin", "uri", "verified", "source", "digest", "size", "binding", "retried",
    ] {
        assert!(again.get(key).is_some(), "--json has {key}: {again}");
    }
    assert_eq!(
        (
            again["source"].as_str(),
            again["verified"].as_bool(),
            again["origin"].as_str()
        ),
        (Some("cache"), Some(true), Some("local"))
    );
    let read = json(&env.run(&[
        "read",
        "--json",
        "skill://notes/SKILL.md",
        "refs/notes.md",
        "--origin",
        "local",
        "--stdio",
        &s,
    ]));
    assert_eq!(
        (read["uri"].as_str(), read["size"].as_u64()),
        (Some("skill://notes/refs/notes.md"), Some(9))
    );
    // A reference that leaves the skill: declined (5); an unlisted file: verification (3).
    assert_eq!(
        code(&env.run(&[
            "read",
            "skill://notes/SKILL.md",
            "../other/x.md",
            "--origin",
            "local",
            "--stdio",
            &s
        ])),
        5
    );
    assert_eq!(
        code(&env.run(&[
            "read",
            "skill://notes/SKILL.md",
            "refs/missing.md",
            "--origin",
            "local",
            "--stdio",
            &s
        ])),
        3
    );
}

/// `load` of the fixture skill from the lying stdio server in `mode`.
fn load_from_liar(mode: &str) -> Output {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "n");
    let liar = format!(
        "'{}' '{}' {mode}",
        hostile_server().display(),
        served.display()
    );
    env.run(&[
        "load",
        "skill://notes/SKILL.md",
        "--origin",
        "liar",
        "--stdio",
        &liar,
    ])
}

#[test]
fn cli_v6_frontmatter_drift_with_honest_digest_exits_3() {
    let out = load_from_liar("frontmatter-drift");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("description"), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "nothing is printed from a skill that failed"
    );
}

#[test]
fn cli_v9_server_tampered_bytes_exit_3() {
    let out = load_from_liar("same-length-tamper");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("digest"), "{}", stderr(&out));
}

#[test]
fn cli_o1_same_uri_from_two_origins_gives_independent_entries_approvals_and_blobs() {
    let env = Env::new();
    let a = serve_cmd(&env.served("a", "notes", "Server A's notes.", "from a"));
    let b = serve_cmd(&env.served("b", "notes", "Server B's notes.", "from b"));
    for (origin, s) in [("server-a", &a), ("server-b", &b)] {
        assert_eq!(
            code(&env.run(&[
                "read",
                "skill://notes/SKILL.md",
                "refs/notes.md",
                "--origin",
                origin,
                "--stdio",
                s
            ])),
            0
        );
    }
    assert_eq!(
        code(&env.run(&[
            "approve",
            "skill://notes/SKILL.md",
            "--origin",
            "server-a",
            "--stdio",
            &a
        ])),
        0
    );
    let entries = json(&env.run(&["entries", "--json"]));
    let origins: Vec<&str> = entries
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|e| e["origin"].as_str())
        .collect();
    assert_eq!(origins, ["server-a", "server-b"]);
    assert_eq!(
        code(&env.run(&[
            "load",
            "skill://notes/SKILL.md",
            "--require-approval",
            "--origin",
            "server-a",
            "--stdio",
            &a
        ])),
        0
    );
    assert_eq!(
        code(&env.run(&[
            "load",
            "skill://notes/SKILL.md",
            "--require-approval",
            "--origin",
            "server-b",
            "--stdio",
            &b
        ])),
        5,
        "approval is per origin"
    );
    let b_read = json(&env.run(&[
        "read",
        "--json",
        "skill://notes/SKILL.md",
        "refs/notes.md",
        "--origin",
        "server-b",
        "--stdio",
        &b,
    ]));
    assert_eq!(b_read["source"], "cache");
    for o in ["server-a", "server-b"] {
        assert!(
            env.root().join("origins").join(o).join("sha256").is_dir(),
            "{o} has its own blob tree"
        );
    }
}

#[test]
fn cli_require_approval_exits_5_when_never_approved_or_revoked_naming_the_file() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "v1");
    let s = serve_cmd(&served);
    let load = || {
        env.run(&[
            "load",
            "skill://notes/SKILL.md",
            "--require-approval",
            "--origin",
            "o",
            "--stdio",
            &s,
        ])
    };
    let never = load();
    assert_eq!(code(&never), 5);
    assert!(
        stderr(&never).contains("not been approved"),
        "{}",
        stderr(&never)
    );
    assert_eq!(
        code(&env.run(&[
            "approve",
            "skill://notes/SKILL.md",
            "--origin",
            "o",
            "--stdio",
            &s
        ])),
        0
    );
    assert_eq!(code(&load()), 0);
    std::fs::write(
        served.join("notes/refs/notes.md"),
        "v2, changed by the server",
    )
    .expect("edit");
    let revoked = load();
    assert_eq!(code(&revoked), 5);
    assert!(
        stderr(&revoked).contains("skill://notes/refs/notes.md"),
        "the message names the changed file: {}",
        stderr(&revoked)
    );
}

/// E7: a grant made while the server inflated `allowed-tools` in the one `skills/get` that
/// `approve --grant-tools` saw does not survive the honest entry: `load --require-approval`
/// refuses the skill as revoked, naming `allowed-tools`, instead of loading it with the
/// inflated grant. The grant is printed when it is made, and `load --json` reports the grant
/// in force.
#[test]
fn e7_cli_a_grant_made_on_an_inflated_claim_is_revoked_by_the_honest_entry() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "n");
    let liar = format!(
        "'{}' '{}' inflate-tools",
        hostile_server().display(),
        served.display()
    );
    let honest = serve_cmd(&served);
    let approve = env.run(&[
        "approve",
        "skill://notes/SKILL.md",
        "--grant-tools",
        "--origin",
        "o",
        "--stdio",
        &liar,
    ]);
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    let said = String::from_utf8_lossy(&approve.stdout).into_owned();
    assert!(
        said.contains("granted tools: Bash(*) Read Write WebFetch"),
        "approve shows the grant it made: {said}"
    );
    let load = |server: &str| {
        env.run(&[
            "load",
            "--json",
            "skill://notes/SKILL.md",
            "--require-approval",
            "--origin",
            "o",
            "--stdio",
            server,
        ])
    };
    let refused = load(&honest);
    assert_eq!(code(&refused), 5, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("allowed-tools"),
        "the refusal names allowed-tools: {}",
        stderr(&refused)
    );
    // Approved again against the honest server, the grant is what the SKILL.md asks for.
    let again = env.run(&[
        "approve",
        "--json",
        "skill://notes/SKILL.md",
        "--grant-tools",
        "--origin",
        "o",
        "--stdio",
        &honest,
    ]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(json(&again)["granted_tools"], "Read");
    let loaded = load(&honest);
    assert_eq!(code(&loaded), 0, "{}", stderr(&loaded));
    assert_eq!(json(&loaded)["granted_tools"], "Read");
}

#[test]
fn cli_verify_exits_3_when_a_blob_is_corrupt_and_gc_purge_stats_work() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let s = serve_cmd(&env.served("served", "notes", "Takes notes.", "n"));
    assert_eq!(
        code(&env.run(&[
            "load",
            "skill://notes/SKILL.md",
            "--origin",
            "o",
            "--stdio",
            &s
        ])),
        0
    );
    assert_eq!(code(&env.run(&["verify"])), 0);
    let blob_dir = env.root().join("origins/o/sha256");
    let aa = first_in(&blob_dir);
    let blob = first_in(&aa);
    std::fs::set_permissions(&aa, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&blob, b"corrupt").expect("write");
    let v = env.run(&["verify", "--json"]);
    assert_eq!(code(&v), 3);
    assert_eq!(json(&v)["corrupt"].as_array().expect("array").len(), 1);
    assert_eq!(code(&env.run(&["gc", "--max-bytes", "0"])), 0);
    assert_eq!(json(&env.run(&["stats", "--json"]))["quarantined"], 1);
    assert_eq!(code(&env.run(&["purge", "--origin", "o"])), 0);
    assert!(!env.root().join("origins/o").exists());
    assert_eq!(
        json(&env.run(&["entries", "--json"]))
            .as_array()
            .map(Vec::len),
        Some(0)
    );
}

#[test]
fn cli_inspect_prints_the_entry_or_exits_4_with_every_reason() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "n");
    let ok = env.run(&["inspect", &served.join("notes").display().to_string()]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    let entry = json(&ok);
    assert_eq!(entry["uri"], "skill://notes/SKILL.md");
    assert_eq!(entry["resources"].as_array().map(Vec::len), Some(2));
    let bad = env.served("bad", "wrong-name", "d", "n");
    std::fs::rename(bad.join("wrong-name"), bad.join("folder")).expect("rename");
    let out = env.run(&["inspect", &bad.join("folder").display().to_string()]);
    assert_eq!(code(&out), 4);
    assert!(
        stderr(&out).contains("frontmatter.name"),
        "{}",
        stderr(&out)
    );
    let corpus_bad = common::corpus_skills().join("lint-and-validate");
    assert_eq!(
        code(&env.run(&["inspect", &corpus_bad.display().to_string()])),
        4
    );
}

/// A newcomer gave `inspect` the folder `serve` takes; it said "SKILL.md: is missing". It now
/// says the folder holds skills and names one to inspect.
#[test]
fn inspecting_a_folder_of_skills_names_the_skills_to_inspect_instead() {
    let env = Env::new();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills");
    let out = env.run(&["inspect", &samples.display().to_string()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("is a folder of") && said.contains("skillcache inspect"),
        "{said}"
    );
    let first = std::fs::read_dir(&samples)
        .expect("samples")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .min()
        .expect("a sample skill");
    assert!(said.contains(&first), "names {first}: {said}");
}

#[test]
fn cli_usage_errors_exit_2() {
    let env = Env::new();
    assert_eq!(code(&env.run(&["load"])), 2);
    assert_eq!(code(&env.run(&["frobnicate"])), 2);
    assert_eq!(
        code(&env.run(&["list", "--origin", "o"])),
        2,
        "a server is required"
    );
}

#[test]
fn cli_demo_completes_and_shows_every_step() {
    let out = Command::new(bin()).arg("demo").output().expect("run demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for needle in [
        "1. connect",
        // The label as a person reads it, not the type's `Debug` text (`Origin("…")`).
        "origin label \"demo-server\"",
        "2. list",
        "3. approve",
        "4. load",
        "5. load again",
        "6. tamper",
        "retried: true",
        "7. the server edits",
        "revoked: true",
        "changed skill://release-notes/templates/tone.md",
        "8. a dynamic skill",
        "declined",
        "0 corrupt",
    ] {
        assert!(
            text.contains(needle),
            "the transcript shows {needle:?}:\n{text}"
        );
    }
    // N5: the tour is for a newcomer; requirement ids are the maintainers' vocabulary.
    let shown = format!("{text}{}", stderr(&out));
    let id = shown.as_bytes().windows(4).position(|w| {
        w[0] == b'R' && w[1] == b'-' && w[2].is_ascii_uppercase() && w[3].is_ascii_digit()
    });
    assert_eq!(id, None, "the demo names a requirement id:\n{shown}");
}

#[test]
fn p4_cli_load_reports_the_counters_and_v_says_hits_and_requests() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "the notes");
    let s = serve_cmd(&served);
    let md = std::fs::read(served.join("notes/SKILL.md")).expect("read");
    let load = |extra: &[&str]| {
        let mut args: Vec<&str> = vec!["load"];
        args.extend_from_slice(extra);
        args.extend(["skill://notes/SKILL.md", "--origin", "local", "--stdio", &s]);
        env.run(&args)
    };
    let cold = load(&["--json", "-v"]);
    assert_eq!(code(&cold), 0, "{}", stderr(&cold));
    let c = &json(&cold)["counters"];
    assert_eq!(
        (c["misses"].as_u64(), c["hits_hashed"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(c["bytes_fetched"].as_u64(), Some(md.len() as u64));
    assert_eq!(c["bytes_served"].as_u64(), Some(md.len() as u64));
    assert!(
        !stderr(&cold).contains("cache miss"),
        "-v is info; hits and misses are -vv: {}",
        stderr(&cold)
    );
    let warm = load(&["--json", "-vv"]);
    assert_eq!(code(&warm), 0, "{}", stderr(&warm));
    let c = &json(&warm)["counters"];
    assert_eq!(
        (
            c["misses"].as_u64(),
            c["hits_hashed"].as_u64(),
            c["bytes_fetched"].as_u64()
        ),
        (Some(0), Some(1), Some(0))
    );
    let said = stderr(&warm);
    assert!(
        said.contains("cache hit") && said.contains("skill://notes/SKILL.md"),
        "{said}"
    );
    let stats = env.run(&["stats", "--json"]);
    assert_eq!(code(&stats), 0, "{}", stderr(&stats));
    assert_eq!(json(&stats)["counters"]["seal_failures"].as_u64(), Some(0));
}

/// `load --all`: every file of the skill verified and kept in one step; a later read of one of
/// them is a cache hit.
#[test]
fn cli_load_all_reads_every_file_and_a_later_read_is_a_cache_hit() {
    let env = Env::new();
    let served = env.served("served", "notes", "Takes notes.", "the notes");
    let s = serve_cmd(&served);
    let all = env.run(&[
        "load",
        "--json",
        "skill://notes/SKILL.md",
        "--all",
        "--origin",
        "local",
        "--stdio",
        &s,
    ]);
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    let out = json(&all);
    let files = out["files"].as_array().expect("--all lists the files");
    assert_eq!(files.len(), 2, "{out}");
    for f in files {
        assert_eq!(f["verified"], true, "{f}");
        assert_eq!(f["stored"], true, "{f}");
    }
    assert_eq!(
        files[1]["size"].as_u64(),
        Some("the notes".len() as u64),
        "{out}"
    );
    let read = env.run(&[
        "read",
        "--json",
        "skill://notes/SKILL.md",
        "refs/notes.md",
        "--origin",
        "local",
        "--stdio",
        &s,
    ]);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    let read = json(&read);
    assert_eq!(read["source"], "cache", "{read}");
    assert_eq!(read["verified"], true, "{read}");
}

/// The long options `skillcache COMMAND --help` lists.
fn help_options(command: &str) -> Vec<String> {
    let out = Command::new(bin())
        .args([command, "--help"])
        .output()
        .expect("help");
    cli_env::stdout(&out)
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| {
            l.split(|c: char| c.is_whitespace() || c == ',')
                .find(|w| w.starts_with("--"))
                .map(str::to_owned)
        })
        .collect()
}

/// U2: each command takes only its own options. Before, every option was global: `serve
/// --help` listed `--root`, `--isolation`, `--offline`, `--jobs`, `--config`, `--origin-quota`
/// and `--key-file`, and `serve --root X` was accepted and did nothing.
#[test]
fn u2_each_command_lists_and_accepts_only_the_options_that_apply_to_it() {
    let cache_options = [
        "--root",
        "--key-file",
        "--isolation",
        "--offline",
        "--jobs",
        "--config",
        "--origin-quota",
        "--timeout",
        "--json",
    ];
    let serve = help_options("serve");
    for option in cache_options {
        assert!(
            !serve.iter().any(|o| o == option),
            "serve lists {option}: {serve:?}"
        );
    }
    let demo = help_options("demo");
    assert!(!demo.iter().any(|o| o == "--origin-quota"), "{demo:?}");
    assert!(demo.iter().any(|o| o == "--root"), "{demo:?}");
    let load = help_options("load");
    for option in [
        "--root",
        "--config",
        "--offline",
        "--origin-quota",
        "--isolation",
        "--json",
    ] {
        assert!(
            load.iter().any(|o| o == option),
            "load lists {option}: {load:?}"
        );
    }
    let tmp = common::scratch();
    let refused = Command::new(bin())
        .arg("serve")
        .arg(tmp.path())
        .args(["--root", "elsewhere"])
        .output()
        .expect("serve");
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("--root"), "{}", stderr(&refused));
    let env = Env::new();
    let gc = env.run(&["gc", "--origin-quota", "1MiB"]);
    assert_eq!(code(&gc), 2, "gc takes no quota: {}", stderr(&gc));
}

/// U2: one size syntax for every byte option (before, `gc --max-bytes 10MiB` was refused while
/// `--origin-quota 10MiB` was accepted).
#[test]
fn u2_every_byte_option_takes_the_same_sizes() {
    let env = Env::new();
    for size in ["10MiB", "512KiB", "10485760", "1G"] {
        let gc = env.run(&["gc", "--max-bytes", size, "--json"]);
        assert_eq!(code(&gc), 0, "{size}: {}", stderr(&gc));
    }
    let bad = env.run(&["gc", "--max-bytes", "10 parsecs"]);
    assert_eq!(code(&bad), 2);
    assert!(
        stderr(&bad).contains("10MiB"),
        "the error shows the syntax: {}",
        stderr(&bad)
    );
}

/// `10MB` could mean 10^7 or 10 × 2^20 bytes; a garbage collector's budget is refused rather than
/// guessed, and the refusal names the spelling that is accepted.
#[test]
fn a_decimal_looking_size_is_refused_with_the_binary_spelling_to_use() {
    let env = Env::new();
    for (size, hint) in [("10MB", "10MiB"), ("512kB", "512KiB"), ("2GB", "2GiB")] {
        let gc = env.run(&["gc", "--max-bytes", size]);
        assert_eq!(code(&gc), 2, "{size}: {}", stderr(&gc));
        assert!(
            stderr(&gc).contains("ambiguous") && stderr(&gc).contains(hint),
            "{size}: {}",
            stderr(&gc)
        );
    }
}

/// U2: `purge` alone shows its three modes; purging an origin the cache holds nothing of says
/// so (exit 0: nothing of it is cached, as asked).
#[test]
fn u2_purge_shows_every_mode_and_says_when_an_origin_held_nothing() {
    let env = Env::new();
    let bare = env.run(&["purge"]);
    assert_eq!(code(&bare), 2);
    for mode in ["--origin", "--absent", "--all"] {
        assert!(stderr(&bare).contains(mode), "{mode}: {}", stderr(&bare));
    }
    let nothing = env.run(&["purge", "--origin", "nothere"]);
    assert_eq!(code(&nothing), 0, "{}", stderr(&nothing));
    assert_eq!(
        cli_env::stdout(&nothing),
        "nothing cached for origin nothere: nothing to purge\n"
    );
    let json = json(&env.run(&["purge", "--origin", "nothere", "--json"]));
    assert_eq!(json["held"], false, "{json}");
    assert_eq!(
        code(&env.run(&["purge", "--absent"])),
        2,
        "--absent needs --config"
    );
}

/// U2: exit codes as docs/cli.md says. Approving a dynamic skill is declined by policy (5; it
/// was 4, "invalid skill entry", though the entry is valid); a missing `--locked` file is a usage
/// error (2; it was 1).
#[test]
fn u2_approving_a_dynamic_skill_exits_5_and_a_missing_lock_file_exits_2() {
    let env = Env::new();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills");
    let server = format!(
        "'{}' serve '{}' --dynamic live-status",
        bin().display(),
        samples.display()
    );
    let server_args = ["--origin", "docs", "--stdio", server.as_str()];
    let mut approve = vec!["approve", "skill://live-status/SKILL.md"];
    approve.extend(server_args);
    let dynamic = env.run(&approve);
    assert_eq!(code(&dynamic), 5, "{}", stderr(&dynamic));
    assert!(stderr(&dynamic).contains("dynamic"), "{}", stderr(&dynamic));
    let mut load = vec![
        "load",
        "skill://release-notes/SKILL.md",
        "--locked",
        "/nonexistent/skills.lock",
    ];
    load.extend(server_args);
    let missing = env.run(&load);
    assert_eq!(code(&missing), 2, "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("/nonexistent/skills.lock"),
        "{}",
        stderr(&missing)
    );
}

/// U2: messages name what the user gave: the host key's path (not the temporary beside it),
/// the URI a server does not serve, a folder that does not exist.
#[test]
fn u2_messages_name_the_key_file_the_uri_and_the_folder_the_user_gave() {
    let env = Env::new();
    let key = Command::new(bin())
        .args(["stats", "--key-file", "/proc/host.key"])
        .env("SKILLCACHE_ROOT", env.root())
        .output()
        .expect("stats");
    assert_eq!(code(&key), 1, "{}", stderr(&key));
    assert!(stderr(&key).contains("/proc/host.key:"), "{}", stderr(&key));
    assert!(
        !stderr(&key).contains(".tmp"),
        "no temporary: {}",
        stderr(&key)
    );
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills");
    let server = format!("'{}' serve '{}'", bin().display(), samples.display());
    let unknown = env.run(&[
        "load",
        "skill://nope/SKILL.md",
        "--origin",
        "docs",
        "--stdio",
        &server,
    ]);
    assert_eq!(code(&unknown), 4, "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains("skill://nope/SKILL.md"),
        "{}",
        stderr(&unknown)
    );
    let missing = Command::new(bin())
        .args(["serve", "/nonexistent/folder"])
        .output()
        .expect("serve");
    assert_eq!(code(&missing), 2);
    assert!(
        stderr(&missing).contains("/nonexistent/folder does not exist"),
        "{}",
        stderr(&missing)
    );
}

/// U2: `--l2` without the feature that builds it is refused naming the feature (before: an
/// unknown argument, no hint).
#[cfg(not(feature = "l2"))]
#[test]
fn u2_the_l2_flag_of_a_build_without_it_names_the_feature() {
    let env = Env::new();
    let out = env.run(&[
        "load",
        "skill://notes/SKILL.md",
        "--l2",
        "s3://bucket/prefix",
        "--origin",
        "docs",
        "--stdio",
        "/nonexistent/server",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("feature `l2`"), "{}", stderr(&out));
}

/// U2: `serve --http localhost:PORT` (before: refused, only an IP address parsed).
#[test]
fn u2_serve_http_takes_localhost() {
    let tmp = common::scratch();
    let mut child = Command::new(bin())
        .arg("serve")
        .arg(tmp.path())
        .args(["--http", "localhost:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let mut err = child.stderr.take().expect("stderr");
    let line = common::within(std::time::Duration::from_secs(60), move || {
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while std::io::Read::read(&mut err, &mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            seen.push(byte[0]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("serve printed its URL within 60 s");
    assert!(line.contains("listening on http://127.0.0.1:"), "{line}");
}

/// `--json` is one JSON value on stdout for a usage error too (exit 2), whether the argument
/// parser refused the command line or a check before any server did (a newcomer's try: stdout
/// was empty, where docs/cli.md promises `{"exit": N, "errors": [...]}`).
#[test]
fn a_usage_error_with_json_prints_the_exit_and_the_errors_as_json() {
    let env = Env::new();
    for args in [
        &["gc", "--max-bytes", "10MB", "--json"][..],
        &["list", "--json"],
        &["list", "--origin", "o", "--url", "notaurl", "--json"],
    ] {
        let out = env.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let v = json(&out);
        assert_eq!(v["exit"], 2, "{args:?}");
        let first = v["errors"][0].as_str().unwrap_or_default();
        assert!(
            !first.is_empty() && !first.starts_with("error:"),
            "{args:?}: {v}"
        );
    }
    let help = env.run(&["gc", "--help", "--json"]);
    assert_eq!(code(&help), 0);
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("Usage"),
        "help stays help"
    );
}

/// A newcomer's try: a mistyped `--key-file` made a new key beside an index of rows sealed by
/// the old one, and only row-by-row seal warnings followed. The new key is now said once, with
/// the question to ask; a key made for an empty cache says nothing.
#[test]
fn a_new_key_beside_an_index_that_holds_rows_is_said_once() {
    let env = Env::keyed();
    let served = env.served("served", "notes", "Takes notes.", "the notes");
    let s = serve_cmd(&served);
    let load = env.run(&[
        "load",
        "--origin",
        "local",
        "--stdio",
        &s,
        "skill://notes/SKILL.md",
    ]);
    assert_eq!(code(&load), 0, "{}", stderr(&load));
    assert!(!stderr(&load).contains("new host key"), "{}", stderr(&load));
    let other = env.path("other.key").display().to_string();
    let entries = env.run(&["entries", "--key-file", &other]);
    let said = stderr(&entries);
    assert_eq!(said.matches("created a new host key").count(), 1, "{said}");
    assert!(said.contains("other.key"), "{said}");
    let again = env.run(&["entries", "--key-file", &other]);
    assert!(
        !stderr(&again).contains("new host key"),
        "{}",
        stderr(&again)
    );
}

/// A newcomer's try: a mistyped `serve --dynamic` published the skill it meant as static,
/// without a word. Now a notice names it (not an error: the folder is watched, and the skill may
/// appear later); a `--dynamic` that names a skill says nothing.
#[test]
fn serve_says_when_dynamic_names_no_skill() {
    let env = Env::new();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills");
    let samples = samples.display().to_string();
    let typo = env.run(&["serve", &samples, "--dynamic", "live-statu"]);
    assert!(
        stderr(&typo).contains("--dynamic live-statu names no skill under"),
        "{}",
        stderr(&typo)
    );
    let right = env.run(&["serve", &samples, "--dynamic", "live-status"]);
    assert!(
        !stderr(&right).contains("names no skill"),
        "{}",
        stderr(&right)
    );
}

/// A newcomer's try: `serve` of one skill's own folder published nothing, silently, and
/// `inspect --base-uri notauri` printed one refusal per file. Each is now one usage error
/// (exit 2) that says what to give instead.
#[test]
fn serve_of_a_skill_folder_and_inspect_of_a_bad_base_uri_are_one_usage_error_each() {
    let env = Env::new();
    let skill = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills/release-notes");
    let served = env.run(&["serve", &skill.display().to_string()]);
    assert_eq!(code(&served), 2, "{}", stderr(&served));
    assert!(
        stderr(&served).contains("serve") && stderr(&served).contains("samples/skills instead"),
        "{}",
        stderr(&served)
    );
    let bad = env.run(&[
        "inspect",
        &skill.display().to_string(),
        "--base-uri",
        "notauri",
    ]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--base-uri"), "{}", stderr(&bad));
}
