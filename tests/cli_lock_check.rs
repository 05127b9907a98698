//! `skillcache lock --check` (issue 42, L1): a CI gate over a lock — every pinned server asked
//! for its listing, no file fetched, each drift printed with its origin, skill and what changed,
//! exit 6 on any drift and 0 when everything matches. Against `~/.claude.json` and VS Code
//! configs of several servers, each `skillcache serve` over a folder the test changes.

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use cli_env::{Env, bin, code, stderr, stdout};
use serde_json::{Value, json};

impl Env {
    /// A skill `name` in the served folder `folder`, with `notes.md` holding `notes`.
    fn skill(&self, folder: &str, name: &str, notes: &str) {
        let skill = self.path(folder).join(name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n"),
        )
        .expect("write");
        std::fs::write(skill.join("notes.md"), notes).expect("write");
    }

    fn serve(&self, folder: &str) -> Value {
        json!({"command": bin(), "args": ["serve", self.path(folder)]})
    }

    /// `skillcache ARGS[0] --config CONFIG ARGS[1..]`.
    fn with(&self, config: &Path, args: &[&str]) -> Output {
        let config = config.display().to_string();
        let mut all = vec![args[0], "--config", config.as_str()];
        all.extend_from_slice(&args[1..]);
        self.run(&all)
    }
}

/// A `~/.claude.json` with `docs` at the top and `team` in one project.
fn claude_json(env: &Env) -> PathBuf {
    env.skill("top", "notes", "v1");
    env.skill("top", "deploy", "steps");
    env.skill("proj", "review", "look");
    let path = env.path("claude.json");
    let project = env.path("work/api").display().to_string();
    std::fs::write(
        &path,
        json!({
            "mcpServers": {"docs": env.serve("top")},
            "projects": {project: {"mcpServers": {"team": env.serve("proj")}}},
        })
        .to_string(),
    )
    .expect("write");
    path
}

