//! The `skillcache` binary end to end: against `skillcache serve` on fixture skills, and against
//! a lying stdio server (`examples/hostile_server.rs`) where a test needs lies.
#![allow(clippy::result_large_err)]

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cli_env::{BIN, Env, code, serve_cmd, stderr};
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
    let list = env.run(&["--json", "list", "--origin", "local", "--stdio", &s]);
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
        "--json",
        "load",
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
        "--json",
        "read",
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
    let entries = json(&env.run(&["--json", "entries"]));
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
        "--json",
        "read",
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
            "--json",
            "load",
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
        "--json",
        "approve",
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
    let v = env.run(&["--json", "verify"]);
    assert_eq!(code(&v), 3);
    assert_eq!(json(&v)["corrupt"].as_array().expect("array").len(), 1);
    assert_eq!(code(&env.run(&["gc", "--max-bytes", "0"])), 0);
    assert_eq!(json(&env.run(&["--json", "stats"]))["quarantined"], 1);
    assert_eq!(code(&env.run(&["purge", "--origin", "o"])), 0);
    assert!(!env.root().join("origins/o").exists());
    assert_eq!(
        json(&env.run(&["--json", "entries"]))
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
    let out = Command::new(BIN).arg("demo").output().expect("run demo");
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
        let mut args: Vec<&str> = extra.to_vec();
        args.extend([
            "load",
            "skill://notes/SKILL.md",
            "--origin",
            "local",
            "--stdio",
            &s,
        ]);
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
    let stats = env.run(&["--json", "stats"]);
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
        "--json",
        "load",
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
        "--json",
        "read",
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