fn drift_lines(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter(|l| l.starts_with("drift: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn l1_lock_check_passes_as_locked_and_exits_6_naming_each_drift_of_a_claude_json() {
    let env = Env::keyed();
    let config = claude_json(&env);
    let locked = env.with(&config, &["lock", "--all"]);
    assert_eq!(code(&locked), 0, "{}", stderr(&locked));
    let check = env.with(&config, &["lock", "--check"]);
    assert_eq!(code(&check), 0, "{}{}", stdout(&check), stderr(&check));
    assert!(
        stdout(&check).contains("skills.lock: 3 skills pinned, 3 as pinned"),
        "{}",
        stdout(&check)
    );

    // A byte changed, a file added, a skill removed, a skill added: one line each.
    std::fs::write(env.path("top/notes/notes.md"), "v2").expect("write");
    std::fs::write(env.path("top/notes/extra.md"), "more").expect("write");
    std::fs::remove_dir_all(env.path("top/deploy")).expect("rm");
    env.skill("proj", "triage", "sort");
    let check = env.with(&config, &["lock", "--check"]);
    assert_eq!(code(&check), 6, "{}{}", stdout(&check), stderr(&check));
    let lines = drift_lines(&check);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let notes = lines
        .iter()
        .find(|l| l.contains("skill://notes/SKILL.md from origin docs"))
        .expect("notes drifted");
    assert!(
        notes.contains("skill://notes/notes.md changed: sha256:"),
        "{notes}"
    );
    assert!(notes.contains("(2 bytes) -> sha256:"), "{notes}");
    assert!(notes.contains("skill://notes/extra.md added"), "{notes}");
    assert!(lines.iter().any(|l| {
        l.contains("skill://deploy/SKILL.md from origin docs is pinned but no longer listed")
    }));
    assert!(lines.iter().any(
        |l| l.contains("skill://triage/SKILL.md from origin team") && l.contains("not pinned")
    ));
    assert!(stdout(&check).contains("3 skills pinned, 1 as pinned, 3 differences"));
    assert!(
        stdout(&check)
            .contains("to accept what the servers publish now: run skillcache lock --all"),
        "{}",
        stdout(&check)
    );

    // Accepting it: `lock --all` again pins the new state and drops the skill no server lists
    // any more, saying so; the gate then passes.
    let relocked = env.with(&config, &["lock", "--all"]);
    assert_eq!(code(&relocked), 0, "{}", stderr(&relocked));
    assert!(
        stdout(&relocked).contains(
            "dropped skill://deploy/SKILL.md from docs: its server no longer publishes it"
        ),
        "{}",
        stdout(&relocked)
    );
    assert!(
        stdout(&relocked).contains("(3 skills pinned)"),
        "{}",
        stdout(&relocked)
    );
    let check = env.with(&config, &["lock", "--check"]);
    assert_eq!(code(&check), 0, "{}{}", stdout(&check), stderr(&check));
}

#[test]
fn l1_lock_check_of_a_vs_code_config_reports_a_server_gone_in_json_and_takes_origin() {
    let env = Env::keyed();
    env.skill("a", "alpha", "one");
    env.skill("b", "beta", "two");
    let config = env.path("mcp.json");
    let write = |b: Value| {
        std::fs::write(
            &config,
            json!({"servers": {"one": env.serve("a"), "two": b}, "inputs": []}).to_string(),
        )
        .expect("write");
    };
    write(env.serve("b"));
    let locked = env.with(&config, &["lock", "--all"]);
    assert_eq!(code(&locked), 0, "{}", stderr(&locked));
    // The second server's command is gone.
    write(json!({"command": env.path("no-such-server")}));
    let check = env.with(&config, &["lock", "--check", "--json"]);
    assert_eq!(code(&check), 6, "{}{}", stdout(&check), stderr(&check));
    let v: Value = serde_json::from_slice(&check.stdout).expect("JSON");
    assert_eq!(v["is_clean"], false);
    assert_eq!(
        (v["pinned"].as_u64(), v["matched"].as_u64()),
        (Some(2), Some(1))
    );
    let drift = v["drift"].as_array().expect("drift");
    assert_eq!(drift.len(), 1, "{drift:#?}");
    assert_eq!(drift[0]["kind"], "unlisted");
    assert_eq!(drift[0]["origin"], "two");
    assert!(
        drift[0]["message"]
            .as_str()
            .expect("message")
            .starts_with("origin two could not be listed: "),
        "{}",
        drift[0]["message"]
    );
    // Only one origin's pins: the gone server is not asked, and what is asked matches.
    let one = env.with(&config, &["lock", "--check", "--origin", "one"]);
    assert_eq!(code(&one), 0, "{}{}", stdout(&one), stderr(&one));
}

#[test]
fn l1_lock_check_of_a_pinned_origin_the_config_no_longer_names_is_drift_and_a_missing_lock_is_usage()
 {
    let env = Env::keyed();
    env.skill("a", "alpha", "one");
    let config = env.path("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"one": env.serve("a")}}).to_string(),
    )
    .expect("write");
    let locked = env.with(&config, &["lock", "--all"]);
    assert_eq!(code(&locked), 0, "{}", stderr(&locked));
    std::fs::write(&config, json!({"mcpServers": {}}).to_string()).expect("write");
    let check = env.with(&config, &["lock", "--check"]);
    assert_eq!(code(&check), 6, "{}{}", stdout(&check), stderr(&check));
    assert!(
        drift_lines(&check)
            .iter()
            .any(|l| l.contains("origin one could not be listed") && l.contains("not connected")),
        "{}",
        stdout(&check)
    );
    let missing = env.with(&config, &["lock", "--check", "-o", "nowhere.lock"]);
    assert_eq!(code(&missing), 2, "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("nowhere.lock"),
        "{}",
        stderr(&missing)
    );
    // No server named at all: the usage says a config alone will do (no `--origin` needed).
    let bare = env.run(&["lock", "--check"]);
    assert_eq!(code(&bare), 2, "{}", stderr(&bare));
    assert!(
        stderr(&bare).contains("servers are required: --config FILE (every server it names"),
        "{}",
        stderr(&bare)
    );
}

#[test]
fn l1_the_frozen_mode_approves_loads_and_reads_only_what_the_lock_pins_exactly() {
    let env = Env::keyed();
    let config = claude_json(&env);
    let locked = env.with(&config, &["lock", "--all"]);
    assert_eq!(code(&locked), 0, "{}", stderr(&locked));
    let (lock, notes) = ("skills.lock", "skill://notes/SKILL.md");
    // As pinned: approved, loaded and read under --frozen (the name CI tools use for --locked).
    let approve = env.with(
        &config,
        &["approve", "--origin", "docs", "--frozen", lock, notes],
    );
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    let load = env.with(
        &config,
        &[
            "load",
            "--origin",
            "docs",
            "--frozen",
            lock,
            "--require-approval",
            notes,
        ],
    );
    assert_eq!(code(&load), 0, "{}", stderr(&load));
    assert!(stdout(&load).contains("# notes"), "{}", stdout(&load));

    // The server's file changes: each refuses (exit 5) naming the change, and nothing is approved.
    std::fs::write(env.path("top/notes/notes.md"), "v2").expect("write");
    let approve = env.with(
        &config,
        &["approve", "--origin", "docs", "--locked", lock, notes],
    );
    assert_eq!(code(&approve), 5, "{}", stderr(&approve));
    assert!(
        stderr(&approve).contains("skill://notes/notes.md"),
        "the refusal names the changed file: {}",
        stderr(&approve)
    );
    let read = env.with(
        &config,
        &[
            "read", "--origin", "docs", "--frozen", lock, notes, "notes.md",
        ],
    );
    assert_eq!(code(&read), 5, "{}", stderr(&read));
    let approved = env.with(
        &config,
        &["load", "--origin", "docs", "--require-approval", notes],
    );
    assert_eq!(
        code(&approved),
        5,
        "the drifted skill was not approved by the refused approve: {}",
        stderr(&approved)
    );
    // A skill the lock does not pin is refused too, and a missing lock is a usage error.
    env.skill("top", "fresh", "new");
    let unpinned = env.with(
        &config,
        &[
            "approve",
            "--origin",
            "docs",
            "--frozen",
            lock,
            "skill://fresh/SKILL.md",
        ],
    );
    assert_eq!(code(&unpinned), 5, "{}", stderr(&unpinned));
    let missing = env.with(
        &config,
        &[
            "approve",
            "--origin",
            "docs",
            "--frozen",
            "absent.lock",
            notes,
        ],
    );
    assert_eq!(code(&missing), 2, "{}", stderr(&missing));
    // --from-lock approves the pinned set; --frozen with it is refused as contradictory.
    let both = env.with(&config, &["approve", "--from-lock", lock, "--frozen", lock]);
    assert_eq!(code(&both), 2, "{}", stderr(&both));
}
